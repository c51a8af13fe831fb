package fakejm

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/flinkops/flink-operator/pkg/flink"
)

// Job endpoints: listing, details, status, cancel, exceptions.

// lookupJob resolves the {jobid} path parameter the way Flink does: a
// malformed id is a 400, an unknown one a 404.
func (s *Server) lookupJob(in *inbound) (*job, *reply) {
	id := in.pathValue("jobid")
	if !flink.IsValidID(id) {
		r := restError(http.StatusBadRequest, fmt.Sprintf("Bad request, could not parse parameters: Cannot resolve path parameter (jobid) from value %q.", id))
		return nil, &r
	}
	j, found := s.jobs[id]
	if !found {
		r := restError(http.StatusNotFound, "Job "+id+" not found",
			"org.apache.flink.runtime.messages.FlinkJobNotFoundException: Could not find Flink job ("+id+")")
		return nil, &r
	}
	return j, nil
}

func msOrMinus1(j *job) int64 {
	if j.endTime.IsZero() {
		return -1
	}
	return j.endTime.UnixMilli()
}

func (s *Server) duration(j *job) int64 {
	end := j.endTime
	if end.IsZero() {
		end = s.now()
	}
	return end.Sub(j.startTime).Milliseconds()
}

func (s *Server) getJobs(*inbound) reply {
	jobs := []any{}
	for _, j := range s.sortedJobs() {
		jobs = append(jobs, map[string]any{"id": j.id, "status": string(j.state)})
	}
	return okReply(map[string]any{"jobs": jobs})
}

func (s *Server) getJobsOverview(*inbound) reply {
	jobs := []any{}
	for _, j := range s.sortedJobs() {
		counts := j.taskCounts()
		tasks := map[string]any{"total": j.numTasks()}
		for _, st := range allExecutionStates {
			tasks[strings.ToLower(string(st))] = counts[st]
		}
		m := map[string]any{
			"jid":               j.id,
			"name":              j.name,
			"state":             string(j.state),
			"start-time":        j.startTime.UnixMilli(),
			"end-time":          msOrMinus1(j),
			"duration":          s.duration(j),
			"last-modification": j.timestamps[j.state],
			"tasks":             tasks,
		}
		if s.opts.Version.AtLeast(flink.V2_0) {
			m["pending-operators"] = 0
		}
		jobs = append(jobs, m)
	}
	return okReply(map[string]any{"jobs": jobs})
}

func (s *Server) getJob(in *inbound) reply {
	j, errRep := s.lookupJob(in)
	if errRep != nil {
		return *errRep
	}
	counts := j.taskCounts()
	statusCounts := map[string]any{}
	for _, st := range allExecutionStates {
		statusCounts[string(st)] = counts[st]
	}
	timestamps := map[string]any{}
	for _, st := range allJobStatuses {
		timestamps[string(st)] = j.timestamps[st]
	}
	vertexStatus, most := flink.TaskRunning, 0
	for _, st := range allExecutionStates {
		if counts[st] > most {
			vertexStatus, most = st, counts[st]
		}
	}
	vertices := []any{}
	views, total := j.vertexViews(), j.totalTasks() // graph.go
	for _, v := range views {
		vtasks := map[string]any{}
		for _, st := range allExecutionStates {
			vtasks[string(st)] = counts[st] * v.parallelism / max(total, 1)
		}
		vertex := map[string]any{
			"id": v.id, "name": v.name, "maxParallelism": v.maxParallelism, "parallelism": v.parallelism,
			"status": string(vertexStatus), "start-time": j.startTime.UnixMilli(), "end-time": msOrMinus1(j),
			"duration": s.duration(j), "tasks": vtasks,
			"metrics": map[string]any{
				"read-bytes": 0, "read-bytes-complete": true, "write-bytes": 0, "write-bytes-complete": true,
				"read-records": 0, "read-records-complete": true, "write-records": 0, "write-records-complete": true,
				"accumulated-backpressured-time": 0, "accumulated-idle-time": 0, "accumulated-busy-time": 0.0,
			},
		}
		if j.graph != nil && j.graph.omitMaxPar {
			delete(vertex, "maxParallelism")
		}
		vertices = append(vertices, vertex)
	}
	m := map[string]any{
		"jid":            j.id,
		"name":           j.name,
		"isStoppable":    false,
		"state":          string(j.state),
		"start-time":     j.startTime.UnixMilli(),
		"end-time":       msOrMinus1(j),
		"duration":       s.duration(j),
		"maxParallelism": -1,
		"now":            s.now().UnixMilli(),
		"timestamps":     timestamps,
		"vertices":       vertices,
		"status-counts":  statusCounts,
		"plan":           j.plan(),
	}
	if j.graph != nil && j.graph.omitPlan {
		delete(m, "plan")
	}
	if s.opts.Version.AtLeast(flink.V1_20) {
		m["job-type"] = "STREAMING"
	}
	if s.opts.Version.AtLeast(flink.V2_0) {
		m["pending-operators"] = 0
		m["stream-graph"] = map[string]any{"nodes": []any{}}
	}
	return okReply(m)
}

