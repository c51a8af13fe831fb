package deployment

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/config"
	"github.com/flinkops/flink-operator/pkg/controller/jobengine"
	"github.com/flinkops/flink-operator/pkg/flink"
	"github.com/flinkops/flink-operator/pkg/lifecycle"
	"github.com/flinkops/flink-operator/pkg/snapshots"
)

// Snapshots the operator makes for a job (snapshots.md §4–5). The rules
// live in pkg/snapshots; this file turns a sync into a snapshots.JobView
// and the resulting Plan into writes:
//
//   - creates (periodic, manual nonce) run before the status write, which
//     then records the handled nonces: a nonce is never marked reconciled
//     without its snapshot. Names are deterministic (the slot, the nonce),
//     so a create repeated after a crash is AlreadyExists and harmless;
//   - history cleanup deletes run after it, with a UID precondition; the
//     snapshot's finalizer disposes its data first;
//   - the next periodic slot is a requeue (AddAfter), and a snapshot of the
//     job that turns terminal wakes the job (snapshotEvent), so nothing ever
//     lists or polls for snapshots.

// snapshotResources says whether this job records snapshots as
// FlinkStateSnapshot resources (else in the legacy status fields).
func (c *Controller) snapshotResources(sc *syncState) bool {
	on, err := config.SnapshotResourcesEnabled(c.cfg, sc.Cfg)
	return err == nil && on
}

// jobView is what the snapshot rules need to know about the job, from the
// sync (recorded spec, its effective config, status) and the snapshot cache.
func (c *Controller) jobView(sc *syncState, running bool) (snapshots.JobView, error) {
	dep := sc.Obj
	v := snapshots.JobView{
		Kind:      v1beta1.JobReferenceKindDeployment,
		Namespace: dep.Namespace,
		Name:      dep.Name,
		Config:    sc.Cfg,
		Running:   running,
		Since:     dep.CreationTimestamp.Time,
	}
	if sc.recorded != nil {
		version, err := flink.ParseVersion(string(sc.recorded.Spec.FlinkVersion))
		v.CheckpointsSupported = err == nil && version.SupportsCheckpointTrigger()
		if rec := sc.recorded.Spec.Job; rec != nil {
			v.ReconciledSavepointNonce, v.ReconciledCheckpointNonce = rec.SavepointTriggerNonce, rec.CheckpointTriggerNonce
		}
	}
	if job := dep.Spec.Job; job != nil {
		v.SavepointNonce, v.CheckpointNonce = job.SavepointTriggerNonce, job.CheckpointTriggerNonce
		if p := strings.TrimSpace(job.InitialSavepointPath); p != "" {
			v.Keep = append(v.Keep, p)
		}
	}
	js := dep.Status.JobStatus
	if p := js.UpgradeSavepointPath; p != "" {
		v.Keep = append(v.Keep, p)
	}
	if v.Since.IsZero() {
		// Only objects that never went through an API server lack it; the
		// deploy time is the next best stable anchor.
		v.Since = time.UnixMilli(dep.Status.ReconciliationStatus.ReconciliationTimestamp)
	}
	if info := js.SavepointInfo; info != nil && info.LastPeriodicSavepointTimestamp > 0 {
		v.LegacyLastPeriodicSavepoint = time.UnixMilli(info.LastPeriodicSavepointTimestamp)
	}
	if info := js.CheckpointInfo; info != nil && info.LastPeriodicCheckpointTimestamp > 0 {
		v.LegacyLastPeriodicCheckpoint = time.UnixMilli(info.LastPeriodicCheckpointTimestamp)
	}
	all, err := c.caches.SnapshotsOfJob(snapshots.JobKeyFor(v.Kind, v.Namespace, v.Name))
	if err != nil {
		return v, err
	}
	// A snapshot in another namespace counts only where the operator allows
	// cross-namespace references: otherwise anyone could block the job's
	// periodic snapshots with a never-starting one, or feed its cleanup.
	crossNamespace, _ := c.cfg.Bool(config.KeySnapshotCrossNamespaceReferencesEnabled)
	for _, s := range all {
		if s.Namespace == dep.Namespace || crossNamespace {
			v.Snapshots = append(v.Snapshots, s)
		}
	}
	// A snapshot another job starts from by reference is never cleaned up
	// while referenced [ours].
	referenced, err := c.caches.ReferencedPaths(v.Snapshots)
	v.Keep = append(v.Keep, referenced...)
	return v, err
}

