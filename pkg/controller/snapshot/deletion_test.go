package snapshot

import (
	"net/http"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/flink"
	"github.com/flinkops/flink-operator/pkg/flink/fakejm"
	"github.com/flinkops/flink-operator/pkg/reasons"
)

// Rules of deletion (deletion.go: syncDeletion, awaitAttempt, alreadyGone,
// removeFinalizer).

// A disposal that fails because the savepoint is no longer there (an
// earlier attempt removed it before a restart) counts as done.
func TestAlreadyGoneRecognisesAMissingSavepoint(t *testing.T) {
	for _, tc := range []struct {
		name  string
		cause *flink.FailureCause
		want  bool
	}{
		{"no cause", nil, false},
		{"FileNotFoundException class", &flink.FailureCause{Class: "java.io.FileNotFoundException"}, true},
		{"FileNotFoundException in the stack trace", &flink.FailureCause{
			StackTrace: "java.io.FileNotFoundException: Cannot find checkpoint or savepoint file/directory 'file:/x' on file system 'file'."}, true},
		{"does not exist", &flink.FailureCause{StackTrace: "java.io.IOException: Path file:/x Does Not Exist"}, true},
		{"no such file", &flink.FailureCause{StackTrace: "java.nio.file.NoSuchFileException: No such file or directory"}, true},
		{"any other failure", &flink.FailureCause{Class: "java.io.IOException", StackTrace: "java.io.IOException: permission denied"}, false},
	} {
		if got := alreadyGone(tc.cause); got != tc.want {
			t.Errorf("%s: alreadyGone %v, want %v", tc.name, got, tc.want)
		}
	}
}

// deletedCompleted creates a COMPLETED savepoint of job with the given path
// (disposed on delete), marked deleted at the fixture's clock.
func deletedCompleted(t *testing.T, f *fixture, path string) {
	t.Helper()
	s := savepointSnap("sp", "job")
	s.Finalizers = []string{v1beta1.SnapshotFinalizer}
	s.Status = v1beta1.FlinkStateSnapshotStatus{State: v1beta1.SnapshotCompleted, Path: path,
		TriggerTimestamp: t0.Add(-time.Hour).Format(time.RFC3339), ResultTimestamp: t0.Add(-time.Hour).Format(time.RFC3339)}
	f.Create(s)
	markDeleted(t, f, "sp")
}

