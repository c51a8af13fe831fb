package collect_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/flinkops/flink-operator/pkg/autoscaler/collect"
	"github.com/flinkops/flink-operator/pkg/flink"
	"github.com/flinkops/flink-operator/pkg/flink/fakejm"
)

// tenVertexJob programs a chain of 10 vertices (one source), parallelism
// 4, every metric the collector reads set.
func tenVertexJob(b *testing.B, jm *fakejm.Server) string {
	job := jm.MustAddJob(fakejm.JobSpec{Parallelism: 4})
	var vs []fakejm.VertexSpec
	for i := 0; i < 10; i++ {
		v := fakejm.VertexSpec{ID: fakejm.VertexID(i), Name: fmt.Sprintf("op-%d", i)}
		if i == 0 {
			v.Name = "Source: in"
		} else {
			v.Inputs = []string{fakejm.VertexID(i - 1)}
		}
		vs = append(vs, v)
	}
	must(b, jm.SetJobGraph(job, fakejm.GraphSpec{Vertices: vs}))
	for i := 0; i < 10; i++ {
		m := map[string][]float64{
			"busyTimeMsPerSecond":          {100, 200, 300, 400},
			"backPressuredTimeMsPerSecond": {0, 0, 0, 0},
			"numRecordsInPerSecond":        {10, 10, 10, 10},
			"numRecordsOutPerSecond":       {10, 10, 10, 10},
		}
		if i == 0 {
			m["Source__in.pendingRecords"] = []float64{5, 5, 5, 5}
			m["Source__in.numRecordsOutPerSecond"] = []float64{10, 10, 10, 10}
		}
		must(b, jm.SetVertexMetrics(job, fakejm.VertexID(i), m))
	}
	return job
}

// One collection of a 10-vertex job against the fake JobManager over
// loopback HTTP: 11 REST calls (job details + 10 vertex metrics). Most of
// the allocations are net/http's and encoding/json's.
func BenchmarkCollect10Vertices(b *testing.B) {
	// A small request log: past its bound the fake copies the whole log on
	// every request, which would dominate the measurement.
	jm := fakejm.New(fakejm.Options{Version: flink.V1_20, MaxRequestLog: 64})
	defer jm.Close()
	c, err := flink.New(flink.Config{BaseURL: jm.URL(), Version: flink.V1_20})
	if err != nil {
		b.Fatal(err)
	}
	job := tenVertexJob(b, jm)
	col := newCollector(b, c, collect.Options{})
	ctx := context.Background()
	if _, err := col.Collect(ctx, job, t0); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := col.Collect(ctx, job, t0.Add(time.Duration(i+1)*time.Second)); err != nil {
			b.Fatal(err)
		}
	}
}

// recordedClient answers from memory what the fake answered once, so the
// benchmark measures the collector itself.
type recordedClient struct {
	details *flink.JobDetails
	graph   *flink.JobGraph
	names   map[string][]string
	metrics map[string][]flink.AggregatedMetric
}

func (r *recordedClient) Job(context.Context, string) (*flink.JobDetails, error) {
	return r.details, nil
}

func (r *recordedClient) JobGraphFrom(context.Context, *flink.JobDetails) (*flink.JobGraph, error) {
	return r.graph, nil
}

func (r *recordedClient) VertexMetricNames(_ context.Context, _, v string) ([]string, error) {
	return r.names[v], nil
}

func (r *recordedClient) VertexMetrics(_ context.Context, _, v string, _ []string, _ ...flink.Aggregation) ([]flink.AggregatedMetric, error) {
	return r.metrics[v], nil
}

// The collector's own cost of one collection of a 10-vertex job, without
// HTTP and JSON.
func BenchmarkCollect10VerticesNoHTTP(b *testing.B) {
	jm := fakejm.New(fakejm.Options{Version: flink.V1_20})
	defer jm.Close()
	c, err := flink.New(flink.Config{BaseURL: jm.URL(), Version: flink.V1_20})
	if err != nil {
		b.Fatal(err)
	}
	job := tenVertexJob(b, jm)
	ctx := context.Background()
	rc := &recordedClient{names: map[string][]string{}, metrics: map[string][]flink.AggregatedMetric{}}
	if rc.details, err = c.Job(ctx, job); err != nil {
		b.Fatal(err)
	}
	if rc.graph, err = c.JobGraphFrom(ctx, rc.details); err != nil {
		b.Fatal(err)
	}
	for _, v := range rc.graph.Vertices {
		if rc.names[v.ID], err = c.VertexMetricNames(ctx, job, v.ID); err != nil {
			b.Fatal(err)
		}
		if rc.metrics[v.ID], err = c.VertexMetrics(ctx, job, v.ID, rc.names[v.ID], flink.AggAvg, flink.AggSum, flink.AggMax); err != nil {
			b.Fatal(err)
		}
	}
	col := newCollector(b, rc, collect.Options{})
	if _, err := col.Collect(ctx, job, t0); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := col.Collect(ctx, job, t0.Add(time.Duration(i+1)*time.Second)); err != nil {
			b.Fatal(err)
		}
	}
}
