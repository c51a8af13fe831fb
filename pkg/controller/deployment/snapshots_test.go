package deployment

import (
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	core "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/config"
	"github.com/flinkops/flink-operator/pkg/controller/controllertest"
	"github.com/flinkops/flink-operator/pkg/controller/jobengine"
	"github.com/flinkops/flink-operator/pkg/flink"
	"github.com/flinkops/flink-operator/pkg/lifecycle"
	"github.com/flinkops/flink-operator/pkg/reasons"
	"github.com/flinkops/flink-operator/pkg/snapshotrules"
)

const (
	savepoint  = v1beta1.SnapshotTypeSavepoint
	checkpoint = v1beta1.SnapshotTypeCheckpoint
)

// snapshotNames lists the snapshots of a type and trigger type, sorted.
func (f *fixture) snapshotNames(typ string, trigger v1beta1.SnapshotTriggerType) []string {
	var out []string
	for _, s := range f.Snapshots() {
		if snapshotrules.Type(&s) == typ && snapshotrules.TriggerType(&s) == trigger {
			out = append(out, s.Name)
		}
	}
	slices.Sort(out)
	return out
}

// setSnapshotState plays the snapshot controller: it moves a snapshot to
// state (with a path once COMPLETED).
func (f *fixture) setSnapshotState(name string, state v1beta1.SnapshotState) {
	f.T.Helper()
	s, err := f.Client.FlinkV1beta1().FlinkStateSnapshots(ns).Get(f.Ctx, name, metav1.GetOptions{})
	if err != nil {
		f.T.Fatal(err)
	}
	s.Status.State = state
	if state == v1beta1.SnapshotCompleted {
		s.Status.Path = "file:///savepoints/" + name
	}
	if _, err := f.Client.FlinkV1beta1().FlinkStateSnapshots(ns).UpdateStatus(f.Ctx, s, metav1.UpdateOptions{}); err != nil {
		f.T.Fatal(err)
	}
}

// putSnapshot creates a snapshot of job "job" as the operator would have
// made it at `at` (or, for MANUAL, a user), in the given state.
func (f *fixture) putSnapshot(typ string, trigger v1beta1.SnapshotTriggerType, state v1beta1.SnapshotState, at time.Time) string {
	f.T.Helper()
	name := snapshotrules.Name("job", typ, trigger, at.UnixMilli())
	s := &v1beta1.FlinkStateSnapshot{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, CreationTimestamp: metav1.NewTime(at),
			Labels: map[string]string{v1beta1.LabelSnapshotTriggerType: string(trigger)}},
		Spec:   v1beta1.FlinkStateSnapshotSpec{JobReference: &v1beta1.JobReference{Kind: v1beta1.JobReferenceKindDeployment, Name: "job"}},
		Status: v1beta1.FlinkStateSnapshotStatus{State: state},
	}
	if typ == savepoint {
		s.Spec.Savepoint = &v1beta1.SavepointSpec{}
	} else {
		s.Spec.Checkpoint = &v1beta1.CheckpointSpec{}
	}
	if state == v1beta1.SnapshotCompleted {
		s.Status.Path = "file:///savepoints/" + name
	}
	if _, err := f.Client.FlinkV1beta1().FlinkStateSnapshots(ns).Create(f.Ctx, s, metav1.CreateOptions{}); err != nil {
		f.T.Fatal(err)
	}
	return name
}

func periodicName(typ string, slot time.Time) string {
	return snapshotrules.Name("job", typ, v1beta1.SnapshotTriggerPeriodic, slot.UnixMilli())
}

// periodicFixture deploys "job" with the given configuration and a reconcile
// interval long enough that every shorter requeue comes from the snapshot
// schedule. The job runs 40 s after its creation at t0 (before the first
// slot of a 1 min interval).
func periodicFixture(t *testing.T, kv ...string) *fixture {
	f := newFixture(t)
	f.Config[config.KeyReconcileInterval] = "10 min"
	f.Restart()
	d := f.application("job", v1beta1.UpgradeModeSavepoint)
	setConf(&d.Spec, kv...)
	f.Deploy(d)
	return f
}

