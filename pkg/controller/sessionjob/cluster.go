package sessionjob

import (
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/controller/jobengine"
	"github.com/flinkops/flink-operator/pkg/controller/jobmanager"
	"github.com/flinkops/flink-operator/pkg/flink"
	"github.com/flinkops/flink-operator/pkg/reasons"
)

// Retry pacing while the session cluster is missing or unusable: the
// FlinkDeployment's own events wake the job at once when it appears or
// becomes ready, so the backoff only bounds how often a persisting problem
// is looked at again.
const (
	clusterRetryBase = 5 * time.Second
	clusterRetryMax  = 5 * time.Minute
)

// deploymentName is the session cluster the job runs on: the recorded one
// once deployed (spec.deploymentName is immutable; a changed one is
// reported, not followed).
func (sc *syncState) deploymentName() string {
	if sc.Recorded() != nil && sc.Recorded().Spec.DeploymentName != "" {
		return sc.Recorded().Spec.DeploymentName
	}
	return sc.Obj().Spec.DeploymentName
}

// specForConfig is the spec whose flinkConfiguration applies now: the
// recorded one, with the operator-only keys of the current one
// (jobengine.ConfigSpec).
func (sc *syncState) specForConfig() *v1beta1.FlinkSessionJobSpec {
	if sc.Recorded() != nil {
		s := jobengine.ConfigSpec(sc.Recorded().Spec, sc.Obj().Spec)
		return &s
	}
	return &sc.Obj().Spec
}

// resolveCluster finds the session cluster in the cache and computes the
// job's effective configuration (operator defaults, then the cluster's
// flinkConfiguration, then the job's own) and the Flink version the running
// cluster speaks (pkg/controller/jobmanager: its live JobManager
// Deployment's, else its recorded spec's).
// A missing cluster, or one that is not a session cluster, is reported in
// status and with an event, and retried with backoff; it returns false.
func (c *Controller) resolveCluster(sc *syncState) bool {
	ns, name := sc.Obj().Namespace, sc.deploymentName()
	if name == "" {
		sc.Fail(reasons.ReasonValidationError, "spec.deploymentName is required: the name of a session FlinkDeployment in namespace %s", ns)
		return false
	}
	dep, err := c.Caches.Deployment(ns, name)
	switch {
	case apierrors.IsNotFound(err):
		sc.Fail(reasons.ReasonSessionCluster, "Session cluster FlinkDeployment %s/%s not found", ns, name)
		c.retryCluster(sc)
		return false
	case err != nil:
		sc.Fail(reasons.ReasonSessionCluster, "Session cluster FlinkDeployment %s/%s: %v", ns, name, err)
		c.retryCluster(sc)
		return false
	case dep.Spec.Job != nil:
		sc.Fail(reasons.ReasonSessionCluster, "FlinkDeployment %s/%s is an application cluster (spec.job is set); a FlinkSessionJob needs a session cluster, a FlinkDeployment without spec.job", ns, name)
		c.retryCluster(sc)
		return false
	}
	cfg, err := jobmanager.EffectiveConfig(c.CurrentConfig(), dep.Spec.FlinkConfiguration)
	if err == nil {
		cfg, err = jobmanager.EffectiveConfig(cfg, sc.specForConfig().FlinkConfiguration)
	}
	if err != nil {
		sc.Fail(reasons.ReasonValidationError, "spec.flinkConfiguration: %v", err)
		return false
	}
	objs, err := c.JobManagers.Objects(dep)
	if err != nil {
		sc.Fail(reasons.ReasonSessionCluster, "Session cluster FlinkDeployment %s/%s: %v", ns, name, err)
		c.retryCluster(sc)
		return false
	}
	version, err := jobmanager.Version(dep, objs.JobManager)
	if err != nil {
		sc.Fail(reasons.ReasonSessionCluster, "Session cluster FlinkDeployment %s/%s: flinkVersion: %v", ns, name, err)
		c.retryCluster(sc)
		return false
	}
	c.clusterMisses.Delete(sc.Key())
	sc.cluster, sc.Cfg, sc.version = dep, cfg, version
	return true
}

// retryCluster schedules the next look at a job whose cluster is unusable:
// 5 s, 10 s, 20 s, ... up to 5 min.
func (c *Controller) retryCluster(sc *syncState) {
	n := 0
	if v, ok := c.clusterMisses.Load(sc.Key()); ok {
		n = v.(int)
	}
	c.clusterMisses.Store(sc.Key(), n+1)
	d := clusterRetryBase << min(n, 10)
	if d > clusterRetryMax {
		d = clusterRetryMax
	}
	sc.RequeueWithin(d)
}

// clusterReady: the session cluster is deployed and its JobManager
// answers REST calls, as its FlinkDeployment status says. A cluster being
// deleted still counts: it is kept until its session jobs are gone, so
// that they can stop their jobs through it.
func (sc *syncState) clusterReady() bool {
	return sc.cluster != nil && sc.cluster.Status.JobManagerDeploymentStatus == v1beta1.JobManagerReady
}

// flinkClient builds a REST client for the session cluster's JobManager,
// in the Flink version and on the port the running cluster has
// (pkg/controller/jobmanager), read afresh from the caches.
func (c *Controller) flinkClient(sc *syncState) (*flink.Client, error) {
	objs, err := c.JobManagers.Objects(sc.cluster)
	if err != nil {
		return nil, err
	}
	return c.dialer.Dial(jobmanager.Cluster{Deployment: sc.cluster, Config: sc.Cfg}.WithObjects(objs))
}
