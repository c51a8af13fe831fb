package deployment

import (
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/cluster"
	"github.com/flinkops/flink-operator/pkg/config"
	"github.com/flinkops/flink-operator/pkg/controller/controllertest"
	"github.com/flinkops/flink-operator/pkg/controller/jobengine"
	"github.com/flinkops/flink-operator/pkg/flink"
	"github.com/flinkops/flink-operator/pkg/lifecycle"
	"github.com/flinkops/flink-operator/pkg/reasons"
)

// Rollbacks (jobengine/rollback.go) on the fake bench. A "broken" spec is
// one whose image is brokenImage: its JobManager never becomes ready (or,
// with restarting set, its job never stays RUNNING).

const brokenImage = "flink:broken"

type rollbackFixture struct {
	*fixture
	// restarting: a JobManager of the broken image runs its job, which
	// checkpoints once and then restarts forever, never seen RUNNING.
	restarting bool
	// badCheckpoint is the checkpoint that job completed.
	badCheckpoint string
}

// newRollbackFixture deploys a running application in mode whose spec
// enables rollbacks with a one-minute readiness timeout (conf adds or
// overrides keys).
func newRollbackFixture(t *testing.T, mode v1beta1.UpgradeMode, conf ...string) *rollbackFixture {
	f := &rollbackFixture{fixture: newFixture(t)}
	f.Tick = f.tick
	d := f.application("job", mode)
	setConf(&d.Spec, append([]string{config.KeyDeploymentRollbackEnabled, "true", config.KeyDeploymentReadinessTimeout, "1 min"}, conf...)...)
	f.Deploy(d)
	return f
}

// tick plays Kubernetes, with the broken image's JobManager failing.
func (f *rollbackFixture) tick() {
	image := f.jmImage("job")
	f.broken["job"] = image == brokenImage && !f.restarting
	f.kubeTick()
	if image != brokenImage || !f.restarting {
		return
	}
	p := f.jms["job"]
	if st, _ := p.JobState(p.jobID); st != flink.JobRunning {
		return
	}
	if f.badCheckpoint == "" {
		_, path, err := p.CompleteCheckpoint(p.jobID)
		if err != nil {
			f.T.Fatal(err)
		}
		f.badCheckpoint = path
	}
	if err := p.SetJobState(p.jobID, flink.JobRestarting); err != nil {
		f.T.Fatal(err)
	}
}

func (f *rollbackFixture) jmImage(name string) string {
	jm, err := f.Kube.AppsV1().Deployments(ns).Get(f.Ctx, cluster.JobManagerDeploymentName(name), metav1.GetOptions{})
	if err != nil {
		return ""
	}
	for _, c := range jm.Spec.Template.Spec.Containers {
		if c.Name == cluster.MainContainerName {
			return c.Image
		}
	}
	return ""
}

// breakSpec is an upgrade to a spec that never becomes stable.
func breakSpec(spec *v1beta1.FlinkDeploymentSpec) {
	spec.Image = brokenImage
	spec.Job.Args = append(spec.Job.Args, "--version", "2")
}

// rolledBack waits for the stable spec running again after a rollback.
func rolledBack(d *v1beta1.FlinkDeployment) bool {
	return d.Status.ReconciliationStatus.State == v1beta1.ReconciliationRolledBack &&
		d.Status.JobStatus.State == v1beta1.JobStatusRunning && d.Status.LifecycleState == v1beta1.LifecycleRolledBack
}

func recordedImage(t *testing.T, encoded string) string {
	t.Helper()
	rec, err := lifecycle.Decode[v1beta1.FlinkDeploymentSpec](encoded)
	if err != nil || rec == nil {
		t.Fatalf("decoding %q: %v", encoded, err)
	}
	return rec.Spec.Image
}

