package sessionjob

import (
	"encoding/json"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/config"
	"github.com/flinkops/flink-operator/pkg/flink"
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
	if sc.recorded != nil && sc.recorded.Spec.DeploymentName != "" {
		return sc.recorded.Spec.DeploymentName
	}
	return sc.sj.Spec.DeploymentName
}

// jobSpecForConfig is the spec whose flinkConfiguration applies now.
func (sc *syncState) specForConfig() *v1beta1.FlinkSessionJobSpec {
	if sc.recorded != nil {
		return &sc.recorded.Spec
	}
	return &sc.sj.Spec
}

// resolveCluster finds the session cluster in the cache and computes the
// job's effective configuration (operator defaults, then the cluster's
// flinkConfiguration, then the job's own) and the cluster's Flink version.
// A missing cluster, or one that is not a session cluster, is reported in
// status and with an event, and retried with backoff; it returns false.
func (c *Controller) resolveCluster(sc *syncState) bool {
	ns, name := sc.sj.Namespace, sc.deploymentName()
	if name == "" {
		sc.fail(ReasonValidationError, "spec.deploymentName is required: the name of a session FlinkDeployment in namespace %s", ns)
		return false
	}
	dep, err := c.caches.Deployment(ns, name)
	switch {
	case apierrors.IsNotFound(err):
		sc.fail(ReasonSessionCluster, "Session cluster FlinkDeployment %s/%s not found", ns, name)
		c.retryCluster(sc)
		return false
	case err != nil:
		sc.fail(ReasonSessionCluster, "Session cluster FlinkDeployment %s/%s: %v", ns, name, err)
		c.retryCluster(sc)
		return false
	case dep.Spec.Job != nil:
		sc.fail(ReasonSessionCluster, "FlinkDeployment %s/%s is an application cluster (spec.job is set); a FlinkSessionJob needs a session cluster, a FlinkDeployment without spec.job", ns, name)
		c.retryCluster(sc)
		return false
	}
	cfg, err := effectiveConfig(c.cfg, dep.Spec.FlinkConfiguration)
	if err == nil {
		cfg, err = effectiveConfig(cfg, sc.specForConfig().FlinkConfiguration)
	}
	if err != nil {
		sc.fail(ReasonValidationError, "spec.flinkConfiguration: %v", err)
		return false
	}
	version, err := flink.ParseVersion(clusterFlinkVersion(dep))
	if err != nil {
		sc.fail(ReasonSessionCluster, "Session cluster FlinkDeployment %s/%s: flinkVersion: %v", ns, name, err)
		c.retryCluster(sc)
		return false
	}
	c.clusterMisses.Delete(sc.key)
	sc.cluster, sc.cfg, sc.version = dep, cfg, version
	return true
}

// retryCluster schedules the next look at a job whose cluster is unusable:
// 5 s, 10 s, 20 s, ... up to 5 min.
func (c *Controller) retryCluster(sc *syncState) {
	n := 0
	if v, ok := c.clusterMisses.Load(sc.key); ok {
		n = v.(int)
	}
	c.clusterMisses.Store(sc.key, n+1)
	d := clusterRetryBase << min(n, 10)
	if d > clusterRetryMax {
		d = clusterRetryMax
	}
	sc.after(d)
}

// clusterFlinkVersion is the Flink version the session cluster runs: that
// of its recorded spec (what was deployed), else of its spec.
func clusterFlinkVersion(dep *v1beta1.FlinkDeployment) string {
	var rec struct {
		Spec struct {
			FlinkVersion string `json:"flinkVersion"`
		} `json:"spec"`
		FlinkVersion string `json:"flinkVersion"` // upstream's legacy form
	}
	if s := dep.Status.ReconciliationStatus.LastReconciledSpec; s != "" && json.Unmarshal([]byte(s), &rec) == nil {
		if rec.Spec.FlinkVersion != "" {
			return rec.Spec.FlinkVersion
		}
		if rec.FlinkVersion != "" {
			return rec.FlinkVersion
		}
	}
	return string(dep.Spec.FlinkVersion)
}

func effectiveConfig(base config.Config, conf *v1beta1.Configuration) (config.Config, error) {
	values, err := conf.Values()
	if err != nil {
		return nil, err
	}
	cfg, _, err := config.Effective(base, values)
	return cfg, err
}

// clusterReady: the session cluster is deployed and its JobManager
// answers REST calls, as its FlinkDeployment status says. A cluster being
// deleted still counts: it is kept until its session jobs are gone, so
// that they can stop their jobs through it.
func (sc *syncState) clusterReady() bool {
	return sc.cluster != nil && sc.cluster.Status.JobManagerDeploymentStatus == v1beta1.JobManagerReady
}

// flinkClient builds a REST client for the session cluster's JobManager.
func (c *Controller) flinkClient(sc *syncState) (*flink.Client, error) {
	port := 8081
	if p, ok, err := sc.cfg.OptionalInt(config.FlinkRestPort); err == nil && ok {
		port = p
	}
	url, err := c.endpoints(sc.cluster, port)
	if err != nil {
		return nil, err
	}
	timeout, err := sc.cfg.Duration(config.KeyFlinkClientTimeout)
	if err != nil {
		return nil, err
	}
	return flink.New(flink.Config{BaseURL: url, Version: sc.version, HTTPClient: c.httpClient, Timeout: timeout})
}
