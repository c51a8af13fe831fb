package flink_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/flinkops/flink-operator/pkg/flink"
	"github.com/flinkops/flink-operator/pkg/flink/fakejm"
)

// Jar upload and run are bounded by Config.SubmitTimeout
// (kubernetes.operator.job.submission.timeout), not by the per-call
// Timeout: a run slower than the client timeout succeeds within the
// submission timeout, and one slower than the submission timeout fails.
func TestSubmitTimeoutBoundsJarRun(t *testing.T) {
	jm := fakejm.New(fakejm.Options{})
	defer jm.Close()
	const latency = 400 * time.Millisecond
	for _, tc := range []struct {
		name          string
		timeout       time.Duration
		submitTimeout time.Duration
		wantErr       string
	}{
		{name: "run slower than the client timeout, within the submission timeout", timeout: 50 * time.Millisecond, submitTimeout: 5 * time.Second},
		{name: "run slower than the submission timeout", timeout: 5 * time.Second, submitTimeout: 100 * time.Millisecond, wantErr: "no answer within 100ms"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := flink.New(flink.Config{BaseURL: jm.URL(), Version: flink.V1_20, Timeout: tc.timeout, SubmitTimeout: tc.submitTimeout})
			if err != nil {
				t.Fatal(err)
			}
			if c.SubmitTimeout() != tc.submitTimeout || c.Timeout() != tc.timeout {
				t.Fatalf("timeouts %v/%v", c.Timeout(), c.SubmitTimeout())
			}
			jarID := uploadTestJar(t, c)
			remove := jm.InjectFault(fakejm.Fault{Route: fakejm.RouteJarRun, Latency: latency})
			defer remove()
			_, err = c.RunJar(context.Background(), jarID, flink.JarRunRequest{EntryClass: "com.example.Job", JobID: flink.NewID()})
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("run: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Errorf("run: err %v, want %q", err, tc.wantErr)
			}
		})
	}
}
