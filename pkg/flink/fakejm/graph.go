package fakejm

import (
	"fmt"
	"strings"

	"github.com/flinkops/flink-operator/pkg/flink"
)

// A programmable job graph and per-subtask vertex metrics, for the
// autoscaler's metric collection: GET /jobs/{jobid} lists the graph's
// vertices and plan (edges), GET /jobs/{jobid}/plan and
// GET /jobs/{jobid}/vertices/{vertexid} answer from it, and
// GET /jobs/{jobid}/vertices/{vertexid}/subtasks/metrics aggregates the
// values tests set (handlers_vertices.go).
//
// A job without a programmed graph has the fake's two fixed vertices
// (vertexNames: a source and a sink fed by it, ids VertexID(0) and
// VertexID(1)), each with the job's parallelism and max parallelism 128.

// VertexSpec is one vertex of a programmed job graph.
type VertexSpec struct {
	// ID defaults to VertexID(i) for the i-th vertex.
	ID string
	// Name defaults to "fake-vertex-<i>"; a source's name usually starts
	// with "Source: ", as Flink names them.
	Name string
	// Parallelism defaults to the job's parallelism.
	Parallelism int
	// MaxParallelism defaults to 128.
	MaxParallelism int
	// Inputs are the ids of the vertices feeding this one; none makes it
	// a source.
	Inputs []string
	// ShipStrategy of every input edge; default "HASH".
	ShipStrategy string
}

// GraphSpec programs a job's graph with SetJobGraph.
type GraphSpec struct {
	// Vertices in topological order (Flink lists them so).
	Vertices []VertexSpec
	// OmitVertexMaxParallelism leaves "maxParallelism" out of the vertices
	// of GET /jobs/{jobid}, as a JobManager whose job details lack it;
	// GET /jobs/{jobid}/vertices/{vertexid} still has it.
	OmitVertexMaxParallelism bool
	// OmitPlan leaves "plan" out of GET /jobs/{jobid}; GET
	// /jobs/{jobid}/plan still has it.
	OmitPlan bool
}

// graphModel is a job's graph and the metric values of its vertices.
type graphModel struct {
	vertices   []graphVertex
	omitMaxPar bool
	omitPlan   bool
}

type graphVertex struct {
	id, name       string
	parallelism    int
	maxParallelism int
	inputs         []string
	shipStrategy   string
	// metrics by name: value of subtask i at [i]; a shorter slice means
	// the remaining subtasks do not report the metric.
	metrics map[string][]float64
}

// graphOf returns the job's graph, materialising the default two-vertex
// graph on first use so that metrics can be set on it.
func (j *job) graphOf() *graphModel {
	if j.graph == nil {
		g := &graphModel{}
		for i, name := range vertexNames {
			v := graphVertex{id: VertexID(i), name: name, maxParallelism: fakeMaxParallelism, shipStrategy: "FORWARD"}
			if i > 0 {
				v.inputs = []string{VertexID(i - 1)}
			}
			g.vertices = append(g.vertices, v)
		}
		j.graph = g
	}
	return j.graph
}

// vertexParallelism is the vertex's own parallelism or the job's.
func (j *job) vertexParallelism(v *graphVertex) int {
	if v.parallelism > 0 {
		return v.parallelism
	}
	return j.parallelism
}

func (g *graphModel) vertex(id string) *graphVertex {
	for i := range g.vertices {
		if g.vertices[i].id == id {
			return &g.vertices[i]
		}
	}
	return nil
}

// SetJobGraph replaces a job's graph (and forgets the metric values of its
// vertices). Inputs must name earlier vertices.
func (s *Server) SetJobGraph(jobID string, spec GraphSpec) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	j, err := s.job(jobID)
	if err != nil {
		return err
	}
	if len(spec.Vertices) == 0 {
		return fmt.Errorf("fakejm: a job graph needs at least one vertex")
	}
	g := &graphModel{omitMaxPar: spec.OmitVertexMaxParallelism, omitPlan: spec.OmitPlan}
	seen := map[string]bool{}
	for i, vs := range spec.Vertices {
		v := graphVertex{
			id: vs.ID, name: vs.Name, parallelism: vs.Parallelism, maxParallelism: vs.MaxParallelism,
			inputs: append([]string(nil), vs.Inputs...), shipStrategy: vs.ShipStrategy,
		}
		if v.id == "" {
			v.id = VertexID(i)
		}
		if !flink.IsValidID(v.id) {
			return fmt.Errorf("fakejm: invalid vertex id %q", v.id)
		}
		if seen[v.id] {
			return fmt.Errorf("fakejm: duplicate vertex id %s", v.id)
		}
		for _, in := range v.inputs {
			if !seen[in] {
				return fmt.Errorf("fakejm: vertex %s: input %s is not an earlier vertex", v.id, in)
			}
		}
		seen[v.id] = true
		if v.name == "" {
			v.name = fmt.Sprintf("fake-vertex-%d", i)
		}
		if v.maxParallelism <= 0 {
			v.maxParallelism = fakeMaxParallelism
		}
		if v.shipStrategy == "" {
			v.shipStrategy = "HASH"
		}
		g.vertices = append(g.vertices, v)
	}
	j.graph = g
	return nil
}

