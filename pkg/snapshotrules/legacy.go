package snapshotrules

import (
	"fmt"
	"strings"
	"time"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/config"
)

// Legacy mode (docs/snapshots.md, "Legacy mode"; as upstream): a job
// without snapshot resources keeps its operator-made savepoints and
// checkpoints in the deprecated status fields status.jobStatus.savepointInfo
// / checkpointInfo. These are the pure rules; the FlinkDeployment controller
// does the REST calls and status writes.

// LegacyJob is what the legacy trigger rule needs to know about one job and
// one snapshot type.
type LegacyJob struct {
	// Config is the job's effective configuration.
	Config config.Config
	// Running: snapshots are only triggered while the job is RUNNING.
	Running bool
	// Pending: a legacy trigger of this type is in flight (triggerId set).
	Pending bool
	// Nonce / Reconciled are spec.job.*TriggerNonce and the value recorded in
	// lastReconciledSpec.
	Nonce, Reconciled *int64
	// LastPeriodic is lastPeriodic{Savepoint,Checkpoint}Timestamp (zero if
	// none); Since is when periodic snapshots count from otherwise (the
	// job's creation).
	LastPeriodic, Since time.Time
}

// LegacyTrigger is what to trigger now for one type.
type LegacyTrigger struct {
	// Type is MANUAL or PERIODIC; "" means nothing is due.
	Type v1beta1.SnapshotTriggerType
	// Nonce is the nonce a MANUAL trigger honours.
	Nonce *int64
	// RequeueAfter is when the next periodic one is due (0: not scheduled).
	RequeueAfter time.Duration
	// Warning is a problem with the periodic interval (none is taken).
	Warning string
}

// LegacyDue decides whether a legacy savepoint (typ SAVEPOINT) or
// checkpoint (CHECKPOINT) is due: a changed nonce first (MANUAL), else a
// periodic one once its interval (or cron slot) has passed since the last
// periodic trigger. Nothing is triggered while one of the type is in flight
// or the job does not run.
func LegacyDue(typ string, job LegacyJob, now time.Time) LegacyTrigger {
	var out LegacyTrigger
	key := config.KeyPeriodicCheckpointInterval
	if typ == v1beta1.SnapshotTypeSavepoint {
		key = config.KeyPeriodicSavepointInterval
	}
	sched, err := ParseSchedule(job.Config.String(key))
	if err != nil {
		out.Warning = fmt.Sprintf("%s: %v; no periodic %s is taken", key, err, strings.ToLower(typ))
		sched = nil
	}
	manual := job.Nonce != nil && (job.Reconciled == nil || *job.Nonce != *job.Reconciled)
	if !job.Running || job.Pending {
		return out
	}
	if manual {
		out.Type, out.Nonce = v1beta1.SnapshotTriggerManual, job.Nonce
		return out
	}
	if sched == nil {
		return out
	}
	last := job.Since
	if job.LastPeriodic.After(last) {
		last = job.LastPeriodic
	}
	due, next, ok := Due(sched, last, now)
	switch {
	case !ok:
	case due:
		out.Type = v1beta1.SnapshotTriggerPeriodic
		if after, ok := sched.Next(now); ok {
			out.RequeueAfter = minPositive(0, after.Sub(now))
		}
	default:
		out.RequeueAfter = minPositive(0, next.Sub(now))
	}
	return out
}

// LegacyGiveUp says whether a failed legacy trigger is given up (true) or
// retried (false): retried while within the grace period after the trigger
// (kubernetes.operator.{savepoint,checkpoint}.trigger.grace-period).
func LegacyGiveUp(triggered time.Time, grace time.Duration, now time.Time) bool {
	return triggered.Add(grace).Before(now)
}

// LegacyFailureMessage is upstream's event message for a failed legacy
// snapshot: "Periodic savepoint failed", "Savepoint failed for
// savepointTriggerNonce: <n>", and the same for checkpoints.
func LegacyFailureMessage(typ string, trigger v1beta1.SnapshotTriggerType, nonce *int64) string {
	word, field := "savepoint", "savepointTriggerNonce"
	if typ == v1beta1.SnapshotTypeCheckpoint {
		word, field = "checkpoint", "checkpointTriggerNonce"
	}
	switch {
	case trigger == v1beta1.SnapshotTriggerPeriodic:
		return "Periodic " + word + " failed"
	case nonce != nil:
		return fmt.Sprintf("%s failed for %s: %d", strings.ToUpper(word[:1])+word[1:], field, *nonce)
	default:
		return strings.ToUpper(word[:1]) + word[1:] + " failed"
	}
}

