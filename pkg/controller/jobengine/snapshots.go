package jobengine

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/config"
	"github.com/flinkops/flink-operator/pkg/lifecycle"
	"github.com/flinkops/flink-operator/pkg/reasons"
	"github.com/flinkops/flink-operator/pkg/snapshotrules"
)

// Snapshots the operator makes for a job (docs/snapshots.md). The rules
// live in pkg/snapshotrules; this file turns a sync into a snapshotrules.JobView
// and the resulting Plan into writes:
//
//   - creates (periodic, manual nonce) run before the status write, which
//     then records the handled nonces: a nonce is never marked reconciled
//     without its snapshot. Names are deterministic (the slot, the nonce),
//     so a create repeated after a crash is AlreadyExists and harmless;
//   - history cleanup deletes run after it, with a UID precondition; the
//     snapshot's finalizer disposes its data first;
//   - the next periodic slot is a requeue (AddAfter), and a snapshot of the
//     job that turns terminal wakes the job (the controllers' snapshot
//     handlers), so nothing ever lists or polls for snapshots.

// snapshotResources says whether this job records snapshots as
// FlinkStateSnapshot resources (else in the legacy status fields).
func (s *State[T, S]) snapshotResources() bool {
	if s.e.SnapshotCRDMissing {
		return false
	}
	on, err := config.SnapshotResourcesEnabled(s.operator, s.Cfg)
	return err == nil && on
}

// jobView is what the snapshot rules need to know about the job, from the
// sync (recorded spec, its effective configuration, status) and the
// snapshot cache. checkpoints says whether the running Flink version can
// trigger checkpoints.
func (s *State[T, S]) jobView(running, checkpoints bool) (snapshotrules.JobView, error) {
	obj := s.obj
	v := snapshotrules.JobView{
		Kind:                 obj.JobReferenceKind(),
		Namespace:            obj.GetNamespace(),
		Name:                 obj.GetName(),
		Labels:               obj.GetLabels(),
		Config:               s.Cfg,
		Running:              running,
		Since:                obj.GetCreationTimestamp().Time,
		CheckpointsSupported: checkpoints,
	}
	if s.recorded != nil {
		if rec := jobOf(&s.recorded.Spec); rec != nil {
			v.ReconciledSavepointNonce, v.ReconciledCheckpointNonce = rec.SavepointTriggerNonce, rec.CheckpointTriggerNonce
		}
	}
	if job := obj.CurrentSpec().GetJob(); job != nil {
		v.SavepointNonce, v.CheckpointNonce = job.SavepointTriggerNonce, job.CheckpointTriggerNonce
		if p := strings.TrimSpace(job.InitialSavepointPath); p != "" {
			v.Keep = append(v.Keep, p)
		}
	}
	st := s.Status()
	js := st.Job
	if p := lifecycle.RestorePath(js); p != "" {
		v.Keep = append(v.Keep, p)
	}
	if v.Since.IsZero() {
		// Only objects that never went through an API server lack it; the
		// deploy time is the next best stable anchor.
		v.Since = time.UnixMilli(st.Reconciliation.ReconciliationTimestamp)
	}
	if info := js.SavepointInfo; info != nil && info.LastPeriodicSavepointTimestamp > 0 {
		v.LegacyLastPeriodicSavepoint = time.UnixMilli(info.LastPeriodicSavepointTimestamp)
	}
	if info := js.CheckpointInfo; info != nil && info.LastPeriodicCheckpointTimestamp > 0 {
		v.LegacyLastPeriodicCheckpoint = time.UnixMilli(info.LastPeriodicCheckpointTimestamp)
	}
	all, err := s.e.Caches.SnapshotsOfJob(snapshotrules.JobKeyFor(v.Kind, v.Namespace, v.Name))
	if err != nil {
		return v, err
	}
	// A snapshot in another namespace counts only where the operator allows
	// cross-namespace references: otherwise anyone could block the job's
	// periodic snapshots with a never-starting one, or feed its cleanup.
	crossNamespace, _ := s.operator.Bool(config.KeySnapshotCrossNamespaceReferencesEnabled)
	for _, snap := range all {
		if snap.Namespace == v.Namespace || crossNamespace {
			v.Snapshots = append(v.Snapshots, snap)
		}
	}
	// A snapshot another job starts from by reference is never cleaned up
	// while referenced [ours].
	referenced, err := s.e.Caches.ReferencedPaths(v.Snapshots)
	v.Keep = append(v.Keep, referenced...)
	return v, err
}

// SnapshotInputs is what reconcileSnapshots needs beyond the sync state.
type SnapshotInputs struct {
	// Running: the deployed job is RUNNING and no upgrade is in progress.
	Running bool
	// Checkpoints: the running Flink version can trigger checkpoints.
	Checkpoints bool
	// specValid: the current spec passes validation (changed nonces wait
	// for a valid spec).
	specValid func() bool
	// Healthy: the job may take a legacy snapshot now.
	Healthy bool
}

