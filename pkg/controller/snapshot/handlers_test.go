package snapshot

import (
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/reasons"
	"github.com/flinkops/flink-operator/pkg/snapshotrules"
)

// The informer event handlers decide which snapshots are looked at again
// (controller.go). The fixture feeds the indexers by hand and never starts
// the informers, so these tests call the handlers the way the informers
// would and read what landed in the workqueue.

// queued drains the controller's workqueue and returns its keys, sorted.
func (f *fixture) queued() []string {
	f.T.Helper()
	var keys []string
	for f.ctrl.queue.Len() > 0 {
		k, shutdown := f.ctrl.queue.Get()
		if shutdown {
			break
		}
		keys = append(keys, k)
		f.ctrl.queue.Forget(k)
		f.ctrl.queue.Done(k)
	}
	slices.Sort(keys)
	return keys
}

// snapWith is a savepoint of job in the given state; deleting sets a
// deletionTimestamp (and the finalizer that keeps it around).
func snapWith(name, job string, state v1beta1.SnapshotState, deleting bool) *v1beta1.FlinkStateSnapshot {
	s := savepointSnap(name, job)
	s.Status.State = state
	if deleting {
		ts := metav1.NewTime(t0)
		s.DeletionTimestamp = &ts
		s.Finalizers = []string{v1beta1.SnapshotFinalizer}
	}
	return s
}

// jobSnapshots puts snapshots of "job" (and one of "other") in every
// situation into the cache: enqueueJob must pick exactly the in-flight
// ones and the ones being deleted.
func jobSnapshots(f *fixture) {
	for _, s := range []*v1beta1.FlinkStateSnapshot{
		snapWith("new", "job", "", false),
		snapWith("pending", "job", v1beta1.SnapshotTriggerPending, false),
		snapWith("running", "job", v1beta1.SnapshotInProgress, false),
		snapWith("done", "job", v1beta1.SnapshotCompleted, false),
		snapWith("failed", "job", v1beta1.SnapshotFailed, false),
		snapWith("done-deleting", "job", v1beta1.SnapshotCompleted, true),
		snapWith("other-job", "other", v1beta1.SnapshotInProgress, false),
	} {
		f.Create(s)
	}
	f.Refresh()
}

// inFlightOrDeleting is what waking "job" must queue.
var inFlightOrDeleting = []string{ns + "/done-deleting", ns + "/new", ns + "/pending", ns + "/running"}

func TestSnapshotAddQueuesItsKey(t *testing.T) {
	f := newFixture(t)
	f.ctrl.enqueue(savepointSnap("sp", "job"))
	if got := f.queued(); !slices.Equal(got, []string{ns + "/sp"}) {
		t.Errorf("queued %v, want [%s/sp]", got, ns)
	}
	// Something that is no object has no key: nothing is queued.
	f.ctrl.enqueue("not an object")
	if got := f.queued(); len(got) != 0 {
		t.Errorf("queued %v for a non-object", got)
	}
}

// A snapshot leaving IN_PROGRESS frees a concurrency slot: the snapshots of
// its job that may wait for it are woken, besides the snapshot itself.
// Other updates wake the snapshot only.
func TestSnapshotLeavingInProgressWakesItsJob(t *testing.T) {
	for _, tc := range []struct {
		name     string
		from, to v1beta1.SnapshotState
		wakesJob bool
	}{
		{"IN_PROGRESS to COMPLETED wakes the job", v1beta1.SnapshotInProgress, v1beta1.SnapshotCompleted, true},
		{"IN_PROGRESS to TRIGGER_PENDING (retry) wakes the job", v1beta1.SnapshotInProgress, v1beta1.SnapshotTriggerPending, true},
		{"IN_PROGRESS stays IN_PROGRESS: only itself", v1beta1.SnapshotInProgress, v1beta1.SnapshotInProgress, false},
		{"TRIGGER_PENDING to IN_PROGRESS: only itself", v1beta1.SnapshotTriggerPending, v1beta1.SnapshotInProgress, false},
		{"COMPLETED to COMPLETED: only itself", v1beta1.SnapshotCompleted, v1beta1.SnapshotCompleted, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			jobSnapshots(f)
			old := snapWith("changed", "job", tc.from, false)
			updated := snapWith("changed", "job", tc.to, false)
			f.ctrl.snapshotUpdated(old, updated)
			want := []string{ns + "/changed"}
			if tc.wakesJob {
				want = append(want, inFlightOrDeleting...)
				slices.Sort(want)
			}
			if got := f.queued(); !slices.Equal(got, want) {
				t.Errorf("queued %v, want %v", got, want)
			}
		})
	}
}

