package snapshot

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/flink"
	"github.com/flinkops/flink-operator/pkg/flink/fakejm"
	"github.com/flinkops/flink-operator/pkg/reasons"
	"github.com/flinkops/flink-operator/pkg/snapshotrules"
)

// Scenarios from upstream's FlinkStateSnapshotControllerTest,
// one test each, named after it.

func TestReconcileNewSavepoint(t *testing.T) {
	f := newFixture(t)
	jm := f.addCluster("job", v1beta1.FlinkVersion1_20, nil)
	f.Create(savepointSnap("sp", "job"))

	if d := f.MustSync("sp"); d <= 0 {
		t.Fatalf("trigger sync should requeue to poll, got %v", d)
	}
	s := f.Get("sp")
	if s.Status.State != v1beta1.SnapshotInProgress || len(s.Status.TriggerID) != 32 || s.Status.Path != "" || s.Status.Error != "" {
		t.Fatalf("after trigger: %+v", s.Status)
	}
	ops := jm.Operations()
	if len(ops) != 1 || ops[0].TriggerID != s.Status.TriggerID || ops[0].CancelJob {
		t.Fatalf("Flink operations %+v, want one savepoint with trigger id %s", ops, s.Status.TriggerID)
	}

	f.Clock.Step(time.Second)
	f.MustSync("sp") // first poll: pending
	if s := f.Get("sp"); s.Status.State != v1beta1.SnapshotInProgress {
		t.Fatalf("after first poll: %+v", s.Status)
	}
	f.Clock.Step(time.Second)
	f.MustSync("sp")
	s = f.Get("sp")
	if s.Status.State != v1beta1.SnapshotCompleted || s.Status.Path == "" || !metadataExists(s.Status.Path) {
		t.Fatalf("after completion: %+v (metadata exists: %v)", s.Status, metadataExists(s.Status.Path))
	}
	if s.Labels[v1beta1.LabelSnapshotTriggerType] != "MANUAL" || s.Labels[v1beta1.LabelSnapshotState] != "COMPLETED" ||
		s.Labels[v1beta1.LabelSnapshotType] != "SAVEPOINT" || s.Labels[v1beta1.LabelJobReferenceName] != "job" {
		t.Errorf("labels %v", s.Labels)
	}
	if !containsString(s.Finalizers, v1beta1.SnapshotFinalizer) {
		t.Errorf("completed savepoint with dispose-on-delete has no finalizer: %v", s.Finalizers)
	}
	if jm.StartedOperations(fakejm.OpSavepoint) != 1 {
		t.Errorf("started %d savepoints, want 1", jm.StartedOperations(fakejm.OpSavepoint))
	}
}

// TestWritesPerManualSavepoint counts API writes from creation to COMPLETED
// of a snapshot a user created: its labels and finalizer must be written
// before the intent (a deletion from then on waits for the attempt, and the
// columns show while it runs), and the status subresource cannot carry
// them, so it costs one metadata write more than an operator-made one.
func TestWritesPerManualSavepoint(t *testing.T) {
	f := newFixture(t)
	f.addCluster("job", v1beta1.FlinkVersion1_20, nil)
	f.Create(savepointSnap("sp", "job"))
	f.resetActions()
	s := f.drive("sp", 10)
	if s.Status.State != v1beta1.SnapshotCompleted {
		t.Fatalf("state %s", s.Status.State)
	}
	meta, status := f.writes()
	t.Logf("writes for one manual savepoint: %d metadata + %d status = %d", meta, status, meta+status)
	if meta > 2 || status > 2 {
		t.Fatalf("%d metadata + %d status writes, want at most 2 + 2", meta, status)
	}
}

// TestWritesPerOperatorMadeSavepoint: a snapshot created with its labels and
// finalizer (as pkg/snapshotrules makes periodic and upgrade ones) costs the
// intent, the terminal labels and the terminal status: 3 writes.
func TestWritesPerOperatorMadeSavepoint(t *testing.T) {
	f := newFixture(t)
	f.addCluster("job", v1beta1.FlinkVersion1_20, nil)
	f.Create(operatorMade(savepointSnap("sp", "job"), v1beta1.SnapshotTriggerPeriodic))
	f.resetActions()
	s := f.drive("sp", 10)
	if s.Status.State != v1beta1.SnapshotCompleted {
		t.Fatalf("state %s", s.Status.State)
	}
	meta, status := f.writes()
	if meta+status > 3 {
		t.Fatalf("%d metadata + %d status writes, want at most 3", meta, status)
	}
}