// reconcileSnapshots plans and applies the job's operator-made snapshots:
// manual nonces and periodic snapshots while the job runs, history cleanup
// while its JobManager answers; legacy mode without snapshot resources.
func (s *State[T, S]) reconcileSnapshots(ctx context.Context, in SnapshotInputs) error {
	if s.recorded == nil || jobOf(&s.recorded.Spec) == nil || s.obj.CurrentSpec().GetJob() == nil {
		return nil
	}
	view, err := s.jobView(in.Running, in.Checkpoints)
	if err != nil {
		return err
	}
	nonces := in.Running && (!lifecycle.EqualNonce(view.SavepointNonce, view.ReconciledSavepointNonce) ||
		!lifecycle.EqualNonce(view.CheckpointNonce, view.ReconciledCheckpointNonce))
	if nonces && !in.specValid() {
		// Reported by reconcile; the nonces wait for a valid spec.
		view.SavepointNonce, view.CheckpointNonce = view.ReconciledSavepointNonce, view.ReconciledCheckpointNonce
		nonces = false
	}
	// Legacy triggers in flight are observed, and the legacy history
	// cleaned, in both modes; new legacy snapshots only without resources.
	resources := s.snapshotResources()
	s.legacyHealthy = in.Healthy
	handled := s.legacyReconcile(ctx, view, resources, nonces)
	if !resources {
		if handled.record {
			return s.recordNonces(handled.Savepoint, handled.Checkpoint)
		}
		return nil
	}

	plan, err := snapshotrules.PlanSnapshots(view, s.now)
	if err != nil {
		// Only a configuration that changed under a recorded spec gets here.
		s.Fail(reasons.ReasonValidationError, "Snapshots of job %s/%s: %v", view.Namespace, view.Name, err)
		return nil
	}
	for _, w := range plan.Warnings {
		s.Fail(reasons.ReasonValidationError, "spec.flinkConfiguration: %s", w)
	}
	for _, snap := range plan.Create {
		s.createSnapshot(snap)
	}
	for _, snap := range plan.Delete {
		s.deleteSnapshot(snap)
	}
	s.RequeueWithin(plan.RequeueAfter)

	if !nonces {
		return nil
	}
	// Record what was handled: a created snapshot's nonce, a nonce removed
	// from the spec, and a checkpoint nonce this Flink version cannot honour
	// (said once, then consumed, as upstream).
	sp, cp, unsupported := snapshotrules.HandledNonces(view, plan)
	if unsupported {
		s.Event(corev1.EventTypeWarning, reasons.ReasonCheckpointError, "Checkpoint failed for checkpointTriggerNonce: %d: manual checkpoints need Flink 1.17+", *view.CheckpointNonce)
	}
	return s.recordNonces(sp, cp)
}

// createSnapshot creates a planned snapshot before the status write. A
// snapshot of that name that exists already is the same one, made by an
// earlier attempt of this sync.
func (s *State[T, S]) createSnapshot(snap *v1beta1.FlinkStateSnapshot) {
	client, log := s.e.Client, s.log
	s.beforeStatusWrite("create snapshot "+snap.Name, func(ctx context.Context) error {
		_, err := client.FlinkV1beta1().FlinkStateSnapshots(snap.Namespace).Create(ctx, snap, metav1.CreateOptions{})
		switch {
		case apierrors.IsAlreadyExists(err):
			return nil
		case err != nil:
			return fmt.Errorf("creating snapshot %s/%s: %w", snap.Namespace, snap.Name, err)
		}
		log.V(1).Info("Created snapshot", "snapshot", snap.Namespace+"/"+snap.Name,
			"type", snapshotrules.Type(snap), "triggerType", snapshotrules.TriggerType(snap))
		return nil
	})
}

// deleteSnapshot removes a snapshot history cleanup selected, after the
// status write. The UID precondition makes sure a newer snapshot of the same
// name is never the one deleted; one already gone is fine.
func (s *State[T, S]) deleteSnapshot(snap *v1beta1.FlinkStateSnapshot) {
	client, log, uid := s.e.Client, s.log, snap.UID
	namespace, name := snap.Namespace, snap.Name
	s.AfterStatusWrite("delete snapshot "+name, func(ctx context.Context) error {
		opts := metav1.DeleteOptions{}
		if uid != "" {
			opts.Preconditions = &metav1.Preconditions{UID: &uid}
		}
		err := client.FlinkV1beta1().FlinkStateSnapshots(namespace).Delete(ctx, name, opts)
		switch {
		case apierrors.IsNotFound(err), apierrors.IsConflict(err):
			return nil
		case err != nil:
			return fmt.Errorf("deleting snapshot %s/%s (history cleanup): %w", namespace, name, err)
		}
		log.V(1).Info("History cleanup deleted snapshot", "snapshot", namespace+"/"+name)
		return nil
	})
}

