package deployment

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/cluster"
	"github.com/flinkops/flink-operator/pkg/config"
	"github.com/flinkops/flink-operator/pkg/lifecycle"
	"github.com/flinkops/flink-operator/pkg/reasons"
	corev1 "k8s.io/api/core/v1"
)

// syncDeletion handles a deleted FlinkDeployment. With
// kubernetes.operator.job.savepoint-on-deletion the running job is first
// stopped with a savepoint (the same crash-safe stop as an upgrade, recorded
// as an UPGRADE snapshot), bounded by the job's checkpoint timeout: after it
// the finalizer goes anyway, with a Warning event, so deletion never hangs.
// A native cluster is then shut down (shutdownOnDeletion, bounded by
// kubernetes.operator.resource.cleanup.timeout); the cluster's other
// objects are garbage-collected through their owner references.
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
	st := &sc.Obj().Status
	if blocked, err := c.sessionJobsBlockDeletion(sc); err != nil || blocked {
		if err != nil {
			return 0, err
		}
		return c.commit(ctx, sc)
	}
	if c.unmanagedJobsBlockDeletion(ctx, sc) {
		return c.commit(ctx, sc)
	}
	onDeletion, _ := sc.Cfg.Bool(config.KeyJobSavepointOnDeletion)
	stoppable := sc.Recorded() != nil && sc.Recorded().Spec.Job != nil && st.JobStatus.JobID != "" &&
		st.JobStatus.State != v1beta1.JobStatusSuspended
	done := true
	if onDeletion && stoppable {
		if err := c.observe(ctx, sc); err != nil {
			return 0, err
		}
		if done, err = sc.StopOnDeletion(ctx, c.jobKind(sc), true); err != nil {
			return 0, err
		}
	}
	if !done {
		return c.commit(ctx, sc)
	}
	if held, err := c.disposalsHoldTeardown(sc); err != nil || held {
		if err != nil {
			return 0, err
		}
		return c.commit(ctx, sc)
	}
	pending, orphaned := c.shutdownOnDeletion(sc, onDeletion && stoppable)
	if pending {
		sc.RequeueWithin(teardownPoll)
		return c.commit(ctx, sc)
	}
	if orphaned {
		// Orphan propagation left the cluster running: its HA metadata
		// stays with it (upstream deletes it under the running JobManager).
		sc.Event(corev1.EventTypeNormal, reasons.ReasonCleanup, "The pods of %s are left running (%s: Orphan), with its HA ConfigMaps; delete them yourself",
			sc.Obj().Name, config.KeyResourceDeletionPropagation)
	} else {
		// Upstream deletes the HA metadata on deletion (deleteHaData true),
		// after the JobManagers are gone so none writes it again. In order:
		// a failed delete keeps the finalizer, and the next sync retries.
		c.deleteHAConfigMaps(sc)
	}
	sc.Event(corev1.EventTypeNormal, reasons.ReasonCleanup, "Cleaning up FlinkDeployment")
	c.engine.RemoveFinalizer(sc.State, Finalizer)
	sc.ForgetDisposalHold()
	c.autoscaler.Forget(sc.Obj().UID)
	return c.commit(ctx, sc)
}

// disposalsHoldTeardown keeps the cluster, JobManager included, while
// savepoint disposals wait on its JobManager (State.HoldForDisposals): Flink
// disposes of a savepoint through the REST API of the job's JobManager,
// which the teardown would stop.
func (c *Controller) disposalsHoldTeardown(sc *syncState) (bool, error) {
	jm := sc.owned.jobManager
	ready := jm != nil && ownedBy(jm, sc.Obj()) && jm.DeletionTimestamp == nil && jm.Status.ReadyReplicas > 0
	return sc.HoldForDisposals("the JobManager of "+sc.Obj().Name, ready)
}

