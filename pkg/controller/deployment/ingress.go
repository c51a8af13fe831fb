package deployment

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/flinkops/flink-operator/pkg/cluster"
	"github.com/flinkops/flink-operator/pkg/config"
	"github.com/flinkops/flink-operator/pkg/reasons"
)

// The Ingress of spec.ingress (upstream's IngressUtils.reconcileIngress):
// built by cluster.Ingress from the spec the cluster runs (Recorded, like
// every other object of the cluster), so a template change reaches it
// with the deploy of that spec, as upstream (a change of spec.ingress is
// an upgrade there too). Between deploys it is kept as built (drift
// repair, like the Services); when the deployed spec has no ingress, an
// Ingress this FlinkDeployment controls is deleted; it goes with the
// FlinkDeployment through its owner reference.

// manageIngress is kubernetes.operator.ingress.manage (default true).
func manageIngress(cfg config.Config) bool {
	on, err := cfg.Bool(config.KeyIngressManage)
	return err != nil || on
}

// ensureIngress queues the writes that make the live Ingress match the
// recorded spec.ingress. deploying is true when the JobManager is being
// created (the moment upstream reconciles the Ingress at all).
func (c *Controller) ensureIngress(sc *syncState, built *cluster.Cluster, deploying bool) {
	spec := sc.Recorded().Spec.Ingress
	if !manageIngress(c.Config) {
		if spec != nil && deploying {
			sc.Event(corev1.EventTypeWarning, reasons.ReasonIngressManagement, "Ingress management is turned off but ingress set in spec")
		}
		return
	}
	ns, live := sc.Obj().Namespace, sc.owned.ingress
	api := c.Kube.NetworkingV1().Ingresses(ns)
	if spec == nil {
		if live == nil || !ownedBy(live, sc.Obj()) || live.DeletionTimestamp != nil {
			return
		}
		uid := live.UID
		sc.AfterStatusWrite("delete Ingress "+live.Name, func(ctx context.Context) error {
			err := api.Delete(ctx, live.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
			if err != nil && !apierrors.IsNotFound(err) {
				return fmt.Errorf("deleting Ingress %s: %w", live.Name, err)
			}
			return nil
		})
		return
	}
	port, err := cluster.RESTPort(built.FlinkConfig)
	if err != nil {
		sc.Fail(reasons.ReasonDeploymentError, "Cannot build the Ingress: %v", err)
		return
	}
	desired, err := cluster.Ingress(cluster.IngressInput{Deployment: sc.Obj(), Spec: spec, Native: built.Native, RESTPort: port})
	if err != nil {
		sc.Fail(reasons.ReasonDeploymentError, "Cannot build the Ingress: %v", err)
		return
	}
	sc.ensure(objectWrites{desired: desired, live: asObject(live),
		create: func(ctx context.Context) error {
			_, err := api.Create(ctx, desired, metav1.CreateOptions{})
			return err
		},
		update: func(ctx context.Context) error {
			u := live.DeepCopy()
			// Labels and annotations are the spec's, an annotation removed
			// from the spec goes (upstream replaces the whole object).
			u.Labels, u.Annotations, u.Spec = desired.Labels, desired.Annotations, desired.Spec
			_, err := api.Update(ctx, u, metav1.UpdateOptions{})
			return err
		}})
}