// reconcileSnapshots plans and applies the job's operator-made snapshots:
// manual nonces and periodic snapshots while the job runs, history cleanup
// while its JobManager answers. running means the deployed job is RUNNING
// on all its tasks and no upgrade is in progress.
func (c *Controller) reconcileSnapshots(ctx context.Context, sc *syncState, running bool) error {
	if sc.recorded == nil || sc.recorded.Spec.Job == nil || sc.Obj.Spec.Job == nil {
		return nil
	}
	view, err := c.jobView(sc, running)
	if err != nil {
		return err
	}
	nonces := running && (!lifecycle.EqualNonce(view.SavepointNonce, view.ReconciledSavepointNonce) ||
		!lifecycle.EqualNonce(view.CheckpointNonce, view.ReconciledCheckpointNonce))
	if nonces {
		if _, err := c.validate(sc.Obj, sc.Obj.Spec, sc.recorded); err != nil {
			// Reported by reconcile; the nonces wait for a valid spec.
			view.SavepointNonce, view.CheckpointNonce = view.ReconciledSavepointNonce, view.ReconciledCheckpointNonce
			nonces = false
		}
	}
	resources := c.snapshotResources(sc)
	// Legacy triggers in flight are observed, and the legacy history
	// cleaned, in both modes; new legacy snapshots only without resources.
	if err := c.reconcileLegacy(ctx, sc, view, resources, nonces); err != nil {
		return err
	}
	if !resources {
		return nil
	}

	plan, err := snapshots.PlanSnapshots(view, sc.Now)
	if err != nil {
		// Only a configuration that changed under a recorded spec gets here.
		sc.Fail(jobengine.ReasonValidationError, "Snapshots of job %s/%s: %v", view.Namespace, view.Name, err)
		return nil
	}
	for _, w := range plan.Warnings {
		sc.Fail(jobengine.ReasonValidationError, "spec.flinkConfiguration: %s", w)
	}
	for _, s := range plan.Create {
		c.createSnapshot(sc, s)
	}
	for _, s := range plan.Delete {
		c.deleteSnapshot(sc, s)
	}
	sc.RequeueWithin(plan.RequeueAfter)

	if !nonces {
		return nil
	}
	// Record what was handled: a created snapshot's nonce, a nonce removed
	// from the spec, and a checkpoint nonce this Flink version cannot honour
	// (said once, then consumed, as upstream).
	sp, cp, unsupported := snapshots.HandledNonces(view, plan)
	if unsupported {
		sc.Event(corev1.EventTypeWarning, jobengine.ReasonCheckpointError, "Checkpoint failed for checkpointTriggerNonce: %d: manual checkpoints need Flink 1.17+", *view.CheckpointNonce)
	}
	return c.recordNonces(sc, sp, cp)
}

// createSnapshot creates a planned snapshot before the status write. A
// snapshot of that name that exists already is the same one, made by an
// earlier attempt of this sync.
func (c *Controller) createSnapshot(sc *syncState, s *v1beta1.FlinkStateSnapshot) {
	log := sc.Log
	sc.BeforeStatusWrite("create snapshot "+s.Name, func(ctx context.Context) error {
		_, err := c.client.FlinkV1beta1().FlinkStateSnapshots(s.Namespace).Create(ctx, s, metav1.CreateOptions{})
		switch {
		case apierrors.IsAlreadyExists(err):
			return nil
		case err != nil:
			return fmt.Errorf("creating snapshot %s/%s: %w", s.Namespace, s.Name, err)
		}
		log.V(1).Info("Created snapshot", "snapshot", s.Namespace+"/"+s.Name,
			"type", snapshots.Type(s), "triggerType", snapshots.TriggerType(s))
		return nil
	})
}