// A periodic savepoint is created when its slot comes (named by the slot),
// never while one is in flight, once for all missed slots, and the next
// slot is a requeue.
func TestPeriodicSavepointInterval(t *testing.T) {
	f := periodicFixture(t, config.KeyPeriodicSavepointInterval, "1 min")
	slot1 := t0.Add(time.Minute)

	f.Clock.SetTime(slot1.Add(-time.Second))
	if d := f.MustSync("job"); d != time.Second || len(f.Snapshots()) != 0 {
		t.Fatalf("before the slot: requeue %v, %d snapshots; want requeue 1s (the next due time), none", d, len(f.Snapshots()))
	}

	f.Clock.SetTime(slot1.Add(500 * time.Millisecond))
	d := f.MustSync("job")
	got := f.snapshotNames(savepoint, v1beta1.SnapshotTriggerPeriodic)
	if want := []string{periodicName(savepoint, slot1)}; !slices.Equal(got, want) {
		t.Fatalf("periodic snapshots %v, want %v", got, want)
	}
	if want := time.Minute - 500*time.Millisecond; d != want {
		t.Errorf("requeue %v, want %v (the next slot)", d, want)
	}
	s := f.Snapshots()[0]
	if r := s.Spec.JobReference; r == nil || r.Kind != v1beta1.JobReferenceKindDeployment || r.Name != "job" || s.Namespace != ns ||
		s.Spec.Savepoint == nil || !strings.HasSuffix(s.Spec.Savepoint.Path, "/savepoints") || *s.Spec.Savepoint.AlreadyExists ||
		s.Spec.BackoffLimit == nil || *s.Spec.BackoffLimit != 3 || s.Labels[v1beta1.LabelJobReferenceName] != "job" {
		t.Errorf("periodic snapshot %s: labels %v spec %+v savepoint %+v", s.Name, s.Labels, s.Spec, s.Spec.Savepoint)
	}

	// In flight past the next slots: nothing new, and no periodic requeue
	// (the snapshot's state change wakes the job).
	f.setSnapshotState(s.Name, v1beta1.SnapshotInProgress)
	f.Clock.SetTime(slot1.Add(2*time.Minute + 5*time.Second))
	if d := f.MustSync("job"); len(f.Snapshots()) != 1 || d != 10*time.Minute {
		t.Fatalf("while in flight: %d snapshots, requeue %v", len(f.Snapshots()), d)
	}
	// Done: one snapshot for the newest missed slot, not one per slot.
	f.setSnapshotState(s.Name, v1beta1.SnapshotCompleted)
	d = f.MustSync("job")
	slot3 := slot1.Add(2 * time.Minute)
	got = f.snapshotNames(savepoint, v1beta1.SnapshotTriggerPeriodic)
	if want := []string{periodicName(savepoint, slot1), periodicName(savepoint, slot3)}; !slices.Equal(got, want) {
		t.Fatalf("after completion: %v, want %v", got, want)
	}
	if d != 55*time.Second {
		t.Errorf("requeue %v, want 55s", d)
	}
	// Repeated syncs add nothing.
	f.MustSync("job")
	if n := len(f.Snapshots()); n != 2 {
		t.Errorf("%d snapshots after a repeated sync", n)
	}
	if n := f.stops(); n != 0 {
		t.Errorf("periodic snapshots restarted the job (%d stops)", n)
	}
}

// Periodic checkpoints follow the same rules (Flink 1.17+, here 1.20).
func TestPeriodicCheckpointInterval(t *testing.T) {
	f := periodicFixture(t, config.KeyPeriodicCheckpointInterval, "0 * * * * ?") // every minute, as Quartz cron
	f.Clock.SetTime(t0.Add(61 * time.Second))
	d := f.MustSync("job")
	got := f.snapshotNames(checkpoint, v1beta1.SnapshotTriggerPeriodic)
	if want := []string{periodicName(checkpoint, t0.Add(time.Minute))}; !slices.Equal(got, want) {
		t.Fatalf("periodic checkpoints %v, want %v", got, want)
	}
	if d != 59*time.Second {
		t.Errorf("requeue %v, want 59s (the next cron slot)", d)
	}
	if s := f.Snapshots()[0]; s.Spec.Checkpoint == nil || s.Spec.Savepoint != nil {
		t.Errorf("not a checkpoint: %+v", s.Spec)
	}
}

