package sessionjob

import (
	"context"
	"errors"
	"fmt"
	"time"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/config"
	"github.com/flinkops/flink-operator/pkg/controller/jobstop"
	"github.com/flinkops/flink-operator/pkg/flink"
	"github.com/flinkops/flink-operator/pkg/lifecycle"
	"github.com/flinkops/flink-operator/pkg/snapshots"
)

// The stop of the old job during an upgrade, suspend or deletion, recorded
// in status.jobStatus so that every step survives a crash:
//
//   - savepointInfo {triggerId, triggerTimestamp, triggerType: UPGRADE}: a
//     stop-with-savepoint with that trigger id was (or is about to be) sent;
//   - savepointInfo {triggerType: UPGRADE, triggerTimestamp} without a
//     trigger id: that stop-with-savepoint failed; the job is stopped by
//     last-state instead (or, with the fallback disabled, retried later);
//   - jobStatus.state SUSPENDED: the job's state is recorded in
//     upgradeSavepointPath; the job is cancelled if it still runs
//     (ensureEnded) before anything new is submitted.

// stopJob takes the next step in stopping the old job with its state
// (upgrade modes savepoint and last-state; stateless jobs are marked
// stopped at once and cancelled by ensureEnded). It reports whether the
// state is recorded.
func (c *Controller) stopJob(ctx context.Context, sc *syncState) bool {
	js := &sc.sj.Status.JobStatus
	info := js.SavepointInfo
	if info != nil && info.TriggerType == v1beta1.SnapshotTriggerUpgrade && info.TriggerID != "" {
		return c.pollStop(ctx, sc)
	}
	if !sc.jobs {
		// The JobManager cannot be asked: only a state recorded earlier is
		// trusted.
		if js.State.IsGloballyTerminal() || neverRan(sc) {
			return c.finishStop(sc, js.UpgradeSavepointPath)
		}
		sc.log.Info("Waiting for the session cluster to stop the job", "cluster", sc.deploymentName(), "jobId", js.JobID)
		sc.after(sc.progressInterval())
		return false
	}
	failedAttempt := info != nil && info.TriggerType == v1beta1.SnapshotTriggerUpgrade && info.TriggerID == ""
	if upgradeMode(&sc.recorded.Spec) != v1beta1.UpgradeModeSavepoint {
		return c.stopLastState(ctx, sc)
	}
	fallback, _ := sc.cfg.Bool(config.KeyJobUpgradeLastStateFallbackEnabled)
	if failedAttempt {
		if fallback {
			return c.stopLastState(ctx, sc)
		}
		failedAt := time.UnixMilli(derefInt64(info.TriggerTimestamp))
		if wait := failedAt.Add(sc.reconcileInterval()).Sub(sc.now); wait > 0 {
			if prev := sc.base.Status.Error; prev != "" {
				sc.errs = append(sc.errs, syncError{ReasonSavepointError, prev})
			}
			sc.after(wait)
			return false
		}
	}
	switch {
	case jobHealthy(sc):
		c.triggerStop(sc)
	case sc.job != nil && effectiveState(sc.job).IsGloballyTerminal():
		return c.stopLastState(ctx, sc) // an ended job takes no savepoint
	case jobStarting(sc):
		sc.after(sc.progressInterval())
	case neverRan(sc):
		return c.finishStop(sc, js.UpgradeSavepointPath)
	case fallback:
		sc.log.Info("Job cannot take a savepoint, falling back to its last checkpoint", "state", js.State)
		lifecycle.MarkFailedStop(js, sc.now)
		return c.stopLastState(ctx, sc)
	default:
		sc.fail(ReasonUpgradeFailed, "Job %s is %s and cannot be stopped with a savepoint; the last-state fallback is disabled (%s: false), "+
			"so it keeps running. The upgrade continues once the job runs again.", js.JobID, describeJob(sc), config.KeyJobUpgradeLastStateFallbackEnabled)
		sc.after(sc.progressInterval())
	}
	return false
}

