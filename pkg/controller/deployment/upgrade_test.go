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
	"github.com/flinkops/flink-operator/pkg/flink"
	"github.com/flinkops/flink-operator/pkg/flink/fakejm"
	"github.com/flinkops/flink-operator/pkg/reasons"
)

// newArgs is a spec change that needs a redeploy.
func newArgs(spec *v1beta1.FlinkDeploymentSpec) {
	spec.Job.Args = append(spec.Job.Args, "--version", "2")
}

// upgradedTo waits for the spec of generation gen running and stable.
func upgradedTo(gen int64) func(*v1beta1.FlinkDeployment) bool {
	return func(d *v1beta1.FlinkDeployment) bool {
		return running(d) && d.Status.ObservedGeneration == gen && d.Status.ReconciliationStatus.State == v1beta1.ReconciliationDeployed
	}
}

func TestStatelessUpgrade(t *testing.T) {
	f := newFixture(t)
	before := f.Deploy(f.application("job", v1beta1.UpgradeModeStateless))
	f.checkpoint("job")
	f.edit("job", newArgs)
	after := f.Until("job", 20, "stateless upgrade", upgradedTo(2))

	if after.Status.JobStatus.JobID == before.Status.JobStatus.JobID {
		t.Errorf("stateless upgrade kept job id %s", after.Status.JobStatus.JobID)
	}
	if p := f.jm("job"); p.restore != "" || p.jobID != after.Status.JobStatus.JobID {
		t.Errorf("new job %s restored from %q, want empty state", p.jobID, p.restore)
	}
	if args := jmArgs(t, f.jmDeployment("job")); slices.Contains(args, "--fromSavepoint") || !slices.Contains(args, "--version") {
		t.Errorf("JobManager args %v", args)
	}
	if n := f.stops(); n != 0 {
		t.Errorf("%d stop-with-savepoint operations for a stateless upgrade", n)
	}
	if after.Status.JobStatus.UpgradeSavepointPath != "" {
		t.Errorf("upgradeSavepointPath %q", after.Status.JobStatus.UpgradeSavepointPath)
	}
}