// Below Flink 1.17 there are no checkpoint snapshots: none periodic, and a
// changed checkpointTriggerNonce gets a Warning and is consumed.
func TestCheckpointsNeedFlink117(t *testing.T) {
	f := newFixture(t)
	f.jmOpt.Version = flink.V1_16
	d := f.application("job", v1beta1.UpgradeModeSavepoint)
	d.Spec.FlinkVersion, d.Spec.Image = v1beta1.FlinkVersion1_16, "flink:1.16"
	setConf(&d.Spec, config.KeyPeriodicCheckpointInterval, "10 s")
	f.Deploy(d)
	f.Events()
	f.edit("job", func(s *v1beta1.FlinkDeploymentSpec) { s.Job.CheckpointTriggerNonce = ptr.To[int64](2) })
	for range 5 {
		f.Step("job")
	}
	if n := len(f.Snapshots()); n != 0 {
		t.Errorf("%d snapshots on Flink 1.16", n)
	}
	if ev := f.Events(); !hasEvent(ev, "Warning", reasons.ReasonCheckpointError) {
		t.Errorf("events %v", ev)
	}
	rec, _ := lifecycle.Decode[v1beta1.FlinkDeploymentSpec](f.Get("job").Status.ReconciliationStatus.LastReconciledSpec)
	if rec.Spec.Job.CheckpointTriggerNonce == nil || *rec.Spec.Job.CheckpointTriggerNonce != 2 {
		t.Errorf("checkpoint nonce not consumed")
	}
}

// [ours] A restart rebuilds the schedule from the snapshots: a new
// controller fires no extra snapshot, neither while one is in flight nor
// right after one completed.
func TestPeriodicRestartFiresNoExtraSnapshot(t *testing.T) {
	f := periodicFixture(t, config.KeyPeriodicSavepointInterval, "1 min")
	slot1 := t0.Add(time.Minute)
	f.Clock.SetTime(slot1.Add(time.Second))
	f.MustSync("job")
	name := periodicName(savepoint, slot1)

	f.Restart() // in flight (TRIGGER_PENDING): nothing
	f.Clock.SetTime(slot1.Add(90 * time.Second))
	f.MustSync("job")
	f.setSnapshotState(name, v1beta1.SnapshotCompleted)
	f.Clock.SetTime(slot1.Add(20 * time.Second))
	f.Restart() // completed, next slot not due: nothing, requeue at the slot
	if d := f.MustSync("job"); d != 40*time.Second {
		t.Errorf("requeue after restart %v, want 40s", d)
	}
	if got := f.snapshotNames(savepoint, v1beta1.SnapshotTriggerPeriodic); !slices.Equal(got, []string{name}) {
		t.Fatalf("after restarts: %v, want only %s", got, name)
	}
	f.Clock.SetTime(slot1.Add(time.Minute))
	f.Restart()
	f.MustSync("job")
	if got := f.snapshotNames(savepoint, v1beta1.SnapshotTriggerPeriodic); len(got) != 2 || got[1] != periodicName(savepoint, slot1.Add(time.Minute)) {
		t.Errorf("at the next slot: %v", got)
	}
}