// SetVertexParallelism changes one vertex's parallelism, as a rescale
// does; metric values set for subtasks beyond the new parallelism stop
// being reported.
func (s *Server) SetVertexParallelism(jobID, vertexID string, parallelism int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, err := s.graphVertex(jobID, vertexID)
	if err != nil {
		return err
	}
	if parallelism <= 0 {
		return fmt.Errorf("fakejm: parallelism %d", parallelism)
	}
	v.parallelism = parallelism
	return nil
}

// SetVertexMetrics sets metric values of a vertex's subtasks: values[name][i]
// is what subtask i reports (a slice shorter than the parallelism leaves
// the remaining subtasks without the metric; a nil slice removes the
// metric). Other metrics of the vertex are kept. Names are Flink's metric
// ids as the subtask metrics endpoint lists them, e.g. "busyTimeMsPerSecond"
// or "Source__Kafka.pendingRecords".
func (s *Server) SetVertexMetrics(jobID, vertexID string, values map[string][]float64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, err := s.graphVertex(jobID, vertexID)
	if err != nil {
		return err
	}
	if v.metrics == nil {
		v.metrics = map[string][]float64{}
	}
	for name, vals := range values {
		if name == "" || strings.Contains(name, ",") {
			return fmt.Errorf("fakejm: metric name %q", name)
		}
		if vals == nil {
			delete(v.metrics, name)
			continue
		}
		v.metrics[name] = append([]float64(nil), vals...)
	}
	return nil
}

// SetVertexMetric sets one metric to the same value on every subtask of
// the vertex (its current parallelism).
func (s *Server) SetVertexMetric(jobID, vertexID, name string, value float64) error {
	s.mu.Lock()
	j, err := s.job(jobID)
	var n int
	if err == nil {
		if v := j.graphOf().vertex(vertexID); v != nil {
			n = j.vertexParallelism(v)
		}
	}
	s.mu.Unlock()
	if err != nil {
		return err
	}
	vals := make([]float64, max(n, 1))
	for i := range vals {
		vals[i] = value
	}
	return s.SetVertexMetrics(jobID, vertexID, map[string][]float64{name: vals})
}

func (s *Server) graphVertex(jobID, vertexID string) (*graphVertex, error) {
	j, err := s.job(jobID)
	if err != nil {
		return nil, err
	}
	v := j.graphOf().vertex(vertexID)
	if v == nil {
		return nil, fmt.Errorf("fakejm: job %s has no vertex %s", jobID, vertexID)
	}
	return v, nil
}

// vertexView is a vertex as the job endpoints render it.
type vertexView struct {
	id, name       string
	parallelism    int
	maxParallelism int
	inputs         []string
	shipStrategy   string
}

// vertexViews lists the job's vertices with effective parallelism.
func (j *job) vertexViews() []vertexView {
	g := j.graphOf()
	out := make([]vertexView, 0, len(g.vertices))
	for i := range g.vertices {
		v := &g.vertices[i]
		out = append(out, vertexView{
			id: v.id, name: v.name, parallelism: j.vertexParallelism(v), maxParallelism: v.maxParallelism,
			inputs: v.inputs, shipStrategy: v.shipStrategy,
		})
	}
	return out
}

// planNode renders a vertex as a node of the JSON plan.
func (v vertexView) planNode() map[string]any {
	n := map[string]any{
		"id": v.id, "parallelism": v.parallelism, "operator": "", "operator_strategy": "",
		"description": v.name, "optimizer_properties": map[string]any{},
	}
	if len(v.inputs) > 0 {
		ins := make([]any, 0, len(v.inputs))
		for i, in := range v.inputs {
			ins = append(ins, map[string]any{"num": i, "id": in, "ship_strategy": v.shipStrategy, "exchange": "pipelined_bounded"})
		}
		n["inputs"] = ins
	}
	return n
}

// plan renders the job's JSON plan.
func (j *job) plan() map[string]any {
	nodes := []any{}
	for _, v := range j.vertexViews() {
		nodes = append(nodes, v.planNode())
	}
	return map[string]any{"jid": j.id, "name": j.name, "type": "STREAMING", "nodes": nodes}
}

// totalTasks is the number of subtasks over all vertices.
func (j *job) totalTasks() int {
	n := 0
	for _, v := range j.vertexViews() {
		n += v.parallelism
	}
	return n
}
