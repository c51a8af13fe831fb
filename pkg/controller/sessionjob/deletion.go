package sessionjob

import (
	"context"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/config"
	"github.com/flinkops/flink-operator/pkg/reasons"
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
	es, err := c.engine.NewState(ctx, key, cached, c.Clock.Now())
	if err != nil {
		return 0, err
	}
	sc, err := c.newSync(es)
	if err != nil {
		return 0, err
	}
	done := true
	if c.hasCluster(sc) {
		if err := c.observe(ctx, sc); err != nil {
			return 0, err
		}
		onDeletion, _ := sc.Cfg.Bool(config.KeyJobSavepointOnDeletion)
		if done, err = sc.StopOnDeletion(ctx, c.jobKind(sc), onDeletion); err != nil {
			return 0, err
		}
	}
	sc.ClearErrors() // a deleted job's status errors no longer matter
	if done {
		held, err := c.disposalsHoldRemoval(sc)
		if err != nil {
			return 0, err
		}
		done = !held
	}
	if done {
		sc.Event(corev1.EventTypeNormal, reasons.ReasonCleanup, "Cleaning up FlinkSessionJob")
		c.engine.RemoveFinalizer(sc.State, Finalizer)
		sc.ForgetDisposalHold()
		c.autoscaler.Forget(sc.Obj().UID)
	}
	return c.commit(ctx, sc)
}

// disposalsHoldRemoval keeps a deleted FlinkSessionJob, once its job is
// stopped, while savepoint disposals wait on it (State.HoldForDisposals):
// Flink disposes of them through the session cluster's REST API, which the
// snapshot controller finds through this resource (and the handed-over ones
// are recorded on it). A session cluster being deleted is kept until its
// session jobs are gone (the FlinkDeployment controller), so its
// JobManager still answers.
func (c *Controller) disposalsHoldRemoval(sc *syncState) (bool, error) {
	name := sc.Obj().Spec.DeploymentName
	cluster, err := c.Caches.Deployment(sc.Obj().Namespace, name)
	ready := err == nil && cluster.Status.JobManagerDeploymentStatus == v1beta1.JobManagerReady
	return sc.HoldForDisposals("session cluster "+name, ready)
}

// hasCluster resolves the session cluster for a deletion; a missing one
// means there is no job left to stop.
func (c *Controller) hasCluster(sc *syncState) bool {
	if sc.Recorded() == nil || sc.Obj().Status.JobStatus.JobID == "" {
		return false
	}
	if !c.resolveCluster(sc) {
		sc.NoRequeue()
		return false
	}
	return true
}
