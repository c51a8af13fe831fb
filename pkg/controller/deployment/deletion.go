package deployment

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/config"
	"github.com/flinkops/flink-operator/pkg/lifecycle"
)

// syncDeletion handles a deleted FlinkDeployment. With
// kubernetes.operator.job.savepoint-on-deletion the running job is first
// stopped with a savepoint (the same crash-safe stop as an upgrade, recorded
// as an UPGRADE snapshot), bounded by the job's checkpoint timeout: after it
// the finalizer goes anyway, with a Warning event, so deletion never hangs.
// The cluster's objects are garbage-collected through their owner
// references.
func (c *Controller) syncDeletion(ctx context.Context, key string, cached *v1beta1.FlinkDeployment) (time.Duration, error) {
	if !slices.Contains(cached.Finalizers, Finalizer) {
		return 0, nil
	}
	sc, err := c.newSync(ctx, key, cached)
	if err != nil {
		return 0, err
	}
	st := &sc.dep.Status
	if blocked, err := c.sessionJobsBlockDeletion(sc); err != nil || blocked {
		if err != nil {
			return 0, err
		}
		return c.commit(ctx, sc)
	}
	onDeletion, _ := sc.cfg.Bool(config.KeyJobSavepointOnDeletion)
	stoppable := sc.recorded != nil && sc.recorded.Spec.Job != nil && st.JobStatus.JobID != "" &&
		st.JobStatus.State != v1beta1.JobStatusSuspended
	done := true
	if onDeletion && stoppable {
		timeout := lifecycle.StopTimeout(sc.cfg)
		deadline := sc.dep.DeletionTimestamp.Add(timeout)
		if !sc.now.Before(deadline) {
			sc.event("Warning", ReasonSavepointError, "No savepoint of job %s within %s of the deletion (%s); deleting without one",
				st.JobStatus.JobID, timeout, config.FlinkCheckpointTimeout)
			lifecycle.ClearStopTrigger(&st.JobStatus)
		} else {
			done, err = c.stopOnDeletion(ctx, sc)
			if err != nil {
				return 0, err
			}
			if !done && sc.requeue > deadline.Sub(sc.now) {
				sc.requeue = deadline.Sub(sc.now)
			}
		}
	}
	if done {
		sc.event("Normal", ReasonCleanup, "Cleaning up FlinkDeployment")
		sc.then("remove finalizer", func(ctx context.Context) error {
			toWrite := sc.base.DeepCopy()
			toWrite.Finalizers = slices.DeleteFunc(toWrite.Finalizers, func(f string) bool { return f == Finalizer })
			if _, err := c.client.FlinkV1beta1().FlinkDeployments(toWrite.Namespace).Update(ctx, toWrite, metav1.UpdateOptions{}); err != nil {
				return fmt.Errorf("removing finalizer of FlinkDeployment %s: %w", key, err)
			}
			return nil
		})
		sc.requeue = 0
	}
	return c.commit(ctx, sc)
}

// stopOnDeletion takes one step of the savepoint on deletion; done reports
// that the finalizer may go.
func (c *Controller) stopOnDeletion(ctx context.Context, sc *syncState) (done bool, err error) {
	js := &sc.dep.Status.JobStatus
	if err := c.observe(ctx, sc); err != nil {
		return false, err
	}
	if info := js.SavepointInfo; info != nil && info.TriggerType == v1beta1.SnapshotTriggerUpgrade && info.TriggerID != "" {
		o := c.checkStop(ctx, sc)
		switch {
		case o.Pending:
			return false, nil
		case o.Lost:
			sc.event("Warning", ReasonSavepointError, "Job %s finished after stop-with-savepoint but its savepoint's path is unknown; deleting", js.JobID)
			lifecycle.ClearStopTrigger(js)
			return true, nil
		case o.Failure != "":
			sc.event("Warning", ReasonSavepointError, "%s; deleting without a savepoint", o.Failure)
			lifecycle.ClearStopTrigger(js)
			return true, nil
		}
		if err := c.recordSavepoint(sc, o.Path); err != nil {
			return false, err
		}
		js.UpgradeSavepointPath = o.Path
		js.State = v1beta1.JobStatusSuspended
		lifecycle.ClearStopTrigger(js)
		return true, nil
	}
	if c.jobHealthy(sc) {
		c.triggerStop(sc)
		return false, nil
	}
	if c.jobStarting(sc) {
		sc.after(sc.progressInterval())
		return false, nil
	}
	sc.event("Normal", ReasonCleanup, "Job %s is %s: no savepoint taken on deletion", js.JobID, describeJob(sc))
	return true, nil
}

// sessionJobsBlockDeletion keeps a session cluster while FlinkSessionJobs
// run on it, as upstream does: their own deletion must first stop their
// jobs (with a savepoint on deletion, if configured) through this cluster's
// REST API. A session job's removal wakes the cluster (controller.go).
func (c *Controller) sessionJobsBlockDeletion(sc *syncState) (bool, error) {
	if sc.recorded == nil || sc.recorded.Spec.Job != nil {
		return false, nil
	}
	jobs, err := c.caches.SessionJobsOfCluster(sc.dep.Namespace, sc.dep.Name)
	if err != nil || len(jobs) == 0 {
		return false, err
	}
	names := make([]string, 0, len(jobs))
	for _, j := range jobs {
		names = append(names, j.Name)
	}
	slices.Sort(names)
	msg := fmt.Sprintf("Session cluster %s is kept while FlinkSessionJobs run on it: %s; delete them first (their jobs are stopped through this cluster)",
		sc.dep.Name, strings.Join(names, ", "))
	sc.fail(ReasonCleanup, "%s", msg) // one Warning event while it stays the same
	sc.after(sc.reconcileInterval())
	return true, nil
}
