package deployment

import (
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/config"
	"github.com/flinkops/flink-operator/pkg/controller/jobengine"
	"github.com/flinkops/flink-operator/pkg/reasons"
)

// markDeleted is what `kubectl delete` does to an object with finalizers.
func (f *fixture) markDeleted(name string) {
	f.T.Helper()
	d := f.Get(name)
	now := metav1.NewTime(f.Clock.Now())
	d.DeletionTimestamp = &now
	if _, err := f.Client.FlinkV1beta1().FlinkDeployments(ns).Update(f.Ctx, d, metav1.UpdateOptions{}); err != nil {
		f.T.Fatal(err)
	}
}

func finalized(d *v1beta1.FlinkDeployment) bool { return !slices.Contains(d.Finalizers, Finalizer) }

func TestDeletionWithoutSavepoint(t *testing.T) {
	f := newFixture(t)
	f.Deploy(f.application("job", v1beta1.UpgradeModeSavepoint))
	f.markDeleted("job")
	f.Step("job")
	got := f.Get("job")
	if !finalized(got) || got.Status.LifecycleState != v1beta1.LifecycleDeleting {
		t.Fatalf("finalizers %v, %s", got.Finalizers, statusString(got))
	}
	if f.stops() != 0 {
		t.Errorf("savepoint taken without savepoint-on-deletion")
	}
	if !hasEvent(f.Events(), "Normal", reasons.ReasonCleanup) {
		t.Errorf("no Cleanup event")
	}
}

func TestDeletionWithSavepoint(t *testing.T) {
	f := newFixture(t)
	d := f.application("job", v1beta1.UpgradeModeSavepoint)
	setConf(&d.Spec, config.KeyJobSavepointOnDeletion, "true")
	before := f.Deploy(d)
	f.markDeleted("job")
	f.Step("job")
	if got := f.Get("job"); finalized(got) || got.Status.JobStatus.SavepointInfo == nil || got.Status.JobStatus.SavepointInfo.TriggerID == "" {
		t.Fatalf("after the first sync: finalizers %v, %s", got.Finalizers, statusString(got))
	}
	got := f.Until("job", 10, "finalizer removed", finalized)
	path := got.Status.JobStatus.UpgradeSavepointPath
	snaps := f.Snapshots()
	if path == "" || len(snaps) != 1 || snaps[0].Spec.Savepoint.Path != path || snaps[0].Labels[v1beta1.LabelSnapshotTriggerType] != "UPGRADE" {
		t.Fatalf("savepoint %q, snapshots %+v", path, snaps)
	}
	if _, meta := readMeta(t, path); meta.JobID != before.Status.JobStatus.JobID {
		t.Errorf("savepoint of job %s", meta.JobID)
	}
	if f.stops() != 1 {
		t.Errorf("%d stops", f.stops())
	}
}

func TestDeletionSavepointBoundedByTimeout(t *testing.T) {
	f := newFixture(t)
	d := f.application("job", v1beta1.UpgradeModeSavepoint)
	setConf(&d.Spec, config.KeyJobSavepointOnDeletion, "true", config.FlinkCheckpointTimeout, "2 min")
	f.Deploy(d)
	f.jm("job").SetCompletion(1_000_000, 0) // the savepoint never completes
	deletedAt := f.Clock.Now()
	f.markDeleted("job")
	got := f.Until("job", 100, "finalizer removed", finalized)
	if took := f.Clock.Now().Sub(deletedAt); took < 2*time.Minute || took > 3*time.Minute {
		t.Errorf("finalizer removed after %v, want about the 2 min checkpoint timeout", took)
	}
	ev := f.Events()
	if !slices.ContainsFunc(ev, func(e string) bool {
		return strings.HasPrefix(e, "Warning "+reasons.ReasonSavepointError+" ") && strings.Contains(e, "execution.checkpointing.timeout")
	}) {
		t.Errorf("no timeout event: %v", ev)
	}
	if got.Status.JobStatus.UpgradeSavepointPath != "" {
		t.Errorf("path recorded without a savepoint: %s", statusString(got))
	}
}

// A session cluster is kept while FlinkSessionJobs run on it (upstream's
// rule): their deletion stops their jobs through it. Once they are gone, it
// goes.
func TestSessionClusterDeletionWaitsForSessionJobs(t *testing.T) {
	f := newFixture(t)
	session := f.application("session", v1beta1.UpgradeModeStateless)
	session.Spec.Job = nil
	f.Create(session)
	f.Until("session", 10, "ready", func(d *v1beta1.FlinkDeployment) bool {
		return d.Status.JobManagerDeploymentStatus == v1beta1.JobManagerReady
	})
	sj := &v1beta1.FlinkSessionJob{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "etl"},
		Spec: v1beta1.FlinkSessionJobSpec{DeploymentName: "session", Job: &v1beta1.JobSpec{JarURI: "https://x/etl.jar"}}}
	if _, err := f.Client.FlinkV1beta1().FlinkSessionJobs(ns).Create(f.Ctx, sj, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.Events()
	f.markDeleted("session")
	for range 3 {
		f.Step("session")
	}
	got := f.Get("session")
	if finalized(got) || !strings.Contains(jobengine.ErrorMessage(got.Status.Error), "FlinkSessionJobs run on it: etl") {
		t.Fatalf("finalizers %v, %s: want the cluster kept with the reason", got.Finalizers, statusString(got))
	}
	if ev := f.Events(); len(ev) != 1 || !strings.Contains(ev[0], "Warning Cleanup") {
		t.Errorf("events %v, want one Cleanup Warning", ev)
	}
	if err := f.Client.FlinkV1beta1().FlinkSessionJobs(ns).Delete(f.Ctx, "etl", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	f.Step("session")
	if got := f.Get("session"); !finalized(got) {
		t.Errorf("finalizer kept after the session job went: %s", statusString(got))
	}
}
