package deployment

import (
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	core "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/config"
	"github.com/flinkops/flink-operator/pkg/controller/jobengine"
)

// A job with spec.job.initialStateSnapshotRef starts from the snapshot's
// path and records it as upgradeSavepointPath [ours].
func TestFirstDeployFromSnapshotRef(t *testing.T) {
	f := newFixture(t)
	snap := f.putSnapshot(savepoint, v1beta1.SnapshotTriggerManual, v1beta1.SnapshotCompleted, t0.Add(-time.Hour))
	want := f.remotePath(snap)
	d := f.application("from-ref", v1beta1.UpgradeModeSavepoint)
	d.Spec.Job.InitialStateSnapshotRef = &v1beta1.SnapshotReference{Name: snap}
	got := f.Deploy(d)
	if p := got.Status.JobStatus.UpgradeSavepointPath; p != want {
		t.Errorf("upgradeSavepointPath %q, want %s", p, want)
	}
	if p := f.jm("from-ref"); p.restore != want {
		t.Errorf("JobManager restored from %q, want %s", p.restore, want)
	}
}

// A reference to a snapshot that is FAILED (or missing, or in flight)
// deploys nothing and says why; the job is never started from empty state.
// Once the reference can be used, the job starts from it.
func TestSnapshotRefNotCompletedDeploysNothing(t *testing.T) {
	f := newFixture(t)
	snap := f.putSnapshot(savepoint, v1beta1.SnapshotTriggerManual, v1beta1.SnapshotFailed, t0.Add(-time.Hour))
	d := f.application("from-ref", v1beta1.UpgradeModeSavepoint)
	d.Spec.Job.InitialStateSnapshotRef = &v1beta1.SnapshotReference{Name: snap}
	f.Create(d)
	for range 3 {
		f.Step("from-ref")
	}
	got := f.Get("from-ref")
	if !strings.Contains(jobengine.ErrorMessage(got.Status.Error), "FlinkStateSnapshot default/"+snap+" is FAILED, not COMPLETED") ||
		got.Status.ReconciliationStatus.LastReconciledSpec != "" || got.Status.LifecycleState != v1beta1.LifecycleFailed {
		t.Errorf("status %s, want the FAILED snapshot reported and nothing recorded", statusString(got))
	}
	if deps, _ := f.Kube.AppsV1().Deployments(ns).List(f.Ctx, metav1.ListOptions{}); len(deps.Items) != 0 {
		t.Errorf("%d Deployments created from an unusable reference", len(deps.Items))
	}
	if ev := f.Events(); len(ev) != 1 || !strings.Contains(ev[0], "Warning ValidationError") {
		t.Errorf("events %v, want one ValidationError", ev)
	}

	missing := f.application("missing-ref", v1beta1.UpgradeModeSavepoint)
	missing.Spec.Job.InitialStateSnapshotRef = &v1beta1.SnapshotReference{Name: "nope"}
	f.Create(missing)
	f.Step("missing-ref")
	if got := f.Get("missing-ref"); !strings.Contains(jobengine.ErrorMessage(got.Status.Error), "was not found") || got.Status.JobStatus.JobID != "" {
		t.Errorf("missing reference: %s", statusString(got))
	}

	f.setSnapshotState(snap, v1beta1.SnapshotCompleted)
	want := f.remotePath(snap)
	got = f.Until("from-ref", 10, "running", running)
	if got.Status.JobStatus.UpgradeSavepointPath != want || got.Status.Error != "" {
		t.Errorf("after the snapshot completed: %s", statusString(got))
	}
}

