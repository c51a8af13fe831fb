package snapshot

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	core "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/config"
	"github.com/flinkops/flink-operator/pkg/flink/fakejm"
	"github.com/flinkops/flink-operator/pkg/reasons"
)

// Tests for the lines snapshots.md marks [ours]; each fails without the
// behaviour it names.

// Crash after the IN_PROGRESS write, before the POST: the restarted operator
// finds an id Flink never saw and sends it once.
func TestCrashAfterStatusWriteBeforePost(t *testing.T) {
	f := newFixture(t)
	jm := f.addCluster("job", v1beta1.FlinkVersion1_20, nil)
	f.Create(savepointSnap("sp", "job"))
	f.syncCrashing("sp")
	s := f.Get("sp")
	if s.Status.State != v1beta1.SnapshotInProgress || s.Status.TriggerID == "" {
		t.Fatalf("intent not recorded before the crash: %+v", s.Status)
	}
	if n := jm.StartedOperations(fakejm.OpSavepoint); n != 0 {
		t.Fatalf("%d savepoints started before the POST", n)
	}
	f.Restart()
	f.Clock.Step(time.Second)
	got := f.drive("sp", 10)
	if got.Status.State != v1beta1.SnapshotCompleted || got.Status.TriggerID != s.Status.TriggerID {
		t.Fatalf("after restart: %+v (trigger id was %s)", got.Status, s.Status.TriggerID)
	}
	if n := jm.StartedOperations(fakejm.OpSavepoint); n != 1 {
		t.Fatalf("%d savepoints started, want exactly 1", n)
	}
}

// Crash after the POST, before the next status write: the restarted operator
// adopts the savepoint already running under the recorded id.
func TestCrashAfterPostBeforeStatusWrite(t *testing.T) {
	f := newFixture(t)
	jm := f.addCluster("job", v1beta1.FlinkVersion1_20, nil)
	f.Create(savepointSnap("sp", "job"))
	f.MustSync("sp") // intent written, POST sent
	// The write that would record completion fails, as if the process died.
	f.Client.PrependReactor("update", "flinkstatesnapshots", func(core.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("process killed")
	})
	f.Clock.Step(time.Second)
	f.Sync("sp")
	f.Clock.Step(time.Second)
	if _, err := f.Sync("sp"); err == nil {
		t.Fatal("expected the completion write to fail")
	}
	f.Client.ReactionChain = f.Client.ReactionChain[1:]
	f.Restart()
	got := f.drive("sp", 10)
	if got.Status.State != v1beta1.SnapshotCompleted {
		t.Fatalf("after restart: %+v", got.Status)
	}
	if n := jm.StartedOperations(fakejm.OpSavepoint); n != 1 {
		t.Fatalf("%d savepoints started, want the first one adopted", n)
	}
}

// 404 on a trigger id Flink forgot: adopt from checkpoint history, re-send
// while young, else fail.
func TestForgottenTriggerID(t *testing.T) {
	t.Run("completed, then forgotten: adopted from history", func(t *testing.T) {
		f := newFixture(t)
		jm := f.addCluster("job", v1beta1.FlinkVersion1_20, nil)
		jm.SetCompletion(0, 0)
		f.Create(savepointSnap("sp", "job"))
		f.MustSync("sp") // triggered; completes at once in Flink
		f.Clock.Step(6 * time.Minute)
		got := f.drive("sp", 5)
		if got.Status.State != v1beta1.SnapshotCompleted || !metadataExists(got.Status.Path) {
			t.Fatalf("%+v", got.Status)
		}
		if n := jm.StartedOperations(fakejm.OpSavepoint); n != 1 {
			t.Fatalf("%d savepoints started, want 1", n)
		}
	})
	t.Run("unknown while young: same id sent again", func(t *testing.T) {
		f := newFixture(t)
		jm := f.addCluster("job", v1beta1.FlinkVersion1_20, nil)
		f.Create(savepointSnap("sp", "job"))
		remove := jm.InjectFault(fakejm.Fault{Route: fakejm.RouteSavepointTrigger, Status: 503, Times: 1})
		f.MustSync("sp") // the POST is lost
		remove()
		id := f.Get("sp").Status.TriggerID
		got := f.drive("sp", 10)
		if got.Status.State != v1beta1.SnapshotCompleted || got.Status.TriggerID != id {
			t.Fatalf("%+v", got.Status)
		}
		ops := jm.Operations()
		if len(ops) != 1 || ops[0].TriggerID != id {
			t.Fatalf("operations %+v, want one with id %s", ops, id)
		}
	})
	t.Run("unknown when old and not in history: failed", func(t *testing.T) {
		f := newFixture(t)
		jm := f.addCluster("job", v1beta1.FlinkVersion1_20, nil)
		f.Create(withBackoff(savepointSnap("sp", "job"), 0))
		jm.InjectFault(fakejm.Fault{Route: fakejm.RouteSavepointTrigger, Status: 503})
		f.MustSync("sp")
		f.Clock.Step(6 * time.Minute)
		f.MustSync("sp")
		got := f.Get("sp")
		if got.Status.State != v1beta1.SnapshotFailed || !strings.Contains(got.Status.Error, "does not know trigger id") {
			t.Fatalf("%+v", got.Status)
		}
	})
}

