// Package synthload drives a steady synthetic load on the jobs of a fake
// JobManager (pkg/flink/fakejm), for the job autoscaler's benchmark and
// end-to-end tests without a JVM: each job gets a chain of vertices (a
// source, then operators, the last a sink), a constant offered rate at the
// source and a processing capacity per subtask of each vertex, and the
// driver keeps the vertices' metrics (busy and back-pressured time,
// records in/out, the source's pending records) consistent with a fluid
// model of that chain at the vertices' current parallelism.
//
// It also plays Flink's adaptive scheduler: a vertex whose resource
// requirements (PUT /jobs/{jobid}/resource-requirements, how the operator
// rescales in place) name another upper bound runs at that parallelism
// from the next step on, and its metrics follow.
//
// The load is described by a string (Parse), which cmd/fake-jobmanager
// takes as --load or from $FAKE_JOBMANAGER_LOAD (a FlinkDeployment's pod
// template can set it for the JobManager container), and e2e/benchscale's
// in-process fake node reads from the same variable of the JobManager pod.
package synthload

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/flinkops/flink-operator/pkg/flink/fakejm"
)

// EnvVar is the environment variable holding a load description.
const EnvVar = "FAKE_JOBMANAGER_LOAD"

// Spec is a synthetic load.
type Spec struct {
	// Rate is the records per second offered to the source.
	Rate float64
	// Capacities are the records per second one subtask of each vertex
	// processes at full busy time, in chain order: the first vertex is
	// the source, the last the sink. At least one.
	Capacities []float64
	// Parallelism is every vertex's parallelism when the job starts
	// (default 1).
	Parallelism int
	// NoBacklog: the source does not report pendingRecords (what is not
	// read is lost to the model).
	NoBacklog bool
}

// Parse reads a load description: semicolon-separated key=value pairs,
//
//	rate=1000;capacity=2000,1500,600[;parallelism=1][;backlog=false]
//
// rate: records/s offered to the source; capacity: records/s per subtask
// of each vertex of the chain, source first; parallelism: of every vertex
// at the job's start; backlog=false: the source reports no pending
// records.
func Parse(s string) (Spec, error) {
	sp := Spec{Parallelism: 1}
	rateSet := false
	for _, kv := range strings.Split(s, ";") {
		kv = strings.TrimSpace(kv)
		if kv == "" {
			continue
		}
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return Spec{}, fmt.Errorf("synthetic load %q: %q is not key=value", s, kv)
		}
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		switch k {
		case "rate":
			f, err := strconv.ParseFloat(v, 64)
			if err != nil || f < 0 || math.IsInf(f, 0) || math.IsNaN(f) {
				return Spec{}, fmt.Errorf("synthetic load %q: rate %q: want records/s >= 0", s, v)
			}
			sp.Rate, rateSet = f, true
		case "capacity":
			sp.Capacities = nil
			for _, c := range strings.Split(v, ",") {
				f, err := strconv.ParseFloat(strings.TrimSpace(c), 64)
				if err != nil || f <= 0 || math.IsInf(f, 0) || math.IsNaN(f) {
					return Spec{}, fmt.Errorf("synthetic load %q: capacity %q: want records/s > 0 per vertex", s, c)
				}
				sp.Capacities = append(sp.Capacities, f)
			}
		case "parallelism":
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 || n > 128 {
				return Spec{}, fmt.Errorf("synthetic load %q: parallelism %q: want 1..128", s, v)
			}
			sp.Parallelism = n
		case "backlog":
			b, err := strconv.ParseBool(v)
			if err != nil {
				return Spec{}, fmt.Errorf("synthetic load %q: backlog %q: want true or false", s, v)
			}
			sp.NoBacklog = !b
		default:
			return Spec{}, fmt.Errorf("synthetic load %q: unknown key %q (rate, capacity, parallelism, backlog)", s, k)
		}
	}
	if !rateSet || len(sp.Capacities) == 0 {
		return Spec{}, fmt.Errorf("synthetic load %q: needs rate= and capacity=", s)
	}
	return sp, nil
}

// String renders the spec as Parse reads it.
func (s Spec) String() string {
	caps := make([]string, len(s.Capacities))
	for i, c := range s.Capacities {
		caps[i] = strconv.FormatFloat(c, 'f', -1, 64)
	}
	out := fmt.Sprintf("rate=%s;capacity=%s", strconv.FormatFloat(s.Rate, 'f', -1, 64), strings.Join(caps, ","))
	if s.Parallelism > 1 {
		out += ";parallelism=" + strconv.Itoa(s.Parallelism)
	}
	if s.NoBacklog {
		out += ";backlog=false"
	}
	return out
}

// VertexName is the name of the i-th of n vertices: "Source: synthetic",
// "Map <i>", "Sink: synthetic".
func VertexName(i, n int) string {
	switch {
	case i == 0:
		return "Source: synthetic"
	case i == n-1:
		return "Sink: synthetic"
	}
	return fmt.Sprintf("Map %d", i)
}

// Driver keeps the load of one fake JobManager's jobs.
type Driver struct {
	jm   *fakejm.Server
	spec Spec

	mu   sync.Mutex
	jobs map[string]*jobLoad
}

type jobLoad struct {
	parallelism []int
	backlog     float64
	last        time.Time
}

