package deployment

import (
	"context"
	"net/http"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	kubeinformers "k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	flinkcache "github.com/flinkops/flink-operator/pkg/cache"
	"github.com/flinkops/flink-operator/pkg/config"
	"github.com/flinkops/flink-operator/pkg/controller/jobengine"
	"github.com/flinkops/flink-operator/pkg/controller/jobmanager"
	"github.com/flinkops/flink-operator/pkg/controller/workers"
	"github.com/flinkops/flink-operator/pkg/endpoints"
	clientset "github.com/flinkops/flink-operator/pkg/generated/clientset/versioned"
	"github.com/flinkops/flink-operator/pkg/snapshots"
	"github.com/flinkops/flink-operator/pkg/webhook/review"
)

// QueueName names the controller's workqueue (and its metrics).
const QueueName = "flinkdeployment"

// Finalizer holds a FlinkDeployment until the operator has had its chance
// to take a savepoint on deletion (upstream's JOSDK-derived name).
const Finalizer = "flinkdeployments.flink.apache.org/finalizer"

// Options configure the controller; zero values get defaults.
type Options struct {
	// Config is the operator-wide configuration.
	Config config.Config
	// Clock is the time source (a fake one in tests).
	Clock clock.WithTicker
	// Endpoints resolves JobManager REST URLs; default endpoints.Service.
	Endpoints endpoints.Resolver
	// HTTPClient carries Flink REST calls (instrumented by the operator).
	HTTPClient *http.Client
	// NewTriggerID picks stop-with-savepoint trigger ids; default
	// snapshots.NewTriggerID.
	NewTriggerID func() string
	// FaultPoint, when set, is called at every point where a crash must
	// be survivable: right after a status write ("status-written"), after
	// a write done before it ("pre-commit:<what>") and after each action
	// that follows it ("action:<what>"). It exists for crash tests.
	FaultPoint func(key, point string)
	// SnapshotCRDMissing says the FlinkStateSnapshot CRD is not installed:
	// the operator runs every job in legacy mode (Config must then disable
	// kubernetes.operator.snapshot.resource.enabled) and each job gets one
	// SnapshotResourcesDisabled Warning event.
	SnapshotCRDMissing bool
	// ReviewKeys verify the admission webhook's stamp on an object whose
	// spec.job.initialStateSnapshotRef names another namespace
	// (pkg/webhook/review); without a valid stamp such a reference is never
	// used.
	ReviewKeys review.Keys
}

// Controller reconciles FlinkDeployments in standalone mode.
type Controller struct {
	client   clientset.Interface
	kube     kubernetes.Interface
	caches   *flinkcache.Caches
	owned    *ownedCache
	recorder record.EventRecorder
	queue    workqueue.TypedRateLimitingInterface[string]

	cfg         config.Config
	clock       clock.WithTicker
	jobManagers jobmanager.Dialer
	engine      *jobengine.Engine[*v1beta1.FlinkDeployment, v1beta1.FlinkDeploymentSpec]

	reviewKeys review.Keys
}

// New creates the controller and registers its event handlers: on the
// FlinkDeployment informers of caches, and on the Deployment, Service and
// ConfigMap informers of kubeFactories (keyed by namespace like the flink
// factories, "" = all), which the operator filters to the objects it builds.
func New(client clientset.Interface, kube kubernetes.Interface, caches *flinkcache.Caches,
	kubeFactories map[string]kubeinformers.SharedInformerFactory, recorder record.EventRecorder, opts Options) (*Controller, error) {
	if opts.Config == nil {
		opts.Config = config.Defaults()
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.Endpoints == nil {
		opts.Endpoints = endpoints.Service
	}
	if opts.HTTPClient == nil {
		opts.HTTPClient = http.DefaultClient
	}
	if opts.NewTriggerID == nil {
		opts.NewTriggerID = snapshots.NewTriggerID
	}
	c := &Controller{
		client:   client,
		kube:     kube,
		caches:   caches,
		owned:    newOwnedCache(kubeFactories),
		recorder: recorder,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: QueueName, Clock: opts.Clock},
		),
		cfg:         opts.Config,
		clock:       opts.Clock,
		jobManagers: jobmanager.Dialer{Endpoints: opts.Endpoints, HTTPClient: opts.HTTPClient},

		reviewKeys: opts.ReviewKeys,
	}
	c.engine = &jobengine.Engine[*v1beta1.FlinkDeployment, v1beta1.FlinkDeploymentSpec]{
		Client: client, Recorder: recorder, Caches: caches, Operator: opts.Config, Clock: opts.Clock,
		SnapshotCRDMissing: opts.SnapshotCRDMissing, NewTriggerID: opts.NewTriggerID,
		Fault: opts.FaultPoint,
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
// FlinkDeployment that controls it, so drift (a deleted Service, a
// JobManager becoming ready) is seen at once.
func (c *Controller) enqueueOwner(obj any) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	m, ok := obj.(metav1.Object)
	if !ok {
		return
	}
	ref := metav1.GetControllerOf(m)
	if ref == nil || ref.Kind != "FlinkDeployment" || !isFlinkGroup(ref.APIVersion) {
		return
	}
	c.queue.Add(m.GetNamespace() + "/" + ref.Name)
}

func isFlinkGroup(apiVersion string) bool {
	gv, err := schema.ParseGroupVersion(apiVersion)
	return err == nil && gv.Group == v1beta1.GroupName
}

// Run starts workers and blocks until ctx ends.
func (c *Controller) Run(ctx context.Context, n int) {
	workers.Loop{
		Name: QueueName, KeyName: "flinkdeployment", Queue: c.queue, Sync: c.Sync,
		Synced: []cache.InformerSynced{c.caches.HasSynced, c.owned.hasSynced},
	}.Run(ctx, n)
}
