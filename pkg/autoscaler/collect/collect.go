package collect

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/flinkops/flink-operator/pkg/flink"
)

// Client is what the collector needs of a JobManager; *flink.Client has it.
type Client interface {
	Job(ctx context.Context, jobID string) (*flink.JobDetails, error)
	JobGraphFrom(ctx context.Context, d *flink.JobDetails) (*flink.JobGraph, error)
	VertexMetricNames(ctx context.Context, jobID, vertexID string) ([]string, error)
	VertexMetrics(ctx context.Context, jobID, vertexID string, names []string, aggs ...flink.Aggregation) ([]flink.AggregatedMetric, error)
}

var _ Client = (*flink.Client)(nil)

// Aggregator says how a vertex's busy time is aggregated over its subtasks
// (upstream's job.autoscaler.metrics.busy-time.aggregator).
type Aggregator string

// Aggregators.
const (
	AggregatorMax Aggregator = "MAX"
	AggregatorAvg Aggregator = "AVG"
	AggregatorMin Aggregator = "MIN"
)

// Defaults of Options.
const (
	DefaultWindow      = 15 * time.Minute // job.autoscaler.metrics.window
	DefaultMaxSamples  = 256
	DefaultNameRefresh = time.Minute
	DefaultAggregator  = AggregatorMax
)

// Options configure a Collector. Zero values mean the defaults.
type Options struct {
	// Window is the metrics window: samples older than now-Window are
	// dropped at each collection.
	Window time.Duration
	// MaxSamples caps the history (per vertex: every sample holds one
	// entry per vertex); the oldest samples go first.
	MaxSamples int
	// BusyTimeAggregator aggregates busyTimeMsPerSecond over subtasks.
	BusyTimeAggregator Aggregator
	// NameRefresh is how often a source that has not reported
	// pendingRecords yet has its metric names listed again (the Kafka
	// source registers the metric on its first record).
	NameRefresh time.Duration
}

func (o Options) withDefaults() (Options, error) {
	if o.Window <= 0 {
		o.Window = DefaultWindow
	}
	if o.MaxSamples <= 0 {
		o.MaxSamples = DefaultMaxSamples
	}
	if o.NameRefresh <= 0 {
		o.NameRefresh = DefaultNameRefresh
	}
	switch o.BusyTimeAggregator {
	case "":
		o.BusyTimeAggregator = DefaultAggregator
	case AggregatorMax, AggregatorAvg, AggregatorMin:
	default:
		return o, fmt.Errorf("collect: unknown busy time aggregator %q (want MAX, AVG or MIN)", o.BusyTimeAggregator)
	}
	return o, nil
}

// JobGraph is the job's topology as the collector saw it.
type JobGraph struct {
	JobID string
	// RunningSince is when the job last switched to RUNNING.
	RunningSince time.Time
	// Vertices in Flink's (topological) order.
	Vertices []Vertex
}

// Vertex is one job vertex.
type Vertex struct {
	ID             string
	Name           string
	Parallelism    int
	MaxParallelism int     // 0 if Flink reported none
	Inputs         []Input // the edges into this vertex, as the plan lists them
	Source         bool    // no inputs
}

// Input is one edge into a vertex.
type Input struct {
	// ID is the vertex feeding this one.
	ID string
	// ShipStrategy is how records cross the edge, as the plan's
	// ship_strategy names Flink's partitioner: "HASH" (keyBy), "FORWARD",
	// "REBALANCE", "RESCALE", "BROADCAST", "GLOBAL", "SHUFFLE", "CUSTOM";
	// "" when the plan did not say.
	ShipStrategy string
}

// ShipStrategyHash is the ship strategy of a keyBy edge (Flink's
// KeyGroupStreamPartitioner).
const ShipStrategyHash = "HASH"

// Hash reports whether the edge is a keyBy edge, so that the receiving
// vertex's key groups are spread over its subtasks (upstream's
// ShipStrategy.of(...) == HASH: the name compared without case).
func (in Input) Hash() bool {
	return strings.EqualFold(strings.TrimSpace(in.ShipStrategy), ShipStrategyHash)
}

