package snapshot

import (
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	core "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/config"
	"github.com/flinkops/flink-operator/pkg/flink"
	"github.com/flinkops/flink-operator/pkg/flink/fakejm"
	"github.com/flinkops/flink-operator/pkg/reasons"
)

// Issue 20 items 1, 6, 10, 11 and 13: each test fails when its rule is
// removed.

// triggered creates s and runs the sync that writes the intent and POSTs.
func triggered(t *testing.T, f *fixture, s *v1beta1.FlinkStateSnapshot) *v1beta1.FlinkStateSnapshot {
	t.Helper()
	f.Create(s)
	f.MustSync(s.Name)
	got := f.Get(s.Name)
	if got.Status.State != v1beta1.SnapshotInProgress {
		t.Fatalf("after trigger: %+v", got.Status)
	}
	return got
}

// settle syncs a deleted snapshot until it is released, stepping the clock
// by each requeue (never a worker waiting), at most n times.
func settle(t *testing.T, f *fixture, name string, n int) {
	t.Helper()
	for range n {
		if gone(f, name) {
			return
		}
		d := f.MustSync(name)
		if d <= 0 && !gone(f, name) {
			t.Fatalf("deleted snapshot neither released nor requeued: %+v", f.Get(name).Status)
		}
		f.Clock.Step(max(d, time.Second))
	}
	if !gone(f, name) {
		t.Fatalf("%s not released after %d syncs: %+v", name, n, f.Get(name).Status)
	}
}

// Item 1 and 13: the first write carries the finalizer and the labels.
func TestFirstWriteCarriesFinalizerAndLabels(t *testing.T) {
	for _, dispose := range []bool{true, false} {
		f := newFixture(t)
		f.addCluster("job", v1beta1.FlinkVersion1_20, nil)
		sp := savepointSnap("sp", "job")
		sp.Spec.Savepoint.DisposeOnDelete = ptr.To(dispose)
		f.resetActions()
		s := triggered(t, f, sp)
		if !containsString(s.Finalizers, v1beta1.SnapshotFinalizer) {
			t.Errorf("dispose=%v: in-flight savepoint has no finalizer", dispose)
		}
		want := map[string]string{"snapshot.type": "SAVEPOINT", "snapshot.trigger-type": "MANUAL", "snapshot.state": "IN_PROGRESS",
			"job-reference.kind": "FlinkDeployment", "job-reference.name": "job"}
		for k, v := range want {
			if s.Labels[k] != v {
				t.Errorf("dispose=%v: in flight, label %s = %q, want %q", dispose, k, s.Labels[k], v)
			}
		}
		// The metadata precedes the intent: the first write is the update
		// with the finalizer, the second the IN_PROGRESS status.
		var order []string
		for _, a := range f.Client.Actions() {
			if a.GetVerb() == "update" && a.GetResource().Resource == "flinkstatesnapshots" {
				order = append(order, a.GetSubresource())
			}
		}
		if len(order) != 2 || order[0] != "" || order[1] != "status" {
			t.Errorf("dispose=%v: writes %q, want metadata then status", dispose, order)
		}
		done := f.drive("sp", 10)
		if done.Labels["snapshot.state"] != "COMPLETED" {
			t.Errorf("terminal label %q", done.Labels["snapshot.state"])
		}
		// Afterwards only a COMPLETED savepoint with disposeOnDelete is held.
		if containsString(done.Finalizers, v1beta1.SnapshotFinalizer) != dispose {
			t.Errorf("dispose=%v: completed with finalizers %v", dispose, done.Finalizers)
		}
	}
	// A checkpoint is never held: Flink owns its files.
	f := newFixture(t)
	f.addCluster("job", v1beta1.FlinkVersion1_20, nil)
	if s := triggered(t, f, checkpointSnap("cp", "job")); containsString(s.Finalizers, v1beta1.SnapshotFinalizer) || s.Labels["snapshot.type"] != "CHECKPOINT" {
		t.Errorf("checkpoint in flight: finalizers %v labels %v", s.Finalizers, s.Labels)
	}
}

