package fakejm

import (
	"fmt"
	"math"
	"net/http"
	"strings"

	"github.com/flinkops/flink-operator/pkg/flink"
)

// Job graph and vertex endpoints (graph.go has the model):
//
//   - GET /jobs/{jobid}/plan: {"plan": <the JSON plan>}.
//   - GET /jobs/{jobid}/vertices/{vertexid}: JobVertexDetailsInfo with an
//     empty subtask list.
//   - GET /jobs/{jobid}/vertices/{vertexid}/subtasks/metrics: without
//     ?get= the sorted names of the metrics the vertex's subtasks report
//     ([{"id"}]); with ?get= the named metrics that at least one subtask
//     reports, aggregated over those subtasks with the modes of ?agg=
//     (all of the version's modes without it). Like Flink: a bare JSON
//     array, unknown names left out, an unknown ?agg= mode (skew before
//     1.20) a 400, non-finite values written as the strings "NaN" and
//     "(-)Infinity". Flink's metric handlers read the metric store rather
//     than the job list, so an unknown job or vertex, or a job that is not
//     RUNNING, gets an empty array here (not checked against a live
//     JobManager).
//
// The skew the fake computes is (max-avg)/avg*100 (0 when avg is 0); that
// formula is the fake's, not verified against Flink's.

// Routes of the job graph and vertex endpoints.
const (
	RouteJobPlan              = "GET /jobs/{jobid}/plan"
	RouteVertex               = "GET /jobs/{jobid}/vertices/{vertexid}"
	RouteVertexSubtaskMetrics = "GET /jobs/{jobid}/vertices/{vertexid}/subtasks/metrics"
)

func (s *Server) getJobPlan(in *inbound) reply {
	j, errRep := s.lookupJob(in)
	if errRep != nil {
		return *errRep
	}
	return okReply(map[string]any{"plan": j.plan()})
}

func (s *Server) lookupVertex(in *inbound) (*job, *vertexView, *reply) {
	j, errRep := s.lookupJob(in)
	if errRep != nil {
		return nil, nil, errRep
	}
	id := in.pathValue("vertexid")
	if !flink.IsValidID(id) {
		r := restError(http.StatusBadRequest, fmt.Sprintf("Bad request, could not parse parameters: Cannot resolve path parameter (vertexid) from value %q.", id))
		return nil, nil, &r
	}
	for _, v := range j.vertexViews() {
		if v.id == id {
			return j, &v, nil
		}
	}
	r := restError(http.StatusNotFound, "No vertex with ID '"+id+"' exists.")
	return nil, nil, &r
}

func (s *Server) getVertex(in *inbound) reply {
	_, v, errRep := s.lookupVertex(in)
	if errRep != nil {
		return *errRep
	}
	return okReply(map[string]any{
		"id": v.id, "name": v.name, "parallelism": v.parallelism, "maxParallelism": v.maxParallelism,
		"now": s.now().UnixMilli(), "subtasks": []any{},
	})
}

// aggregationModes are the ?agg= modes of the emulated version, in Flink's
// enum order.
func (s *Server) aggregationModes() []string {
	modes := []string{"MIN", "MAX", "SUM", "AVG"}
	if s.opts.Version.SupportsSkewAggregation() {
		modes = append(modes, "SKEW")
	}
	return modes
}

func (s *Server) getVertexSubtaskMetrics(in *inbound) reply {
	q := in.r.URL.Query()
	modes := s.aggregationModes()
	if agg := q.Get("agg"); agg != "" {
		var want []string
		for _, a := range strings.Split(agg, ",") {
			a = strings.ToUpper(strings.TrimSpace(a))
			ok := false
			for _, m := range modes {
				ok = ok || m == a
			}
			if !ok {
				return restError(http.StatusBadRequest, fmt.Sprintf("Bad request, could not parse parameters: Cannot resolve query parameter (agg) from value %q.", agg))
			}
			want = append(want, a)
		}
		modes = want
	}
	out := []any{}
	j, found := s.jobs[in.pathValue("jobid")]
	if !found || j.state != flink.JobRunning {
		return okReply(out)
	}
	var v *graphVertex
	if v = j.graphOf().vertex(in.pathValue("vertexid")); v == nil {
		return okReply(out)
	}
	n := j.vertexParallelism(v)
	get := q.Get("get")
	if get == "" {
		for _, name := range sortedKeys(v.metrics) {
			if len(v.metrics[name]) > 0 {
				out = append(out, map[string]any{"id": name})
			}
		}
		return okReply(out)
	}
	for _, name := range strings.Split(get, ",") {
		name = strings.TrimSpace(name)
		vals := v.metrics[name]
		if len(vals) > n {
			vals = vals[:n]
		}
		if len(vals) == 0 {
			continue
		}
		m := map[string]any{"id": name}
		agg := aggregate(vals)
		for _, mode := range modes {
			m[strings.ToLower(mode)] = jacksonDouble(agg[mode])
		}
		out = append(out, m)
	}
	return okReply(out)
}

// aggregate computes every mode over vals (non-empty).
func aggregate(vals []float64) map[string]float64 {
	lo, hi, sum := math.Inf(1), math.Inf(-1), 0.0
	for _, x := range vals {
		lo, hi, sum = math.Min(lo, x), math.Max(hi, x), sum+x
	}
	avg := sum / float64(len(vals))
	skew := 0.0
	if avg != 0 {
		skew = (hi - avg) / avg * 100
	}
	return map[string]float64{"MIN": lo, "MAX": hi, "SUM": sum, "AVG": avg, "SKEW": skew}
}

// jacksonDouble renders a double as Jackson does by default: numbers, and
// the strings "NaN", "Infinity", "-Infinity" for the rest.
func jacksonDouble(x float64) any {
	switch {
	case math.IsNaN(x):
		return "NaN"
	case math.IsInf(x, 1):
		return "Infinity"
	case math.IsInf(x, -1):
		return "-Infinity"
	}
	return x
}