// shutdownOnDeletion stops a native cluster before its finalizer goes, as
// upstream's deleteClusterDeployment: the JobManager Deployment is deleted
// with kubernetes.operator.resource.deletion.propagation, and it reports
// while it, its pods or any TaskManager pod Flink created is left
// (shutDownCluster). A standalone cluster is left to the garbage collector
// (its TaskManagers are a Deployment the operator owns). Pods that Orphan
// propagation leaves running are not waited for: that is what Orphan asks.
// Never longer than kubernetes.operator.resource.cleanup.timeout after the
// deletion (after the savepoint on deletion's own bound, if any): then the
// finalizer goes anyway, with a Warning event, and the garbage collector
// finishes through the owner references. orphaned reports pods left
// running on purpose.
func (c *Controller) shutdownOnDeletion(sc *syncState, savepointOnDeletion bool) (pending, orphaned bool) {
	if !sc.native() {
		return false, false
	}
	timeout := cleanupTimeout(sc.Cfg)
	deadline := sc.Obj().DeletionTimestamp.Add(timeout)
	if savepointOnDeletion {
		deadline = deadline.Add(lifecycle.StopTimeout(sc.Cfg))
	}
	left, err := c.shutDownCluster(sc)
	if err != nil {
		sc.Log().Error(err, "Cannot list the cluster's pods")
	}
	orphaned = len(left.orphaned) > 0
	if !left.pending() {
		return false, orphaned
	}
	if !sc.Now().Before(deadline) {
		sc.Event(corev1.EventTypeWarning, reasons.ReasonCleanup, "%s of %s still there %s after the deletion (%s: %s); "+
			"removing the finalizer, the garbage collector deletes them through their owner references",
			left.describe(), sc.Obj().Name, sc.Now().Sub(sc.Obj().DeletionTimestamp.Time).Round(time.Second), config.KeyResourceCleanupTimeout, timeout)
		return false, orphaned
	}
	return true, orphaned
}

// cleanupTimeout is kubernetes.operator.resource.cleanup.timeout (upstream's
// "timeout for the resource clean up to wait for flink to shutdown
// cluster", default 5 min): how long a deletion waits for the cluster's
// Deployments and pods to go before its finalizer goes anyway, and how long
// a teardown waits before it says so in a Warning (it never stops waiting:
// a new cluster is never started beside the old one).
func cleanupTimeout(cfg config.Config) time.Duration {
	d, err := cfg.Duration(config.KeyResourceCleanupTimeout)
	if err != nil || d <= 0 {
		return defaultCleanupTimeout
	}
	return d
}

const defaultCleanupTimeout = 5 * time.Minute

// deletionPropagation is kubernetes.operator.resource.deletion.propagation
// (upstream's "JM/TM Deployment deletion propagation", default Foreground,
// per resource): the propagation policy of every delete of a JobManager or
// TaskManager Deployment the operator makes. A value that does not parse
// (the webhook and validation refuse it) is Foreground.
func deletionPropagation(cfg config.Config) metav1.DeletionPropagation {
	v, err := cfg.Enum(config.KeyResourceDeletionPropagation)
	switch p := metav1.DeletionPropagation(v); {
	case err != nil:
	case p == metav1.DeletePropagationBackground, p == metav1.DeletePropagationOrphan:
		return p
	}
	return metav1.DeletePropagationForeground
}

// clusterLeft is what shutDownCluster found left of a cluster.
type clusterLeft struct {
	// deployments are the owned JobManager and TaskManager Deployments
	// not gone yet.
	deployments []string
	// pods are the cluster's JobManager and TaskManager pods that are
	// still there and will go by themselves: terminating, or owned by
	// something the garbage collector deletes.
	pods []string
	// orphaned are pods that Orphan propagation leaves running: they
	// never go unless someone deletes them (or their ReplicaSet).
	orphaned []string
	// since is the earliest deletion timestamp of what is left (zero:
	// none has one).
	since time.Time
}

// pending: something is left that goes by itself.
func (l clusterLeft) pending() bool { return len(l.deployments)+len(l.pods) > 0 }

func (l *clusterLeft) deleting(t *metav1.Time) {
	if t != nil && (l.since.IsZero() || t.Time.Before(l.since)) {
		l.since = t.Time
	}
}

