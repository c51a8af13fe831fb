package flink

import (
	"strings"
	"unicode/utf8"
)

// Flink's asynchronous operations answer their status GET with
// {"status":{"id":"IN_PROGRESS"|"COMPLETED"},"operation":{...}|null}, where
// COMPLETED covers success and failure alike and the operation object is
// shaped differently per operation (and even spells the failure field
// differently: "failure-cause" for savepoints and disposal, "failureCause"
// for checkpoints). AsyncResult hides those differences.

// OperationState is the caller-facing state of an asynchronous operation.
type OperationState string

const (
	// OperationPending means Flink reports IN_PROGRESS.
	OperationPending OperationState = "Pending"
	// OperationSucceeded means COMPLETED with a result.
	OperationSucceeded OperationState = "Succeeded"
	// OperationFailed means COMPLETED with a failure cause (or with no
	// usable result at all).
	OperationFailed OperationState = "Failed"
)

// AsyncResult is the outcome of polling an asynchronous operation.
// Value is meaningful only when State is OperationSucceeded, Failure only
// when it is OperationFailed.
type AsyncResult[T any] struct {
	State   OperationState
	Value   T
	Failure *FailureCause
}

// SavepointResult is a savepoint or stop-with-savepoint result; Value is
// the savepoint location (e.g. "file:/savepoints/savepoint-abc123-0123456789ab").
type SavepointResult = AsyncResult[string]

// CheckpointResult is a checkpoint trigger result; Value is the checkpoint
// id. Flink does not return the path: use Client.CheckpointDetails.
type CheckpointResult = AsyncResult[int64]

// DisposalResult is a savepoint disposal result; it carries no value.
type DisposalResult = AsyncResult[struct{}]

// Pending reports whether the operation is still running.
func (r AsyncResult[T]) Pending() bool { return r.State == OperationPending }

// Succeeded reports whether the operation completed successfully.
func (r AsyncResult[T]) Succeeded() bool { return r.State == OperationSucceeded }

// Failed reports whether the operation completed with a failure.
func (r AsyncResult[T]) Failed() bool { return r.State == OperationFailed }

// Err returns an *OperationError when the operation failed, else nil.
func (r AsyncResult[T]) Err() error {
	if r.State != OperationFailed {
		return nil
	}
	cause := FailureCause{}
	if r.Failure != nil {
		cause = *r.Failure
	}
	return &OperationError{Cause: cause}
}

// OperationError is a failed asynchronous operation. It is distinct from
// *Error: the REST call itself worked, Flink just reports that the
// savepoint/checkpoint/disposal failed.
type OperationError struct {
	Cause FailureCause
}

func (e *OperationError) Error() string {
	return "flink: operation failed: " + e.Cause.Message()
}

// FailureCause is Flink's SerializedThrowable as it appears on the wire.
// Flink's OpenAPI spec lists only serialized-throwable, but the custom
// serializer also writes "class" and "stack-trace", which are the readable
// parts.
type FailureCause struct {
	Class               string `json:"class,omitempty"`
	StackTrace          string `json:"stack-trace,omitempty"`
	SerializedThrowable string `json:"serialized-throwable,omitempty"`
}

// maxMessageLen bounds Message: it ends up in status.error and in events,
// which the API server truncates at 1 KiB.
const maxMessageLen = 800

// Message returns a short description: the first line of the stack trace
// (which is "ExceptionClass: message"), else the class name, followed by the
// innermost causes of the chain. Flink wraps the real reason several levels
// deep: a savepoint to a directory it cannot create says "CheckpointException:
// ... IO-problem detected." on top, "IOException: Failed to create savepoint
// directory at file:/..." one level above the root, and the file system's
// own exception (e.g. FileAlreadyExistsException naming the path in the way)
// at the root. Only the last two say what to fix.
func (f FailureCause) Message() string {
	trace := strings.TrimSpace(f.StackTrace)
	first, _, _ := strings.Cut(trace, "\n")
	first = strings.TrimSpace(first)
	if first == "" {
		switch {
		case f.Class != "":
			return f.Class
		case f.SerializedThrowable != "":
			return "unknown failure (only a serialized Java exception was returned)"
		}
		return "unknown failure (no cause returned)"
	}
	causes := Causes(trace)
	if len(causes) > 2 {
		causes = causes[len(causes)-2:]
	}
	// Both bounded, the causes kept whole if they can be: they name what to
	// fix. A cause the line before already quotes adds nothing.
	const sep = "; caused by: "
	tail, prev := "", first
	for _, c := range causes {
		if strings.Contains(prev, c) {
			continue
		}
		tail += sep + truncate(c, maxMessageLen/3)
		prev = c
	}
	return truncate(first, maxMessageLen-len(tail)) + tail
}

// Causes returns the "Caused by:" messages of a Java stack trace, outermost
// first (without the prefix), the continuation lines of a multi-line message
// joined by spaces. Causes of a "Suppressed:" section are indented and not
// part of the chain.
func Causes(trace string) []string {
	lines := strings.Split(trace, "\n")
	var out []string
	for i, l := range lines {
		if !strings.HasPrefix(l, "Caused by: ") {
			continue
		}
		parts := []string{strings.TrimSpace(strings.TrimPrefix(l, "Caused by: "))}
		for _, next := range lines[i+1:] {
			t := strings.TrimSpace(next)
			if t == "" || strings.HasPrefix(next, "\t") || strings.HasPrefix(t, "at ") || strings.HasPrefix(t, "... ") ||
				strings.HasPrefix(next, "Caused by: ") {
				break // the frames (or the next cause) begin: the message has ended
			}
			parts = append(parts, t)
		}
		out = append(out, strings.Join(parts, " "))
	}
	return out
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n - len("…")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// Contains reports whether the class or stack trace mentions substr, for
// recognising specific Java exceptions in the cause chain.
func (f FailureCause) Contains(substr string) bool {
	return strings.Contains(f.Class, substr) || strings.Contains(f.StackTrace, substr)
}
