package flink

import (
	"context"
	"net/http"
)

// savepointDisposalBody is SavepointDisposalRequest. Disposal has no
// client-chosen trigger id, so a retried disposal may run twice; that is
// harmless because deleting an already deleted savepoint just fails.
type savepointDisposalBody struct {
	SavepointPath string `json:"savepoint-path"`
}

// DisposeSavepoint asks Flink to delete a savepoint (POST
// /savepoint-disposal) and returns the trigger id to poll with
// DisposalStatus. Flink answers 200 here, not 202.
func (c *Client) DisposeSavepoint(ctx context.Context, savepointPath string) (string, error) {
	const p = "/savepoint-disposal"
	if savepointPath == "" {
		return "", &Error{Kind: KindBadRequest, Method: http.MethodPost, Path: p, Message: "empty savepoint path"}
	}
	return c.trigger(ctx, p, savepointDisposalBody{SavepointPath: savepointPath})
}

// DisposalStatus polls GET /savepoint-disposal/:triggerid.
func (c *Client) DisposalStatus(ctx context.Context, triggerID string) (DisposalResult, error) {
	p := "/savepoint-disposal/" + triggerID
	if err := checkID(http.MethodGet, p, "trigger id", triggerID); err != nil {
		return DisposalResult{}, err
	}
	ar, err := c.pollAsync(ctx, p)
	if err != nil {
		return DisposalResult{}, err
	}
	res, err := ar.toDisposalResult()
	if err != nil {
		return DisposalResult{}, unexpected(http.MethodGet, p, err)
	}
	return res, nil
}
