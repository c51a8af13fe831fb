package flink

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
)

// Small helpers shared by the endpoint methods, so that each endpoint file
// only says which path, which body and which result type it uses.

// checkID rejects a malformed JobID/TriggerId before it reaches a URL.
func checkID(method, path, what, id string) error {
	if IsValidID(id) {
		return nil
	}
	return &Error{Kind: KindBadRequest, Method: method, Path: path,
		Message: fmt.Sprintf("invalid %s %q: want 32 lowercase hex characters", what, id)}
}

// unsupported builds the error for a request the version cannot serve.
func (c *Client) unsupported(method, path, format string, args ...any) error {
	return &Error{Kind: KindUnsupported, Method: method, Path: path,
		Message: fmt.Sprintf("Flink %s: ", c.version) + fmt.Sprintf(format, args...)}
}

// unexpected wraps a failure to interpret an otherwise successful answer.
func unexpected(method, path string, err error) error {
	return &Error{Kind: KindUnexpected, Method: method, Path: path, Message: "cannot interpret response", Err: err}
}

func (c *Client) getJSON(ctx context.Context, path string, query url.Values, out any) error {
	return c.do(ctx, call{method: http.MethodGet, path: path, query: query, out: out})
}

func (c *Client) sendJSON(ctx context.Context, method, path string, body, out any) error {
	r, err := jsonBody(body)
	if err != nil {
		return &Error{Kind: KindBadRequest, Method: method, Path: path, Message: "cannot encode request", Err: err}
	}
	return c.do(ctx, call{method: method, path: path, body: r, contentType: "application/json", out: out})
}

// trigger POSTs an asynchronous-operation trigger and returns Flink's
// request-id.
func (c *Client) trigger(ctx context.Context, path string, body any) (string, error) {
	var tr triggerResponse
	if err := c.sendJSON(ctx, http.MethodPost, path, body, &tr); err != nil {
		return "", err
	}
	if !IsValidID(tr.RequestID) {
		return "", unexpected(http.MethodPost, path, fmt.Errorf("invalid request-id %q", tr.RequestID))
	}
	return tr.RequestID, nil
}

// pollAsync GETs an asynchronous-operation status.
func (c *Client) pollAsync(ctx context.Context, path string) (asyncResponse, error) {
	var ar asyncResponse
	err := c.getJSON(ctx, path, nil, &ar)
	return ar, err
}

// jobPath returns "/jobs/<id><suffix>" after validating the id.
func jobPath(method, jobID, suffix string) (string, error) {
	p := "/jobs/" + jobID + suffix
	return p, checkID(method, p, "job id", jobID)
}
