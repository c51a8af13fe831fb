package deployment

import (
	"context"
	"strconv"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/cluster"
	"github.com/flinkops/flink-operator/pkg/config"
	"github.com/flinkops/flink-operator/pkg/flink"
	"github.com/flinkops/flink-operator/pkg/lifecycle"
)

// AnnotationFlinkVersion on the JobManager Deployment records the Flink
// version the cluster was built for, so the REST client speaks the running
// cluster's dialect even while an upgrade to another version is recorded.
const AnnotationFlinkVersion = "flinkops.io/flink-version"

// observe records what the cluster is doing: the TaskManagers (for the
// scale subresource), the JobManager Deployment, and, once the JobManager
// answers, the job.
func (c *Controller) observe(ctx context.Context, sc *syncState) error {
	st := &sc.dep.Status
	tm := &v1beta1.TaskManagerInfo{LabelSelector: cluster.TaskManagerSelector(sc.dep.Name)}
	if d := sc.owned.taskManager; d != nil && d.DeletionTimestamp == nil {
		tm.Replicas = d.Status.Replicas
	}
	st.TaskManager = tm

	if sc.recorded == nil {
		st.JobManagerDeploymentStatus = v1beta1.JobManagerMissing
		return nil
	}
	jobs, info, err := c.observeJobManager(ctx, sc)
	if err != nil {
		return err
	}
	if info != nil {
		if st.ClusterInfo == nil {
			st.ClusterInfo = map[string]string{}
		}
		st.ClusterInfo["flink-version"] = info.FlinkVersion
		if info.FlinkRevision != "" {
			st.ClusterInfo["flink-revision"] = info.FlinkRevision
		}
	}
	if jobs != nil && sc.jobObservable() {
		c.observeJob(ctx, sc, jobs)
	}
	return nil
}

// observeJobManager derives jobManagerDeploymentStatus, as upstream:
// MISSING (no Deployment), DEPLOYING (pods not ready yet), ERROR (the
// Deployment cannot progress, or is not ready within
// kubernetes.operator.deployment.readiness.timeout), DEPLOYED_NOT_READY
// (pods ready, REST API not answering yet), READY. When READY it returns the
// jobs overview (applications) and, once per deployment, /config.
func (c *Controller) observeJobManager(ctx context.Context, sc *syncState) ([]flink.JobOverview, *flink.DashboardConfig, error) {
	st := &sc.dep.Status
	jm := sc.owned.jobManager
	set := func(s v1beta1.JobManagerDeploymentStatus) { st.JobManagerDeploymentStatus = s }
	if jm == nil || jm.DeletionTimestamp != nil {
		set(v1beta1.JobManagerMissing)
		return nil, nil, nil
	}
	if !ownedBy(jm, sc.dep) {
		set(v1beta1.JobManagerError)
		sc.fail(ReasonDeploymentError, "Deployment %s/%s exists and is not controlled by this FlinkDeployment", jm.Namespace, jm.Name)
		return nil, nil, nil
	}
	if jm.Status.ReadyReplicas < 1 {
		if msg := deploymentFailure(jm); msg != "" {
			set(v1beta1.JobManagerError)
			sc.fail(ReasonDeploymentError, "JobManager deployment failed: %s", msg)
			sc.after(sc.progressInterval())
			return nil, nil, nil
		}
		timeout, _ := sc.cfg.Duration(config.KeyDeploymentReadinessTimeout)
		if deployedAt := time.UnixMilli(st.ReconciliationStatus.ReconciliationTimestamp); timeout > 0 &&
			st.ReconciliationStatus.State == v1beta1.ReconciliationDeployed && sc.now.Sub(deployedAt) > timeout {
			set(v1beta1.JobManagerError)
			sc.fail(ReasonDeploymentError, "JobManager deployment is not ready %s after it was deployed (%s); check its pods and events",
				timeout, config.KeyDeploymentReadinessTimeout)
			sc.after(sc.progressInterval())
			return nil, nil, nil
		}
		set(v1beta1.JobManagerDeploying)
		sc.after(sc.progressInterval())
		return nil, nil, nil
	}

	client, err := c.clusterClient(sc)
	if err != nil {
		set(v1beta1.JobManagerDeployedNotReady)
		sc.log.V(2).Info("Cannot reach the JobManager", "err", err)
		sc.after(sc.progressInterval())
		return nil, nil, nil
	}
	var jobs []flink.JobOverview
	var info *flink.DashboardConfig
	if st.JobStatus.JobID != "" {
		jobs, err = client.JobsOverview(ctx)
		if jobs == nil && err == nil {
			jobs = []flink.JobOverview{}
		}
	}
	if err == nil && (st.ClusterInfo["flink-version"] == "" || st.JobStatus.JobID == "") {
		// /config doubles as the REST readiness check of a session cluster.
		info, err = client.Config(ctx)
	}
	if err != nil {
		set(v1beta1.JobManagerDeployedNotReady)
		sc.log.V(2).Info("JobManager REST API not answering yet", "err", err)
		sc.after(sc.progressInterval())
		return nil, nil, nil
	}
	set(v1beta1.JobManagerReady)
	sc.client = client
	return jobs, info, nil
}

