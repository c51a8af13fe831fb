package deployment

import (
	"context"

	"github.com/flinkops/flink-operator/pkg/controller/legacysnapshots"
	"github.com/flinkops/flink-operator/pkg/snapshots"
)

// Legacy mode (snapshots.md §6): savepoints and checkpoints of a job
// without snapshot resources live in status.jobStatus.savepointInfo/
// checkpointInfo; pkg/controller/legacysnapshots runs them, the same way for
// session jobs.

// Event reasons of legacy mode and of the missing CRD.
const (
	ReasonSnapshotResourcesDisabled = legacysnapshots.ReasonSnapshotResourcesDisabled
	ReasonCleanupFailed             = legacysnapshots.ReasonCleanupFailed
)

// warnSnapshotCRDMissing emits SnapshotResourcesDisabled once per job (per
// operator process) while the CRD is missing.
func (c *Controller) warnSnapshotCRDMissing(sc *syncState) {
	if !c.snapshotCRDMissing || sc.Obj.Spec.Job == nil {
		return
	}
	c.legacy.WarnCRDMissing(sc.Obj.UID, sc.Event)
}

// legacyJob is this sync's job as legacysnapshots sees it.
func (c *Controller) legacyJob(sc *syncState) legacysnapshots.Job {
	j := legacysnapshots.Job{
		Key:        sc.Key,
		Status:     &sc.Obj.Status.JobStatus,
		Config:     sc.Cfg,
		Now:        sc.Now,
		Client:     sc.Client,
		Healthy:    sc.JobHealthy(),
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

// reconcileLegacy observes legacy triggers in flight, triggers due ones
// (only when snapshot resources are off for the job), and cleans the legacy
// savepoint history. nonces says whether changed nonces may be handled now.
func (c *Controller) reconcileLegacy(ctx context.Context, sc *syncState, view snapshots.JobView, resources, nonces bool) error {
	handled := c.legacy.Reconcile(ctx, c.legacyJob(sc), view, resources, nonces)
	if !handled.Record {
		return nil
	}
	return c.recordNonces(sc, handled.Savepoint, handled.Checkpoint)
}
