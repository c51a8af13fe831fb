package flink

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"
)

// maxErrorBody caps how much of an error response is read: Flink's error
// texts are stack traces, long but bounded; a proxy's HTML page is not.
const maxErrorBody = 1 << 20

// call describes one HTTP exchange with the JobManager.
type call struct {
	method string
	path   string // already escaped, starting with "/"
	query  url.Values
	body   io.Reader // nil for no body
	// contentLength is the body length when known and the body is not a
	// type net/http measures itself; 0 or -1 means unknown (chunked).
	contentLength int64
	contentType   string
	timeout       time.Duration // 0 means the client's default
	out           any           // decoded from a 2xx body when non-nil
}

// jsonBody marshals v for a request body. Request types are plain structs
// and maps, so marshalling cannot fail in practice; the error is kept so a
// future type mistake shows up as an error, not a panic.
func jsonBody(v any) (io.Reader, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return bytes.NewReader(b), nil
}

// do performs c, enforcing the per-call timeout and turning every failure
// into an *Error.
func (c *Client) do(ctx context.Context, cl call) error {
	timeout := cl.timeout
	if timeout <= 0 {
		timeout = c.timeout
	}
	callCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	var err error
	u := *c.base
	u.RawPath = c.base.EscapedPath() + cl.path
	if u.Path, err = url.PathUnescape(u.RawPath); err != nil {
		return &Error{Kind: KindBadRequest, Method: cl.method, Path: cl.path, Message: "invalid path", Err: err}
	}
	if len(cl.query) > 0 {
		u.RawQuery = cl.query.Encode()
	}
	req, err := http.NewRequestWithContext(callCtx, cl.method, u.String(), cl.body)
	if err != nil {
		return &Error{Kind: KindBadRequest, Method: cl.method, Path: cl.path, Message: "cannot build request", Err: err}
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", c.userAgent)
	if cl.contentLength > 0 {
		req.ContentLength = cl.contentLength
	}
	if cl.contentType != "" {
		req.Header.Set("Content-Type", cl.contentType)
	}

	resp, err := c.http.Do(req)
	if err != nil {
		return c.transportError(ctx, cl, timeout, err)
	}
	defer func() {
		// Drain a little so the connection can be reused, then close.
		_, _ = io.CopyN(io.Discard, resp.Body, 4<<10)
		_ = resp.Body.Close()
	}()

	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		body, rerr := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
		e := &Error{
			Kind:       kindForStatus(resp.StatusCode),
			StatusCode: resp.StatusCode,
			Method:     cl.method,
			Path:       cl.path,
			Errors:     parseErrorBody(body),
		}
		if rerr != nil && len(e.Errors) == 0 {
			e.Err = rerr
		}
		return e
	}
	if cl.out == nil {
		return nil
	}
	if err := decodeJSON(resp.Body, cl.out); err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return &Error{Kind: KindCanceled, Method: cl.method, Path: cl.path, Err: ctxErr}
		}
		var se *json.SyntaxError
		var te *json.UnmarshalTypeError
		if errors.As(err, &se) || errors.As(err, &te) || errors.Is(err, errEmptyBody) {
			return &Error{Kind: KindUnexpected, StatusCode: resp.StatusCode, Method: cl.method, Path: cl.path,
				Message: "cannot decode response", Err: err}
		}
		// Anything else is the connection breaking mid-body.
		return &Error{Kind: KindUnavailable, StatusCode: resp.StatusCode, Method: cl.method, Path: cl.path,
			Message: "reading response failed", Err: err}
	}
	return nil
}

// transportError classifies a failure that produced no HTTP response. The
// caller's own cancellation is not retryable; everything else (refused or
// reset connections, DNS hiccups during pod restarts, the per-call timeout)
// is, because a JobManager that is restarting looks exactly like that.
func (c *Client) transportError(ctx context.Context, cl call, timeout time.Duration, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return &Error{Kind: KindCanceled, Method: cl.method, Path: cl.path, Err: err}
	}
	msg := "request failed"
	if errors.Is(err, context.DeadlineExceeded) {
		msg = fmt.Sprintf("no answer within %s", timeout)
	}
	return &Error{Kind: KindUnavailable, Method: cl.method, Path: cl.path, Message: msg, Err: err}
}