// TestRollbackToLastStableSpec: a savepoint upgrade to a spec whose
// JobManager never becomes ready is rolled back once the readiness timeout
// has passed (not before), to the stable spec, from the upgrade's
// savepoint; the failed spec is not retried until the spec changes, and a
// new spec is then applied as usual.
func TestRollbackToLastStableSpec(t *testing.T) {
	f := newRollbackFixture(t, v1beta1.UpgradeModeSavepoint)
	before := f.Get("job")
	oldJob := before.Status.JobStatus.JobID
	stable := before.Status.ReconciliationStatus.LastStableSpec
	older := f.checkpoint("job") // the savepoint is newer: restoring from this would lose state
	f.edit("job", breakSpec)

	var deployedAt, rollingBackAt time.Time
	var upgradePath string
	after := f.Until("job", 60, "rollback", func(d *v1beta1.FlinkDeployment) bool {
		rs := d.Status.ReconciliationStatus
		if rs.State == v1beta1.ReconciliationDeployed && deployedAt.IsZero() && recordedImage(t, rs.LastReconciledSpec) == brokenImage {
			deployedAt = time.UnixMilli(rs.ReconciliationTimestamp)
			upgradePath = d.Status.JobStatus.UpgradeSavepointPath
		}
		if rs.State == v1beta1.ReconciliationRollingBack && rollingBackAt.IsZero() {
			rollingBackAt = f.Clock.Now()
			if d.Status.LifecycleState != v1beta1.LifecycleRollingBack {
				t.Errorf("lifecycle %s while rolling back", d.Status.LifecycleState)
			}
		}
		return rolledBack(d)
	})
	switch {
	case deployedAt.IsZero() || rollingBackAt.IsZero():
		t.Fatalf("broken spec deployed at %v, rolling back at %v", deployedAt, rollingBackAt)
	case rollingBackAt.Sub(deployedAt) < time.Minute:
		t.Errorf("rolled back %s after the deploy, before the readiness timeout", rollingBackAt.Sub(deployedAt))
	case rollingBackAt.Sub(deployedAt) > 2*time.Minute:
		t.Errorf("rolled back only %s after the deploy", rollingBackAt.Sub(deployedAt))
	}
	rs := after.Status.ReconciliationStatus
	if rs.LastStableSpec != stable || recordedImage(t, rs.LastReconciledSpec) != brokenImage {
		t.Errorf("after the rollback: lastStableSpec changed %v, lastReconciledSpec image %s (want the failed spec's)", rs.LastStableSpec != stable, recordedImage(t, rs.LastReconciledSpec))
	}
	if img := f.jmImage("job"); img != "flink:1.20" {
		t.Errorf("JobManager runs %s, want the stable spec's image", img)
	}
	restored, meta := f.restoredFrom("job")
	switch {
	case restored == older:
		t.Errorf("rolled-back job restored from the older checkpoint %s", older)
	case restored != upgradePath || !meta.Savepoint || meta.JobID != oldJob:
		t.Errorf("rolled-back job restored from %q (%+v), want the upgrade savepoint %s of job %s", restored, meta, upgradePath, oldJob)
	}
	events := f.Events()
	if n := countEvents(events, "Normal "+reasons.ReasonRollback+" "); n != 2 {
		t.Errorf("%d Rollback events, want 2 (started, done): %v", n, events)
	}

	// Rolled back: the failed spec is not retried, however long.
	jmUID := f.jmDeployment("job").UID
	for range 20 {
		f.Step("job")
	}
	if got := f.Get("job"); !rolledBack(got) || f.jmDeployment("job").UID != jmUID {
		t.Fatalf("rolled-back job was redeployed: %s", statusString(got))
	}

	// A new spec is applied as usual and becomes stable.
	f.edit("job", func(s *v1beta1.FlinkDeploymentSpec) { s.Image = "flink:1.20"; s.Job.Args = []string{"--version", "3"} })
	fixed := f.Until("job", 40, "upgrade after the rollback", upgradedTo(3))
	if fixed.Status.LifecycleState != v1beta1.LifecycleStable || fixed.Status.ReconciliationStatus.LastStableSpec == stable {
		t.Errorf("after the fix: %s", statusString(fixed))
	}
	if _, meta := f.restoredFrom("job"); !meta.Savepoint || meta.JobID != after.Status.JobStatus.JobID {
		t.Errorf("fixed spec restored from %+v, want a savepoint of the rolled-back job %s", meta, after.Status.JobStatus.JobID)
	}
}

// TestRollbackTakesTheFailedJobsLatestCheckpoint: the failed spec's job ran
// (never seen RUNNING) and completed a checkpoint newer than the upgrade
// savepoint: the rollback cancels it and restores the stable spec from that
// checkpoint.
func TestRollbackTakesTheFailedJobsLatestCheckpoint(t *testing.T) {
	f := newRollbackFixture(t, v1beta1.UpgradeModeSavepoint)
	f.restarting = true
	f.edit("job", breakSpec)
	f.Until("job", 60, "rollback", rolledBack)
	if f.badCheckpoint == "" {
		t.Fatal("the failed job completed no checkpoint")
	}
	if restored, _ := f.restoredFrom("job"); restored != f.badCheckpoint {
		t.Errorf("rolled-back job restored from %q, want the failed job's latest checkpoint %s", restored, f.badCheckpoint)
	}
}