// recordNonces records the handled nonces in lastReconciledSpec, and in the
// stable spec too if it was the reconciled one (a nonce is not a reason to
// leave STABLE).
func (s *State[T, S]) recordNonces(sp, cp *int64) error {
	rec := jobOf(&s.recorded.Spec)
	if lifecycle.EqualNonce(sp, rec.SavepointTriggerNonce) && lifecycle.EqualNonce(cp, rec.CheckpointTriggerNonce) {
		return nil
	}
	updated := s.recorded.Spec.Copy()
	job := jobOf(&updated)
	job.SavepointTriggerNonce, job.CheckpointTriggerNonce = sp, cp
	encoded, err := lifecycle.Encode(updated, s.recorded.Meta.FirstDeployment)
	if err != nil {
		return err
	}
	rs := s.Status().Reconciliation
	s.recorded = &lifecycle.Reconciled[S]{Spec: updated, Meta: s.recorded.Meta}
	if s.rolledBackFrom != nil {
		// Rolled back: recorded is the stable spec that runs; the spec
		// rolled back from takes the nonces too, or it would differ from
		// the resource's and be retried (rollback.go).
		from := s.rolledBackFrom.Spec.Copy()
		if job := jobOf(&from); job != nil {
			job.SavepointTriggerNonce, job.CheckpointTriggerNonce = sp, cp
		}
		fromEncoded, err := lifecycle.Encode(from, s.rolledBackFrom.Meta.FirstDeployment)
		if err != nil {
			return err
		}
		rs.LastStableSpec, rs.LastReconciledSpec = encoded, fromEncoded
		s.rolledBackFrom = &lifecycle.Reconciled[S]{Spec: from, Meta: s.rolledBackFrom.Meta}
		return nil
	}
	if rs.LastStableSpec == rs.LastReconciledSpec {
		rs.LastStableSpec = encoded
	}
	rs.LastReconciledSpec = encoded
	return nil
}

// upgradeSnapshotName is the deterministic name of the UPGRADE snapshot of
// the stop-with-savepoint triggered at ts (epoch millis): a create repeated
// after a crash finds it instead of making a second one.
func upgradeSnapshotName(resourceName string, ts int64) string {
	return snapshotrules.Name(resourceName, v1beta1.SnapshotTypeSavepoint, v1beta1.SnapshotTriggerUpgrade, ts)
}

// recordUpgradeSnapshot records the savepoint of a stop as an UPGRADE
// FlinkStateSnapshot (alreadyExists: the snapshot controller marks it
// COMPLETED without calling Flink, in the format the stop asked for),
// created before the status that refers to it; false without snapshot
// resources.
func (s *State[T, S]) recordUpgradeSnapshot(path string, triggered int64) (bool, error) {
	if !s.snapshotResources() {
		return false, nil
	}
	view := snapshotrules.JobView{Kind: s.obj.JobReferenceKind(), Namespace: s.obj.GetNamespace(), Name: s.obj.GetName(),
		Labels: s.obj.GetLabels(), Config: s.Cfg}
	var format v1beta1.SavepointFormatType
	if info := s.JobStatus().SavepointInfo; info != nil {
		format = info.FormatType
	}
	snap, err := snapshotrules.UpgradeSnapshotWithFormat(view, path, time.UnixMilli(triggered), format)
	if err != nil {
		return false, fmt.Errorf("recording the savepoint %s of job %s: %w", path, s.JobStatus().JobID, err)
	}
	s.createSnapshot(snap)
	return true, nil
}

// upgradeSnapshotPath is the path of the UPGRADE snapshot already recorded
// for the stop-with-savepoint in flight, if a crash came between recording
// it and the status write.
func (s *State[T, S]) upgradeSnapshotPath() string {
	info := s.JobStatus().SavepointInfo
	if info == nil || info.TriggerTimestamp == nil || s.e.Caches == nil {
		return ""
	}
	snap, err := s.e.Caches.Snapshot(s.obj.GetNamespace(), upgradeSnapshotName(s.obj.GetName(), *info.TriggerTimestamp))
	if err != nil || snap.Spec.Savepoint == nil {
		return ""
	}
	return snap.Spec.Savepoint.Path
}

// warnSnapshotCRDMissing emits SnapshotResourcesDisabled once per job (per
// operator process) while the FlinkStateSnapshot CRD is missing.
func (s *State[T, S]) warnSnapshotCRDMissing() {
	if s.e.SnapshotCRDMissing && s.obj.CurrentSpec().GetJob() != nil {
		s.warnCRDMissing()
	}
}

// recordedJob is the recorded job spec (nil before the first deploy).
func (s *State[T, S]) recordedJob() *v1beta1.JobSpec {
	if s.recorded == nil {
		return nil
	}
	return jobOf(&s.recorded.Spec)
}
