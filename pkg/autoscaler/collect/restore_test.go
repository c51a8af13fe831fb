package collect_test

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/flinkops/flink-operator/pkg/autoscaler/collect"
	"github.com/flinkops/flink-operator/pkg/autoscaler/store"
	"github.com/flinkops/flink-operator/pkg/flink"
	"github.com/flinkops/flink-operator/pkg/flink/fakejm"
)

// collected runs a pipeline job and collects five samples, a minute apart
// from t0, with a first collector: the history a previous operator stored.
func collected(t *testing.T) (*env, string, collect.JobGraph, []collect.Sample) {
	t.Helper()
	e := newEnv(t, flink.V1_20)
	job := e.addPipeline(t)
	col := newCollector(t, e.c, collect.Options{})
	for i := 0; i < 5; i++ {
		if _, err := col.Collect(context.Background(), job, t0.Add(time.Duration(i)*time.Minute)); err != nil {
			t.Fatal(err)
		}
	}
	g, ss, ok := col.History()
	if !ok || g.JobID != job || len(ss) != 5 {
		t.Fatalf("history: %v, %+v, %d samples", ok, g, len(ss))
	}
	return e, job, g, ss
}

func restoredCollector(t *testing.T, e *env, o collect.Options, g collect.JobGraph, ss []collect.Sample) *collect.Collector {
	t.Helper()
	col := newCollector(t, e.c, o)
	if err := col.Restore(g, ss); err != nil {
		t.Fatal(err)
	}
	return col
}

func times(ss []collect.Sample) []time.Duration {
	out := make([]time.Duration, len(ss))
	for i, s := range ss {
		out[i] = s.Time.Sub(t0)
	}
	return out
}

// The same job, not restarted: the next collection keeps the restored
// history and adds its sample; before it nothing shows.
func TestRestoreKeepsHistoryOfTheSameJob(t *testing.T) {
	e, job, g, ss := collected(t)
	col := restoredCollector(t, e, collect.Options{}, g, ss)
	if _, ok := col.Graph(); ok || len(col.Samples()) != 0 {
		t.Errorf("a restored history shows before a collection adopts it")
	}
	if _, _, ok := col.History(); ok {
		t.Error("History before a collection")
	}
	if _, err := col.Collect(context.Background(), job, t0.Add(5*time.Minute)); err != nil {
		t.Fatal(err)
	}
	got, ng, _ := col.History()
	if len(ng) != 6 || !ng[0].Time.Equal(t0) || !ng[5].Time.Equal(t0.Add(5*time.Minute)) {
		t.Fatalf("history after adoption: %v", times(ng))
	}
	if ng[0].Vertices[0] != ss[0].Vertices[0] || !got.RunningSince.Equal(g.RunningSince) {
		t.Errorf("adopted %+v, graph %+v", ng[0].Vertices[0], got)
	}
	// Collection goes on from there.
	if _, err := col.Collect(context.Background(), job, t0.Add(6*time.Minute)); err != nil || len(col.Samples()) != 7 {
		t.Errorf("next collection: %d samples, %v", len(col.Samples()), err)
	}
}

// Collect's rules for restarting a history drop a restored one.
func TestRestoreDroppedWhenTheJobChanged(t *testing.T) {
	for name, change := range map[string]func(t *testing.T, e *env, job string) (string, time.Time){
		"job id changed": func(t *testing.T, e *env, job string) (string, time.Time) {
			return e.addPipeline(t), t0.Add(5 * time.Minute)
		},
		"parallelism changed": func(t *testing.T, e *env, job string) (string, time.Time) {
			must(t, e.jm.SetVertexParallelism(job, vMap, 6))
			return job, t0.Add(5 * time.Minute)
		},
		"job restarted": func(t *testing.T, e *env, job string) (string, time.Time) {
			e.clock.Set(t0.Add(4*time.Minute + 30*time.Second))
			must(t, e.jm.SetJobState(job, flink.JobRestarting))
			must(t, e.jm.SetJobState(job, flink.JobRunning))
			return job, t0.Add(5 * time.Minute)
		},
		"clock behind the newest sample": func(t *testing.T, e *env, job string) (string, time.Time) {
			return job, t0.Add(4*time.Minute - time.Second)
		},
	} {
		t.Run(name, func(t *testing.T) {
			e, job, g, ss := collected(t)
			col := restoredCollector(t, e, collect.Options{}, g, ss)
			job, at := change(t, e, job)
			if _, err := col.Collect(context.Background(), job, at); err != nil {
				t.Fatal(err)
			}
			if got := col.Samples(); len(got) != 1 || !got[0].Time.Equal(at) {
				t.Errorf("history %v, want only the new sample", times(got))
			}
			if g2, _ := col.Graph(); g2.JobID != job {
				t.Errorf("graph of %s", g2.JobID)
			}
		})
	}
}

