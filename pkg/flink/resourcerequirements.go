package flink

import (
	"context"
	"net/http"
)

// Parallelism is the range of parallelism the adaptive scheduler may give
// a job vertex (Flink's JobVertexResourceRequirements.Parallelism).
type Parallelism struct {
	LowerBound int `json:"lowerBound"`
	UpperBound int `json:"upperBound"`
}

// VertexResourceRequirements is one vertex's entry of a job's resource
// requirements.
type VertexResourceRequirements struct {
	Parallelism Parallelism `json:"parallelism"`
}

// ResourceRequirements are a job's resource requirements by job vertex id
// (JobResourceRequirementsBody), Flink 1.18+.
type ResourceRequirements map[string]VertexResourceRequirements

// JobResourceRequirements fetches GET /jobs/:jobid/resource-requirements
// (Flink 1.18+).
func (c *Client) JobResourceRequirements(ctx context.Context, jobID string) (ResourceRequirements, error) {
	p, err := jobPath(http.MethodGet, jobID, "/resource-requirements")
	if err != nil {
		return nil, err
	}
	if c.version.Before(V1_18) {
		return nil, c.unsupported(http.MethodGet, p, "job resource requirements need Flink 1.18 or newer")
	}
	out := ResourceRequirements{}
	if err := c.getJSON(ctx, p, nil, &out); err != nil {
		return nil, err
	}
	return out, nil
}

// UpdateJobResourceRequirements sends PUT /jobs/:jobid/resource-requirements
// (Flink 1.18+, the adaptive scheduler): the job rescales within the new
// bounds without a restart of the job. The values are absolute, so the
// call is idempotent.
func (c *Client) UpdateJobResourceRequirements(ctx context.Context, jobID string, req ResourceRequirements) error {
	p, err := jobPath(http.MethodPut, jobID, "/resource-requirements")
	if err != nil {
		return err
	}
	if c.version.Before(V1_18) {
		return c.unsupported(http.MethodPut, p, "job resource requirements need Flink 1.18 or newer")
	}
	return c.sendJSON(ctx, http.MethodPut, p, req, nil)
}
