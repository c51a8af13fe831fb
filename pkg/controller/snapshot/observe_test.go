package snapshot

import (
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/flink/fakejm"
	"github.com/flinkops/flink-operator/pkg/reasons"
)

// Rules of an IN_PROGRESS snapshot (observe.go: observe, poll,
// settleStopped; finish.go: complete; sync.go: pastTimeout).

// A snapshot fails when it has been IN_PROGRESS LONGER than the snapshot
// timeout (default execution.checkpointing.timeout + 1 min = 11 min): at
// exactly 11 min it is still polled. The same bound holds when the job
// cannot be resolved any more (then the operator-wide timeout counts).
func TestInProgressTimeoutIsExclusive(t *testing.T) {
	const timeout = 11 * time.Minute
	for _, tc := range []struct {
		name         string
		unobservable bool
	}{
		{"job observable", false},
		{"job not resolvable (session cluster gone)", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			f.addCluster("session", v1beta1.FlinkVersion1_20, nil)
			f.jms["session"].SetCompletion(1<<30, 0) // Flink never finishes
			addSessionJob(t, f, "sj", "session", nil)
			s := withBackoff(savepointSnap("sp", "sj"), 0)
			s.Spec.JobReference.Kind = v1beta1.JobReferenceKindSessionJob
			triggered(t, f, s)
			if tc.unobservable {
				if err := f.Client.FlinkV1beta1().FlinkDeployments(ns).Delete(f.Ctx, "session", metav1.DeleteOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			f.Clock.SetTime(t0.Add(timeout))
			f.MustSync("sp")
			if got := f.Get("sp"); got.Status.State != v1beta1.SnapshotInProgress || got.Status.Failures != 0 {
				t.Fatalf("at exactly the timeout: %+v, want still IN_PROGRESS", got.Status)
			}
			f.Clock.SetTime(t0.Add(timeout + time.Millisecond))
			f.MustSync("sp")
			got := f.Get("sp")
			if got.Status.State != v1beta1.SnapshotFailed || got.Status.Failures != 1 {
				t.Fatalf("past the timeout: %+v, want FAILED", got.Status)
			}
			want := "did not complete within 11m0s"
			if tc.unobservable {
				want = "cannot observe the snapshot: session cluster FlinkDeployment default/session"
			}
			if !strings.Contains(got.Status.Error, want) {
				t.Errorf("error %q, want it to contain %q", got.Status.Error, want)
			}
		})
	}
}

// What one status poll of an IN_PROGRESS snapshot does with each answer of
// Flink: unreachable → poll again later, no failure; an error answer or a
// failed operation → one failure (retried per backoffLimit) with its
// SavepointError/CheckpointError event; a completed checkpoint whose
// details are unreachable → poll again; whose details are not found → its
// path from the job's checkpoint history; whose details are an error answer
// → a failure whose CheckpointError event says how to keep more history (a
// COMPLETED snapshot always has a path: checkpointpath_test.go).
func TestPollOutcomes(t *testing.T) {
	type outcome struct {
		state    v1beta1.SnapshotState
		failures int32
		pathSet  bool
		errorHas string
		requeue  time.Duration // checked when non-zero
		events   map[string]int
	}
	for _, tc := range []struct {
		name       string
		checkpoint bool
		setup      func(f *fixture, jm *fakejm.Server)
		want       outcome
	}{
		{"savepoint status unreachable: poll again", false, func(f *fixture, jm *fakejm.Server) {
			jm.InjectFault(fakejm.Fault{Route: fakejm.RouteSavepointStatus, Status: http.StatusServiceUnavailable})
		}, outcome{state: v1beta1.SnapshotInProgress, requeue: 2 * time.Second,
			events: map[string]int{reasons.ReasonSavepointError: 0, reasons.ReasonSnapshotCompleted: 0}}},
		{"savepoint status error answer: a failure", false, func(f *fixture, jm *fakejm.Server) {
			jm.InjectFault(fakejm.Fault{Route: fakejm.RouteSavepointStatus, Status: http.StatusInternalServerError,
				Errors: []string{"java.lang.IllegalStateException: broken status"}})
		}, outcome{state: v1beta1.SnapshotTriggerPending, failures: 1, errorHas: "broken status", requeue: 10 * time.Second,
			events: map[string]int{reasons.ReasonSavepointError: 1}}},
		{"savepoint failed in Flink: a failure", false, func(f *fixture, jm *fakejm.Server) {
			jm.FailSavepoints("", "java.io.IOException: disk full")
		}, outcome{state: v1beta1.SnapshotTriggerPending, failures: 1, errorHas: "savepoint failed: org.apache.flink.runtime.checkpoint.CheckpointException: java.io.IOException: disk full",
			events: map[string]int{reasons.ReasonSavepointError: 1}}},
		{"savepoint completed", false, func(f *fixture, jm *fakejm.Server) {},
			outcome{state: v1beta1.SnapshotCompleted, pathSet: true, requeue: -1,
				events: map[string]int{reasons.ReasonSnapshotCompleted: 1, reasons.ReasonCheckpointError: 0, reasons.ReasonSavepointError: 0}}},
		{"checkpoint status unreachable: poll again", true, func(f *fixture, jm *fakejm.Server) {
			jm.InjectFault(fakejm.Fault{Route: fakejm.RouteCheckpointStatus, Status: http.StatusServiceUnavailable})
		}, outcome{state: v1beta1.SnapshotInProgress, requeue: 2 * time.Second, events: map[string]int{reasons.ReasonCheckpointError: 0}}},
		{"checkpoint status error answer: a failure", true, func(f *fixture, jm *fakejm.Server) {
			jm.InjectFault(fakejm.Fault{Route: fakejm.RouteCheckpointStatus, Status: http.StatusInternalServerError,
				Errors: []string{"java.lang.IllegalStateException: broken status"}})
		}, outcome{state: v1beta1.SnapshotTriggerPending, failures: 1, errorHas: "broken status",
			events: map[string]int{reasons.ReasonCheckpointError: 1}}},
		{"checkpoint failed in Flink: a failure", true, func(f *fixture, jm *fakejm.Server) {
			jm.FailCheckpoints("", "java.io.IOException: disk full")
		}, outcome{state: v1beta1.SnapshotTriggerPending, failures: 1, errorHas: "checkpoint failed: org.apache.flink.runtime.checkpoint.CheckpointException: java.io.IOException: disk full",
			events: map[string]int{reasons.ReasonCheckpointError: 1}}},
		{"checkpoint details unreachable: poll again", true, func(f *fixture, jm *fakejm.Server) {
			jm.InjectFault(fakejm.Fault{Route: fakejm.RouteCheckpointDetails, Status: http.StatusServiceUnavailable})
		}, outcome{state: v1beta1.SnapshotInProgress, requeue: 2 * time.Second, events: map[string]int{reasons.ReasonCheckpointError: 0}}},
		{"checkpoint details not found: the path from the history", true, func(f *fixture, jm *fakejm.Server) {
			jm.InjectFault(fakejm.Fault{Route: fakejm.RouteCheckpointDetails, Status: http.StatusNotFound})
		}, outcome{state: v1beta1.SnapshotCompleted, pathSet: true, requeue: -1,
			events: map[string]int{reasons.ReasonCheckpointError: 0, reasons.ReasonSnapshotCompleted: 1}}},
		{"checkpoint details error answer: a failure, warned", true, func(f *fixture, jm *fakejm.Server) {
			jm.InjectFault(fakejm.Fault{Route: fakejm.RouteCheckpointDetails, Status: http.StatusInternalServerError,
				Errors: []string{"java.lang.IllegalStateException: broken statistics"}})
		}, outcome{state: v1beta1.SnapshotTriggerPending, failures: 1, errorHas: "checkpoint 1 was successful, but failed to fetch its path: ",
			events: map[string]int{reasons.ReasonCheckpointError: 1, reasons.ReasonSnapshotCompleted: 0}}},
		{"checkpoint completed", true, func(f *fixture, jm *fakejm.Server) {},
			outcome{state: v1beta1.SnapshotCompleted, pathSet: true, requeue: -1,
				events: map[string]int{reasons.ReasonCheckpointError: 0, reasons.ReasonSnapshotCompleted: 1}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			f.normalEvents()
			jm := f.addCluster("job", v1beta1.FlinkVersion1_20, nil)
			jm.SetCompletion(0, 0) // done at the first poll unless a fault says otherwise
			s := withBackoff(savepointSnap("s", "job"), 3)
			if tc.checkpoint {
				s = withBackoff(checkpointSnap("s", "job"), 3)
			}
			tc.setup(f, jm)
			triggered(t, f, s)
			f.Events()
			f.Clock.Step(4 * time.Second)
			d := f.MustSync("s")
			got := f.Get("s")
			w := tc.want
			if got.Status.State != w.state || got.Status.Failures != w.failures || (got.Status.Path != "") != w.pathSet ||
				!strings.Contains(got.Status.Error, w.errorHas) {
				t.Fatalf("status %+v, want state %s, %d failures, path set %v, error with %q", got.Status, w.state, w.failures, w.pathSet, w.errorHas)
			}
			if w.requeue > 0 && d != w.requeue {
				t.Errorf("requeue %v, want %v", d, w.requeue)
			}
			if w.requeue < 0 && d != 0 {
				t.Errorf("requeue %v for a finished snapshot", d)
			}
			events := f.Events()
			for reason, n := range w.events {
				if got := countEvents(events, reason); got != n {
					t.Errorf("%d %s events, want %d: %v", got, reason, n, events)
				}
			}
			if tc.name == "checkpoint details error answer: a failure, warned" &&
				!strings.Contains(strings.Join(events, "\n"), "web.checkpoints.history") {
				t.Errorf("events %v: the CheckpointError should say how to keep more history", events)
			}
		})
	}
}

// A job leaving RUNNING ends its in-flight snapshots at once, after one
// more look at the result. When the result cannot be read or Flink is still
// at it, a savepoint's abandon message names where its files would go (its
// own path, else the job's savepoint directory); a checkpoint's never does
// (Flink owns those files).
func TestJobStoppedSettlesInFlightSnapshots(t *testing.T) {
	for _, tc := range []struct {
		name       string
		checkpoint bool
		ownPath    bool
		setup      func(f *fixture, jm *fakejm.Server)
		state      v1beta1.SnapshotState
		errorHas   []string
		errorLacks string
	}{
		{"savepoint still being taken", false, false, func(f *fixture, jm *fakejm.Server) { jm.SetCompletion(1<<30, 0) },
			v1beta1.SnapshotAbandoned, []string{"is not running; Flink was still taking it; if Flink completes savepoint sp", "/savepoints"}, ""},
		{"savepoint with its own path, result unreadable", false, true, func(f *fixture, jm *fakejm.Server) {
			jm.InjectFault(fakejm.Fault{Status: http.StatusServiceUnavailable})
		}, v1beta1.SnapshotAbandoned, []string{"its result could not be read", "its files are in file:///own/dir"}, "config dir"},
		{"savepoint whose JobManager cannot be resolved", false, false, func(f *fixture, jm *fakejm.Server) { delete(f.jms, "job") },
			v1beta1.SnapshotAbandoned, []string{"its result could not be read (no JobManager for job)", "/savepoints"}, ""},
		{"savepoint whose job is gone, with its own path", false, true, func(f *fixture, jm *fakejm.Server) {
			if err := f.Client.FlinkV1beta1().FlinkDeployments(ns).Delete(f.Ctx, "job", metav1.DeleteOptions{}); err != nil {
				f.T.Fatal(err)
			}
		}, v1beta1.SnapshotAbandoned, []string{"was not found; if Flink completes savepoint sp", "file:///own/dir"}, ""},
		{"savepoint completed meanwhile", false, false, func(f *fixture, jm *fakejm.Server) { jm.SetCompletion(0, 0) },
			v1beta1.SnapshotCompleted, nil, ""},
		{"checkpoint still being taken", true, false, func(f *fixture, jm *fakejm.Server) { jm.SetCompletion(1<<30, 0) },
			v1beta1.SnapshotAbandoned, []string{"is not running; Flink was still taking it"}, "if Flink completes"},
		{"checkpoint result unreadable", true, false, func(f *fixture, jm *fakejm.Server) {
			jm.InjectFault(fakejm.Fault{Status: http.StatusServiceUnavailable})
		}, v1beta1.SnapshotAbandoned, []string{"its result could not be read"}, "if Flink completes"},
		{"checkpoint failed in Flink", true, false, func(f *fixture, jm *fakejm.Server) {
			jm.FailCheckpoints("", "declined")
			jm.SetCompletion(0, 0)
		}, v1beta1.SnapshotAbandoned, []string{"is not running; checkpoint failed: ", "declined"}, "if Flink completes"},
		{"checkpoint completed, its path not in the statistics yet", true, false, func(f *fixture, jm *fakejm.Server) {
			jm.SetCheckpointStatsCache(time.Hour)
			readStats(f.T, jm, f.jobIDs["job"]) // the cached statistics have it IN_PROGRESS
			jm.SetCompletion(0, 0)
		}, v1beta1.SnapshotAbandoned, []string{"is not running; checkpoint 1 completed, but its path was not in the job's checkpoint statistics yet"}, "if Flink completes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			jm := f.addCluster("job", v1beta1.FlinkVersion1_20, nil)
			jm.SetCompletion(1<<30, 0)
			s := savepointSnap("sp", "job")
			if tc.checkpoint {
				s = checkpointSnap("sp", "job")
			}
			if tc.ownPath {
				s.Spec.Savepoint.Path = "file:///own/dir"
			}
			triggered(t, f, s)
			f.setJobState("job", v1beta1.JobStatusSuspended)
			tc.setup(f, jm)
			f.Events()
			f.Clock.Step(time.Second)
			if d := f.MustSync("sp"); d != 0 {
				t.Errorf("settled snapshot requeued after %v", d)
			}
			got := f.Get("sp")
			if got.Status.State != tc.state || got.Status.Failures != 0 {
				t.Fatalf("status %+v, want %s without a failure", got.Status, tc.state)
			}
			for _, want := range tc.errorHas {
				if !strings.Contains(got.Status.Error, want) {
					t.Errorf("error %q, want it to contain %q", got.Status.Error, want)
				}
			}
			if tc.errorLacks == "config dir" {
				tc.errorLacks = "file://" + filepath.Join(f.Dir, "savepoints")
			}
			if tc.errorLacks != "" && strings.Contains(got.Status.Error, tc.errorLacks) {
				t.Errorf("error %q should not contain %q", got.Status.Error, tc.errorLacks)
			}
			events := f.Events()
			if tc.state == v1beta1.SnapshotAbandoned &&
				(countEvents(events, reasons.ReasonSnapshotAbandoned) != 1 || !strings.Contains(strings.Join(events, "\n"), got.Status.Error)) {
				t.Errorf("events %v, want one SnapshotAbandoned with the status error", events)
			}
		})
	}
}

// A snapshot waiting for a concurrency slot is looked at again after 30 s
// (and earlier when the slot frees: see the event handlers); waiting is not
// a failure.
func TestWaitingForASlotLooksAgainAfter30s(t *testing.T) {
	f := newFixture(t)
	jm := f.addCluster("job", v1beta1.FlinkVersion1_20, nil)
	jm.SetCompletion(1<<30, 0)
	triggered(t, f, savepointSnap("a", "job"))
	f.Create(savepointSnap("b", "job"))
	if d := f.MustSync("b"); d != 30*time.Second {
		t.Errorf("waiting snapshot requeued after %v, want 30s", d)
	}
	if got := f.Get("b"); got.Status.State != v1beta1.SnapshotTriggerPending || got.Status.Failures != 0 || got.Status.Error != "" {
		t.Errorf("waiting snapshot %+v", got.Status)
	}
}
