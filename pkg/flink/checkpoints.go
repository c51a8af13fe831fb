package flink

import (
	"context"
	"net/http"
	"strconv"
)

// CheckpointRequest triggers a checkpoint (POST /jobs/:jobid/checkpoints,
// Flink 1.17+).
type CheckpointRequest struct {
	// Type is CONFIGURED (default when empty), FULL or INCREMENTAL.
	// INCREMENTAL is refused locally for 1.19+, which rejects it.
	Type CheckpointType
	// TriggerID makes the trigger idempotent; empty means a fresh id.
	TriggerID string
}

// checkpointTriggerBody is CheckpointTriggerRequestBody.
type checkpointTriggerBody struct {
	CheckpointType CheckpointType `json:"checkpointType,omitempty"`
	TriggerID      string         `json:"triggerId,omitempty"`
}

// TriggerCheckpoint starts a checkpoint and returns its trigger id. Poll it
// with CheckpointStatus; the path comes from CheckpointDetails.
func (c *Client) TriggerCheckpoint(ctx context.Context, jobID string, req CheckpointRequest) (string, error) {
	p, err := jobPath(http.MethodPost, jobID, "/checkpoints")
	if err != nil {
		return "", err
	}
	if !c.version.SupportsCheckpointTrigger() {
		return "", c.unsupported(http.MethodPost, p, "manual checkpoints need Flink 1.17 or newer")
	}
	if req.Type == CheckpointIncremental && c.version.RejectsIncrementalCheckpointTrigger() {
		return "", c.unsupported(http.MethodPost, p, "explicit INCREMENTAL checkpoints are rejected since 1.19 (FLINK-33723)")
	}
	tid, err := pickTriggerID(http.MethodPost, p, req.TriggerID)
	if err != nil {
		return "", err
	}
	return c.trigger(ctx, p, checkpointTriggerBody{CheckpointType: req.Type, TriggerID: tid})
}

// CheckpointStatus polls GET /jobs/:jobid/checkpoints/:triggerid.
func (c *Client) CheckpointStatus(ctx context.Context, jobID, triggerID string) (CheckpointResult, error) {
	p, err := jobPath(http.MethodGet, jobID, "/checkpoints/"+triggerID)
	if err != nil {
		return CheckpointResult{}, err
	}
	if !c.version.SupportsCheckpointTrigger() {
		return CheckpointResult{}, c.unsupported(http.MethodGet, p, "manual checkpoints need Flink 1.17 or newer")
	}
	if err := checkID(http.MethodGet, p, "trigger id", triggerID); err != nil {
		return CheckpointResult{}, err
	}
	ar, err := c.pollAsync(ctx, p)
	if err != nil {
		return CheckpointResult{}, err
	}
	res, err := ar.toCheckpointResult()
	if err != nil {
		return CheckpointResult{}, unexpected(http.MethodGet, p, err)
	}
	return res, nil
}

// Checkpoints fetches GET /jobs/:jobid/checkpoints. A job without
// checkpointing answers 404 ("Checkpointing has not been enabled.").
func (c *Client) Checkpoints(ctx context.Context, jobID string) (*CheckpointingStatistics, error) {
	p, err := jobPath(http.MethodGet, jobID, "/checkpoints")
	if err != nil {
		return nil, err
	}
	var out CheckpointingStatistics
	if err := c.getJSON(ctx, p, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// CheckpointDetails fetches GET /jobs/:jobid/checkpoints/details/:id.
// Checkpoints older than Flink's statistics window (web.checkpoints.history)
// give NotFound.
func (c *Client) CheckpointDetails(ctx context.Context, jobID string, checkpointID int64) (*CheckpointStatistics, error) {
	p, err := jobPath(http.MethodGet, jobID, "/checkpoints/details/"+strconv.FormatInt(checkpointID, 10))
	if err != nil {
		return nil, err
	}
	var out CheckpointStatistics
	if err := c.getJSON(ctx, p, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// CheckpointConfig fetches GET /jobs/:jobid/checkpoints/config.
func (c *Client) CheckpointConfig(ctx context.Context, jobID string) (*CheckpointConfig, error) {
	p, err := jobPath(http.MethodGet, jobID, "/checkpoints/config")
	if err != nil {
		return nil, err
	}
	var out CheckpointConfig
	if err := c.getJSON(ctx, p, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}
