package endpoints

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
)

func TestService(t *testing.T) {
	d := &v1beta1.FlinkDeployment{ObjectMeta: metav1.ObjectMeta{Name: "job", Namespace: "ns"}}
	if url, _ := Service(d, 8081); url != "http://job-rest.ns.svc:8081" {
		t.Errorf("url %s", url)
	}
}

func TestPodIP(t *testing.T) {
	d := &v1beta1.FlinkDeployment{ObjectMeta: metav1.ObjectMeta{Name: "job", Namespace: "ns"}}
	now := metav1.Now()
	ready := corev1.PodStatus{PodIP: "10.0.0.2", Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}
	pods := []*corev1.Pod{
		{ObjectMeta: metav1.ObjectMeta{Name: "old", DeletionTimestamp: &now}, Status: corev1.PodStatus{PodIP: "10.0.0.1", Conditions: ready.Conditions}},
		{ObjectMeta: metav1.ObjectMeta{Name: "starting"}, Status: corev1.PodStatus{PodIP: "10.0.0.3"}},
		{ObjectMeta: metav1.ObjectMeta{Name: "ready"}, Status: ready},
	}
	var gotSelector string
	r := PodIP(func(ns string, sel labels.Selector) ([]*corev1.Pod, error) {
		gotSelector = sel.String()
		return pods, nil
	})
	if url, err := r(d, 8081); err != nil || url != "http://10.0.0.2:8081" {
		t.Errorf("url %s, %v", url, err)
	}
	if gotSelector != "app=job,component=jobmanager" {
		t.Errorf("selector %s", gotSelector)
	}
	pods = pods[:2]
	if _, err := r(d, 8081); err == nil {
		t.Errorf("no ready pod: want an error")
	}
}