func TestSavepointUpgrade(t *testing.T) {
	f := newFixture(t)
	before := f.Deploy(f.application("job", v1beta1.UpgradeModeSavepoint))
	oldJob := before.Status.JobStatus.JobID
	oldJM := f.jm("job")
	f.checkpoint("job")

	// The trigger id is in status before Flink hears of it.
	checked := false
	f.Fault = func(_, point string) {
		if point != "status-written" || checked {
			return
		}
		d := f.Get("job")
		if info := d.Status.JobStatus.SavepointInfo; info != nil && info.TriggerID != "" {
			checked = true
			if n := oldJM.StartedOperations(fakejm.OpStopWithSavepoint); n != 0 {
				t.Errorf("stop-with-savepoint started before its trigger id was recorded")
			}
			if d.Status.ReconciliationStatus.State != v1beta1.ReconciliationUpgrading || info.TriggerType != v1beta1.SnapshotTriggerUpgrade ||
				info.TriggerTimestamp == nil || d.Status.LifecycleState != v1beta1.LifecycleUpgrading {
				t.Errorf("intent: %s", statusString(d))
			}
		}
	}
	f.edit("job", newArgs)
	f.MustSync("job")
	if !checked {
		t.Fatalf("first sync after the change did not record a trigger id: %s", statusString(f.Get("job")))
	}
	ops := oldJM.Operations()
	triggerID := f.Get("job").Status.JobStatus.SavepointInfo.TriggerID
	if len(ops) != 1 || ops[0].Kind != fakejm.OpStopWithSavepoint || ops[0].TriggerID != triggerID || ops[0].Drain ||
		!strings.HasPrefix(ops[0].TargetDirectory, "file://"+f.Dir) || ops[0].FormatType != "CANONICAL" {
		t.Fatalf("Flink operations %+v, want one stop-with-savepoint with trigger id %s", ops, triggerID)
	}
	f.Fault = nil

	after := f.Until("job", 30, "savepoint upgrade", upgradedTo(2))
	path := after.Status.JobStatus.UpgradeSavepointPath
	if path == "" || after.Status.JobStatus.JobID == oldJob {
		t.Fatalf("after upgrade: %s", statusString(after))
	}
	restored, meta := f.restoredFrom("job")
	if restored != path || !meta.Savepoint || meta.JobID != oldJob {
		t.Errorf("new job restored from %q (%+v), want the savepoint %s of job %s", restored, meta, path, oldJob)
	}
	if args := jmArgs(t, f.jmDeployment("job")); !slices.Contains(args, path) {
		t.Errorf("JobManager args %v lack --fromSavepoint %s", args, path)
	}
	if info := after.Status.JobStatus.SavepointInfo; info != nil && info.TriggerID != "" {
		t.Errorf("trigger left in status: %+v", info)
	}
	snaps := f.Snapshots()
	if len(snaps) != 1 {
		t.Fatalf("%d snapshots, want one UPGRADE snapshot", len(snaps))
	}
	s := snaps[0]
	if s.Labels[v1beta1.LabelSnapshotTriggerType] != "UPGRADE" || s.Spec.Savepoint == nil || s.Spec.Savepoint.Path != path ||
		s.Spec.Savepoint.AlreadyExists == nil || !*s.Spec.Savepoint.AlreadyExists || s.Spec.Savepoint.DisposeOnDelete == nil ||
		*s.Spec.Savepoint.DisposeOnDelete || s.Spec.BackoffLimit == nil || *s.Spec.BackoffLimit != 3 ||
		s.Spec.JobReference == nil || s.Spec.JobReference.Name != "job" || !strings.HasPrefix(s.Name, "job-savepoint-upgrade-") {
		t.Errorf("UPGRADE snapshot %s: labels %v spec %+v savepoint %+v", s.Name, s.Labels, s.Spec, s.Spec.Savepoint)
	}
	if n := f.stops(); n != 1 {
		t.Errorf("%d stop-with-savepoint operations, want 1", n)
	}
	ev := f.Events()
	if !hasEvent(ev, "Normal", reasons.ReasonSpecChanged) || !hasEvent(ev, "Normal", reasons.ReasonSubmit) {
		t.Errorf("events %v", ev)
	}
}

func TestSavepointUpgradeLegacyMode(t *testing.T) {
	f := newFixture(t)
	d := f.application("job", v1beta1.UpgradeModeSavepoint)
	setConf(&d.Spec, config.KeySnapshotResourceEnabled, "false")
	f.Deploy(d)
	f.edit("job", newArgs)
	after := f.Until("job", 30, "savepoint upgrade", upgradedTo(2))
	if len(f.Snapshots()) != 0 {
		t.Errorf("legacy mode created snapshot resources")
	}
	info := after.Status.JobStatus.SavepointInfo
	path := after.Status.JobStatus.UpgradeSavepointPath
	if info == nil || info.LastSavepoint == nil || info.LastSavepoint.Location != path || info.LastSavepoint.TriggerType != v1beta1.SnapshotTriggerUpgrade ||
		len(info.SavepointHistory) != 1 || info.TriggerID != "" {
		t.Errorf("legacy savepoint info %+v, path %s", info, path)
	}
}

