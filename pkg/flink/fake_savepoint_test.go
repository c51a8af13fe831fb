package flink_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flinkops/flink-operator/pkg/flink"
	"github.com/flinkops/flink-operator/pkg/flink/fakejm"
)

// Client-against-fake tests for savepoints, stop-with-savepoint and
// disposal: the behaviours the operator's upgrade and cleanup paths rely on.

func startFake(t *testing.T, opts fakejm.Options) (*fakejm.Server, *flink.Client) {
	t.Helper()
	jm := fakejm.New(opts)
	t.Cleanup(jm.Close)
	return jm, newClient(t, jm.URL(), jm.Version())
}

func localDir(location string) string {
	return strings.TrimPrefix(location, "file:")
}

func waitSavepoint(t *testing.T, c *flink.Client, jobID, trig string) flink.SavepointResult {
	t.Helper()
	for i := 0; i < 50; i++ {
		r, err := c.SavepointStatus(context.Background(), jobID, trig)
		if err != nil {
			t.Fatalf("SavepointStatus: %v", err)
		}
		if !r.Pending() {
			return r
		}
	}
	t.Fatal("savepoint still pending after 50 polls")
	return flink.SavepointResult{}
}

func TestSavepointSameTriggerIDStartsOneSavepoint(t *testing.T) {
	jm, c := startFake(t, fakejm.Options{Version: flink.V1_18, CompletionPolls: 1})
	ctx := context.Background()
	job := jm.MustAddJob(fakejm.JobSpec{})
	dir := t.TempDir()
	trig := flink.NewTriggerID()
	req := flink.SavepointRequest{TargetDirectory: "file://" + dir, TriggerID: trig}

	for i := 0; i < 3; i++ { // e.g. operator retries after a lost answer
		got, err := c.TriggerSavepoint(ctx, job, req)
		if err != nil {
			t.Fatalf("trigger %d: %v", i, err)
		}
		if got != trig {
			t.Fatalf("trigger %d returned %s, want the chosen id %s", i, got, trig)
		}
	}
	if n := jm.StartedOperations(fakejm.OpSavepoint); n != 1 {
		t.Fatalf("savepoints started = %d, want 1", n)
	}
	if n := len(jm.RequestsTo(fakejm.RouteSavepointTrigger)); n != 3 {
		t.Fatalf("trigger requests = %d, want 3", n)
	}
	first, err := c.SavepointStatus(ctx, job, trig)
	if err != nil || !first.Pending() {
		t.Fatalf("first poll = %+v, %v; want pending (CompletionPolls=1)", first, err)
	}
	res := waitSavepoint(t, c, job, trig)
	if !res.Succeeded() {
		t.Fatalf("savepoint failed: %v", res.Err())
	}
	// Re-triggering after completion (still within the store duration)
	// returns the same finished operation.
	if _, err := c.TriggerSavepoint(ctx, job, req); err != nil {
		t.Fatal(err)
	}
	if n := jm.StartedOperations(fakejm.OpSavepoint); n != 1 {
		t.Fatalf("savepoints started after re-trigger = %d, want 1", n)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Fatalf("savepoint dirs in %s = %d, want 1", dir, len(entries))
	}
	if _, err := os.Stat(filepath.Join(localDir(res.Value), "_metadata")); err != nil {
		t.Fatalf("no _metadata at %s: %v", res.Value, err)
	}
	wantPrefix := "file:" + filepath.Join(dir, "savepoint-"+job[:6]+"-")
	if !strings.HasPrefix(res.Value, wantPrefix) {
		t.Errorf("location %s, want prefix %s", res.Value, wantPrefix)
	}
}