// TestRollbackOffByDefault: without deployment.rollback.enabled a broken
// upgrade stays deployed, reported.
func TestRollbackOffByDefault(t *testing.T) {
	f := newRollbackFixture(t, v1beta1.UpgradeModeSavepoint, config.KeyDeploymentRollbackEnabled, "false")
	f.edit("job", breakSpec)
	for range 40 { // well past the readiness timeout
		f.Step("job")
	}
	got := f.Get("job")
	if got.Status.ReconciliationStatus.State != v1beta1.ReconciliationDeployed || got.Status.LifecycleState != v1beta1.LifecycleDeployed ||
		!strings.Contains(jobengine.ErrorMessage(got.Status.Error), "not ready") || f.jmImage("job") != brokenImage {
		t.Errorf("without rollbacks: %s", statusString(got))
	}
	if n := countEvents(f.Events(), "Normal "+reasons.ReasonRollback+" "); n != 0 {
		t.Errorf("%d Rollback events", n)
	}
}

// TestNoRollbackToSuspendedJob: a job resumed with a broken spec is not
// rolled back to its suspended spec (upstream's rule).
func TestNoRollbackToSuspendedJob(t *testing.T) {
	f := newRollbackFixture(t, v1beta1.UpgradeModeSavepoint)
	f.edit("job", func(s *v1beta1.FlinkDeploymentSpec) { s.Job.State = v1beta1.JobStateSuspended })
	f.Until("job", 30, "suspend", func(d *v1beta1.FlinkDeployment) bool { return d.Status.LifecycleState == v1beta1.LifecycleSuspended })
	f.edit("job", func(s *v1beta1.FlinkDeploymentSpec) { s.Job.State = v1beta1.JobStateRunning; breakSpec(s) })
	for range 40 {
		f.Step("job")
	}
	if got := f.Get("job"); got.Status.ReconciliationStatus.State != v1beta1.ReconciliationDeployed || f.jmImage("job") != brokenImage {
		t.Errorf("resumed broken job: %s", statusString(got))
	}
}

// TestRollbackAcceptedBySettingTheStableSpec: once rolled back, setting the
// spec back to the stable one ends ROLLED_BACK without a redeploy; a nonce
// changed meanwhile on the failed spec takes its snapshot without retrying
// that spec.
func TestRollbackAcceptedBySettingTheStableSpec(t *testing.T) {
	f := newRollbackFixture(t, v1beta1.UpgradeModeSavepoint)
	f.edit("job", breakSpec)
	f.Until("job", 60, "rollback", rolledBack)
	jmUID := f.jmDeployment("job").UID

	f.edit("job", func(s *v1beta1.FlinkDeploymentSpec) { s.Job.SavepointTriggerNonce = ptr.To[int64](7) })
	f.Until("job", 20, "manual savepoint", func(*v1beta1.FlinkDeployment) bool {
		for _, s := range f.Snapshots() {
			if s.Labels[v1beta1.LabelSnapshotTriggerType] == "MANUAL" {
				return true
			}
		}
		return false
	})
	for range 5 {
		f.Step("job")
	}
	if got := f.Get("job"); !rolledBack(got) || f.jmDeployment("job").UID != jmUID {
		t.Fatalf("nonce change retried the failed spec: %s", statusString(got))
	}

	f.edit("job", func(s *v1beta1.FlinkDeploymentSpec) {
		s.Image = "flink:1.20"
		s.Job.Args = nil
	})
	got := f.Until("job", 10, "rollback accepted", func(d *v1beta1.FlinkDeployment) bool {
		return d.Status.ReconciliationStatus.State == v1beta1.ReconciliationDeployed && d.Status.LifecycleState == v1beta1.LifecycleStable
	})
	if f.jmDeployment("job").UID != jmUID || got.Status.ObservedGeneration != got.Generation {
		t.Errorf("accepting the rollback redeployed: %s", statusString(got))
	}
}

// rollbackRun upgrades to a broken spec with rollbacks on and crashes the
// operator at the crashAt-th fault point after the spec change (-1:
// never). It checks that the stable spec comes back from the upgrade
// savepoint after exactly one stop, and returns the fault points passed.
func rollbackRun(t *testing.T, crashAt int) []string {
	f := newRollbackFixture(t, v1beta1.UpgradeModeSavepoint)
	oldJob := f.Get("job").Status.JobStatus.JobID
	f.checkpoint("job")
	var points []string
	f.Fault = func(_, point string) {
		points = append(points, point)
		if len(points)-1 == crashAt {
			panic(controllertest.Crash{})
		}
	}
	f.edit("job", breakSpec)
	crashes := 0
	var after *v1beta1.FlinkDeployment
	for range 80 {
		if f.StepCrashing("job") {
			crashes++
		}
		if d := f.Get("job"); rolledBack(d) {
			after = d
			break
		}
	}
	if after == nil {
		t.Fatalf("rollback did not finish: %s", statusString(f.Get("job")))
	}
	if crashAt >= 0 && crashes != 1 {
		t.Fatalf("%d crashes, want 1", crashes)
	}
	restored, meta := f.restoredFrom("job")
	if restored == "" || restored != after.Status.JobStatus.UpgradeSavepointPath || !meta.Savepoint || meta.JobID != oldJob {
		t.Errorf("rolled-back job restored from %q (%+v), want the upgrade savepoint of job %s", restored, meta, oldJob)
	}
	if n := f.stops(); n != 1 {
		t.Errorf("%d stop-with-savepoint operations, want 1", n)
	}
	if img := f.jmImage("job"); img != "flink:1.20" {
		t.Errorf("JobManager runs %s", img)
	}
	return points
}

