package flink

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Wire forms of asynchronous-operation answers and their interpretation
// into AsyncResult. Kept apart from the public types because this is the
// part that must follow Flink's per-endpoint spellings exactly.

// queueStatus is Flink's QueueStatus.
type queueStatus struct {
	ID string `json:"id"`
}

const (
	queueInProgress = "IN_PROGRESS"
	queueCompleted  = "COMPLETED"
)

// asyncResponse is AsynchronousOperationResult with the operation left raw,
// because its shape depends on the endpoint.
type asyncResponse struct {
	Status    queueStatus     `json:"status"`
	Operation json.RawMessage `json:"operation"`
}

// triggerResponse is Flink's TriggerResponse.
type triggerResponse struct {
	RequestID string `json:"request-id"`
}

// savepointInfo is Flink's SavepointInfo (savepoint and stop-with-savepoint).
type savepointInfo struct {
	Location     string        `json:"location"`
	FailureCause *FailureCause `json:"failure-cause"`
}

// checkpointInfo is Flink's CheckpointInfo; note the camelCase failureCause.
type checkpointInfo struct {
	CheckpointID *int64        `json:"checkpointId"`
	FailureCause *FailureCause `json:"failureCause"`
}

// operationInfo is Flink's AsynchronousOperationInfo (savepoint disposal).
type operationInfo struct {
	FailureCause *FailureCause `json:"failure-cause"`
}

// done interprets the status part; it returns done=false for
// IN_PROGRESS and an error for a status the client does not know.
func (a asyncResponse) done() (bool, error) {
	switch a.Status.ID {
	case queueInProgress:
		return false, nil
	case queueCompleted:
		return true, nil
	}
	return false, fmt.Errorf("unknown operation status %q", a.Status.ID)
}

// hasOperation reports whether the operation field carries an object.
func (a asyncResponse) hasOperation() bool {
	s := strings.TrimSpace(string(a.Operation))
	return s != "" && s != "null"
}

func failed[T any](cause *FailureCause) AsyncResult[T] {
	return AsyncResult[T]{State: OperationFailed, Failure: cause}
}

func noResult(what string) *FailureCause {
	return &FailureCause{Class: "flink-client", StackTrace: "operation completed without " + what}
}

// toSavepointResult interprets a savepoint status answer. SavepointInfo is
// NON_NULL on the Flink side, so exactly one of location / failure-cause
// is present; a failure cause wins if a peer ever sent both.
func (a asyncResponse) toSavepointResult() (SavepointResult, error) {
	done, err := a.done()
	if err != nil || !done {
		return SavepointResult{State: OperationPending}, err
	}
	if !a.hasOperation() {
		return failed[string](noResult("a savepoint location")), nil
	}
	var info savepointInfo
	if err := json.Unmarshal(a.Operation, &info); err != nil {
		return SavepointResult{}, err
	}
	switch {
	case info.FailureCause != nil:
		return failed[string](info.FailureCause), nil
	case info.Location == "":
		return failed[string](noResult("a savepoint location")), nil
	}
	return SavepointResult{State: OperationSucceeded, Value: info.Location}, nil
}

// toCheckpointResult interprets a checkpoint trigger status answer.
func (a asyncResponse) toCheckpointResult() (CheckpointResult, error) {
	done, err := a.done()
	if err != nil || !done {
		return CheckpointResult{State: OperationPending}, err
	}
	if !a.hasOperation() {
		return failed[int64](noResult("a checkpoint id")), nil
	}
	var info checkpointInfo
	if err := json.Unmarshal(a.Operation, &info); err != nil {
		return CheckpointResult{}, err
	}
	switch {
	case info.FailureCause != nil:
		return failed[int64](info.FailureCause), nil
	case info.CheckpointID == nil:
		return failed[int64](noResult("a checkpoint id")), nil
	}
	return CheckpointResult{State: OperationSucceeded, Value: *info.CheckpointID}, nil
}

// toDisposalResult interprets a disposal status answer: success is an
// empty operation object ({}), failure carries failure-cause.
func (a asyncResponse) toDisposalResult() (DisposalResult, error) {
	done, err := a.done()
	if err != nil || !done {
		return DisposalResult{State: OperationPending}, err
	}
	if a.hasOperation() {
		var info operationInfo
		if err := json.Unmarshal(a.Operation, &info); err != nil {
			return DisposalResult{}, err
		}
		if info.FailureCause != nil {
			return failed[struct{}](info.FailureCause), nil
		}
	}
	return DisposalResult{State: OperationSucceeded}, nil
}
