package flink_test

import (
	"context"
	"math"
	"net/http"
	"net/http/httptest"
	"reflect"
	"testing"

	"github.com/flinkops/flink-operator/pkg/flink"
	"github.com/flinkops/flink-operator/pkg/flink/fakejm"
)

// The listing names what the subtasks report; ?get= aggregates over the
// subtasks that report a metric, leaving unknown names out; ?agg= limits
// the aggregates; a NaN gauge reads NaN.
func TestVertexMetrics(t *testing.T) {
	jm, c := startFake(t, fakejm.Options{Version: flink.V1_18})
	ctx := context.Background()
	job := jm.MustAddJob(fakejm.JobSpec{Parallelism: 3})
	src := fakejm.VertexID(0)
	if err := jm.SetVertexMetrics(job, src, map[string][]float64{
		flink.MetricBusyTimeMsPerSecond:          {100, 400, 700},
		"Source__in.pendingRecords":              {10, 20}, // the third subtask does not report it
		"Source__in.numRecordsOutPerSecond":      {1, 2, 3},
		flink.MetricBackPressuredTimeMsPerSecond: {math.NaN(), math.NaN(), math.NaN()},
	}); err != nil {
		t.Fatal(err)
	}

	names, err := c.VertexMetricNames(ctx, job, src)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"Source__in.numRecordsOutPerSecond", "Source__in.pendingRecords", "backPressuredTimeMsPerSecond", "busyTimeMsPerSecond"}
	if !reflect.DeepEqual(names, want) {
		t.Errorf("names %v", names)
	}

	ms, err := c.VertexMetrics(ctx, job, src, []string{flink.MetricBusyTimeMsPerSecond, "Source__in.pendingRecords", "noSuchMetric", flink.MetricBackPressuredTimeMsPerSecond})
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != 3 {
		t.Fatalf("metrics %+v", ms)
	}
	busy := ms[0]
	if busy.ID != flink.MetricBusyTimeMsPerSecond || busy.Min != 100 || busy.Max != 700 || busy.Avg != 400 || busy.Sum != 1200 ||
		!busy.Has(flink.AggMin) || !busy.Has(flink.AggSum) || busy.Has(flink.AggSkew) {
		t.Errorf("busy %+v", busy)
	}
	if p := ms[1]; p.Sum != 30 || p.Max != 20 {
		t.Errorf("pending %+v", p)
	}
	if bp, ok := ms[2].Get(flink.AggAvg); !ok || !math.IsNaN(bp) {
		t.Errorf("backpressure %+v", ms[2])
	}

	jm.ResetRequests()
	ms, err = c.VertexMetrics(ctx, job, src, []string{flink.MetricBusyTimeMsPerSecond}, flink.AggMax, flink.AggSum)
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != 1 || !ms[0].Has(flink.AggMax) || ms[0].Has(flink.AggMin) || ms[0].Has(flink.AggAvg) {
		t.Errorf("max,sum: %+v", ms)
	}
	if reqs := jm.RequestsTo(fakejm.RouteVertexSubtaskMetrics); len(reqs) != 1 || reqs[0].Query != "agg=max%2Csum&get=busyTimeMsPerSecond" {
		t.Errorf("requests %+v", reqs)
	}

	// SKEW is refused below 1.20 without a call.
	jm.ResetRequests()
	if _, err := c.VertexMetrics(ctx, job, src, []string{flink.MetricBusyTimeMsPerSecond}, flink.AggSkew); !flink.IsUnsupported(err) {
		t.Errorf("skew on 1.18: %v", err)
	}
	if n := len(jm.Requests()); n != 0 {
		t.Errorf("%d requests sent", n)
	}
	for _, bad := range [][]string{nil, {""}, {"a,b"}} {
		if _, err := c.VertexMetrics(ctx, job, src, bad); !flink.IsBadRequest(err) {
			t.Errorf("names %q: %v", bad, err)
		}
	}
	if _, err := c.VertexMetricNames(ctx, job, "x"); !flink.IsBadRequest(err) {
		t.Errorf("bad vertex id: %v", err)
	}
	// Like Flink's metric handlers, an unknown vertex has no metrics.
	if ms, err := c.VertexMetrics(ctx, job, fakejm.VertexID(7), []string{flink.MetricBusyTimeMsPerSecond}); err != nil || len(ms) != 0 {
		t.Errorf("unknown vertex: %+v %v", ms, err)
	}
}

