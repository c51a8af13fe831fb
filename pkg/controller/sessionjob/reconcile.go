package sessionjob

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/config"
	"github.com/flinkops/flink-operator/pkg/controller/jobengine"
	"github.com/flinkops/flink-operator/pkg/controller/snapshotref"
	"github.com/flinkops/flink-operator/pkg/reasons"
	"github.com/flinkops/flink-operator/pkg/validation"
)

// reconcile moves the job toward the spec, one step per sync.
func (c *Controller) reconcile(ctx context.Context, sc *syncState) error {
	if sc.cluster != nil && sc.cluster.DeletionTimestamp != nil {
		// Nothing new goes to a cluster on its way out; it waits for this
		// session job to be deleted.
		sc.Fail(reasons.ReasonSessionCluster, "Session cluster FlinkDeployment %s/%s is being deleted; it is kept until its FlinkSessionJobs are deleted",
			sc.cluster.Namespace, sc.cluster.Name)
		sc.RequeueWithin(sc.ReconcileInterval())
		return nil
	}
	return sc.Reconcile(ctx, c.jobKind(sc))
}

// The session job's part of jobengine.Reconcile (the engine records the
// first deploy, the upgrade intent and the submission): validation against
// the session cluster, the cancel of the old job, the submission itself.

// Validate applies the rules the webhook applies (pkg/validation) against
// the session cluster as it is now, and gives the spec's configuration.
func (k sessionJob) Validate() (v1beta1.FlinkSessionJobSpec, config.Config, error) {
	sc := k.sc
	res, err := validation.SessionJob(sc.Obj(), sc.cluster, k.c.CurrentConfig())
	if err != nil {
		return v1beta1.FlinkSessionJobSpec{}, nil, err
	}
	cfg := res.Config
	if cfg == nil {
		cfg = sc.Cfg // no cluster yet: nothing is deployed with it
	}
	return *sc.Obj().Spec.DeepCopy(), cfg, nil
}

// RestorePath resolves spec.job.initialStateSnapshotRef (snapshotref.Path:
// a cross-namespace reference needs the webhook's stamp).
func (k sessionJob) RestorePath(ref *v1beta1.SnapshotReference) (string, error) {
	return snapshotref.Path(k.c.Caches, k.c.Config, k.c.ReviewKeys, "FlinkSessionJob", k.sc.Obj(), ref)
}

// CanRun: the session cluster exists (resolveCluster reports it missing).
func (k sessionJob) CanRun() bool { return k.sc.cluster != nil }

func (k sessionJob) Ended() bool       { return k.c.ensureEnded(k.sc) }
func (k sessionJob) Suspended() string { return "Job suspended" }

// NextJobID derives the new job's id from the resource and the id it
// replaces.
func (k sessionJob) NextJobID() string {
	o := k.sc.Obj()
	return newJobID(string(o.UID), o.Status.JobStatus.JobID, o.Generation)
}

// Deploy: the submission itself is made by the next sync (Steady), once
// the record is written, so that a crash can never leave a submitted job
// the status does not name.
func (k sessionJob) Deploy(context.Context, string, string) bool {
	k.sc.Job = nil
	k.sc.RequeueWithin(time.Millisecond)
	return true
}

func (k sessionJob) CheckpointTrigger() bool { return k.sc.version.SupportsCheckpointTrigger() }

// What the engine may do with a session job: it runs on a cluster that is
// another resource's, so it is not rescaled in place (the cluster's
// configuration says nothing of its scheduler), has no health check and is
// not rolled back (upstream: FlinkDeployments only).
func (k sessionJob) InPlaceScaling() bool                 { return false }
func (k sessionJob) HealthCheck() jobengine.HealthChecker { return nil }
func (k sessionJob) RollbackSupported() bool              { return false }

// Steady keeps a deployed job as recorded: the recorded submission is made
// if Flink does not have it yet; the engine does the rest.
func (k sessionJob) Steady(ctx context.Context) (jobengine.SteadyAnswer, error) {
	c, sc := k.c, k.sc
	spec := sc.Recorded().Spec
	js := &sc.Obj().Status.JobStatus
	if !sc.clusterReady() || !sc.jobs {
		sc.Log().V(2).Info("Waiting for the session cluster to be ready", "cluster", sc.cluster.Name,
			"jobManager", sc.cluster.Status.JobManagerDeploymentStatus)
		sc.RequeueWithin(sc.ProgressInterval())
		return jobengine.SteadyAnswer{}, nil
	}
	if sc.Job == nil {
		switch {
		case js.State == v1beta1.JobStatusReconciling && sc.Base().Status.JobStatus.JobID == js.JobID:
			c.submit(ctx, sc)
		case jobengine.UpgradeMode(&spec) == v1beta1.UpgradeModeStateless:
			// The cluster lost the job (a restart without HA): a stateless
			// job is simply submitted again, under a new id.
			sc.Event(corev1.EventTypeWarning, reasons.ReasonJobStatusChanged, "Job %s is not known to session cluster %s any more (last seen %s); submitting it again",
				js.JobID, sc.cluster.Name, js.State)
			return jobengine.SteadyAnswer{Redeploy: true}, nil
		default:
			sc.FailManualRestore(reasons.ReasonUpgradeFailed, "Job %s (last seen %s) is not known to session cluster %s any more, so its last checkpoint cannot be read. "+
				"%s: set spec.job.initialSavepointPath to its latest checkpoint or savepoint and change spec.job.savepointRedeployNonce",
				js.JobID, js.State, sc.cluster.Name, manualRestore)
			sc.RequeueWithin(jobengine.RetryFailed)
		}
		return jobengine.SteadyAnswer{}, nil
	}
	return jobengine.SteadyAnswer{Kept: true, Healthy: js.State == v1beta1.JobStatusRunning, PlanSnapshots: true}, nil
}