func (s *Server) getJobStatus(in *inbound) reply {
	if !s.opts.Version.SupportsJobStatusEndpoint() {
		return notFoundRoute(in.r.URL.Path)
	}
	id := in.pathValue("jobid")
	j, found := s.jobs[id]
	if !found {
		// The handler has no 404 mapping: the lookup failure surfaces as 500.
		return internalError("java.util.concurrent.CompletionException: org.apache.flink.runtime.messages.FlinkJobNotFoundException: Could not find Flink job (" + id + ")")
	}
	return okReply(map[string]any{"status": string(j.state)})
}

// cancelJob is PATCH /jobs/:jobid?mode=cancel.
func (s *Server) cancelJob(in *inbound) reply {
	mode := strings.ToLower(in.r.URL.Query().Get("mode"))
	switch mode {
	case "", "cancel":
	case "stop":
		return restError(http.StatusPermanentRedirect, `The termination mode "stop" has been removed. For an ungraceful shutdown, please use "cancel" instead. For a graceful shutdown, please use "jobs/:jobId/stop" instead.`)
	default:
		return restError(http.StatusBadRequest, fmt.Sprintf("Bad request, could not parse parameters: Cannot resolve query parameter (mode) from value %q.", mode))
	}
	id := in.pathValue("jobid")
	if !flink.IsValidID(id) {
		return restError(http.StatusBadRequest, fmt.Sprintf("Bad request, could not parse parameters: Cannot resolve path parameter (jobid) from value %q.", id))
	}
	j, found := s.jobs[id]
	if !found {
		return restError(http.StatusNotFound, "Job could not be found.",
			"org.apache.flink.runtime.messages.FlinkJobNotFoundException: Could not find Flink job ("+id+")")
	}
	if j.state.IsGloballyTerminal() {
		return restError(http.StatusConflict, fmt.Sprintf("Job cancellation failed because the job has already reached another terminal state (%s).", j.state),
			"org.apache.flink.runtime.messages.FlinkJobTerminatedWithoutCancellationException: Job "+id+" has already been terminated.")
	}
	s.setState(j, flink.JobCanceled)
	s.dropCheckpointsOnCancel(j)
	return acceptedReply(map[string]any{}) // EmptyResponseBody
}

func (s *Server) getExceptions(in *inbound) reply {
	j, errRep := s.lookupJob(in)
	if errRep != nil {
		return *errRep
	}
	v := s.opts.Version
	entries := []any{}
	for _, e := range j.exceptions {
		m := map[string]any{
			"exceptionName":        e.name,
			"stacktrace":           e.stacktrace,
			"timestamp":            e.timestamp,
			"taskName":             e.taskName,
			"taskManagerId":        "127.0.0.1:40000-000001",
			"concurrentExceptions": []any{},
		}
		if v.AtLeast(flink.V1_18) {
			m["failureLabels"] = map[string]any{}
		}
		if v.AtLeast(flink.V1_19) {
			m["endpoint"] = "127.0.0.1:40000"
		}
		if v.HasLegacyExceptionFields() {
			m["location"] = "127.0.0.1:40000"
		}
		entries = append(entries, m)
	}
	out := map[string]any{"exceptionHistory": map[string]any{"entries": entries, "truncated": false}}
	if v.HasLegacyExceptionFields() {
		out["all-exceptions"] = []any{}
		out["truncated"] = false
		if len(j.exceptions) > 0 {
			out["root-exception"] = j.exceptions[0].stacktrace
			out["timestamp"] = j.exceptions[0].timestamp
		}
	}
	return okReply(out)
}
