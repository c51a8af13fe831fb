package evaluate

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/flinkops/flink-operator/pkg/autoscaler/options"
)

// Metrics are one vertex's evaluated figures over the metrics window.
type Metrics struct {
	ID             string
	Parallelism    int
	MaxParallelism int
	Source         bool
	// AlignTo is the number the parallelism should divide: source
	// partitions for a source that knows them, key groups for a vertex
	// behind a hash edge, 0 when no alignment applies.
	AlignTo int

	// TrueProcessingRate is the rate the vertex could process at its
	// current parallelism if never idle: records in / busy fraction
	// (+Inf while nothing arrives, NaN when unknown).
	TrueProcessingRate float64
	// TPRStdErr is the standard error of the per-sample true processing
	// rates: how far noise alone moves the window's average.
	TPRStdErr float64
	// TargetRate is the average rate at which data arrives for the vertex.
	TargetRate float64
	// CatchUpRate is the extra rate needed to drain the current backlog
	// within catch-up.duration.
	CatchUpRate float64
	// Busy is the average busy fraction (0..1) the metrics report.
	Busy float64
	// Lag is a source's latest pending records (0 elsewhere).
	Lag float64

	// ScaleUpThreshold and ScaleDownThreshold are the processing rates
	// between which the vertex is left alone: below the first it is
	// overloaded, above the second underused.
	ScaleUpThreshold, ScaleDownThreshold float64
}

// Utilization is the share of the vertex's capacity the arriving data
// needs: target rate / true processing rate.
func (m Metrics) Utilization() float64 {
	if math.IsInf(m.TrueProcessingRate, 1) {
		return 0
	}
	return m.TargetRate / m.TrueProcessingRate
}

// OutsideBounds says whether the capacity is below the scale-up or above
// the scale-down threshold.
func (m Metrics) OutsideBounds() bool {
	return m.TrueProcessingRate < m.ScaleUpThreshold || m.TrueProcessingRate > m.ScaleDownThreshold
}

// Evaluation is the outcome for a whole job.
type Evaluation struct {
	Order    []string // vertex ids, sources first, each after its inputs
	Vertices map[string]Metrics
	// ProcessingBacklog is true when some source's backlog is more than
	// backlog-processing.lag-threshold of its input: the job is catching up,
	// so (as upstream) the band widens to [0, 1]. No vertex then counts as
	// underused, and no restart happens for a scale-down alone, since it
	// would only add backlog.
	ProcessingBacklog bool
	// LoadChanging names a source whose arrival rate moved by more than a
	// fifth between the two halves of the window's latest third ("" when
	// none): the load is still stepping, and a decision now would size for a
	// level it is leaving.
	LoadChanging string
	// GCPressure and HeapUsage are the latest GC pressure and the window's
	// average heap usage ratio (NaN when unknown).
	GCPressure, HeapUsage float64
}

// Readiness is whether there are enough samples to decide on.
type Readiness struct {
	Ready bool
	// Until is when the window will be full (zero when Ready).
	Until time.Time
	// Stabilizing is true while samples are still ignored after the
	// (re)start.
	Stabilizing bool
}

// minCoverage is the share of metrics.window the usable samples must span
// before a decision: a collector that trims its history to the window (as
// pkg/autoscaler/collect does) never holds a sample exactly one window old,
// since collections are not exactly periodic.
const minCoverage = 0.9

// Window keeps the samples a decision may use: those taken after the job
// has been running for stabilization.interval (a job restoring state or
// warming up reports rates that say nothing about its capacity), and of
// those only the last metrics.window. It is Ready once the usable samples
// span 90 % of metrics.window. Upstream waits until the first usable sample
// is a full window old; the 10 % leeway is for a collector that trims its
// history to the window, and an operator restart that lost the history
// still waits for a nearly full window.
func Window(samples []Sample, runningSince, now time.Time, o options.Options, mode Mode) ([]Sample, Readiness) {
	span := time.Duration(minCoverage * float64(o.MetricsWindow))
	if mode == Upstream {
		span = o.MetricsWindow
	}
	stable := runningSince.Add(o.StabilizationInterval)
	if now.Before(stable) {
		return nil, Readiness{Until: stable.Add(span), Stabilizing: true}
	}
	var usable []Sample
	for _, s := range samples {
		if !s.Time.Before(stable) && !s.Time.After(now) {
			usable = append(usable, s)
		}
	}
	if len(usable) == 0 {
		return nil, Readiness{Until: now.Add(span)}
	}
	if full := usable[0].Time.Add(span); now.Before(full) {
		return usable, Readiness{Until: full}
	}
	cut := now.Add(-o.MetricsWindow)
	var window []Sample
	for _, s := range usable {
		if !s.Time.Before(cut) {
			window = append(window, s)
		}
	}
	return window, Readiness{Ready: len(window) >= 2}
}

