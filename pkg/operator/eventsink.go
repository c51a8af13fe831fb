package operator

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	typedcorev1 "github.com/flinkops/flink-operator/pkg/generated/kube/kubernetes/typed/core/v1"
)

// eventSink is the event recorder's way to the API server (record.EventSink):
// each event goes to its own namespace. client-go's hand-written
// EventSinkImpl is not part of the generated clientset the operator uses.
type eventSink struct {
	client typedcorev1.EventsGetter
}

// The recorder's sink interface has no context; its calls are bounded by the
// client's own timeout, as client-go's sink does.

func (s eventSink) Create(event *corev1.Event) (*corev1.Event, error) {
	return s.client.Events(event.Namespace).Create(context.Background(), event, metav1.CreateOptions{})
}

func (s eventSink) Update(event *corev1.Event) (*corev1.Event, error) {
	return s.client.Events(event.Namespace).Update(context.Background(), event, metav1.UpdateOptions{})
}

func (s eventSink) Patch(event *corev1.Event, data []byte) (*corev1.Event, error) {
	return s.client.Events(event.Namespace).Patch(context.Background(), event.Name, types.StrategicMergePatchType, data, metav1.PatchOptions{})
}
