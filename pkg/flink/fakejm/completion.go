package fakejm

import (
	"fmt"

	"github.com/flinkops/flink-operator/pkg/flink"
)

// What happens when an operation completes: savepoints and checkpoints
// are written and recorded in the statistics, stop-with-savepoint ends the
// job, disposal deletes the snapshot. Failures are Java-style causes.

// complete runs the operation's effect: write the snapshot, end the job,
// delete the savepoint.
func (s *Server) complete(op *operation) {
	switch op.rec.Kind {
	case OpSavepoint, OpStopWithSavepoint, OpCheckpoint:
		s.completeSnapshotOp(op)
	case OpDisposal:
		if err := s.disposeSnapshot(op.rec.SavepointPath); err != nil {
			s.finish(op, exceptionFailure(err))
			return
		}
		s.finish(op, nil)
	}
}

func (s *Server) completeSnapshotOp(op *operation) {
	j, ok := s.jobs[op.rec.JobID]
	if !ok {
		s.failNow(op, "org.apache.flink.runtime.messages.FlinkJobNotFoundException",
			fmt.Sprintf("Could not find Flink job (%s)", op.rec.JobID))
		return
	}
	fail := func(class, msg string) {
		if op.stat != nil {
			s.failCheckpoint(j, op.stat, msg)
		}
		s.failNow(op, class, msg)
	}
	if cause, injected := s.injectedFailure(op.rec.Kind, j.id); injected {
		fail("org.apache.flink.runtime.checkpoint.CheckpointException", cause)
		return
	}
	if j.state != flink.JobRunning {
		fail("org.apache.flink.runtime.checkpoint.CheckpointException",
			"Checkpoint Coordinator is suspending. Failure reason: job is "+string(j.state)+".")
		return
	}
	isSavepoint := op.rec.Kind != OpCheckpoint
	meta := Metadata{JobID: j.id, CheckpointID: op.stat.id, Savepoint: isSavepoint,
		FormatType: op.rec.FormatType, Timestamp: s.now().UnixMilli()}
	var loc string
	var err error
	switch {
	case isSavepoint:
		loc, err = s.writeSnapshot(op.rec.TargetDirectory, savepointDirName(j.id), meta)
	case s.opts.UnaddressableCheckpoints:
		loc = flink.NotAddressablePointer
	case s.opts.CheckpointDir != "":
		loc, err = s.writeSnapshot(s.opts.CheckpointDir+"/"+j.id, fmt.Sprintf("chk-%d", op.stat.id), meta)
	default:
		loc = fmt.Sprintf("file:/fakejm-checkpoints/%s/chk-%d", j.id, op.stat.id)
		s.recordSyntheticSnapshot(loc, meta)
	}
	if err != nil {
		fail("org.apache.flink.runtime.checkpoint.CheckpointException", err.Error())
		return
	}
	s.completeCheckpoint(j, op.stat, loc)
	op.location, op.checkpointID = loc, op.stat.id
	s.finish(op, nil)
	switch {
	case op.rec.Kind == OpStopWithSavepoint:
		s.setState(j, flink.JobFinished)
	case op.rec.Kind == OpSavepoint && op.rec.CancelJob:
		s.setState(j, flink.JobCanceled)
	}
}

// exceptionFailure turns a "java.x.Exception: message" error into a cause.
func exceptionFailure(err error) *failureCause {
	msg := err.Error()
	class, rest, ok := cutException(msg)
	if !ok {
		return newFailure("java.lang.Exception", msg)
	}
	return newFailure(class, rest)
}

// cutException splits "pkg.Class: message".
func cutException(s string) (class, msg string, ok bool) {
	for i := 0; i+1 < len(s); i++ {
		if s[i] == ':' && s[i+1] == ' ' {
			return s[:i], s[i+2:], true
		}
		if s[i] == ' ' {
			return "", "", false
		}
	}
	return "", "", false
}

// injectedFailure returns the failure a test asked for, if any.
func (s *Server) injectedFailure(k OperationKind, jobID string) (string, bool) {
	m := s.failSavepoints
	if k == OpCheckpoint {
		m = s.failCheckpoints
	}
	if cause, ok := m[jobID]; ok {
		return cause, true
	}
	cause, ok := m[""]
	return cause, ok
}
