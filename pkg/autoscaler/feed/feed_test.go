package feed

import (
	"math"
	"testing"
	"time"

	"github.com/flinkops/flink-operator/pkg/autoscaler/collect"
	"github.com/flinkops/flink-operator/pkg/autoscaler/decide"
	"github.com/flinkops/flink-operator/pkg/autoscaler/options"
)

var t0 = time.Date(2026, 3, 2, 12, 0, 0, 0, time.UTC)

func TestConvert(t *testing.T) {
	g := collect.JobGraph{JobID: "j", RunningSince: t0, Vertices: []collect.Vertex{
		{ID: "src", Parallelism: 2, MaxParallelism: 128, Source: true},
		{ID: "sink", Parallelism: 4, MaxParallelism: 128, Inputs: []collect.Input{{ID: "src", ShipStrategy: "FORWARD"}}},
	}}
	history := []collect.Sample{{Time: t0, Vertices: []collect.VertexMetrics{
		{VertexID: "src", BusyTimeMsPerSecond: 250, NumRecordsInPerSecond: 0, NumRecordsOutPerSecond: 1000, PendingRecords: -1, SourceIncomingRate: 1000},
		{VertexID: "sink", BusyTimeMsPerSecond: 900, BackPressuredTimeMsPerSecond: 0, NumRecordsInPerSecond: 1000, PendingRecords: -1},
	}}}
	eg := Graph(g)
	if len(eg) != 2 || !eg[0].IsSource() || eg[1].Inputs[0].From != "src" || eg[1].MaxParallelism != 128 {
		t.Errorf("graph %+v", eg)
	}
	s := Samples(g, history)
	src, sink := s[0].Vertices["src"], s[0].Vertices["sink"]
	if src.RecordsInPerSecond != 1000 {
		t.Errorf("source records in %v, want its incoming rate 1000", src.RecordsInPerSecond)
	}
	if !math.IsNaN(src.PendingRecords) || !math.IsNaN(sink.PendingRecords) {
		t.Errorf("unknown pending records %v / %v, want NaN", src.PendingRecords, sink.PendingRecords)
	}
	if sink.RecordsInPerSecond != 1000 || sink.BusyMsPerSecond != 900 {
		t.Errorf("sink %+v", sink)
	}
	if !math.IsNaN(s[0].Job.GCPressure) {
		t.Errorf("GC pressure %v, want unknown", s[0].Job.GCPressure)
	}
	history[0].Vertices[0].PendingRecords = 5000
	if got := Samples(g, history)[0].Vertices["src"].PendingRecords; got != 5000 {
		t.Errorf("pending records %v, want 5000", got)
	}
}

// TestDecidesOnCollectedHistory: a history as the collector keeps it (trimmed
// to the window, collections a little over a minute apart) leads to a
// decision.
func TestDecidesOnCollectedHistory(t *testing.T) {
	g := collect.JobGraph{JobID: "j", RunningSince: t0, Vertices: []collect.Vertex{
		{ID: "src", Parallelism: 1, MaxParallelism: 128, Source: true},
	}}
	o := options.Defaults()
	o.Enabled = true
	var history []collect.Sample
	for at := t0; at.Before(t0.Add(time.Hour)); at = at.Add(61 * time.Second) {
		history = append(history, collect.Sample{Time: at, Vertices: []collect.VertexMetrics{
			// Reading flat out at 1000/s while the backlog grows by 500/s.
			{VertexID: "src", BusyTimeMsPerSecond: 1000, SourceIncomingRate: 1000, PendingRecords: 500 * at.Sub(t0).Seconds()},
		}})
		for history[0].Time.Before(at.Add(-o.MetricsWindow)) {
			history = history[1:]
		}
		d, err := decide.Decide(decide.Input{Graph: Graph(g), Samples: Samples(g, history), RunningSince: g.RunningSince, Now: at, Options: o})
		if err != nil {
			t.Fatal(err)
		}
		if d.Scale {
			if d.Overrides["src"] < 2 {
				t.Errorf("scaled to %v", d.Overrides)
			}
			return
		}
	}
	t.Fatal("no decision in an hour of an overloaded source")
}

// TestHashEdgeAlignsToKeyGroups: a vertex behind a HASH (keyBy) edge has
// its parallelism aligned to its key groups, as upstream aligns it; behind
// a FORWARD or REBALANCE edge it is not. The job of decide's key-group
// test: 1100/s arrive, the sink's 4 subtasks take 1000/s (250/s each),
// 100/s pile up at the source; the sink needs 8 subtasks, 10 when they
// must divide its 100 key groups.
func TestHashEdgeAlignsToKeyGroups(t *testing.T) {
	for strategy, want := range map[string]int{"HASH": 10, "hash": 10, "FORWARD": 8, "REBALANCE": 8, "": 8} {
		g := collect.JobGraph{JobID: "j", RunningSince: t0, Vertices: []collect.Vertex{
			{ID: "src", Parallelism: 2, MaxParallelism: 720, Source: true},
			{ID: "agg", Parallelism: 4, MaxParallelism: 100, Inputs: []collect.Input{{ID: "src", ShipStrategy: strategy}}},
		}}
		if got := Graph(g)[1].Inputs[0].Hash; got != (want == 10) {
			t.Errorf("%q: hash edge %v", strategy, got)
		}
		now := t0.Add(25 * time.Minute)
		var history []collect.Sample
		for at := t0; !at.After(now); at = at.Add(time.Minute) {
			lag := 150000 + 100*at.Sub(now).Seconds()
			history = append(history, collect.Sample{Time: at, Vertices: []collect.VertexMetrics{
				{VertexID: "src", BusyTimeMsPerSecond: 250, BackPressuredTimeMsPerSecond: 750, NumRecordsOutPerSecond: 1000, SourceIncomingRate: 1000, PendingRecords: lag},
				{VertexID: "agg", BusyTimeMsPerSecond: 1000, NumRecordsInPerSecond: 1000, NumRecordsOutPerSecond: 1000, PendingRecords: -1},
			}})
		}
		o := options.Defaults()
		o.Enabled = true
		d, err := decide.Decide(decide.Input{Graph: Graph(g), Samples: Samples(g, history), RunningSince: t0, Now: now, Options: o})
		if err != nil {
			t.Fatal(err)
		}
		if !d.Scale || d.Overrides["agg"] != want {
			t.Errorf("%q: scale %v, overrides %v (%s), want agg %d", strategy, d.Scale, d.Overrides, d.Reason, want)
		}
	}
}
