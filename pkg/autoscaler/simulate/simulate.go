// Package simulate drives the autoscaler (packages evaluate and decide) with
// a synthetic job, to measure how it behaves over hours of simulated time in
// milliseconds of real time: how many decisions a step in load takes, whether
// noise or a short dip causes rescaling.
//
// The job is a fluid model. Each vertex processes at most parallelism ×
// capacity-per-subtask records per second; the job as a whole moves at the
// pace of its slowest vertex (back pressure), the source's unread records
// pile up as its backlog, and a rescale stops everything for the restart
// delay while data keeps arriving. Metrics are what Flink would report for
// that state, each multiplied by 1 ± noise drawn from a seeded generator, so
// a run is reproducible.
package simulate

import (
	"fmt"
	"math"
	"math/rand"
	"time"

	"github.com/flinkops/flink-operator/pkg/autoscaler/decide"
	"github.com/flinkops/flink-operator/pkg/autoscaler/evaluate"
	"github.com/flinkops/flink-operator/pkg/autoscaler/options"
)

// VertexSpec is one vertex of the synthetic job.
type VertexSpec struct {
	ID string
	// CapacityPerSubtask is the records per second one subtask processes
	// when never idle. Capacity scales linearly with parallelism.
	CapacityPerSubtask float64
	// Selectivity is records out per record in (1 when zero).
	Selectivity      float64
	Parallelism      int // at the start
	MaxParallelism   int
	SourcePartitions int
	Inputs           []evaluate.Edge // a vertex without inputs is a source
}

// Job is a synthetic job and how it is run.
type Job struct {
	Vertices []VertexSpec
	// Load is the records per second arriving at every source, at a time
	// since the start of the run.
	Load         func(t time.Duration) float64
	RestartDelay time.Duration
	// Noise is the relative amplitude of metric noise (0.1 = ±10 %).
	Noise float64
	Seed  int64
	// Step is the metric sampling interval and the time between decisions
	// (the operator's reconcile interval); 1 minute when zero.
	Step    time.Duration
	Options options.Options
	// Upstream runs the decisions as upstream 1.15.0 would (decide.Input's
	// Upstream), for comparison.
	Upstream bool
}

// Rescale is one applied decision.
type Rescale struct {
	At        time.Duration
	Overrides map[string]int
	Reason    string
}

// Point is the job's state at one step.
type Point struct {
	At          time.Duration
	Parallelism map[string]int
	Backlog     float64
	Running     bool
}

// Result is a run's outcome.
type Result struct {
	Rescales []Rescale
	Trace    []Point
	Final    map[string]int // parallelism at the end
}

// RescalesBetween counts rescales in [from, to).
func (r Result) RescalesBetween(from, to time.Duration) int {
	n := 0
	for _, s := range r.Rescales {
		if s.At >= from && s.At < to {
			n++
		}
	}
	return n
}

// start is the simulated wall-clock origin; any fixed time works.
var start = time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)