// [ours] An interval shorter than a savepoint takes never yields two in
// flight: here every savepoint takes 25 s and the interval is 10 s. The
// snapshot controller is played by the test; the job is synced when its
// requeue comes and when a snapshot of it turns terminal.
func TestPeriodicIntervalShorterThanSavepoint(t *testing.T) {
	f := periodicFixture(t, config.KeyPeriodicSavepointInterval, "10 s", config.KeySavepointHistoryMaxCount, "2")
	const duration = 25 * time.Second
	started := map[string]time.Time{}
	due := f.Clock.Now()
	created, peakLive := 0, 0
	for range 300 {
		now := f.Clock.Now()
		woken := false
		for _, s := range f.Snapshots() {
			switch s.Status.State {
			case "":
				f.setSnapshotState(s.Name, v1beta1.SnapshotInProgress)
				started[s.Name] = now
			case v1beta1.SnapshotInProgress:
				if now.Sub(started[s.Name]) >= duration {
					f.setSnapshotState(s.Name, v1beta1.SnapshotCompleted)
					woken = true
				}
			}
		}
		if woken || !now.Before(due) {
			before := len(f.Snapshots())
			due = now.Add(f.MustSync("job"))
			created += max(0, len(f.Snapshots())-before)
		}
		inFlight := 0
		for _, s := range f.Snapshots() {
			if !s.Status.State.IsTerminal() {
				inFlight++
			}
		}
		if inFlight > 1 {
			t.Fatalf("at %v: %d savepoints in flight", now.Sub(t0), inFlight)
		}
		peakLive = max(peakLive, len(f.Snapshots()))
		f.Clock.Step(time.Second)
	}
	t.Logf("%d periodic savepoints in 300 s, peak %d live", created, peakLive)
	// 300 s at one savepoint per 25-26 s.
	if created < 10 || peakLive > 4 {
		t.Errorf("%d periodic savepoints created, peak %d live; want >= 10 and <= 4 (2 kept + 1 in flight + newest completed)", created, peakLive)
	}
}

// A changed savepointTriggerNonce makes exactly one MANUAL snapshot, named
// by the nonce, and is recorded as reconciled in the same sync; a crash
// between the create and the status write repeats the create harmlessly.
func TestManualNonceSnapshotSurvivesCrash(t *testing.T) {
	f := newFixture(t)
	f.Deploy(f.application("job", v1beta1.UpgradeModeSavepoint))
	crashed := false
	f.Fault = func(_, point string) {
		if point == "pre-commit:create snapshot job-savepoint-manual-7" && !crashed {
			crashed = true
			panic(controllertest.Crash{})
		}
	}
	f.edit("job", func(s *v1beta1.FlinkDeploymentSpec) { s.Job.SavepointTriggerNonce = ptr.To[int64](7) })
	if !f.StepCrashing("job") {
		t.Fatal("no crash after the create")
	}
	if rec, _ := lifecycle.Decode[v1beta1.FlinkDeploymentSpec](f.Get("job").Status.ReconciliationStatus.LastReconciledSpec); rec.Spec.Job.SavepointTriggerNonce != nil {
		t.Fatal("nonce recorded before the status write")
	}
	f.Step("job")
	f.Step("job")
	if got := f.snapshotNames(savepoint, v1beta1.SnapshotTriggerManual); !slices.Equal(got, []string{"job-savepoint-manual-7"}) {
		t.Fatalf("manual snapshots %v", got)
	}
	if n := len(f.Snapshots()); n != 1 {
		t.Errorf("%d snapshots", n)
	}
	got := f.Get("job")
	rec, _ := lifecycle.Decode[v1beta1.FlinkDeploymentSpec](got.Status.ReconciliationStatus.LastReconciledSpec)
	if rec.Spec.Job.SavepointTriggerNonce == nil || *rec.Spec.Job.SavepointTriggerNonce != 7 || got.Status.LifecycleState != v1beta1.LifecycleStable {
		t.Errorf("nonce not reconciled: %s", statusString(got))
	}
}