// What the deletion syncs of a COMPLETED savepoint to dispose do, step by
// step: ask Flink to dispose, poll the disposal, release the finalizer when
// Flink confirms (or the data is already gone). Every failed try is a
// CleanupFailed event and a retry, never a hang, and once the trouble is
// over the savepoint is disposed.
func TestDisposalSteps(t *testing.T) {
	type after2 struct {
		released bool
		cleanup  string // CleanupFailed message part, "" for none
		accepted int    // disposal requests Flink accepted
	}
	for _, tc := range []struct {
		name    string
		path    func(f *fixture) string
		setup   func(f *fixture, jm *fakejm.Server) // before the first sync
		between func(f *fixture, jm *fakejm.Server) // after the disposal request
		want    after2
	}{
		{"disposed and confirmed", realSavepoint, nil, nil, after2{true, "", 1}},
		{"already gone: confirmed", func(f *fixture) string { return "file://" + f.Dir + "/savepoints/missing" }, nil, nil,
			after2{true, "", 1}},
		{"disposal failed: reported", func(*fixture) string { return "relative/savepoint" }, nil, nil,
			after2{false, "Disposing savepoint relative/savepoint failed: java.lang.IllegalArgumentException", 1}},
		{"disposal status unreadable: reported", realSavepoint, nil, func(f *fixture, jm *fakejm.Server) {
			jm.InjectFault(fakejm.Fault{Route: fakejm.RouteDisposalStatus, Status: http.StatusInternalServerError})
		}, after2{false, "Cannot check disposal of savepoint", 1}},
		{"disposal forgotten by a JobManager restart: no complaint", realSavepoint, nil, func(f *fixture, jm *fakejm.Server) {
			jm.Restart()
		}, after2{false, "", 1}},
		{"disposal still running: no complaint", realSavepoint, func(f *fixture, jm *fakejm.Server) {
			jm.SetCompletion(1<<30, 0)
		}, nil, after2{false, "", 1}},
		{"disposal request refused: reported", realSavepoint, func(f *fixture, jm *fakejm.Server) {
			jm.InjectFault(fakejm.Fault{Route: fakejm.RouteDisposalTrigger, Status: http.StatusInternalServerError})
		}, nil, after2{false, "Cannot dispose of savepoint", 0}},
		{"JobManager not resolvable: reported", realSavepoint, func(f *fixture, jm *fakejm.Server) {
			delete(f.jms, "job")
		}, nil, after2{false, "Cannot dispose of savepoint", 0}},
		{"job gone: reported", realSavepoint, func(f *fixture, jm *fakejm.Server) {
			dep, err := f.Client.FlinkV1beta1().FlinkDeployments(ns).Get(f.Ctx, "job", metav1.GetOptions{})
			if err != nil {
				f.T.Fatal(err)
			}
			f.jobBackup = dep
			if err := f.Client.FlinkV1beta1().FlinkDeployments(ns).Delete(f.Ctx, "job", metav1.DeleteOptions{}); err != nil {
				f.T.Fatal(err)
			}
		}, nil, after2{false, "because the referenced Flink job job (FlinkDeployment) cannot be found", 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			jm := f.addCluster("job", v1beta1.FlinkVersion1_20, nil)
			path := tc.path(f)
			jm.SetCompletion(0, 0)
			deletedCompleted(t, f, path)
			if tc.setup != nil {
				tc.setup(f, jm)
			}
			f.Events()
			d := f.MustSync("sp") // the disposal request
			if tc.between != nil {
				tc.between(f, jm)
			}
			f.Clock.Step(max(d, time.Second))
			f.MustSync("sp") // its status
			if gone(f, "sp") != tc.want.released {
				t.Fatalf("released %v, want %v", gone(f, "sp"), tc.want.released)
			}
			events := f.Events()
			if tc.want.cleanup == "" {
				if n := countEvents(events, reasons.ReasonCleanupFailed); n != 0 {
					t.Errorf("events %v, want no CleanupFailed", events)
				}
			} else if !strings.Contains(strings.Join(events, "\n"), tc.want.cleanup) {
				t.Errorf("events %v, want a CleanupFailed with %q", events, tc.want.cleanup)
			}
			if n := countEvents(events, reasons.ReasonDisposeSkipped); n != 0 {
				t.Errorf("events %v: DisposeSkipped before the dispose timeout", events)
			}
			if n := acceptedDisposals(jm); n != tc.want.accepted {
				t.Errorf("%d disposal requests accepted by Flink, want %d", n, tc.want.accepted)
			}
			if tc.want.released {
				return
			}

			// The trouble ends: the next syncs ask again or poll again
			// until the savepoint is disposed.
			jm.ClearFaults()
			jm.SetCompletion(0, 0)
			f.jms["job"] = jm
			if f.jobBackup != nil {
				f.jobBackup.ResourceVersion = ""
				if _, err := f.Client.FlinkV1beta1().FlinkDeployments(ns).Create(f.Ctx, f.jobBackup, metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			for i := 0; i < 10 && !gone(f, "sp"); i++ {
				f.Clock.Step(max(f.MustSync("sp"), time.Second))
			}
			if path == "relative/savepoint" { // Flink can never dispose it
				if n := acceptedDisposals(jm); n < 2 {
					t.Errorf("%d disposal requests, want it asked again after the failure", n)
				}
				return
			}
			if !gone(f, "sp") || metadataExists(path) {
				t.Errorf("in the end: released %v, data still there %v", gone(f, "sp"), metadataExists(path))
			}
		})
	}
}

func acceptedDisposals(jm *fakejm.Server) int {
	n := 0
	for _, r := range jm.RequestsTo(fakejm.RouteDisposalTrigger) {
		if r.Status == http.StatusOK {
			n++
		}
	}
	return n
}

// realSavepoint writes a savepoint through the fake JobManager and returns
// its path.
func realSavepoint(f *fixture) string {
	f.T.Helper()
	f.Create(savepointSnap("source", "job"))
	s := f.drive("source", 10)
	if !metadataExists(s.Status.Path) {
		f.T.Fatalf("no savepoint at %q", s.Status.Path)
	}
	return s.Status.Path
}

// Only COMPLETED savepoints with a path are disposed; anything else being
// deleted just loses its finalizer, with no REST call.
func TestDeletionWithoutDataReleasesAtOnce(t *testing.T) {
	for _, tc := range []struct {
		name  string
		state v1beta1.SnapshotState
		path  string
	}{
		{"COMPLETED without a path", v1beta1.SnapshotCompleted, ""},
		{"FAILED with a stale path", v1beta1.SnapshotFailed, "file:///stale"},
		{"ABANDONED", v1beta1.SnapshotAbandoned, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			jm := f.addCluster("job", v1beta1.FlinkVersion1_20, nil)
			s := savepointSnap("sp", "job")
			s.Finalizers = []string{v1beta1.SnapshotFinalizer, "example.com/other"}
			s.Status = v1beta1.FlinkStateSnapshotStatus{State: tc.state, Path: tc.path}
			f.Create(s)
			markDeleted(t, f, "sp")
			if d := f.MustSync("sp"); d != 0 {
				t.Errorf("requeue %v", d)
			}
			got := f.Get("sp")
			if len(got.Finalizers) != 1 || got.Finalizers[0] != "example.com/other" {
				t.Errorf("finalizers %v, want only ours removed", got.Finalizers)
			}
			if n := len(jm.Requests()); n != 0 {
				t.Errorf("%d REST calls", n)
			}
		})
	}
}

// A deleted IN_PROGRESS savepoint whose job can no longer be resolved
// cannot be followed: it goes at once, with a DisposeSkipped event that
// names its trigger id and where its files would be.
func TestDeletedInProgressSavepointThatCannotBeFollowed(t *testing.T) {
	f := newFixture(t)
	f.addCluster("session", v1beta1.FlinkVersion1_20, nil)
	f.jms["session"].SetCompletion(1<<30, 0)
	addSessionJob(t, f, "sj", "session", nil)
	s := savepointSnap("sp", "sj")
	s.Spec.JobReference.Kind = v1beta1.JobReferenceKindSessionJob
	s.Spec.Savepoint.Path = "file:///own/dir"
	got := triggered(t, f, s)
	if err := f.Client.FlinkV1beta1().FlinkDeployments(ns).Delete(f.Ctx, "session", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	markDeleted(t, f, "sp")
	f.Events()
	if d := f.MustSync("sp"); d != 0 || !gone(f, "sp") {
		t.Fatalf("requeue %v, released %v: want released at once", d, gone(f, "sp"))
	}
	events := f.Events()
	if countEvents(events, reasons.ReasonDisposeSkipped) != 1 || !strings.Contains(events[0], got.Status.TriggerID) ||
		!strings.Contains(events[0], "file:///own/dir") {
		t.Errorf("events %v, want one DisposeSkipped naming trigger id %s and file:///own/dir", events, got.Status.TriggerID)
	}
}

// The dispose timeout counts from the deletion, or from the end of an
// attempt that ended after the deletion: until then each failed try is
// retried, no later than the deadline.
func TestDisposeTimeoutCountsFromTheLaterOfDeletionAndAttemptEnd(t *testing.T) {
	for _, tc := range []struct {
		name     string
		endedAgo time.Duration // attempt end relative to the deletion (negative: before)
	}{
		{"attempt ended before the deletion", -time.Hour},
		{"attempt ended 5 min after the deletion", 5 * time.Minute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			jm := f.addCluster("job", v1beta1.FlinkVersion1_20, nil)
			s := savepointSnap("sp", "job")
			s.Finalizers = []string{v1beta1.SnapshotFinalizer}
			s.Status = v1beta1.FlinkStateSnapshotStatus{State: v1beta1.SnapshotCompleted, Path: "file:///data/sp",
				ResultTimestamp: t0.Add(tc.endedAgo).Format(time.RFC3339Nano)}
			f.Create(s)
			markDeleted(t, f, "sp") // at t0
			jm.InjectFault(fakejm.Fault{Status: http.StatusServiceUnavailable})
			start := t0
			if tc.endedAgo > 0 {
				start = t0.Add(tc.endedAgo)
			}
			deadline := start.Add(10 * time.Minute)
			f.Clock.SetTime(deadline.Add(-time.Second))
			if d := f.MustSync("sp"); d != time.Second || gone(f, "sp") {
				t.Fatalf("1 s before the deadline: requeue %v, released %v; want a retry at the deadline", d, gone(f, "sp"))
			}
			f.Clock.SetTime(deadline)
			f.MustSync("sp")
			if !gone(f, "sp") {
				t.Fatal("not released at the dispose timeout")
			}
			if n := countEvents(f.Events(), reasons.ReasonDisposeSkipped); n != 1 {
				t.Errorf("%d DisposeSkipped events, want 1", n)
			}
		})
	}
}