// Sample is one collection: a value set per vertex, in the order of the
// graph's vertices. Samples are never modified after Collect returns them.
type Sample struct {
	Time     time.Time
	Vertices []VertexMetrics
}

// VertexMetrics is one vertex's load at one collection. Rates are per
// second over all subtasks.
type VertexMetrics struct {
	VertexID string
	// BusyTimeMsPerSecond aggregated with Options.BusyTimeAggregator,
	// 0..1000; NaN when Flink could not measure it.
	BusyTimeMsPerSecond float64
	// BackPressuredTimeMsPerSecond is the subtasks' average; 0 when the
	// vertex does not report it.
	BackPressuredTimeMsPerSecond float64
	// NumRecordsInPerSecond and NumRecordsOutPerSecond are the task
	// metrics summed over subtasks (a source's task in-rate is usually 0:
	// see SourceIncomingRate); 0 when not reported.
	NumRecordsInPerSecond  float64
	NumRecordsOutPerSecond float64
	// PendingRecords is a source's backlog (sum over subtasks and over its
	// "<operator>.pendingRecords" metrics), -1 when the source does not
	// report it, and -1 for every non-source vertex.
	PendingRecords float64
	// SourceIncomingRate is a source's rate of records read (task in-rate,
	// else the source operator's in-rate, else its out-rate); 0 for
	// non-sources.
	SourceIncomingRate float64
}

// HasPendingRecords reports whether PendingRecords is known.
func (m VertexMetrics) HasPendingRecords() bool { return m.PendingRecords >= 0 }

// Errors of Collect, to be matched with errors.Is. Flink call failures
// are returned as the client's errors (see flink.IsRetryable and friends).
var (
	// ErrNotRunning: the job is not RUNNING; nothing to measure.
	ErrNotRunning = errors.New("job is not running")
	// ErrNotReady: a running vertex does not report busyTimeMsPerSecond
	// yet (the job is still starting).
	ErrNotReady = errors.New("metrics not ready")
	// ErrTimeWentBackwards: now is before the newest sample.
	ErrTimeWentBackwards = errors.New("collection time before the newest sample")
)

// Collector collects one job's metrics. Its methods are safe for
// concurrent use, but collections of one Collector run one at a time.
type Collector struct {
	client Client
	opts   Options

	mu      sync.Mutex
	state   *jobState // nil until the first successful collection
	history []Sample  // oldest first, at most opts.MaxSamples
	// restored is a history given to Restore, adopted or dropped by the
	// next successful collection.
	restored *restored
}

// restored is a history kept across an operator restart, with the graph
// it was collected on.
type restored struct {
	graph   JobGraph
	samples []Sample
}

// jobState is what a graph build found: the graph, what identifies it,
// and the metric names to request per vertex.
type jobState struct {
	graph       JobGraph
	fingerprint string
	vertices    []vertexState // as graph.Vertices
}

type vertexState struct {
	names       []string // the ?get= list
	pending     []string // "<operator>.pendingRecords" names
	srcIn       []string // "Source__*.numRecordsInPerSecond"
	srcOut      []string // "Source__*.numRecordsOutPerSecond"
	finished    bool
	listedAt    time.Time // last listing of a source's names
	needRefresh bool      // a source without pendingRecords: list again after NameRefresh
}

// New returns a collector for one job reached through client.
func New(client Client, opts Options) (*Collector, error) {
	if client == nil {
		return nil, errors.New("collect: nil client")
	}
	o, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	return &Collector{client: client, opts: o}, nil
}

// Options returns the effective options.
func (c *Collector) Options() Options { return c.opts }

// Graph returns the graph of the last successful collection, if any.
func (c *Collector) Graph() (JobGraph, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.state == nil {
		return JobGraph{}, false
	}
	return c.state.graph, true
}

// Samples returns the history, oldest first. The slice is a copy; the
// samples are shared and must not be modified.
func (c *Collector) Samples() []Sample {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Sample(nil), c.history...)
}