// A savepointRedeployNonce change with initialStateSnapshotRef redeploys
// from the referenced snapshot; an unusable one leaves the running job
// alone.
func TestRedeployFromSnapshotRef(t *testing.T) {
	f := newFixture(t)
	before := f.Deploy(f.application("job", v1beta1.UpgradeModeSavepoint))
	bad := f.putSnapshot(savepoint, v1beta1.SnapshotTriggerManual, v1beta1.SnapshotAbandoned, t0.Add(-2*time.Hour))
	f.edit("job", func(s *v1beta1.FlinkDeploymentSpec) {
		s.Job.InitialStateSnapshotRef = &v1beta1.SnapshotReference{Name: bad}
		s.Job.SavepointRedeployNonce = ptr.To[int64](1)
	})
	f.Step("job")
	got := f.Get("job")
	if !strings.Contains(jobengine.ErrorMessage(got.Status.Error), "is ABANDONED") || got.Status.JobStatus.JobID != before.Status.JobStatus.JobID ||
		got.Status.ReconciliationStatus.State != v1beta1.ReconciliationDeployed {
		t.Fatalf("unusable reference: %s", statusString(got))
	}
	good := f.putSnapshot(savepoint, v1beta1.SnapshotTriggerManual, v1beta1.SnapshotCompleted, t0.Add(-time.Hour))
	want := f.remotePath(good)
	f.edit("job", func(s *v1beta1.FlinkDeploymentSpec) {
		s.Job.InitialStateSnapshotRef = &v1beta1.SnapshotReference{Name: good}
	})
	got = f.Until("job", 20, "redeployed", func(d *v1beta1.FlinkDeployment) bool {
		return running(d) && d.Status.JobStatus.JobID != before.Status.JobStatus.JobID
	})
	if got.Status.JobStatus.UpgradeSavepointPath != want || f.jm("job").restore != want {
		t.Errorf("redeployed from %q (JobManager %q), want %s", got.Status.JobStatus.UpgradeSavepointPath, f.jm("job").restore, want)
	}
	if f.stops() != 0 {
		t.Errorf("a redeploy took a savepoint")
	}
}

// History cleanup never deletes a snapshot another job starts from by
// reference [ours]: job "job"'s oldest periodic savepoint is referenced by
// "clone" and survives max.count 1.
func TestCleanupKeepsReferencedSnapshot(t *testing.T) {
	f := newFixture(t)
	d := f.application("job", v1beta1.UpgradeModeSavepoint)
	setConf(&d.Spec, config.KeySavepointHistoryMaxCount, "1")
	f.Deploy(d)
	now := f.Clock.Now()
	P := v1beta1.SnapshotTriggerPeriodic
	referenced := f.putSnapshot(savepoint, P, v1beta1.SnapshotCompleted, now.Add(-90*time.Minute))
	older := f.putSnapshot(savepoint, P, v1beta1.SnapshotCompleted, now.Add(-80*time.Minute))
	f.putSnapshot(savepoint, P, v1beta1.SnapshotCompleted, now.Add(-70*time.Minute))
	clone := f.application("clone", v1beta1.UpgradeModeSavepoint)
	clone.Spec.Job.InitialStateSnapshotRef = &v1beta1.SnapshotReference{Name: referenced}
	f.Create(clone)

	f.Client.ClearActions()
	f.MustSync("job")
	var deleted []string
	for _, a := range f.Client.Actions() {
		if del, ok := a.(core.DeleteAction); ok && a.GetResource().Resource == "flinkstatesnapshots" {
			deleted = append(deleted, del.GetName())
		}
	}
	if !slices.Equal(deleted, []string{older}) {
		t.Errorf("deleted %v, want only %s (the referenced %s kept)", deleted, older, referenced)
	}
}

// remotePath moves a COMPLETED snapshot's path to an object store, which
// the fake JobManager restores from without files on disk.
func (f *fixture) remotePath(name string) string {
	f.T.Helper()
	s, err := f.Client.FlinkV1beta1().FlinkStateSnapshots(ns).Get(f.Ctx, name, metav1.GetOptions{})
	if err != nil {
		f.T.Fatal(err)
	}
	s.Status.Path = "s3://bucket/savepoints/" + name
	if _, err := f.Client.FlinkV1beta1().FlinkStateSnapshots(ns).UpdateStatus(f.Ctx, s, metav1.UpdateOptions{}); err != nil {
		f.T.Fatal(err)
	}
	return s.Status.Path
}
