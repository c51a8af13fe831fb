package flink

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// The job graph as the autoscaler needs it: each job vertex with its
// parallelism and max parallelism, and the edges between vertices.
//
// Where Flink keeps it, per version (checked against the OpenAPI specs in
// the repository's flink-rest folder, 1.15 to 2.x, and Flink 2.2's docs):
//
//   - GET /jobs/:jobid (JobDetailsInfo) lists the vertices with id, name and
//     parallelism in every version, and carries the dataflow plan in its
//     "plan" field. Flink up to 1.16 writes the plan with @JsonRawValue
//     (the 1.15 spec calls it a string, but the wire has an object); 1.17+
//     writes a RawJson object. Both arrive as a JSON object; a plan that
//     arrives as a JSON string holding the object is read too.
//   - The vertices' "maxParallelism" in JobDetailsInfo is documented from
//     the 1.18 spec on; the 1.15 spec in the folder was not fully
//     regenerated and does not say. Rather than guess the release, the
//     client reads the field when present (> 0) and otherwise asks
//     GET /jobs/:jobid/vertices/:vertexid (JobVertexDetailsInfo, which has
//     maxParallelism in every spec), one call per vertex that lacks it.
//   - The plan's nodes carry "inputs" (id, ship_strategy, exchange) in
//     every version; a node without inputs is a source. GET
//     /jobs/:jobid/plan answers {"plan": <the same object>} and is used
//     only when the job details carry no plan.
//   - 2.0 adds "stream-graph" and "pending-operators" to the job details;
//     the graph ignores them.

// JobGraph is a job's vertices and edges.
type JobGraph struct {
	JobID string
	Name  string
	State JobStatus
	// RunningSince is when the job last switched to RUNNING (epoch ms, from
	// the details' timestamps), 0 when Flink did not say.
	RunningSince int64
	// Vertices in the order Flink lists them (Flink lists job vertices in
	// topological order).
	Vertices []GraphVertex
}

// GraphVertex is one job vertex.
type GraphVertex struct {
	ID             string
	Name           string
	Parallelism    int
	MaxParallelism int // 0 if Flink reported none anywhere
	Status         ExecutionState
	Inputs         []GraphInput // empty for a source
}

// GraphInput is an edge into a vertex, from the plan.
type GraphInput struct {
	ID           string // the upstream vertex
	ShipStrategy string // e.g. "HASH", "FORWARD", "REBALANCE"
	Exchange     string // e.g. "pipelined_bounded"; may be empty
}

// IsSource reports whether the vertex has no inputs.
func (v GraphVertex) IsSource() bool { return len(v.Inputs) == 0 }

// Vertex returns the vertex with the given id.
func (g *JobGraph) Vertex(id string) (*GraphVertex, bool) {
	for i := range g.Vertices {
		if g.Vertices[i].ID == id {
			return &g.Vertices[i], true
		}
	}
	return nil, false
}

// JobPlan is Flink's dataflow plan (the JSON plan of the job graph).
type JobPlan struct {
	JobID string     `json:"jid"`
	Name  string     `json:"name"`
	Type  string     `json:"type"` // STREAMING or BATCH (1.17+)
	Nodes []PlanNode `json:"nodes"`
}

// PlanNode is one vertex of the plan.
type PlanNode struct {
	ID               string      `json:"id"`
	Parallelism      int         `json:"parallelism"`
	Operator         string      `json:"operator"`
	OperatorStrategy string      `json:"operator_strategy"`
	Description      string      `json:"description"`
	Inputs           []PlanInput `json:"inputs"`
}

// PlanInput is one input edge of a plan node.
type PlanInput struct {
	Num          int    `json:"num"`
	ID           string `json:"id"`
	ShipStrategy string `json:"ship_strategy"`
	Exchange     string `json:"exchange"`
}

// ParsePlan decodes a plan as found in the job details' "plan" field or
// in the "plan" of GET /jobs/:jobid/plan: a JSON object, or a JSON string
// holding one. An empty or null plan gives (nil, nil).
func ParsePlan(raw json.RawMessage) (*JobPlan, error) {
	s := strings.TrimSpace(string(raw))
	if s == "" || s == "null" {
		return nil, nil
	}
	if strings.HasPrefix(s, `"`) {
		var inner string
		if err := json.Unmarshal(raw, &inner); err != nil {
			return nil, err
		}
		if inner = strings.TrimSpace(inner); inner == "" {
			return nil, nil
		}
		raw = json.RawMessage(inner)
	}
	var p JobPlan
	if err := json.Unmarshal(raw, &p); err != nil {
		return nil, fmt.Errorf("plan: %w", err)
	}
	return &p, nil
}