// Mode selects our rules or upstream's where they differ.
type Mode int

const (
	// Ours applies this package's deliberate differences.
	Ours Mode = iota
	// Upstream evaluates as upstream 1.15.0 does, as a baseline the
	// simulation compares against; not meant for production use.
	Upstream
)

// Evaluate computes every vertex's metrics from a window of samples (see
// Window). restartTime is the restart time the decision assumes (configured
// or observed, see package decide).
func Evaluate(g Graph, window []Sample, o options.Options, restartTime time.Duration, mode Mode) (Evaluation, error) {
	order, err := topologicalOrder(g)
	if err != nil {
		return Evaluation{}, err
	}
	if len(window) == 0 {
		return Evaluation{}, fmt.Errorf("no metric samples")
	}
	byID := map[string]Vertex{}
	for _, v := range g {
		byID[v.ID] = v
	}
	ev := Evaluation{Order: order, Vertices: map[string]Metrics{}}
	last := window[len(window)-1]
	ev.GCPressure = last.Job.GCPressure
	ev.HeapUsage = average(window, func(s Sample) float64 { return s.Job.HeapMaxUsageRatio })
	catchUpSec := o.CatchUpDuration.Seconds()

	for _, id := range order {
		v := byID[id]
		m := Metrics{ID: id, Parallelism: v.Parallelism, MaxParallelism: v.MaxParallelism, Source: v.IsSource()}
		m.AlignTo = alignment(v)
		in := vertexAverage(window, id, func(s VertexSample) float64 { return s.RecordsInPerSecond })
		m.Busy = vertexAverage(window, id, func(s VertexSample) float64 { return s.BusyMsPerSecond }) / 1000
		m.TrueProcessingRate, m.TPRStdErr = trueProcessingRate(window, id, in, m.Busy, o)

		if v.IsSource() {
			// Data arrives at what the source reads plus what piles up in
			// the external system meanwhile.
			// Deliberate difference: the larger of the whole window's rate
			// and its latest third's. Upstream averages the whole window, so
			// the first decision after a step in load sizes for a mix of old
			// and new load and a second rescale follows; the recent rate
			// sizes a scale-up for the new load at once, and a scale-down
			// for the higher of the two (a damped scale-down). A third of a
			// 15-minute window still averages 5 samples, enough to keep
			// ±10 % noise from triggering anything.
			m.TargetRate = math.Max(0, in+lagGrowth(window, id))
			if recent := window[len(window)-len(window)/3:]; mode == Ours && len(window)/3 >= 3 {
				recentIn := vertexAverage(recent, id, func(s VertexSample) float64 { return s.RecordsInPerSecond })
				m.TargetRate = math.Max(m.TargetRate, recentIn+lagGrowth(recent, id))
				if ev.LoadChanging == "" && changing(window, recent, id) {
					ev.LoadChanging = id
				}
			}
			m.Lag = latest(window, id, func(s VertexSample) float64 { return s.PendingRecords })
			if math.IsNaN(m.Lag) {
				m.Lag = 0
			}
			if catchUpSec > 0 {
				m.CatchUpRate = m.Lag / catchUpSec
			}
			if in > 0 && m.Lag/in > o.BacklogLagThreshold.Seconds() {
				ev.ProcessingBacklog = true
			}
		} else {
			for _, e := range v.Inputs {
				ratio := edgeRatio(window, e.From, v)
				from := ev.Vertices[e.From]
				m.TargetRate += from.TargetRate * ratio
				m.CatchUpRate += from.CatchUpRate * ratio
			}
		}
		ev.Vertices[id] = m
	}
	// Thresholds need ProcessingBacklog, known only once every source is in.
	lower, upper := o.UtilizationBounds()
	if ev.ProcessingBacklog {
		lower, upper = 0, 1
	}
	for id, m := range ev.Vertices {
		m.ScaleUpThreshold = TargetCapacity(m, o, upper, 0)
		m.ScaleDownThreshold = TargetCapacity(m, o, lower, restartTime)
		ev.Vertices[id] = m
	}
	return ev, nil
}