func jobHealthy(sc *syncState) bool {
	return sc.client != nil && sc.job != nil && effectiveState(sc.job) == v1beta1.JobStatusRunning
}

// jobStarting: the job is still coming up after its submission, for at most
// kubernetes.operator.deployment.readiness.timeout after the upgrade was
// recorded; a savepoint upgrade waits for it rather than falling back.
func jobStarting(sc *syncState) bool {
	timeout, _ := sc.cfg.Duration(config.KeyDeploymentReadinessTimeout)
	if sc.now.Sub(time.UnixMilli(sc.sj.Status.ReconciliationStatus.ReconciliationTimestamp)) > timeout || sc.job == nil {
		return false
	}
	switch effectiveState(sc.job) {
	case v1beta1.JobStatusCreated, v1beta1.JobStatusInitializing, v1beta1.JobStatusReconciling, v1beta1.JobStatusRestarting:
		return true
	}
	return false
}

// neverRan: the recorded submission was never seen by the operator and
// Flink does not know it, so the job still has the state it was deployed
// from.
func neverRan(sc *syncState) bool {
	js := &sc.sj.Status.JobStatus
	return sc.job == nil && (js.State == v1beta1.JobStatusReconciling || js.State == "")
}

func describeJob(sc *syncState) string {
	switch {
	case !sc.jobs:
		return "unreachable (session cluster " + sc.deploymentName() + " not ready)"
	case sc.job == nil:
		return "unknown to its JobManager"
	}
	return string(effectiveState(sc.job))
}

// triggerStop records a new stop-with-savepoint (trigger id chosen here)
// and sends it once the record is written: Flink treats a repeated trigger
// id as the same request, so a crash on either side of the POST resumes
// this same operation.
func (c *Controller) triggerStop(sc *syncState) {
	js := &sc.sj.Status.JobStatus
	ts := sc.now.UnixMilli()
	if js.SavepointInfo == nil {
		js.SavepointInfo = &v1beta1.SavepointInfo{}
	}
	js.SavepointInfo.TriggerID = c.newTriggerID()
	js.SavepointInfo.TriggerTimestamp = &ts
	js.SavepointInfo.TriggerType = v1beta1.SnapshotTriggerUpgrade
	js.SavepointInfo.FormatType = v1beta1.SavepointFormatType(lifecycle.SavepointFormat(sc.cfg))
	sc.log.Info("Stopping the job with a savepoint", "jobId", js.JobID, "triggerId", js.SavepointInfo.TriggerID)
	c.postStop(sc, js.JobID, js.SavepointInfo.TriggerID)
	sc.after(snapshots.MinPollDelay)
}

// postStop queues the POST /jobs/{id}/stop. A failure is not an error: the
// next poll asks Flink by trigger id and re-sends it if unknown.
func (c *Controller) postStop(sc *syncState, jobID, triggerID string) {
	client, cfg, log := sc.client, sc.cfg, sc.log
	dir, _ := config.SavepointDir(cfg)
	req := flink.StopRequest{TargetDirectory: dir, FormatType: flink.SavepointFormatType(lifecycle.SavepointFormat(cfg)), TriggerID: triggerID}
	if sc.sj.DeletionTimestamp != nil {
		req.Drain, _ = cfg.Bool(config.KeyJobDrainOnSavepointDeletion)
	}
	sc.then("stop-with-savepoint", func(ctx context.Context) error {
		if _, err := client.StopWithSavepoint(ctx, jobID, req); err != nil {
			log.Info("Stop-with-savepoint request failed, will check by trigger id", "triggerId", triggerID, "err", err)
		}
		return nil
	})
}

