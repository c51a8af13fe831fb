package snapshot

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"k8s.io/klog/v2"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/config"
	"github.com/flinkops/flink-operator/pkg/flink"
	"github.com/flinkops/flink-operator/pkg/snapshotrules"
)

// historyTolerance allows for clock skew between operator and JobManager
// when matching a forgotten trigger against Flink's checkpoint history.
const historyTolerance = 2 * time.Second

// recover handles a trigger id Flink does not know [ours]: Flink forgets
// results after rest.async.store-duration and on a JobManager restart, and an
// operator crash between writing the intent and the POST leaves an id Flink
// never saw. First look for the result in the job's checkpoint history (see
// adoptFromHistory); if it is not there and the attempt is young, re-send
// the same id (Flink starts it once) unless the snapshot is being deleted;
// otherwise the attempt failed.
func (c *Controller) recover(ctx context.Context, client *flink.Client, s *v1beta1.FlinkStateSnapshot, t *target, r request,
	triggered time.Time, elapsed time.Duration, deleting bool) (pollResult, error) {
	stats, err := client.Checkpoints(ctx, t.jobStatus.JobID)
	if err != nil && !flink.IsNotFound(err) { // 404: checkpointing disabled, so no history
		return pollResult{}, err
	}
	var history []flink.CheckpointStatistics
	if stats != nil {
		history = stats.History
	}
	claimed, err := c.claimedPaths(s)
	if err != nil {
		return pollResult{}, err
	}
	if h := adoptFromHistory(s, t.cfg, history, triggered, claimed); h != nil {
		switch h.Status {
		case flink.CheckpointStatsCompleted:
			if h.ExternalPath == "" {
				return pollResult{failure: fmt.Sprintf("%s found in the job's checkpoint history as %d completed, but without a path",
					r.kind, h.ID)}, nil
			}
			klog.FromContext(ctx).Info("Adopted snapshot found in Flink's checkpoint history", "triggerId", s.Status.TriggerID, "checkpointId", h.ID, "path", h.ExternalPath)
			return pollResult{path: h.ExternalPath}, nil
		case flink.CheckpointStatsInProgress:
			return pollResult{pending: true}, nil
		default:
			return pollResult{failure: fmt.Sprintf("%s failed (found in the job's checkpoint history as %d): %s", r.kind, h.ID, h.FailureMessage)}, nil
		}
	}
	storeDuration := 5 * time.Minute
	if d, ok, err := t.cfg.OptionalDuration(config.FlinkRestAsyncStoreDuration); err == nil && ok {
		storeDuration = d
	}
	if elapsed < storeDuration && !deleting {
		klog.FromContext(ctx).Info("Flink does not know the trigger id, sending it again", "triggerId", s.Status.TriggerID)
		if err := c.post(ctx, s, t, r); err != nil {
			return pollResult{}, err
		}
		return pollResult{pending: true}, nil
	}
	return pollResult{failure: fmt.Sprintf("Flink does not know trigger id %s (results are forgotten after %s and on JobManager restart) and no matching %s was found in the job's checkpoint history",
		s.Status.TriggerID, config.FlinkRestAsyncStoreDuration, r.kind)}, nil
}

// claimedPaths are the paths other snapshots of the same job already name.
func (c *Controller) claimedPaths(s *v1beta1.FlinkStateSnapshot) (map[string]bool, error) {
	claimed := map[string]bool{}
	others, err := c.Caches.SnapshotsOfJob(snapshotrules.JobKey(s))
	if err != nil {
		return nil, err
	}
	for _, o := range others {
		if o.Status.Path != "" && (o.Namespace != s.Namespace || o.Name != s.Name) {
			claimed[o.Status.Path] = true
		}
	}
	return claimed, nil
}

// adoptFromHistory picks the entry of Flink's checkpoint history that is
// most likely the forgotten attempt: the EARLIEST one of the same kind
// triggered at or after the attempt (less historyTolerance for clock skew),
// whatever its status. A later entry is someone else's snapshot (the next
// periodic checkpoint, another resource's savepoint): adopting it would make
// two resources name one path, and deleting one would dispose the other's
// data, so entries whose path another snapshot of the job names are skipped
// too. Same kind means:
//   - savepoints: a savepoint, not a stop-with-savepoint's (SYNC_SAVEPOINT,
//     an upgrade's), in the requested format where Flink reports it;
//   - checkpoints: the operator asks for a FULL checkpoint, which Flink's
//     history does not tell apart from an incremental one (checkpoint_type
//     is CHECKPOINT for both), so a checkpoint is adopted only when the job
//     takes no incremental checkpoints at all.
//
// nil when nothing qualifies.
func adoptFromHistory(s *v1beta1.FlinkStateSnapshot, cfg config.Config, history []flink.CheckpointStatistics,
	triggered time.Time, claimed map[string]bool) *flink.CheckpointStatistics {
	r := requestOf(s, cfg)
	since := triggered.Add(-historyTolerance).UnixMilli()
	var best *flink.CheckpointStatistics
	for i := range history {
		h := &history[i]
		if h.TriggerTimestamp < since || !sameKind(r, cfg, h) || (h.ExternalPath != "" && claimed[h.ExternalPath]) {
			continue
		}
		if best == nil || h.TriggerTimestamp < best.TriggerTimestamp || (h.TriggerTimestamp == best.TriggerTimestamp && h.ID < best.ID) {
			best = h
		}
	}
	return best
}

// sameKind reports whether history entry h is of the kind r asks for (see
// adoptFromHistory); cfg is the job's configuration.
func sameKind(r request, cfg config.Config, h *flink.CheckpointStatistics) bool {
	if r.kind != savepoint {
		return !h.IsSavepoint && !incrementalCheckpoints(cfg)
	}
	if !h.IsSavepoint || strings.EqualFold(h.CheckpointType, "SYNC_SAVEPOINT") {
		return false
	}
	return h.SavepointFormat == "" || strings.EqualFold(h.SavepointFormat, string(r.format))
}

// incrementalCheckpoints reports whether the job may take incremental
// checkpoints (execution.checkpointing.incremental, formerly
// state.backend.incremental; default false). Unparseable counts as yes: it
// only ever makes adoption stricter.
func incrementalCheckpoints(cfg config.Config) bool {
	for _, key := range []string{"execution.checkpointing.incremental", "state.backend.incremental"} {
		if v, ok := cfg.Raw(key); ok {
			on, err := strconv.ParseBool(strings.TrimSpace(v))
			return err != nil || on
		}
	}
	return false
}
