package deployment

import (
	"context"
	"testing"

	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
)

// Upstream's "[<ns>/<name>] Resource fully reconciled, nothing to do" (its
// e2e test_flink_operator_ha.sh waits for it in the old and in the new
// leader's log): logged once a job runs its spec healthy, once per
// generation and operator process, not at every sync.
func TestFullyReconciledLoggedOncePerProcess(t *testing.T) {
	f := newFixture(t)
	logger := ktesting.NewLogger(t, ktesting.NewConfig(ktesting.BufferLogs(true)))
	f.Ctx = klog.NewContext(context.Background(), logger)
	const line = "[default/job] Resource fully reconciled, nothing to do"
	count := func() int {
		n := 0
		for _, e := range logger.GetSink().(ktesting.Underlier).GetBuffer().Data() {
			if e.Message == line {
				n++
			}
		}
		return n
	}
	f.Deploy(f.application("job", v1beta1.UpgradeModeSavepoint))
	for range 5 {
		f.Step("job")
	}
	if n := count(); n != 1 {
		t.Fatalf("%d %q lines after deploying and 5 steady syncs, want 1", n, line)
	}
	f.Restart() // a new leader
	for range 3 {
		f.Step("job")
	}
	if n := count(); n != 2 {
		t.Errorf("%d lines after a new operator's steady syncs, want 2 (one per process)", n)
	}
}
