package config

import (
	"strings"
	"time"
)

// snapshotTimeoutMargin is added to Flink's checkpoint timeout to derive the
// snapshot timeout: Flink itself gives up on a savepoint after its checkpoint
// timeout, so waiting a little longer lets Flink's own failure (with its
// reason) arrive first, and the operator's timeout only catches operations
// Flink lost.
const snapshotTimeoutMargin = time.Minute

// SavepointDir is the job's default savepoint directory: Flink 1.20's
// execution.checkpointing.savepoint-dir, else the older state.savepoints.dir
// (or savepoints.state.backend.fs.dir). ok is false when none is set (blank
// counts as unset); callers must then fail with a message naming
// FlinkSavepointDir and FlinkSavepointDirDeprecated.
func SavepointDir(cfg Config) (dir string, ok bool) {
	dir = cfg.String(FlinkSavepointDir)
	return dir, dir != ""
}

// CheckpointDir is the job's checkpoint directory:
// execution.checkpointing.dir, else state.checkpoints.dir.
func CheckpointDir(cfg Config) (dir string, ok bool) {
	dir = cfg.String(FlinkCheckpointDir)
	return dir, dir != ""
}

// SnapshotTimeout is how long a snapshot may stay IN_PROGRESS:
// kubernetes.operator.snapshot.timeout if set, else the job's
// execution.checkpointing.timeout (Flink's default 10 min) plus one minute.
func SnapshotTimeout(cfg Config) (time.Duration, error) {
	if d, ok, err := cfg.OptionalDuration(KeySnapshotTimeout); ok || err != nil {
		return d, err
	}
	d, err := cfg.Duration(FlinkCheckpointTimeout)
	if err != nil {
		return 0, err
	}
	return d + snapshotTimeoutMargin, nil
}

// SavepointHistoryMaxCount is how many savepoints history cleanup keeps per
// job: min(max.count, max.count.threshold if set), and never below 1, as
// upstream, so cleanup cannot remove the last savepoint.
func SavepointHistoryMaxCount(cfg Config) (int, error) {
	n, err := cfg.Int(KeySavepointHistoryMaxCount)
	if err != nil {
		return 0, err
	}
	threshold, capped, err := cfg.OptionalInt(KeySavepointHistoryMaxCountThreshold)
	if err != nil {
		return 0, err
	}
	if capped {
		n = min(n, threshold)
	}
	return max(n, 1), nil
}

// SavepointHistoryMaxAge is the age beyond which history cleanup removes
// savepoints: min(max.age, max.age.threshold if set).
func SavepointHistoryMaxAge(cfg Config) (time.Duration, error) {
	d, err := cfg.Duration(KeySavepointHistoryMaxAge)
	if err != nil {
		return 0, err
	}
	threshold, capped, err := cfg.OptionalDuration(KeySavepointHistoryMaxAgeThreshold)
	if err != nil {
		return 0, err
	}
	if capped {
		d = min(d, threshold)
	}
	return d, nil
}

// CheckpointHistoryMaxCount is how many checkpoint snapshots history cleanup
// keeps per job: Flink's num-retained (new or old name, default 1), never
// below 1. There is no age rule for checkpoints, as upstream.
func CheckpointHistoryMaxCount(cfg Config) (int, error) {
	n, err := cfg.Int(FlinkCheckpointsNumRetained)
	if err != nil {
		return 0, err
	}
	return max(n, 1), nil
}

// BlueGreenAbortGracePeriod is how long a blue/green transition waits for
// the new child to become ready before it aborts (default 10 min).
func BlueGreenAbortGracePeriod(cfg Config) (time.Duration, error) {
	return cfg.Duration(KeyBlueGreenAbortGracePeriod)
}

// BlueGreenRescheduleInterval is how often a blue/green transition in
// progress is reconciled again (default 15 s).
func BlueGreenRescheduleInterval(cfg Config) (time.Duration, error) {
	return cfg.Duration(KeyBlueGreenRescheduleInterval)
}

// BlueGreenDeploymentDeletionDelay is how long the old child of a
// blue/green transition is kept once the new one is ready (default 0).
func BlueGreenDeploymentDeletionDelay(cfg Config) (time.Duration, error) {
	return cfg.Duration(KeyBlueGreenDeploymentDeletionDelay)
}

// allNamespacesJOSDK is upstream's spelling of "watch everything", accepted
// so an upstream config file keeps its meaning.
const allNamespacesJOSDK = "JOSDK_ALL_NAMESPACES"

// WatchedNamespaces lists the namespaces to watch; nil means all of them
// (unset, empty, or upstream's JOSDK_ALL_NAMESPACES).
func WatchedNamespaces(cfg Config) []string {
	var out []string
	for _, ns := range cfg.List(KeyWatchedNamespaces) {
		if strings.EqualFold(ns, allNamespacesJOSDK) {
			return nil
		}
		out = append(out, ns)
	}
	return out
}
