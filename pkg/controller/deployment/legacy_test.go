package deployment

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/utils/ptr"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/config"
	"github.com/flinkops/flink-operator/pkg/controller/controllertest"
	"github.com/flinkops/flink-operator/pkg/flink/fakejm"
	"github.com/flinkops/flink-operator/pkg/lifecycle"
	"github.com/flinkops/flink-operator/pkg/reasons"
)

// legacyFixture deploys "job" with snapshot resources disabled
// operator-wide and the given job configuration.
func legacyFixture(t *testing.T, kv ...string) *fixture {
	f := newFixture(t)
	f.Config[config.KeyReconcileInterval] = "10 min"
	f.Config[config.KeySnapshotResourceEnabled] = "false"
	f.Restart()
	d := f.application("job", v1beta1.UpgradeModeSavepoint)
	setConf(&d.Spec, kv...)
	f.Deploy(d)
	return f
}

func savepointInfo(d *v1beta1.FlinkDeployment) v1beta1.SavepointInfo {
	if d.Status.JobStatus.SavepointInfo == nil {
		return v1beta1.SavepointInfo{}
	}
	return *d.Status.JobStatus.SavepointInfo
}

func (f *fixture) savepointOps() int {
	n := 0
	for _, s := range f.JobManagers {
		n += s.StartedOperations(fakejm.OpSavepoint)
	}
	return n
}

func countEvents(events []string, substr string) int {
	n := 0
	for _, e := range events {
		if strings.Contains(e, substr) {
			n++
		}
	}
	return n
}

// A legacy periodic savepoint: the trigger (id chosen by the operator) is in
// the status before Flink is asked, then polled by id to completion, which
// records lastSavepoint, the history and lastPeriodicSavepointTimestamp.
func TestLegacyPeriodicSavepoint(t *testing.T) {
	f := legacyFixture(t, config.KeyPeriodicSavepointInterval, "1 min")
	var written []v1beta1.SavepointInfo // trigger fields at each status write
	opsAtWrite := map[string]int{}
	f.Fault = func(_, point string) {
		if point == "status-written" {
			info := savepointInfo(f.Get("job"))
			if info.TriggerID != "" {
				if _, seen := opsAtWrite[info.TriggerID]; !seen {
					opsAtWrite[info.TriggerID] = f.savepointOps()
				}
			}
			written = append(written, info)
		}
	}
	got := f.Until("job", 20, "periodic savepoint", func(d *v1beta1.FlinkDeployment) bool {
		return savepointInfo(d).LastSavepoint != nil
	})
	info := savepointInfo(got)
	sp := info.LastSavepoint
	if sp.TriggerType != v1beta1.SnapshotTriggerPeriodic || sp.TriggerNonce != nil || sp.Location == "" || sp.FormatType != v1beta1.SavepointFormatCanonical {
		t.Fatalf("lastSavepoint %+v", sp)
	}
	if info.LastPeriodicSavepointTimestamp != sp.TimeStamp || len(info.SavepointHistory) != 1 || info.SavepointHistory[0] != *sp {
		t.Fatalf("savepointInfo %+v", info)
	}
	if info.TriggerID != "" || info.TriggerTimestamp != nil || info.TriggerType != "" {
		t.Fatalf("trigger not cleared: %+v", info)
	}
	if n := len(f.Snapshots()); n != 0 {
		t.Errorf("%d snapshot resources in legacy mode", n)
	}
	if f.savepointOps() != 1 {
		t.Errorf("%d savepoints started", f.savepointOps())
	}
	if len(opsAtWrite) != 1 {
		t.Fatalf("triggers written %v", opsAtWrite)
	}
	for id, ops := range opsAtWrite {
		if ops != 0 {
			t.Errorf("trigger %s written after Flink was asked (%d operations)", id, ops)
		}
		if op := f.jm("job").Operations(); len(op) == 0 || op[len(op)-1].TriggerID != id {
			t.Errorf("Flink's savepoint is not the recorded trigger %s: %+v", id, op)
		}
	}
	// The next one comes a minute after the first was triggered.
	f.Until("job", 20, "second periodic savepoint", func(d *v1beta1.FlinkDeployment) bool {
		return len(savepointInfo(d).SavepointHistory) == 2
	})
	if f.savepointOps() != 2 {
		t.Errorf("%d savepoints started", f.savepointOps())
	}
	second := savepointInfo(f.Get("job"))
	if d := second.LastPeriodicSavepointTimestamp - sp.TimeStamp; d < time.Minute.Milliseconds() {
		t.Errorf("second periodic savepoint %d ms after the first", d)
	}
}

