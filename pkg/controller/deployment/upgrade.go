package deployment

import (
	"context"
	"fmt"
	"strings"
	"time"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/cluster"
	"github.com/flinkops/flink-operator/pkg/config"
	"github.com/flinkops/flink-operator/pkg/controller/jobengine"
	"github.com/flinkops/flink-operator/pkg/lifecycle"
	"github.com/flinkops/flink-operator/pkg/reasons"
)

// jobKind binds the engine (its Reconcile and stop protocol) to this sync
// of an application or session cluster.
func (c *Controller) jobKind(sc *syncState) deploymentJob { return deploymentJob{c, sc} }

type deploymentJob struct {
	c  *Controller
	sc *syncState
}

func (k deploymentJob) Starting() bool   { return k.c.jobStarting(k.sc) }
func (k deploymentJob) NeverRan() bool   { return neverRan(k.sc) }
func (k deploymentJob) Describe() string { return describeJob(k.sc) }

// EndOnDeletion: the cluster's teardown, which follows, ends the job.
func (k deploymentJob) EndOnDeletion() bool              { return true }
func (k deploymentJob) EndOnDeletionDescription() string { return "deleting without a savepoint" }

// Unreachable: a last-state upgrade of a job whose JobManager does not
// answer goes on when Flink's HA metadata holds its latest checkpoint
// (haRecovery), as upstream's; otherwise the common rules apply (manual
// restore unless the last state is known).
func (k deploymentJob) Unreachable() (bool, bool) {
	if k.sc.Client == nil && k.c.haRecovery(k.sc) {
		return true, true
	}
	return false, false
}

// LastStateStop: a job whose checkpoints a cancel would delete, or whose
// new JobManager recovers it through Flink's HA metadata (haRecovery: a
// cancel would delete that), is stopped by tearing its cluster down
// instead. With kubernetes.operator.job.upgrade.last-state.job-cancel.enabled
// (upstream's allowLastStateCancel) the job is cancelled even then: Flink
// drops its HA metadata, and the new job restores from the latest
// checkpoint read through the REST API once the job is CANCELED (the stop
// protocol's stopLastState, written ahead like any last-state stop); the
// teardown still keeps the HA ConfigMaps.
func (k deploymentJob) LastStateStop(context.Context) (jobengine.LastStateStop, string) {
	if jobengine.DeletesCheckpointsOnCancel(k.sc.Cfg) {
		return jobengine.StopByTeardown, ""
	}
	if cancel, _ := k.sc.Cfg.Bool(config.KeyJobUpgradeLastStateJobCancelEnabled); cancel || !k.c.haRecovery(k.sc) {
		return jobengine.StopByCancel, ""
	}
	return jobengine.StopByTeardown, ""
}

// neverRan: the job was never seen since its deploy and its JobManager has
// no ready pod, so as far as the operator can tell it never ran and still
// has the state it was deployed from (the cure for a deployment stuck on a
// bad image or config). A JobManager whose pods are ready but whose REST API
// does not answer may run the job unseen: that does not count.
func neverRan(sc *syncState) bool {
	st := &sc.Obj().Status
	switch st.JobManagerDeploymentStatus {
	case v1beta1.JobManagerReady, v1beta1.JobManagerDeployedNotReady:
		return false
	}
	return sc.Job == nil && (st.JobStatus.State == v1beta1.JobStatusReconciling || st.JobStatus.State == "")
}

func describeJob(sc *syncState) string {
	if sc.Client == nil {
		return fmt.Sprintf("unreachable (JobManager %s)", sc.Obj().Status.JobManagerDeploymentStatus)
	}
	if sc.Job == nil {
		return "unknown to its JobManager"
	}
	return string(lifecycle.EffectiveState(sc.Job))
}

// jobStarting: the cluster or the job is still coming up after its deploy,
// for at most kubernetes.operator.deployment.readiness.timeout after the
// upgrade was recorded. A savepoint upgrade waits for it rather than falling
// back at once.
func (c *Controller) jobStarting(sc *syncState) bool {
	timeout, _ := sc.Cfg.Duration(config.KeyDeploymentReadinessTimeout)
	since := sc.Now().Sub(time.UnixMilli(sc.Obj().Status.ReconciliationStatus.ReconciliationTimestamp))
	if since > timeout {
		return false
	}
	switch sc.Obj().Status.JobManagerDeploymentStatus {
	case v1beta1.JobManagerDeploying, v1beta1.JobManagerDeployedNotReady:
		return true
	}
	if sc.Job == nil {
		return sc.Client != nil // submitted soon
	}
	switch lifecycle.EffectiveState(sc.Job) {
	case v1beta1.JobStatusCreated, v1beta1.JobStatusInitializing, v1beta1.JobStatusReconciling:
		return true
	}
	return false
}