// LegacyHistoryPolicy is the legacy savepoint history limit of one job.
type LegacyHistoryPolicy struct {
	// MaxCount is min(max.count, threshold), at least 1.
	MaxCount int
	// MaxAge is min(max.age, threshold).
	MaxAge time.Duration
	// Dispose is kubernetes.operator.savepoint.cleanup.enabled: when false,
	// entries over the limits are dropped from the history without
	// disposing their data.
	Dispose bool
}

// LegacyHistoryPolicyOf reads the policy from a job's effective config.
func LegacyHistoryPolicyOf(cfg config.Config) (LegacyHistoryPolicy, error) {
	var p LegacyHistoryPolicy
	var err error
	if p.MaxCount, err = config.SavepointHistoryMaxCount(cfg); err != nil {
		return p, err
	}
	if p.MaxAge, err = config.SavepointHistoryMaxAge(cfg); err != nil {
		return p, err
	}
	if p.Dispose, err = cfg.Bool(config.KeySavepointCleanupEnabled); err != nil {
		return p, err
	}
	return p, nil
}

// CompletedSavepointResources counts the COMPLETED savepoint snapshots among
// a job's visible PERIODIC/UPGRADE ones: with snapshot resources they count
// toward the legacy history's limit (upstream's cleanupSavepointHistoryLegacy).
func CompletedSavepointResources(all []*v1beta1.FlinkStateSnapshot) int {
	n := 0
	for _, s := range all {
		tt := TriggerType(s)
		if IsSavepoint(s) && s.Status.State == v1beta1.SnapshotCompleted && s.DeletionTimestamp == nil &&
			(tt == v1beta1.SnapshotTriggerPeriodic || tt == v1beta1.SnapshotTriggerUpgrade) {
			n++
		}
	}
	return n
}

// CleanupLegacyHistory applies upstream's cleanupSavepointHistoryLegacy to
// savepointInfo.savepointHistory (oldest first) and returns the entries to
// keep:
//
//  1. allowance = max(0, MaxCount - completedCRs);
//  2. nothing happens with an empty history, or a single entry while no
//     completed snapshot resource exists;
//  3. count rule: while more entries than the allowance, the oldest is
//     disposed (dispose(path) == true) and removed; a failed disposal stops
//     the rule and keeps the entry (FLINK-39439, retried next time);
//  4. age rule: every remaining entry older than now-MaxAge is disposed and
//     removed — except the newest one while no completed snapshot resource
//     exists — and a failed disposal keeps that entry and goes on.
//
// With cleanup disabled (policy.Dispose false) dispose is never called and
// entries are just dropped. Paths in keep (the job's restore point) are
// never disposed: they leave the history but keep their data.
func CleanupLegacyHistory(history []v1beta1.Savepoint, policy LegacyHistoryPolicy, completedCRs int, now time.Time, keep []string, dispose func(path string) bool) []v1beta1.Savepoint {
	if len(history) == 0 || (len(history) == 1 && completedCRs == 0) {
		return history
	}
	allowance := max(0, policy.MaxCount-completedCRs)
	remove := func(sp v1beta1.Savepoint) bool {
		if !policy.Dispose || sp.Location == "" || containsPath(keep, sp.Location) {
			return true
		}
		return dispose(sp.Location)
	}
	out := append([]v1beta1.Savepoint(nil), history...)
	for len(out) > allowance {
		if !remove(out[0]) {
			break
		}
		out = out[1:]
	}
	minTs := now.Add(-policy.MaxAge).UnixMilli()
	kept := out[:0:0]
	for i, sp := range out {
		isLast := i == len(out)-1 // the count rule only removes the oldest
		if (isLast && completedCRs == 0) || sp.TimeStamp >= minTs || !remove(sp) {
			kept = append(kept, sp)
		}
	}
	return kept
}

func containsPath(paths []string, p string) bool {
	for _, k := range paths {
		if k == p {
			return true
		}
	}
	return false
}

// SetLegacySavepointTrigger records a legacy savepoint trigger (the intent,
// written to status before the POST that carries the same trigger id).
func SetLegacySavepointTrigger(info *v1beta1.SavepointInfo, id string, trigger v1beta1.SnapshotTriggerType, format v1beta1.SavepointFormatType, now time.Time) {
	ts := now.UnixMilli()
	info.TriggerID, info.TriggerTimestamp, info.TriggerType, info.FormatType = id, &ts, trigger, format
}

