package deployment

import (
	"context"
	"github.com/flinkops/flink-operator/pkg/controller/autoscaling"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	flinkcache "github.com/flinkops/flink-operator/pkg/cache"
	"github.com/flinkops/flink-operator/pkg/canary"
	"github.com/flinkops/flink-operator/pkg/controller/controllerctx"
	"github.com/flinkops/flink-operator/pkg/controller/jobengine"
	"github.com/flinkops/flink-operator/pkg/controller/jobmanager"
	kubeinformers "github.com/flinkops/flink-operator/pkg/generated/kube/informers"
)

// QueueName names the controller's workqueue (and its metrics).
const QueueName = "flinkdeployment"

// Finalizer holds a FlinkDeployment until the operator has had its chance
// to take a savepoint on deletion.
const Finalizer = v1beta1.DeploymentFinalizer

// Options are this controller's own settings; what all controllers share
// is a controllerctx.Context.
type Options struct {
	// FaultPoint, when set, is called at every point where a crash must
	// be survivable: right after a status write ("status-written"), after
	// a write done before it ("pre-commit:<what>") and after each action
	// that follows it ("action:<what>"). It exists for crash tests.
	FaultPoint func(key, point string)
	// Canaries tracks canary resources (pkg/canary), which are never
	// deployed; nil: they are skipped, not tracked.
	Canaries *canary.Monitor
}

// Controller reconciles FlinkDeployments, in standalone and native mode.
type Controller struct {
	controllerctx.Context // clients, caches, recorder, clock, configuration

	owned       *ownedCache
	queue       workqueue.TypedRateLimitingInterface[string]
	jobManagers jobmanager.Dialer
	// podLogs reads the tail of a container's log (tests replace it).
	podLogs func(ctx context.Context, namespace, pod, container string, previous bool) (string, error)
	// runLines caches the explaining line of failed container runs.
	runLines lineCache
	// exceptions: the job exceptions reported (exceptions.go).
	exceptions exceptionMarks
	engine     *jobengine.Engine[*v1beta1.FlinkDeployment, v1beta1.FlinkDeploymentSpec]
	canaries   *canary.Monitor
	// autoscaler runs the job autoscaler of application deployments.
	autoscaler *autoscaling.Runner
}

// New creates the controller and registers its event handlers: on the
// FlinkDeployment informers of caches, and on the Deployment, Service,
// ConfigMap and Pod informers of kubeFactories (keyed by namespace like the flink
// factories, "" = all), which the operator filters to the objects it builds.
func New(cc controllerctx.Context, kubeFactories map[string]kubeinformers.SharedInformerFactory, opts Options) (*Controller, error) {
	cc = cc.WithDefaults()
	caches := cc.Caches
	c := &Controller{
		Context:     cc,
		owned:       newOwnedCache(kubeFactories, manageIngress(cc.Config)),
		queue:       cc.NewQueue(QueueName),
		jobManagers: cc.Dialer(),
		canaries:    opts.Canaries,
		autoscaler:  &autoscaling.Runner{Kube: cc.Kube},
	}
	c.podLogs = c.podLogTail
	c.engine = &jobengine.Engine[*v1beta1.FlinkDeployment, v1beta1.FlinkDeploymentSpec]{
		Client: cc.Client, Recorder: cc.Recorder, Caches: caches, Operator: cc.CurrentConfig, Clock: cc.Clock,
		SnapshotCRDMissing: cc.SnapshotCRDMissing, NewTriggerID: cc.NewTriggerID,
		Fault: opts.FaultPoint,
		Writes: func(ns string) jobengine.Writer[*v1beta1.FlinkDeployment] {
			return cc.Client.FlinkV1beta1().FlinkDeployments(ns)
		},
	}
	err := caches.AddEventHandlers(flinkcache.Handlers{
		// A snapshot of a job that turns terminal wakes the job: a periodic
		// slot may have waited for it, history cleanup may have work.
		Snapshots:   c.snapshotHandler(),
		Deployments: c.resourceHandler(),
		// A session cluster being deleted waits for its session jobs.
		SessionJobs: cache.ResourceEventHandlerFuncs{DeleteFunc: c.enqueueSessionCluster},
	})
	if err != nil {
		return nil, err
	}
	if err := c.owned.addEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.enqueueOwner,
		UpdateFunc: func(_, newObj any) { c.enqueueOwner(newObj) },
		DeleteFunc: c.enqueueOwner,
	}); err != nil {
		return nil, err
	}
	// A pod that fails or recovers is seen at once (pods.go).
	if err := c.owned.addPodEventHandler(c.podHandler()); err != nil {
		return nil, err
	}
	return c, nil
}

// enqueueSessionCluster wakes the session cluster of a removed
// FlinkSessionJob.
func (c *Controller) enqueueSessionCluster(obj any) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	if j, ok := obj.(*v1beta1.FlinkSessionJob); ok && j.Spec.DeploymentName != "" {
		c.queue.Add(j.Namespace + "/" + j.Spec.DeploymentName)
	}
}

// enqueueOwner maps an owned ConfigMap, Deployment or Service to the
// FlinkDeployment that owns it (ownedBy's rule: its controller, or, with no
// controller, a FlinkDeployment among its owners, as on the JobManager
// Deployment of a cluster upstream's operator made), so drift (a deleted
// Service, a JobManager becoming ready) is seen at once.
func (c *Controller) enqueueOwner(obj any) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	m, ok := obj.(metav1.Object)
	if !ok {
		return
	}
	if name, ok := owningDeployment(m); ok {
		c.queue.Add(m.GetNamespace() + "/" + name)
	}
}

// owningDeployment is the name of the FlinkDeployment that owns obj by
// ownedBy's rule, whatever its UID (the sync checks it).
func owningDeployment(obj metav1.Object) (string, bool) {
	isDeployment := func(ref metav1.OwnerReference) bool {
		return ref.Kind == "FlinkDeployment" && isFlinkGroup(ref.APIVersion)
	}
	if ref := metav1.GetControllerOf(obj); ref != nil {
		return ref.Name, isDeployment(*ref)
	}
	for _, ref := range obj.GetOwnerReferences() {
		if isDeployment(ref) {
			return ref.Name, true
		}
	}
	return "", false
}

func isFlinkGroup(apiVersion string) bool {
	gv, err := schema.ParseGroupVersion(apiVersion)
	return err == nil && gv.Group == v1beta1.GroupName
}

// Run starts workers and blocks until ctx ends.
func (c *Controller) Run(ctx context.Context, n int) {
	c.Loop(QueueName, "flinkdeployment", c.queue, c.sync, c.Caches.HasSynced, c.owned.hasSynced).Run(ctx, n)
}

// sync is the queue's: a canary resource (pkg/canary) is only noted as
// reconciled, never deployed; every other FlinkDeployment goes to Sync.
func (c *Controller) sync(ctx context.Context, key string) (time.Duration, error) {
	if isCanary, err := canary.Sync(ctx, c.canaries, c.Client, key, c.Caches.Deployment); isCanary {
		return 0, err
	}
	return c.Sync(ctx, key)
}