// Item 13: an operator-made snapshot needs no metadata write before its
// trigger.
func TestOperatorMadeSnapshotTriggersWithoutMetadataWrite(t *testing.T) {
	f := newFixture(t)
	f.addCluster("job", v1beta1.FlinkVersion1_20, nil)
	f.Create(operatorMade(savepointSnap("sp", "job"), v1beta1.SnapshotTriggerPeriodic))
	f.resetActions()
	f.MustSync("sp")
	if meta, status := f.writes(); meta != 0 || status != 1 {
		t.Errorf("trigger of an operator-made snapshot: %d metadata + %d status writes, want 0 + 1", meta, status)
	}
	if s := f.Get("sp"); s.Labels["snapshot.trigger-type"] != "PERIODIC" || s.Labels["snapshot.state"] != "IN_PROGRESS" {
		t.Errorf("labels %v", s.Labels)
	}
}

// Item 1: deleting an IN_PROGRESS savepoint with disposeOnDelete waits for
// the attempt, then disposes what Flink wrote.
func TestDeleteInProgressSavepointDisposesOnceItEnds(t *testing.T) {
	f := newFixture(t)
	jm := f.addCluster("job", v1beta1.FlinkVersion1_20, nil)
	triggered(t, f, savepointSnap("sp", "job"))
	markDeleted(t, f, "sp")
	if gone(f, "sp") {
		t.Fatal("the in-flight savepoint was released at once")
	}
	f.Clock.Step(time.Second)
	f.MustSync("sp") // first poll: Flink still writing
	if gone(f, "sp") {
		t.Fatal("released while Flink was still writing")
	}
	settle(t, f, "sp", 10)
	ops := jm.Operations()
	var path string
	for _, op := range ops {
		if op.Kind == fakejm.OpDisposal {
			path = op.SavepointPath
		}
	}
	if path == "" || jm.StartedOperations(fakejm.OpDisposal) != 1 {
		t.Fatalf("operations %+v: want one disposal", ops)
	}
	if metadataExists(path) {
		t.Errorf("savepoint %s still on storage", path)
	}
	if jm.StartedOperations(fakejm.OpSavepoint) != 1 {
		t.Errorf("%d savepoints started, want 1", jm.StartedOperations(fakejm.OpSavepoint))
	}
}

// Item 1: with disposeOnDelete false the files stay, the resource goes once
// the attempt has ended, and an event says where the files are.
func TestDeleteInProgressSavepointKeepsFiles(t *testing.T) {
	f := newFixture(t)
	jm := f.addCluster("job", v1beta1.FlinkVersion1_20, nil)
	sp := savepointSnap("sp", "job")
	sp.Spec.Savepoint.DisposeOnDelete = ptr.To(false)
	triggered(t, f, sp)
	markDeleted(t, f, "sp")
	f.Events()
	f.Clock.Step(time.Second)
	f.MustSync("sp")
	if gone(f, "sp") {
		t.Fatal("released before the attempt ended")
	}
	settle(t, f, "sp", 10)
	if jm.StartedOperations(fakejm.OpDisposal) != 0 {
		t.Fatal("disposed a savepoint with disposeOnDelete: false")
	}
	dirs, _ := filepath.Glob(filepath.Join(f.Dir, "savepoints", "savepoint-*"))
	if len(dirs) != 1 || !metadataExists("file:"+dirs[0]) {
		t.Fatalf("savepoint files %v, want one kept", dirs)
	}
	events := f.Events()
	found := false
	for _, e := range events {
		found = found || (strings.Contains(e, reasons.ReasonDisposeSkipped) && strings.Contains(e, filepath.Base(dirs[0])))
	}
	if !found {
		t.Errorf("no event names the kept savepoint %s: %v", dirs[0], events)
	}
}

// Item 1: the wait is bounded by the snapshot timeout, and a deleted
// snapshot is never triggered again.
func TestDeleteInProgressSavepointBoundedByTimeout(t *testing.T) {
	f := newFixture(t)
	jm := f.addCluster("job", v1beta1.FlinkVersion1_20, nil)
	jm.SetCompletion(1<<30, 0) // Flink never finishes
	triggered(t, f, savepointSnap("sp", "job"))
	markDeleted(t, f, "sp")
	timeout, err := config.SnapshotTimeout(f.Config)
	if err != nil {
		t.Fatal(err)
	}
	deleted := f.Clock.Now()
	for i := 0; i < 100 && !gone(f, "sp"); i++ {
		d := f.MustSync("sp")
		if d <= 0 && !gone(f, "sp") {
			t.Fatal("not requeued")
		}
		f.Clock.Step(max(d, time.Second))
	}
	if !gone(f, "sp") {
		t.Fatal("still held")
	}
	if waited := f.Clock.Since(deleted); waited < timeout || waited > timeout+time.Minute {
		t.Errorf("released after %v, want about the snapshot timeout %v", waited, timeout)
	}
	if n := jm.StartedOperations(fakejm.OpSavepoint); n != 1 {
		t.Errorf("%d savepoints started, want 1 (no retry of a deleted snapshot)", n)
	}
}

