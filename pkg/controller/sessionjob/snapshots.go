package sessionjob

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
	"github.com/flinkops/flink-operator/pkg/controller/jobengine"
	"github.com/flinkops/flink-operator/pkg/controller/legacysnapshots"
	"github.com/flinkops/flink-operator/pkg/lifecycle"
	"github.com/flinkops/flink-operator/pkg/snapshots"
)

// Snapshots the operator makes for a session job (snapshots.md §4–5), the
// same rules as for applications (pkg/snapshots): manual nonces and
// periodic snapshots created before the status write that records the
// nonces, history cleanup deletes after it, the next periodic slot as a
// requeue. Savepoints go to the job's own savepoint directory when its
// flinkConfiguration sets one, else to the session cluster's (the
// snapshot controller resolves it the same way).

// snapshotResources says whether this job records snapshots as
// FlinkStateSnapshot resources.
func (c *Controller) snapshotResources(sc *syncState) bool {
	if c.snapshotCRDMissing {
		return false
	}
	on, err := config.SnapshotResourcesEnabled(c.cfg, sc.Cfg)
	return err == nil && on
}

func (c *Controller) jobView(sc *syncState, running bool) (snapshots.JobView, error) {
	sj := sc.Obj
	v := snapshots.JobView{
		Kind:                 v1beta1.JobReferenceKindSessionJob,
		Namespace:            sj.Namespace,
		Name:                 sj.Name,
		Config:               sc.Cfg,
		Running:              running,
		Since:                sj.CreationTimestamp.Time,
		CheckpointsSupported: sc.version.SupportsCheckpointTrigger(),
	}
	if rec := sc.recorded.Spec.Job; rec != nil {
		v.ReconciledSavepointNonce, v.ReconciledCheckpointNonce = rec.SavepointTriggerNonce, rec.CheckpointTriggerNonce
	}
	if job := sj.Spec.Job; job != nil {
		v.SavepointNonce, v.CheckpointNonce = job.SavepointTriggerNonce, job.CheckpointTriggerNonce
		if p := strings.TrimSpace(job.InitialSavepointPath); p != "" {
			v.Keep = append(v.Keep, p)
		}
	}
	js := sj.Status.JobStatus
	if p := js.UpgradeSavepointPath; p != "" {
		v.Keep = append(v.Keep, p)
	}
	if v.Since.IsZero() {
		v.Since = time.UnixMilli(sj.Status.ReconciliationStatus.ReconciliationTimestamp)
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
	// A snapshot in another namespace counts only where cross-namespace
	// references are allowed (else anyone could block or feed this job's
	// periodic snapshots and cleanup).
	crossNamespace, _ := c.cfg.Bool(config.KeySnapshotCrossNamespaceReferencesEnabled)
	for _, s := range all {
		if s.Namespace == sj.Namespace || crossNamespace {
			v.Snapshots = append(v.Snapshots, s)
		}
	}
	// A snapshot another job starts from by reference is never cleaned up
	// while referenced [ours].
	referenced, err := c.caches.ReferencedPaths(v.Snapshots)
	v.Keep = append(v.Keep, referenced...)
	return v, err
}

// reconcileSnapshots plans and applies the job's operator-made snapshots.
// running means the job is RUNNING, that is recorded, and no upgrade is in
// progress.
func (c *Controller) reconcileSnapshots(ctx context.Context, sc *syncState, running bool) error {
	if sc.recorded.Spec.Job == nil || sc.Obj.Spec.Job == nil {
		return nil
	}
	view, err := c.jobView(sc, running)
	if err != nil {
		return err
	}
	nonces := running && (!lifecycle.EqualNonce(view.SavepointNonce, view.ReconciledSavepointNonce) ||
		!lifecycle.EqualNonce(view.CheckpointNonce, view.ReconciledCheckpointNonce))
	if nonces && c.validate(sc) != nil {
		// Reported by reconcile; the nonces wait for a valid spec.
		view.SavepointNonce, view.CheckpointNonce = view.ReconciledSavepointNonce, view.ReconciledCheckpointNonce
		nonces = false
	}
	// Legacy triggers in flight are observed, and the legacy history
	// cleaned, in both modes; new legacy snapshots only without resources.
	resources := c.snapshotResources(sc)
	handled := c.legacy.Reconcile(ctx, c.legacyJob(sc), view, resources, nonces)
	if !resources {
		if handled.Record {
			return c.recordNonces(sc, handled.Savepoint, handled.Checkpoint)
		}
		return nil
	}
	plan, err := snapshots.PlanSnapshots(view, sc.Now)
	if err != nil {
		sc.Fail(jobengine.ReasonValidationError, "Snapshots of session job %s/%s: %v", view.Namespace, view.Name, err)
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
	sp, cp, unsupported := snapshots.HandledNonces(view, plan)
	if unsupported {
		sc.Event(corev1.EventTypeWarning, jobengine.ReasonCheckpointError, "Checkpoint failed for checkpointTriggerNonce: %d: manual checkpoints need Flink 1.17+", *view.CheckpointNonce)
	}
	return c.recordNonces(sc, sp, cp)
}

// warnSnapshotCRDMissing emits SnapshotResourcesDisabled once per job (per
// operator process) while the CRD is missing, as for applications.
func (c *Controller) warnSnapshotCRDMissing(sc *syncState) {
	if !c.snapshotCRDMissing {
		return
	}
	c.legacy.WarnCRDMissing(sc.Obj.UID, sc.Event)
}

// legacyJob is this sync's job as legacysnapshots sees it (legacy mode:
// savepointInfo/checkpointInfo, as for applications).
func (c *Controller) legacyJob(sc *syncState) legacysnapshots.Job {
	j := legacysnapshots.Job{
		Key:        sc.Key,
		Status:     &sc.Obj.Status.JobStatus,
		Config:     sc.Cfg,
		Now:        sc.Now,
		Client:     sc.Client,
		Healthy:    sc.Client != nil && sc.Job != nil && sc.Obj.Status.JobStatus.State == v1beta1.JobStatusRunning,
		RetryAfter: sc.ReconcileInterval(),
		Log:        sc.Log,
		Event:      sc.Event,
		Fail:       sc.Fail,
		After:      sc.RequeueWithin,
		Then:       sc.AfterStatusWrite,
	}
	if sc.recorded != nil {
		j.Recorded = sc.recorded.Spec.Job
	}
	return j
}

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
// status write; the UID precondition makes sure a newer snapshot of the same
// name is never the one deleted.
func (c *Controller) deleteSnapshot(sc *syncState, s *v1beta1.FlinkStateSnapshot) {
	uid, namespace, name := s.UID, s.Namespace, s.Name
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
		return nil
	})
}

// recordNonces records the handled nonces in lastReconciledSpec (and in
// the stable spec if it was the reconciled one).
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
// the stop-with-savepoint triggered at ts: a create repeated after a crash
// finds it instead of making a second one.
func upgradeSnapshotName(sj *v1beta1.FlinkSessionJob, ts int64) string {
	return snapshots.Name(sj.Name, v1beta1.SnapshotTypeSavepoint, v1beta1.SnapshotTriggerUpgrade, ts)
}

func (c *Controller) upgradeSnapshot(sc *syncState, path string, ts int64) (*v1beta1.FlinkStateSnapshot, error) {
	view := snapshots.JobView{Kind: v1beta1.JobReferenceKindSessionJob, Namespace: sc.Obj.Namespace, Name: sc.Obj.Name, Config: sc.Cfg}
	var format v1beta1.SavepointFormatType
	if info := sc.Obj.Status.JobStatus.SavepointInfo; info != nil {
		format = info.FormatType
	}
	return snapshots.UpgradeSnapshotWithFormat(view, path, time.UnixMilli(ts), format)
}

// upgradeSnapshotPath is the path of the UPGRADE snapshot already recorded
// for the stop in flight, if a crash came between recording it and the
// status write.
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