func TestSavepointFailureFallsBackToLastState(t *testing.T) {
	f := newFixture(t)
	before := f.Deploy(f.application("job", v1beta1.UpgradeModeSavepoint))
	jm := f.jm("job")
	f.checkpoint("job")
	latest := f.checkpoint("job")
	jm.FailSavepoints("", "java.io.IOException: disk full")
	f.edit("job", newArgs)
	f.Until("job", 30, "upgrade by fallback", upgradedTo(2))

	restored, meta := f.restoredFrom("job")
	if restored != latest || meta.Savepoint || meta.JobID != before.Status.JobStatus.JobID {
		t.Errorf("restored from %q (%+v), want the latest checkpoint %s", restored, meta, latest)
	}
	if st, _ := jm.JobState(before.Status.JobStatus.JobID); st != flink.JobCanceled {
		t.Errorf("old job %s, want CANCELED before the teardown", st)
	}
	if n := f.stops(); n != 1 {
		t.Errorf("%d stop-with-savepoint operations, want 1", n)
	}
	if !hasEvent(f.Events(), "Warning", reasons.ReasonSavepointError) {
		t.Errorf("no SavepointError event")
	}
	if got := f.Get("job"); got.Status.Error != "" || got.Status.JobStatus.SavepointInfo != nil {
		t.Errorf("after fallback: %s", statusString(got))
	}
}

func TestSavepointFailureWithoutFallbackTearsNothingDown(t *testing.T) {
	f := newFixture(t)
	d := f.application("job", v1beta1.UpgradeModeSavepoint)
	setConf(&d.Spec, config.KeyJobUpgradeLastStateFallbackEnabled, "false")
	before := f.Deploy(d)
	jm := f.jm("job")
	jmUID := f.jmDeployment("job").UID
	jm.FailSavepoints("", "java.io.IOException: disk full")
	f.edit("job", func(s *v1beta1.FlinkDeploymentSpec) {
		newArgs(s)
		setConf(s, config.KeyJobUpgradeLastStateFallbackEnabled, "false")
	})
	got := f.Until("job", 6, "savepoint error reported", func(d *v1beta1.FlinkDeployment) bool { return d.Status.Error != "" })
	if !strings.Contains(jobengine.ErrorMessage(got.Status.Error), "fallback is disabled") || !strings.Contains(jobengine.ErrorMessage(got.Status.Error), "disk full") ||
		got.Status.LifecycleState != v1beta1.LifecycleUpgrading {
		t.Fatalf("status %s", statusString(got))
	}
	// It keeps failing, and keeps the cluster, until savepoints work.
	for range 6 {
		f.Step("job")
	}
	if f.jmDeployment("job").UID != jmUID || f.jm("job") != jm {
		t.Fatalf("the cluster was torn down")
	}
	if st, _ := jm.JobState(before.Status.JobStatus.JobID); st != flink.JobRunning {
		t.Fatalf("old job %s, want RUNNING", st)
	}
	if !hasEvent(f.Events(), "Warning", reasons.ReasonSavepointError) {
		t.Errorf("no SavepointError event")
	}

	// Once savepoints work again, the retry completes the upgrade.
	jm.FailSavepoints("", "")
	f.Clock.Step(time.Minute)
	after := f.Until("job", 30, "upgrade after retry", upgradedTo(2))
	restored, meta := f.restoredFrom("job")
	if restored != after.Status.JobStatus.UpgradeSavepointPath || !meta.Savepoint {
		t.Errorf("restored from %q (%+v)", restored, meta)
	}
}

func TestSavepointUpgradeOfRestartingJob(t *testing.T) {
	for _, fallback := range []bool{true, false} {
		f := newFixture(t)
		d := f.application("job", v1beta1.UpgradeModeSavepoint)
		setConf(&d.Spec, config.KeyJobUpgradeLastStateFallbackEnabled, boolString(fallback))
		before := f.Deploy(d)
		jm := f.jm("job")
		latest := f.checkpoint("job")
		if err := jm.SetJobState(before.Status.JobStatus.JobID, flink.JobRestarting); err != nil {
			t.Fatal(err)
		}
		f.Step("job")
		f.edit("job", newArgs)
		if !fallback {
			for range 5 {
				f.Step("job")
			}
			got := f.Get("job")
			if !strings.Contains(jobengine.ErrorMessage(got.Status.Error), "cannot be stopped with a savepoint") || f.jm("job") != jm {
				t.Fatalf("fallback disabled: %s", statusString(got))
			}
			continue
		}
		f.Until("job", 30, "upgrade by fallback", upgradedTo(2))
		if restored, _ := f.restoredFrom("job"); restored != latest {
			t.Errorf("restored from %q, want %s", restored, latest)
		}
		if n := f.stops(); n != 0 {
			t.Errorf("%d stop-with-savepoint operations on a restarting job", n)
		}
	}
}

