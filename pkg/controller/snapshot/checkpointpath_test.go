package snapshot

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/config"
	"github.com/flinkops/flink-operator/pkg/flink/fakejm"
	"github.com/flinkops/flink-operator/pkg/reasons"
)

// readStats reads the job's checkpoint statistics as any other client of
// the JobManager would (the web UI, the job observer), which fills Flink's
// statistics cache.
func readStats(t testing.TB, jm *fakejm.Server, jobID string) {
	t.Helper()
	resp, err := http.Get(jm.URL() + "/jobs/" + jobID + "/checkpoints")
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET checkpoints: %d", resp.StatusCode)
	}
}

// Issue 36 item 7: a checkpoint's path comes from the job's checkpoint
// statistics, which lag behind the trigger result (Flink caches them for
// rest.cache.checkpoint-statistics.timeout) and keep only the last
// web.checkpoints.history checkpoints. A COMPLETED checkpoint always has a
// path: while the statistics lag, the snapshot stays IN_PROGRESS and is
// polled again; when the path can never appear (the checkpoint fell out of
// the history) or has not appeared by the snapshot timeout, the attempt
// fails (counted, retried per backoffLimit) with a reason naming the
// checkpoint and web.checkpoints.history.
func TestCheckpointPathFromLaggingStatistics(t *testing.T) {
	// Shorter than the time Flink keeps the trigger result
	// (rest.async.store-duration, 5 min), after which the trigger id is
	// unknown and the recovery from the history takes over (recover_test.go).
	const timeout = 2 * time.Minute
	type outcome struct {
		state    v1beta1.SnapshotState
		failures int32
		polls    int      // syncs after the trigger until the state is reached
		pathHas  string   // COMPLETED: the path
		errorHas []string // the status error and the CheckpointError event
		pastTime bool     // reached only after the snapshot timeout
	}
	for _, tc := range []struct {
		name    string
		backoff int32
		// before runs ahead of the trigger, after right behind it (both at t0).
		before, after func(t *testing.T, jm *fakejm.Server, jobID string)
		want          outcome
	}{
		{"checkpoint missing from the cached statistics (right after another one): completed at the next poll", 3,
			func(t *testing.T, jm *fakejm.Server, jobID string) {
				jm.SetCheckpointStatsCache(2 * time.Second)
				if _, _, err := jm.CompleteCheckpoint(jobID); err != nil { // periodic checkpoint 1
					t.Fatal(err)
				}
				readStats(t, jm, jobID)
			}, nil,
			outcome{state: v1beta1.SnapshotCompleted, polls: 2, pathHas: "/chk-2"}},
		{"checkpoint still IN_PROGRESS in the cached statistics: completed at the next poll", 3,
			func(t *testing.T, jm *fakejm.Server, jobID string) {
				jm.SetCheckpointStatsCache(2 * time.Second)
				jm.SetCompletion(0, 500*time.Millisecond)
			},
			func(t *testing.T, jm *fakejm.Server, jobID string) { readStats(t, jm, jobID) },
			outcome{state: v1beta1.SnapshotCompleted, polls: 2, pathHas: "/chk-1"}},
		{"checkpoint fell out of the history before the first poll: a failure at once, retried", 1,
			nil,
			func(t *testing.T, jm *fakejm.Server, jobID string) {
				for range 10 { // web.checkpoints.history is 10
					if _, _, err := jm.CompleteCheckpoint(jobID); err != nil {
						t.Fatal(err)
					}
				}
			},
			outcome{state: v1beta1.SnapshotTriggerPending, failures: 1, polls: 1, errorHas: []string{
				"checkpoint 1 was successful, but failed to fetch its path: it is no longer in the job's checkpoint statistics (the oldest kept is checkpoint 2)",
				"'web.checkpoints.history'"}}},
		{"statistics never catch up: fails at the snapshot timeout", 0,
			func(t *testing.T, jm *fakejm.Server, jobID string) {
				jm.SetCheckpointStatsCache(time.Hour)
				readStats(t, jm, jobID)
			}, nil,
			outcome{state: v1beta1.SnapshotFailed, failures: 1, pastTime: true, errorHas: []string{
				"checkpoint 1 was successful, but failed to fetch its path: it was not in the job's checkpoint statistics within 2m0s (kubernetes.operator.snapshot.timeout)",
				"'web.checkpoints.history'"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			f.normalEvents()
			jm := f.addCluster("job", v1beta1.FlinkVersion1_20, map[string]string{config.KeySnapshotTimeout: "2 min"})
			jobID := f.jobIDs["job"]
			jm.SetCompletion(0, 0)
			if tc.before != nil {
				tc.before(t, jm, jobID)
			}
			triggered(t, f, withBackoff(checkpointSnap("cp", "job"), tc.backoff))
			if tc.after != nil {
				tc.after(t, jm, jobID)
			}
			f.Events()

			var got *v1beta1.FlinkStateSnapshot
			polls := 0
			for d := time.Second; polls < 100; {
				f.Clock.Step(d)
				d = f.MustSync("cp")
				polls++
				got = f.Get("cp")
				if got.Status.State == v1beta1.SnapshotCompleted && got.Status.Path == "" {
					t.Fatalf("poll %d: COMPLETED without a path: %+v", polls, got.Status)
				}
				if got.Status.State != v1beta1.SnapshotInProgress {
					break
				}
				if got.Status.Failures != 0 || got.Status.Error != "" {
					t.Fatalf("poll %d: waiting for the path is no failure: %+v", polls, got.Status)
				}
			}
			w := tc.want
			if got.Status.State != w.state || got.Status.Failures != w.failures || (w.polls > 0 && polls != w.polls) {
				t.Fatalf("after %d polls: %+v, want %s with %d failures after %d polls", polls, got.Status, w.state, w.failures, w.polls)
			}
			if elapsed := f.Clock.Since(t0); (elapsed > timeout) != w.pastTime {
				t.Errorf("outcome after %v; the snapshot timeout is %v", elapsed, timeout)
			}
			if w.pathHas != "" && !strings.Contains(got.Status.Path, w.pathHas) {
				t.Errorf("path %q, want it to contain %q", got.Status.Path, w.pathHas)
			}
			events := f.Events()
			if n := countEvents(events, reasons.ReasonCheckpointError); n != int(w.failures) {
				t.Errorf("%d CheckpointError events, want one per failure (%d): %v", n, w.failures, events)
			}
			for _, want := range w.errorHas {
				if !strings.Contains(got.Status.Error, want) {
					t.Errorf("error %q, want it to contain %q", got.Status.Error, want)
				}
				if !strings.Contains(strings.Join(events, "\n"), want) {
					t.Errorf("events %v, want the CheckpointError to contain %q", events, want)
				}
			}
		})
	}
}
