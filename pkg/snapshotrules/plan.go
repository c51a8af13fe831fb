package snapshotrules

import (
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/config"
)

// JobView is what the snapshot planner needs to know about one job
// (a FlinkDeployment with spec.job, or a FlinkSessionJob), all read from
// informer caches by the job's controller.
type JobView struct {
	Kind      v1beta1.JobReferenceKind
	Namespace string
	Name      string
	// Labels are the job's labels (metadata.labels), copied onto every
	// snapshot made for it (JobLabels), so the snapshot matches the
	// kubernetes.operator.label.selector its job matches.
	Labels map[string]string
	// Config is the job's effective configuration.
	Config config.Config
	// CheckpointsSupported is false below Flink 1.17.
	CheckpointsSupported bool
	// Running: snapshots are only triggered while the job is RUNNING.
	Running bool
	// SavepointNonce/CheckpointNonce are spec.job.*TriggerNonce; the
	// Reconciled* ones are the values already acted on (lastReconciledSpec).
	SavepointNonce, ReconciledSavepointNonce   *int64
	CheckpointNonce, ReconciledCheckpointNonce *int64
	// Snapshots are the existing snapshots of the job (index by job).
	Snapshots []*v1beta1.FlinkStateSnapshot
	// Since is when periodic snapshots count from if none exists yet: the
	// job's creation. It must be set (the API server always sets
	// creationTimestamp).
	Since time.Time
	// LegacyLastPeriodicSavepoint/LegacyLastPeriodicCheckpoint are the
	// deprecated status timestamps (savepointInfo.lastPeriodicSavepointTimestamp,
	// checkpointInfo.lastPeriodicCheckpointTimestamp); a later one than Since
	// counts for its type, so switching from legacy mode does not fire at once.
	LegacyLastPeriodicSavepoint, LegacyLastPeriodicCheckpoint time.Time
	// Keep are paths that cleanup must never remove (restore points).
	Keep []string
}

// Plan is what the job's controller should do about snapshots now.
type Plan struct {
	// Create are new snapshots; a create that returns AlreadyExists means an
	// earlier attempt made it (deterministic names), and is fine.
	Create []*v1beta1.FlinkStateSnapshot
	// Delete are terminal snapshots history cleanup removes (through their
	// finalizer, so data is disposed first).
	Delete []*v1beta1.FlinkStateSnapshot
	// SavepointNonce/CheckpointNonce, when set, are nonces now handled: the
	// controller records them as reconciled.
	SavepointNonce, CheckpointNonce *int64
	// RequeueAfter is when the next periodic snapshot is due (0: none).
	RequeueAfter time.Duration
	// Warnings are problems that disable one rule without stopping the
	// others, e.g. a periodic interval that is neither a duration nor a
	// Quartz cron expression (upstream warns and takes none).
	Warnings []string
}