func boolString(b bool) string {
	if b {
		return "true"
	}
	return "false"
}

func TestLastStateUpgrade(t *testing.T) {
	f := newFixture(t)
	before := f.Deploy(f.application("job", v1beta1.UpgradeModeLastState))
	jm := f.jm("job")
	f.checkpoint("job")
	latest := f.checkpoint("job")
	f.edit("job", newArgs)
	f.MustSync("job")
	// The intent carries the latest checkpoint known before anything stops.
	if got := f.Get("job"); got.Status.ReconciliationStatus.State != v1beta1.ReconciliationUpgrading ||
		got.Status.JobStatus.UpgradeSavepointPath != latest {
		t.Fatalf("intent: %s", statusString(got))
	}
	after := f.Until("job", 30, "last-state upgrade", upgradedTo(2))
	if after.Status.JobStatus.JobID != before.Status.JobStatus.JobID {
		t.Errorf("last-state upgrade changed the job id")
	}
	if restored, meta := f.restoredFrom("job"); restored != latest || meta.Savepoint {
		t.Errorf("restored from %q (%+v), want %s", restored, meta, latest)
	}
	if st, _ := jm.JobState(before.Status.JobStatus.JobID); st != flink.JobCanceled {
		t.Errorf("old job %s, want CANCELED", st)
	}
	if n := f.stops(); n != 0 {
		t.Errorf("%d stop-with-savepoint operations for last-state", n)
	}
}

func TestLastStateUnknownNeedsManualRestore(t *testing.T) {
	f := newFixture(t)
	f.Deploy(f.application("job", v1beta1.UpgradeModeLastState))
	f.checkpoint("job")
	jm := f.jm("job")
	jmUID := f.jmDeployment("job").UID
	jm.InjectFault(fakejm.Fault{Status: 503})
	f.Step("job")
	f.edit("job", newArgs)
	for range 5 {
		f.Step("job")
	}
	got := f.Get("job")
	if !strings.Contains(jobengine.ErrorMessage(got.Status.Error), "Manual restore required") || got.Status.ReconciliationStatus.State != v1beta1.ReconciliationUpgrading {
		t.Fatalf("status %s", statusString(got))
	}
	if f.jmDeployment("job").UID != jmUID {
		t.Fatalf("the cluster was torn down without a known last state")
	}
	if !hasEvent(f.Events(), "Warning", reasons.ReasonUpgradeFailed) {
		t.Errorf("no UpgradeFailed event")
	}
	// The JobManager answers again: the upgrade goes on from the latest checkpoint.
	jm.ClearFaults()
	latest := f.checkpoint("job")
	f.Until("job", 30, "upgrade after recovery", upgradedTo(2))
	if restored, _ := f.restoredFrom("job"); restored != latest {
		t.Errorf("restored from %q, want %s", restored, latest)
	}
}

func TestFailedJobUpgradedFromLatestCheckpoint(t *testing.T) {
	f := newFixture(t)
	before := f.Deploy(f.application("job", v1beta1.UpgradeModeSavepoint))
	latest := f.checkpoint("job")
	if err := f.jm("job").FailJob(before.Status.JobStatus.JobID, "java.lang.RuntimeException", "boom"); err != nil {
		t.Fatal(err)
	}
	failed := f.Until("job", 5, "job failed", func(d *v1beta1.FlinkDeployment) bool {
		return d.Status.JobStatus.State == v1beta1.JobStatusFailed
	})
	if failed.Status.JobStatus.UpgradeSavepointPath != latest || failed.Status.LifecycleState != v1beta1.LifecycleFailed {
		t.Fatalf("failed job: %s, want its latest checkpoint %s recorded", statusString(failed), latest)
	}
	if !hasEvent(f.Events(), "Warning", reasons.ReasonJobStatusChanged) {
		t.Errorf("no JobStatusChanged warning")
	}
	f.edit("job", newArgs)
	f.Until("job", 30, "upgrade of the failed job", upgradedTo(2))
	if restored, meta := f.restoredFrom("job"); restored != latest || meta.JobID != before.Status.JobStatus.JobID {
		t.Errorf("restored from %q (%+v), want %s", restored, meta, latest)
	}
	if n := f.stops(); n != 0 {
		t.Errorf("%d stop-with-savepoint operations on a failed job", n)
	}
}