// SetLegacyCheckpointTrigger records a legacy checkpoint trigger.
func SetLegacyCheckpointTrigger(info *v1beta1.CheckpointInfo, id string, trigger v1beta1.SnapshotTriggerType, format v1beta1.CheckpointType, now time.Time) {
	ts := now.UnixMilli()
	info.TriggerID, info.TriggerTimestamp, info.TriggerType, info.FormatType = id, &ts, trigger, format
}

// LegacySavepointPending reports a legacy (PERIODIC or MANUAL) savepoint in
// flight; the UPGRADE trigger of a stop-with-savepoint shares the fields and
// is the upgrade's business.
func LegacySavepointPending(info *v1beta1.SavepointInfo) bool {
	return info != nil && info.TriggerID != "" && info.TriggerType != v1beta1.SnapshotTriggerUpgrade
}

// LegacyCheckpointPending reports a legacy checkpoint in flight.
func LegacyCheckpointPending(info *v1beta1.CheckpointInfo) bool {
	return info != nil && info.TriggerID != ""
}

// CompleteLegacySavepoint records a completed legacy savepoint as upstream:
// lastSavepoint {timeStamp: trigger time, location, triggerType, formatType,
// triggerNonce (MANUAL only)}, appended to the history unless it is the
// newest entry already, lastPeriodicSavepointTimestamp = trigger time for a
// PERIODIC one, and the trigger cleared.
func CompleteLegacySavepoint(info *v1beta1.SavepointInfo, location string, nonce *int64) {
	ts := int64(0)
	if info.TriggerTimestamp != nil {
		ts = *info.TriggerTimestamp
	}
	sp := v1beta1.Savepoint{TimeStamp: ts, Location: location, TriggerType: info.TriggerType, FormatType: info.FormatType}
	if info.TriggerType == v1beta1.SnapshotTriggerManual && nonce != nil {
		n := *nonce
		sp.TriggerNonce = &n
	}
	info.LastSavepoint = &sp
	if n := len(info.SavepointHistory); n == 0 || info.SavepointHistory[n-1].Location != location {
		info.SavepointHistory = append(info.SavepointHistory, sp)
	}
	if info.TriggerType == v1beta1.SnapshotTriggerPeriodic {
		info.LastPeriodicSavepointTimestamp = ts
	}
	ResetLegacySavepointTrigger(info)
}

// CompleteLegacyCheckpoint records a completed legacy checkpoint.
func CompleteLegacyCheckpoint(info *v1beta1.CheckpointInfo, nonce *int64) {
	ts := int64(0)
	if info.TriggerTimestamp != nil {
		ts = *info.TriggerTimestamp
	}
	cp := v1beta1.Checkpoint{TimeStamp: ts, TriggerType: info.TriggerType, FormatType: info.FormatType}
	if info.TriggerType == v1beta1.SnapshotTriggerManual && nonce != nil {
		n := *nonce
		cp.TriggerNonce = &n
	}
	info.LastCheckpoint = &cp
	if info.TriggerType == v1beta1.SnapshotTriggerPeriodic {
		info.LastPeriodicCheckpointTimestamp = ts
	}
	ResetLegacyCheckpointTrigger(info)
}

// FailLegacySavepoint gives up a legacy savepoint: the trigger is cleared;
// a PERIODIC one counts as this period's attempt [ours: upstream would
// trigger again at once, every sync, while Flink keeps failing].
func FailLegacySavepoint(info *v1beta1.SavepointInfo) {
	if info.TriggerType == v1beta1.SnapshotTriggerPeriodic && info.TriggerTimestamp != nil {
		info.LastPeriodicSavepointTimestamp = *info.TriggerTimestamp
	}
	ResetLegacySavepointTrigger(info)
}

// FailLegacyCheckpoint gives up a legacy checkpoint (as FailLegacySavepoint).
func FailLegacyCheckpoint(info *v1beta1.CheckpointInfo) {
	if info.TriggerType == v1beta1.SnapshotTriggerPeriodic && info.TriggerTimestamp != nil {
		info.LastPeriodicCheckpointTimestamp = *info.TriggerTimestamp
	}
	ResetLegacyCheckpointTrigger(info)
}

// ResetLegacySavepointTrigger clears the in-flight trigger fields.
func ResetLegacySavepointTrigger(info *v1beta1.SavepointInfo) {
	info.TriggerID, info.TriggerTimestamp, info.TriggerType, info.FormatType = "", nil, "", ""
}

// ResetLegacyCheckpointTrigger clears the in-flight trigger fields.
func ResetLegacyCheckpointTrigger(info *v1beta1.CheckpointInfo) {
	info.TriggerID, info.TriggerTimestamp, info.TriggerType, info.FormatType = "", nil, "", ""
}