// A changed savepointTriggerNonce triggers one MANUAL legacy savepoint; the
// nonce is marked reconciled in lastReconciledSpec and recorded on it.
func TestLegacyNonceSavepoint(t *testing.T) {
	f := legacyFixture(t)
	f.Events()
	f.edit("job", func(s *v1beta1.FlinkDeploymentSpec) { s.Job.SavepointTriggerNonce = ptr.To[int64](5) })
	got := f.Until("job", 10, "manual savepoint", func(d *v1beta1.FlinkDeployment) bool {
		return savepointInfo(d).LastSavepoint != nil
	})
	sp := savepointInfo(got).LastSavepoint
	if sp.TriggerType != v1beta1.SnapshotTriggerManual || sp.TriggerNonce == nil || *sp.TriggerNonce != 5 || sp.Location == "" {
		t.Fatalf("lastSavepoint %+v", sp)
	}
	rec, _ := lifecycle.Decode[v1beta1.FlinkDeploymentSpec](got.Status.ReconciliationStatus.LastReconciledSpec)
	if rec.Spec.Job.SavepointTriggerNonce == nil || *rec.Spec.Job.SavepointTriggerNonce != 5 || got.Status.LifecycleState != v1beta1.LifecycleStable {
		t.Fatalf("nonce not reconciled: %s", statusString(got))
	}
	for range 5 {
		f.Step("job")
	}
	if f.savepointOps() != 1 || len(f.Snapshots()) != 0 || savepointInfo(f.Get("job")).LastPeriodicSavepointTimestamp != 0 {
		t.Errorf("%d savepoints, %d snapshot resources", f.savepointOps(), len(f.Snapshots()))
	}
	if ev := f.Events(); hasEvent(ev, "Warning", reasons.ReasonSavepointError) {
		t.Errorf("events %v", ev)
	}
}

// A crash between the status write that records the trigger and the POST:
// the next operator polls the recorded id, Flink does not know it, and the
// same id is sent: exactly one savepoint, recorded once.
func TestLegacySavepointSurvivesCrashBeforePost(t *testing.T) {
	f := legacyFixture(t)
	crashed := false
	var id string
	f.Fault = func(_, point string) {
		if point == "status-written" && !crashed {
			if info := savepointInfo(f.Get("job")); info.TriggerID != "" {
				crashed, id = true, info.TriggerID
				panic(controllertest.Crash{})
			}
		}
	}
	f.edit("job", func(s *v1beta1.FlinkDeploymentSpec) { s.Job.SavepointTriggerNonce = ptr.To[int64](9) })
	if !f.StepCrashing("job") {
		t.Fatal("no crash after the trigger was recorded")
	}
	if f.savepointOps() != 0 {
		t.Fatal("Flink was asked before the crash")
	}
	for range 8 {
		f.StepCrashing("job")
	}
	got := f.Get("job")
	info := savepointInfo(got)
	if info.LastSavepoint == nil || *info.LastSavepoint.TriggerNonce != 9 || len(info.SavepointHistory) != 1 {
		t.Fatalf("savepointInfo %+v", info)
	}
	if f.savepointOps() != 1 {
		t.Fatalf("%d savepoints started", f.savepointOps())
	}
	if ops := f.jm("job").Operations(); ops[len(ops)-1].TriggerID != id {
		t.Errorf("savepoint ran under trigger id %s, recorded %s", ops[len(ops)-1].TriggerID, id)
	}
}

