package lifecycle

import (
	"strings"
	"time"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/config"
)

// The stop of a job during an upgrade, suspend or deletion is recorded in
// status.jobStatus.savepointInfo (upstream's legacy trigger fields):
// {triggerId, triggerTimestamp, triggerType: UPGRADE} is a stop in flight;
// the same without a trigger id records a failed stop-with-savepoint.

// MarkFailedStop records that a stop-with-savepoint failed at now.
func MarkFailedStop(js *v1beta1.JobStatus, now time.Time) {
	if js.SavepointInfo == nil {
		js.SavepointInfo = &v1beta1.SavepointInfo{}
	}
	ts := now.UnixMilli()
	js.SavepointInfo.TriggerID = ""
	js.SavepointInfo.TriggerTimestamp = &ts
	js.SavepointInfo.TriggerType = v1beta1.SnapshotTriggerUpgrade
}

// ClearStopTrigger forgets a finished stop; the legacy savepoint history is
// kept.
func ClearStopTrigger(js *v1beta1.JobStatus) {
	info := js.SavepointInfo
	if info == nil || info.TriggerType != v1beta1.SnapshotTriggerUpgrade {
		return
	}
	info.TriggerID, info.TriggerTimestamp, info.TriggerType, info.FormatType = "", nil, "", ""
	if info.LastSavepoint == nil && len(info.SavepointHistory) == 0 && info.LastPeriodicSavepointTimestamp == 0 {
		js.SavepointInfo = nil
	}
}

// StopTimeout bounds a stop-with-savepoint as upstream: the job's
// execution.checkpointing.timeout (Flink's default 10 min).
func StopTimeout(cfg config.Config) time.Duration {
	if d, ok, err := cfg.OptionalDuration(config.FlinkCheckpointTimeout); err == nil && ok && d > 0 {
		return d
	}
	return 10 * time.Minute
}

// SavepointFormat is the format a stop's savepoint is taken in
// (kubernetes.operator.savepoint.format.type, CANONICAL by default).
func SavepointFormat(cfg config.Config) string {
	f, err := cfg.Enum(config.KeySavepointFormatType)
	if err != nil || f == "" {
		return string(v1beta1.SavepointFormatCanonical)
	}
	return f
}

// RecordLegacySavepoint records a stop's savepoint in the legacy
// savepointInfo (when snapshot resources are off): lastSavepoint, and the
// history unless its newest entry is that path already (a repeated sync).
func RecordLegacySavepoint(info *v1beta1.SavepointInfo, path string, now time.Time) {
	sp := v1beta1.Savepoint{TimeStamp: now.UnixMilli(), Location: path, TriggerType: v1beta1.SnapshotTriggerUpgrade, FormatType: info.FormatType}
	info.LastSavepoint = &sp
	if n := len(info.SavepointHistory); n == 0 || info.SavepointHistory[n-1].Location != path {
		info.SavepointHistory = append(info.SavepointHistory, sp)
	}
}

// RestorePath is the state a stopped job restarts from, read as upstream
// reads it (AbstractJobReconciler.restoreJob): upgradeSavepointPath, else
// the legacy savepointInfo.lastSavepoint that upstream releases before
// upgradeSavepointPath recorded a suspended job's savepoint in (and that
// upstream's own e2e still sets by hand). A resource suspended by such a
// release, or edited so, resumes from it rather than from empty state.
func RestorePath(js *v1beta1.JobStatus) string {
	if p := strings.TrimSpace(js.UpgradeSavepointPath); p != "" {
		return p
	}
	if info := js.SavepointInfo; info != nil && info.LastSavepoint != nil {
		return strings.TrimSpace(info.LastSavepoint.Location)
	}
	return ""
}