func TestInProgressPastTimeout(t *testing.T) {
	f := newFixture(t)
	jm := f.addCluster("job", v1beta1.FlinkVersion1_20, nil)
	jm.SetCompletion(1000, 0) // never completes
	f.Create(withBackoff(savepointSnap("sp", "job"), 0))
	f.MustSync("sp")
	f.Clock.Step(10 * time.Minute)
	f.MustSync("sp")
	if s := f.Get("sp"); s.Status.State != v1beta1.SnapshotInProgress {
		t.Fatalf("failed before the 11 min default timeout: %+v", s.Status)
	}
	f.Clock.Step(61 * time.Second)
	f.MustSync("sp")
	s := f.Get("sp")
	if s.Status.State != v1beta1.SnapshotFailed || !strings.Contains(s.Status.Error, "did not complete within 11m0s") {
		t.Fatalf("%+v", s.Status)
	}
}

func TestSecondSnapshotWaitsWhileOneInFlight(t *testing.T) {
	f := newFixture(t)
	jm := f.addCluster("job", v1beta1.FlinkVersion1_20, nil)
	jm.SetCompletion(3, 0)
	f.Create(savepointSnap("a", "job"))
	f.Create(savepointSnap("b", "job"))
	f.MustSync("a")
	if d := f.MustSync("b"); d != waitForSlot {
		t.Errorf("waiting snapshot requeued after %v, want %v", d, waitForSlot)
	}
	if s := f.Get("b"); s.Status.State != v1beta1.SnapshotTriggerPending || s.Status.Failures != 0 {
		t.Fatalf("second snapshot %+v, want TRIGGER_PENDING without failure", s.Status)
	}
	if n := jm.StartedOperations(fakejm.OpSavepoint); n != 1 {
		t.Fatalf("%d savepoints in flight, want 1", n)
	}
	f.drive("a", 10)
	f.MustSync("b")
	if s := f.Get("b"); s.Status.State != v1beta1.SnapshotInProgress {
		t.Fatalf("after the first completed, second is %+v", s.Status)
	}
}