// PlanSnapshots decides, from caches only, which snapshots a job needs now:
// manual ones for changed nonces, periodic ones when due — never while the
// previous periodic one of the same type is in flight [ours], whatever other
// snapshots do (BlocksPeriodic) — and which old ones history cleanup
// deletes.
func PlanSnapshots(job JobView, now time.Time) (Plan, error) {
	var plan Plan
	for _, typ := range []string{v1beta1.SnapshotTypeSavepoint, v1beta1.SnapshotTypeCheckpoint} {
		isSavepoint := typ == v1beta1.SnapshotTypeSavepoint
		if !isSavepoint && !job.CheckpointsSupported {
			continue
		}
		// Only the periodic chain holds itself back (BlocksPeriodic): a
		// user's snapshot that fails and retries forever must not stop it.
		inFlight := PeriodicInFlight(job.Snapshots, typ)

		// Manual nonce: one MANUAL snapshot per changed nonce, named by it.
		nonce, reconciled := job.CheckpointNonce, job.ReconciledCheckpointNonce
		if isSavepoint {
			nonce, reconciled = job.SavepointNonce, job.ReconciledSavepointNonce
		}
		if nonce != nil && (reconciled == nil || *nonce != *reconciled) && job.Running {
			s, err := newSnapshot(job, typ, v1beta1.SnapshotTriggerManual, *nonce)
			if err != nil {
				return Plan{}, err
			}
			plan.Create = append(plan.Create, s)
			if isSavepoint {
				plan.SavepointNonce = nonce
			} else {
				plan.CheckpointNonce = nonce
			}
			// A manual snapshot does not hold back a due periodic one (see
			// BlocksPeriodic); the per-job concurrency limit runs them one
			// after the other.
		}

		// Periodic.
		key := config.KeyPeriodicCheckpointInterval
		if isSavepoint {
			key = config.KeyPeriodicSavepointInterval
		}
		sched, err := ParseSchedule(job.Config.String(key))
		if err != nil {
			plan.Warnings = append(plan.Warnings, fmt.Sprintf("%s: %v; no periodic %s is taken", key, err, strings.ToLower(typ)))
			sched = nil
		}
		if sched != nil {
			since := job.Since
			legacy := job.LegacyLastPeriodicCheckpoint
			if isSavepoint {
				legacy = job.LegacyLastPeriodicSavepoint
			}
			if legacy.After(since) {
				since = legacy
			}
			last := LastPeriodicTrigger(job.Snapshots, typ, since)
			due, next, ok := Due(sched, last, now)
			switch {
			case !ok:
			case due && job.Running && !inFlight:
				slot := latestSlot(sched, next, now)
				s, err := newSnapshot(job, typ, v1beta1.SnapshotTriggerPeriodic, slot.UnixMilli())
				if err != nil {
					return Plan{}, err
				}
				plan.Create = append(plan.Create, s)
				if after, ok := sched.Next(slot); ok {
					plan.RequeueAfter = minPositive(plan.RequeueAfter, after.Sub(now))
				}
			case due:
				// Waiting for the job or for the in-flight periodic
				// snapshot; the job's controller is woken when either
				// changes (a snapshot leaving flight wakes it).
			default:
				plan.RequeueAfter = minPositive(plan.RequeueAfter, next.Sub(now))
			}
		}

		// History cleanup.
		enabled, err := job.Config.Bool(config.KeySavepointCleanupEnabled)
		if err != nil {
			return Plan{}, err
		}
		if !enabled {
			continue
		}
		var policy CleanupPolicy
		if isSavepoint {
			if policy.MaxCount, err = config.SavepointHistoryMaxCount(job.Config); err != nil {
				return Plan{}, err
			}
			if policy.MaxAge, err = config.SavepointHistoryMaxAge(job.Config); err != nil {
				return Plan{}, err
			}
		} else if policy.MaxCount, err = config.CheckpointHistoryMaxCount(job.Config); err != nil {
			return Plan{}, err
		}
		plan.Delete = append(plan.Delete, SelectForCleanup(job.Snapshots, typ, policy, now, job.Keep)...)
	}
	return plan, nil
}

// latestSlot is the newest scheduled time at or before now, starting from the
// first due one, so an operator that was down for hours takes one snapshot,
// not one per missed slot.
func latestSlot(s Schedule, first, now time.Time) time.Time {
	if e, ok := s.(every); ok {
		missed := now.Sub(first) / time.Duration(e)
		return first.Add(missed * time.Duration(e))
	}
	slot := first
	for range 100000 {
		next, ok := s.Next(slot)
		if !ok || next.After(now) {
			break
		}
		slot = next
	}
	return slot
}

func minPositive(a, b time.Duration) time.Duration {
	if b <= 0 {
		b = time.Second
	}
	if a <= 0 || b < a {
		return b
	}
	return a
}

// newSnapshot builds a snapshot the operator creates for a job, the one
// place every operator-made snapshot (periodic, manual nonce, upgrade,
// suspend, savepoint on deletion) comes from. Operator-made snapshots always
// carry an explicit backoffLimit [ours], and the job's labels (JobLabels).
func newSnapshot(job JobView, typ string, trigger v1beta1.SnapshotTriggerType, slot int64) (*v1beta1.FlinkStateSnapshot, error) {
	backoff, err := job.Config.Int(config.KeySnapshotBackoffLimit)
	if err != nil {
		return nil, err
	}
	labels := JobLabels(job.Labels)
	labels[v1beta1.LabelSnapshotType] = typ
	labels[v1beta1.LabelSnapshotTriggerType] = string(trigger)
	labels[v1beta1.LabelJobReferenceKind] = string(job.Kind)
	labels[v1beta1.LabelJobReferenceName] = job.Name
	s := &v1beta1.FlinkStateSnapshot{
		ObjectMeta: metav1.ObjectMeta{
			Name:      Name(job.Name, typ, trigger, slot),
			Namespace: job.Namespace,
			Labels:    labels,
		},
		Spec: v1beta1.FlinkStateSnapshotSpec{
			JobReference: &v1beta1.JobReference{Kind: job.Kind, Name: job.Name},
			BackoffLimit: ptr.To(int32(backoff)),
		},
	}
	if typ == v1beta1.SnapshotTypeCheckpoint {
		s.Spec.Checkpoint = &v1beta1.CheckpointSpec{}
		withCreationMetadata(s)
		return s, nil
	}
	dispose, err := job.Config.Bool(config.KeySavepointDisposeOnDelete)
	if err != nil {
		return nil, err
	}
	format, err := job.Config.Enum(config.KeySavepointFormatType)
	if err != nil {
		return nil, err
	}
	// The target directory is fixed when the snapshot is made, as upstream
	// (a later change of the job's directory does not move it).
	dir, _ := config.SavepointDir(job.Config)
	s.Spec.Savepoint = &v1beta1.SavepointSpec{
		Path:            dir,
		FormatType:      v1beta1.SavepointFormatType(format),
		DisposeOnDelete: ptr.To(dispose),
		AlreadyExists:   ptr.To(false),
	}
	withCreationMetadata(s)
	return s, nil
}

