package deployment

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/config"
	"github.com/flinkops/flink-operator/pkg/controller/jobengine"
	"github.com/flinkops/flink-operator/pkg/lifecycle"
	corev1 "k8s.io/api/core/v1"
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
	es, err := c.engine.NewState(ctx, key, cached, c.Clock.Now())
	if err != nil {
		return 0, err
	}
	sc, err := c.newSync(es)
	if err != nil {
		return 0, err
	}
	st := &sc.Obj.Status
	if blocked, err := c.sessionJobsBlockDeletion(sc); err != nil || blocked {
		if err != nil {
			return 0, err
		}
		return c.commit(ctx, sc)
	}
	onDeletion, _ := sc.Cfg.Bool(config.KeyJobSavepointOnDeletion)
	stoppable := sc.Recorded != nil && sc.Recorded.Spec.Job != nil && st.JobStatus.JobID != "" &&
		st.JobStatus.State != v1beta1.JobStatusSuspended
	done := true
	if onDeletion && stoppable {
		timeout := lifecycle.StopTimeout(sc.Cfg)
		deadline := sc.Obj.DeletionTimestamp.Add(timeout)
		if !sc.Now.Before(deadline) {
			sc.Event(corev1.EventTypeWarning, jobengine.ReasonSavepointError, "No savepoint of job %s within %s of the deletion (%s); deleting without one",
				st.JobStatus.JobID, timeout, config.FlinkCheckpointTimeout)
			lifecycle.ClearStopTrigger(&st.JobStatus)
		} else {
			done, err = c.stopOnDeletion(ctx, sc)
			if err != nil {
				return 0, err
			}
			if !done {
				sc.RequeueNoLaterThan(deadline.Sub(sc.Now))
			}
		}
	}
	if done {
		sc.Event(corev1.EventTypeNormal, jobengine.ReasonCleanup, "Cleaning up FlinkDeployment")
		c.engine.RemoveFinalizer(sc.State, Finalizer)
	}
	return c.commit(ctx, sc)
}

// stopOnDeletion takes one step of the savepoint on deletion; done reports
// that the finalizer may go.
func (c *Controller) stopOnDeletion(ctx context.Context, sc *syncState) (done bool, err error) {
	js := &sc.Obj.Status.JobStatus
	if err := c.observe(ctx, sc); err != nil {
		return false, err
	}
	if info := js.SavepointInfo; info != nil && info.TriggerType == v1beta1.SnapshotTriggerUpgrade && info.TriggerID != "" {
		o := sc.CheckStop(ctx, c.jobKind(sc))
		switch {
		case o.Pending:
			return false, nil
		case o.Lost:
			sc.Event(corev1.EventTypeWarning, jobengine.ReasonSavepointError, "Job %s finished after stop-with-savepoint but its savepoint's path is unknown; deleting", js.JobID)
			lifecycle.ClearStopTrigger(js)
			return true, nil
		case o.Failure != "":
			sc.Event(corev1.EventTypeWarning, jobengine.ReasonSavepointError, "%s; deleting without a savepoint", o.Failure)
			lifecycle.ClearStopTrigger(js)
			return true, nil
		}
		if err := sc.RecordSavepoint(c.jobKind(sc), o.Path); err != nil {
			return false, err
		}
		js.UpgradeSavepointPath = o.Path
		js.State = v1beta1.JobStatusSuspended
		lifecycle.ClearStopTrigger(js)
		return true, nil
	}
	if sc.JobHealthy() {
		sc.TriggerStop(c.jobKind(sc))
		return false, nil
	}
	if c.jobStarting(sc) {
		sc.RequeueWithin(sc.ProgressInterval())
		return false, nil
	}
	sc.Event(corev1.EventTypeNormal, jobengine.ReasonCleanup, "Job %s is %s: no savepoint taken on deletion", js.JobID, describeJob(sc))
	return true, nil
}

// sessionJobsBlockDeletion keeps a session cluster while FlinkSessionJobs
// run on it, as upstream does: their own deletion must first stop their
// jobs (with a savepoint on deletion, if configured) through this cluster's
// REST API. A session job's removal wakes the cluster (controller.go).
func (c *Controller) sessionJobsBlockDeletion(sc *syncState) (bool, error) {
	if sc.Recorded == nil || sc.Recorded.Spec.Job != nil {
		return false, nil
	}
	jobs, err := c.Caches.SessionJobsOfCluster(sc.Obj.Namespace, sc.Obj.Name)
	if err != nil || len(jobs) == 0 {
		return false, err
	}
	names := make([]string, 0, len(jobs))
	for _, j := range jobs {
		names = append(names, j.Name)
	}
	slices.Sort(names)
	msg := fmt.Sprintf("Session cluster %s is kept while FlinkSessionJobs run on it: %s; delete them first (their jobs are stopped through this cluster)",
		sc.Obj.Name, strings.Join(names, ", "))
	sc.Fail(jobengine.ReasonCleanup, "%s", msg) // one Warning event while it stays the same
	sc.RequeueWithin(sc.ReconcileInterval())
	return true, nil
}