// The cap also holds between two syncs that have not seen each other's
// writes yet (two workers, stale cache).
func TestConcurrencyCapWithStaleCache(t *testing.T) {
	f := newFixture(t)
	jm := f.addCluster("job", v1beta1.FlinkVersion1_20, nil)
	f.Create(savepointSnap("a", "job"))
	f.Create(savepointSnap("b", "job"))
	f.Refresh()
	if _, err := f.ctrl.Sync(f.Ctx, ns+"/a"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.ctrl.Sync(f.Ctx, ns+"/b"); err != nil { // cache still says "a" is new
		t.Fatal(err)
	}
	if n := jm.StartedOperations(fakejm.OpSavepoint); n != 1 {
		t.Fatalf("%d savepoints started, want 1", n)
	}
}

func TestCrossNamespaceReferenceRefusedByDefault(t *testing.T) {
	f := newFixture(t)
	jm := f.addCluster("job", v1beta1.FlinkVersion1_20, nil)
	s := savepointSnap("sp", "job")
	s.Namespace = ns
	s.Spec.JobReference.Namespace = "other"
	f.Create(s)
	f.MustSync("sp")
	got := f.Get("sp")
	if got.Status.State != v1beta1.SnapshotTriggerPending || !strings.Contains(got.Status.Error, config.KeySnapshotCrossNamespaceReferencesEnabled) {
		t.Fatalf("%+v", got.Status)
	}
	if countEvents(f.Events(), reasons.ReasonValidationError) != 1 {
		t.Error("no ValidationError event")
	}
	if n := len(jm.Requests()); n != 0 {
		t.Fatalf("%d REST calls for a refused reference", n)
	}
}

// completedSavepoint drives a savepoint to COMPLETED and deletes it.
func completedAndDeleted(t *testing.T, f *fixture, s *v1beta1.FlinkStateSnapshot) *v1beta1.FlinkStateSnapshot {
	t.Helper()
	f.Create(s)
	done := f.drive(s.Name, 10)
	if done.Status.State != v1beta1.SnapshotCompleted {
		t.Fatalf("not completed: %+v", done.Status)
	}
	markDeleted(t, f, s.Name)
	return done
}

// markDeleted sets a deletionTimestamp as the API server does for an object
// with finalizers (the fake clientset would delete it at once).
func markDeleted(t *testing.T, f *fixture, name string) {
	t.Helper()
	s := f.Get(name)
	if len(s.Finalizers) == 0 {
		if err := f.Client.FlinkV1beta1().FlinkStateSnapshots(ns).Delete(f.Ctx, name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		return
	}
	now := metav1.NewTime(f.Clock.Now())
	s.DeletionTimestamp = &now
	if _, err := f.Client.FlinkV1beta1().FlinkStateSnapshots(ns).Update(f.Ctx, s, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func gone(f *fixture, name string) bool {
	s, err := f.Client.FlinkV1beta1().FlinkStateSnapshots(ns).Get(f.Ctx, name, metav1.GetOptions{})
	return err != nil || !containsString(s.Finalizers, v1beta1.SnapshotFinalizer)
}

func TestReconcileSavepointCleanup(t *testing.T) {
	t.Run("completed with running job: disposed once, then released", func(t *testing.T) {
		f := newFixture(t)
		jm := f.addCluster("job", v1beta1.FlinkVersion1_20, nil)
		s := completedAndDeleted(t, f, savepointSnap("sp", "job"))
		path := s.Status.Path
		for i := 0; i < 5 && !gone(f, "sp"); i++ {
			f.Clock.Step(f.MustSync("sp"))
		}
		if !gone(f, "sp") {
			t.Fatal("finalizer still present")
		}
		ops := 0
		for _, op := range jm.Operations() {
			if op.Kind == fakejm.OpDisposal {
				ops++
				if op.SavepointPath != path {
					t.Errorf("disposed %q, want %q", op.SavepointPath, path)
				}
			}
		}
		if ops != 1 || metadataExists(path) {
			t.Fatalf("%d disposals; data still there: %v", ops, metadataExists(path))
		}
	})
	t.Run("disposeOnDelete false: released without disposal", func(t *testing.T) {
		f := newFixture(t)
		jm := f.addCluster("job", v1beta1.FlinkVersion1_20, nil)
		sp := savepointSnap("sp", "job")
		sp.Spec.Savepoint.DisposeOnDelete = ptr.To(false)
		s := completedAndDeleted(t, f, sp)
		if !gone(f, "sp") || jm.StartedOperations(fakejm.OpDisposal) != 0 || !metadataExists(s.Status.Path) {
			t.Fatal("disposed a savepoint with disposeOnDelete: false")
		}
	})
	for _, state := range []v1beta1.SnapshotState{v1beta1.SnapshotFailed, v1beta1.SnapshotAbandoned, v1beta1.SnapshotTriggerPending} {
		t.Run(string(state)+": released without disposal", func(t *testing.T) {
			f := newFixture(t)
			jm := f.addCluster("job", v1beta1.FlinkVersion1_20, nil)
			s := savepointSnap("sp", "job")
			s.Finalizers = []string{v1beta1.SnapshotFinalizer}
			s.Status.State = state
			f.Create(s)
			markDeleted(t, f, "sp")
			f.MustSync("sp")
			if !gone(f, "sp") || jm.StartedOperations(fakejm.OpDisposal) != 0 {
				t.Fatal("not released, or disposed")
			}
		})
	}
	t.Run("job not running: disposal still attempted on its JobManager", func(t *testing.T) {
		f := newFixture(t)
		jm := f.addCluster("job", v1beta1.FlinkVersion1_20, nil)
		completedAndDeleted(t, f, savepointSnap("sp", "job"))
		f.setJobState("job", v1beta1.JobStatusCanceled)
		for i := 0; i < 5 && !gone(f, "sp"); i++ {
			f.Clock.Step(f.MustSync("sp"))
		}
		if !gone(f, "sp") || jm.StartedOperations(fakejm.OpDisposal) != 1 {
			t.Fatal("disposal on a reachable JobManager should not need a running job")
		}
	})
}

// Deletion never hangs: JobManager down → retries until the dispose timeout,
// then the finalizer goes with a DisposeSkipped event naming the path.
func TestDeletionWithJobManagerDownEndsWithinDisposeTimeout(t *testing.T) {
	f := newFixture(t)
	jm := f.addCluster("job", v1beta1.FlinkVersion1_20, nil)
	s := completedAndDeleted(t, f, savepointSnap("sp", "job"))
	jm.InjectFault(fakejm.Fault{Status: 503})
	f.Events()
	start := f.Clock.Now()
	syncs := 0
	for !gone(f, "sp") {
		d := f.MustSync("sp")
		syncs++
		if syncs > 200 {
			t.Fatal("deletion did not end")
		}
		f.Clock.Step(max(d, time.Second))
	}
	if took := f.Clock.Since(start); took > 10*time.Minute+time.Minute {
		t.Fatalf("deletion took %v, want about the 10 min dispose timeout", took)
	}
	events := f.Events()
	if countEvents(events, reasons.ReasonCleanupFailed) == 0 || countEvents(events, reasons.ReasonDisposeSkipped) != 1 {
		t.Fatalf("events %v", events)
	}
	found := false
	for _, e := range events {
		found = found || (strings.Contains(e, reasons.ReasonDisposeSkipped) && strings.Contains(e, s.Status.Path))
	}
	if !found {
		t.Errorf("DisposeSkipped does not name the path %s", s.Status.Path)
	}
	t.Logf("deletion with the JobManager down ended after %v and %d syncs", f.Clock.Since(start), syncs)
}

// An imported savepoint (alreadyExists) without disposeOnDelete is never
// disposed: the operator did not create it.
func TestAlreadyExistsWithoutDisposeOnDeleteNeverDisposes(t *testing.T) {
	f := newFixture(t)
	jm := f.addCluster("job", v1beta1.FlinkVersion1_20, nil)
	s := savepointSnap("sp", "job")
	s.Spec.Savepoint = &v1beta1.SavepointSpec{AlreadyExists: ptr.To(true), Path: "file:///data/imported"}
	f.Create(s)
	f.MustSync("sp")
	got := f.Get("sp")
	if got.Status.State != v1beta1.SnapshotCompleted || containsString(got.Finalizers, v1beta1.SnapshotFinalizer) {
		t.Fatalf("%+v finalizers %v", got.Status, got.Finalizers)
	}
	markDeleted(t, f, "sp")
	f.MustSync("sp")
	if n := jm.StartedOperations(fakejm.OpDisposal); n != 0 {
		t.Fatalf("%d disposals of an imported savepoint", n)
	}
}

// The restore point of a job not being deleted is never disposed, even with
// disposeOnDelete: the snapshot goes at once, its disposal is handed to the
// job, and if the job is still there when the dispose timeout ends, the
// data is kept with a DisposeSkipped event (handover_test.go has the rest).
func TestRestorePointNeverDisposed(t *testing.T) {
	f := newFixture(t)
	jm := f.addCluster("job", v1beta1.FlinkVersion1_20, nil)
	s := completedAndDeleted(t, f, savepointSnap("sp", "job"))
	dep, _ := f.Client.FlinkV1beta1().FlinkDeployments(ns).Get(f.Ctx, "job", metav1.GetOptions{})
	dep.Status.JobStatus.UpgradeSavepointPath = s.Status.Path
	if _, err := f.Client.FlinkV1beta1().FlinkDeployments(ns).UpdateStatus(f.Ctx, dep, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.MustSync("sp")
	if !gone(f, "sp") || jm.StartedOperations(fakejm.OpDisposal) != 0 || !metadataExists(s.Status.Path) {
		t.Fatal("restore point was disposed or deletion blocked")
	}
	if countEvents(f.Events(), reasons.ReasonDisposeDeferred) != 1 {
		t.Error("no DisposeDeferred event for the held restore point")
	}
	if took := f.settleDisposals(v1beta1.JobReferenceKindDeployment, "job"); took < 10*time.Minute || took > 11*time.Minute {
		t.Errorf("kept after %v, want the 10 min dispose timeout", took)
	}
	if jm.StartedOperations(fakejm.OpDisposal) != 0 || !metadataExists(s.Status.Path) {
		t.Fatal("restore point was disposed")
	}
	if countEvents(f.Events(), reasons.ReasonDisposeSkipped) != 1 {
		t.Error("no DisposeSkipped event for the kept restore point")
	}
}

// Cross-namespace references with the option on are acted on only when the
// validating webhook (which ran the SubjectAccessReview) guards snapshot
// admission: without it, a ValidationError and no REST call at all; with
// it, the snapshot completes and carries the job-reference.namespace label.
func TestCrossNamespaceReferenceNeedsTheWebhook(t *testing.T) {
	for _, webhook := range []bool{false, true} {
		t.Run(map[bool]string{false: "no webhook", true: "webhook registered"}[webhook], func(t *testing.T) {
			f := newFixture(t)
			f.Config[config.KeySnapshotCrossNamespaceReferencesEnabled] = "true"
			if webhook {
				f.guard = func(context.Context, *v1beta1.FlinkStateSnapshot) error { return nil }
			} else {
				f.guard = func(context.Context, *v1beta1.FlinkStateSnapshot) error {
					return errors.New(`ValidatingWebhookConfiguration "flink-operator" not found`)
				}
			}
			f.Restart()
			jm := f.addCluster("job", v1beta1.FlinkVersion1_20, nil)
			s := savepointSnap("sp", "job")
			s.Namespace = "team-a"
			s.Spec.JobReference.Namespace = ns
			f.Create(s)
			if !webhook {
				f.mustSyncIn("team-a", "sp")
				got := f.GetIn("team-a", "sp")
				if got.Status.State != v1beta1.SnapshotTriggerPending || !strings.Contains(got.Status.Error, "is not trusted") ||
					!strings.Contains(got.Status.Error, "not found") {
					t.Fatalf("status %+v, want a ValidationError naming the missing webhook", got.Status)
				}
				if n := len(jm.Requests()); n != 0 {
					t.Fatalf("%d REST calls for an untrusted reference", n)
				}
				return
			}
			var got *v1beta1.FlinkStateSnapshot
			for range 5 {
				f.mustSyncIn("team-a", "sp")
				if got = f.GetIn("team-a", "sp"); got.Status.State == v1beta1.SnapshotCompleted {
					break
				}
			}
			if got.Status.State != v1beta1.SnapshotCompleted || got.Labels[v1beta1.LabelJobReferenceNamespace] != ns {
				t.Fatalf("status %+v labels %v, want COMPLETED with job-reference.namespace=%s", got.Status, got.Labels, ns)
			}
		})
	}
}

// A snapshot another job starts from by reference
// (spec.job.initialStateSnapshotRef) keeps its data when deleted, even with
// disposeOnDelete, while that job is not being deleted: the resource goes,
// the savepoint stays [ours].
func TestReferencedSnapshotNeverDisposed(t *testing.T) {
	f := newFixture(t)
	jm := f.addCluster("job", v1beta1.FlinkVersion1_20, nil)
	clone := &v1beta1.FlinkDeployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "clone"},
		Spec: v1beta1.FlinkDeploymentSpec{Job: &v1beta1.JobSpec{
			JarURI: "local:///opt/flink/usrlib/job.jar", InitialStateSnapshotRef: &v1beta1.SnapshotReference{Name: "sp"},
		}},
	}
	if _, err := f.Client.FlinkV1beta1().FlinkDeployments(ns).Create(f.Ctx, clone, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	s := completedAndDeleted(t, f, savepointSnap("sp", "job"))
	f.MustSync("sp")
	if !gone(f, "sp") || jm.StartedOperations(fakejm.OpDisposal) != 0 || !metadataExists(s.Status.Path) {
		t.Fatal("referenced savepoint was disposed, or its deletion blocked")
	}
	// Its disposal waits for the referrer (handover_test.go), which stays.
	f.settleDisposals(v1beta1.JobReferenceKindDeployment, "job")
	if jm.StartedOperations(fakejm.OpDisposal) != 0 || !metadataExists(s.Status.Path) {
		t.Fatal("referenced savepoint was disposed")
	}
	found := false
	for _, e := range f.Events() {
		found = found || (strings.Contains(e, reasons.ReasonDisposeSkipped) && strings.Contains(e, "FlinkDeployment default/clone"))
	}
	if !found {
		t.Error("no DisposeSkipped event naming the referrer")
	}
}

// A forgotten trigger id on a job without checkpointing (its history answers
// 404) is still re-sent while young.
func TestForgottenTriggerIDWithoutCheckpointHistory(t *testing.T) {
	f := newFixture(t)
	jm := f.addCluster("job", v1beta1.FlinkVersion1_20, nil)
	jm.RemoveJob(f.jobIDs["job"])
	jm.MustAddJob(fakejm.JobSpec{ID: f.jobIDs["job"], CheckpointingDisabled: true})
	f.Create(savepointSnap("sp", "job"))
	remove := jm.InjectFault(fakejm.Fault{Route: fakejm.RouteSavepointTrigger, Status: 503, Times: 1})
	f.MustSync("sp")
	remove()
	got := f.drive("sp", 10)
	if got.Status.State != v1beta1.SnapshotCompleted || jm.StartedOperations(fakejm.OpSavepoint) != 1 {
		t.Fatalf("%+v, %d savepoints", got.Status, jm.StartedOperations(fakejm.OpSavepoint))
	}
}

// An IN_PROGRESS snapshot whose job can no longer be resolved (its session
// cluster is gone) fails at the timeout instead of waiting forever.
func TestUnobservableInProgressEndsAtTimeout(t *testing.T) {
	f := newFixture(t)
	f.addCluster("session", v1beta1.FlinkVersion1_20, nil)
	job := &v1beta1.FlinkSessionJob{
		ObjectMeta: metav1.ObjectMeta{Name: "sj", Namespace: ns},
		Spec:       v1beta1.FlinkSessionJobSpec{DeploymentName: "session"},
		Status:     v1beta1.FlinkSessionJobStatus{JobStatus: v1beta1.JobStatus{JobID: f.jobIDs["session"], State: v1beta1.JobStatusRunning}},
	}
	if _, err := f.Client.FlinkV1beta1().FlinkSessionJobs(ns).Create(f.Ctx, job, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	s := withBackoff(savepointSnap("sp", "sj"), 0)
	s.Spec.JobReference.Kind = v1beta1.JobReferenceKindSessionJob
	f.jms["session"].SetCompletion(1000, 0)
	f.Create(s)
	f.MustSync("sp")
	if got := f.Get("sp"); got.Status.State != v1beta1.SnapshotInProgress {
		t.Fatalf("session job snapshot not triggered: %+v", got.Status)
	}
	if err := f.Client.FlinkV1beta1().FlinkDeployments(ns).Delete(f.Ctx, "session", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	f.Clock.Step(time.Minute)
	f.MustSync("sp")
	if got := f.Get("sp"); got.Status.State != v1beta1.SnapshotInProgress || !strings.Contains(got.Status.Error, "session cluster") {
		t.Fatalf("before the timeout: %+v", got.Status)
	}
	f.Clock.Step(11 * time.Minute)
	f.MustSync("sp")
	if got := f.Get("sp"); got.Status.State != v1beta1.SnapshotFailed {
		t.Fatalf("after the timeout: %+v", got.Status)
	}
}

// An alreadyExists savepoint naming another namespace's job is checked like
// any cross-namespace reference: without a reviewed stamp it never becomes
// COMPLETED, so its deletion can never dispose a path through that job's
// cluster.
func TestCrossNamespaceAlreadyExistsNeedsTheStamp(t *testing.T) {
	f := newFixture(t)
	f.Config[config.KeySnapshotCrossNamespaceReferencesEnabled] = "true"
	f.guard = func(context.Context, *v1beta1.FlinkStateSnapshot) error {
		return errors.New("no review stamp")
	}
	f.Restart()
	jm := f.addCluster("job", v1beta1.FlinkVersion1_20, nil)
	s := savepointSnap("sp", "job")
	s.Namespace = "team-a"
	s.Spec.JobReference.Namespace = ns
	s.Spec.Savepoint.AlreadyExists = ptr.To(true)
	s.Spec.Savepoint.Path = "file:///data/savepoints/someone-elses"
	s.Spec.Savepoint.DisposeOnDelete = ptr.To(true)
	f.Create(s)
	f.mustSyncIn("team-a", "sp")
	got := f.GetIn("team-a", "sp")
	if got.Status.State == v1beta1.SnapshotCompleted || !strings.Contains(got.Status.Error, "is not trusted") {
		t.Fatalf("status %+v, want a ValidationError and not COMPLETED", got.Status)
	}
	if n := len(jm.Requests()); n != 0 {
		t.Fatalf("%d REST calls for an untrusted reference", n)
	}
}