// Item 1: an intent Flink never saw is not sent once the snapshot is
// deleted.
func TestDeletedIntentIsNotSent(t *testing.T) {
	f := newFixture(t)
	jm := f.addCluster("job", v1beta1.FlinkVersion1_20, nil)
	f.Create(savepointSnap("sp", "job"))
	f.syncCrashing("sp")
	f.Restart()
	markDeleted(t, f, "sp")
	settle(t, f, "sp", 10)
	if n := jm.StartedOperations(fakejm.OpSavepoint); n != 0 {
		t.Errorf("%d savepoints started for a deleted snapshot", n)
	}
}

// Item 10: status.error and the event carry Flink's root cause.
func TestSavepointErrorNamesRootCause(t *testing.T) {
	f := newFixture(t)
	jm := f.addCluster("job", v1beta1.FlinkVersion1_20, nil)
	jm.FailSavepoints("", "An Exception occurred while triggering the checkpoint. IO-problem detected.\n"+
		"Caused by: java.io.IOException: Failed to create savepoint directory at file:/readonly/savepoints")
	f.Create(withBackoff(savepointSnap("sp", "job"), 0))
	s := f.drive("sp", 10)
	want := "Failed to create savepoint directory at file:/readonly/savepoints"
	if s.Status.State != v1beta1.SnapshotFailed || !strings.Contains(s.Status.Error, want) {
		t.Fatalf("status %+v, want FAILED naming %q", s.Status, want)
	}
	events := f.Events()
	if n := countEvents(events, reasons.ReasonSavepointError); n != 1 || !strings.Contains(strings.Join(events, "\n"), want) {
		t.Errorf("events %v: want one SavepointError naming %q", events, want)
	}
}

// enforceResourceVersions makes the fake clientset refuse a write based on
// a stale object, as the API server does (the tracker itself accepts any).
func enforceResourceVersions(f *fixture) {
	rv := 0
	react := func(a core.Action) (bool, runtime.Object, error) {
		// Create and update actions share one interface: tell them by verb.
		w, ok := a.(core.UpdateAction)
		if !ok {
			return false, nil, nil
		}
		obj := w.GetObject().(*v1beta1.FlinkStateSnapshot)
		if a.GetVerb() == "update" {
			cur, err := f.Client.Tracker().Get(a.GetResource(), a.GetNamespace(), obj.Name)
			if err == nil && cur.(*v1beta1.FlinkStateSnapshot).ResourceVersion != obj.ResourceVersion {
				return true, nil, apierrors.NewConflict(a.GetResource().GroupResource(), obj.Name, nil)
			}
		}
		rv++
		obj.ResourceVersion = strconv.Itoa(rv)
		return false, nil, nil
	}
	f.Client.PrependReactor("create", "flinkstatesnapshots", react)
	f.Client.PrependReactor("update", "flinkstatesnapshots", react)
}

