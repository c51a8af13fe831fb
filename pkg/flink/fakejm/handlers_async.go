package fakejm

import (
	"fmt"
	"net/http"

	"github.com/flinkops/flink-operator/pkg/flink"
)

// Trigger and status endpoints of the asynchronous operations.

// savepointDirKey is the config key Flink names when no target directory
// is given and none is configured.
func (s *Server) savepointDirKey() string {
	if s.opts.Version.AtLeast(flink.V2_0) {
		return "execution.checkpointing.savepoint-dir"
	}
	return "state.savepoints.dir"
}

// jobIDParam validates {jobid} without requiring the job to exist: Flink
// accepts triggers for unknown jobs and fails the operation later.
func jobIDParam(in *inbound) (string, *reply) {
	id := in.pathValue("jobid")
	if !flink.IsValidID(id) {
		r := restError(http.StatusBadRequest, fmt.Sprintf("Bad request, could not parse parameters: Cannot resolve path parameter (jobid) from value %q.", id))
		return "", &r
	}
	return id, nil
}

// startSnapshotOp registers a savepoint/stop/checkpoint operation and, if
// it is new, checks the job and opens its statistics entry.
func (s *Server) startSnapshotOp(op *operation, checkpointType string) reply {
	if !s.register(op) {
		return acceptedReply(map[string]any{"request-id": op.rec.TriggerID})
	}
	j, found := s.jobs[op.rec.JobID]
	switch {
	case !found:
		s.failNow(op, "org.apache.flink.runtime.messages.FlinkJobNotFoundException",
			fmt.Sprintf("Could not find Flink job (%s)", op.rec.JobID))
	case j.state != flink.JobRunning:
		s.failNow(op, "org.apache.flink.runtime.checkpoint.CheckpointException",
			fmt.Sprintf("Checkpoint triggering task %s of job %s is not being executed at the moment. Aborting checkpoint. Failure reason: Not all required tasks are currently running.",
				vertexNames[0]+" (1/1)", j.id))
	default:
		op.stat = s.beginCheckpoint(j, checkpointType, op.rec.FormatType)
		if s.ready(op) {
			s.complete(op)
		}
	}
	return acceptedReply(map[string]any{"request-id": op.rec.TriggerID})
}

func triggerIDOr(b body) string {
	if id := b.str("triggerId"); id != "" {
		return id
	}
	return flink.NewID()
}

func (s *Server) triggerSavepoint(in *inbound) reply {
	jobID, errRep := jobIDParam(in)
	if errRep != nil {
		return *errRep
	}
	b, errRep := parseBody(in.body, savepointTriggerSchema, s.opts.Version)
	if errRep != nil {
		return *errRep
	}
	dir := b.str("target-directory")
	if dir == "" {
		dir = s.opts.SavepointDir
	}
	if dir == "" {
		return restError(http.StatusBadRequest, fmt.Sprintf("Config key [%s] is not set. Property [target-directory] must be provided.", s.savepointDirKey()))
	}
	op := &operation{rec: OperationRecord{
		Kind: OpSavepoint, JobID: jobID, TriggerID: triggerIDOr(b), TargetDirectory: dir,
		CancelJob: b.boolean("cancel-job"), FormatType: b.str("formatType"),
	}}
	return s.startSnapshotOp(op, "SAVEPOINT")
}

func (s *Server) stopWithSavepoint(in *inbound) reply {
	jobID, errRep := jobIDParam(in)
	if errRep != nil {
		return *errRep
	}
	b, errRep := parseBody(in.body, stopWithSavepointSchema, s.opts.Version)
	if errRep != nil {
		return *errRep
	}
	dir := b.str("targetDirectory")
	if dir == "" {
		dir = s.opts.SavepointDir
	}
	if dir == "" {
		return restError(http.StatusBadRequest, fmt.Sprintf("Config key [%s] is not set. Property [targetDirectory] must be provided.", s.savepointDirKey()))
	}
	op := &operation{rec: OperationRecord{
		Kind: OpStopWithSavepoint, JobID: jobID, TriggerID: triggerIDOr(b), TargetDirectory: dir,
		Drain: b.boolean("drain"), FormatType: b.str("formatType"),
	}}
	return s.startSnapshotOp(op, "SYNC_SAVEPOINT")
}