// TargetCapacity is the processing rate a vertex needs to run at
// utilization while also draining its backlog within catch-up.duration and,
// when restartTime > 0, the backlog a restart of that length leaves behind
// (upstream's AutoScalerUtils.getTargetProcessingCapacity).
func TargetCapacity(m Metrics, o options.Options, utilization float64, restartTime time.Duration) float64 {
	if math.IsNaN(m.TargetRate) || math.IsNaN(m.CatchUpRate) {
		return math.NaN()
	}
	utilization = math.Min(1, math.Max(0, utilization))
	if utilization == 0 {
		return math.Inf(1)
	}
	restartCatchUp := 0.0
	if catchUp := o.CatchUpDuration.Seconds(); catchUp > 0 {
		restartCatchUp = m.TargetRate * restartTime.Seconds() / catchUp
	}
	return math.Round(m.CatchUpRate + restartCatchUp + m.TargetRate/utilization)
}

// trueProcessingRate is records in / busy fraction over the window; when
// observed-true-processing-rate applies (a source with enough backlog to
// run flat out), the observed rate replaces it if the busy-time figure is
// more than switch-threshold higher, as in upstream.
func trueProcessingRate(window []Sample, id string, in, busy float64, o options.Options) (rate, stderr float64) {
	switch {
	case math.IsNaN(in) || math.IsNaN(busy):
		rate = math.NaN()
	case in == 0 || busy == 0:
		rate = math.Inf(1) // nothing flows: capacity unknown, assume plenty
	default:
		rate = in / busy
	}
	// Per-sample rates give the noise band the effectiveness check needs.
	var rates []float64
	for _, s := range window {
		vs, ok := s.Vertices[id]
		if ok && vs.BusyMsPerSecond > 0 && vs.RecordsInPerSecond > 0 {
			rates = append(rates, vs.RecordsInPerSecond/(vs.BusyMsPerSecond/1000))
		}
	}
	stderr = standardError(rates)

	observed, n := 0.0, 0
	for _, s := range window {
		vs, ok := s.Vertices[id]
		if !ok || math.IsNaN(vs.PendingRecords) || vs.RecordsInPerSecond <= 0 {
			continue
		}
		if vs.PendingRecords/vs.RecordsInPerSecond <= o.ObservedTPRLagThreshold.Seconds() {
			continue
		}
		free := 1.0
		if bp := vs.BackPressuredMsPerSecond; !math.IsNaN(bp) && bp > 0 && bp < 1000 {
			free = 1 - bp/1000
		}
		observed += vs.RecordsInPerSecond / free
		n++
	}
	if n == 0 || n < o.ObservedTPRMinObservations {
		return rate, stderr
	}
	observed /= float64(n)
	if math.IsInf(rate, 0) || math.IsNaN(rate) || rate > observed*(1+o.ObservedTPRSwitchThreshold) {
		return observed, stderr
	}
	return rate, stderr
}

// changing compares a source's arrival rate (records read plus backlog
// growth) over the first and the second half of the window's latest third.
// It counts as changing when the two differ by more than a fifth and by more
// than four standard errors of the read rate's noise, so a noisy source is
// not mistaken for a changing one (and cannot hold decisions back for ever).
// The noise is estimated from the median of successive differences over the
// whole window, which a step in load barely moves.
func changing(window, recent []Sample, id string) bool {
	half := len(recent) / 2
	first, second := recent[:half+1], recent[half:]
	arrival := func(part []Sample) float64 {
		return vertexAverage(part, id, func(s VertexSample) float64 { return s.RecordsInPerSecond }) + lagGrowth(part, id)
	}
	a, b := arrival(first), arrival(second)
	if !(a > 0) || !(b > 0) {
		return false
	}
	diff := math.Abs(b - a)
	if diff <= 0.2*math.Min(a, b) {
		return false
	}
	var steps []float64
	for n := 1; n < len(window); n++ {
		x, y := window[n-1].Vertices[id].RecordsInPerSecond, window[n].Vertices[id].RecordsInPerSecond
		if !math.IsNaN(x) && !math.IsNaN(y) {
			steps = append(steps, math.Abs(y-x))
		}
	}
	if len(steps) == 0 {
		return true
	}
	slices.Sort(steps)
	// For independent noise of deviation σ, |x - y| has median ≈ 0.95σ.
	sd := steps[len(steps)/2] / 0.95
	return diff > 4*sd*math.Sqrt(1/float64(len(first))+1/float64(len(second)))
}

