package deployment

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/config"
	"github.com/flinkops/flink-operator/pkg/controller/jobstop"
	"github.com/flinkops/flink-operator/pkg/flink"
	"github.com/flinkops/flink-operator/pkg/lifecycle"
	"github.com/flinkops/flink-operator/pkg/snapshots"
)

// The stop of the old job during an upgrade or suspend, recorded in
// status.jobStatus so that every step survives a crash:
//
//   - savepointInfo {triggerId, triggerTimestamp, triggerType: UPGRADE}: a
//     stop-with-savepoint with that trigger id was (or is about to be) sent;
//   - savepointInfo {triggerType: UPGRADE, triggerTimestamp} without a
//     trigger id: that stop-with-savepoint failed; the job is stopped by
//     last-state instead (or, with the fallback disabled, retried later);
//   - jobStatus.state SUSPENDED: the job is stopped (or about to be torn
//     down) and upgradeSavepointPath holds the state to restart from.

// stopJob takes the next step in stopping the old job with its state.
func (c *Controller) stopJob(ctx context.Context, sc *syncState) error {
	js := &sc.dep.Status.JobStatus
	info := js.SavepointInfo
	if info != nil && info.TriggerType == v1beta1.SnapshotTriggerUpgrade && info.TriggerID != "" {
		return c.pollStop(ctx, sc)
	}
	failedAttempt := info != nil && info.TriggerType == v1beta1.SnapshotTriggerUpgrade && info.TriggerID == ""
	if upgradeMode(&sc.recorded.Spec) != v1beta1.UpgradeModeSavepoint {
		return c.stopLastState(ctx, sc)
	}
	fallback, err := sc.cfg.Bool(config.KeyJobUpgradeLastStateFallbackEnabled)
	if err != nil {
		return err
	}
	if failedAttempt {
		if fallback {
			return c.stopLastState(ctx, sc)
		}
		// The last stop-with-savepoint failed and the fallback is off:
		// retry after a pause, keeping the error visible meanwhile.
		failedAt := time.UnixMilli(derefInt64(info.TriggerTimestamp))
		if wait := failedAt.Add(sc.reconcileInterval()).Sub(sc.now); wait > 0 {
			if prev := sc.base.Status.Error; prev != "" {
				sc.errs = append(sc.errs, syncError{ReasonSavepointError, prev})
			}
			sc.after(wait)
			return nil
		}
	}
	switch {
	case c.jobHealthy(sc):
		c.triggerStop(sc)
	case sc.job != nil && effectiveState(sc.job).IsGloballyTerminal(), sc.job == nil && js.State.IsGloballyTerminal():
		// An ended job takes no savepoint; its last state is recorded.
		return c.stopLastState(ctx, sc)
	case c.jobStarting(sc):
		sc.log.V(2).Info("Waiting for the job to run before stopping it with a savepoint", "state", js.State)
		sc.after(sc.progressInterval())
	case neverRan(sc):
		// Nothing to save: the job still has the state it was deployed from.
		c.finishStop(sc, js.UpgradeSavepointPath)
	case fallback:
		sc.log.Info("Job cannot take a savepoint, falling back to its last checkpoint", "state", js.State,
			"jobManager", sc.dep.Status.JobManagerDeploymentStatus)
		lifecycle.MarkFailedStop(js, sc.now)
		return c.stopLastState(ctx, sc)
	default:
		sc.fail(ReasonUpgradeFailed, "Job %s is %s and cannot be stopped with a savepoint; the last-state fallback is disabled (%s: false), "+
			"so nothing was torn down. The upgrade continues once the job runs again.", js.JobID, describeJob(sc), config.KeyJobUpgradeLastStateFallbackEnabled)
		sc.after(sc.progressInterval())
	}
	return nil
}

// neverRan: the job was never seen since its deploy and its JobManager has
// no ready pod, so as far as the operator can tell it never ran and still
// has the state it was deployed from (the cure for a deployment stuck on a
// bad image or config). A JobManager whose pods are ready but whose REST API
// does not answer may run the job unseen: that does not count.
func neverRan(sc *syncState) bool {
	st := &sc.dep.Status
	switch st.JobManagerDeploymentStatus {
	case v1beta1.JobManagerReady, v1beta1.JobManagerDeployedNotReady:
		return false
	}
	return sc.job == nil && (st.JobStatus.State == v1beta1.JobStatusReconciling || st.JobStatus.State == "")
}

