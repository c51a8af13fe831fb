package flink_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/flinkops/flink-operator/pkg/flink"
	"github.com/flinkops/flink-operator/pkg/flink/fakejm"
)

// JobMetrics reads the metrics the health check needs: numRestarts grows
// with the job's restarts, numberOfCompletedCheckpoints with its
// checkpoints; a metric the job does not have is absent, an unknown job
// is NotFound.
func TestJobMetrics(t *testing.T) {
	jm, c := startFake(t, fakejm.Options{Version: flink.V1_20})
	ctx := context.Background()
	job := jm.MustAddJob(fakejm.JobSpec{})
	if err := jm.AddRestarts(job, 3); err != nil {
		t.Fatal(err)
	}
	if _, _, err := jm.CompleteCheckpoint(job); err != nil {
		t.Fatal(err)
	}
	got, err := c.JobMetrics(ctx, job, flink.MetricNumRestarts, flink.MetricNumberOfCompletedCheckpoints, "noSuchMetric")
	if err != nil {
		t.Fatal(err)
	}
	if got[flink.MetricNumRestarts] != "3" || got[flink.MetricNumberOfCompletedCheckpoints] != "1" || len(got) != 2 {
		t.Errorf("metrics %v", got)
	}
	reqs := jm.RequestsTo(fakejm.RouteJobMetrics)
	if len(reqs) != 1 || reqs[0].Query != "get=numRestarts%2CnumberOfCompletedCheckpoints%2CnoSuchMetric" {
		t.Errorf("requests %+v", reqs)
	}
	if _, err := c.JobMetrics(ctx, "0123456789abcdef0123456789abcdef", flink.MetricNumRestarts); !flink.IsNotFound(err) {
		t.Errorf("unknown job: %v", err)
	}
}

// Flink writes a bare JSON array; the OpenAPI spec's {"metrics": [...]}
// is read too.
func TestJobMetricsShapes(t *testing.T) {
	for _, body := range []string{
		`[{"id":"numRestarts","value":"7"}]`,
		`{"metrics":[{"id":"numRestarts","value":"7"}]}`,
	} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(body))
		}))
		c, err := flink.New(flink.Config{BaseURL: srv.URL, Version: flink.V1_20})
		if err != nil {
			t.Fatal(err)
		}
		got, err := c.JobMetrics(context.Background(), "0123456789abcdef0123456789abcdef", flink.MetricNumRestarts)
		if err != nil || got[flink.MetricNumRestarts] != "7" {
			t.Errorf("%s: %v %v", body, got, err)
		}
		srv.Close()
	}
}