// TestRollbackSurvivesCrashAtEveryStep kills the operator at every fault
// point of an upgrade and its rollback.
func TestRollbackSurvivesCrashAtEveryStep(t *testing.T) {
	points := rollbackRun(t, -1)
	t.Logf("fault points of an upgrade and its rollback: %s", strings.Join(points, ", "))
	for i, p := range points {
		t.Run(fmt.Sprintf("crash %d at %s", i, p), func(t *testing.T) { rollbackRun(t, i) })
	}
}

// TestRestartOfRolledBackJob: a rolled-back job that fails is restarted by
// job.restart.failed with the stable spec it runs, from its latest
// checkpoint, and stays ROLLED_BACK: the failed spec is not deployed.
func TestRestartOfRolledBackJob(t *testing.T) {
	f := newRollbackFixture(t, v1beta1.UpgradeModeSavepoint, config.KeyJobRestartFailed, "true")
	f.edit("job", breakSpec)
	rolled := f.Until("job", 60, "rollback", rolledBack)
	p := f.jm("job")
	cp := f.checkpoint("job")
	if err := p.FailJob(p.jobID, "java.lang.RuntimeException", "boom"); err != nil {
		t.Fatal(err)
	}
	got := f.Until("job", 40, "restart of the rolled-back job", func(d *v1beta1.FlinkDeployment) bool {
		return rolledBack(d) && d.Status.JobStatus.JobID != rolled.Status.JobStatus.JobID
	})
	if countEvents(f.Events(), "FAILED; restarting it from") != 1 {
		t.Errorf("no restart event: %v", f.Events())
	}
	if img := f.jmImage("job"); img != "flink:1.20" {
		t.Errorf("restarted JobManager runs %s, want the stable spec's image", img)
	}
	if restored, _ := f.restoredFrom("job"); restored != cp {
		t.Errorf("restarted from %q, want the latest checkpoint %s", restored, cp)
	}
	if recordedImage(t, got.Status.ReconciliationStatus.LastReconciledSpec) != brokenImage ||
		got.Status.ReconciliationStatus.LastStableSpec != rolled.Status.ReconciliationStatus.LastStableSpec {
		t.Errorf("restart changed the recorded specs: %s", statusString(got))
	}
}

// TestSessionClusterRollback: a session cluster whose new spec's JobManager
// never becomes ready is rolled back too (upstream: FlinkDeployments,
// application and session clusters).
func TestSessionClusterRollback(t *testing.T) {
	f := &rollbackFixture{fixture: newFixture(t)}
	f.Tick = f.tick
	d := f.application("job", "")
	d.Spec.Job = nil
	setConf(&d.Spec, config.KeyDeploymentRollbackEnabled, "true", config.KeyDeploymentReadinessTimeout, "1 min")
	f.Create(d)
	stable := f.Until("job", 10, "session cluster stable", func(d *v1beta1.FlinkDeployment) bool {
		return d.Status.LifecycleState == v1beta1.LifecycleStable
	})
	f.edit("job", func(s *v1beta1.FlinkDeploymentSpec) { s.Image = brokenImage })
	got := f.Until("job", 40, "session cluster rolled back", func(d *v1beta1.FlinkDeployment) bool {
		return d.Status.ReconciliationStatus.State == v1beta1.ReconciliationRolledBack && d.Status.JobManagerDeploymentStatus == v1beta1.JobManagerReady
	})
	if got.Status.LifecycleState != v1beta1.LifecycleRolledBack || f.jmImage("job") != "flink:1.20" ||
		got.Status.ReconciliationStatus.LastStableSpec != stable.Status.ReconciliationStatus.LastStableSpec {
		t.Errorf("session cluster after the rollback: %s, JobManager image %s", statusString(got), f.jmImage("job"))
	}
}