func (s *Server) triggerCheckpoint(in *inbound) reply {
	if !s.opts.Version.SupportsCheckpointTrigger() {
		return notFoundRoute(in.r.URL.Path)
	}
	jobID, errRep := jobIDParam(in)
	if errRep != nil {
		return *errRep
	}
	b, errRep := parseBody(in.body, checkpointTriggerSchema, s.opts.Version)
	if errRep != nil {
		return *errRep
	}
	ctype := b.str("checkpointType")
	if ctype == "INCREMENTAL" && s.opts.Version.AtLeast(flink.V1_19) {
		return internalError("java.lang.IllegalStateException: Flink does not support triggering incremental checkpoint explicitly. See FLINK-33723.")
	}
	if ctype == "" {
		ctype = "CONFIGURED"
	}
	op := &operation{rec: OperationRecord{
		Kind: OpCheckpoint, JobID: jobID, TriggerID: triggerIDOr(b), CheckpointType: ctype,
	}}
	return s.startSnapshotOp(op, "CHECKPOINT")
}

// pollOp answers a status GET: it counts the poll and completes the
// operation when its time has come.
func (s *Server) pollOp(key opKey, missing string) reply {
	if !flink.IsValidID(key.triggerID) {
		return restError(http.StatusBadRequest, fmt.Sprintf("Bad request, could not parse parameters: Cannot resolve path parameter (triggerid) from value %q.", key.triggerID))
	}
	op, found := s.lookupOp(key)
	if !found {
		return restError(http.StatusNotFound, missing,
			"org.apache.flink.runtime.rest.handler.async.UnknownOperationKeyException: No ongoing operation for "+key.triggerID)
	}
	if !op.done {
		if s.ready(op) {
			s.complete(op)
		} else {
			op.polls++
		}
	}
	return okReply(op.statusJSON())
}

func (s *Server) savepointStatus(in *inbound) reply {
	jobID, errRep := jobIDParam(in)
	if errRep != nil {
		return *errRep
	}
	tid := in.pathValue("triggerid")
	return s.pollOp(opKey{"savepoint", jobID, tid},
		fmt.Sprintf("There is no savepoint operation with triggerId=%s for job %s", tid, jobID))
}

func (s *Server) checkpointStatus(in *inbound) reply {
	if !s.opts.Version.SupportsCheckpointTrigger() {
		return notFoundRoute(in.r.URL.Path)
	}
	jobID, errRep := jobIDParam(in)
	if errRep != nil {
		return *errRep
	}
	tid := in.pathValue("triggerid")
	return s.pollOp(opKey{"checkpoint", jobID, tid},
		fmt.Sprintf("There is no checkpoint operation with triggerId=%s for job %s", tid, jobID))
}

func (s *Server) triggerDisposal(in *inbound) reply {
	b, errRep := parseBody(in.body, savepointDisposalSchema, s.opts.Version)
	if errRep != nil {
		return *errRep
	}
	path := b.str("savepoint-path")
	if path == "" {
		return restError(http.StatusBadRequest, "Savepoint path must not be null.")
	}
	op := &operation{rec: OperationRecord{Kind: OpDisposal, TriggerID: flink.NewID(), SavepointPath: path}}
	s.register(op)
	if s.ready(op) {
		s.complete(op)
	}
	// Disposal answers 200, not 202.
	return okReply(map[string]any{"request-id": op.rec.TriggerID})
}

func (s *Server) disposalStatus(in *inbound) reply {
	tid := in.pathValue("triggerid")
	return s.pollOp(opKey{"disposal", "", tid},
		fmt.Sprintf("There is no savepoint disposal operation with triggerId=%s", tid))
}
