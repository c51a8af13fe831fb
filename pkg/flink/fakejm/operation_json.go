package fakejm

// The wire form of an operation status, which differs per operation kind
// exactly as in Flink: SavepointInfo and AsynchronousOperationInfo use
// "failure-cause", CheckpointInfo uses "checkpointId"/"failureCause".

// failureCause is Flink's SerializedThrowable as serialised on the wire.
type failureCause struct {
	Class               string `json:"class"`
	StackTrace          string `json:"stack-trace"`
	SerializedThrowable string `json:"serialized-throwable"`
}

func newFailure(class, message string) *failureCause {
	return &failureCause{
		Class:      class,
		StackTrace: class + ": " + message + fakeFrames,
		// Real Flink sends base64 of a Java-serialised exception; clients
		// cannot use it, so the fake sends a recognisable placeholder.
		SerializedThrowable: "rO0ABXNyAC9mYWtlam0=",
	}
}

// statusJSON renders AsynchronousOperationResult for op.
func (op *operation) statusJSON() map[string]any {
	if !op.done {
		return map[string]any{"status": map[string]any{"id": "IN_PROGRESS"}, "operation": nil}
	}
	var operation map[string]any
	switch op.rec.Kind {
	case OpCheckpoint: // CheckpointInfo: NON_NULL, camelCase keys
		if op.failure != nil {
			operation = map[string]any{"failureCause": op.failure}
		} else {
			operation = map[string]any{"checkpointId": op.checkpointID}
		}
	case OpDisposal: // AsynchronousOperationInfo: NON_NULL
		operation = map[string]any{}
		if op.failure != nil {
			operation["failure-cause"] = op.failure
		}
	default: // SavepointInfo: NON_NULL, exactly one key
		if op.failure != nil {
			operation = map[string]any{"failure-cause": op.failure}
		} else {
			operation = map[string]any{"location": op.location}
		}
	}
	return map[string]any{"status": map[string]any{"id": "COMPLETED"}, "operation": operation}
}
