package flink

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
)

// Kind classifies a failed call by what the caller should do about it,
// rather than by HTTP status, because several statuses (and transport
// failures that have no status at all) call for the same reaction.
type Kind int

const (
	// KindUnexpected is a response the client cannot make sense of: an
	// unclassified HTTP status or an undecodable body.
	KindUnexpected Kind = iota
	// KindBadRequest is HTTP 400 (or a request the client refused to send
	// because an argument is malformed). Retrying the same request will
	// fail the same way.
	KindBadRequest
	// KindNotFound is HTTP 404: unknown job, jar, checkpoint, or a trigger
	// id whose result Flink has already forgotten (rest.async.store-duration).
	KindNotFound
	// KindConflict is HTTP 409, e.g. cancelling a job that already reached
	// another terminal state.
	KindConflict
	// KindUnavailable is a transient failure: 502/503/504/408/429, connection
	// refused or reset, or the per-call timeout. Retrying later may succeed.
	KindUnavailable
	// KindServerError is HTTP 500 (or another 5xx not listed as unavailable):
	// an exception inside the JobManager.
	KindServerError
	// KindUnsupported means the configured Flink version cannot do what was
	// asked (e.g. a checkpoint trigger before 1.17); nothing was sent.
	KindUnsupported
	// KindCanceled means the caller's own context was canceled or expired.
	KindCanceled
)

var kindNames = [...]string{
	KindUnexpected:  "unexpected",
	KindBadRequest:  "bad request",
	KindNotFound:    "not found",
	KindConflict:    "conflict",
	KindUnavailable: "unavailable",
	KindServerError: "server error",
	KindUnsupported: "unsupported",
	KindCanceled:    "canceled",
}

func (k Kind) String() string {
	if k >= 0 && int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// Error is returned by every Client method that fails. It keeps Flink's
// own error text (the errors[] array, usually a stringified Java exception
// with stack trace) so callers can match on exception names, and the HTTP
// method and path so logs say which call failed.
type Error struct {
	Kind       Kind
	StatusCode int    // HTTP status; 0 when no response was received
	Method     string // HTTP method of the failed call
	Path       string // request path (without base URL and query)
	// Errors is Flink's "errors" array verbatim; for a RestHandlerException
	// errors[0] is the whole exception including "\n\tat ..." frames.
	Errors []string
	// Message is a client-side explanation when Flink gave none (transport
	// failures, version gates, decode failures).
	Message string
	// Err is the underlying cause (network error, context error, JSON error).
	Err error
}

// Error renders a one-line summary: stack frames are dropped so that log
// lines stay readable; the full text remains in Errors.
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("flink")
	if e.Method != "" || e.Path != "" {
		fmt.Fprintf(&b, " %s %s", e.Method, e.Path)
	}
	if e.StatusCode != 0 {
		fmt.Fprintf(&b, ": HTTP %d %s", e.StatusCode, http.StatusText(e.StatusCode))
	}
	fmt.Fprintf(&b, " (%s)", e.Kind)
	if e.Message != "" {
		b.WriteString(": ")
		b.WriteString(e.Message)
	}
	if s := e.Summary(); s != "" {
		b.WriteString(": ")
		b.WriteString(s)
	}
	if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

// Unwrap exposes the underlying cause to errors.Is/As.
func (e *Error) Unwrap() error { return e.Err }

// Retryable reports whether the same call may succeed later.
func (e *Error) Retryable() bool { return e.Kind == KindUnavailable }

// Summary returns the first line of each Flink error message, joined by
// "; ". Flink's 500 answers start with the generic "Internal server error."
// and carry the real cause in the second element, so all elements count.
func (e *Error) Summary() string {
	var parts []string
	for _, msg := range e.Errors {
		// 500 answers wrap the exception as "<Exception on server side:\n...".
		msg = strings.TrimPrefix(strings.TrimSpace(msg), "<Exception on server side:")
		line, _, _ := strings.Cut(strings.TrimSpace(msg), "\n")
		if line = strings.TrimSpace(line); line != "" {
			parts = append(parts, line)
		}
	}
	return strings.Join(parts, "; ")
}

// Contains reports whether any of Flink's error texts contains substr.
// Flink's errors are whole stringified exceptions whose wording varies
// between releases, so substring matching is the reliable way to recognise
// a specific cause (e.g. "DuplicateJobSubmissionException").
func (e *Error) Contains(substr string) bool {
	for _, msg := range e.Errors {
		if strings.Contains(msg, substr) {
			return true
		}
	}
	return strings.Contains(e.Message, substr)
}

// AsError returns the *Error inside err, if any.
func AsError(err error) (*Error, bool) {
	var fe *Error
	if errors.As(err, &fe) {
		return fe, true
	}
	return nil, false
}

// KindOf returns the Kind of the *Error inside err, and false when err
// carries no *Error.
func KindOf(err error) (Kind, bool) {
	if fe, ok := AsError(err); ok {
		return fe.Kind, true
	}
	return 0, false
}

func isKind(err error, k Kind) bool {
	got, ok := KindOf(err)
	return ok && got == k
}

// IsNotFound reports a 404: unknown job/jar/checkpoint or expired trigger id.
func IsNotFound(err error) bool { return isKind(err, KindNotFound) }

// IsConflict reports a 409.
func IsConflict(err error) bool { return isKind(err, KindConflict) }

// IsBadRequest reports a 400 or a locally rejected argument.
func IsBadRequest(err error) bool { return isKind(err, KindBadRequest) }

// IsUnavailable reports a transient failure (same as IsRetryable).
func IsUnavailable(err error) bool { return isKind(err, KindUnavailable) }

// IsServerError reports a 500.
func IsServerError(err error) bool { return isKind(err, KindServerError) }

// IsUnsupported reports a request the configured Flink version cannot serve.
func IsUnsupported(err error) bool { return isKind(err, KindUnsupported) }

// IsCanceled reports that the caller's context ended the call.
func IsCanceled(err error) bool { return isKind(err, KindCanceled) }

// IsRetryable reports whether repeating the call later may succeed.
func IsRetryable(err error) bool {
	fe, ok := AsError(err)
	return ok && fe.Retryable()
}

// IsJobAlreadyTerminal reports a cancel that found the job already in
// another terminal state. Flink answers 409 for that; the text check covers
// releases and proxies that turn it into another status.
func IsJobAlreadyTerminal(err error) bool {
	fe, ok := AsError(err)
	return ok && (fe.Kind == KindConflict || fe.Contains("already reached another terminal state"))
}

// IsDuplicateJob reports a jar run rejected because a job with the same id
// was already submitted (Flink's DuplicateJobSubmissionException, which
// reaches the client as a 400 "Could not execute application.").
func IsDuplicateJob(err error) bool {
	fe, ok := AsError(err)
	return ok && fe.Contains("DuplicateJobSubmissionException")
}

// kindForStatus maps an HTTP status of a failed call to a Kind.
func kindForStatus(status int) Kind {
	switch status {
	case http.StatusBadRequest:
		return KindBadRequest
	case http.StatusNotFound:
		return KindNotFound
	case http.StatusConflict:
		return KindConflict
	case http.StatusRequestTimeout, http.StatusTooManyRequests,
		http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return KindUnavailable
	}
	if status >= 500 {
		return KindServerError
	}
	return KindUnexpected
}
