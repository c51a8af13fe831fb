package deployment

import (
	"context"
	"strconv"

	corev1 "k8s.io/api/core/v1"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/config"
	"github.com/flinkops/flink-operator/pkg/controller/jobengine"
	"github.com/flinkops/flink-operator/pkg/flink"
	"github.com/flinkops/flink-operator/pkg/reasons"
)

// The cluster health check of application clusters
// (kubernetes.operator.cluster.health-check.*) and the recovery of a lost
// JobManager Deployment (kubernetes.operator.jm-deployment-recovery.enabled),
// as upstream's ClusterHealthObserver, ApplicationReconciler and
// shouldRecoverDeployment. The restart of an unhealthy job is the engine's
// (jobengine.State.Restart): written ahead, keeping the job's latest state.

// observeHealth reads the running job's restart and checkpoint counters
// from its JobManager and folds them into status.clusterInfo's
// ClusterHealthInfo, when the health check is on. As upstream, a failure
// to read them is only logged: the record stays as it was.
func (c *Controller) observeHealth(ctx context.Context, sc *syncState) {
	st := &sc.Obj().Status
	if on, _ := sc.Cfg.Bool(config.KeyClusterHealthCheckEnabled); !on || sc.Client == nil || sc.Job == nil ||
		st.ReconciliationStatus.State != v1beta1.ReconciliationDeployed || st.JobStatus.State.IsGloballyTerminal() {
		return
	}
	metrics, err := sc.Client.JobMetrics(ctx, st.JobStatus.JobID,
		flink.MetricFullRestarts, flink.MetricNumRestarts, flink.MetricNumberOfCompletedCheckpoints)
	if err != nil {
		sc.Log().Info("Cannot read the job's metrics for the health check", "err", err)
		return
	}
	restarts, ok := metrics[flink.MetricNumRestarts]
	if !ok {
		restarts, ok = metrics[flink.MetricFullRestarts]
	}
	numRestarts, err1 := strconv.ParseInt(restarts, 10, 64)
	checkpoints, err2 := strconv.ParseInt(metrics[flink.MetricNumberOfCompletedCheckpoints], 10, 64)
	if !ok || err1 != nil || err2 != nil {
		sc.Log().Info("The job's restart or checkpoint metric is missing, no health check", "metrics", metrics)
		return
	}
	if st.ClusterInfo == nil {
		st.ClusterInfo = map[string]string{}
	}
	h, err := jobengine.EvaluateHealth(sc.Cfg, st.ClusterInfo, jobengine.HealthObservation{
		Now: sc.Now(), NumRestarts: numRestarts, NumCompletedCheckpoints: checkpoints,
	})
	if err != nil {
		sc.Log().Info("Cannot evaluate the job's health", "err", err)
		return
	}
	sc.Log().V(2).Info("Health check", "healthy", h.HealthResult.Healthy, "error", h.HealthResult.Error,
		"numRestarts", numRestarts, "completedCheckpoints", checkpoints)
}

// HealthCheck: a cluster's job has the health check (Unhealthy).
func (k deploymentJob) HealthCheck() jobengine.HealthChecker { return k }

// Unhealthy: the health check's last evaluation found the job unhealthy
// (jobengine.HealthChecker). Its record is removed with the restart, which
// the next deploy starts anew. Upstream restarts only a stateless job or
// one whose HA metadata is available, because its restart is a new
// JobManager recovering through it; here the restart stops the job
// keeping its latest checkpoint, read from the JobManager that answered
// the health check, so it needs no HA.
func (k deploymentJob) Unhealthy() (string, bool) {
	st := &k.sc.Obj().Status
	if on, _ := k.sc.Cfg.Bool(config.KeyClusterHealthCheckEnabled); !on {
		return "", false
	}
	h := jobengine.HealthInfo(st.ClusterInfo)
	if h == nil || h.HealthResult.Healthy {
		return "", false
	}
	delete(st.ClusterInfo, jobengine.ClusterHealthInfoKey)
	why := h.HealthResult.Error
	if why == "" {
		why = "Restarting unhealthy job"
	}
	return why, true
}

// recoverJobManager decides, in the steady state, whether to recreate a
// JobManager Deployment that is missing. It is recreated only when that
// cannot lose state: a session cluster, a stateless job, a job with high
// availability (the new JobManager recovers it from the HA metadata), or a
// job not yet seen running (the same deploy again). Right after a deploy
// (DEPLOYING recorded, the job's state reset) the missing Deployment is the
// deploy's own, and it is created as the deploy does (deployJobManager: a
// crash may have come between the job graph's removal and the create). A
// Deployment lost after its deploy (deleted by someone else) is recovered
// with upstream's RecoverDeployment Warning event, and not at all with
// kubernetes.operator.jm-deployment-recovery.enabled false (reported with
// upstream's Missing reason); the job graph in the HA metadata stays
// (recreateJobManager; upstream removes it, docs/compatibility.md): the new
// JobManager then recovers the job as after a JobManager crash, with the
// job's own library BLOBs. Flink resubmitting it instead uploads the jar
// anew, under new BLOB keys, and a standalone cluster's TaskManagers, which
// outlive their JobManager and keep the job's slots and its old library
// registration, refuse every task of it ("different set of library BLOBs"):
// the job restarted without end. Recreating it is idempotent: a crash before
// or after the create recreates it again or finds it.
func (c *Controller) recoverJobManager(sc *syncState) jobManagerCreate {
	st := &sc.Obj().Status
	spec := &sc.Recorded().Spec
	app := spec.Job != nil
	js := st.JobStatus
	if app && js.State.IsGloballyTerminal() {
		// The job had ended; an upgrade restarts it from its recorded
		// last state. Nothing to restart now.
		return keepJobManager
	}
	// Right after a deploy (DEPLOYING recorded) a missing Deployment is
	// the deploy's own, perhaps not in the cache yet.
	deploying := sc.Base().Status.JobManagerDeploymentStatus == v1beta1.JobManagerDeploying || sc.Base().Status.JobManagerDeploymentStatus == ""
	if on, err := sc.Cfg.Bool(config.KeyJMDeploymentRecoveryEnabled); err == nil && !on && !deploying {
		sc.Fail(reasons.ReasonMissing, "Missing JobManager deployment; it is not recreated (%s: false)", config.KeyJMDeploymentRecoveryEnabled)
		return keepJobManager
	}
	switch {
	case !app, haEnabled(sc.Cfg), jobengine.UpgradeMode(spec) == v1beta1.UpgradeModeStateless,
		js.State == v1beta1.JobStatusReconciling, js.State == "":
		st.JobManagerDeploymentStatus = v1beta1.JobManagerDeploying
		if deploying && (js.State == "" || js.State == v1beta1.JobStatusReconciling) {
			return deployJobManager // a deploy resets the job's state to RECONCILING
		}
		if !deploying {
			sc.Log().Info("Recovering the lost JobManager Deployment", "jobId", js.JobID, "jobState", js.State)
			sc.Event(corev1.EventTypeWarning, reasons.ReasonRecoverDeployment, "Recovering lost deployment")
		}
		// DEPLOYING with a job seen running is a recovery's own Deployment,
		// not yet in the cache (or the recovery repeated after a crash).
		return recreateJobManager
	}
	sc.FailManualRestore(reasons.ReasonDeploymentError, "JobManager deployment is missing and the job's last state (last seen %s) cannot be read. "+
		"Manual restore required: set spec.job.initialSavepointPath to the latest checkpoint or savepoint and change spec.job.savepointRedeployNonce", js.State)
	sc.RequeueWithin(jobengine.RetryFailed)
	return keepJobManager
}