// Item 10: one SavepointError event per recorded failure. A sync on a stale
// cache computes the same failure again; its write is refused, and it must
// not add an event (the cause of "3 events for failures: 2").
func TestSavepointErrorEventsMatchRecordedFailures(t *testing.T) {
	f := newFixture(t)
	enforceResourceVersions(f)
	jm := f.addCluster("job", v1beta1.FlinkVersion1_20, nil)
	jm.FailSavepoints("", "savepoint declined")
	f.Create(withBackoff(savepointSnap("sp", "job"), 1))
	f.MustSync("sp")
	stale := f.Get("sp") // IN_PROGRESS, as a lagging informer still shows it
	f.Clock.Step(time.Second)
	for f.Get("sp").Status.Failures == 0 {
		f.MustSync("sp")
		f.Clock.Step(time.Second)
	}
	// A second worker (woken by a job event) syncs with the stale cache:
	// this process wrote over that version, so it waits for the echo,
	// writing and calling nothing (cachelag.go).
	if err := f.Factory.Flink().V1beta1().FlinkStateSnapshots().Informer().GetIndexer().Update(stale); err != nil {
		t.Fatal(err)
	}
	writes := len(f.Client.Actions())
	if requeue, err := f.ctrl.Sync(f.Ctx, ns+"/sp"); err != nil || requeue != cacheLagRecheck || len(f.Client.Actions()) != writes {
		t.Fatalf("sync on a cache behind this process's write: requeue %v, err %v, %d new API actions; want %v, nil, none",
			requeue, err, len(f.Client.Actions())-writes, cacheLagRecheck)
	}
	// A process that did not write it (a new leader) computes the failure
	// again; its write is refused.
	f.ctrl.writtenOver.Clear()
	if _, err := f.ctrl.Sync(f.Ctx, ns+"/sp"); err == nil || !apierrors.IsConflict(err) {
		t.Fatalf("stale sync: err %v, want a conflict", err)
	}
	s := f.drive("sp", 40)
	if s.Status.State != v1beta1.SnapshotFailed || s.Status.Failures != 2 {
		t.Fatalf("status %+v, want FAILED after 2 failures", s.Status)
	}
	if n := countEvents(f.Events(), reasons.ReasonSavepointError); n != int(s.Status.Failures) {
		t.Errorf("%d SavepointError events for failures: %d", n, s.Status.Failures)
	}
}

// Item 11: a savepoint Flink completed while its job stopped is recorded
// COMPLETED with its path.
func TestSavepointCompletedWhileJobStops(t *testing.T) {
	f := newFixture(t)
	jm := f.addCluster("job", v1beta1.FlinkVersion1_20, nil)
	jm.SetCompletion(0, 0) // done by the first poll
	triggered(t, f, savepointSnap("sp", "job"))
	f.setJobState("job", v1beta1.JobStatusSuspended)
	f.Clock.Step(time.Second)
	f.MustSync("sp")
	s := f.Get("sp")
	if s.Status.State != v1beta1.SnapshotCompleted || s.Status.Path == "" || !metadataExists(s.Status.Path) {
		t.Fatalf("status %+v, want COMPLETED with its path", s.Status)
	}
}

// Item 11: when the result cannot be read, the abandon message and event
// name the savepoint directory; a failure Flink reports is abandoned (not
// retried) with its cause.
func TestStoppedJobUnreadableResultNamesDirectory(t *testing.T) {
	f := newFixture(t)
	jm := f.addCluster("job", v1beta1.FlinkVersion1_20, nil)
	triggered(t, f, savepointSnap("sp", "job"))
	f.setJobState("job", v1beta1.JobStatusSuspended)
	jm.InjectFault(fakejm.Fault{Status: http.StatusServiceUnavailable})
	f.Events()
	f.Clock.Step(time.Second)
	f.MustSync("sp")
	s := f.Get("sp")
	dir := "file://" + filepath.Join(f.Dir, "savepoints")
	if s.Status.State != v1beta1.SnapshotAbandoned || !strings.Contains(s.Status.Error, dir) || !strings.Contains(s.Status.Error, "is not running") {
		t.Fatalf("status %+v, want ABANDONED naming %s", s.Status, dir)
	}
	if events := f.Events(); countEvents(events, reasons.ReasonSnapshotAbandoned) != 1 || !strings.Contains(strings.Join(events, "\n"), dir) {
		t.Errorf("events %v: want one SnapshotAbandoned naming %s", events, dir)
	}

	f = newFixture(t)
	jm = f.addCluster("job", v1beta1.FlinkVersion1_20, nil)
	triggered(t, f, savepointSnap("sp", "job"))
	jm.FailSavepoints("", "declined")
	jm.SetCompletion(0, 0)
	f.setJobState("job", v1beta1.JobStatusSuspended)
	f.Clock.Step(time.Second)
	f.MustSync("sp")
	if s := f.Get("sp"); s.Status.State != v1beta1.SnapshotAbandoned || !strings.Contains(s.Status.Error, "declined") || s.Status.Failures != 0 {
		t.Fatalf("status %+v, want ABANDONED with Flink's cause", s.Status)
	}
}

