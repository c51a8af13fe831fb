package flink_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/flinkops/flink-operator/pkg/flink"
	"github.com/flinkops/flink-operator/pkg/flink/fakejm"
)

// The fake's default job: a source feeding a sink, both at the job's
// parallelism, max parallelism 128; one call on every version.
func TestJobGraphDefault(t *testing.T) {
	for _, v := range []flink.Version{flink.V1_15, flink.V1_18, flink.V1_20, flink.V2_0} {
		t.Run(v.String(), func(t *testing.T) {
			jm, c := startFake(t, fakejm.Options{Version: v})
			job := jm.MustAddJob(fakejm.JobSpec{Parallelism: 3})
			g, err := c.JobGraph(context.Background(), job)
			if err != nil {
				t.Fatal(err)
			}
			if g.JobID != job || g.State != flink.JobRunning || g.RunningSince == 0 || len(g.Vertices) != 2 {
				t.Fatalf("graph %+v", g)
			}
			src, sink := g.Vertices[0], g.Vertices[1]
			if src.ID != fakejm.VertexID(0) || !src.IsSource() || src.Parallelism != 3 || src.MaxParallelism != 128 {
				t.Errorf("source %+v", src)
			}
			if sink.IsSource() || len(sink.Inputs) != 1 || sink.Inputs[0].ID != src.ID || sink.Inputs[0].ShipStrategy != "FORWARD" {
				t.Errorf("sink %+v", sink)
			}
			if n := len(jm.Requests()); n != 1 {
				t.Errorf("%d requests, want 1", n)
			}
		})
	}
}

// A programmed diamond; a JobManager whose details lack the vertices' max
// parallelism and the plan costs one call per vertex and one plan call.
func TestJobGraphFallbacks(t *testing.T) {
	jm, c := startFake(t, fakejm.Options{Version: flink.V1_15})
	job := jm.MustAddJob(fakejm.JobSpec{Parallelism: 2})
	a, b, d, e := fakejm.VertexID(10), fakejm.VertexID(11), fakejm.VertexID(12), fakejm.VertexID(13)
	spec := fakejm.GraphSpec{Vertices: []fakejm.VertexSpec{
		{ID: a, Name: "Source: in", Parallelism: 4, MaxParallelism: 16},
		{ID: b, Name: "map", Inputs: []string{a}, ShipStrategy: "REBALANCE", MaxParallelism: 32},
		{ID: d, Name: "filter", Inputs: []string{a}, Parallelism: 5},
		{ID: e, Name: "Sink: out", Inputs: []string{b, d}, Parallelism: 1, MaxParallelism: 1},
	}}
	check := func(g *flink.JobGraph) {
		t.Helper()
		want := []struct {
			id          string
			par, maxPar int
			inputs      []string
		}{{a, 4, 16, nil}, {b, 2, 32, []string{a}}, {d, 5, 128, []string{a}}, {e, 1, 1, []string{b, d}}}
		if len(g.Vertices) != len(want) {
			t.Fatalf("vertices %+v", g.Vertices)
		}
		for i, w := range want {
			v := g.Vertices[i]
			if v.ID != w.id || v.Parallelism != w.par || v.MaxParallelism != w.maxPar || len(v.Inputs) != len(w.inputs) {
				t.Errorf("vertex %d: %+v, want %+v", i, v, w)
				continue
			}
			for k, in := range w.inputs {
				if v.Inputs[k].ID != in {
					t.Errorf("vertex %d input %d: %+v", i, k, v.Inputs[k])
				}
			}
		}
		if g.Vertices[1].Inputs[0].ShipStrategy != "REBALANCE" {
			t.Errorf("ship strategy %+v", g.Vertices[1].Inputs)
		}
		if v, ok := g.Vertex(d); !ok || v.Name != "filter" {
			t.Errorf("Vertex(%s) = %+v %v", d, v, ok)
		}
	}
	if err := jm.SetJobGraph(job, spec); err != nil {
		t.Fatal(err)
	}
	g, err := c.JobGraph(context.Background(), job)
	if err != nil {
		t.Fatal(err)
	}
	check(g)

	spec.OmitPlan, spec.OmitVertexMaxParallelism = true, true
	if err := jm.SetJobGraph(job, spec); err != nil {
		t.Fatal(err)
	}
	jm.ResetRequests()
	if g, err = c.JobGraph(context.Background(), job); err != nil {
		t.Fatal(err)
	}
	check(g)
	if n, p, v := len(jm.RequestsTo(fakejm.RouteJob)), len(jm.RequestsTo(fakejm.RouteJobPlan)), len(jm.RequestsTo(fakejm.RouteVertex)); n != 1 || p != 1 || v != 4 {
		t.Errorf("calls: job %d, plan %d, vertex %d; want 1, 1, 4", n, p, v)
	}

	if _, err := c.JobGraph(context.Background(), "0123456789abcdef0123456789abcdef"); !flink.IsNotFound(err) {
		t.Errorf("unknown job: %v", err)
	}
	if _, err := c.JobVertex(context.Background(), job, "nope"); !flink.IsBadRequest(err) {
		t.Errorf("bad vertex id: %v", err)
	}
	if _, err := c.JobVertex(context.Background(), job, fakejm.VertexID(99)); !flink.IsNotFound(err) {
		t.Errorf("unknown vertex: %v", err)
	}
}

// The plan arrives as an object (RawJson, @JsonRawValue) or, leniently, as
// a string holding one.
func TestParsePlan(t *testing.T) {
	obj := `{"jid":"j","nodes":[{"id":"b","parallelism":2,"inputs":[{"num":0,"id":"a","ship_strategy":"HASH","exchange":"pipelined_bounded"}]},{"id":"a","parallelism":1}]}`
	quoted, _ := json.Marshal(obj)
	for _, raw := range []string{obj, string(quoted)} {
		p, err := flink.ParsePlan(json.RawMessage(raw))
		if err != nil || p == nil || len(p.Nodes) != 2 || p.Nodes[0].Inputs[0].ID != "a" || p.Nodes[0].Inputs[0].ShipStrategy != "HASH" {
			t.Errorf("%s: %+v %v", raw, p, err)
		}
	}
	for _, raw := range []string{``, `null`, `""`} {
		if p, err := flink.ParsePlan(json.RawMessage(raw)); p != nil || err != nil {
			t.Errorf("%q: %+v %v", raw, p, err)
		}
	}
	if _, err := flink.ParsePlan(json.RawMessage(`[1]`)); err == nil {
		t.Error("array plan accepted")
	}
}
