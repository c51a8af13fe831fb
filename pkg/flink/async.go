package flink

import (
	"strings"
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

// Message returns a one-line description: the first line of the stack trace
// (which is "ExceptionClass: message"), else the class name.
func (f FailureCause) Message() string {
	if line, _, _ := strings.Cut(strings.TrimSpace(f.StackTrace), "\n"); strings.TrimSpace(line) != "" {
		return strings.TrimSpace(line)
	}
	if f.Class != "" {
		return f.Class
	}
	if f.SerializedThrowable != "" {
		return "unknown failure (only a serialized Java exception was returned)"
	}
	return "unknown failure (no cause returned)"
}

// Contains reports whether the class or stack trace mentions substr, for
// recognising specific Java exceptions in the cause chain.
func (f FailureCause) Contains(substr string) bool {
	return strings.Contains(f.Class, substr) || strings.Contains(f.StackTrace, substr)
}
