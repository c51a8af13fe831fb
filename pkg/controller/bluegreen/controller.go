package bluegreen

import (
	"context"
	"fmt"
	"strings"
	"time"

	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	flinkcache "github.com/flinkops/flink-operator/pkg/cache"
	"github.com/flinkops/flink-operator/pkg/cluster"
	"github.com/flinkops/flink-operator/pkg/controller/controllerctx"
	"github.com/flinkops/flink-operator/pkg/metrics"
)

// QueueName is the blue/green controller's work queue (and its name in
// --controllers).
const QueueName = "flinkbluegreendeployment"

// Options are the controller's test hooks.
type Options struct {
	// Fault, when set, is called at every point where a crash must be
	// survivable: after the status write ("status-written") and after each
	// action that follows it ("action:<what>"). For crash tests.
	Fault func(key, point string)
}

// Controller reconciles FlinkBlueGreenDeployments.
type Controller struct {
	controllerctx.Context
	queue workqueue.TypedRateLimitingInterface[string]
	fault func(key, point string)
}

// New creates the controller and registers its handlers on the caches'
// FlinkBlueGreenDeployment, FlinkDeployment (children, by owner) and
// FlinkStateSnapshot (transition savepoints, by job) informers.
func New(cc controllerctx.Context, opts Options) (*Controller, error) {
	cc = cc.WithDefaults()
	c := &Controller{Context: cc, queue: cc.NewQueue(QueueName), fault: opts.Fault}
	err := cc.Caches.AddEventHandlers(flinkcache.Handlers{
		BlueGreens:  handler(c.enqueue),
		Deployments: handler(c.enqueueOwner),
		Snapshots:   handler(c.enqueueSnapshotJob),
	})
	if err != nil {
		return nil, err
	}
	return c, nil
}

func handler(f func(obj any)) cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    f,
		UpdateFunc: func(_, obj any) { f(obj) },
		DeleteFunc: f,
	}
}

func objectOf(obj any) (metav1.Object, bool) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	m, ok := obj.(metav1.Object)
	return m, ok
}

func (c *Controller) enqueue(obj any) {
	if m, ok := objectOf(obj); ok {
		c.queue.Add(m.GetNamespace() + "/" + m.GetName())
	}
}

// enqueueOwner wakes the blue/green deployment of a child.
func (c *Controller) enqueueOwner(obj any) {
	m, ok := objectOf(obj)
	if !ok {
		return
	}
	for _, r := range m.GetOwnerReferences() {
		if r.Kind == "FlinkBlueGreenDeployment" && r.APIVersion == v1beta1.SchemeGroupVersion.String() {
			c.queue.Add(m.GetNamespace() + "/" + r.Name)
		}
	}
}

// enqueueSnapshotJob wakes the blue/green deployment whose child a
// snapshot is of (a sync of a name that is none is a no-op).
func (c *Controller) enqueueSnapshotJob(obj any) {
	m, ok := objectOf(obj)
	if !ok {
		return
	}
	s, ok := m.(*v1beta1.FlinkStateSnapshot)
	if !ok || s.Spec.JobReference == nil || s.Spec.JobReference.Kind != v1beta1.JobReferenceKindDeployment {
		return
	}
	for _, suffix := range []string{"-blue", "-green"} {
		if bg, found := strings.CutSuffix(s.Spec.JobReference.Name, suffix); found && bg != "" {
			c.queue.Add(s.Namespace + "/" + bg)
		}
	}
}

// Run runs n workers until ctx ends.
func (c *Controller) Run(ctx context.Context, n int) {
	c.Loop(QueueName, "flinkbluegreendeployment", c.queue, c.sync, c.Caches.HasSynced).Run(ctx, n)
}

// sync runs one step of the state machine of the blue/green deployment key.
func (c *Controller) sync(ctx context.Context, key string) (time.Duration, error) {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return 0, err
	}
	bg, err := c.Caches.BlueGreen(ns, name)
	if apierrors.IsNotFound(err) {
		return 0, nil // its children, snapshot owner and Ingress go by garbage collection
	}
	if err != nil {
		return 0, err
	}
	if bg.DeletionTimestamp != nil {
		return 0, nil
	}
	log := klog.FromContext(ctx).WithValues("flinkbluegreendeployment", klog.KObj(bg))
	ctx = klog.NewContext(ctx, log)
	s, err := c.newStep(bg)
	if err != nil {
		return 0, err
	}
	s.plan(ctx)
	return c.commit(ctx, key, s)
}

// commit writes the step's status (if it changed), then emits its events
// and runs its actions, in order.
func (c *Controller) commit(ctx context.Context, key string, s *step) (time.Duration, error) {
	log := klog.FromContext(ctx)
	if s.statusChanged() {
		s.next.LastReconciledTimestamp = c.Clock.Now().UTC().Format(time.RFC3339Nano)
		toWrite := s.bg.DeepCopy()
		toWrite.Status = *s.next
		if _, err := c.Client.FlinkV1beta1().FlinkBlueGreenDeployments(toWrite.Namespace).UpdateStatus(ctx, toWrite, metav1.UpdateOptions{}); err != nil {
			return 0, fmt.Errorf("updating status of FlinkBlueGreenDeployment %s: %w", key, err)
		}
		if from, to := s.bg.Status.BlueGreenState, s.next.BlueGreenState; from != to {
			log.Info("Blue/green state changed", "from", stateOr(string(from), "NEW"), "to", to)
		}
		if s.next.JobStatus.State == v1beta1.JobStatusFailing && s.bg.Status.JobStatus.State != v1beta1.JobStatusFailing {
			metrics.BlueGreenFailed(s.bg.Namespace)
		}
		c.faultAt(key, "status-written")
	}
	for _, e := range s.events {
		c.Recorder.Event(s.bg, e.typ, e.reason, e.msg)
	}
	for _, a := range s.actions {
		if err := a.run(ctx); err != nil {
			return 0, fmt.Errorf("FlinkBlueGreenDeployment %s: %s: %w", key, a.name, err)
		}
		c.faultAt(key, "action:"+a.name)
	}
	return s.requeue, nil
}

func (c *Controller) faultAt(key, point string) {
	if c.fault != nil {
		c.fault(key, point)
	}
}

// applyIngress makes the Ingress of bg's spec.ingress lead to child (the
// active one), or removes the one bg owns when spec.ingress is unset.
func (c *Controller) applyIngress(ctx context.Context, bg *v1beta1.FlinkBlueGreenDeployment, desired *networkingv1.Ingress) error {
	ingresses := c.Kube.NetworkingV1().Ingresses(bg.Namespace)
	live, err := ingresses.Get(ctx, bg.Name, metav1.GetOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	if desired == nil {
		if err == nil && ownedBy(live, bg) {
			if err := ingresses.Delete(ctx, live.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &live.UID}}); err != nil && !apierrors.IsNotFound(err) {
				return err
			}
		}
		return nil
	}
	if apierrors.IsNotFound(err) {
		_, err = ingresses.Create(ctx, desired, metav1.CreateOptions{})
		return err
	}
	if !ownedBy(live, bg) {
		return fmt.Errorf("Ingress %s/%s exists and is not this blue/green deployment's", bg.Namespace, bg.Name)
	}
	if !cluster.SpecHashChanged(desired, live) {
		return nil
	}
	toWrite := live.DeepCopy()
	toWrite.Labels, toWrite.Annotations, toWrite.Spec = desired.Labels, desired.Annotations, desired.Spec
	_, err = ingresses.Update(ctx, toWrite, metav1.UpdateOptions{})
	return err
}