// deploymentFailure explains a Deployment that cannot progress.
func deploymentFailure(d *appsv1.Deployment) string {
	for _, cond := range d.Status.Conditions {
		switch {
		case cond.Type == appsv1.DeploymentReplicaFailure && cond.Status == corev1.ConditionTrue:
			return cond.Message
		case cond.Type == appsv1.DeploymentProgressing && cond.Status == corev1.ConditionFalse && cond.Reason == "ProgressDeadlineExceeded":
			return cond.Message
		}
	}
	return ""
}

// clusterClient is a REST client for the JobManager that is running, which
// during an upgrade is built from the previous spec: its Flink version comes
// from the live JobManager Deployment and its port from the live REST Service.
func (c *Controller) clusterClient(sc *syncState) (*flink.Client, error) {
	port := 0
	if svc := sc.owned.restService; svc != nil {
		for _, p := range svc.Spec.Ports {
			if p.Name == cluster.RESTPortName {
				port = int(p.Port)
			}
		}
	}
	if port == 0 {
		port = int(cluster.DefaultRESTPort)
		if p, ok, err := sc.cfg.OptionalInt(config.FlinkRestPort); err == nil && ok {
			port = p
		}
	}
	versionText := string(sc.recorded.Spec.FlinkVersion)
	if jm := sc.owned.jobManager; jm != nil && jm.Annotations[AnnotationFlinkVersion] != "" {
		versionText = jm.Annotations[AnnotationFlinkVersion]
	}
	version, err := flink.ParseVersion(versionText)
	if err != nil {
		return nil, err
	}
	return c.flinkClient(sc.dep, port, version, sc.cfg)
}

// jobObservable says whether the job's state should be read from Flink. Not
// while the log says the job was stopped for an upgrade or is suspended:
// jobStatus.state is then the operator's SUSPENDED marker.
func (sc *syncState) jobObservable() bool {
	if sc.recorded == nil || sc.dep.Status.JobStatus.JobID == "" {
		return false
	}
	st := &sc.dep.Status
	if st.ReconciliationStatus.State == v1beta1.ReconciliationUpgrading {
		return st.JobStatus.State != v1beta1.JobStatusSuspended
	}
	return sc.recorded.Spec.Job != nil && !jobSuspended(&sc.recorded.Spec)
}

// observeJob updates jobStatus from the jobs overview. A job RUNNING whose
// tasks are not all running counts as CREATED (upstream's rule). When the
// job ends (FAILED, CANCELED, FINISHED), the latest checkpoint or savepoint
// is recorded in upgradeSavepointPath in the same write, so that an
// upgrade of a failed job restarts from its last state.
func (c *Controller) observeJob(ctx context.Context, sc *syncState, jobs []flink.JobOverview) {
	js := &sc.dep.Status.JobStatus
	for i := range jobs {
		if jobs[i].ID == js.JobID {
			sc.job = &jobs[i]
		}
	}
	if sc.job == nil {
		// Not submitted yet (the JobManager runs main() first), or lost.
		sc.after(sc.progressInterval())
		return
	}
	state := effectiveState(sc.job)
	js.JobName = sc.job.Name
	if sc.job.StartTime > 0 {
		js.StartTime = strconv.FormatInt(sc.job.StartTime, 10)
	}
	if state == js.State {
		return
	}
	if state.IsGloballyTerminal() && !js.State.IsGloballyTerminal() {
		path, err := c.latestState(ctx, sc)
		switch {
		case err != nil && flink.IsRetryable(err):
			// Record the terminal state together with its last checkpoint
			// or not at all: try again soon.
			sc.log.Info("Job ended but its checkpoints cannot be read yet", "state", state, "err", err)
			sc.after(sc.progressInterval())
			return
		case err != nil:
			sc.fail(ReasonUpgradeFailed, "Job %s is %s and its last state cannot be used: %v", js.JobID, state, err)
		case path != js.UpgradeSavepointPath:
			sc.log.Info("Recorded the last state of the ended job", "state", state, "path", path)
			js.UpgradeSavepointPath = path
		}
	}
	typ := "Normal"
	if state == v1beta1.JobStatusFailed {
		typ = "Warning"
	}
	sc.event(typ, ReasonJobStatusChanged, "Job status changed from %s to %s", stateOrNew(string(js.State)), state)
	js.State = state
	js.UpdateTime = strconv.FormatInt(sc.now.UnixMilli(), 10)
	if !state.IsGloballyTerminal() && state != v1beta1.JobStatusRunning {
		sc.after(sc.progressInterval())
	}
}

func effectiveState(j *flink.JobOverview) v1beta1.JobStatusState { return lifecycle.EffectiveState(j) }

// latestState is the state to restart the job from: the newest restorable
// checkpoint or savepoint Flink reports for it, else what the job itself
// started from (upgradeSavepointPath, "" for empty state). Call it only
// when the job cannot take another checkpoint (terminal), or as a
// best-effort early record.
func (c *Controller) latestState(ctx context.Context, sc *syncState) (string, error) {
	js := &sc.dep.Status.JobStatus
	stats, err := sc.client.Checkpoints(ctx, js.JobID)
	switch {
	case flink.IsNotFound(err): // checkpointing disabled
		return js.UpgradeSavepointPath, nil
	case err != nil:
		return "", err
	}
	return lifecycle.LatestStatePath(stats, js.UpgradeSavepointPath)
}
