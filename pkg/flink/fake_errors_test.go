package flink_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/flinkops/flink-operator/pkg/flink"
	"github.com/flinkops/flink-operator/pkg/flink/fakejm"
)

// Error classification: callers decide between retry, "gone" and "give
// up" from the Kind alone, so every failure mode must land in the right one.

func TestUnavailableIsRetryableBadRequestIsNot(t *testing.T) {
	jm, c := startFake(t, fakejm.Options{Version: flink.V1_19})
	ctx := context.Background()
	job := jm.MustAddJob(fakejm.JobSpec{})

	jm.InjectFault(fakejm.Fault{Route: fakejm.RouteOverview, Status: http.StatusServiceUnavailable, Times: 1})
	_, err := c.Overview(ctx)
	if !flink.IsRetryable(err) || !flink.IsUnavailable(err) {
		t.Fatalf("503: err = %v, want retryable", err)
	}
	fe, _ := flink.AsError(err)
	if fe.StatusCode != 503 || fe.Path != "/overview" || !fe.Contains("leader election") {
		t.Errorf("503 error lacks detail: %+v", fe)
	}
	if _, err := c.Overview(ctx); err != nil {
		t.Fatalf("fault was limited to one request, second call: %v", err)
	}

	// No target directory and no configured default: Flink's 400.
	_, err = c.TriggerSavepoint(ctx, job, flink.SavepointRequest{})
	if !flink.IsBadRequest(err) || flink.IsRetryable(err) {
		t.Fatalf("400: err = %v, want bad request, not retryable", err)
	}
	if fe, _ := flink.AsError(err); !fe.Contains("state.savepoints.dir") || fe.Method != "POST" {
		t.Errorf("400 error lacks Flink's text: %+v", fe)
	}

	jm.InjectFault(fakejm.Fault{Route: fakejm.RouteJobsOverview, Status: http.StatusInternalServerError, Times: 1})
	if _, err := c.JobsOverview(ctx); !flink.IsServerError(err) || flink.IsRetryable(err) {
		t.Errorf("500: err = %v, want server error, not retryable", err)
	}
	jm.InjectFault(fakejm.Fault{Route: fakejm.RouteJobsOverview, Status: http.StatusBadGateway, Times: 1})
	if _, err := c.JobsOverview(ctx); !flink.IsRetryable(err) {
		t.Errorf("502: err = %v, want retryable", err)
	}
}

func TestErrorsSurviveWrapping(t *testing.T) {
	jm, c := startFake(t, fakejm.Options{})
	_, err := c.Job(context.Background(), flink.NewID())
	wrapped := fmt.Errorf("observe: %w", fmt.Errorf("reconcile: %w", err))
	if !flink.IsNotFound(wrapped) || flink.IsRetryable(wrapped) {
		t.Fatalf("wrapped 404: %v", wrapped)
	}
	var fe *flink.Error
	if !errors.As(wrapped, &fe) || fe.Kind != flink.KindNotFound {
		t.Fatalf("errors.As: %v", wrapped)
	}
	if !strings.Contains(err.Error(), "HTTP 404") || strings.Contains(err.Error(), "\tat ") {
		t.Errorf("Error() should be one readable line, got %q", err.Error())
	}
	if flink.IsNotFound(errors.New("plain")) || flink.IsRetryable(nil) {
		t.Error("helpers must be false for foreign errors and nil")
	}
	_ = jm
}

func TestTransportFailuresAreRetryable(t *testing.T) {
	// Connection refused: a port nobody listens on.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	c := newClient(t, "http://"+addr, flink.V1_20)
	_, err = c.Config(context.Background())
	if !flink.IsRetryable(err) || flink.IsCanceled(err) {
		t.Fatalf("connection refused: err = %v, want retryable", err)
	}
	if fe, _ := flink.AsError(err); fe.StatusCode != 0 || fe.Err == nil {
		t.Errorf("transport error should carry no status and the cause: %+v", fe)
	}

	// Per-call timeout: the fake answers slower than the client waits.
	jm := fakejm.New(fakejm.Options{})
	defer jm.Close()
	jm.InjectFault(fakejm.Fault{Route: fakejm.RouteConfig, Latency: 2 * time.Second})
	slow, err := flink.New(flink.Config{BaseURL: jm.URL(), Version: flink.V1_20, Timeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err = slow.Config(context.Background())
	if !flink.IsRetryable(err) || time.Since(start) > time.Second {
		t.Fatalf("timeout: err = %v after %s, want retryable within ~100ms", err, time.Since(start))
	}
	if !strings.Contains(err.Error(), "no answer within 100ms") {
		t.Errorf("timeout message: %v", err)
	}

	// The connection dies without an answer.
	jm.InjectFault(fakejm.Fault{Route: fakejm.RouteOverview, Drop: true, Times: 1})
	if _, err := slow.Overview(context.Background()); !flink.IsRetryable(err) {
		t.Errorf("dropped connection: err = %v, want retryable", err)
	}

	// The caller's own cancellation is not retryable.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := slow.Overview(ctx); !flink.IsCanceled(err) || flink.IsRetryable(err) {
		t.Errorf("canceled context: err = %v, want canceled", err)
	}
}

func TestCancelJobConflictAndNotFound(t *testing.T) {
	jm, c := startFake(t, fakejm.Options{Version: flink.V1_18})
	ctx := context.Background()
	job := jm.MustAddJob(fakejm.JobSpec{})
	if err := c.CancelJob(ctx, job); err != nil {
		t.Fatal(err)
	}
	if st, _ := jm.JobState(job); st != flink.JobCanceled {
		t.Fatalf("state after cancel = %s", st)
	}
	err := c.CancelJob(ctx, job)
	if !flink.IsConflict(err) || !flink.IsJobAlreadyTerminal(err) {
		t.Fatalf("second cancel: err = %v, want 409 conflict", err)
	}
	if err := c.CancelJob(ctx, flink.NewID()); !flink.IsNotFound(err) {
		t.Errorf("cancel unknown job: err = %v, want not found", err)
	}
	if err := c.CancelJob(ctx, "not-a-job-id"); !flink.IsBadRequest(err) {
		t.Errorf("malformed id: err = %v, want a local bad request", err)
	}
	reqs := jm.RequestsTo(fakejm.RouteJobCancel)
	if len(reqs) != 3 || reqs[0].Query != "mode=cancel" || reqs[0].Method != http.MethodPatch {
		t.Errorf("cancel requests = %+v (the malformed id must not be sent)", reqs)
	}
}
