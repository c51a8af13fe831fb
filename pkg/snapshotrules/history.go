package snapshotrules

import (
	"slices"
	"strconv"
	"strings"
	"time"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
)

// CleanupPolicy is the history limit for one snapshot type of one job.
type CleanupPolicy struct {
	// MaxCount keeps at most this many candidates (the newest); <= 0 means
	// no count limit.
	MaxCount int
	// MaxAge deletes candidates created longer ago; 0 means no age rule
	// (checkpoints have none).
	MaxAge time.Duration
}

// SelectForCleanup returns the snapshots of one type (SAVEPOINT or
// CHECKPOINT) that history cleanup should delete (docs/snapshots.md, "Snapshots the operator makes"):
//   - candidates are PERIODIC and UPGRADE snapshots; MANUAL ones belong to
//     the user and are never deleted;
//   - only terminal snapshots are deleted [ours]: an in-flight one still
//     counts toward the limit but stays;
//   - the newest COMPLETED snapshot and any snapshot whose path is in keep
//     (the job's restore point, a snapshot another job starts from) stay;
//   - the newest PERIODIC snapshot stays [ours]: it is the anchor of the
//     periodic schedule (LastPeriodicTrigger), and without it the next plan
//     would count from the job's creation and repeat an old slot's name;
//   - without a COMPLETED snapshot, the newest candidate stays (age rule);
//   - snapshots already being deleted are skipped.
func SelectForCleanup(all []*v1beta1.FlinkStateSnapshot, typ string, policy CleanupPolicy, now time.Time, keep []string) []*v1beta1.FlinkStateSnapshot {
	var candidates []*v1beta1.FlinkStateSnapshot
	for _, s := range all {
		tt := TriggerType(s)
		if Type(s) == typ && (tt == v1beta1.SnapshotTriggerPeriodic || tt == v1beta1.SnapshotTriggerUpgrade) && s.DeletionTimestamp == nil {
			candidates = append(candidates, s)
		}
	}
	// Newest first.
	slices.SortStableFunc(candidates, func(a, b *v1beta1.FlinkStateSnapshot) int {
		return CreatedAt(b).Compare(CreatedAt(a))
	})
	protected := map[*v1beta1.FlinkStateSnapshot]bool{}
	for _, s := range candidates {
		if s.Status.State == v1beta1.SnapshotCompleted {
			protected[s] = true // the newest COMPLETED
			break
		}
	}
	if len(protected) == 0 && len(candidates) > 0 {
		protected[candidates[0]] = true
	}
	for _, s := range candidates {
		if TriggerType(s) == v1beta1.SnapshotTriggerPeriodic {
			protected[s] = true // the newest PERIODIC: the schedule's anchor
			break
		}
	}
	for _, s := range candidates {
		if s.Status.Path != "" && slices.Contains(keep, s.Status.Path) {
			protected[s] = true
		}
	}

	var out []*v1beta1.FlinkStateSnapshot
	for i, s := range candidates {
		overCount := policy.MaxCount > 0 && i >= policy.MaxCount
		tooOld := policy.MaxAge > 0 && now.Sub(CreatedAt(s)) > policy.MaxAge
		if (overCount || tooOld) && !protected[s] && s.Status.State.IsTerminal() {
			out = append(out, s)
		}
	}
	return out
}

// CreatedAt is when a snapshot was made: for operator-made snapshots the
// scheduled time in their name, otherwise the creation timestamp.
func CreatedAt(s *v1beta1.FlinkStateSnapshot) time.Time {
	if t, ok := slotFromName(s.Name); ok {
		return t
	}
	return s.CreationTimestamp.Time
}

// Name builds the deterministic name of a snapshot the operator creates:
// <job>-<savepoint|checkpoint>-<periodic|manual|upgrade>-<millis>, where
// millis identify the slot (the periodic schedule time, the nonce, the
// upgrade generation), so a create repeated after a crash hits AlreadyExists
// instead of making a second snapshot. Long job names are cut so the result
// stays a valid object name (253 characters).
func Name(job, typ string, trigger v1beta1.SnapshotTriggerType, slot int64) string {
	suffix := "-" + strings.ToLower(typ) + "-" + strings.ToLower(string(trigger)) + "-" + strconv.FormatInt(slot, 10)
	if max := 253 - len(suffix); len(job) > max {
		job = strings.TrimRight(job[:max], "-.")
	}
	return job + suffix
}

// slotFromName reads the millis suffix of an operator-made snapshot name.
func slotFromName(name string) (time.Time, bool) {
	// A name with one of these markers has a '-', so i >= 0 below.
	if !strings.Contains(name, "-periodic-") && !strings.Contains(name, "-upgrade-") && !strings.Contains(name, "-manual-") {
		return time.Time{}, false
	}
	i := strings.LastIndexByte(name, '-')
	ms, err := strconv.ParseInt(name[i+1:], 10, 64)
	if err != nil || ms < 1e12 { // not epoch millis (nonces are small numbers)
		return time.Time{}, false
	}
	return time.UnixMilli(ms).UTC(), true
}

// LastPeriodicTrigger rebuilds when the last periodic snapshot of a type was
// scheduled, from the snapshots themselves, so an operator restart neither
// fires an extra snapshot nor skips one [ours]: the newest PERIODIC snapshot
// in any state. In-flight ones count (upstream ignores them and fires again
// after a restart); FAILED ones count too, because the next slot must get a
// new name — a failed periodic snapshot already had its retries, and the
// next one comes at the next slot. fallback (the job's creation, or a legacy
// status timestamp) applies when there is none or it is newer.
func LastPeriodicTrigger(all []*v1beta1.FlinkStateSnapshot, typ string, fallback time.Time) time.Time {
	last := fallback
	for _, s := range all {
		if Type(s) != typ || TriggerType(s) != v1beta1.SnapshotTriggerPeriodic {
			continue
		}
		if t := CreatedAt(s); t.After(last) {
			last = t
		}
	}
	return last
}

// BlocksPeriodic reports whether an existing snapshot holds back the next
// periodic snapshot of its type [ours]: only a PERIODIC one that is still in
// flight and not being deleted — in any non-terminal state, including a wait
// for a retry — so that a savepoint slower than its interval, or one that
// keeps failing under backoffLimit -1, never piles up periodic snapshots.
//
// Snapshots of any other trigger type (MANUAL from a nonce or a resource a
// user created, UPGRADE) never hold the schedule back: a user's snapshot can
// fail and retry forever, or wait forever (a ValidationError keeps it
// TRIGGER_PENDING without failures), and must not stop the job's periodic
// savepoints. They are still never triggered at the same time as the
// periodic one: kubernetes.operator.snapshot.max-concurrent-per-job (default
// 1) makes the later of the two wait in TRIGGER_PENDING for the other's
// attempt to end, and a failed attempt waiting for its retry holds no slot.
// Upstream does not look at snapshot resources at all here.
func BlocksPeriodic(s *v1beta1.FlinkStateSnapshot) bool {
	return TriggerType(s) == v1beta1.SnapshotTriggerPeriodic && InFlight(s) && s.DeletionTimestamp == nil
}

// PeriodicInFlight reports whether a snapshot of the type holds back the
// next periodic one (BlocksPeriodic).
func PeriodicInFlight(all []*v1beta1.FlinkStateSnapshot, typ string) bool {
	for _, s := range all {
		if Type(s) == typ && BlocksPeriodic(s) {
			return true
		}
	}
	return false
}
