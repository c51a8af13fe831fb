package sessionjob

import (
	"context"
	"fmt"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/config"
	"github.com/flinkops/flink-operator/pkg/lifecycle"
)

// syncDeletion handles a deleted FlinkSessionJob: its job is stopped on the
// session cluster — with a savepoint when
// kubernetes.operator.job.savepoint-on-deletion is set (the same crash-safe
// stop as an upgrade, recorded as an UPGRADE snapshot), else cancelled, as
// upstream — and then the finalizer goes. Bounded by the job's checkpoint
// timeout after the deletion: after it the finalizer goes anyway, with a
// Warning event, so a deletion never hangs on an unreachable cluster. A
// missing session cluster has no job left to stop.
func (c *Controller) syncDeletion(ctx context.Context, key string, cached *v1beta1.FlinkSessionJob) (time.Duration, error) {
	c.clusterMisses.Delete(key)
	if !slices.Contains(cached.Finalizers, Finalizer) {
		return 0, nil
	}
	sc, err := c.newSync(ctx, key, cached)
	if err != nil {
		return 0, err
	}
	done := true
	if c.hasCluster(sc) {
		if err := c.observe(ctx, sc); err != nil {
			return 0, err
		}
		deadline := sc.sj.DeletionTimestamp.Add(lifecycle.StopTimeout(sc.cfg))
		if sc.now.Before(deadline) {
			done = c.stopOnDeletion(ctx, sc)
			if !done && sc.requeue > deadline.Sub(sc.now) {
				sc.requeue = deadline.Sub(sc.now)
			}
		} else {
			sc.event("Warning", ReasonCleanup, "Job %s could not be stopped within %s of the deletion (%s); removing the FlinkSessionJob anyway",
				sc.sj.Status.JobStatus.JobID, lifecycle.StopTimeout(sc.cfg), config.FlinkCheckpointTimeout)
			lifecycle.ClearStopTrigger(&sc.sj.Status.JobStatus)
		}
	}
	sc.errs = nil // a deleted job's status errors no longer matter
	if done {
		sc.event("Normal", ReasonCleanup, "Cleaning up FlinkSessionJob")
		sc.then("remove finalizer", func(ctx context.Context) error {
			toWrite := sc.base.DeepCopy()
			toWrite.Finalizers = slices.DeleteFunc(toWrite.Finalizers, func(f string) bool { return f == Finalizer })
			if _, err := c.client.FlinkV1beta1().FlinkSessionJobs(toWrite.Namespace).Update(ctx, toWrite, metav1.UpdateOptions{}); err != nil {
				return fmt.Errorf("removing finalizer of FlinkSessionJob %s: %w", key, err)
			}
			return nil
		})
		sc.requeue = 0
	}
	return c.commit(ctx, sc)
}

// hasCluster resolves the session cluster for a deletion; a missing one
// means there is no job left to stop.
func (c *Controller) hasCluster(sc *syncState) bool {
	if sc.recorded == nil || sc.sj.Status.JobStatus.JobID == "" {
		return false
	}
	if !c.resolveCluster(sc) {
		sc.requeue = 0
		return false
	}
	return true
}

// stopOnDeletion takes one step of stopping the job of a deleted session
// job; it reports whether the finalizer may go.
func (c *Controller) stopOnDeletion(ctx context.Context, sc *syncState) bool {
	js := &sc.sj.Status.JobStatus
	if info := js.SavepointInfo; info != nil && info.TriggerType == v1beta1.SnapshotTriggerUpgrade && info.TriggerID != "" {
		o := c.checkStop(ctx, sc)
		switch {
		case o.Pending:
			return false
		case o.Lost:
			sc.event("Warning", ReasonSavepointError, "Job %s finished after stop-with-savepoint but its savepoint's path is unknown; deleting", js.JobID)
			lifecycle.ClearStopTrigger(js)
		case o.Failure != "":
			sc.event("Warning", ReasonSavepointError, "%s; cancelling the job instead", o.Failure)
			lifecycle.ClearStopTrigger(js)
			return c.ensureEnded(sc)
		default:
			if err := c.recordSavepoint(sc, o.Path); err != nil {
				sc.event("Warning", ReasonSavepointError, "%v", err)
			}
			js.UpgradeSavepointPath = o.Path
			js.State = v1beta1.JobStatusSuspended
			lifecycle.ClearStopTrigger(js)
		}
		return c.ensureEnded(sc)
	}
	onDeletion, _ := sc.cfg.Bool(config.KeyJobSavepointOnDeletion)
	if onDeletion && js.State != v1beta1.JobStatusSuspended && jobHealthy(sc) {
		c.triggerStop(sc)
		return false
	}
	if !sc.jobs {
		sc.after(sc.progressInterval())
		return false
	}
	return c.ensureEnded(sc)
}