// Run simulates the job for the given duration.
func Run(job Job, duration time.Duration) (Result, error) {
	step := job.Step
	if step == 0 {
		step = time.Minute
	}
	rng := rand.New(rand.NewSource(job.Seed))
	noisy := func(x float64) float64 {
		if job.Noise == 0 {
			return x
		}
		return x * (1 + job.Noise*(2*rng.Float64()-1))
	}
	parallelism := map[string]int{}
	for _, v := range job.Vertices {
		parallelism[v.ID] = v.Parallelism
	}
	pace, err := paceFactors(job.Vertices)
	if err != nil {
		return Result{}, err
	}

	var (
		res          Result
		backlog      float64
		samples      []evaluate.Sample
		state        decide.State
		runningSince               = start
		restartUntil time.Duration = -1
		keep                       = job.Options.MetricsWindow + job.Options.StabilizationInterval + step
	)
	for t := time.Duration(0); t < duration; t += step {
		now := start.Add(t)
		arrival := job.Load(t)
		running := t >= restartUntil
		if !running {
			backlog += arrival * step.Seconds()
			res.Trace = append(res.Trace, Point{At: t, Parallelism: copyMap(parallelism), Backlog: backlog})
			continue
		}
		// Source records per second the job can take: the slowest vertex
		// sets the pace for all.
		limit := math.Inf(1)
		for _, v := range job.Vertices {
			limit = math.Min(limit, float64(parallelism[v.ID])*v.CapacityPerSubtask/pace[v.ID])
		}
		taken := math.Min(arrival+backlog/step.Seconds(), limit)
		backlog = math.Max(0, backlog+(arrival-taken)*step.Seconds())

		s := evaluate.Sample{Time: now, Vertices: map[string]evaluate.VertexSample{},
			Job: evaluate.JobSample{GCPressure: math.NaN(), HeapMaxUsageRatio: math.NaN()}}
		for _, v := range job.Vertices {
			in := taken * pace[v.ID]
			capacity := float64(parallelism[v.ID]) * v.CapacityPerSubtask
			busy := math.Min(1, in/capacity)
			vs := evaluate.VertexSample{
				BusyMsPerSecond:     noisy(1000 * busy),
				RecordsInPerSecond:  noisy(in),
				RecordsOutPerSecond: noisy(in * selectivity(v)),
				PendingRecords:      math.NaN(),
			}
			if len(v.Inputs) == 0 {
				vs.PendingRecords = backlog
				if taken >= limit && capacity/pace[v.ID] > limit {
					vs.BackPressuredMsPerSecond = 1000 * (1 - busy) // held back downstream
				}
			}
			s.Vertices[v.ID] = vs
		}
		samples = append(samples, s)
		for len(samples) > 0 && now.Sub(samples[0].Time) > keep {
			samples = samples[1:]
		}

		graph := graphOf(job.Vertices, parallelism)
		state = decide.RecordRestart(state, graph, runningSince)
		d, err := decide.Decide(decide.Input{Graph: graph, Samples: samples, RunningSince: runningSince,
			Now: now, Options: job.Options, State: state, Upstream: job.Upstream})
		if err != nil {
			return Result{}, fmt.Errorf("at %s: %w", t, err)
		}
		state = d.State
		res.Trace = append(res.Trace, Point{At: t, Parallelism: copyMap(parallelism), Backlog: backlog, Running: true})
		if d.Scale {
			res.Rescales = append(res.Rescales, Rescale{At: t, Overrides: copyMap(d.Overrides), Reason: d.Reason})
			for id, p := range d.Overrides {
				parallelism[id] = p
			}
			restartUntil = t + step + job.RestartDelay
			runningSince = start.Add(restartUntil)
			samples = nil // a restarted job's metrics start afresh
		}
	}
	res.Final = copyMap(parallelism)
	return res, nil
}

// Utilization is the share of a vertex's capacity that a steady load of
// `load` records per second at the sources needs at the given parallelisms.
func Utilization(vertices []VertexSpec, parallelism map[string]int, load float64) (map[string]float64, error) {
	pace, err := paceFactors(vertices)
	if err != nil {
		return nil, err
	}
	out := map[string]float64{}
	for _, v := range vertices {
		out[v.ID] = load * pace[v.ID] / (float64(parallelism[v.ID]) * v.CapacityPerSubtask)
	}
	return out, nil
}

// paceFactors are records reaching each vertex per source record: the
// product of selectivities along the way, summed over paths.
func paceFactors(vs []VertexSpec) (map[string]float64, error) {
	g := graphOf(vs, nil)
	byID := map[string]VertexSpec{}
	for _, v := range vs {
		byID[v.ID] = v
	}
	ev, err := order(g)
	if err != nil {
		return nil, err
	}
	pace := map[string]float64{}
	for _, id := range ev {
		v := byID[id]
		if len(v.Inputs) == 0 {
			pace[id] = 1
			continue
		}
		for _, e := range v.Inputs {
			pace[id] += pace[e.From] * selectivity(byID[e.From])
		}
	}
	return pace, nil
}

// order lists vertices after their inputs (the model needs it before any
// metrics exist, so it cannot ask package evaluate).
func order(g evaluate.Graph) ([]string, error) {
	done := map[string]bool{}
	var out []string
	for len(out) < len(g) {
		progress := false
		for _, v := range g {
			if done[v.ID] {
				continue
			}
			ready := true
			for _, e := range v.Inputs {
				ready = ready && done[e.From]
			}
			if ready {
				done[v.ID], progress = true, true
				out = append(out, v.ID)
			}
		}
		if !progress {
			return nil, fmt.Errorf("job graph has a cycle or an unknown input")
		}
	}
	return out, nil
}

func selectivity(v VertexSpec) float64 {
	if v.Selectivity == 0 {
		return 1
	}
	return v.Selectivity
}

func graphOf(vs []VertexSpec, parallelism map[string]int) evaluate.Graph {
	g := make(evaluate.Graph, 0, len(vs))
	for _, v := range vs {
		p := v.Parallelism
		if parallelism != nil {
			p = parallelism[v.ID]
		}
		g = append(g, evaluate.Vertex{ID: v.ID, Parallelism: p, MaxParallelism: v.MaxParallelism,
			SourcePartitions: v.SourcePartitions, Inputs: v.Inputs})
	}
	return g
}

func copyMap(m map[string]int) map[string]int {
	out := make(map[string]int, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