// A failing savepoint is retried within the grace period, then given up
// with upstream's Warning event; the nonce stays reconciled.
func TestLegacySavepointFailureGivesUp(t *testing.T) {
	f := legacyFixture(t, config.KeySavepointTriggerGracePeriod, "20 s")
	p := f.jm("job")
	p.FailSavepoints(p.jobID, "java.io.IOException: disk full")
	f.Events()
	f.edit("job", func(s *v1beta1.FlinkDeploymentSpec) { s.Job.SavepointTriggerNonce = ptr.To[int64](4) })
	for range 40 {
		f.Step("job")
		if f.Clock.Since(t0) > 10*time.Minute {
			break
		}
	}
	got := f.Get("job")
	info := savepointInfo(got)
	if info.TriggerID != "" || info.LastSavepoint != nil {
		t.Fatalf("savepointInfo %+v", info)
	}
	if ops := f.savepointOps(); ops < 2 {
		t.Errorf("%d attempts; want retries within the grace period", ops)
	}
	ev := f.Events()
	if countEvents(ev, "Savepoint failed for savepointTriggerNonce: 4") < 1 {
		t.Errorf("events %v", ev)
	}
	rec, _ := lifecycle.Decode[v1beta1.FlinkDeploymentSpec](got.Status.ReconciliationStatus.LastReconciledSpec)
	if rec.Spec.Job.SavepointTriggerNonce == nil || *rec.Spec.Job.SavepointTriggerNonce != 4 {
		t.Errorf("nonce not reconciled")
	}
	// Given up means no further attempt.
	ops := f.savepointOps()
	for range 5 {
		f.Step("job")
	}
	if f.savepointOps() != ops {
		t.Errorf("savepoints after giving up: %d → %d", ops, f.savepointOps())
	}
}

// A legacy periodic checkpoint completes into lastCheckpoint.
func TestLegacyPeriodicCheckpoint(t *testing.T) {
	f := legacyFixture(t, config.KeyPeriodicCheckpointInterval, "1 min")
	got := f.Until("job", 20, "periodic checkpoint", func(d *v1beta1.FlinkDeployment) bool {
		ci := d.Status.JobStatus.CheckpointInfo
		return ci != nil && ci.LastCheckpoint != nil
	})
	ci := got.Status.JobStatus.CheckpointInfo
	if ci.LastCheckpoint.TriggerType != v1beta1.SnapshotTriggerPeriodic || ci.LastPeriodicCheckpointTimestamp != ci.LastCheckpoint.TimeStamp ||
		ci.TriggerID != "" || ci.LastCheckpoint.FormatType != v1beta1.CheckpointTypeFull {
		t.Fatalf("checkpointInfo %+v %+v", ci, ci.LastCheckpoint)
	}
	if len(f.Snapshots()) != 0 {
		t.Error("snapshot resources in legacy mode")
	}
}

// Legacy history cleanup keeps max.count entries, disposing the older ones
// through Flink before they leave the history.
func TestLegacyHistoryCleanup(t *testing.T) {
	f := legacyFixture(t, config.KeyPeriodicSavepointInterval, "1 min", config.KeySavepointHistoryMaxCount, "2")
	f.Until("job", 80, "five savepoints", func(*v1beta1.FlinkDeployment) bool { return f.savepointOps() >= 5 })
	for range 6 {
		f.Step("job")
	}
	info := savepointInfo(f.Get("job"))
	if n := len(info.SavepointHistory); n > 2 || n == 0 {
		t.Fatalf("history %+v", info.SavepointHistory)
	}
	disposals := 0
	for _, s := range f.JobManagers {
		disposals += s.StartedOperations(fakejm.OpDisposal)
	}
	if disposals < f.savepointOps()-3 {
		t.Errorf("%d disposals for %d savepoints", disposals, f.savepointOps())
	}
	if info.SavepointHistory[len(info.SavepointHistory)-1] != *info.LastSavepoint {
		t.Errorf("newest history entry %+v is not lastSavepoint %+v", info.SavepointHistory, info.LastSavepoint)
	}
}