// A job that fails with only unaddressable checkpoints (the JobManager's
// checkpoint storage): a stateful one says at once that a manual restore
// will be needed; a stateless one, whose upgrades and restarts never
// restore, says nothing of it, and its fixed spec deploys as a new job.
func TestFailedJobWithUnaddressableCheckpoints(t *testing.T) {
	for _, tc := range []struct {
		mode       v1beta1.UpgradeMode
		wantManual bool
	}{
		{mode: v1beta1.UpgradeModeStateless, wantManual: false},
		{mode: v1beta1.UpgradeModeSavepoint, wantManual: true},
		{mode: v1beta1.UpgradeModeLastState, wantManual: true},
	} {
		t.Run(string(tc.mode), func(t *testing.T) {
			f := newFixture(t)
			f.jmOpt.UnaddressableCheckpoints = true
			before := f.Deploy(f.application("job", tc.mode))
			if path := f.checkpoint("job"); path != flink.NotAddressablePointer {
				t.Fatalf("checkpoint at %q, want Flink's placeholder", path)
			}
			if err := f.jm("job").FailJob(before.Status.JobStatus.JobID, "java.lang.RuntimeException", "boom"); err != nil {
				t.Fatal(err)
			}
			failed := f.Until("job", 5, "job failed", func(d *v1beta1.FlinkDeployment) bool {
				return d.Status.JobStatus.State == v1beta1.JobStatusFailed
			})
			manual := strings.Contains(jobengine.ErrorMessage(failed.Status.Error), "Manual restore required")
			event := hasEvent(f.Events(), "Warning", reasons.ReasonUpgradeFailed)
			if manual != tc.wantManual || event != tc.wantManual {
				t.Errorf("failed %s job: manual restore in status.error %v, UpgradeFailed event %v; want %v (%s)",
					tc.mode, manual, event, tc.wantManual, statusString(failed))
			}
			if failed.Status.LifecycleState != v1beta1.LifecycleFailed || failed.Status.JobStatus.UpgradeSavepointPath != "" {
				t.Errorf("failed job: %s, want lifecycle FAILED and no restore path", statusString(failed))
			}
			if tc.wantManual {
				return
			}
			f.edit("job", newArgs)
			upgraded := f.Until("job", 30, "fixed spec deployed", upgradedTo(2))
			if upgraded.Status.JobStatus.JobID == before.Status.JobStatus.JobID || upgraded.Status.Error != "" {
				t.Errorf("after the fix: %s, want a new job and no error", statusString(upgraded))
			}
			if restored, _ := f.restoredFrom("job"); restored != "" {
				t.Errorf("stateless job restored from %q", restored)
			}
		})
	}
}

