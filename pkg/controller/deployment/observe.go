package deployment

import (
	"context"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/cluster"
	"github.com/flinkops/flink-operator/pkg/config"
	"github.com/flinkops/flink-operator/pkg/controller/jobengine"
	"github.com/flinkops/flink-operator/pkg/controller/jobmanager"
	"github.com/flinkops/flink-operator/pkg/flink"
	"github.com/flinkops/flink-operator/pkg/reasons"
)

// AnnotationFlinkVersion on the JobManager Deployment records the Flink
// version the cluster was built for, so the REST client speaks the running
// cluster's dialect even while an upgrade to another version is recorded.
const AnnotationFlinkVersion = jobmanager.AnnotationFlinkVersion

// observe records what the cluster is doing: the TaskManagers (for the
// scale subresource), the JobManager Deployment, and, once the JobManager
// answers, the job.
func (c *Controller) observe(ctx context.Context, sc *syncState) error {
	st := &sc.Obj().Status
	native := sc.native()
	tm := &v1beta1.TaskManagerInfo{LabelSelector: cluster.TaskManagerSelector(cluster.Mode(native), sc.Obj().Name)}
	if native {
		// Flink's resource manager creates the TaskManager pods: count the
		// live ones (the scale subresource reads this; the operator never
		// scales them).
		pods, err := c.owned.nativeTaskManagerPods(sc.Obj())
		if err != nil {
			return err
		}
		for _, p := range pods {
			if p.DeletionTimestamp == nil && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
				tm.Replicas++
			}
		}
	} else if d := sc.owned.taskManager; d != nil && d.DeletionTimestamp == nil {
		tm.Replicas = d.Status.Replicas
	}
	st.TaskManager = tm

	if sc.Recorded() == nil {
		st.JobManagerDeploymentStatus = v1beta1.JobManagerMissing
		return nil
	}
	pods, err := c.podFailuresOf(ctx, sc)
	if err != nil {
		return err
	}
	jobs, info, err := c.observeJobManager(ctx, sc, pods.jobManager)
	if err != nil {
		return err
	}
	// The TaskManagers' owner: their Deployment, or in native mode the
	// JobManager Deployment (Flink's owner reference on the pods it creates).
	tmOwner := sc.owned.taskManager
	if native {
		tmOwner = sc.owned.jobManager
	}
	if f := pods.taskManager; f != nil && tmOwner != nil && tmOwner.DeletionTimestamp == nil {
		// Upstream does not look at TaskManager pods; the JobManager's
		// status stays what it is.
		sc.Fail(f.reason, "%s", f.message)
		sc.RequeueWithin(recheckIn(sc, f))
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
// Deployment cannot progress, a JobManager container waits for one of
// upstream's container error reasons (pods.go), or the Deployment is not
// ready within kubernetes.operator.deployment.readiness.timeout),
// DEPLOYED_NOT_READY (pods ready, REST API not answering yet), READY. When
// READY it returns the jobs overview (applications) and, once per
// deployment, /config. pod is the failing JobManager pod, if any.
//
// jobStatus.state is left as it was (upstream sets RECONCILING on ERROR): a
// job seen running must not look as if it never ran (neverRan), which would
// let an upgrade redeploy it from the state it was deployed from.
func (c *Controller) observeJobManager(ctx context.Context, sc *syncState, pod *podFailure) ([]flink.JobOverview, *flink.DashboardConfig, error) {
	st := &sc.Obj().Status
	jm := sc.owned.jobManager
	set := func(s v1beta1.JobManagerDeploymentStatus) { st.JobManagerDeploymentStatus = s }
	if jm == nil || jm.DeletionTimestamp != nil {
		set(v1beta1.JobManagerMissing)
		return nil, nil, nil
	}
	if !ownedBy(jm, sc.Obj()) {
		set(v1beta1.JobManagerError)
		sc.Fail(reasons.ReasonDeploymentError, "Deployment %s/%s exists and is not controlled by this FlinkDeployment", jm.Namespace, jm.Name)
		return nil, nil, nil
	}
	if jm.Status.ReadyReplicas < 1 {
		if msg := deploymentFailure(jm); msg != "" {
			set(v1beta1.JobManagerError)
			sc.Fail(reasons.ReasonDeploymentError, "JobManager deployment failed: %s", msg)
			sc.RequeueWithin(sc.ProgressInterval())
			return nil, nil, nil
		}
		if pod != nil {
			// ERROR for upstream's container errors; an unschedulable pod
			// is still DEPLOYING (upstream), with the reason in status.error.
			set(v1beta1.JobManagerDeploying)
			if pod.jmError {
				set(v1beta1.JobManagerError)
			}
			sc.Fail(pod.reason, "%s", pod.message)
			sc.RequeueWithin(recheckIn(sc, pod))
			return nil, nil, nil
		}
		timeout, _ := sc.Cfg.Duration(config.KeyDeploymentReadinessTimeout)
		if deployedAt := time.UnixMilli(st.ReconciliationStatus.ReconciliationTimestamp); timeout > 0 &&
			(st.ReconciliationStatus.State == v1beta1.ReconciliationDeployed || st.ReconciliationStatus.State == v1beta1.ReconciliationRolledBack) &&
			sc.Now().Sub(deployedAt) > timeout {
			set(v1beta1.JobManagerError)
			sc.Fail(reasons.ReasonDeploymentError, "JobManager deployment is not ready %s after it was deployed (%s); check its pods and events",
				timeout, config.KeyDeploymentReadinessTimeout)
			sc.RequeueWithin(sc.ProgressInterval())
			return nil, nil, nil
		}
		set(v1beta1.JobManagerDeploying)
		sc.RequeueWithin(sc.ProgressInterval())
		return nil, nil, nil
	}

	client, err := c.clusterClient(sc)
	if err != nil {
		set(v1beta1.JobManagerDeployedNotReady)
		sc.Log().V(2).Info("Cannot reach the JobManager", "err", err)
		sc.RequeueWithin(sc.ProgressInterval())
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
		sc.Log().V(2).Info("JobManager REST API not answering yet", "err", err)
		sc.RequeueWithin(sc.ProgressInterval())
		return nil, nil, nil
	}
	set(v1beta1.JobManagerReady)
	sc.Client = client
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
// during an upgrade is built from the previous spec: the rule of
// pkg/controller/jobmanager (version from the live JobManager Deployment,
// port from the live REST Service) that the other controllers use too.
func (c *Controller) clusterClient(sc *syncState) (*flink.Client, error) {
	return c.jobManagers.Dial(jobmanager.Cluster{
		Deployment: sc.Obj(), JobManager: sc.owned.jobManager, RESTService: sc.owned.restService, Config: sc.Cfg,
	})
}

// jobObservable says whether the job's state should be read from Flink. Not
// while the log says the job was stopped for an upgrade or is suspended:
// jobStatus.state is then the operator's SUSPENDED marker.
func (sc *syncState) jobObservable() bool {
	if sc.Recorded() == nil || sc.Obj().Status.JobStatus.JobID == "" {
		return false
	}
	st := &sc.Obj().Status
	if rs := st.ReconciliationStatus.State; rs == v1beta1.ReconciliationUpgrading || rs == v1beta1.ReconciliationRollingBack {
		return st.JobStatus.State != v1beta1.JobStatusSuspended
	}
	return sc.Recorded().Spec.Job != nil && !jobengine.JobSuspended(&sc.Recorded().Spec)
}

// observeJob finds the recorded job in the jobs overview and updates
// jobStatus from it (jobengine.ObserveJob).
func (c *Controller) observeJob(ctx context.Context, sc *syncState, jobs []flink.JobOverview) {
	js := &sc.Obj().Status.JobStatus
	for i := range jobs {
		if jobs[i].ID == js.JobID {
			sc.Job = &jobs[i]
		}
	}
	if sc.Job == nil {
		// Not submitted yet (the JobManager runs main() first), or lost.
		sc.RequeueWithin(sc.ProgressInterval())
		return
	}
	sc.ObserveJob(ctx)
	c.observeExceptions(ctx, sc)
	c.observeHealth(ctx, sc) // health.go
}

// recheckIn is how soon to look at a failing pod again: when its verdict
// expires, at the latest after the progress interval.
func recheckIn(sc *syncState, f *podFailure) time.Duration {
	d := sc.ProgressInterval()
	if f.recheck > 0 && f.recheck < d {
		d = f.recheck
	}
	return d
}