// A snapshot deleted while IN_PROGRESS without a finalizer to hold it
// leaves Flink writing files nobody disposes: a DisposeSkipped event names
// its trigger id. The deletion frees its slot, so its job's other snapshots
// are woken. A tombstone (missed delete) is handled like the object.
func TestSnapshotDeletedWhileInProgressWarnsAndWakesItsJob(t *testing.T) {
	keep := func(s *v1beta1.FlinkStateSnapshot) *v1beta1.FlinkStateSnapshot {
		s.Spec.Savepoint.DisposeOnDelete = ptr.To(false)
		return s
	}
	inProgress := func() *v1beta1.FlinkStateSnapshot {
		s := snapWith("gone", "job", v1beta1.SnapshotInProgress, false)
		s.Status.TriggerID = "0123456789abcdef0123456789abcdef"
		return s
	}
	for _, tc := range []struct {
		name  string
		obj   any
		event bool
	}{
		{"IN_PROGRESS savepoint to dispose: warned", inProgress(), true},
		{"IN_PROGRESS savepoint as a tombstone: warned", cache.DeletedFinalStateUnknown{Key: ns + "/gone", Obj: inProgress()}, true},
		{"IN_PROGRESS savepoint kept on delete: no warning", keep(inProgress()), false},
		{"COMPLETED savepoint: no warning", snapWith("gone", "job", v1beta1.SnapshotCompleted, false), false},
		{"TRIGGER_PENDING savepoint: no warning", snapWith("gone", "job", v1beta1.SnapshotTriggerPending, false), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			jobSnapshots(f)
			f.ctrl.reserved[ns+"/gone"] = "FlinkDeployment/" + ns + "/job"
			f.ctrl.disposals.Store(ns+"/gone", "disposal-id")
			f.ctrl.snapshotDeleted(tc.obj)

			events := f.Events()
			if got := countEvents(events, reasons.ReasonDisposeSkipped); got != map[bool]int{true: 1, false: 0}[tc.event] {
				t.Fatalf("events %v, want DisposeSkipped: %v", events, tc.event)
			}
			if tc.event && !strings.Contains(events[0], "0123456789abcdef0123456789abcdef") {
				t.Errorf("event %q does not name the trigger id", events[0])
			}
			if got := f.queued(); !slices.Equal(got, inFlightOrDeleting) {
				t.Errorf("queued %v, want the job's snapshots %v", got, inFlightOrDeleting)
			}
			if _, held := f.ctrl.reserved[ns+"/gone"]; held {
				t.Error("the deleted snapshot still holds its concurrency slot")
			}
			if _, ok := f.ctrl.disposals.Load(ns + "/gone"); ok {
				t.Error("the deleted snapshot's disposal id is still remembered")
			}
		})
	}
	// Anything else is ignored.
	f := newFixture(t)
	jobSnapshots(f)
	f.ctrl.snapshotDeleted("not a snapshot")
	if got := f.queued(); len(got) != 0 {
		t.Errorf("queued %v for a non-snapshot", got)
	}
}

