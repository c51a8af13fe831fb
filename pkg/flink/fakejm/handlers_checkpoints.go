package fakejm

import (
	"fmt"
	"net/http"
	"strconv"
)

// Checkpoint statistics endpoints.

// checkpointedJob resolves {jobid} and requires checkpointing to be on.
func (s *Server) checkpointedJob(in *inbound, disabledMsg string) (*job, *reply) {
	j, errRep := s.lookupJob(in)
	if errRep != nil {
		return nil, errRep
	}
	if !j.checkpointing {
		r := restError(http.StatusNotFound, disabledMsg)
		return nil, &r
	}
	return j, nil
}

func (s *Server) getCheckpoints(in *inbound) reply {
	j, errRep := s.checkpointedJob(in, "Checkpointing has not been enabled.")
	if errRep != nil {
		return *errRep
	}
	return okReply(s.checkpointStats(j).stats)
}

func (s *Server) getCheckpointDetails(in *inbound) reply {
	j, errRep := s.checkpointedJob(in, "Checkpointing has not been enabled.")
	if errRep != nil {
		return *errRep
	}
	raw := in.pathValue("checkpointid")
	id, err := strconv.ParseInt(raw, 10, 64)
	if err != nil {
		return restError(http.StatusBadRequest, fmt.Sprintf("Bad request, could not parse parameters: Cannot resolve path parameter (checkpointid) from value %q.", raw))
	}
	st, ok := s.checkpointStats(j).details[id]
	if !ok {
		return restError(http.StatusNotFound, fmt.Sprintf("Could not find checkpointing statistics for checkpoint %d.", id))
	}
	return okReply(st)
}

func (s *Server) getCheckpointConfig(in *inbound) reply {
	j, errRep := s.lookupJob(in)
	if errRep != nil {
		return *errRep
	}
	if !j.checkpointing {
		return restError(http.StatusNotFound, fmt.Sprintf("Checkpointing is not enabled for this job (%s).", j.id))
	}
	storage := "JobManagerCheckpointStorage"
	if s.opts.CheckpointDir != "" {
		storage = "FileSystemCheckpointStorage"
	}
	return okReply(map[string]any{
		"mode":                           "EXACTLY_ONCE",
		"interval":                       60000,
		"timeout":                        600000,
		"min_pause":                      0,
		"max_concurrent":                 1,
		"externalization":                map[string]any{"enabled": j.retention != "NO_EXTERNALIZED_CHECKPOINTS", "delete_on_cancellation": j.retention == "DELETE_ON_CANCELLATION"},
		"state_backend":                  "HashMapStateBackend",
		"checkpoint_storage":             storage,
		"unaligned_checkpoints":          false,
		"tolerable_failed_checkpoints":   0,
		"aligned_checkpoint_timeout":     0,
		"checkpoints_after_tasks_finish": true,
		"state_changelog_enabled":        false,
		"changelog_storage":              "memory",
		"changelog_periodic_materialization_interval": 600000,
	})
}