func describeJob(sc *syncState) string {
	if sc.client == nil {
		return fmt.Sprintf("unreachable (JobManager %s)", sc.dep.Status.JobManagerDeploymentStatus)
	}
	if sc.job == nil {
		return "unknown to its JobManager"
	}
	return string(effectiveState(sc.job))
}

// jobHealthy: the JobManager answers and the job runs on all its tasks,
// the condition for a savepoint.
func (c *Controller) jobHealthy(sc *syncState) bool {
	return sc.client != nil && sc.job != nil && effectiveState(sc.job) == v1beta1.JobStatusRunning
}

// jobStarting: the cluster or the job is still coming up after its deploy,
// for at most kubernetes.operator.deployment.readiness.timeout after the
// upgrade was recorded. A savepoint upgrade waits for it rather than falling
// back at once.
func (c *Controller) jobStarting(sc *syncState) bool {
	timeout, _ := sc.cfg.Duration(config.KeyDeploymentReadinessTimeout)
	since := sc.now.Sub(time.UnixMilli(sc.dep.Status.ReconciliationStatus.ReconciliationTimestamp))
	if since > timeout {
		return false
	}
	switch sc.dep.Status.JobManagerDeploymentStatus {
	case v1beta1.JobManagerDeploying, v1beta1.JobManagerDeployedNotReady:
		return true
	}
	if sc.job == nil {
		return sc.client != nil // submitted soon
	}
	switch effectiveState(sc.job) {
	case v1beta1.JobStatusCreated, v1beta1.JobStatusInitializing, v1beta1.JobStatusReconciling:
		return true
	}
	return false
}

// triggerStop records a new stop-with-savepoint (trigger id chosen here)
// and sends it once the record is written: a crash on either side of the
// POST resumes this same operation, since Flink treats a repeated trigger id
// as the same request.
func (c *Controller) triggerStop(sc *syncState) {
	js := &sc.dep.Status.JobStatus
	format := lifecycle.SavepointFormat(sc.cfg)
	ts := sc.now.UnixMilli()
	if js.SavepointInfo == nil {
		js.SavepointInfo = &v1beta1.SavepointInfo{}
	}
	js.SavepointInfo.TriggerID = c.newTriggerID()
	js.SavepointInfo.TriggerTimestamp = &ts
	js.SavepointInfo.TriggerType = v1beta1.SnapshotTriggerUpgrade
	js.SavepointInfo.FormatType = v1beta1.SavepointFormatType(format)
	sc.log.Info("Stopping the job with a savepoint", "jobId", js.JobID, "triggerId", js.SavepointInfo.TriggerID)
	c.postStop(sc, js.JobID, js.SavepointInfo.TriggerID)
	sc.after(snapshots.MinPollDelay)
}

// postStop queues the POST /jobs/{id}/stop. Its failure is not an error:
// the next poll asks Flink by trigger id and re-sends it if unknown.
func (c *Controller) postStop(sc *syncState, jobID, triggerID string) {
	client, cfg := sc.client, sc.cfg
	dir, _ := config.SavepointDir(cfg)
	drain, _ := cfg.Bool(config.KeyJobDrainOnSavepointDeletion)
	req := flink.StopRequest{TargetDirectory: dir, FormatType: flink.SavepointFormatType(lifecycle.SavepointFormat(cfg)), TriggerID: triggerID}
	if sc.dep.DeletionTimestamp != nil {
		req.Drain = drain
	}
	log := sc.log
	sc.then("stop-with-savepoint", func(ctx context.Context) error {
		if client == nil {
			return nil
		}
		if _, err := client.StopWithSavepoint(ctx, jobID, req); err != nil {
			log.Info("Stop-with-savepoint request failed, will check by trigger id", "triggerId", triggerID, "err", err)
		}
		return nil
	})
}