// A failed collection keeps the restored history pending; the window and
// MaxSamples trim it at Restore and again at the adopting collection.
func TestRestorePendingAndTrimmed(t *testing.T) {
	e, job, g, ss := collected(t)
	col := restoredCollector(t, e, collect.Options{Window: 3 * time.Minute}, g, ss)
	remove := e.jm.InjectFault(fakejm.Fault{Route: fakejm.RouteJob, Status: http.StatusServiceUnavailable})
	if _, err := col.Collect(context.Background(), job, t0.Add(5*time.Minute)); err == nil {
		t.Fatal("collection with the JobManager down succeeded")
	}
	remove()
	// Restore kept 1..4 min (3 min before the newest); the collection at
	// 5 min keeps 2..5 min.
	if _, err := col.Collect(context.Background(), job, t0.Add(5*time.Minute)); err != nil {
		t.Fatal(err)
	}
	want := []time.Duration{2 * time.Minute, 3 * time.Minute, 4 * time.Minute, 5 * time.Minute}
	if got := times(col.Samples()); len(got) != len(want) || got[0] != want[0] || got[3] != want[3] {
		t.Errorf("history %v, want %v", got, want)
	}

	col = restoredCollector(t, e, collect.Options{MaxSamples: 2}, g, ss)
	if _, err := col.Collect(context.Background(), job, t0.Add(5*time.Minute)); err != nil {
		t.Fatal(err)
	}
	if got := times(col.Samples()); len(got) != 2 || got[0] != 4*time.Minute {
		t.Errorf("MaxSamples 2: history %v", got)
	}
}

func TestRestoreRejects(t *testing.T) {
	e, job, g, ss := collected(t)
	clone := func() (collect.JobGraph, []collect.Sample) {
		g2 := g
		g2.Vertices = append([]collect.Vertex(nil), g.Vertices...)
		ss2 := make([]collect.Sample, len(ss))
		for i, s := range ss {
			ss2[i] = collect.Sample{Time: s.Time, Vertices: append([]collect.VertexMetrics(nil), s.Vertices...)}
		}
		return g2, ss2
	}
	for name, spoil := range map[string]func(g *collect.JobGraph, ss []collect.Sample) []collect.Sample{
		"no job id":   func(g *collect.JobGraph, ss []collect.Sample) []collect.Sample { g.JobID = ""; return ss },
		"no vertices": func(g *collect.JobGraph, ss []collect.Sample) []collect.Sample { g.Vertices = nil; return ss },
		"repeated vertex": func(g *collect.JobGraph, ss []collect.Sample) []collect.Sample {
			g.Vertices[1].ID = g.Vertices[0].ID
			return ss
		},
		"parallelism 0": func(g *collect.JobGraph, ss []collect.Sample) []collect.Sample {
			g.Vertices[1].Parallelism = 0
			return ss
		},
		"input from nowhere": func(g *collect.JobGraph, ss []collect.Sample) []collect.Sample {
			g.Vertices[1].Inputs = []collect.Input{{ID: "x"}}
			return ss
		},
		"samples out of order": func(g *collect.JobGraph, ss []collect.Sample) []collect.Sample {
			ss[1], ss[2] = ss[2], ss[1]
			return ss
		},
		"sample without time": func(g *collect.JobGraph, ss []collect.Sample) []collect.Sample { ss[0].Time = time.Time{}; return ss },
		"vertex missing": func(g *collect.JobGraph, ss []collect.Sample) []collect.Sample {
			ss[2].Vertices = ss[2].Vertices[:2]
			return ss
		},
		"vertices out of order": func(g *collect.JobGraph, ss []collect.Sample) []collect.Sample {
			ss[3].Vertices[0], ss[3].Vertices[1] = ss[3].Vertices[1], ss[3].Vertices[0]
			return ss
		},
		"vertex not in the graph": func(g *collect.JobGraph, ss []collect.Sample) []collect.Sample {
			ss[4].Vertices[2].VertexID = "x"
			return ss
		},
	} {
		g2, ss2 := clone()
		ss2 = spoil(&g2, ss2)
		col := newCollector(t, e.c, collect.Options{})
		if err := col.Restore(g2, ss2); !errors.Is(err, collect.ErrInvalidHistory) {
			t.Errorf("%s: %v, want ErrInvalidHistory", name, err)
		}
		// Nothing restored.
		if _, err := col.Collect(context.Background(), job, t0.Add(5*time.Minute)); err != nil || len(col.Samples()) != 1 {
			t.Errorf("%s: %d samples after a collection, %v", name, len(col.Samples()), err)
		}
	}

	// A collector that has collected keeps its own history.
	col := newCollector(t, e.c, collect.Options{})
	if _, err := col.Collect(context.Background(), job, t0.Add(5*time.Minute)); err != nil {
		t.Fatal(err)
	}
	if err := col.Restore(g, ss); !errors.Is(err, collect.ErrHasCollected) {
		t.Errorf("restore after a collection: %v", err)
	}
	// After Reset it may restore again; no samples restore nothing.
	col.Reset()
	if err := col.Restore(g, nil); err != nil {
		t.Errorf("empty history: %v", err)
	}
	if _, err := col.Collect(context.Background(), job, t0.Add(6*time.Minute)); err != nil || len(col.Samples()) != 1 {
		t.Errorf("after an empty restore: %d samples, %v", len(col.Samples()), err)
	}
}

// Through the ConfigMap, as across an operator restart: History stored by
// store.Encode, read by store.DecodeMetrics, restored, adopted.
func TestRestoreThroughTheConfigMap(t *testing.T) {
	e, job, g, ss := collected(t)
	data, err := store.Encode(store.Stored{Metrics: &store.Metrics{Graph: g, Samples: ss}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	m, err := store.DecodeMetrics(&corev1.ConfigMap{Data: data})
	if err != nil {
		t.Fatal(err)
	}
	col := restoredCollector(t, e, collect.Options{}, m.Graph, m.Samples)
	if _, err := col.Collect(context.Background(), job, t0.Add(5*time.Minute)); err != nil {
		t.Fatal(err)
	}
	if got := col.Samples(); len(got) != 6 || got[2].Vertices[1] != ss[2].Vertices[1] {
		t.Errorf("history %v", times(got))
	}
}