// History cleanup deletes the oldest terminal PERIODIC/UPGRADE savepoints
// beyond max.count, never in-flight ones, MANUAL ones, the newest COMPLETED
// one or the restore point; checkpoints keep num-retained. Deletes carry the
// snapshot's UID as precondition.
func TestHistoryCleanup(t *testing.T) {
	f := newFixture(t)
	d := f.application("job", v1beta1.UpgradeModeSavepoint)
	setConf(&d.Spec, config.KeySavepointHistoryMaxCount, "2", config.FlinkCheckpointsNumRetained, "2")
	f.Deploy(d)
	now := f.Clock.Now()
	ago := func(m int) time.Time { return now.Add(-time.Duration(m) * time.Minute) }
	P, U, M := v1beta1.SnapshotTriggerPeriodic, v1beta1.SnapshotTriggerUpgrade, v1beta1.SnapshotTriggerManual
	restore := f.putSnapshot(savepoint, U, v1beta1.SnapshotCompleted, ago(90))
	manual := f.putSnapshot(savepoint, M, v1beta1.SnapshotCompleted, ago(80))
	oldCompleted := f.putSnapshot(savepoint, P, v1beta1.SnapshotCompleted, ago(70))
	failed := f.putSnapshot(savepoint, P, v1beta1.SnapshotFailed, ago(60))
	abandoned := f.putSnapshot(savepoint, P, v1beta1.SnapshotAbandoned, ago(50))
	newestCompleted := f.putSnapshot(savepoint, P, v1beta1.SnapshotCompleted, ago(40))
	pending := f.putSnapshot(savepoint, P, v1beta1.SnapshotTriggerPending, ago(30))
	running := f.putSnapshot(savepoint, P, v1beta1.SnapshotInProgress, ago(20))
	var cps []string
	for i := range 4 {
		cps = append(cps, f.putSnapshot(checkpoint, P, v1beta1.SnapshotCompleted, ago(60-10*i)))
	}
	cpManual := f.putSnapshot(checkpoint, M, v1beta1.SnapshotCompleted, ago(100))
	// The job restores from the UPGRADE savepoint.
	dep := f.Get("job")
	dep.Status.JobStatus.UpgradeSavepointPath = "file:///savepoints/" + restore
	if _, err := f.Client.FlinkV1beta1().FlinkDeployments(ns).UpdateStatus(f.Ctx, dep, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}

	f.Client.ClearActions()
	f.MustSync("job")
	var deleted []string
	for _, a := range f.Client.Actions() {
		if del, ok := a.(core.DeleteAction); ok && a.GetResource().Resource == "flinkstatesnapshots" {
			deleted = append(deleted, del.GetName())
			impl := a.(core.DeleteActionImpl)
			if p := impl.DeleteOptions.Preconditions; p == nil || p.UID == nil || *p.UID == "" {
				t.Errorf("delete of %s without a UID precondition", del.GetName())
			}
		}
	}
	slices.Sort(deleted)
	want := []string{oldCompleted, failed, abandoned, cps[0], cps[1]}
	slices.Sort(want)
	if !slices.Equal(deleted, want) {
		t.Errorf("deleted %v\nwant    %v", deleted, want)
	}
	for _, kept := range []string{restore, manual, newestCompleted, pending, running, cps[2], cps[3], cpManual} {
		if slices.Contains(deleted, kept) {
			t.Errorf("deleted %s", kept)
		}
	}
	// Nothing more to do on the next sync.
	f.Client.ClearActions()
	f.MustSync("job")
	for _, a := range f.Client.Actions() {
		if a.GetVerb() == "delete" {
			t.Errorf("second sync deleted %s", a.(core.DeleteAction).GetName())
		}
	}
}

// With snapshot resources disabled for the job nothing is created (legacy
// mode is not implemented): a changed nonce gets a Warning and is consumed.
func TestSnapshotResourcesDisabled(t *testing.T) {
	f := periodicFixture(t, config.KeyPeriodicSavepointInterval, "10 s", config.KeySnapshotResourceEnabled, "false")
	f.Events()
	f.edit("job", func(s *v1beta1.FlinkDeploymentSpec) { s.Job.SavepointTriggerNonce = ptr.To[int64](3) })
	for range 5 {
		f.Step("job")
	}
	if n := len(f.Snapshots()); n != 0 {
		t.Errorf("%d snapshots created with snapshot resources disabled", n)
	}
	if ev := f.Events(); hasEvent(ev, "Warning", reasons.ReasonSavepointError) {
		t.Errorf("events %v", ev)
	}
	// Legacy mode: the savepoints are in the deprecated status fields.
	if info := f.Get("job").Status.JobStatus.SavepointInfo; info == nil || info.LastSavepoint == nil || len(info.SavepointHistory) == 0 {
		t.Errorf("no legacy savepoint recorded: %+v", info)
	}
	rec, _ := lifecycle.Decode[v1beta1.FlinkDeploymentSpec](f.Get("job").Status.ReconciliationStatus.LastReconciledSpec)
	if rec.Spec.Job.SavepointTriggerNonce == nil || *rec.Spec.Job.SavepointTriggerNonce != 3 {
		t.Errorf("nonce not consumed")
	}
}

