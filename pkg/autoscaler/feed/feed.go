// Package feed turns what pkg/autoscaler/collect gathers from Flink into
// what pkg/autoscaler/evaluate and decide read, so neither side depends on
// the other's types.
//
// Edges keep the plan's ship strategy: an input whose ship strategy is
// "HASH" (a keyBy; collect.Input.Hash) becomes a hash edge, and a vertex with
// a hash input has its parallelism aligned to its key groups (its max
// parallelism), as upstream's JobVertexScaler aligns a vertex whose input
// ship strategies contain HASH. FORWARD, REBALANCE, RESCALE, BROADCAST and
// the others are not aligned.
//
// The collector does not (yet) report two things the core can use: a
// source's partition count and slot sharing groups. Without them no source
// is aligned to its partitions, and the quota check treats all vertices as
// one slot sharing group. Nor does it collect JobManager or TaskManager
// metrics, so GC pressure and heap usage are unknown (NaN) and never block a
// rescale.
package feed

import (
	"math"

	"github.com/flinkops/flink-operator/pkg/autoscaler/collect"
	"github.com/flinkops/flink-operator/pkg/autoscaler/evaluate"
)

// Graph converts the collector's job graph. A vertex without a max
// parallelism keeps 0 (no key-group bound); an input is a hash edge when
// its ship strategy is HASH.
func Graph(g collect.JobGraph) evaluate.Graph {
	out := make(evaluate.Graph, 0, len(g.Vertices))
	for _, v := range g.Vertices {
		ev := evaluate.Vertex{ID: v.ID, Parallelism: v.Parallelism, MaxParallelism: v.MaxParallelism}
		for _, in := range v.Inputs {
			ev.Inputs = append(ev.Inputs, evaluate.Edge{From: in.ID, Hash: in.Hash()})
		}
		out = append(out, ev)
	}
	return out
}

// Samples converts the collector's history. A source's records in are its
// incoming rate (its task in-rate is usually 0); pending records the source
// does not report become NaN.
func Samples(g collect.JobGraph, history []collect.Sample) []evaluate.Sample {
	source := map[string]bool{}
	for _, v := range g.Vertices {
		source[v.ID] = v.Source
	}
	out := make([]evaluate.Sample, 0, len(history))
	for _, s := range history {
		es := evaluate.Sample{Time: s.Time, Vertices: make(map[string]evaluate.VertexSample, len(s.Vertices)),
			Job: evaluate.JobSample{GCPressure: math.NaN(), HeapMaxUsageRatio: math.NaN()}}
		for _, m := range s.Vertices {
			vs := evaluate.VertexSample{
				BusyMsPerSecond:          m.BusyTimeMsPerSecond,
				BackPressuredMsPerSecond: m.BackPressuredTimeMsPerSecond,
				RecordsInPerSecond:       m.NumRecordsInPerSecond,
				RecordsOutPerSecond:      m.NumRecordsOutPerSecond,
				PendingRecords:           math.NaN(),
			}
			if source[m.VertexID] {
				vs.RecordsInPerSecond = m.SourceIncomingRate
				if m.HasPendingRecords() {
					vs.PendingRecords = m.PendingRecords
				}
			}
			es.Vertices[m.VertexID] = vs
		}
		out = append(out, es)
	}
	return out
}