// New returns a driver of spec on jm's jobs; Step (or Run) applies it.
func New(jm *fakejm.Server, spec Spec) *Driver {
	if spec.Parallelism < 1 {
		spec.Parallelism = 1
	}
	return &Driver{jm: jm, spec: spec, jobs: map[string]*jobLoad{}}
}

// Run steps the driver every tick until ctx ends.
func (d *Driver) Run(ctx context.Context, tick time.Duration) {
	t := time.NewTicker(tick)
	defer t.Stop()
	_ = d.Step(time.Now())
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			_ = d.Step(now)
		}
	}
}

// Parallelism is the job's vertices' parallelism as the driver runs them
// (nil for a job it has not seen).
func (d *Driver) Parallelism(jobID string) []int {
	d.mu.Lock()
	defer d.mu.Unlock()
	if j := d.jobs[jobID]; j != nil {
		return append([]int(nil), j.parallelism...)
	}
	return nil
}

// Step programs the graph of jobs it has not seen, applies resource
// requirements changed since the last step (the adaptive scheduler),
// advances the fluid model to now and sets every vertex's metrics.
func (d *Driver) Step(now time.Time) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	var firstErr error
	keep := func(err error) {
		if err != nil && firstErr == nil {
			firstErr = err
		}
	}
	live := map[string]bool{}
	for _, id := range d.jm.JobIDs() {
		live[id] = true
		keep(d.stepJob(id, now))
	}
	for id := range d.jobs {
		if !live[id] {
			delete(d.jobs, id)
		}
	}
	return firstErr
}

func (d *Driver) stepJob(id string, now time.Time) error {
	n := len(d.spec.Capacities)
	j := d.jobs[id]
	if j == nil {
		g := fakejm.GraphSpec{}
		for i := range n {
			v := fakejm.VertexSpec{ID: fakejm.VertexID(i), Name: VertexName(i, n), Parallelism: d.spec.Parallelism}
			if i > 0 {
				v.Inputs = []string{fakejm.VertexID(i - 1)}
			}
			g.Vertices = append(g.Vertices, v)
		}
		if err := d.jm.SetJobGraph(id, g); err != nil {
			return err
		}
		j = &jobLoad{parallelism: make([]int, n), last: now}
		for i := range j.parallelism {
			j.parallelism[i] = d.spec.Parallelism
		}
		d.jobs[id] = j
	}
	// The adaptive scheduler: run each vertex at its requirements' upper
	// bound (Flink 1.18+; older versions have no requirements).
	if rr, err := d.jm.ResourceRequirements(id); err == nil {
		for i := range n {
			r, ok := rr[fakejm.VertexID(i)]
			if !ok || r.Parallelism.UpperBound < 1 || r.Parallelism.UpperBound == j.parallelism[i] {
				continue
			}
			if err := d.jm.SetVertexParallelism(id, fakejm.VertexID(i), r.Parallelism.UpperBound); err != nil {
				return err
			}
			j.parallelism[i] = r.Parallelism.UpperBound
		}
	}
	dt := now.Sub(j.last).Seconds()
	j.last = now
	loads, backlog := Model(d.spec, j.parallelism, j.backlog, dt)
	j.backlog = backlog
	for i, l := range loads {
		if err := d.jm.SetVertexLoad(id, fakejm.VertexID(i), l); err != nil {
			return err
		}
	}
	return nil
}

// Model is the fluid model of the chain: the vertices at parallelism
// process together at most the smallest of parallelism × capacity; the
// source reads the offered rate, or that capacity while it is behind
// (backlog, records, grows by what it cannot read over dt seconds). Each
// vertex is busy for its share of what flows, the vertices before the
// bottleneck back-pressured for the rest of the time. It returns each
// vertex's load and the new backlog.
func Model(spec Spec, parallelism []int, backlog, dt float64) ([]fakejm.VertexLoad, float64) {
	n := len(spec.Capacities)
	capacity, bottleneck := math.Inf(1), 0
	for i, c := range spec.Capacities {
		if vc := float64(max(parallelism[i], 1)) * c; vc < capacity {
			capacity, bottleneck = vc, i
		}
	}
	flow := min(spec.Rate, capacity)
	if backlog > 0 && !spec.NoBacklog {
		flow = capacity
		if dt > 0 {
			flow = min(capacity, spec.Rate+backlog/dt)
		}
	}
	if !spec.NoBacklog && dt > 0 {
		backlog = max(0, backlog+(spec.Rate-flow)*dt)
	}
	limited := flow >= capacity*0.999
	out := make([]fakejm.VertexLoad, n)
	for i, c := range spec.Capacities {
		busy := min(1000, 1000*flow/(float64(max(parallelism[i], 1))*c))
		l := fakejm.VertexLoad{BusyTimeMsPerSecond: busy, RecordsInPerSecond: flow, RecordsOutPerSecond: flow, PendingRecords: -1}
		if limited && i < bottleneck {
			l.BackPressuredTimeMsPerSecond = 1000 - busy
		}
		if i == n-1 && n > 1 {
			l.RecordsOutPerSecond = 0 // a sink emits nothing downstream
		}
		if i == 0 && !spec.NoBacklog {
			l.PendingRecords = backlog
		}
		out[i] = l
	}
	return out, backlog
}