// Item 6: the history match is the earliest entry of the same kind at or
// after the trigger, never a path another snapshot names.
func TestAdoptFromHistory(t *testing.T) {
	trig := t0
	at := func(d time.Duration) int64 { return trig.Add(d).UnixMilli() }
	sp := func(id int64, d time.Duration, path string) flink.CheckpointStatistics {
		return flink.CheckpointStatistics{ID: id, TriggerTimestamp: at(d), IsSavepoint: true, CheckpointType: "SAVEPOINT",
			SavepointFormat: "CANONICAL", Status: flink.CheckpointStatsCompleted, ExternalPath: path}
	}
	cp := func(id int64, d time.Duration, path string) flink.CheckpointStatistics {
		return flink.CheckpointStatistics{ID: id, TriggerTimestamp: at(d), CheckpointType: "CHECKPOINT",
			Status: flink.CheckpointStatsCompleted, ExternalPath: path}
	}
	savepoint := savepointSnap("sp", "job")
	checkpoint := checkpointSnap("cp", "job")
	native := savepointSnap("native", "job")
	native.Spec.Savepoint.FormatType = v1beta1.SavepointFormatType("NATIVE")
	incremental := config.Config{"execution.checkpointing.incremental": "true"}
	plain := config.Config{}
	for _, c := range []struct {
		name    string
		snap    *v1beta1.FlinkStateSnapshot
		cfg     config.Config
		history []flink.CheckpointStatistics // newest first, as Flink lists it
		claimed []string
		want    string // path, "" for none
	}{
		{"earliest at or after the trigger, not the newest", savepoint, plain,
			[]flink.CheckpointStatistics{sp(3, 20*time.Second, "/sp3"), sp(2, 5*time.Second, "/sp2")}, nil, "/sp2"},
		{"time filter: an older savepoint is not ours", savepoint, plain,
			[]flink.CheckpointStatistics{sp(1, -time.Minute, "/old")}, nil, ""},
		{"clock skew tolerated", savepoint, plain,
			[]flink.CheckpointStatistics{sp(1, -time.Second, "/skew")}, nil, "/skew"},
		{"type filter: a checkpoint does not satisfy a savepoint", savepoint, plain,
			[]flink.CheckpointStatistics{cp(1, time.Second, "/chk")}, nil, ""},
		{"type filter: a stop-with-savepoint is an upgrade's", savepoint, plain,
			[]flink.CheckpointStatistics{func() flink.CheckpointStatistics {
				h := sp(1, time.Second, "/sync")
				h.CheckpointType = "SYNC_SAVEPOINT"
				return h
			}()}, nil, ""},
		{"type filter: format must match", native, plain,
			[]flink.CheckpointStatistics{sp(1, time.Second, "/canonical")}, nil, ""},
		{"type filter: a savepoint does not satisfy a checkpoint", checkpoint, plain,
			[]flink.CheckpointStatistics{sp(1, time.Second, "/sp")}, nil, ""},
		{"full checkpoint: any checkpoint when none is incremental", checkpoint, plain,
			[]flink.CheckpointStatistics{cp(5, 9*time.Second, "/chk5"), cp(4, 3*time.Second, "/chk4")}, nil, "/chk4"},
		{"full checkpoint: never adopted from an incremental job", checkpoint, incremental,
			[]flink.CheckpointStatistics{cp(4, 3*time.Second, "/chk4")}, nil, ""},
		{"a path another snapshot names is not adopted", savepoint, plain,
			[]flink.CheckpointStatistics{sp(3, 20*time.Second, "/sp3"), sp(2, time.Second, "/sp2")}, []string{"/sp2"}, "/sp3"},
	} {
		claimed := map[string]bool{}
		for _, p := range c.claimed {
			claimed[p] = true
		}
		got := ""
		if h := adoptFromHistory(c.snap, c.cfg, c.history, trig, claimed); h != nil {
			got = h.ExternalPath
		}
		if got != c.want {
			t.Errorf("%s: adopted %q, want %q", c.name, got, c.want)
		}
	}
	if !incrementalCheckpoints(config.Config{"state.backend.incremental": "true"}) || incrementalCheckpoints(plain) {
		t.Error("incrementalCheckpoints misreads the configuration")
	}
}
