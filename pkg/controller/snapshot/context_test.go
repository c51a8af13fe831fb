package snapshot

import (
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/config"
)

// Scenarios of upstream's FlinkStateSnapshotContextTest and
// FlinkStateSnapshotMetricsTest.

func addSessionJob(t *testing.T, f *fixture, name, cluster string, conf map[string]string) {
	t.Helper()
	job := &v1beta1.FlinkSessionJob{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec:       v1beta1.FlinkSessionJobSpec{DeploymentName: cluster},
		Status:     v1beta1.FlinkSessionJobStatus{JobStatus: v1beta1.JobStatus{JobID: f.jobIDs[cluster], State: v1beta1.JobStatusRunning}},
	}
	if conf != nil {
		job.Spec.FlinkConfiguration = v1beta1.NewConfiguration(conf)
	}
	if _, err := f.Client.FlinkV1beta1().FlinkSessionJobs(ns).Create(f.Ctx, job, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func TestReferencedJobObserveConfigHonorsSessionJobSavepointDir(t *testing.T) {
	f := newFixture(t)
	jm := f.addCluster("session", v1beta1.FlinkVersion1_20, nil)
	jobDir := "file://" + filepath.Join(f.Dir, "session-job-savepoints")
	addSessionJob(t, f, "sj", "session", map[string]string{"execution.checkpointing.savepoint-dir": jobDir})
	s := savepointSnap("sp", "sj")
	s.Spec.JobReference.Kind = v1beta1.JobReferenceKindSessionJob
	f.Create(s)
	f.MustSync("sp")
	ops := jm.Operations()
	if len(ops) != 1 || ops[0].TargetDirectory != jobDir {
		t.Fatalf("operations %+v, want the session job's own dir %s", ops, jobDir)
	}
}

func TestReferencedJobObserveConfigFallsBackToDeploymentSavepointDir(t *testing.T) {
	f := newFixture(t)
	jm := f.addCluster("session", v1beta1.FlinkVersion1_20, nil)
	addSessionJob(t, f, "sj", "session", nil)
	s := savepointSnap("sp", "sj")
	s.Spec.JobReference.Kind = v1beta1.JobReferenceKindSessionJob
	f.Create(s)
	f.MustSync("sp")
	ops := jm.Operations()
	if len(ops) != 1 || !strings.HasSuffix(ops[0].TargetDirectory, "/savepoints") {
		t.Fatalf("operations %+v, want the cluster's savepoint dir", ops)
	}
}

func countsOf(f *fixture) map[string]int {
	f.Refresh()
	out := map[string]int{}
	for _, c := range f.ctrl.CountSnapshots() {
		out[c.Namespace+"/"+c.Type+"/"+c.State] = c.Count
	}
	return out
}

func TestMetricsSameNamespace(t *testing.T) {
	f := newFixture(t)
	f.addCluster("job", v1beta1.FlinkVersion1_20, nil)
	if got := countsOf(f); len(got) != 0 {
		t.Fatalf("gauges before any snapshot: %v", got)
	}
	f.Create(savepointSnap("a", "job"))
	f.Create(savepointSnap("b", "job"))
	f.MustSync("a")
	if got := countsOf(f); got["default/savepoint/IN_PROGRESS"] != 1 || got["default/savepoint/TRIGGER_PENDING"] != 1 {
		t.Fatalf("after one trigger: %v", got)
	}
	f.drive("a", 10)
	if got := countsOf(f); got["default/savepoint/COMPLETED"] != 1 || got["default/savepoint/IN_PROGRESS"] != 0 {
		t.Fatalf("after completion: %v", got)
	}
}

func TestMetricsMultipleNamespace(t *testing.T) {
	f := newFixture(t)
	f.addCluster("job", v1beta1.FlinkVersion1_20, nil)
	other := savepointSnap("x", "job")
	other.Namespace = "other"
	if _, err := f.Client.FlinkV1beta1().FlinkStateSnapshots("other").Create(f.Ctx, other, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.Create(checkpointSnap("cp", "job"))
	got := countsOf(f)
	if got["other/savepoint/TRIGGER_PENDING"] != 1 || got["default/checkpoint/TRIGGER_PENDING"] != 1 || len(got) != 2 {
		t.Fatalf("counts %v", got)
	}
}

func TestMetricsDisabled(t *testing.T) {
	f := newFixture(t)
	f.Config[config.KeyResourceMetricsEnabled] = "false"
	f.Restart()
	f.addCluster("job", v1beta1.FlinkVersion1_20, nil)
	f.Create(savepointSnap("a", "job"))
	if got := countsOf(f); len(got) != 0 {
		t.Fatalf("metrics disabled but counted %v", got)
	}
}