// pollStop follows the stop-with-savepoint recorded in status.
func (c *Controller) pollStop(ctx context.Context, sc *syncState) bool {
	o := c.checkStop(ctx, sc)
	js := &sc.sj.Status.JobStatus
	switch {
	case o.Pending:
		return false
	case o.Lost:
		dir, _ := config.SavepointDir(sc.cfg)
		sc.fail(ReasonUpgradeFailed, "Job %s finished after stop-with-savepoint (trigger id %s) but the savepoint's path is unknown (%v). "+
			"%s: find the newest savepoint of job %s under %s, set spec.job.initialSavepointPath to it and change spec.job.savepointRedeployNonce",
			js.JobID, js.SavepointInfo.TriggerID, errSavepointLost, manualRestore, js.JobID, dir)
		sc.after(retryFailed)
		return false
	case o.Failure != "":
		return c.stopFailed(ctx, sc, o.Failure)
	}
	if err := c.recordSavepoint(sc, o.Path); err != nil {
		sc.fail(ReasonUpgradeFailed, "%v", err)
		sc.after(retryFailed)
		return false
	}
	return c.finishStop(sc, o.Path)
}

// checkStop asks Flink about the stop-with-savepoint in flight
// (pkg/controller/jobstop), bounded by the job's checkpoint timeout; it
// schedules the next poll while pending and re-sends the same stop when
// Flink forgot an id the running job never acted on.
func (c *Controller) checkStop(ctx context.Context, sc *syncState) jobstop.Outcome {
	js := &sc.sj.Status.JobStatus
	q := jobstop.Query{
		Client: sc.client, JobID: js.JobID, TriggerID: js.SavepointInfo.TriggerID,
		Triggered: time.UnixMilli(derefInt64(js.SavepointInfo.TriggerTimestamp)), Now: sc.now,
		Timeout: lifecycle.StopTimeout(sc.cfg), Recorded: c.upgradeSnapshotPath(sc),
	}
	if sc.job != nil {
		q.JobState = effectiveState(sc.job)
	}
	o := jobstop.Check(ctx, q)
	if o.Resend {
		sc.log.Info("Flink does not know the stop trigger id, sending it again", "triggerId", q.TriggerID)
		c.postStop(sc, q.JobID, q.TriggerID)
	}
	if o.Pending {
		sc.after(o.PollAfter)
	}
	return o
}

var errSavepointLost = errors.New("the job finished after stop-with-savepoint but Flink no longer knows the savepoint's path")

// stopFailed ends a failed stop-with-savepoint: last-state instead, or,
// with the fallback disabled, the job keeps running and the stop is retried
// later.
func (c *Controller) stopFailed(ctx context.Context, sc *syncState, msg string) bool {
	js := &sc.sj.Status.JobStatus
	sc.log.Info("Stop-with-savepoint failed", "jobId", js.JobID, "reason", msg)
	lifecycle.MarkFailedStop(js, sc.now)
	sc.event("Warning", ReasonSavepointError, "%s", msg)
	if fallback, _ := sc.cfg.Bool(config.KeyJobUpgradeLastStateFallbackEnabled); fallback {
		return c.stopLastState(ctx, sc)
	}
	sc.fail(ReasonSavepointError, "%s. The last-state fallback is disabled (%s: false), so the job keeps running; retrying in %s",
		msg, config.KeyJobUpgradeLastStateFallbackEnabled, sc.reconcileInterval())
	sc.after(sc.reconcileInterval())
	return false
}

