package operator

import (
	"fmt"

	"k8s.io/client-go/rest"

	clientset "github.com/flinkops/flink-operator/pkg/clients/flink"
	"github.com/flinkops/flink-operator/pkg/clients/kubernetes"
	"github.com/flinkops/flink-operator/pkg/controller/workers"
	typedcorev1 "github.com/flinkops/flink-operator/pkg/generated/kube/kubernetes/typed/core/v1"
)

// clients are the API clients the controllers write through. Each has a
// rate budget of its own: flink.apache.org resources and Kubernetes objects
// --kube-api-qps/--kube-api-burst each, events --events-qps/--events-burst,
// so that neither a burst of events nor of owned-object writes delays a
// status write.
type clients struct {
	kube   kubernetes.Interface
	flink  clientset.Interface
	events typedcorev1.EventsGetter
}

// newClients builds the controllers' clients on cfg (fenced under leader
// election). client-go takes a QPS of 0 as its default (5/s) and a
// negative one as no client-side limit.
func newClients(cfg *rest.Config, opts Options) (clients, error) {
	var cl clients
	var err error
	// Writes through these two mark the sync making them (the per-resource
	// rate limit counts only syncs that change something).
	writes := withBudget(cfg, opts.KubeAPIQPS, opts.KubeAPIBurst)
	writes.Wrap(workers.MarkingTransport)
	if cl.kube, err = kubernetes.NewForConfig(writes); err != nil {
		return cl, fmt.Errorf("creating Kubernetes client: %w", err)
	}
	if cl.flink, err = clientset.NewForConfig(writes); err != nil {
		return cl, fmt.Errorf("creating flink.apache.org client: %w", err)
	}
	events, err := kubernetes.NewForConfig(withBudget(cfg, opts.EventsQPS, opts.EventsBurst))
	if err != nil {
		return cl, fmt.Errorf("creating the events client: %w", err)
	}
	cl.events = events.CoreV1()
	return cl, nil
}

// withBudget is a copy of cfg with its own rate limiter of qps and burst.
func withBudget(cfg *rest.Config, qps float32, burst int) *rest.Config {
	out := rest.CopyConfig(cfg)
	out.QPS, out.Burst, out.RateLimiter = qps, burst, nil
	return out
}
