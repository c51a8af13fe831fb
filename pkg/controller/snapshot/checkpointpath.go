package snapshot

import (
	"context"
	"fmt"

	"github.com/flinkops/flink-operator/pkg/flink"
)

// checkpointPath reads the path of checkpoint id, which Flink reported
// finished, from the job's checkpoint statistics: the trigger result has
// only the id. Flink's REST handlers answer from a copy of the statistics
// kept for rest.cache.checkpoint-statistics.timeout (default 3 s) after the
// read that took it, so when anyone read them just before (the poll of the
// previous snapshot of the job, say) they show the checkpoint IN_PROGRESS or
// not at all; that is waited for (pathPending), within the snapshot
// timeout, as they catch up within seconds. The statistics keep only the last
// web.checkpoints.history checkpoints: a checkpoint older than the oldest
// one kept will never show up, and fails the attempt at once. So does an
// entry that is there without a path, or an error answer.
func checkpointPath(ctx context.Context, client *flink.Client, jobID string, id int64) (pollResult, error) {
	details, err := client.CheckpointDetails(ctx, jobID, id)
	switch {
	case err == nil:
		return pathFromStats(id, details), nil
	case flink.IsRetryable(err):
		return pollResult{}, err
	case !flink.IsNotFound(err):
		return pollResult{failure: pathFailure(id, err.Error())}, nil
	}
	stats, err := client.Checkpoints(ctx, jobID)
	switch {
	case err != nil && flink.IsRetryable(err):
		return pollResult{}, err
	case err != nil:
		return pollResult{failure: pathFailure(id, err.Error())}, nil
	}
	var oldest int64
	for i := range stats.History {
		h := &stats.History[i]
		if h.ID == id { // the details answer lags behind the history
			return pathFromStats(id, h), nil
		}
		if oldest == 0 || h.ID < oldest {
			oldest = h.ID
		}
	}
	// Ids grow with every attempt and enter the history in that order, so
	// only one below the oldest entry is certainly gone; anything else may
	// still be on its way (an empty history included: the cached copy may
	// predate the job's first checkpoint).
	if oldest > id {
		return pollResult{failure: pathFailure(id, fmt.Sprintf("it is no longer in the job's checkpoint statistics (the oldest kept is checkpoint %d)", oldest))}, nil
	}
	return pollResult{pathPending: true, checkpointID: id}, nil
}

// pathFromStats reads the path from the statistics entry of checkpoint id.
func pathFromStats(id int64, h *flink.CheckpointStatistics) pollResult {
	switch {
	case h.Status == flink.CheckpointStatsInProgress:
		return pollResult{pathPending: true, checkpointID: id}
	case h.Status == flink.CheckpointStatsCompleted && h.ExternalPath != "":
		return pollResult{path: h.ExternalPath}
	case h.Status == flink.CheckpointStatsCompleted:
		return pollResult{failure: pathFailure(id, "its statistics have no external path")}
	}
	return pollResult{failure: pathFailure(id, fmt.Sprintf("its statistics say %s: %s", h.Status, h.FailureMessage))}
}

// pathFailure is the status error of a checkpoint that completed without a
// path the operator can read; it keeps upstream's hint.
func pathFailure(id int64, why string) string {
	return fmt.Sprintf("checkpoint %d was successful, but failed to fetch its path: %s. Flink webserver stores only a limited amount of checkpoints in its cache, try increasing 'web.checkpoints.history' config for this job",
		id, why)
}