// A job that changes wakes its in-flight snapshots and the ones being
// deleted (and no others): a job leaving RUNNING abandons them at once.
// An update that changes nothing snapshots depend on (the legacy savepoint
// info, the observation time) wakes nobody.
func TestJobEventsWakeItsSnapshots(t *testing.T) {
	dep := func(state v1beta1.JobStatusState, update string) *v1beta1.FlinkDeployment {
		return &v1beta1.FlinkDeployment{
			ObjectMeta: metav1.ObjectMeta{Name: "job", Namespace: ns},
			Status:     v1beta1.FlinkDeploymentStatus{JobStatus: v1beta1.JobStatus{State: state, UpdateTime: update}},
		}
	}
	sessionJob := func(state v1beta1.JobStatusState) *v1beta1.FlinkSessionJob {
		return &v1beta1.FlinkSessionJob{
			ObjectMeta: metav1.ObjectMeta{Name: "job", Namespace: ns},
			Status:     v1beta1.FlinkSessionJobStatus{JobStatus: v1beta1.JobStatus{State: state}},
		}
	}
	withHistory := dep(v1beta1.JobStatusRunning, "2")
	withHistory.Status.JobStatus.SavepointInfo = &v1beta1.SavepointInfo{}
	withHistory.Status.JobStatus.CheckpointInfo = &v1beta1.CheckpointInfo{}
	running, canceled := dep(v1beta1.JobStatusRunning, "1"), dep(v1beta1.JobStatusCanceled, "1")

	for _, tc := range []struct {
		name  string
		kind  v1beta1.JobReferenceKind
		event func(h cache.ResourceEventHandler)
		wakes bool
	}{
		{"deployment added", v1beta1.JobReferenceKindDeployment, func(h cache.ResourceEventHandler) { h.OnAdd(running, false) }, true},
		{"deployment deleted", v1beta1.JobReferenceKindDeployment, func(h cache.ResourceEventHandler) { h.OnDelete(running) }, true},
		{"deployment deleted, tombstone", v1beta1.JobReferenceKindDeployment, func(h cache.ResourceEventHandler) {
			h.OnDelete(cache.DeletedFinalStateUnknown{Key: ns + "/job", Obj: running})
		}, true},
		{"deployment leaves RUNNING", v1beta1.JobReferenceKindDeployment, func(h cache.ResourceEventHandler) { h.OnUpdate(running, canceled) }, true},
		{"deployment update of history and time only", v1beta1.JobReferenceKindDeployment, func(h cache.ResourceEventHandler) { h.OnUpdate(running, withHistory) }, false},
		{"deployment update without change", v1beta1.JobReferenceKindDeployment, func(h cache.ResourceEventHandler) { h.OnUpdate(running, running.DeepCopy()) }, false},
		{"session job leaves RUNNING", v1beta1.JobReferenceKindSessionJob, func(h cache.ResourceEventHandler) {
			h.OnUpdate(sessionJob(v1beta1.JobStatusRunning), sessionJob(v1beta1.JobStatusFailed))
		}, true},
		{"session job update without change", v1beta1.JobReferenceKindSessionJob, func(h cache.ResourceEventHandler) {
			h.OnUpdate(sessionJob(v1beta1.JobStatusRunning), sessionJob(v1beta1.JobStatusRunning))
		}, false},
		{"not an object", v1beta1.JobReferenceKindDeployment, func(h cache.ResourceEventHandler) { h.OnAdd("not an object", false) }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			jobSnapshots(f)
			// The snapshots reference a job of this kind.
			if tc.kind == v1beta1.JobReferenceKindSessionJob {
				for _, name := range []string{"new", "pending", "running", "done", "failed", "done-deleting"} {
					s := f.Get(name)
					s.Spec.JobReference.Kind = v1beta1.JobReferenceKindSessionJob
					if _, err := f.Client.FlinkV1beta1().FlinkStateSnapshots(ns).Update(f.Ctx, s, metav1.UpdateOptions{}); err != nil {
						t.Fatal(err)
					}
				}
				f.Refresh()
			}
			tc.event(f.ctrl.jobHandler(tc.kind))
			var want []string
			if tc.wakes {
				want = inFlightOrDeleting
			}
			if got := f.queued(); !slices.Equal(got, want) {
				t.Errorf("queued %v, want %v", got, want)
			}
		})
	}
}

