package fakejm

import (
	"fmt"
	"strings"
)

// VertexLoad is a vertex's load in the metrics the job autoscaler reads,
// for tests that drive load without naming Flink's metrics: SetVertexLoad
// spreads it evenly over the vertex's subtasks.
type VertexLoad struct {
	// BusyTimeMsPerSecond and BackPressuredTimeMsPerSecond are per
	// subtask, 0..1000.
	BusyTimeMsPerSecond          float64
	BackPressuredTimeMsPerSecond float64
	// RecordsInPerSecond and RecordsOutPerSecond are the vertex's totals.
	// A source reads RecordsInPerSecond: its task in-rate stays 0, as on
	// Flink, and the rate shows as the source operator's
	// "<op>.numRecordsOutPerSecond" (and "<op>.numRecordsInPerSecond").
	RecordsInPerSecond  float64
	RecordsOutPerSecond float64
	// PendingRecords is a source's total backlog, reported as
	// "<op>.pendingRecords"; negative: the source does not report it.
	PendingRecords float64
}

// MetricScopeName is how Flink's metric query service spells an operator
// name in metric ids: ' ', '.', ':' and ',' become '_' ("Source: in" ->
// "Source__in"). (Flink also cuts operator names at 80 characters; the
// fake does not.)
func MetricScopeName(operator string) string {
	return strings.Map(func(r rune) rune {
		switch r {
		case ' ', '.', ':', ',':
			return '_'
		}
		return r
	}, operator)
}

// SetVertexLoad replaces the vertex's metrics with the ones describing
// load. A vertex without inputs is a source; its operator metrics are
// named after MetricScopeName of the vertex name.
func (s *Server) SetVertexLoad(jobID, vertexID string, l VertexLoad) error {
	s.mu.Lock()
	j, err := s.job(jobID)
	var v *graphVertex
	if err == nil {
		if v = j.graphOf().vertex(vertexID); v == nil {
			err = fmt.Errorf("fakejm: job %s has no vertex %s", jobID, vertexID)
		}
	}
	if err != nil {
		s.mu.Unlock()
		return err
	}
	n := j.vertexParallelism(v)
	each := func(x float64) []float64 {
		out := make([]float64, n)
		for i := range out {
			out[i] = x
		}
		return out
	}
	m := map[string][]float64{
		"busyTimeMsPerSecond":          each(l.BusyTimeMsPerSecond),
		"backPressuredTimeMsPerSecond": each(l.BackPressuredTimeMsPerSecond),
		"idleTimeMsPerSecond":          each(max(0, 1000-l.BusyTimeMsPerSecond-l.BackPressuredTimeMsPerSecond)),
		"numRecordsInPerSecond":        each(l.RecordsInPerSecond / float64(n)),
		"numRecordsOutPerSecond":       each(l.RecordsOutPerSecond / float64(n)),
	}
	if len(v.inputs) == 0 {
		op := MetricScopeName(v.name)
		m["numRecordsInPerSecond"] = each(0)
		m[op+".numRecordsInPerSecond"] = each(l.RecordsInPerSecond / float64(n))
		m[op+".numRecordsOutPerSecond"] = each(l.RecordsInPerSecond / float64(n))
		if l.PendingRecords >= 0 {
			m[op+".pendingRecords"] = each(l.PendingRecords / float64(n))
		}
	}
	v.metrics = m
	s.mu.Unlock()
	return nil
}