// edgeRatio is how many records reach `to` over the edge per record `from`
// takes in. With a single input, `to`'s own input rate is exact; with
// several, `from`'s output rate stands for the edge.
func edgeRatio(window []Sample, from string, to Vertex) float64 {
	in := vertexAverage(window, from, func(s VertexSample) float64 { return s.RecordsInPerSecond })
	if !(in > 0) {
		return 0 // nothing flows in: a ratio would be noise
	}
	var out float64
	if len(to.Inputs) == 1 {
		out = vertexAverage(window, to.ID, func(s VertexSample) float64 { return s.RecordsInPerSecond })
	} else {
		out = vertexAverage(window, from, func(s VertexSample) float64 { return s.RecordsOutPerSecond })
	}
	if !(out > 0) {
		return 0
	}
	return out / in
}

// lagGrowth is the rate at which a source's backlog grew over the window
// (records per second, negative while draining).
func lagGrowth(window []Sample, id string) float64 {
	var first, last *Sample
	for n := range window {
		vs, ok := window[n].Vertices[id]
		if !ok || math.IsNaN(vs.PendingRecords) {
			continue
		}
		if first == nil {
			first = &window[n]
		}
		last = &window[n]
	}
	if first == nil || first == last {
		return 0
	}
	secs := last.Time.Sub(first.Time).Seconds()
	return (last.Vertices[id].PendingRecords - first.Vertices[id].PendingRecords) / secs
}

func alignment(v Vertex) int {
	if v.IsSource() && v.SourcePartitions > 0 {
		return v.SourcePartitions
	}
	for _, e := range v.Inputs {
		if e.Hash {
			return v.MaxParallelism
		}
	}
	return 0
}

func vertexAverage(window []Sample, id string, f func(VertexSample) float64) float64 {
	return average(window, func(s Sample) float64 {
		vs, ok := s.Vertices[id]
		if !ok {
			return math.NaN()
		}
		return f(vs)
	})
}

// average skips NaN; NaN when nothing is left.
func average(window []Sample, f func(Sample) float64) float64 {
	sum, n := 0.0, 0
	for _, s := range window {
		if x := f(s); !math.IsNaN(x) && !math.IsInf(x, 0) {
			sum += x
			n++
		}
	}
	if n == 0 {
		return math.NaN()
	}
	return sum / float64(n)
}

func latest(window []Sample, id string, f func(VertexSample) float64) float64 {
	for n := len(window) - 1; n >= 0; n-- {
		if vs, ok := window[n].Vertices[id]; ok && !math.IsNaN(f(vs)) {
			return f(vs)
		}
	}
	return math.NaN()
}

func standardError(xs []float64) float64 {
	if len(xs) < 2 {
		return math.Inf(1) // one sample says nothing about noise
	}
	mean := 0.0
	for _, x := range xs {
		mean += x
	}
	mean /= float64(len(xs))
	ss := 0.0
	for _, x := range xs {
		ss += (x - mean) * (x - mean)
	}
	return math.Sqrt(ss/float64(len(xs)-1)) / math.Sqrt(float64(len(xs)))
}

// topologicalOrder lists vertices with every vertex after its inputs
// (Kahn's algorithm, ties in graph order so the result is deterministic).
func topologicalOrder(g Graph) ([]string, error) {
	indegree := map[string]int{}
	downstream := map[string][]string{}
	for _, v := range g {
		if _, dup := indegree[v.ID]; dup {
			return nil, fmt.Errorf("vertex %s listed twice", v.ID)
		}
		indegree[v.ID] = len(v.Inputs)
	}
	for _, v := range g {
		for _, e := range v.Inputs {
			if _, ok := indegree[e.From]; !ok {
				return nil, fmt.Errorf("vertex %s reads from unknown vertex %s", v.ID, e.From)
			}
			downstream[e.From] = append(downstream[e.From], v.ID)
		}
	}
	var order, ready []string
	for _, v := range g {
		if indegree[v.ID] == 0 {
			ready = append(ready, v.ID)
		}
	}
	for len(ready) > 0 {
		id := ready[0]
		ready = ready[1:]
		order = append(order, id)
		for _, d := range downstream[id] {
			if indegree[d]--; indegree[d] == 0 {
				ready = append(ready, d)
			}
		}
	}
	if len(order) != len(g) {
		return nil, fmt.Errorf("job graph has a cycle")
	}
	return order, nil
}