func TestSuspendAndResume(t *testing.T) {
	f := newFixture(t)
	before := f.Deploy(f.application("job", v1beta1.UpgradeModeSavepoint))
	f.edit("job", func(s *v1beta1.FlinkDeploymentSpec) { s.Job.State = v1beta1.JobStateSuspended })
	suspended := f.Until("job", 30, "suspended", func(d *v1beta1.FlinkDeployment) bool {
		return d.Status.LifecycleState == v1beta1.LifecycleSuspended
	})
	path := suspended.Status.JobStatus.UpgradeSavepointPath
	if suspended.Status.JobStatus.State != v1beta1.JobStatusSuspended || path == "" ||
		suspended.Status.JobManagerDeploymentStatus != v1beta1.JobManagerMissing {
		t.Fatalf("suspended: %s", statusString(suspended))
	}
	deps, _ := f.Kube.AppsV1().Deployments(ns).List(f.Ctx, metav1.ListOptions{})
	if len(deps.Items) != 0 {
		t.Errorf("%d Deployments left while suspended", len(deps.Items))
	}
	if snaps := f.Snapshots(); len(snaps) != 1 || snaps[0].Spec.Savepoint.Path != path {
		t.Errorf("snapshots %+v, want the suspend savepoint", snaps)
	}
	if !hasEvent(f.Events(), "Normal", reasons.ReasonSuspended) {
		t.Errorf("no Suspended event")
	}
	// Nothing happens while suspended.
	for range 3 {
		f.Step("job")
	}
	f.edit("job", func(s *v1beta1.FlinkDeploymentSpec) { s.Job.State = v1beta1.JobStateRunning })
	resumed := f.Until("job", 30, "resumed", upgradedTo(3))
	if resumed.Status.JobStatus.JobID == before.Status.JobStatus.JobID {
		t.Errorf("resumed with the old job id")
	}
	if restored, meta := f.restoredFrom("job"); restored != path || meta.JobID != before.Status.JobStatus.JobID || !meta.Savepoint {
		t.Errorf("resumed from %q (%+v), want the suspend savepoint %s", restored, meta, path)
	}
	if n := f.stops(); n != 1 {
		t.Errorf("%d stop-with-savepoint operations, want 1", n)
	}
}

func TestSavepointRedeployNonce(t *testing.T) {
	f := newFixture(t)
	before := f.Deploy(f.application("job", v1beta1.UpgradeModeSavepoint))
	f.checkpoint("job")
	f.edit("job", func(s *v1beta1.FlinkDeploymentSpec) {
		s.Job.InitialSavepointPath = "s3://bucket/savepoints/savepoint-other"
		s.Job.SavepointRedeployNonce = new(int64(1))
	})
	after := f.Until("job", 30, "redeploy", upgradedTo(2))
	if after.Status.JobStatus.JobID == before.Status.JobStatus.JobID || after.Status.JobStatus.UpgradeSavepointPath != "s3://bucket/savepoints/savepoint-other" {
		t.Errorf("after redeploy: %s", statusString(after))
	}
	if p := f.jm("job"); p.restore != "s3://bucket/savepoints/savepoint-other" {
		t.Errorf("restored from %q", p.restore)
	}
	if n := f.stops(); n != 0 {
		t.Errorf("%d stop-with-savepoint operations for a savepoint redeploy", n)
	}

	// A nonce change without initialSavepointPath is rejected.
	f.edit("job", func(s *v1beta1.FlinkDeploymentSpec) {
		s.Job.InitialSavepointPath = ""
		s.Job.SavepointRedeployNonce = new(int64(2))
	})
	f.Step("job")
	if got := f.Get("job"); !strings.Contains(jobengine.ErrorMessage(got.Status.Error), "InitialSavepointPath must not be empty") || got.Status.JobStatus.JobID != after.Status.JobStatus.JobID {
		t.Errorf("rejected redeploy: %s", statusString(got))
	}
}