// operatorMade gives s the labels and finalizer pkg/snapshotrules sets at
// creation.
func operatorMade(s *v1beta1.FlinkStateSnapshot, trigger v1beta1.SnapshotTriggerType) *v1beta1.FlinkStateSnapshot {
	s.Labels = map[string]string{v1beta1.LabelSnapshotTriggerType: string(trigger)}
	s.Labels = snapshotrules.DesiredLabels(s, v1beta1.SnapshotTriggerPending, true)
	if snapshotrules.NeedsFinalizer(s, v1beta1.SnapshotTriggerPending) {
		s.Finalizers = []string{v1beta1.SnapshotFinalizer}
	}
	return s
}

func TestTerminalSnapshotsCostNothing(t *testing.T) {
	f := newFixture(t)
	jm := f.addCluster("job", v1beta1.FlinkVersion1_20, nil)
	f.Create(savepointSnap("sp", "job"))
	f.drive("sp", 10)
	f.resetActions()
	jm.ResetRequests()
	for range 3 {
		if d := f.MustSync("sp"); d != 0 {
			t.Errorf("terminal snapshot requeued after %v", d)
		}
	}
	if meta, status := f.writes(); meta+status != 0 {
		t.Errorf("terminal snapshot caused %d writes", meta+status)
	}
	if n := len(jm.Requests()); n != 0 {
		t.Errorf("terminal snapshot caused %d REST calls", n)
	}
}

func TestReconcileSavepointAlreadyExists(t *testing.T) {
	for _, withRef := range []bool{true, false} {
		f := newFixture(t)
		s := savepointSnap("sp", "job")
		s.Spec.Savepoint = &v1beta1.SavepointSpec{AlreadyExists: ptr.To(true), Path: "/data/sp-1"}
		if !withRef {
			s.Spec.JobReference = nil
		}
		f.Create(s)
		f.resetActions()
		f.MustSync("sp")
		got := f.Get("sp")
		if got.Status.State != v1beta1.SnapshotCompleted || got.Status.Path != "/data/sp-1" || got.Status.TriggerID != "" || got.Status.Error != "" {
			t.Fatalf("withRef=%v: %+v", withRef, got.Status)
		}
		if ts, _ := time.Parse(time.RFC3339, got.Status.ResultTimestamp); ts.Before(t0) {
			t.Errorf("resultTimestamp %s before creation", got.Status.ResultTimestamp)
		}
		if _, status := f.writes(); status != 1 {
			t.Errorf("withRef=%v: %d status updates, want 1", withRef, status)
		}
		if containsString(got.Finalizers, v1beta1.SnapshotFinalizer) {
			t.Errorf("imported savepoint without disposeOnDelete got a finalizer")
		}
	}
}

