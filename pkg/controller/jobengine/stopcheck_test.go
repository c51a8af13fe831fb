package jobengine

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/flink"
	"github.com/flinkops/flink-operator/pkg/flink/fakejm"
)

var t0 = time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)

func setup(t *testing.T) (*fakejm.Server, *fakejm.ManualClock, *flink.Client, string) {
	t.Helper()
	clk := fakejm.NewManualClock(t0)
	dir := t.TempDir()
	jm := fakejm.New(fakejm.Options{Version: flink.V1_20, Clock: clk, CompletionPolls: 1, SavepointDir: "file://" + filepath.Join(dir, "sp")})
	t.Cleanup(jm.Close)
	c, err := flink.New(flink.Config{BaseURL: jm.URL(), Version: flink.V1_20})
	if err != nil {
		t.Fatal(err)
	}
	return jm, clk, c, jm.MustAddJob(fakejm.JobSpec{})
}

const trigger = "0123456789abcdef0123456789abcdef"

func TestCheckStop(t *testing.T) {
	ctx := context.Background()
	t.Run("pending then the savepoint", func(t *testing.T) {
		_, _, c, job := setup(t)
		if _, err := c.StopWithSavepoint(ctx, job, flink.StopRequest{TriggerID: trigger}); err != nil {
			t.Fatal(err)
		}
		q := StopQuery{Client: c, JobID: job, TriggerID: trigger, triggered: t0, Now: t0.Add(time.Second), Timeout: time.Minute, JobState: v1beta1.JobStatusRunning}
		if o := checkStop(ctx, q); !o.Pending || o.pollAfter <= 0 || o.resend {
			t.Fatalf("first poll %+v, want pending", o)
		}
		if o := checkStop(ctx, q); o.Path == "" || o.Pending || o.Failure != "" {
			t.Fatalf("second poll %+v, want the savepoint", o)
		}
	})
	t.Run("never sent, job running: send the same id again", func(t *testing.T) {
		_, _, c, job := setup(t)
		q := StopQuery{Client: c, JobID: job, TriggerID: trigger, triggered: t0, Now: t0.Add(time.Second), Timeout: time.Minute, JobState: v1beta1.JobStatusRunning}
		if o := checkStop(ctx, q); !o.Pending || !o.resend {
			t.Fatalf("%+v, want pending with a resend", o)
		}
	})
	t.Run("forgotten, found in the checkpoint history", func(t *testing.T) {
		_, _, c, job := setup(t)
		if _, err := c.StopWithSavepoint(ctx, job, flink.StopRequest{TriggerID: trigger}); err != nil {
			t.Fatal(err)
		}
		q := StopQuery{Client: c, JobID: job, TriggerID: trigger, triggered: t0, Now: t0.Add(time.Second), Timeout: time.Hour}
		checkStop(ctx, q)
		done := checkStop(ctx, q)
		if done.Path == "" {
			t.Fatalf("stop did not complete: %+v", done)
		}
		// The same stop under an id Flink no longer knows (as after
		// rest.async.store-duration): its savepoint is in the history.
		q.TriggerID = "fedcba9876543210fedcba9876543210"
		q.JobState = v1beta1.JobStatusFinished
		if o := checkStop(ctx, q); o.Path != done.Path {
			t.Fatalf("forgotten id: %+v, want %s from the checkpoint history", o, done.Path)
		}
	})
	t.Run("forgotten, job finished without a trace", func(t *testing.T) {
		_, _, c, job := setup(t)
		q := StopQuery{Client: c, JobID: job, TriggerID: trigger, triggered: t0, Now: t0.Add(time.Second), Timeout: time.Minute, JobState: v1beta1.JobStatusFinished}
		if o := checkStop(ctx, q); !o.lost {
			t.Fatalf("%+v, want lost", o)
		}
	})
	t.Run("forgotten, job failed", func(t *testing.T) {
		_, _, c, job := setup(t)
		q := StopQuery{Client: c, JobID: job, TriggerID: trigger, triggered: t0, Now: t0.Add(time.Second), Timeout: time.Minute, JobState: v1beta1.JobStatusFailed}
		if o := checkStop(ctx, q); !strings.Contains(o.Failure, "does not know trigger id") {
			t.Fatalf("%+v, want a failure", o)
		}
	})
	t.Run("timeout", func(t *testing.T) {
		_, _, c, job := setup(t)
		q := StopQuery{Client: c, JobID: job, TriggerID: trigger, triggered: t0, Now: t0.Add(2 * time.Minute), Timeout: time.Minute, JobState: v1beta1.JobStatusRunning}
		if o := checkStop(ctx, q); !strings.Contains(o.Failure, "Timed out") || o.resend {
			t.Fatalf("%+v, want a timeout and no resend", o)
		}
	})
	t.Run("unreachable, recorded already", func(t *testing.T) {
		q := StopQuery{JobID: "j", TriggerID: trigger, triggered: t0, Now: t0.Add(time.Second), Timeout: time.Minute, Recorded: "s3://b/sp"}
		if o := checkStop(ctx, q); o.Path != "s3://b/sp" {
			t.Fatalf("%+v, want the recorded path", o)
		}
		q.Recorded = ""
		if o := checkStop(ctx, q); !o.Pending {
			t.Fatalf("%+v, want pending", o)
		}
	})
}
