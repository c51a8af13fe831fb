package operator

import (
	"testing"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"

	"github.com/flinkops/flink-operator/pkg/clients/kubernetes"
	typedcorev1 "github.com/flinkops/flink-operator/pkg/generated/kube/kubernetes/typed/core/v1"
)

// Each controller client gets the budget the options give it, and the event
// recorder's is separate from the status writers'.
func TestClientBudgets(t *testing.T) {
	opts := DefaultOptions()
	opts.KubeAPIQPS, opts.KubeAPIBurst = 70, 90
	opts.EventsQPS, opts.EventsBurst = 3, 4
	base := &rest.Config{Host: "https://127.0.0.1:1", QPS: 5, Burst: 10, RateLimiter: flowcontrol.NewTokenBucketRateLimiter(1, 1)}
	cl, err := newClients(base, opts)
	if err != nil {
		t.Fatal(err)
	}
	for name, got := range map[string]flowcontrol.RateLimiter{
		"kube":  cl.kube.(*kubernetes.Clientset).CoreV1().RESTClient().GetRateLimiter(),
		"flink": cl.flink.FlinkV1beta1().RESTClient().GetRateLimiter(),
	} {
		if got.QPS() != 70 {
			t.Errorf("%s client QPS = %v, want 70", name, got.QPS())
		}
	}
	events := cl.events.(typedcorev1.CoreV1Interface).RESTClient().GetRateLimiter()
	if events.QPS() != 3 {
		t.Errorf("events client QPS = %v, want 3", events.QPS())
	}
	if events == cl.flink.FlinkV1beta1().RESTClient().GetRateLimiter() {
		t.Error("events share the status writers' rate limiter")
	}
	if base.QPS != 5 || base.Burst != 10 {
		t.Errorf("the base config was modified: QPS %v burst %d", base.QPS, base.Burst)
	}
}

// The defaults are sized for thousands of resources, not client-go's 5/s.
func TestDefaultClientBudgets(t *testing.T) {
	opts := DefaultOptions()
	if opts.KubeAPIQPS < 50 || opts.KubeAPIBurst < int(opts.KubeAPIQPS) {
		t.Errorf("default API budget %v/s burst %d is too small for thousands of resources", opts.KubeAPIQPS, opts.KubeAPIBurst)
	}
	if opts.EventsQPS <= 0 || opts.EventsBurst <= 0 {
		t.Errorf("default events budget %v/s burst %d", opts.EventsQPS, opts.EventsBurst)
	}
}