// Without the FlinkStateSnapshot CRD every job gets one
// SnapshotResourcesDisabled Warning, however many syncs.
func TestSnapshotCRDMissingWarnsOnce(t *testing.T) {
	f := newFixture(t)
	f.crdMissing = true
	f.Config[config.KeySnapshotResourceEnabled] = "false"
	f.Restart()
	f.Deploy(f.application("job", v1beta1.UpgradeModeSavepoint))
	for range 3 {
		f.Step("job")
	}
	ev := f.Events()
	if n := countEvents(ev, "Warning "+reasons.ReasonSnapshotResourcesDisabled+" "); n != 1 {
		t.Fatalf("%d SnapshotResourcesDisabled events: %v", n, ev)
	}
	if !strings.Contains(strings.Join(ev, "\n"), "kubectl apply --server-side -f manifests/crds/flink.apache.org_flinkstatesnapshots.yaml") {
		t.Errorf("event does not say how to install the CRD: %v", ev)
	}
}

// ApplicationReconcilerTest.testJobUpgradeIgnorePendingSavepointLegacy: a
// spec change waits while a legacy savepoint is in flight, and goes ahead
// once it completed (the savepoint kept in the history); with
// kubernetes.operator.job.upgrade.ignore-pending-savepoint set in the
// changed spec it goes ahead at once, dropping the pending savepoint with
// its failure event before the stop-with-savepoint reuses the trigger
// fields.
func TestJobUpgradeIgnorePendingSavepointLegacy(t *testing.T) {
	for _, ignore := range []bool{false, true} {
		t.Run(fmt.Sprintf("ignore=%v", ignore), func(t *testing.T) {
			f := legacyFixture(t)
			f.jm("job").SetCompletion(1000, 0) // the manual savepoint does not complete yet
			f.edit("job", func(s *v1beta1.FlinkDeploymentSpec) { s.Job.SavepointTriggerNonce = ptr.To[int64](6) })
			f.Step("job")
			f.Step("job")
			manual := savepointInfo(f.Get("job"))
			if manual.TriggerType != v1beta1.SnapshotTriggerManual || manual.TriggerID == "" {
				t.Fatalf("no manual savepoint in flight: %+v", manual)
			}
			f.Events()
			f.edit("job", func(s *v1beta1.FlinkDeploymentSpec) {
				newArgs(s)
				if ignore {
					setConf(s, config.KeyJobUpgradeIgnorePendingSavepoint, "true")
				}
			})
			if !ignore {
				for range 5 {
					f.Step("job")
				}
				d := f.Get("job")
				if d.Status.ReconciliationStatus.State != v1beta1.ReconciliationDeployed || f.stops() != 0 || savepointInfo(d).TriggerID != manual.TriggerID {
					t.Fatalf("the upgrade did not wait for the pending savepoint: stops %d, status %s", f.stops(), statusString(d))
				}
			}
			f.jm("job").SetCompletion(1, 0)
			after := f.Until("job", 30, "savepoint upgrade", upgradedTo(3))
			info := after.Status.JobStatus.SavepointInfo
			if info == nil || info.LastSavepoint == nil || info.LastSavepoint.TriggerType != v1beta1.SnapshotTriggerUpgrade || info.TriggerID != "" {
				t.Fatalf("savepointInfo %+v", info)
			}
			manualKept := false
			for _, sp := range info.SavepointHistory {
				manualKept = manualKept || sp.TriggerType == v1beta1.SnapshotTriggerManual
			}
			failed := countEvents(f.Events(), "Savepoint failed for savepointTriggerNonce: 6")
			switch {
			case ignore && (failed != 1 || manualKept):
				t.Errorf("ignore-pending-savepoint: %d failure events, manual savepoint in history %v; want it dropped with one event", failed, manualKept)
			case !ignore && (failed != 0 || !manualKept):
				t.Errorf("waited: %d failure events, manual savepoint in history %v; want it completed and kept", failed, manualKept)
			}
		})
	}
}