// describe names what is left, for events.
func (l clusterLeft) describe() string {
	var parts []string
	if len(l.deployments) > 0 {
		parts = append(parts, "Deployments "+strings.Join(l.deployments, ", "))
	}
	if pods := append(slices.Clone(l.pods), l.orphaned...); len(pods) > 0 {
		parts = append(parts, "pods "+strings.Join(pods, ", "))
	}
	return strings.Join(parts, " and ")
}

// shutDownCluster queues the deletes that stop a cluster's JobManager and
// TaskManagers: the JobManager and TaskManager Deployments it owns, with
// kubernetes.operator.resource.deletion.propagation (deletionPropagation),
// and reports what is left. The cluster is gone only when its pods are
// too, whatever the propagation: with Foreground a Deployment goes after
// its pods (and, for the JobManager of a native cluster, the TaskManager
// pods Flink created with blockOwnerDeletion), but with Background it goes
// at once and the garbage collector deletes its ReplicaSet and pods later,
// so the JobManager and TaskManager pods of the cluster (both modes, from
// the pod informer) are looked at too: two JobManagers of one job must
// never run at once. The operator, which may not delete pods, waits for
// them. A pod without an owner reference, which the garbage collector would
// never delete, is not waited for; pods still running once Orphan
// propagation deleted their Deployments are reported as orphaned.
func (c *Controller) shutDownCluster(sc *syncState) (clusterLeft, error) {
	var left clusterLeft
	policy := deletionPropagation(sc.Cfg)
	for _, d := range []*appsv1.Deployment{sc.owned.jobManager, sc.owned.taskManager} {
		if d == nil || !ownedBy(d, sc.Obj()) {
			continue
		}
		left.deployments = append(left.deployments, d.Name)
		left.deleting(d.DeletionTimestamp)
		if d.DeletionTimestamp == nil {
			c.deleteDeployment(sc, d.Name, policy)
		}
	}
	pods, err := c.owned.podsOf(sc.Obj())
	if err != nil {
		return left, err
	}
	for _, p := range pods {
		switch {
		case len(p.OwnerReferences) == 0,
			p.Labels[cluster.LabelComponent] != cluster.ComponentJobManager && p.Labels[cluster.LabelComponent] != cluster.ComponentTaskManager,
			p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed: // no process left
		case p.DeletionTimestamp != nil:
			left.pods = append(left.pods, p.Name)
			left.deleting(p.DeletionTimestamp)
		case policy == metav1.DeletePropagationOrphan:
			left.orphaned = append(left.orphaned, p.Name)
		default:
			left.pods = append(left.pods, p.Name)
		}
	}
	slices.Sort(left.pods)
	slices.Sort(left.orphaned)
	return left, nil
}

// deleteDeployment queues a delete of an owned Deployment with the given
// propagation policy.
func (c *Controller) deleteDeployment(sc *syncState, name string, policy metav1.DeletionPropagation) {
	ns := sc.Obj().Namespace
	sc.AfterStatusWrite("delete Deployment "+name, func(ctx context.Context) error {
		err := c.Kube.AppsV1().Deployments(ns).Delete(ctx, name, metav1.DeleteOptions{PropagationPolicy: &policy})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting Deployment %s/%s: %w", ns, name, err)
		}
		return nil
	})
}

// deleteHAConfigMaps queues the deletion of the cluster's Kubernetes-HA
// ConfigMaps (<name>-cluster-config-map, <name>-<job id>-config-map: labels
// app=<name>, type=flink-native-kubernetes, plus
// configmap-type=high-availability on Flink 1.x) the cache holds, by name
// and UID, and reports whether there are any. Upstream selects them by
// Flink's common labels; cluster.IsHAConfigMap keeps the operator's own
// flink-config-<name>, which carries those too in native mode.
func (c *Controller) deleteHAConfigMaps(sc *syncState) bool {
	cms, err := c.owned.haConfigMaps(sc.Obj())
	if err != nil {
		sc.Log().Error(err, "Cannot list the HA ConfigMaps")
		return false
	}
	ns := sc.Obj().Namespace
	for _, cm := range cms {
		if cm.DeletionTimestamp != nil {
			continue
		}
		name, uid := cm.Name, cm.UID
		sc.AfterStatusWrite("delete HA ConfigMap "+name, func(ctx context.Context) error {
			err := c.Kube.CoreV1().ConfigMaps(ns).Delete(ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
			if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
				return fmt.Errorf("deleting HA ConfigMap %s/%s: %w", ns, name, err)
			}
			return nil
		})
	}
	return len(cms) > 0
}