// History returns the graph of the last successful collection and the
// history collected on it, oldest first, taken together (ok false before
// the first successful collection): what the autoscaler ConfigMap keeps so
// that the history survives a restart of the operator (see Restore). The
// slice is a copy; the samples are shared and must not be modified.
func (c *Collector) History() (g JobGraph, samples []Sample, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.state == nil {
		return JobGraph{}, nil, false
	}
	return c.state.graph, append([]Sample(nil), c.history...), true
}

// Reset forgets the graph and the history, and a restored history not yet
// adopted.
func (c *Collector) Reset() {
	c.mu.Lock()
	c.state, c.history, c.restored = nil, nil, nil
	c.mu.Unlock()
}

// Errors of Restore, to be matched with errors.Is.
var (
	// ErrInvalidHistory: the graph or the samples given to Restore are
	// not a history the collector could have kept.
	ErrInvalidHistory = errors.New("invalid history")
	// ErrHasCollected: Restore on a collector that has collected since
	// New or Reset (its own history is newer than a stored one).
	ErrHasCollected = errors.New("the collector has collected already")
)

// Restore gives a new collector the history a previous one kept (as
// History returned it, stored in the autoscaler ConfigMap), so that the
// metrics window need not fill again after a restart of the operator
// (upstream keeps its collectedMetrics in the ConfigMap for this).
//
// The history is checked: g has a job id and vertices with distinct ids
// and a parallelism of at least 1, inputs naming vertices of g; samples
// are in time order (equal times allowed, as Collect allows them), none
// at the zero time, and each has one entry per vertex of g, in g's order.
// Samples older than the newest one minus the window, and beyond
// MaxSamples, are dropped (the oldest first), as Collect trims. Nothing is
// restored from an invalid history (ErrInvalidHistory) or when the
// collector has collected since New or Reset (ErrHasCollected). No
// samples restore nothing.
//
// The restored history is pending: Graph, Samples and History do not show
// it. The next successful Collect keeps it, followed by its own sample and
// trimmed to the window at its time, only where Collect would have kept a
// history of its own: the same job id, the same vertices in the same order
// with the same parallelism (the graph is built again from the JobManager
// first), the job RUNNING since the same time (it has not restarted), and
// the collection not before the newest restored sample (a clock behind
// the previous operator's). Otherwise it is dropped and the history starts
// with the new sample. A collection that fails keeps it pending.
func (c *Collector) Restore(g JobGraph, samples []Sample) error {
	if err := validHistory(g, samples); err != nil {
		return fmt.Errorf("collect: restoring the history of job %s: %w: %w", g.JobID, ErrInvalidHistory, err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.state != nil {
		return fmt.Errorf("collect: restoring the history of job %s: %w", g.JobID, ErrHasCollected)
	}
	if len(samples) == 0 {
		c.restored = nil
		return nil
	}
	// Trim as append would at the newest sample's time.
	cutoff := samples[len(samples)-1].Time.Add(-c.opts.Window)
	drop := 0
	for drop < len(samples) && samples[drop].Time.Before(cutoff) {
		drop++
	}
	drop = max(drop, len(samples)-c.opts.MaxSamples)
	c.restored = &restored{graph: g, samples: append([]Sample(nil), samples[drop:]...)}
	return nil
}

// validHistory checks a history given to Restore.
func validHistory(g JobGraph, samples []Sample) error {
	if g.JobID == "" {
		return errors.New("no job id")
	}
	if len(g.Vertices) == 0 {
		return errors.New("no vertices")
	}
	ids := make(map[string]bool, len(g.Vertices))
	for _, v := range g.Vertices {
		if v.ID == "" || ids[v.ID] {
			return fmt.Errorf("vertex id %q empty or repeated", v.ID)
		}
		if v.Parallelism < 1 {
			return fmt.Errorf("vertex %s has parallelism %d", v.ID, v.Parallelism)
		}
		ids[v.ID] = true
	}
	for _, v := range g.Vertices {
		for _, in := range v.Inputs {
			if !ids[in.ID] {
				return fmt.Errorf("vertex %s has an input from %q, not a vertex of the graph", v.ID, in.ID)
			}
		}
	}
	for i, s := range samples {
		if s.Time.IsZero() {
			return fmt.Errorf("sample %d has no time", i)
		}
		if i > 0 && s.Time.Before(samples[i-1].Time) {
			return fmt.Errorf("sample %d (%s) is before sample %d (%s)", i, s.Time.Format(time.RFC3339Nano), i-1, samples[i-1].Time.Format(time.RFC3339Nano))
		}
		if len(s.Vertices) != len(g.Vertices) {
			return fmt.Errorf("sample %d has %d vertices, the graph %d", i, len(s.Vertices), len(g.Vertices))
		}
		for k, m := range s.Vertices {
			if m.VertexID != g.Vertices[k].ID {
				return fmt.Errorf("sample %d: vertex %d is %q, the graph's %q", i, k, m.VertexID, g.Vertices[k].ID)
			}
		}
	}
	return nil
}

// adopt says whether the restored history r still holds for the graph st
// just built from the job's details, RUNNING since runningSince, at now:
// Collect's rules for keeping a history.
func (r *restored) adopt(st *jobState, runningSince, now time.Time) bool {
	g := st.graph
	if r.graph.JobID != g.JobID || len(r.graph.Vertices) != len(g.Vertices) {
		return false
	}
	for i, v := range g.Vertices {
		if w := r.graph.Vertices[i]; w.ID != v.ID || w.Parallelism != v.Parallelism {
			return false
		}
	}
	return r.graph.RunningSince.Equal(runningSince) &&
		!runningSince.After(r.samples[0].Time) &&
		!now.Before(r.samples[len(r.samples)-1].Time)
}

// Collect takes one sample of job jobID at time now and appends it to the
// history, then drops samples older than now-Window and beyond MaxSamples.
// It rebuilds the graph and restarts the history when the job id, its
// vertices or their parallelism changed, or the job restarted since the
// first sample. A collection that fails adds no sample and keeps the
// history and the graph (it may only have learnt a source's metric names).
func (c *Collector) Collect(ctx context.Context, jobID string, now time.Time) (Sample, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if n := len(c.history); n > 0 && now.Before(c.history[n-1].Time) {
		return Sample{}, fmt.Errorf("collect: %w (%s < %s)", ErrTimeWentBackwards, now.Format(time.RFC3339Nano), c.history[n-1].Time.Format(time.RFC3339Nano))
	}
	d, err := c.client.Job(ctx, jobID)
	if err != nil {
		return Sample{}, fmt.Errorf("collect: job details: %w", err)
	}
	if d.State != flink.JobRunning {
		return Sample{}, fmt.Errorf("collect: job %s is %s: %w", jobID, d.State, ErrNotRunning)
	}

	st, restart := c.state, false
	fp := fingerprint(d)
	if st == nil || st.fingerprint != fp {
		if st, err = c.buildState(ctx, d, fp, now); err != nil {
			return Sample{}, err
		}
		restart = true
	} else {
		st = st.refreshed(d)
	}
	runningSince := time.UnixMilli(d.Timestamps[flink.JobRunning])
	if len(c.history) > 0 && runningSince.After(c.history[0].Time) {
		restart = true // the job restarted since the first sample
	}
	// A restored history is adopted only by the collection that builds the
	// collector's first graph (Restore requires no graph yet).
	var adopted []Sample
	if c.restored != nil && c.state == nil && c.restored.adopt(st, runningSince, now) {
		adopted = c.restored.samples
	}

	if err := c.refreshSourceNames(ctx, st, jobID, now); err != nil {
		return Sample{}, err
	}
	sample, err := c.sample(ctx, st, jobID, now)
	if err != nil {
		return Sample{}, err
	}

	// Commit.
	st.graph.RunningSince = runningSince
	c.state = st
	if restart {
		clear(c.history) // release the old samples
		c.history = c.history[:0]
	}
	if adopted != nil {
		c.history = append(c.history, adopted...)
	}
	c.restored = nil
	c.append(sample, now)
	return sample, nil
}

// append adds s and trims the history to the window and the cap.
func (c *Collector) append(s Sample, now time.Time) {
	cutoff := now.Add(-c.opts.Window)
	drop := 0
	for drop < len(c.history) && c.history[drop].Time.Before(cutoff) {
		drop++
	}
	if over := len(c.history) - drop + 1 - c.opts.MaxSamples; over > 0 {
		drop += over
	}
	if drop > 0 {
		n := copy(c.history, c.history[drop:])
		clear(c.history[n:]) // release the dropped samples' memory
		c.history = c.history[:n]
	}
	c.history = append(c.history, s)
}

// fingerprint identifies what the graph depends on: the job id and each
// vertex's id and parallelism.
func fingerprint(d *flink.JobDetails) string {
	b := make([]byte, 0, len(d.ID)+len(d.Vertices)*40)
	b = append(b, d.ID...)
	for _, v := range d.Vertices {
		b = append(b, '|')
		b = append(b, v.ID...)
		b = append(b, ':')
		b = strconv.AppendInt(b, int64(v.Parallelism), 10)
	}
	return string(b)
}

// Fixed task metrics every vertex is asked for.
var taskMetricNames = []string{
	flink.MetricBusyTimeMsPerSecond,
	flink.MetricBackPressuredTimeMsPerSecond,
	flink.MetricNumRecordsInPerSecond,
	flink.MetricNumRecordsOutPerSecond,
}

// buildState fetches the graph (details already in hand) and lists each
// running source's metric names.
func (c *Collector) buildState(ctx context.Context, d *flink.JobDetails, fp string, now time.Time) (*jobState, error) {
	fg, err := c.client.JobGraphFrom(ctx, d)
	if err != nil {
		return nil, fmt.Errorf("collect: job graph: %w", err)
	}
	st := &jobState{fingerprint: fp, vertices: make([]vertexState, len(fg.Vertices))}
	st.graph = JobGraph{JobID: fg.JobID, Vertices: make([]Vertex, len(fg.Vertices))}
	for i, fv := range fg.Vertices {
		v := Vertex{ID: fv.ID, Name: fv.Name, Parallelism: fv.Parallelism, MaxParallelism: fv.MaxParallelism, Source: fv.IsSource()}
		if len(fv.Inputs) > 0 {
			v.Inputs = make([]Input, len(fv.Inputs))
			for k, in := range fv.Inputs {
				v.Inputs[k] = Input{ID: in.ID, ShipStrategy: in.ShipStrategy}
			}
		}
		st.graph.Vertices[i] = v
		vs := &st.vertices[i]
		vs.finished = fv.Status == flink.TaskFinished
		vs.names = taskMetricNames
		vs.needRefresh = v.Source // list at once
	}
	return st, nil
}

// refreshed returns st updated with the details' vertex states (a vertex
// may finish without the graph changing); st is copied only when needed.
func (st *jobState) refreshed(d *flink.JobDetails) *jobState {
	changed := false
	for i, jv := range d.Vertices {
		if i < len(st.vertices) && st.vertices[i].finished != (jv.Status == flink.TaskFinished) {
			changed = true
			break
		}
	}
	if !changed {
		return st
	}
	cp := *st
	cp.vertices = append([]vertexState(nil), st.vertices...)
	for i, jv := range d.Vertices {
		if i < len(cp.vertices) {
			cp.vertices[i].finished = jv.Status == flink.TaskFinished
		}
	}
	return &cp
}

// refreshSourceNames lists the metric names of sources that still lack
// pendingRecords, at most once per NameRefresh each. It may modify st's
// vertex states in place: listings only add knowledge, so a failed
// collection leaves them valid.
func (c *Collector) refreshSourceNames(ctx context.Context, st *jobState, jobID string, now time.Time) error {
	for i := range st.vertices {
		vs := &st.vertices[i]
		v := st.graph.Vertices[i]
		if !v.Source || vs.finished || !vs.needRefresh {
			continue
		}
		if !vs.listedAt.IsZero() && now.Sub(vs.listedAt) < c.opts.NameRefresh {
			continue
		}
		names, err := c.client.VertexMetricNames(ctx, jobID, v.ID)
		if err != nil {
			return fmt.Errorf("collect: metric names of vertex %s: %w", v.ID, err)
		}
		var pending, in, out []string
		for _, n := range names {
			switch {
			case flink.IsPendingRecordsMetric(n):
				pending = append(pending, n)
			case flink.IsSourceOperatorMetric(n, flink.MetricNumRecordsInPerSecond):
				in = append(in, n)
			case flink.IsSourceOperatorMetric(n, flink.MetricNumRecordsOutPerSecond):
				out = append(out, n)
			}
		}
		all := make([]string, 0, len(taskMetricNames)+len(pending)+len(in)+len(out))
		all = append(append(append(append(all, taskMetricNames...), pending...), in...), out...)
		*vs = vertexState{names: all, pending: pending, srcIn: in, srcOut: out,
			listedAt: now, needRefresh: len(pending) == 0}
	}
	return nil
}

// sample fetches every running vertex's metrics, one call per vertex.
func (c *Collector) sample(ctx context.Context, st *jobState, jobID string, now time.Time) (Sample, error) {
	busyAgg := flink.Aggregation(c.opts.BusyTimeAggregator)
	aggs := []flink.Aggregation{flink.AggAvg, flink.AggSum}
	if busyAgg != flink.AggAvg {
		aggs = append(aggs, busyAgg)
	}
	s := Sample{Time: now, Vertices: make([]VertexMetrics, len(st.vertices))}
	for i := range st.vertices {
		vs := &st.vertices[i]
		v := &st.graph.Vertices[i]
		m := &s.Vertices[i]
		m.VertexID = v.ID
		m.PendingRecords = -1
		if vs.finished {
			// upstream's FINISHED_METRICS: an idle vertex, no backlog.
			if v.Source {
				m.PendingRecords = 0
			}
			continue
		}
		ms, err := c.client.VertexMetrics(ctx, jobID, v.ID, vs.names, aggs...)
		if err != nil {
			return Sample{}, fmt.Errorf("collect: metrics of vertex %s: %w", v.ID, err)
		}
		busy := false
		var srcIn, srcOut, pending float64
		havePending := false
		for k := range ms {
			am := &ms[k]
			switch am.ID {
			case flink.MetricBusyTimeMsPerSecond:
				m.BusyTimeMsPerSecond, busy = am.Get(busyAgg)
			case flink.MetricBackPressuredTimeMsPerSecond:
				m.BackPressuredTimeMsPerSecond = finiteOr0(am.Avg)
			case flink.MetricNumRecordsInPerSecond:
				m.NumRecordsInPerSecond = finiteOr0(am.Sum)
			case flink.MetricNumRecordsOutPerSecond:
				m.NumRecordsOutPerSecond = finiteOr0(am.Sum)
			default:
				switch {
				case contains(vs.pending, am.ID):
					if x, ok := am.Get(flink.AggSum); ok && !math.IsNaN(x) {
						pending += x
						havePending = true
					}
				case contains(vs.srcIn, am.ID):
					srcIn += finiteOr0(am.Sum)
				case contains(vs.srcOut, am.ID):
					srcOut += finiteOr0(am.Sum)
				}
			}
		}
		if !busy {
			return Sample{}, fmt.Errorf("collect: vertex %s (%s) reports no %s: %w", v.ID, v.Name, flink.MetricBusyTimeMsPerSecond, ErrNotReady)
		}
		if v.Source {
			if havePending {
				m.PendingRecords = pending
			}
			switch {
			case m.NumRecordsInPerSecond > 0:
				m.SourceIncomingRate = m.NumRecordsInPerSecond
			case srcIn > 0:
				m.SourceIncomingRate = srcIn
			default:
				m.SourceIncomingRate = srcOut
			}
		}
	}
	return s, nil
}

func finiteOr0(x float64) float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return 0
	}
	return x
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