// Which snapshot changes wake the job they refer to.
func TestSnapshotEventWakesDeployment(t *testing.T) {
	f := newFixture(t)
	snap := func(state v1beta1.SnapshotState, mod ...func(*v1beta1.FlinkStateSnapshot)) *v1beta1.FlinkStateSnapshot {
		s := &v1beta1.FlinkStateSnapshot{
			ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: ns},
			Spec: v1beta1.FlinkStateSnapshotSpec{Savepoint: &v1beta1.SavepointSpec{},
				JobReference: &v1beta1.JobReference{Kind: v1beta1.JobReferenceKindDeployment, Name: "job"}},
			Status: v1beta1.FlinkStateSnapshotStatus{State: state},
		}
		for _, m := range mod {
			m(s)
		}
		return s
	}
	deleting := func(s *v1beta1.FlinkStateSnapshot) { s.DeletionTimestamp = ptr.To(metav1.NewTime(t0)) }
	otherNS := func(s *v1beta1.FlinkStateSnapshot) { s.Spec.JobReference.Namespace = "other" }
	sessionJob := func(s *v1beta1.FlinkStateSnapshot) { s.Spec.JobReference.Kind = v1beta1.JobReferenceKindSessionJob }
	const (
		pending    = v1beta1.SnapshotTriggerPending
		inProgress = v1beta1.SnapshotInProgress
		completed  = v1beta1.SnapshotCompleted
	)
	cases := []struct {
		name     string
		old, new any
		want     string
	}{
		{"completed", snap(inProgress), snap(completed), ns + "/job"},
		{"failed", snap(inProgress), snap(v1beta1.SnapshotFailed), ns + "/job"},
		{"abandoned while pending", snap(pending), snap(v1beta1.SnapshotAbandoned), ns + "/job"},
		{"cross-namespace reference", snap(inProgress, otherNS), snap(completed, otherNS), "other/job"},
		{"in flight marked for deletion", snap(inProgress), snap(inProgress, deleting), ns + "/job"},
		{"in flight deleted", snap(inProgress), nil, ns + "/job"},
		{"in flight deleted, final state unknown", cache.DeletedFinalStateUnknown{Key: ns + "/s", Obj: snap("")}, nil, ns + "/job"},
		{"added terminal", nil, snap(completed), ns + "/job"},
		{"added new", nil, snap(""), ""},
		{"triggered", snap(""), snap(inProgress), ""},
		{"retry", snap(inProgress), snap(pending), ""},
		{"labels only", snap(completed), snap(completed), ""},
		{"terminal deleted", snap(completed, deleting), nil, ""},
		{"session job", snap(inProgress, sessionJob), snap(completed, sessionJob), ""},
	}
	h := f.ctrl.snapshotHandler()
	for _, c := range cases {
		switch {
		case c.old == nil:
			h.OnAdd(c.new, false)
		case c.new == nil:
			h.OnDelete(c.old)
		default:
			h.OnUpdate(c.old, c.new)
		}
		got := ""
		if f.ctrl.queue.Len() > 0 {
			got, _ = f.ctrl.queue.Get()
			f.ctrl.queue.Done(got)
		}
		if got != c.want || f.ctrl.queue.Len() != 0 {
			t.Errorf("%s: enqueued %q, want %q", c.name, got, c.want)
		}
	}
}

