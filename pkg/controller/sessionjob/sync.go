package sessionjob

import (
	"context"
	"github.com/flinkops/flink-operator/pkg/controller/autoscaling"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/cache"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/controller/jobengine"
	"github.com/flinkops/flink-operator/pkg/flink"
)

// syncState is one sync of one FlinkSessionJob: the engine's state
// (pkg/controller/jobengine) and what only a session job has.
type syncState struct {
	*jobengine.State[*v1beta1.FlinkSessionJob, v1beta1.FlinkSessionJobSpec]

	// cluster is the session FlinkDeployment (nil when missing or unusable);
	// Cfg (in the engine state) the job's effective configuration:
	// operator, cluster, job.
	cluster *v1beta1.FlinkDeployment
	version flink.Version

	// refPath is the resolved spec.job.initialStateSnapshotRef of a
	// savepointRedeployNonce change.
	refPath string

	jobs bool // the jobs overview was read
}

// Sync reconciles one FlinkSessionJob: read it and its session cluster
// from the caches, observe the job through the cluster's REST API, decide,
// write the status at most once, make the writes and Flink calls the status
// announces, and say when to look again.
//
// The status is a write-ahead log: the job id of a submission, the trigger
// id of a stop-with-savepoint and the state to restore from are recorded
// before the calls that use them, so a crash anywhere leaves a status from
// which the next sync continues the same step.
func (c *Controller) Sync(ctx context.Context, key string) (time.Duration, error) {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return 0, err
	}
	cached, err := c.Caches.SessionJob(ns, name)
	if apierrors.IsNotFound(err) {
		c.clusterMisses.Delete(key)
		c.submissions.forget(key)
		return 0, nil
	} else if err != nil {
		return 0, err
	}
	if wait, d := c.gateSubmission(ctx, key, cached); wait {
		return d, nil // a submission is in flight (submissions.go)
	}
	if cached.DeletionTimestamp != nil {
		return c.syncDeletion(ctx, key, cached)
	}
	es, err := c.engine.Start(ctx, key, cached, Finalizer)
	if err != nil {
		return 0, err
	}
	sc, err := c.newSync(es)
	if err != nil {
		return 0, err
	}
	if c.resolveCluster(sc) {
		if err := c.observe(ctx, sc); err != nil {
			return 0, err
		}
	}
	if err := autoscaling.Sync(ctx, c.autoscaler, sc.State); err != nil {
		return 0, err
	}
	if err := c.reconcile(ctx, sc); err != nil {
		return 0, err
	}
	return c.commit(ctx, sc)
}

// newSync adds this controller's part to the engine's sync state.
func (c *Controller) newSync(st *jobengine.State[*v1beta1.FlinkSessionJob, v1beta1.FlinkSessionJobSpec]) (*syncState, error) {
	sc := &syncState{State: st}
	sc.Cfg = c.CurrentConfig()
	return sc, nil
}

// commit derives what the status says of the whole resource (error,
// lifecycle state) and hands the sync to the engine, which writes it once.
func (c *Controller) commit(ctx context.Context, sc *syncState) (time.Duration, error) {
	sc.SetError()
	jobengine.KeepSuspendedStable(&sc.Obj().Status.ReconciliationStatus, sc.Recorded() != nil && jobengine.JobSuspended(&sc.Recorded().Spec))
	sc.Obj().Status.LifecycleState = lifecycleOf(sc.Obj(), sc.Recorded(), sc.NeedsManualRestore())
	return c.engine.Commit(ctx, sc.State)
}
