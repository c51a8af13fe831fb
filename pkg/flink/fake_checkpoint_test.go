package flink_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/flinkops/flink-operator/pkg/flink"
	"github.com/flinkops/flink-operator/pkg/flink/fakejm"
)

// Checkpoint trigger, status, statistics and details against the fake.

func waitCheckpoint(t *testing.T, c *flink.Client, jobID, trig string) flink.CheckpointResult {
	t.Helper()
	for i := 0; i < 50; i++ {
		r, err := c.CheckpointStatus(context.Background(), jobID, trig)
		if err != nil {
			t.Fatalf("CheckpointStatus: %v", err)
		}
		if !r.Pending() {
			return r
		}
	}
	t.Fatal("checkpoint still pending after 50 polls")
	return flink.CheckpointResult{}
}

func TestCheckpointTriggerStatusAndDetails(t *testing.T) {
	clock := fakejm.NewManualClock(time.Time{})
	chkDir := t.TempDir()
	jm, c := startFake(t, fakejm.Options{Version: flink.V1_19, Clock: clock, CompletionDelay: 5 * time.Second,
		CheckpointDir: chkDir})
	ctx := context.Background()
	job := jm.MustAddJob(fakejm.JobSpec{Parallelism: 2})

	periodic, _, err := jm.CompleteCheckpoint(job)
	if err != nil {
		t.Fatal(err)
	}
	trig, err := c.TriggerCheckpoint(ctx, job, flink.CheckpointRequest{Type: flink.CheckpointFull})
	if err != nil {
		t.Fatal(err)
	}
	// Pending until the injected delay has passed on the fake's clock.
	if r, err := c.CheckpointStatus(ctx, job, trig); err != nil || !r.Pending() {
		t.Fatalf("before the delay: %+v, %v", r, err)
	}
	stats, err := c.Checkpoints(ctx, job)
	if err != nil {
		t.Fatal(err)
	}
	if inProg, ok := stats.InProgress(); !ok || inProg.ID != periodic+1 {
		t.Fatalf("in-progress checkpoint = %+v, %v", inProg, ok)
	}
	clock.Advance(5 * time.Second)
	res := waitCheckpoint(t, c, job, trig)
	if !res.Succeeded() || res.Value != periodic+1 {
		t.Fatalf("checkpoint result %+v, want id %d", res, periodic+1)
	}
	// Flink returns no path with the trigger result: the details do.
	det, err := c.CheckpointDetails(ctx, job, res.Value)
	if err != nil {
		t.Fatal(err)
	}
	if det.Status != flink.CheckpointStatsCompleted || det.IsSavepoint || det.ClassName != "completed" {
		t.Errorf("details = %+v", det)
	}
	wantPath := filepath.Join(chkDir, job, "chk-2")
	if det.ExternalPath != "file:"+wantPath {
		t.Errorf("external path %s, want file:%s", det.ExternalPath, wantPath)
	}
	if _, err := os.Stat(filepath.Join(wantPath, "_metadata")); err != nil {
		t.Errorf("checkpoint not written: %v", err)
	}
	stats, err = c.Checkpoints(ctx, job)
	if err != nil {
		t.Fatal(err)
	}
	if stats.Counts.Completed != 2 || stats.Latest.Completed == nil || stats.Latest.Completed.ID != res.Value {
		t.Errorf("stats = %+v latest=%+v", stats.Counts, stats.Latest.Completed)
	}
	if snap, ok := stats.LatestSnapshot(); !ok || snap.ID != res.Value || snap.ExternalPath != det.ExternalPath {
		t.Errorf("LatestSnapshot = %+v, %v", snap, ok)
	}
	if _, err := c.CheckpointDetails(ctx, job, 99); !flink.IsNotFound(err) {
		t.Errorf("unknown checkpoint: %v", err)
	}
	cfg, err := c.CheckpointConfig(ctx, job)
	if err != nil || cfg.Mode != "EXACTLY_ONCE" || !cfg.Externalization.Enabled {
		t.Errorf("config = %+v, %v", cfg, err)
	}
}

func TestCheckpointIDsIncreaseAcrossSavepointsAndIdsAreNeverReused(t *testing.T) {
	jm, c := startFake(t, fakejm.Options{SavepointDir: t.TempDir()})
	ctx := context.Background()
	job := jm.MustAddJob(fakejm.JobSpec{})
	var last int64
	for i := 0; i < 3; i++ {
		trig, err := c.TriggerCheckpoint(ctx, job, flink.CheckpointRequest{})
		if err != nil {
			t.Fatal(err)
		}
		res := waitCheckpoint(t, c, job, trig)
		if res.Value <= last {
			t.Fatalf("checkpoint id %d after %d", res.Value, last)
		}
		last = res.Value
		sp, err := c.TriggerSavepoint(ctx, job, flink.SavepointRequest{})
		if err != nil {
			t.Fatal(err)
		}
		waitSavepoint(t, c, job, sp)
		last++ // the savepoint took the next id
	}
	stats, err := c.Checkpoints(ctx, job)
	if err != nil {
		t.Fatal(err)
	}
	if stats.Latest.Savepoint == nil || stats.Latest.Savepoint.ID != last || !stats.Latest.Savepoint.IsSavepoint {
		t.Errorf("latest savepoint = %+v, want id %d", stats.Latest.Savepoint, last)
	}
	if stats.Latest.Completed == nil || stats.Latest.Completed.IsSavepoint {
		t.Errorf("latest.completed must be a checkpoint, got %+v", stats.Latest.Completed)
	}
	if len(stats.History) != 6 || stats.History[0].ID != last {
		t.Errorf("history newest-first with 6 entries, got %+v", stats.History)
	}
}

func TestCheckpointVersionGates(t *testing.T) {
	ctx := context.Background()
	job := flink.NewID()

	srv := newCannedServer(t, 200, cannedAnswer)
	old := newClient(t, srv.URL, flink.V1_16)
	if _, err := old.TriggerCheckpoint(ctx, job, flink.CheckpointRequest{}); !flink.IsUnsupported(err) {
		t.Errorf("1.16 checkpoint trigger: err = %v, want unsupported", err)
	}
	v119 := newClient(t, srv.URL, flink.V1_19)
	if _, err := v119.TriggerCheckpoint(ctx, job, flink.CheckpointRequest{Type: flink.CheckpointIncremental}); !flink.IsUnsupported(err) {
		t.Errorf("1.19 INCREMENTAL: err = %v, want unsupported", err)
	}
	if len(srv.requests) != 0 {
		t.Errorf("unsupported calls must not reach Flink, got %+v", srv.requests)
	}

	// The fake enforces the same rule the real 1.19 does.
	jm, _ := startFake(t, fakejm.Options{Version: flink.V1_19})
	id := jm.MustAddJob(fakejm.JobSpec{})
	v118 := newClient(t, jm.URL(), flink.V1_18) // a client that believes it talks to 1.18
	_, err := v118.TriggerCheckpoint(ctx, id, flink.CheckpointRequest{Type: flink.CheckpointIncremental})
	if !flink.IsServerError(err) {
		t.Errorf("INCREMENTAL on a 1.19 JobManager: err = %v, want 500", err)
	}

	// Checkpoints of a job without checkpointing: 404.
	noCp := jm.MustAddJob(fakejm.JobSpec{CheckpointingDisabled: true})
	if _, err := newClient(t, jm.URL(), flink.V1_19).Checkpoints(ctx, noCp); !flink.IsNotFound(err) {
		t.Errorf("checkpointing disabled: err = %v, want not found", err)
	}
}