// stopLastState stops the job keeping its latest checkpoint: cancel it
// (checkpoints are retained on cancellation unless the job says otherwise)
// and once it has ended read the newest restorable checkpoint or savepoint.
// A job Flink no longer knows is restarted only from a state recorded
// earlier; otherwise manual restore.
func (c *Controller) stopLastState(ctx context.Context, sc *syncState) bool {
	js := &sc.sj.Status.JobStatus
	if sc.job != nil {
		if !effectiveState(sc.job).IsGloballyTerminal() {
			c.cancel(sc)
			return false
		}
		path, err := c.latestState(ctx, sc)
		switch {
		case err != nil && flink.IsRetryable(err):
			sc.after(sc.progressInterval())
			return false
		case err != nil:
			sc.fail(ReasonUpgradeFailed, "Cannot upgrade job %s: %v", js.JobID, err)
			sc.after(retryFailed)
			return false
		}
		return c.finishStop(sc, path)
	}
	if js.State.IsGloballyTerminal() || neverRan(sc) {
		return c.finishStop(sc, js.UpgradeSavepointPath)
	}
	sc.fail(ReasonUpgradeFailed, "Job %s (last seen %s) is not known to session cluster %s any more, so its last checkpoint cannot be read. "+
		"%s: set spec.job.initialSavepointPath to the latest checkpoint or savepoint and change spec.job.savepointRedeployNonce",
		js.JobID, js.State, sc.deploymentName(), manualRestore)
	sc.after(retryFailed)
	return false
}

// cancel queues PATCH /jobs/{id}?mode=cancel; the job's end is observed by
// a later sync.
func (c *Controller) cancel(sc *syncState) {
	client, jobID, log := sc.client, sc.sj.Status.JobStatus.JobID, sc.log
	sc.then("cancel job", func(ctx context.Context) error {
		err := client.CancelJob(ctx, jobID)
		switch {
		case err == nil, flink.IsJobAlreadyTerminal(err), flink.IsNotFound(err):
		default:
			log.Info("Cancelling the job failed, will retry", "jobId", jobID, "err", err)
		}
		return nil
	})
	sc.after(snapshots.MinPollDelay)
}

// finishStop records the state to restart from and marks the job stopped.
func (c *Controller) finishStop(sc *syncState, path string) bool {
	js := &sc.sj.Status.JobStatus
	js.UpgradeSavepointPath = path
	js.State = v1beta1.JobStatusSuspended
	lifecycle.ClearStopTrigger(js)
	return true
}

// ensureEnded makes sure the job the status names (already marked stopped)
// is no longer running before anything new is submitted: stateless
// upgrades, savepoint redeploys and suspends cancel it here. It reports
// whether the job has ended (or never existed).
func (c *Controller) ensureEnded(sc *syncState) bool {
	js := &sc.sj.Status.JobStatus
	if js.JobID == "" {
		return true
	}
	if !sc.jobs {
		if sc.base.Status.JobStatus.State.IsGloballyTerminal() || neverRan(sc) || sc.base.Status.JobStatus.State == "" {
			return true
		}
		sc.log.Info("Waiting for the session cluster to confirm the job ended", "cluster", sc.deploymentName(), "jobId", js.JobID)
		sc.after(sc.progressInterval())
		return false
	}
	if sc.job == nil || effectiveState(sc.job).IsGloballyTerminal() {
		return true
	}
	c.cancel(sc)
	return false
}

// recordSavepoint records the savepoint of a stop: an UPGRADE
// FlinkStateSnapshot (created before the status write, adopted if it
// exists) or, without snapshot resources, savepointInfo. The caller records
// upgradeSavepointPath in the same status write.
func (c *Controller) recordSavepoint(sc *syncState, path string) error {
	js := &sc.sj.Status.JobStatus
	info := js.SavepointInfo
	ts := derefInt64(info.TriggerTimestamp)
	if c.snapshotResources(sc) {
		snap, err := c.upgradeSnapshot(sc, path, ts)
		if err != nil {
			return fmt.Errorf("recording the savepoint %s of job %s: %w", path, js.JobID, err)
		}
		c.createSnapshot(sc, snap) // before the status that refers to it
	} else {
		lifecycle.RecordLegacySavepoint(info, path, sc.now)
	}
	sc.log.Info("Job stopped with a savepoint", "jobId", js.JobID, "triggerId", info.TriggerID, "path", path)
	sc.event("Normal", ReasonSuspended, "Job %s stopped with savepoint %s", js.JobID, path)
	return nil
}

func derefInt64(p *int64) int64 {
	if p == nil {
		return 0
	}
	return *p
}