// The handler is registered on the snapshot informer: with informers
// running, a snapshot of the job that completes enqueues the job.
func TestSnapshotStateChangeEnqueuesDeployment(t *testing.T) {
	f := newFixture(t)
	f.Create(f.application("job", v1beta1.UpgradeModeSavepoint))
	name := f.putSnapshot(savepoint, v1beta1.SnapshotTriggerPeriodic, v1beta1.SnapshotInProgress, t0)
	f.Restart() // fresh informers, not fed by hand
	stop := make(chan struct{})
	defer close(stop)
	f.Factory.Start(stop)
	f.KubeFactory.Start(stop)
	if !cache.WaitForCacheSync(stop, f.Caches.HasSynced) {
		t.Fatal("caches not synced")
	}
	drain := func() []string {
		var keys []string
		for f.ctrl.queue.Len() > 0 {
			k, _ := f.ctrl.queue.Get()
			f.ctrl.queue.Done(k)
			keys = append(keys, k)
		}
		return keys
	}
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		for deadline := time.Now().Add(5 * time.Second); !cond(); time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s", what)
			}
		}
	}
	waitFor("the initial add", func() bool { return f.ctrl.queue.Len() > 0 })
	time.Sleep(50 * time.Millisecond)
	drain()

	f.setSnapshotState(name, v1beta1.SnapshotCompleted)
	var keys []string
	waitFor("the wake-up", func() bool { keys = append(keys, drain()...); return len(keys) > 0 })
	if !slices.Equal(keys, []string{ns + "/job"}) {
		t.Errorf("enqueued %v, want %s/job", keys, ns)
	}
}

// A snapshot in another namespace that refers to the job does not count
// unless the operator allows cross-namespace references: it can neither
// block the job's periodic snapshots nor be deleted by its cleanup.
func TestForeignNamespaceSnapshotsIgnored(t *testing.T) {
	f := periodicFixture(t, config.KeyPeriodicSavepointInterval, "1 min", config.KeySavepointHistoryMaxCount, "1")
	foreign := &v1beta1.FlinkStateSnapshot{
		ObjectMeta: metav1.ObjectMeta{Name: "blocker", Namespace: "other",
			Labels: map[string]string{v1beta1.LabelSnapshotTriggerType: "PERIODIC"}},
		Spec: v1beta1.FlinkStateSnapshotSpec{Savepoint: &v1beta1.SavepointSpec{},
			JobReference: &v1beta1.JobReference{Kind: v1beta1.JobReferenceKindDeployment, Name: "job", Namespace: ns}},
	}
	if _, err := f.Client.FlinkV1beta1().FlinkStateSnapshots("other").Create(f.Ctx, foreign, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.Clock.SetTime(t0.Add(61 * time.Second))
	f.MustSync("job")
	if got := f.snapshotNames(savepoint, v1beta1.SnapshotTriggerPeriodic); !slices.Equal(got, []string{periodicName(savepoint, t0.Add(time.Minute))}) {
		t.Errorf("periodic snapshots %v: the foreign in-flight snapshot blocked the job", got)
	}
}

// An unreadable periodic interval is reported in status.error (once as an
// event) and disables only the periodic snapshot.
func TestBadPeriodicInterval(t *testing.T) {
	f := periodicFixture(t, config.KeyPeriodicSavepointInterval, "every now and then")
	f.Clock.SetTime(t0.Add(10 * time.Minute))
	f.MustSync("job")
	f.MustSync("job")
	got := f.Get("job")
	if !strings.Contains(jobengine.ErrorMessage(got.Status.Error), config.KeyPeriodicSavepointInterval) || len(f.Snapshots()) != 0 {
		t.Errorf("status %s, %d snapshots", statusString(got), len(f.Snapshots()))
	}
	warnings := 0
	for _, e := range f.Events() {
		if strings.HasPrefix(e, "Warning "+reasons.ReasonValidationError+" ") {
			warnings++
		}
	}
	if warnings != 1 {
		t.Errorf("%d ValidationError events, want one", warnings)
	}
}
