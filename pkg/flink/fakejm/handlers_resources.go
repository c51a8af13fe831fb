package fakejm

import (
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/flinkops/flink-operator/pkg/flink"
)

// Job resource requirements (Flink 1.18+, what the adaptive scheduler
// rescales a running job to): GET gives each vertex's parallelism bounds,
// lower 1 and upper the vertex's parallelism until a PUT sets them; PUT
// replaces them all, as Flink does, after Flink's checks (every vertex of
// the job, 1 <= lower <= upper <= maxParallelism). The vertices are the
// job graph's (graph.go; by default the fake's two, vertexNames, ids
// 000…01 and 000…02). Older versions have no such route.

// Routes of the job resource requirements.
const (
	RouteResourceRequirements       = "GET /jobs/{jobid}/resource-requirements"
	RouteResourceRequirementsUpdate = "PUT /jobs/{jobid}/resource-requirements"
)

// VertexID is the id of the fake's i-th job vertex (0: the source, 1: the
// sink), as GET /jobs/{jobid} lists them.
func VertexID(i int) string { return fmt.Sprintf("%032x", i+1) }

const fakeMaxParallelism = 128

func (s *Server) requirementsOf(j *job) flink.ResourceRequirements {
	out := flink.ResourceRequirements{}
	for _, v := range j.vertexViews() { // graph.go
		id := v.id
		if r, ok := j.requirements[id]; ok {
			out[id] = r
			continue
		}
		out[id] = flink.VertexResourceRequirements{Parallelism: flink.Parallelism{LowerBound: 1, UpperBound: v.parallelism}}
	}
	return out
}

func (s *Server) getResourceRequirements(in *inbound) reply {
	if s.opts.Version.Before(flink.V1_18) {
		return notFoundRoute(in.r.URL.Path)
	}
	j, errRep := s.lookupJob(in)
	if errRep != nil {
		return *errRep
	}
	return okReply(s.requirementsOf(j))
}

func (s *Server) updateResourceRequirements(in *inbound) reply {
	if s.opts.Version.Before(flink.V1_18) {
		return notFoundRoute(in.r.URL.Path)
	}
	j, errRep := s.lookupJob(in)
	if errRep != nil {
		return *errRep
	}
	var req flink.ResourceRequirements
	if err := json.Unmarshal(in.body, &req); err != nil {
		return badFormat("JobResourceRequirementsBody", err.Error())
	}
	views := j.vertexViews() // graph.go
	if len(req) != len(views) {
		return restError(http.StatusBadRequest, fmt.Sprintf("Invalid job resource requirements: expected %d job vertices, got %d.", len(views), len(req)))
	}
	for _, v := range views {
		r, ok := req[v.id]
		if !ok {
			return restError(http.StatusBadRequest, "Invalid job resource requirements: missing job vertex "+v.id+".")
		}
		if p := r.Parallelism; p.LowerBound < 1 || p.LowerBound > p.UpperBound || p.UpperBound > v.maxParallelism {
			return restError(http.StatusBadRequest, fmt.Sprintf("Invalid job resource requirements: parallelism [%d, %d] of job vertex %s.", p.LowerBound, p.UpperBound, v.id))
		}
	}
	if j.state.IsGloballyTerminal() {
		return restError(http.StatusInternalServerError, "Job "+j.id+" is not running")
	}
	j.requirements = req
	return okReply(map[string]any{})
}

// ResourceRequirements is what GET /jobs/{jobid}/resource-requirements
// answers for a job.
func (s *Server) ResourceRequirements(id string) (flink.ResourceRequirements, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	j, err := s.job(id)
	if err != nil {
		return nil, err
	}
	return s.requirementsOf(j), nil
}
