package fakejm

import (
	"time"
)

// Asynchronous operations follow Flink's DispatcherCachedOperationsHandler:
// an operation is keyed by (cache, job id, trigger id); triggering an
// existing key returns the same trigger id and starts nothing; a completed
// result is kept for the store duration and then forgotten (404); a
// restart forgets everything. Savepoints and stop-with-savepoint share one
// cache (both are polled at /jobs/:id/savepoints/:triggerid).

// OperationKind names an asynchronous operation.
type OperationKind string

// Operation kinds.
const (
	OpSavepoint         OperationKind = "savepoint"
	OpStopWithSavepoint OperationKind = "stop-with-savepoint"
	OpCheckpoint        OperationKind = "checkpoint"
	OpDisposal          OperationKind = "savepoint-disposal"
)

// cacheOf maps an operation kind to the Flink result cache it lives in.
func cacheOf(k OperationKind) string {
	switch k {
	case OpSavepoint, OpStopWithSavepoint:
		return "savepoint"
	case OpCheckpoint:
		return "checkpoint"
	}
	return "disposal"
}

type opKey struct {
	cache, jobID, triggerID string
}

// OperationRecord describes an operation that was actually started (a
// repeated trigger with a known id does not produce a record).
type OperationRecord struct {
	Kind            OperationKind
	JobID           string // empty for disposal
	TriggerID       string
	TargetDirectory string
	CancelJob       bool
	Drain           bool
	FormatType      string
	CheckpointType  string
	SavepointPath   string // disposal
	Time            time.Time
}

type operation struct {
	rec         OperationRecord
	polls       int
	readyAt     time.Time
	done        bool
	completedAt time.Time
	stat        *checkpointStat // savepoints/checkpoints: the history entry

	// Results.
	location     string
	checkpointID int64
	failure      *failureCause
}

// register starts op unless its key is known; it reports whether op was
// started. The caller holds s.mu.
func (s *Server) register(op *operation) (started bool) {
	key := opKey{cacheOf(op.rec.Kind), op.rec.JobID, op.rec.TriggerID}
	if _, ok := s.ops[key]; ok {
		return false
	}
	now := s.now()
	op.rec.Time = now
	op.readyAt = now.Add(s.completionDelay)
	s.ops[key] = op
	s.started = append(s.started, op.rec)
	return true
}

// lookupOp returns the operation for key, if Flink would still know it.
func (s *Server) lookupOp(key opKey) (*operation, bool) {
	op, ok := s.ops[key]
	return op, ok
}

// ready reports whether a pending op may complete now.
func (s *Server) ready(op *operation) bool {
	return op.polls >= s.completionPolls && !s.now().Before(op.readyAt)
}

// progressOps completes operations whose time has come and forgets
// results older than the store duration.
func (s *Server) progressOps() {
	now := s.now()
	for key, op := range s.ops {
		if !op.done && s.ready(op) {
			s.complete(op)
		}
		if op.done && !now.Before(op.completedAt.Add(s.opts.StoreDuration)) {
			delete(s.ops, key)
		}
	}
}

// finish records the outcome of op.
func (s *Server) finish(op *operation, failure *failureCause) {
	op.done = true
	op.completedAt = s.now()
	op.failure = failure
}

// failNow completes op immediately with a failure; used for conditions
// Flink detects at trigger time (unknown job, job not running).
func (s *Server) failNow(op *operation, class, message string) {
	s.finish(op, newFailure(class, message))
}