// 1.20 adds SKEW; without ?agg= Flink sends every mode it has.
func TestVertexMetricsSkew(t *testing.T) {
	jm, c := startFake(t, fakejm.Options{Version: flink.V1_20})
	job := jm.MustAddJob(fakejm.JobSpec{Parallelism: 2})
	if err := jm.SetVertexMetric(job, fakejm.VertexID(1), flink.MetricNumRecordsInPerSecond, 5); err != nil {
		t.Fatal(err)
	}
	ms, err := c.VertexMetrics(context.Background(), job, fakejm.VertexID(1), []string{flink.MetricNumRecordsInPerSecond})
	if err != nil || len(ms) != 1 || ms[0].Sum != 10 || !ms[0].Has(flink.AggSkew) || ms[0].Skew != 0 {
		t.Fatalf("%+v %v", ms, err)
	}
	if ms, err = c.VertexMetrics(context.Background(), job, fakejm.VertexID(1), []string{flink.MetricNumRecordsInPerSecond}, flink.AggSkew); err != nil || !ms[0].Has(flink.AggSkew) || ms[0].Has(flink.AggSum) {
		t.Fatalf("skew only: %+v %v", ms, err)
	}
}

// Flink writes a bare array (the spec's {"metrics": [...]} is read too),
// and non-finite doubles as strings.
func TestVertexMetricsShapes(t *testing.T) {
	for _, body := range []string{
		`[{"id":"busyTimeMsPerSecond","min":1,"max":"Infinity","avg":"NaN","sum":"7"}]`,
		`{"metrics":[{"id":"busyTimeMsPerSecond","min":1.0,"max":"Infinity","avg":"NaN","sum":7,"skew":null}]}`,
	} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(body))
		}))
		c, err := flink.New(flink.Config{BaseURL: srv.URL, Version: flink.V1_20})
		if err != nil {
			t.Fatal(err)
		}
		ms, err := c.VertexMetrics(context.Background(), "0123456789abcdef0123456789abcdef", "0123456789abcdef0123456789abcdef", []string{"busyTimeMsPerSecond"})
		if err != nil || len(ms) != 1 {
			t.Fatalf("%s: %+v %v", body, ms, err)
		}
		m := ms[0]
		if m.Min != 1 || !math.IsInf(m.Max, 1) || !math.IsNaN(m.Avg) || m.Sum != 7 || m.Has(flink.AggSkew) {
			t.Errorf("%s: %+v", body, m)
		}
		srv.Close()
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(`[{"id":"x","min":"lots"}]`))
	}))
	defer srv.Close()
	c, _ := flink.New(flink.Config{BaseURL: srv.URL, Version: flink.V1_20})
	if _, err := c.VertexMetrics(context.Background(), "0123456789abcdef0123456789abcdef", "0123456789abcdef0123456789abcdef", []string{"x"}); err == nil {
		t.Error("a non-numeric aggregate was accepted")
	} else if k, _ := flink.KindOf(err); k != flink.KindUnexpected {
		t.Errorf("kind %v", k)
	}
}

func TestMetricNamePredicates(t *testing.T) {
	for name, want := range map[string]bool{
		"Source__Kafka_Source.pendingRecords": true,
		"Map.pendingRecords":                  true,
		"pendingRecords":                      false,
		"Source__x.pendingRecordsX":           false,
	} {
		if got := flink.IsPendingRecordsMetric(name); got != want {
			t.Errorf("IsPendingRecordsMetric(%q) = %v", name, got)
		}
	}
	for name, want := range map[string]bool{
		"Source__in.numRecordsOutPerSecond": true,
		"Source__.numRecordsOutPerSecond":   false,
		"Map.numRecordsOutPerSecond":        false,
		"numRecordsOutPerSecond":            false,
	} {
		if got := flink.IsSourceOperatorMetric(name, flink.MetricNumRecordsOutPerSecond); got != want {
			t.Errorf("IsSourceOperatorMetric(%q) = %v", name, got)
		}
	}
}