func TestSuspendAndResumeByMode(t *testing.T) {
	for _, mode := range []v1beta1.UpgradeMode{v1beta1.UpgradeModeStateless, v1beta1.UpgradeModeLastState} {
		t.Run(string(mode), func(t *testing.T) {
			f := newFixture(t)
			before := f.Deploy(f.application("job", mode))
			latest := f.checkpoint("job")
			f.edit("job", func(s *v1beta1.FlinkDeploymentSpec) { s.Job.State = v1beta1.JobStateSuspended })
			suspended := f.Until("job", 30, "suspended", func(d *v1beta1.FlinkDeployment) bool {
				return d.Status.LifecycleState == v1beta1.LifecycleSuspended
			})
			f.edit("job", func(s *v1beta1.FlinkDeploymentSpec) { s.Job.State = v1beta1.JobStateRunning })
			resumed := f.Until("job", 30, "resumed", upgradedTo(3))
			restored, _ := f.restoredFrom("job")
			switch mode {
			case v1beta1.UpgradeModeStateless:
				if restored != "" || resumed.Status.JobStatus.JobID == before.Status.JobStatus.JobID {
					t.Errorf("stateless resume from %q with job %s", restored, resumed.Status.JobStatus.JobID)
				}
			case v1beta1.UpgradeModeLastState:
				if suspended.Status.JobStatus.UpgradeSavepointPath != latest || restored != latest ||
					resumed.Status.JobStatus.JobID != before.Status.JobStatus.JobID {
					t.Errorf("last-state resume from %q (suspended with %q), want %s", restored, suspended.Status.JobStatus.UpgradeSavepointPath, latest)
				}
			}
			if f.stops() != 0 {
				t.Errorf("%d stop-with-savepoint operations", f.stops())
			}
		})
	}
}

func TestCreatedSuspended(t *testing.T) {
	f := newFixture(t)
	d := f.application("job", v1beta1.UpgradeModeSavepoint)
	d.Spec.Job.State = v1beta1.JobStateSuspended
	d.Spec.Job.InitialSavepointPath = "s3://bucket/savepoints/savepoint-initial"
	f.Create(d)
	f.Step("job")
	got := f.Get("job")
	if got.Status.LifecycleState != v1beta1.LifecycleSuspended || got.Status.JobStatus.UpgradeSavepointPath != d.Spec.Job.InitialSavepointPath {
		t.Fatalf("status %s", statusString(got))
	}
	if deps, _ := f.Kube.AppsV1().Deployments(ns).List(f.Ctx, metav1.ListOptions{}); len(deps.Items) != 0 {
		t.Fatalf("a suspended job was deployed")
	}
	f.edit("job", func(s *v1beta1.FlinkDeploymentSpec) { s.Job.State = v1beta1.JobStateRunning })
	f.Until("job", 20, "running", upgradedTo(2))
	if p := f.jm("job"); p.restore != d.Spec.Job.InitialSavepointPath {
		t.Errorf("first run restored from %q, want initialSavepointPath", p.restore)
	}
}

// TestUpgradeOfDeploymentThatNeverRan: a deployment stuck on a bad image is
// fixed by a spec change, even in savepoint mode without fallback: the job
// never ran, so its state is still the one it was deployed from.
func TestUpgradeOfDeploymentThatNeverRan(t *testing.T) {
	f := newFixture(t)
	d := f.application("job", v1beta1.UpgradeModeSavepoint)
	d.Spec.Image = "flink:typo"
	d.Spec.Job.InitialSavepointPath = "s3://bucket/savepoints/savepoint-initial"
	setConf(&d.Spec, config.KeyJobUpgradeLastStateFallbackEnabled, "false")
	f.broken["job"] = true
	f.Create(d)
	for range 3 {
		f.Step("job")
	}
	f.Clock.Step(6 * time.Minute)
	f.Step("job")
	if got := f.Get("job"); got.Status.JobManagerDeploymentStatus != v1beta1.JobManagerError || !strings.Contains(jobengine.ErrorMessage(got.Status.Error), "not ready") {
		t.Fatalf("stuck deployment: %s", statusString(got))
	}
	f.broken["job"] = false
	f.edit("job", func(s *v1beta1.FlinkDeploymentSpec) { s.Image = "flink:1.20" })
	f.Until("job", 30, "fixed", upgradedTo(2))
	if p := f.jm("job"); p.restore != d.Spec.Job.InitialSavepointPath {
		t.Errorf("restored from %q, want the initial savepoint", p.restore)
	}
}