func TestReconcileLabels(t *testing.T) {
	f := newFixture(t)
	f.addCluster("job", v1beta1.FlinkVersion1_20, nil)
	f.Create(checkpointSnap("cp", "job"))
	s := f.drive("cp", 10)
	want := map[string]string{"snapshot.type": "CHECKPOINT", "snapshot.trigger-type": "MANUAL", "snapshot.state": "COMPLETED",
		"job-reference.kind": "FlinkDeployment", "job-reference.name": "job"}
	for k, v := range want {
		if s.Labels[k] != v {
			t.Errorf("label %s = %q, want %q", k, s.Labels[k], v)
		}
	}
	// A manual edit of snapshot.type is reverted with a metadata write only.
	s.Labels["snapshot.type"] = "SAVEPOINT"
	if _, err := f.Client.FlinkV1beta1().FlinkStateSnapshots(ns).Update(f.Ctx, s, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.resetActions()
	f.MustSync("cp")
	if got := f.Get("cp").Labels["snapshot.type"]; got != "CHECKPOINT" {
		t.Errorf("snapshot.type not reverted: %q", got)
	}
	if meta, status := f.writes(); meta != 1 || status != 0 {
		t.Errorf("revert took %d metadata + %d status writes, want 1 + 0", meta, status)
	}
	// No change: nothing written.
	f.resetActions()
	f.MustSync("cp")
	if meta, status := f.writes(); meta+status != 0 {
		t.Errorf("no-op sync wrote %d times", meta+status)
	}
}

func TestReconcileSnapshotDeploymentDoesNotExist(t *testing.T) {
	f := newFixture(t)
	f.Create(savepointSnap("sp", "missing"))
	if d := f.MustSync("sp"); d != waitForValidation {
		t.Errorf("requeue %v, want %v", d, waitForValidation)
	}
	s := f.Get("sp")
	if s.Status.State != v1beta1.SnapshotTriggerPending || !strings.Contains(s.Status.Error, "was not found") {
		t.Fatalf("status %+v", s.Status)
	}
	events := f.Events()
	if countEvents(events, reasons.ReasonValidationError) != 1 {
		t.Fatalf("events %v, want one ValidationError", events)
	}
	f.MustSync("sp") // same error again: no second event, no write
	if n := countEvents(f.Events(), reasons.ReasonValidationError); n != 0 {
		t.Errorf("repeated ValidationError event")
	}
}

func TestReconcileSnapshotAbandoned(t *testing.T) {
	f := newFixture(t)
	f.addCluster("job", v1beta1.FlinkVersion1_20, nil)
	f.Create(savepointSnap("sp", "job"))
	f.MustSync("sp")
	trigger := f.Get("sp").Status.TriggerID
	f.setJobState("job", v1beta1.JobStatusCanceled)
	f.Clock.Step(time.Second)
	f.MustSync("sp")
	s := f.Get("sp")
	if s.Status.State != v1beta1.SnapshotAbandoned || s.Status.Path != "" || s.Status.TriggerID != trigger || s.Status.TriggerTimestamp == "" {
		t.Fatalf("status %+v", s.Status)
	}
	if !strings.Contains(s.Status.Error, "is not running") {
		t.Errorf("error %q", s.Status.Error)
	}
}

func TestReconcileJobNotFound(t *testing.T) {
	f := newFixture(t)
	f.addCluster("job", v1beta1.FlinkVersion1_20, nil)
	f.Create(savepointSnap("sp", "job"))
	f.MustSync("sp")
	if err := f.Client.FlinkV1beta1().FlinkDeployments(ns).Delete(f.Ctx, "job", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	f.Events()
	f.Clock.Step(time.Second)
	f.MustSync("sp")
	s := f.Get("sp")
	want := "Secondary resource job (FlinkDeployment) for savepoint sp was not found"
	if s.Status.State != v1beta1.SnapshotAbandoned || s.Status.Error != want {
		t.Fatalf("status %+v, want ABANDONED with %q", s.Status, want)
	}
	if n := countEvents(f.Events(), reasons.ReasonSnapshotAbandoned); n != 1 {
		t.Errorf("%d SnapshotAbandoned events, want 1", n)
	}
}

func TestReconcileJobNotRunning(t *testing.T) {
	f := newFixture(t)
	jm := f.addCluster("job", v1beta1.FlinkVersion1_20, nil)
	f.setJobState("job", v1beta1.JobStatusCanceled)
	f.Create(savepointSnap("sp", "job"))
	f.MustSync("sp")
	s := f.Get("sp")
	if s.Status.State != v1beta1.SnapshotAbandoned || s.Status.TriggerID != "" || !strings.HasSuffix(s.Status.Error, "is not running") {
		t.Fatalf("status %+v", s.Status)
	}
	if n := countEvents(f.Events(), reasons.ReasonSnapshotAbandoned); n != 1 {
		t.Errorf("%d SnapshotAbandoned events, want 1", n)
	}
	if n := len(jm.RequestsTo(fakejm.RouteSavepointTrigger)); n != 0 {
		t.Errorf("%d trigger calls for a job that is not running", n)
	}
}

func TestReconcileBackoff(t *testing.T) {
	for _, limit := range []int32{0, 3, 7} {
		f := newFixture(t)
		jm := f.addCluster("job", v1beta1.FlinkVersion1_20, nil)
		jm.FailSavepoints(f.jobIDs["job"], "java.io.IOException: disk full")
		f.Create(withBackoff(savepointSnap("sp", "job"), limit))
		for attempt := int32(1); ; attempt++ {
			f.drivePoll("sp")
			s := f.Get("sp")
			if s.Status.Failures != attempt {
				t.Fatalf("limit %d attempt %d: failures %d (%+v)", limit, attempt, s.Status.Failures, s.Status)
			}
			if attempt <= limit {
				if s.Status.State != v1beta1.SnapshotTriggerPending {
					t.Fatalf("limit %d: after failure %d state %s, want TRIGGER_PENDING", limit, attempt, s.Status.State)
				}
				continue
			}
			if s.Status.State != v1beta1.SnapshotFailed || !strings.Contains(s.Status.Error, "disk full") {
				t.Fatalf("limit %d: after failure %d: %+v, want FAILED", limit, attempt, s.Status)
			}
			break
		}
		if n := countEvents(f.Events(), reasons.ReasonSavepointError); n != int(limit)+1 {
			t.Errorf("limit %d: %d SavepointError events, want %d", limit, n, limit+1)
		}
	}
}

func TestReconcileBackoffUnlimited(t *testing.T) {
	f := newFixture(t)
	jm := f.addCluster("job", v1beta1.FlinkVersion1_20, nil)
	jm.FailSavepoints(f.jobIDs["job"], "boom")
	f.Create(savepointSnap("sp", "job")) // backoffLimit unset: -1
	for i := int32(1); i <= 10; i++ {
		f.drivePoll("sp")
		if s := f.Get("sp"); s.Status.State != v1beta1.SnapshotTriggerPending || s.Status.Failures != i {
			t.Fatalf("after %d errors: %+v", i, s.Status)
		}
	}
}

// drivePoll runs syncs (honouring backoff waits) until the snapshot records
// one more failure or becomes terminal.
func (f *fixture) drivePoll(name string) {
	f.T.Helper()
	before := f.Get(name).Status.Failures
	for range 20 {
		d := f.MustSync(name)
		s := f.Get(name)
		if s.Status.Failures > before || s.Status.State.IsTerminal() {
			return
		}
		f.Clock.Step(max(d, time.Second))
	}
	f.T.Fatalf("no progress on %s", name)
}

func TestReconcileNewSavepointNoPath(t *testing.T) {
	f := newFixture(t)
	f.addCluster("job", v1beta1.FlinkVersion1_20, map[string]string{})
	f.Create(savepointSnap("sp", "job"))
	f.MustSync("sp")
	s := f.Get("sp")
	if s.Status.State != v1beta1.SnapshotTriggerPending || !strings.Contains(s.Status.Error, "savepoint path") {
		t.Fatalf("status %+v", s.Status)
	}
	events := f.Events()
	if countEvents(events, reasons.ReasonSavepointError) != 1 || !strings.Contains(events[0], s.Status.Error) {
		t.Fatalf("events %v", events)
	}
	// The job gets a savepoint dir: the retry triggers.
	dep, _ := f.Client.FlinkV1beta1().FlinkDeployments(ns).Get(f.Ctx, "job", metav1.GetOptions{})
	dep.Spec.FlinkConfiguration = v1beta1.NewConfiguration(map[string]string{"state.savepoints.dir": "file://" + f.Dir})
	if _, err := f.Client.FlinkV1beta1().FlinkDeployments(ns).Update(f.Ctx, dep, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.Clock.Step(time.Minute)
	f.MustSync("sp")
	if s := f.Get("sp"); s.Status.State != v1beta1.SnapshotInProgress {
		t.Fatalf("after adding a savepoint dir: %+v", s.Status)
	}
}

func TestReconcileNewCheckpoint(t *testing.T) {
	f := newFixture(t)
	jm := f.addCluster("job", v1beta1.FlinkVersion1_20, nil)
	f.Create(checkpointSnap("cp", "job"))
	f.MustSync("cp")
	s := f.Get("cp")
	if s.Status.State != v1beta1.SnapshotInProgress || len(s.Status.TriggerID) != 32 {
		t.Fatalf("after trigger %+v", s.Status)
	}
	ops := jm.Operations()
	if len(ops) != 1 || ops[0].Kind != fakejm.OpCheckpoint || ops[0].CheckpointType != "FULL" {
		t.Fatalf("operations %+v, want one FULL checkpoint", ops)
	}
	s = f.drive("cp", 10)
	if s.Status.State != v1beta1.SnapshotCompleted || !strings.Contains(s.Status.Path, "chk-") {
		t.Fatalf("completed %+v", s.Status)
	}
	if containsString(s.Finalizers, v1beta1.SnapshotFinalizer) {
		t.Errorf("checkpoints are never disposed, but got a finalizer")
	}
}

func TestReconcileNewCheckpointUnsupportedFlinkVersion(t *testing.T) {
	f := newFixture(t)
	f.addCluster("job", v1beta1.FlinkVersion1_16, nil)
	f.Create(withBackoff(checkpointSnap("cp", "job"), 0))
	f.MustSync("cp")
	s := f.Get("cp")
	if s.Status.State != v1beta1.SnapshotFailed || s.Status.Failures != 1 || !strings.Contains(s.Status.Error, "requires Flink 1.17+") {
		t.Fatalf("status %+v", s.Status)
	}
}

func TestReconcileSavepointError(t *testing.T) {
	testSnapshotFetchError(t, savepointSnap("s", "job"), reasons.ReasonSavepointError)
}

func TestReconcileCheckpointError(t *testing.T) {
	testSnapshotFetchError(t, checkpointSnap("s", "job"), reasons.ReasonCheckpointError)
}

// testSnapshotFetchError: with backoffLimit 1 the first error retries with a
// new trigger, the second is final.
func testSnapshotFetchError(t *testing.T, snap *v1beta1.FlinkStateSnapshot, reason string) {
	f := newFixture(t)
	jm := f.addCluster("job", v1beta1.FlinkVersion1_20, nil)
	f.Create(withBackoff(snap, 1))
	f.MustSync("s")
	first := f.Get("s").Status.TriggerID
	remove := jm.InjectFault(fakejm.Fault{Status: 500, Errors: []string{"java.lang.RuntimeException: status unavailable"}, Route: statusRoute(snap)})
	f.Clock.Step(time.Second)
	f.MustSync("s")
	s := f.Get("s")
	if s.Status.State != v1beta1.SnapshotTriggerPending || s.Status.Failures != 1 || !strings.Contains(s.Status.Error, "status unavailable") {
		t.Fatalf("after first error %+v", s.Status)
	}
	remove()
	f.Clock.Step(10 * time.Second) // backoff
	f.MustSync("s")
	s = f.Get("s")
	if s.Status.State != v1beta1.SnapshotInProgress || s.Status.TriggerID == first {
		t.Fatalf("retry should re-trigger with a new id: %+v", s.Status)
	}
	jm.InjectFault(fakejm.Fault{Status: 500, Route: statusRoute(snap)})
	f.Clock.Step(time.Second)
	f.MustSync("s")
	s = f.Get("s")
	if s.Status.State != v1beta1.SnapshotFailed || s.Status.Failures != 2 || s.Status.Path != "" {
		t.Fatalf("after second error %+v", s.Status)
	}
	if n := countEvents(f.Events(), reason); n != 2 {
		t.Errorf("%d %s events, want 2", n, reason)
	}
}

func statusRoute(s *v1beta1.FlinkStateSnapshot) string {
	if s.Spec.Savepoint != nil {
		return fakejm.RouteSavepointStatus
	}
	return fakejm.RouteCheckpointStatus
}

func TestMetrics(t *testing.T) {
	f := newFixture(t)
	f.addCluster("job", v1beta1.FlinkVersion1_20, nil)
	f.Create(savepointSnap("sp", "job"))
	f.Create(checkpointSnap("cp", "job"))
	f.drive("sp", 10)
	f.drive("cp", 10)
	f.Refresh()
	counts := map[string]int{}
	for _, c := range f.ctrl.CountSnapshots() {
		counts[c.Namespace+"/"+c.Type+"/"+c.State] = c.Count
	}
	if counts["default/savepoint/COMPLETED"] != 1 || counts["default/checkpoint/COMPLETED"] != 1 || len(counts) != 2 {
		t.Fatalf("counts %v", counts)
	}
	if err := f.Client.FlinkV1beta1().FlinkStateSnapshots(ns).Delete(f.Ctx, "cp", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	f.Refresh()
	counts = map[string]int{}
	for _, c := range f.ctrl.CountSnapshots() {
		counts[c.Namespace+"/"+c.Type+"/"+c.State] = c.Count
	}
	if counts["default/checkpoint/COMPLETED"] != 0 || counts["default/savepoint/COMPLETED"] != 1 {
		t.Fatalf("after delete: %v", counts)
	}
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

var _ = flink.V1_15
