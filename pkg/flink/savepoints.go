package flink

import (
	"context"
	"net/http"
)

// SavepointRequest triggers a savepoint (POST /jobs/:jobid/savepoints).
type SavepointRequest struct {
	// TargetDirectory is where the savepoint goes; empty means the
	// cluster's configured savepoint dir (Flink answers 400 if none).
	TargetDirectory string
	// CancelJob cancels the job after the savepoint (the job ends CANCELED).
	CancelJob bool
	// FormatType is CANONICAL (default when empty) or NATIVE.
	FormatType SavepointFormatType
	// TriggerID makes the trigger idempotent: re-sending the same id while
	// Flink remembers it returns the same operation instead of starting a
	// new one. Empty means the client picks a fresh id.
	TriggerID string
}

// StopRequest stops a job with a savepoint (POST /jobs/:jobid/stop).
type StopRequest struct {
	TargetDirectory string
	// Drain emits MAX_WATERMARK before stopping (terminate rather than suspend).
	Drain      bool
	FormatType SavepointFormatType
	TriggerID  string
}

// savepointTriggerBody is SavepointTriggerRequestBody: note the kebab-case
// target-directory and cancel-job next to camelCase formatType/triggerId.
type savepointTriggerBody struct {
	TargetDirectory string              `json:"target-directory,omitempty"`
	CancelJob       bool                `json:"cancel-job"`
	FormatType      SavepointFormatType `json:"formatType,omitempty"`
	TriggerID       string              `json:"triggerId,omitempty"`
}

// stopWithSavepointBody is StopWithSavepointRequestBody: here the target
// directory is camelCase targetDirectory.
type stopWithSavepointBody struct {
	TargetDirectory string              `json:"targetDirectory,omitempty"`
	Drain           bool                `json:"drain"`
	FormatType      SavepointFormatType `json:"formatType,omitempty"`
	TriggerID       string              `json:"triggerId,omitempty"`
}

// pickTriggerID validates a caller-supplied trigger id or makes one.
func pickTriggerID(method, path, id string) (string, error) {
	if id == "" {
		return NewTriggerID(), nil
	}
	return id, checkID(method, path, "trigger id", id)
}

// TriggerSavepoint starts a savepoint and returns its trigger id (the one
// in req.TriggerID when set). Poll it with SavepointStatus.
func (c *Client) TriggerSavepoint(ctx context.Context, jobID string, req SavepointRequest) (string, error) {
	p, err := jobPath(http.MethodPost, jobID, "/savepoints")
	if err != nil {
		return "", err
	}
	tid, err := pickTriggerID(http.MethodPost, p, req.TriggerID)
	if err != nil {
		return "", err
	}
	return c.trigger(ctx, p, savepointTriggerBody{
		TargetDirectory: req.TargetDirectory,
		CancelJob:       req.CancelJob,
		FormatType:      req.FormatType,
		TriggerID:       tid,
	})
}

// StopWithSavepoint stops the job with a savepoint and returns the trigger
// id. Its result is polled with SavepointStatus, as Flink's own client does;
// after success the job reaches FINISHED.
func (c *Client) StopWithSavepoint(ctx context.Context, jobID string, req StopRequest) (string, error) {
	p, err := jobPath(http.MethodPost, jobID, "/stop")
	if err != nil {
		return "", err
	}
	tid, err := pickTriggerID(http.MethodPost, p, req.TriggerID)
	if err != nil {
		return "", err
	}
	return c.trigger(ctx, p, stopWithSavepointBody{
		TargetDirectory: req.TargetDirectory,
		Drain:           req.Drain,
		FormatType:      req.FormatType,
		TriggerID:       tid,
	})
}

// SavepointStatus polls GET /jobs/:jobid/savepoints/:triggerid. An unknown
// or expired trigger id is a NotFound error: Flink forgets results after
// rest.async.store-duration (5 min by default) and after a restart.
func (c *Client) SavepointStatus(ctx context.Context, jobID, triggerID string) (SavepointResult, error) {
	p, err := jobPath(http.MethodGet, jobID, "/savepoints/"+triggerID)
	if err != nil {
		return SavepointResult{}, err
	}
	if err := checkID(http.MethodGet, p, "trigger id", triggerID); err != nil {
		return SavepointResult{}, err
	}
	ar, err := c.pollAsync(ctx, p)
	if err != nil {
		return SavepointResult{}, err
	}
	res, err := ar.toSavepointResult()
	if err != nil {
		return SavepointResult{}, unexpected(http.MethodGet, p, err)
	}
	return res, nil
}