func TestSavepointResultExpiresAfterStoreDuration(t *testing.T) {
	clock := fakejm.NewManualClock(time.Time{})
	jm, c := startFake(t, fakejm.Options{Version: flink.V1_20, Clock: clock, StoreDuration: time.Minute,
		SavepointDir: t.TempDir()})
	ctx := context.Background()
	job := jm.MustAddJob(fakejm.JobSpec{})

	trig, err := c.TriggerSavepoint(ctx, job, flink.SavepointRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if res := waitSavepoint(t, c, job, trig); !res.Succeeded() {
		t.Fatalf("savepoint: %+v", res)
	}
	clock.Advance(59 * time.Second)
	if _, err := c.SavepointStatus(ctx, job, trig); err != nil {
		t.Fatalf("result should still be stored: %v", err)
	}
	clock.Advance(2 * time.Second)
	_, err = c.SavepointStatus(ctx, job, trig)
	if !flink.IsNotFound(err) {
		t.Fatalf("after store duration: err = %v, want not found", err)
	}
	fe, _ := flink.AsError(err)
	if fe.StatusCode != 404 || fe.Method != "GET" || !strings.Contains(fe.Path, trig) ||
		!fe.Contains("There is no savepoint operation with triggerId="+trig) {
		t.Errorf("error lacks Flink detail: %+v", fe)
	}
	if flink.IsRetryable(err) {
		t.Error("an expired trigger id must not be retryable")
	}
	// The same id can now start a new savepoint: Flink has forgotten it.
	if _, err := c.TriggerSavepoint(ctx, job, flink.SavepointRequest{TriggerID: trig}); err != nil {
		t.Fatal(err)
	}
	if n := jm.StartedOperations(fakejm.OpSavepoint); n != 2 {
		t.Errorf("savepoints started = %d, want 2", n)
	}
}

func TestRestartForgetsOperations(t *testing.T) {
	jm, c := startFake(t, fakejm.Options{SavepointDir: t.TempDir(), CompletionPolls: 5})
	ctx := context.Background()
	job := jm.MustAddJob(fakejm.JobSpec{})
	trig, err := c.TriggerSavepoint(ctx, job, flink.SavepointRequest{})
	if err != nil {
		t.Fatal(err)
	}
	jm.Restart()
	if _, err := c.SavepointStatus(ctx, job, trig); !flink.IsNotFound(err) {
		t.Fatalf("after restart: err = %v, want not found", err)
	}
	if st, _ := jm.JobState(job); st != flink.JobRunning {
		t.Errorf("job after HA restart = %s, want RUNNING", st)
	}
}

func TestStopWithSavepointFinishesJobAndWritesMetadata(t *testing.T) {
	for _, v := range []flink.Version{flink.V1_18, flink.V1_19, flink.V1_20, flink.V2_0} {
		t.Run(v.String(), func(t *testing.T) {
			jm, c := startFake(t, fakejm.Options{Version: v, CompletionPolls: 2})
			ctx := context.Background()
			job := jm.MustAddJob(fakejm.JobSpec{})
			dir := t.TempDir()
			trig, err := c.StopWithSavepoint(ctx, job, flink.StopRequest{TargetDirectory: "file://" + dir, Drain: true})
			if err != nil {
				t.Fatal(err)
			}
			if st, _ := jm.JobState(job); st != flink.JobRunning {
				t.Fatalf("job %s while the stop is pending, want RUNNING", st)
			}
			res := waitSavepoint(t, c, job, trig)
			if !res.Succeeded() {
				t.Fatalf("stop failed: %v", res.Err())
			}
			meta, err := fakejm.ReadMetadata(res.Value)
			if err != nil {
				t.Fatalf("savepoint metadata: %v", err)
			}
			if meta.JobID != job || !meta.Savepoint {
				t.Errorf("metadata = %+v", meta)
			}
			ov, err := c.JobsOverview(ctx)
			if err != nil || len(ov) != 1 || ov[0].State != flink.JobFinished {
				t.Fatalf("jobs overview = %+v, %v; want the job FINISHED", ov, err)
			}
			stats, err := c.Checkpoints(ctx, job)
			if err != nil {
				t.Fatal(err)
			}
			sp := stats.Latest.Savepoint
			if sp == nil || !sp.IsSavepoint || sp.ExternalPath != res.Value || sp.TriggerTimestamp == 0 {
				t.Fatalf("latest.savepoint = %+v, want the stop savepoint at %s", sp, res.Value)
			}
			if len(stats.History) == 0 || stats.History[0].ID != sp.ID || stats.History[0].CheckpointType != "SYNC_SAVEPOINT" {
				t.Errorf("history = %+v", stats.History)
			}
			if got := jm.Operations(); len(got) != 1 || got[0].Kind != fakejm.OpStopWithSavepoint || !got[0].Drain {
				t.Errorf("operations = %+v", got)
			}
		})
	}
}

func TestDisposalRemovesSavepointDirectory(t *testing.T) {
	jm, c := startFake(t, fakejm.Options{Version: flink.V1_19})
	ctx := context.Background()
	job := jm.MustAddJob(fakejm.JobSpec{})
	trig, err := c.TriggerSavepoint(ctx, job, flink.SavepointRequest{TargetDirectory: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	res := waitSavepoint(t, c, job, trig)
	if !res.Succeeded() {
		t.Fatal(res.Err())
	}
	dir := localDir(res.Value)
	if _, err := os.Stat(dir); err != nil {
		t.Fatal(err)
	}

	disp, err := c.DisposeSavepoint(ctx, res.Value)
	if err != nil {
		t.Fatal(err)
	}
	dr, err := c.DisposalStatus(ctx, disp)
	if err != nil || !dr.Succeeded() {
		t.Fatalf("disposal = %+v, %v", dr, err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("savepoint dir still there after disposal: %v", err)
	}
	stats, err := c.Checkpoints(ctx, job)
	if err != nil || !stats.Latest.Savepoint.Discarded {
		t.Errorf("latest.savepoint not marked discarded: %+v, %v", stats.Latest.Savepoint, err)
	}

	// Disposing again fails the operation (not the call), like Flink.
	disp, err = c.DisposeSavepoint(ctx, res.Value)
	if err != nil {
		t.Fatal(err)
	}
	dr, err = c.DisposalStatus(ctx, disp)
	if err != nil || !dr.Failed() || !dr.Failure.Contains("FileNotFoundException") {
		t.Fatalf("second disposal = %+v, %v; want a FileNotFoundException failure", dr, err)
	}
}

func TestSavepointFailureCarriesCause(t *testing.T) {
	jm, c := startFake(t, fakejm.Options{SavepointDir: t.TempDir()})
	ctx := context.Background()
	job := jm.MustAddJob(fakejm.JobSpec{})
	jm.FailSavepoints(job, "Task sink (1/1) failed: disk full")
	trig, err := c.TriggerSavepoint(ctx, job, flink.SavepointRequest{})
	if err != nil {
		t.Fatal(err)
	}
	res := waitSavepoint(t, c, job, trig)
	if !res.Failed() || !strings.Contains(res.Failure.Message(), "disk full") || res.Failure.Class == "" {
		t.Fatalf("result = %+v (%v), want failure mentioning disk full", res, res.Failure)
	}
	var opErr *flink.OperationError
	if err := res.Err(); err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Errorf("Err() = %v", err)
	} else if !errors.As(err, &opErr) || flink.IsRetryable(err) {
		t.Errorf("Err() is %T, want a non-retryable *flink.OperationError", err)
	}
	if st, _ := jm.JobState(job); st != flink.JobRunning {
		t.Errorf("a failed savepoint must not stop the job, state %s", st)
	}

	// A trigger for an unknown job is accepted and fails later, as in Flink.
	other := flink.NewID()
	trig, err = c.TriggerSavepoint(ctx, other, flink.SavepointRequest{})
	if err != nil {
		t.Fatalf("trigger for unknown job: %v", err)
	}
	res = waitSavepoint(t, c, other, trig)
	if !res.Failed() || !res.Failure.Contains("FlinkJobNotFoundException") {
		t.Errorf("unknown job savepoint = %+v", res)
	}
}