// A snapshot without a usable job reference belongs to no job: there is
// nothing to wake.
func TestEnqueueJobWithoutJobKeyQueuesNothing(t *testing.T) {
	f := newFixture(t)
	s := savepointSnap("orphan", "")
	f.Create(s)
	f.Refresh()
	f.ctrl.enqueueJob("")
	if got := f.queued(); len(got) != 0 {
		t.Errorf("queued %v for an empty job key", got)
	}
}

// A settled snapshot (terminal, labels and finalizer as its sync would
// write them) is not queued on add or update: at a start thousands of them
// would otherwise be synced, for nothing, ahead of new ones. Anything its
// sync could still act on is queued.
func TestSettledSnapshotsAreNotQueued(t *testing.T) {
	settledSnap := func(name string, state v1beta1.SnapshotState) *v1beta1.FlinkStateSnapshot {
		s := snapWith(name, "job", state, false)
		s.Labels = snapshotrules.DesiredLabels(s, state, true)
		if snapshotrules.NeedsFinalizer(s, state) {
			s.Finalizers = []string{v1beta1.SnapshotFinalizer}
		}
		return s
	}
	noJobLabels := settledSnap("no-job-labels", v1beta1.SnapshotCompleted)
	delete(noJobLabels.Labels, v1beta1.LabelJobReferenceName)
	staleState := settledSnap("stale-state-label", v1beta1.SnapshotFailed)
	staleState.Labels[v1beta1.LabelSnapshotState] = string(v1beta1.SnapshotInProgress)
	extraFinalizer := settledSnap("finalizer-left", v1beta1.SnapshotAbandoned)
	extraFinalizer.Finalizers = []string{v1beta1.SnapshotFinalizer}
	deleting := settledSnap("deleting", v1beta1.SnapshotCompleted)
	deleting.DeletionTimestamp = &metav1.Time{Time: t0}
	for _, tc := range []struct {
		snap   *v1beta1.FlinkStateSnapshot
		queued bool
	}{
		{settledSnap("completed", v1beta1.SnapshotCompleted), false},
		{settledSnap("failed", v1beta1.SnapshotFailed), false},
		{settledSnap("abandoned", v1beta1.SnapshotAbandoned), false},
		{settledSnap("in-progress", v1beta1.SnapshotInProgress), true},
		{noJobLabels, true},
		{staleState, true},
		{extraFinalizer, true},
		{deleting, true},
		{snapWith("unlabelled", "job", v1beta1.SnapshotCompleted, false), true},
	} {
		t.Run(tc.snap.Name, func(t *testing.T) {
			f := newFixture(t)
			var want []string
			if tc.queued {
				want = []string{ns + "/" + tc.snap.Name}
			}
			f.ctrl.snapshotAdded(tc.snap)
			if got := f.queued(); !slices.Equal(got, want) {
				t.Errorf("add queued %v, want %v", got, want)
			}
			f.ctrl.snapshotUpdated(tc.snap, tc.snap)
			if got := f.queued(); !slices.Equal(got, want) {
				t.Errorf("update queued %v, want %v", got, want)
			}
		})
	}
}

// A snapshot waiting to be triggered leaves the queue before the ones
// queued earlier that are running, settled or being deleted: under a burst a
// user's new savepoint does not wait for them (workers.NewUrgentFirstQueue).
func TestSnapshotsAwaitingTriggerAreSyncedFirst(t *testing.T) {
	f := newFixture(t)
	jobSnapshots(f)
	for _, name := range []string{"done", "running", "new", "failed", "done-deleting", "pending", "other-job", "gone"} {
		f.ctrl.queue.Add(ns + "/" + name)
	}
	var order []string
	for f.ctrl.queue.Len() > 0 {
		k, _ := f.ctrl.queue.Get()
		order = append(order, strings.TrimPrefix(k, ns+"/"))
		f.ctrl.queue.Done(k)
	}
	want := []string{"new", "pending", "done", "running", "failed", "done-deleting", "other-job", "gone"}
	if !slices.Equal(order, want) {
		t.Errorf("synced in the order %v, want %v", order, want)
	}
}
