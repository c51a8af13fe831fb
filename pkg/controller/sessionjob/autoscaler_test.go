package sessionjob

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/autoscaler/store"
	"github.com/flinkops/flink-operator/pkg/config"
	"github.com/flinkops/flink-operator/pkg/flink/fakejm"
)

// The job autoscaler on a FlinkSessionJob: a session job is not rescaled
// in place (upstream's rule), so a decision is applied as an upgrade with
// the job's upgradeMode, its overrides in the new submission.
func TestAutoscalerUpgradesSessionJob(t *testing.T) {
	f := newFixture(t)
	f.sessionCluster("session", nil)
	j := f.sessionJob("job", v1beta1.UpgradeModeSavepoint)
	j.Spec.FlinkConfiguration = v1beta1.NewConfiguration(map[string]string{
		"job.autoscaler.enabled":                "true",
		"job.autoscaler.metrics.window":         "2 min",
		"job.autoscaler.stabilization.interval": "0 s",
		"job.autoscaler.utilization.max":        "0.8",
		"job.autoscaler.utilization.min":        "0.5",
	})
	before := f.Deploy(j)
	jobID := before.Status.JobStatus.JobID
	src, sink := fakejm.VertexID(0), fakejm.VertexID(1)
	for vertex, l := range map[string]fakejm.VertexLoad{
		src:  {BusyTimeMsPerSecond: 50, RecordsInPerSecond: 1000, RecordsOutPerSecond: 1000, PendingRecords: -1},
		sink: {BusyTimeMsPerSecond: 950, RecordsInPerSecond: 1000, PendingRecords: -1},
	} {
		if err := f.jm.SetVertexLoad(jobID, vertex, l); err != nil {
			t.Fatal(err)
		}
	}
	after := f.Until("job", 40, "upgraded with the autoscaler's overrides", func(j *v1beta1.FlinkSessionJob) bool {
		f.Clock.Step(15 * time.Second)
		return stable(j) && j.Status.JobStatus.JobID != jobID &&
			strings.Contains(j.Status.ReconciliationStatus.LastReconciledSpec, sink+":")
	})
	if f.stops() != 1 {
		t.Errorf("%d stop-with-savepoint requests, want 1", f.stops())
	}
	runs := f.runs()
	last := runs[len(runs)-1]
	if got := last.FlinkConfiguration[config.FlinkParallelismOverrides]; !strings.Contains(got, sink+":") || last.SavepointPath != after.Status.JobStatus.UpgradeSavepointPath {
		t.Errorf("resubmission %+v: want the overrides, from the upgrade savepoint", last)
	}
	cm, err := f.Kube.CoreV1().ConfigMaps(ns).Get(f.Ctx, store.Name("job"), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(cm.OwnerReferences) != 1 || cm.OwnerReferences[0].Kind != "FlinkSessionJob" || cm.OwnerReferences[0].UID != before.UID {
		t.Errorf("ConfigMap owners %v, want the FlinkSessionJob", cm.OwnerReferences)
	}
	if strings.Contains(string(f.Get("job").Spec.FlinkConfiguration.Raw), config.FlinkParallelismOverrides) {
		t.Errorf("the spec was written")
	}
}