// JobPlan fetches GET /jobs/:jobid/plan.
func (c *Client) JobPlan(ctx context.Context, jobID string) (*JobPlan, error) {
	p, err := jobPath(http.MethodGet, jobID, "/plan")
	if err != nil {
		return nil, err
	}
	var out struct {
		Plan json.RawMessage `json:"plan"`
	}
	if err := c.getJSON(ctx, p, nil, &out); err != nil {
		return nil, err
	}
	plan, err := ParsePlan(out.Plan)
	if err != nil {
		return nil, unexpected(http.MethodGet, p, err)
	}
	if plan == nil {
		return nil, unexpected(http.MethodGet, p, fmt.Errorf("no plan in the answer"))
	}
	return plan, nil
}

// JobVertexDetails is GET /jobs/:jobid/vertices/:vertexid
// (JobVertexDetailsInfo) without its per-subtask list.
type JobVertexDetails struct {
	ID             string `json:"id"`
	Name           string `json:"name"`
	Parallelism    int    `json:"parallelism"`
	MaxParallelism int    `json:"maxParallelism"`
	Now            int64  `json:"now"`
}

// vertexPath returns "/jobs/<job>/vertices/<vertex><suffix>" after
// validating both ids (a JobVertexID has the JobID format).
func vertexPath(method, jobID, vertexID, suffix string) (string, error) {
	p := "/jobs/" + jobID + "/vertices/" + vertexID + suffix
	if err := checkID(method, p, "job id", jobID); err != nil {
		return p, err
	}
	return p, checkID(method, p, "vertex id", vertexID)
}

// JobVertex fetches GET /jobs/:jobid/vertices/:vertexid.
func (c *Client) JobVertex(ctx context.Context, jobID, vertexID string) (*JobVertexDetails, error) {
	p, err := vertexPath(http.MethodGet, jobID, vertexID, "")
	if err != nil {
		return nil, err
	}
	var out JobVertexDetails
	if err := c.getJSON(ctx, p, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// JobGraph fetches the job's graph: GET /jobs/:jobid, plus GET
// /jobs/:jobid/plan when the details carry no plan, plus GET
// /jobs/:jobid/vertices/:vertexid for each vertex whose max parallelism
// the details do not report. On a current Flink that is one call.
func (c *Client) JobGraph(ctx context.Context, jobID string) (*JobGraph, error) {
	d, err := c.Job(ctx, jobID)
	if err != nil {
		return nil, err
	}
	return c.JobGraphFrom(ctx, d)
}

// JobGraphFrom builds the graph from job details the caller already has,
// making only the extra calls JobGraph describes.
func (c *Client) JobGraphFrom(ctx context.Context, d *JobDetails) (*JobGraph, error) {
	p := "/jobs/" + d.ID
	plan, err := ParsePlan(d.Plan)
	if err != nil {
		return nil, unexpected(http.MethodGet, p, err)
	}
	if plan == nil {
		if plan, err = c.JobPlan(ctx, d.ID); err != nil {
			return nil, err
		}
	}
	g := GraphFromDetails(d, plan)
	for i := range g.Vertices {
		v := &g.Vertices[i]
		if v.MaxParallelism > 0 {
			continue
		}
		vd, err := c.JobVertex(ctx, d.ID, v.ID)
		if err != nil {
			return nil, err
		}
		v.MaxParallelism = vd.MaxParallelism
	}
	return g, nil
}

// GraphFromDetails joins the details' vertices with the plan's edges,
// without any call. A vertex the plan does not know has no inputs; a nil
// plan makes every vertex a source.
func GraphFromDetails(d *JobDetails, plan *JobPlan) *JobGraph {
	g := &JobGraph{
		JobID:        d.ID,
		Name:         d.Name,
		State:        d.State,
		RunningSince: d.Timestamps[JobRunning],
		Vertices:     make([]GraphVertex, 0, len(d.Vertices)),
	}
	var nodes map[string]*PlanNode
	if plan != nil {
		nodes = make(map[string]*PlanNode, len(plan.Nodes))
		for i := range plan.Nodes {
			nodes[plan.Nodes[i].ID] = &plan.Nodes[i]
		}
	}
	for _, jv := range d.Vertices {
		v := GraphVertex{
			ID:             jv.ID,
			Name:           jv.Name,
			Parallelism:    jv.Parallelism,
			MaxParallelism: jv.MaxParallelism,
			Status:         jv.Status,
		}
		if n := nodes[jv.ID]; n != nil && len(n.Inputs) > 0 {
			v.Inputs = make([]GraphInput, 0, len(n.Inputs))
			for _, in := range n.Inputs {
				v.Inputs = append(v.Inputs, GraphInput{ID: in.ID, ShipStrategy: in.ShipStrategy, Exchange: in.Exchange})
			}
		}
		g.Vertices = append(g.Vertices, v)
	}
	return g
}
