package deployment

import (
	"context"
	"fmt"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/config"
	"github.com/flinkops/flink-operator/pkg/controller/jobengine"
	"github.com/flinkops/flink-operator/pkg/lifecycle"
)

// jobKind binds the engine (its Reconcile and stop protocol) to this sync
// of an application or session cluster.
func (c *Controller) jobKind(sc *syncState) deploymentJob { return deploymentJob{c, sc} }

type deploymentJob struct {
	c  *Controller
	sc *syncState
}

func (k deploymentJob) Starting() bool            { return k.c.jobStarting(k.sc) }
func (k deploymentJob) NeverRan() bool            { return neverRan(k.sc) }
func (k deploymentJob) Describe() string          { return describeJob(k.sc) }
func (k deploymentJob) Unreachable() (bool, bool) { return false, false }

// CancelKeepsState: a job whose checkpoints a cancel would delete is
// stopped by tearing its cluster down instead.
func (k deploymentJob) CancelKeepsState() bool {
	return !jobengine.DeletesCheckpointsOnCancel(k.sc.Cfg)
}

// neverRan: the job was never seen since its deploy and its JobManager has
// no ready pod, so as far as the operator can tell it never ran and still
// has the state it was deployed from (the cure for a deployment stuck on a
// bad image or config). A JobManager whose pods are ready but whose REST API
// does not answer may run the job unseen: that does not count.
func neverRan(sc *syncState) bool {
	st := &sc.Obj.Status
	switch st.JobManagerDeploymentStatus {
	case v1beta1.JobManagerReady, v1beta1.JobManagerDeployedNotReady:
		return false
	}
	return sc.Job == nil && (st.JobStatus.State == v1beta1.JobStatusReconciling || st.JobStatus.State == "")
}

func describeJob(sc *syncState) string {
	if sc.Client == nil {
		return fmt.Sprintf("unreachable (JobManager %s)", sc.Obj.Status.JobManagerDeploymentStatus)
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
	since := sc.Now.Sub(time.UnixMilli(sc.Obj.Status.ReconciliationStatus.ReconciliationTimestamp))
	if since > timeout {
		return false
	}
	switch sc.Obj.Status.JobManagerDeploymentStatus {
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

// teardown deletes the JobManager and TaskManager Deployments (foreground,
// so they are gone with their pods before the new ones are created). The
// ConfigMap and Services stay and are updated by the deploy. With Flink HA
// on and a new job id coming, the HA ConfigMaps are deleted too, as
// upstream does, or Flink would recover the old job from them. It reports
// whether there is anything to wait for.
func (c *Controller) teardown(sc *syncState) bool {
	waiting := false
	ns := sc.Obj.Namespace
	for _, d := range []*appsv1.Deployment{sc.owned.jobManager, sc.owned.taskManager} {
		if d == nil || !ownedBy(d, sc.Obj) {
			continue // absent, or not ours to delete (reported by the deploy)
		}
		waiting = true
		if d.DeletionTimestamp != nil {
			continue
		}
		name := d.Name
		sc.AfterStatusWrite("delete Deployment "+name, func(ctx context.Context) error {
			policy := metav1.DeletePropagationForeground
			err := c.Kube.AppsV1().Deployments(ns).Delete(ctx, name, metav1.DeleteOptions{PropagationPolicy: &policy})
			if err != nil && !apierrors.IsNotFound(err) {
				return fmt.Errorf("deleting Deployment %s/%s: %w", ns, name, err)
			}
			return nil
		})
	}
	if waiting && haEnabled(sc.Cfg) && jobengine.UpgradeMode(&sc.Recorded.Spec) != v1beta1.UpgradeModeLastState {
		selector := labels.SelectorFromSet(labels.Set{"app": sc.Obj.Name, "configmap-type": "high-availability"}).String()
		sc.AfterStatusWrite("delete HA ConfigMaps", func(ctx context.Context) error {
			err := c.Kube.CoreV1().ConfigMaps(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: selector})
			if err != nil && !apierrors.IsNotFound(err) {
				return fmt.Errorf("deleting HA ConfigMaps of %s/%s: %w", ns, sc.Obj.Name, err)
			}
			return nil
		})
	}
	if waiting {
		sc.Obj.Status.JobManagerDeploymentStatus = v1beta1.JobManagerMissing
		sc.RequeueWithin(teardownPoll)
	}
	return waiting
}

func haEnabled(cfg map[string]string) bool {
	t := strings.TrimSpace(cfg["high-availability.type"])
	if t == "" {
		t = strings.TrimSpace(cfg["high-availability"])
	}
	return t != "" && !strings.EqualFold(t, "NONE")
}
