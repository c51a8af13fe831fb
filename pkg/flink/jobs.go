package flink

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
)

// JobOverview is one entry of GET /jobs/overview (JobDetails in Flink's
// spec). Tasks counts tasks per ExecutionState with lower-case keys plus
// "total"; the operator uses it to tell a RUNNING job whose tasks are not
// yet all running.
type JobOverview struct {
	ID               string         `json:"jid"`
	Name             string         `json:"name"`
	State            JobStatus      `json:"state"`
	StartTime        int64          `json:"start-time"`
	EndTime          int64          `json:"end-time"` // -1 while running
	Duration         int64          `json:"duration"`
	LastModification int64          `json:"last-modification"`
	Tasks            map[string]int `json:"tasks"`
	PendingOperators int            `json:"pending-operators"` // 2.0+
}

// AllTasksRunning reports whether every task is RUNNING or FINISHED, the
// operator's test for a job that is really running rather than deploying.
func (j JobOverview) AllTasksRunning() bool {
	total := j.Tasks["total"]
	return total > 0 && j.Tasks["running"]+j.Tasks["finished"] == total
}

// JobDetails is GET /jobs/:jobid (JobDetailsInfo). Timestamps and
// StatusCounts are keyed by upper-case enum names, unlike JobOverview.Tasks.
type JobDetails struct {
	ID               string                 `json:"jid"`
	Name             string                 `json:"name"`
	IsStoppable      bool                   `json:"isStoppable"`
	State            JobStatus              `json:"state"`
	JobType          string                 `json:"job-type"` // 1.20+: BATCH or STREAMING
	StartTime        int64                  `json:"start-time"`
	EndTime          int64                  `json:"end-time"`
	Duration         int64                  `json:"duration"`
	MaxParallelism   int64                  `json:"maxParallelism"`
	Now              int64                  `json:"now"`
	Timestamps       map[JobStatus]int64    `json:"timestamps"`
	Vertices         []JobVertex            `json:"vertices"`
	StatusCounts     map[ExecutionState]int `json:"status-counts"`
	PendingOperators int                    `json:"pending-operators"` // 2.0+
	Plan             json.RawMessage        `json:"plan"`
}

// JobVertex is one vertex of JobDetails (JobDetailsVertexInfo).
type JobVertex struct {
	ID             string                 `json:"id"`
	Name           string                 `json:"name"`
	Parallelism    int                    `json:"parallelism"`
	MaxParallelism int                    `json:"maxParallelism"`
	Status         ExecutionState         `json:"status"`
	StartTime      int64                  `json:"start-time"`
	EndTime        int64                  `json:"end-time"`
	Duration       int64                  `json:"duration"`
	Tasks          map[ExecutionState]int `json:"tasks"`
}

// JobsOverview fetches GET /jobs/overview. The operator prefers it to the
// per-job status endpoint because one call covers every job and an unknown
// job is simply absent rather than an error.
func (c *Client) JobsOverview(ctx context.Context) ([]JobOverview, error) {
	var out struct {
		Jobs []JobOverview `json:"jobs"`
	}
	if err := c.getJSON(ctx, "/jobs/overview", nil, &out); err != nil {
		return nil, err
	}
	return out.Jobs, nil
}

// Job fetches GET /jobs/:jobid.
func (c *Client) Job(ctx context.Context, jobID string) (*JobDetails, error) {
	p, err := jobPath(http.MethodGet, jobID, "")
	if err != nil {
		return nil, err
	}
	var out JobDetails
	if err := c.getJSON(ctx, p, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// CancelJob sends PATCH /jobs/:jobid?mode=cancel. Flink answers 202 once
// cancellation has started; the job reaches CANCELED asynchronously. A job
// that already ended gives a Conflict error (see IsJobAlreadyTerminal), an
// unknown job NotFound.
func (c *Client) CancelJob(ctx context.Context, jobID string) error {
	p, err := jobPath(http.MethodPatch, jobID, "")
	if err != nil {
		return err
	}
	return c.do(ctx, call{method: http.MethodPatch, path: p, query: url.Values{"mode": {"cancel"}}})
}