// teardown deletes the JobManager and TaskManager Deployments (with
// kubernetes.operator.resource.deletion.propagation) and waits for them
// and for all the pods of the old cluster, JobManager and TaskManagers, to
// be gone (shutDownCluster) before the new cluster is created: two
// JobManagers of one job never run at once, whatever the propagation. The
// ConfigMap and Services stay and are updated by the deploy. Unless the
// upgrade mode is last-state, the cluster's Kubernetes-HA ConfigMaps are
// deleted too once its pods are gone (so no JobManager writes them again),
// as upstream does (stateless and savepoint upgrades and suspends), or Flink
// would recover the old job from them; last-state keeps them (the new
// JobManager recovers the job from its latest checkpoint through them). It
// reports whether there is anything to wait for.
//
// The wait never ends by itself while something of the old cluster is
// left: past kubernetes.operator.resource.cleanup.timeout after their
// deletion, status.error and a Warning event say what it waits for. Pods
// that Orphan propagation left running never go by themselves: the new
// cluster waits until someone deletes them (or their ReplicaSets), and
// status.error says so at once.
func (c *Controller) teardown(sc *syncState) bool {
	left, err := c.shutDownCluster(sc)
	waiting := left.pending() || len(left.orphaned) > 0
	if err != nil {
		sc.Log().Error(err, "Cannot list the cluster's pods")
		waiting = true
	}
	if !waiting && jobengine.UpgradeMode(&sc.Recorded().Spec) != v1beta1.UpgradeModeLastState && c.deleteHAConfigMaps(sc) {
		// Until they are gone: the new cluster would recover the old job
		// from them.
		waiting = true
	}
	if !waiting {
		return false
	}
	sc.Obj().Status.JobManagerDeploymentStatus = v1beta1.JobManagerMissing
	timeout := cleanupTimeout(sc.Cfg)
	switch {
	case !left.pending() && len(left.orphaned) > 0:
		sc.Fail(reasons.ReasonCleanup, "The new cluster of %s waits for pods of its old cluster that %s Orphan left running: %s; "+
			"delete them (or their ReplicaSets): it is not started beside them", sc.Obj().Name, config.KeyResourceDeletionPropagation, strings.Join(left.orphaned, ", "))
		sc.RequeueWithin(sc.ReconcileInterval()) // and at once when a pod goes
		return true
	case left.pending() && !left.since.IsZero() && sc.Now().Sub(left.since) >= timeout:
		sc.Fail(reasons.ReasonCleanup, "%s of the old cluster of %s still there more than %s (%s) after their deletion; the new cluster waits for them",
			left.describe(), sc.Obj().Name, timeout, config.KeyResourceCleanupTimeout)
	}
	sc.RequeueWithin(teardownPoll)
	return true
}

func haEnabled(cfg map[string]string) bool {
	t := strings.TrimSpace(cfg["high-availability.type"])
	if t == "" {
		t = strings.TrimSpace(cfg["high-availability"])
	}
	return t != "" && !strings.EqualFold(t, "NONE")
}

// haRecovery: the upgrade of a cluster, native or standalone, with Flink's
// Kubernetes HA in last-state mode, whose job's HA ConfigMap
// (<name>-<job id>-config-map) holds checkpoint pointers. As upstream, the
// job is then not cancelled (which would make Flink clean its HA data):
// the teardown keeps the HA ConfigMaps, and the new JobManager, with the
// same cluster id and job id, recovers the job from the latest checkpoint
// they point to, whatever completed after the operator last looked (a
// standalone JobManager recovers through them as a native one does). The
// restore path the status records is only what Flink falls back to without
// HA data.
func (c *Controller) haRecovery(sc *syncState) bool {
	js := sc.Obj().Status.JobStatus
	if sc.Recorded() == nil || sc.Recorded().Spec.Job == nil || !kubernetesHA(sc.Cfg) ||
		jobengine.UpgradeMode(&sc.Recorded().Spec) != v1beta1.UpgradeModeLastState || js.JobID == "" {
		return false
	}
	return c.haJobCheckpoints(sc)
}

// haJobCheckpoints: the HA ConfigMap of the job the status names holds
// completed checkpoints, which a JobManager started with that job id
// recovers from.
func (c *Controller) haJobCheckpoints(sc *syncState) bool {
	js := sc.Obj().Status.JobStatus
	inf := c.owned.forNamespace(sc.Obj().Namespace)
	if inf == nil || js.JobID == "" {
		return false
	}
	cm, err := inf.configMaps.ConfigMaps(sc.Obj().Namespace).Get(cluster.HAJobConfigMapName(sc.Obj().Name, js.JobID))
	if err != nil || cm.DeletionTimestamp != nil || !cluster.IsHAConfigMap(sc.Obj().Name, cm) {
		return false
	}
	for k := range cm.Data {
		if strings.HasPrefix(k, haCheckpointKeyPrefix) {
			return true
		}
	}
	return false
}

// haCheckpointKeyPrefix begins the keys of the completed checkpoints in a
// job's HA ConfigMap (Flink's KubernetesCheckpointStoreUtil:
// checkpointID-<19 digits>).
const haCheckpointKeyPrefix = "checkpointID-"

// kubernetesHA: Flink's Kubernetes HA services (by name or factory class).
func kubernetesHA(cfg map[string]string) bool {
	t := strings.TrimSpace(cfg["high-availability.type"])
	if t == "" {
		t = strings.TrimSpace(cfg["high-availability"])
	}
	return strings.EqualFold(t, "kubernetes") || t == "org.apache.flink.kubernetes.highavailability.KubernetesHaServicesFactory"
}