// pollStop follows the stop-with-savepoint recorded in status.
func (c *Controller) pollStop(ctx context.Context, sc *syncState) error {
	o := c.checkStop(ctx, sc)
	switch {
	case o.Pending:
	case o.Lost:
		js := &sc.dep.Status.JobStatus
		dir, _ := config.SavepointDir(sc.cfg)
		sc.fail(ReasonUpgradeFailed, "Job %s finished after stop-with-savepoint (trigger id %s) but the savepoint's path is unknown (%v). "+
			"Manual restore required: find the newest savepoint of job %s under %s, set spec.job.initialSavepointPath to it and change spec.job.savepointRedeployNonce",
			js.JobID, js.SavepointInfo.TriggerID, errSavepointLost, js.JobID, dir)
		sc.after(retryFailed)
	case o.Failure != "":
		c.stopFailed(ctx, sc, o.Failure)
	default:
		if err := c.recordSavepoint(sc, o.Path); err != nil {
			return err
		}
		c.finishStop(sc, o.Path)
	}
	return nil
}

// checkStop asks Flink about the stop-with-savepoint in flight
// (pkg/controller/jobstop), bounded by the job's checkpoint timeout; it
// schedules the next poll while pending and re-sends the same stop when
// Flink forgot an id the running job never acted on.
func (c *Controller) checkStop(ctx context.Context, sc *syncState) jobstop.Outcome {
	js := &sc.dep.Status.JobStatus
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

// recordSavepoint records the savepoint of a stop: an UPGRADE
// FlinkStateSnapshot (written before the status, adopted if it exists
// already) or, in legacy mode, savepointInfo. The caller records
// upgradeSavepointPath in the same status write.
func (c *Controller) recordSavepoint(sc *syncState, path string) error {
	js := &sc.dep.Status.JobStatus
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

// stopFailed ends a failed stop-with-savepoint: the job is stopped by
// last-state instead, or, with the fallback disabled, nothing is torn down
// and the stop is retried later.
func (c *Controller) stopFailed(ctx context.Context, sc *syncState, msg string) {
	js := &sc.dep.Status.JobStatus
	sc.log.Info("Stop-with-savepoint failed", "jobId", js.JobID, "triggerId", js.SavepointInfo.TriggerID, "reason", msg)
	lifecycle.MarkFailedStop(js, sc.now)
	sc.event("Warning", ReasonSavepointError, "%s", msg)
	fallback, _ := sc.cfg.Bool(config.KeyJobUpgradeLastStateFallbackEnabled)
	if fallback {
		_ = c.stopLastState(ctx, sc)
		return
	}
	sc.fail(ReasonSavepointError, "%s. The last-state fallback is disabled (%s: false), so nothing was torn down; retrying in %s",
		msg, config.KeyJobUpgradeLastStateFallbackEnabled, sc.reconcileInterval())
	sc.after(sc.reconcileInterval())
}

// stopLastState stops the job keeping its latest checkpoint: cancel it
// (checkpoints are retained on cancellation, which the operator configures),
// and once it has ended read the newest restorable checkpoint or savepoint.
// When the JobManager cannot be asked, only a state recorded earlier is
// trusted; otherwise the upgrade stops with "manual restore required" and
// nothing is torn down: a job is never silently restarted from empty or
// older state.
func (c *Controller) stopLastState(ctx context.Context, sc *syncState) error {
	js := &sc.dep.Status.JobStatus
	if sc.client != nil && sc.job != nil {
		if state := effectiveState(sc.job); !state.IsGloballyTerminal() {
			if !deletesCheckpointsOnCancel(sc.cfg) {
				c.cancel(sc)
				return nil
			}
			// A cancel would delete the checkpoints: keep the latest one by
			// tearing the cluster down without cancelling.
		}
		path, err := c.latestState(ctx, sc)
		switch {
		case err != nil && flink.IsRetryable(err):
			sc.after(sc.progressInterval())
			return nil
		case err != nil:
			sc.fail(ReasonUpgradeFailed, "Cannot upgrade job %s: %v", js.JobID, err)
			sc.after(retryFailed)
			return nil
		}
		c.finishStop(sc, path)
		return nil
	}
	switch {
	case js.State.IsGloballyTerminal():
		// Recorded when the job was seen ending.
		c.finishStop(sc, js.UpgradeSavepointPath)
	case neverRan(sc):
		c.finishStop(sc, js.UpgradeSavepointPath)
	default:
		sc.fail(ReasonUpgradeFailed, "Job %s (last seen %s) is %s, so its last checkpoint cannot be read and nothing was torn down. "+
			"Manual restore required: set spec.job.initialSavepointPath to the latest checkpoint or savepoint and change spec.job.savepointRedeployNonce, "+
			"or wait for the JobManager to answer again", js.JobID, js.State, describeJob(sc))
		sc.after(retryFailed)
	}
	return nil
}

// cancel queues PATCH /jobs/{id}?mode=cancel; the job's end is observed
// by the next sync, which then reads its last checkpoint.
func (c *Controller) cancel(sc *syncState) {
	client, jobID, log := sc.client, sc.dep.Status.JobStatus.JobID, sc.log
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

// finishStop records the state to restart from and marks the job stopped;
// the teardown of the old cluster follows the write.
func (c *Controller) finishStop(sc *syncState, path string) {
	js := &sc.dep.Status.JobStatus
	js.UpgradeSavepointPath = path
	js.State = v1beta1.JobStatusSuspended
	lifecycle.ClearStopTrigger(js)
	c.teardown(sc)
}

// teardown deletes the JobManager and TaskManager Deployments (foreground,
// so they are gone with their pods before the new ones are created). The
// ConfigMap and Services stay and are updated by the deploy. With Flink HA
// on and a new job id coming, the HA ConfigMaps are deleted too, as
// upstream does, or Flink would recover the old job from them. It reports
// whether there is anything to wait for.
func (c *Controller) teardown(sc *syncState) bool {
	waiting := false
	ns := sc.dep.Namespace
	for _, d := range []*appsv1.Deployment{sc.owned.jobManager, sc.owned.taskManager} {
		if d == nil || !ownedBy(d, sc.dep) {
			continue // absent, or not ours to delete (reported by the deploy)
		}
		waiting = true
		if d.DeletionTimestamp != nil {
			continue
		}
		name := d.Name
		sc.then("delete Deployment "+name, func(ctx context.Context) error {
			policy := metav1.DeletePropagationForeground
			err := c.kube.AppsV1().Deployments(ns).Delete(ctx, name, metav1.DeleteOptions{PropagationPolicy: &policy})
			if err != nil && !apierrors.IsNotFound(err) {
				return fmt.Errorf("deleting Deployment %s/%s: %w", ns, name, err)
			}
			return nil
		})
	}
	if waiting && haEnabled(sc.cfg) && upgradeMode(&sc.recorded.Spec) != v1beta1.UpgradeModeLastState {
		selector := labels.SelectorFromSet(labels.Set{"app": sc.dep.Name, "configmap-type": "high-availability"}).String()
		sc.then("delete HA ConfigMaps", func(ctx context.Context) error {
			err := c.kube.CoreV1().ConfigMaps(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: selector})
			if err != nil && !apierrors.IsNotFound(err) {
				return fmt.Errorf("deleting HA ConfigMaps of %s/%s: %w", ns, sc.dep.Name, err)
			}
			return nil
		})
	}
	if waiting {
		sc.dep.Status.JobManagerDeploymentStatus = v1beta1.JobManagerMissing
		sc.after(teardownPoll)
	}
	return waiting
}

// deletesCheckpointsOnCancel reports a job configured to delete its
// externalized checkpoints when cancelled (the operator defaults it to
// RETAIN_ON_CANCELLATION).
func deletesCheckpointsOnCancel(cfg map[string]string) bool {
	return strings.EqualFold(strings.TrimSpace(cfg["execution.checkpointing.externalized-checkpoint-retention"]), "DELETE_ON_CANCELLATION")
}

func haEnabled(cfg map[string]string) bool {
	t := strings.TrimSpace(cfg["high-availability.type"])
	if t == "" {
		t = strings.TrimSpace(cfg["high-availability"])
	}
	return t != "" && !strings.EqualFold(t, "NONE")
}

func derefInt64(p *int64) int64 {
	if p == nil {
		return 0
	}
	return *p
}
