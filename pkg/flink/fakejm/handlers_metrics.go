package fakejm

import (
	"strconv"
	"strings"
)

// Job metrics (GET /jobs/{jobid}/metrics): numRestarts, which tests raise
// with AddRestarts, and numberOfCompletedCheckpoints, the completed count
// of the checkpoint statistics. Answered as Flink does: a bare JSON array
// of {id, value}, or of {id} alone without ?get=.

// RouteJobMetrics is the job metrics endpoint.
const RouteJobMetrics = "GET /jobs/{jobid}/metrics"

type metricJSON struct {
	ID    string `json:"id"`
	Value string `json:"value,omitempty"`
}

func (s *Server) getJobMetrics(in *inbound) reply {
	j, errRep := s.lookupJob(in)
	if errRep != nil {
		return *errRep
	}
	values := map[string]string{
		"numRestarts":                  strconv.FormatInt(j.restarts, 10),
		"fullRestarts":                 strconv.FormatInt(j.restarts, 10),
		"numberOfCompletedCheckpoints": strconv.FormatInt(j.counts.completed, 10),
		"numberOfFailedCheckpoints":    strconv.FormatInt(j.counts.failed, 10),
		"uptime":                       "0",
	}
	out := []metricJSON{}
	get := in.r.URL.Query().Get("get")
	if get == "" {
		for _, k := range sortedKeys(values) {
			out = append(out, metricJSON{ID: k})
		}
		return okReply(out)
	}
	for _, name := range strings.Split(get, ",") {
		if v, ok := values[strings.TrimSpace(name)]; ok {
			out = append(out, metricJSON{ID: strings.TrimSpace(name), Value: v})
		}
	}
	return okReply(out)
}

// AddRestarts counts n more restarts of a job (its numRestarts metric), as
// Flink does each time the job restarts after a failure.
func (s *Server) AddRestarts(id string, n int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	j, err := s.job(id)
	if err != nil {
		return err
	}
	j.restarts += n
	return nil
}