// withCreationMetadata gives an operator-made snapshot, at creation, the
// labels and finalizer the snapshot controller would otherwise write before
// its first trigger: the Type and Trigger columns and `-l
// snapshot.state=IN_PROGRESS` work from the start, and the snapshot costs no
// metadata write until its terminal state.
func withCreationMetadata(s *v1beta1.FlinkStateSnapshot) {
	s.Labels = DesiredLabels(s, v1beta1.SnapshotTriggerPending, true)
	if NeedsFinalizer(s, v1beta1.SnapshotTriggerPending) {
		s.Finalizers = []string{v1beta1.SnapshotFinalizer}
	} else {
		s.Finalizers = nil
	}
}

// UpgradeSnapshot records the savepoint an upgrade, suspend or deletion took
// (stop-with-savepoint) as an UPGRADE snapshot with alreadyExists: true. Its
// name is fixed by the stop's trigger time, so a repeated create after a
// crash is AlreadyExists.
func UpgradeSnapshot(job JobView, path string, triggered time.Time) (*v1beta1.FlinkStateSnapshot, error) {
	return UpgradeSnapshotWithFormat(job, path, triggered, "")
}

// UpgradeSnapshotWithFormat is UpgradeSnapshot recording the format the
// stop-with-savepoint actually asked for (the job's status keeps it next to
// the trigger id), which may differ from the job's current configuration;
// "" means the configured format.
func UpgradeSnapshotWithFormat(job JobView, path string, triggered time.Time, format v1beta1.SavepointFormatType) (*v1beta1.FlinkStateSnapshot, error) {
	s, err := newSnapshot(job, v1beta1.SnapshotTypeSavepoint, v1beta1.SnapshotTriggerUpgrade, triggered.UnixMilli())
	if err != nil {
		return nil, err
	}
	s.Spec.Savepoint.Path = path
	s.Spec.Savepoint.AlreadyExists = ptr.To(true)
	if format != "" {
		s.Spec.Savepoint.FormatType = format
	}
	withCreationMetadata(s) // alreadyExists changes what it needs
	return s, nil
}

// TransitionSavepoint is the savepoint a blue/green transition takes of
// its active child (job) while it keeps running: an UPGRADE savepoint the
// snapshot controller triggers and tracks, named by the time the
// transition recorded it (slot), so a create repeated after a crash is
// AlreadyExists.
func TransitionSavepoint(job JobView, slot time.Time) (*v1beta1.FlinkStateSnapshot, error) {
	return newSnapshot(job, v1beta1.SnapshotTypeSavepoint, v1beta1.SnapshotTriggerUpgrade, slot.UnixMilli())
}

// TransitionSavepointSlot reads back the slot a TransitionSavepoint name
// was made for, so a create repeated after a crash builds the same object
// from the name the transition recorded.
func TransitionSavepointSlot(name string) (time.Time, bool) { return slotFromName(name) }

// HandledNonces are the nonces to record as reconciled after a plan: a
// created snapshot's nonce, nil for a nonce removed from the spec, and a
// checkpoint nonce this Flink version cannot honour (consumed once, with a
// warning: unsupportedCheckpoint, as upstream). Unhandled nonces keep their
// reconciled value.
func HandledNonces(view JobView, plan Plan) (savepoint, checkpoint *int64, unsupportedCheckpoint bool) {
	savepoint, checkpoint = view.ReconciledSavepointNonce, view.ReconciledCheckpointNonce
	switch {
	case plan.SavepointNonce != nil:
		savepoint = plan.SavepointNonce
	case view.SavepointNonce == nil:
		savepoint = nil
	}
	switch {
	case plan.CheckpointNonce != nil:
		checkpoint = plan.CheckpointNonce
	case view.CheckpointNonce == nil:
		checkpoint = nil
	case !view.CheckpointsSupported && !nonceEqual(view.CheckpointNonce, view.ReconciledCheckpointNonce):
		checkpoint, unsupportedCheckpoint = view.CheckpointNonce, true
	}
	return savepoint, checkpoint, unsupportedCheckpoint
}

func nonceEqual(a, b *int64) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}