// sessionJobsBlockDeletion keeps a session cluster while FlinkSessionJobs
// run on it, as upstream does: their own deletion must first stop their
// jobs (with a savepoint on deletion, if configured) through this cluster's
// REST API. A session job's removal wakes the cluster (controller.go).
func (c *Controller) sessionJobsBlockDeletion(sc *syncState) (bool, error) {
	if sc.Recorded() == nil || sc.Recorded().Spec.Job != nil {
		return false, nil
	}
	jobs, err := c.Caches.SessionJobsOfCluster(sc.Obj().Namespace, sc.Obj().Name)
	if err != nil || len(jobs) == 0 {
		return false, err
	}
	names := make([]string, 0, len(jobs))
	for _, j := range jobs {
		names = append(names, j.Name)
	}
	slices.Sort(names)
	msg := fmt.Sprintf("Session cluster %s is kept while FlinkSessionJobs run on it: %s; delete them first (their jobs are stopped through this cluster)",
		sc.Obj().Name, strings.Join(names, ", "))
	sc.Fail(reasons.ReasonCleanup, "%s", msg) // one Warning event while it stays the same
	sc.RequeueWithin(sc.ReconcileInterval())
	return true, nil
}

// unmanagedJobsBlockDeletion keeps a session cluster, once no
// FlinkSessionJob runs on it, while it still runs jobs that were submitted
// by other means (the Flink CLI, the web UI): jobs in its jobs overview
// that are not globally terminal, as upstream's SessionReconciler with
// kubernetes.operator.session.deletion.block-on-unmanaged-jobs (default
// true). Every job left once the FlinkSessionJobs are gone is unmanaged:
// theirs were stopped by their own deletion. It is reported in
// status.error with one Cleanup Warning event and looked at again after
// the reconcile interval; the worker never waits. As upstream, a cluster
// whose JobManager cannot be asked (not ready, not answering) is not held.
func (c *Controller) unmanagedJobsBlockDeletion(ctx context.Context, sc *syncState) bool {
	if sc.Recorded() == nil || sc.Recorded().Spec.Job != nil {
		return false
	}
	if on, err := sc.Cfg.Bool(config.KeySessionDeletionBlockOnUnmanagedJobs); err != nil || !on {
		return false
	}
	jm := sc.owned.jobManager
	if jm == nil || jm.DeletionTimestamp != nil || !ownedBy(jm, sc.Obj()) || jm.Status.ReadyReplicas < 1 {
		return false
	}
	client, err := c.clusterClient(sc)
	if err != nil {
		sc.Log().Info("Cannot reach the session cluster to look for unmanaged jobs; deleting it", "err", err)
		return false
	}
	jobs, err := client.JobsOverview(ctx)
	if err != nil {
		sc.Log().Info("Cannot list the session cluster's jobs to look for unmanaged ones; deleting it", "err", err)
		return false
	}
	var ids []string
	for _, j := range jobs {
		if !j.State.IsGloballyTerminal() {
			ids = append(ids, j.ID)
		}
	}
	if len(ids) == 0 {
		return false
	}
	slices.Sort(ids)
	sc.Fail(reasons.ReasonCleanup, "Session cluster %s is kept while it runs jobs no FlinkSessionJob manages: %s; cancel them first (%s: true)",
		sc.Obj().Name, strings.Join(ids, ", "), config.KeySessionDeletionBlockOnUnmanagedJobs)
	sc.RequeueWithin(sc.ReconcileInterval())
	return true
}