// deleteSnapshot removes a snapshot history cleanup selected, after the
// status write. The UID precondition makes sure a newer snapshot of the same
// name is never the one deleted; one already gone is fine.
func (c *Controller) deleteSnapshot(sc *syncState, s *v1beta1.FlinkStateSnapshot) {
	log, uid := sc.Log, s.UID
	namespace, name := s.Namespace, s.Name
	sc.AfterStatusWrite("delete snapshot "+name, func(ctx context.Context) error {
		opts := metav1.DeleteOptions{}
		if uid != "" {
			opts.Preconditions = &metav1.Preconditions{UID: &uid}
		}
		err := c.client.FlinkV1beta1().FlinkStateSnapshots(namespace).Delete(ctx, name, opts)
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
func (c *Controller) recordNonces(sc *syncState, sp, cp *int64) error {
	rec := sc.recorded.Spec.Job
	if lifecycle.EqualNonce(sp, rec.SavepointTriggerNonce) && lifecycle.EqualNonce(cp, rec.CheckpointTriggerNonce) {
		return nil
	}
	updated := sc.recorded.Spec.DeepCopy()
	updated.Job.SavepointTriggerNonce, updated.Job.CheckpointTriggerNonce = sp, cp
	encoded, err := encodeSpec(*updated, sc.recorded.Meta.FirstDeployment)
	if err != nil {
		return err
	}
	rs := &sc.Obj.Status.ReconciliationStatus
	if rs.LastStableSpec == rs.LastReconciledSpec {
		rs.LastStableSpec = encoded
	}
	rs.LastReconciledSpec = encoded
	sc.recorded = &reconciledSpec{Spec: *updated, Meta: sc.recorded.Meta}
	return nil
}

// upgradeSnapshotName is the deterministic name of the UPGRADE snapshot of
// the stop-with-savepoint triggered at ts (epoch millis): a create repeated
// after a crash finds it instead of making a second one.
func upgradeSnapshotName(dep *v1beta1.FlinkDeployment, ts int64) string {
	return snapshots.Name(dep.Name, v1beta1.SnapshotTypeSavepoint, v1beta1.SnapshotTriggerUpgrade, ts)
}

// upgradeSnapshot is the record of an upgrade (or suspend, or deletion)
// savepoint: an existing savepoint (alreadyExists) the snapshot controller
// marks COMPLETED without calling Flink, in the format the stop asked for.
func (c *Controller) upgradeSnapshot(sc *syncState, path string, ts int64) (*v1beta1.FlinkStateSnapshot, error) {
	view := snapshots.JobView{Kind: v1beta1.JobReferenceKindDeployment, Namespace: sc.Obj.Namespace, Name: sc.Obj.Name, Config: sc.Cfg}
	var format v1beta1.SavepointFormatType
	if info := sc.Obj.Status.JobStatus.SavepointInfo; info != nil {
		format = info.FormatType
	}
	return snapshots.UpgradeSnapshotWithFormat(view, path, time.UnixMilli(ts), format)
}

// upgradeSnapshotPath is the path of the UPGRADE snapshot already recorded
// for the stop-with-savepoint in flight, if a crash came between recording
// it and the status write.
func (c *Controller) upgradeSnapshotPath(sc *syncState) string {
	info := sc.Obj.Status.JobStatus.SavepointInfo
	if info == nil || info.TriggerTimestamp == nil {
		return ""
	}
	s, err := c.caches.Snapshot(sc.Obj.Namespace, upgradeSnapshotName(sc.Obj, *info.TriggerTimestamp))
	if err != nil || s.Spec.Savepoint == nil {
		return ""
	}
	return s.Spec.Savepoint.Path
}

// snapshotEvent wakes the FlinkDeployment a snapshot refers to when the
// snapshot's change can alter what the job's snapshot plan does:
//
//   - it turned terminal (COMPLETED, FAILED, ABANDONED): a periodic slot
//     that waited for it may fire, and history cleanup may delete an older
//     one;
//   - it stopped being in flight otherwise (deleted, or marked for deletion,
//     while in flight): the slot is free;
//   - it appeared already terminal (an informer relist, a restored backup):
//     cleanup may have work.
//
// Other changes (a new snapshot, TRIGGER_PENDING ↔ IN_PROGRESS, labels, the
// final removal of a terminal one) change nothing the plan acts on, and each
// wake costs a sync with a JobManager REST call, so they wake nothing.
func (c *Controller) snapshotEvent(oldObj, newObj any) {
	old, _ := unwrapSnapshot(oldObj)
	cur, _ := unwrapSnapshot(newObj)
	var wake bool
	switch {
	case old == nil && cur != nil: // added
		wake = cur.Status.State.IsTerminal()
	case old != nil && cur == nil: // deleted
		wake = blocksPeriodic(old)
	case old != nil && cur != nil:
		wake = (old.Status.State != cur.Status.State && cur.Status.State.IsTerminal()) || blocksPeriodic(old) != blocksPeriodic(cur)
	}
	if !wake {
		return
	}
	s := cur
	if s == nil {
		s = old
	}
	if key := deploymentKeyOf(s); key != "" {
		c.queue.Add(key)
	}
}

// blocksPeriodic mirrors what pkg/snapshots counts as in flight.
func blocksPeriodic(s *v1beta1.FlinkStateSnapshot) bool {
	return snapshots.InFlight(s) && s.DeletionTimestamp == nil
}

// deploymentKeyOf is the queue key of the FlinkDeployment a snapshot refers
// to, or "" for other references.
func deploymentKeyOf(s *v1beta1.FlinkStateSnapshot) string {
	r := s.Spec.JobReference
	if r == nil || r.Kind != v1beta1.JobReferenceKindDeployment || r.Name == "" {
		return ""
	}
	return snapshots.JobRefNamespace(s) + "/" + r.Name
}

func unwrapSnapshot(obj any) (*v1beta1.FlinkStateSnapshot, bool) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	s, ok := obj.(*v1beta1.FlinkStateSnapshot)
	return s, ok
}

// snapshotHandler registers snapshotEvent on the snapshot informers.
func (c *Controller) snapshotHandler() cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { c.snapshotEvent(nil, obj) },
		UpdateFunc: c.snapshotEvent,
		DeleteFunc: func(obj any) { c.snapshotEvent(obj, nil) },
	}
}
