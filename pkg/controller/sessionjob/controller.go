package sessionjob

import (
	"context"
	"net/http"
	"sync"
	"time"

	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
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
const QueueName = "flinksessionjob"

// Finalizer holds a FlinkSessionJob until its job is stopped (upstream's
// JOSDK-derived name).
const Finalizer = "flinksessionjobs.flink.apache.org/finalizer"

// Options configure the controller; zero values get defaults.
type Options struct {
	// Config is the operator-wide configuration.
	Config config.Config
	// Clock is the time source (a fake one in tests).
	Clock clock.WithTicker
	// Endpoints resolves the session cluster's JobManager REST URL;
	// default endpoints.Service.
	Endpoints endpoints.Resolver
	// HTTPClient carries Flink REST calls (instrumented by the operator).
	HTTPClient *http.Client
	// ArtifactClient downloads http(s) jarURIs; default a client with a
	// 5-minute timeout.
	ArtifactClient *http.Client
	// NewTriggerID picks stop-with-savepoint trigger ids; default
	// snapshots.NewTriggerID.
	NewTriggerID func() string
	// FaultPoint, when set, is called at every point where a crash must be
	// survivable: after a pre-commit write ("pre-commit:<what>"), after the
	// status write ("status-written") and after each action that follows
	// ("action:<what>"), and right after a submission ("submitted"). For
	// crash tests.
	FaultPoint func(key, point string)
	// MaxConcurrentSubmissions bounds the background submissions (jar
	// download, upload, run) running at once; more wait for a slot.
	// Default 4.
	MaxConcurrentSubmissions int
	// MaxJarBytes bounds one downloaded jar; with MaxConcurrentSubmissions
	// it bounds the disk the downloads use. Default 1 GiB.
	MaxJarBytes int64
	// JarDir holds downloaded jars until they are uploaded; default the
	// system's temporary directory.
	JarDir string
	// SnapshotCRDMissing says the FlinkStateSnapshot CRD is not installed:
	// upgrade and deletion savepoints are recorded in the legacy
	// jobStatus.savepointInfo instead.
	SnapshotCRDMissing bool
	// ReviewKeys verify the admission webhook's stamp on an object whose
	// spec.job.initialStateSnapshotRef names another namespace
	// (pkg/webhook/review); without a valid stamp such a reference is never
	// used.
	ReviewKeys review.Keys
	// JobManagers reads the session cluster's live JobManager Deployment
	// and REST Service (pkg/controller/jobmanager: they decide the Flink
	// version and port the cluster speaks); default jobmanager.NoObjects.
	JobManagers jobmanager.Lookup
}

// Controller reconciles FlinkSessionJobs: jobs submitted through the REST
// API of a session cluster (a FlinkDeployment without spec.job).
type Controller struct {
	client   clientset.Interface
	caches   *flinkcache.Caches
	recorder record.EventRecorder
	queue    workqueue.TypedRateLimitingInterface[string]

	cfg            config.Config
	clock          clock.WithTicker
	jobManagers    jobmanager.Lookup
	dialer         jobmanager.Dialer
	artifactClient *http.Client
	faultPoint     func(key, point string)
	engine         *jobengine.Engine[*v1beta1.FlinkSessionJob, v1beta1.FlinkSessionJobSpec]

	reviewKeys review.Keys
	// submissions are the background jar submissions (submissions.go).
	submissions *submissions
	// clusterMisses counts consecutive syncs of a key that found no usable
	// session cluster, for the retry backoff (memory only: a restart
	// retries at once, which is harmless).
	clusterMisses sync.Map
}

// New creates the controller and registers its event handlers on the
// FlinkSessionJob, FlinkDeployment and FlinkStateSnapshot informers.
func New(client clientset.Interface, caches *flinkcache.Caches, recorder record.EventRecorder, opts Options) (*Controller, error) {
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
	if opts.JobManagers == nil {
		opts.JobManagers = jobmanager.NoObjects
	}
	if opts.ArtifactClient == nil {
		opts.ArtifactClient = &http.Client{Timeout: 5 * time.Minute}
	}
	if opts.NewTriggerID == nil {
		opts.NewTriggerID = snapshots.NewTriggerID
	}
	if opts.MaxConcurrentSubmissions <= 0 {
		opts.MaxConcurrentSubmissions = defaultMaxSubmissions
	}
	if opts.MaxJarBytes <= 0 {
		opts.MaxJarBytes = defaultMaxJarBytes
	}
	c := &Controller{
		client:   client,
		caches:   caches,
		recorder: recorder,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: QueueName, Clock: opts.Clock},
		),
		cfg:            opts.Config,
		clock:          opts.Clock,
		jobManagers:    opts.JobManagers,
		dialer:         jobmanager.Dialer{Endpoints: opts.Endpoints, HTTPClient: opts.HTTPClient},
		artifactClient: opts.ArtifactClient,
		faultPoint:     opts.FaultPoint,
		reviewKeys:     opts.ReviewKeys,
		submissions:    newSubmissions(opts.MaxConcurrentSubmissions, opts.MaxJarBytes, opts.JarDir),
	}
	c.engine = &jobengine.Engine[*v1beta1.FlinkSessionJob, v1beta1.FlinkSessionJobSpec]{
		Client: client, Recorder: recorder, Caches: caches, Operator: opts.Config, Clock: opts.Clock,
		SnapshotCRDMissing: opts.SnapshotCRDMissing, NewTriggerID: opts.NewTriggerID,
		Fault: opts.FaultPoint,
	}
	err := caches.AddEventHandlers(flinkcache.Handlers{
		SessionJobs: jobengine.ResourceHandler(c.queue.Add),
		// The session cluster becoming ready (or going away, or changing)
		// wakes its jobs.
		Deployments: cache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj any) { c.clusterChanged(nil, obj) },
			UpdateFunc: c.clusterChanged,
			DeleteFunc: func(obj any) { c.clusterChanged(nil, obj) },
		},
		// A snapshot that turns terminal or stops being in flight wakes its
		// job: a periodic slot may fire, history cleanup may have work.
		Snapshots: jobengine.SnapshotHandler(v1beta1.JobReferenceKindSessionJob, c.queue.Add),
	})
	if err != nil {
		return nil, err
	}
	return c, nil
}

// clusterChanged wakes the session jobs of a FlinkDeployment that appeared,
// went away, or changed in a way that matters to them: its spec, its
// JobManager's readiness, or its deletion. Status noise (job counts,
// conditions' timestamps) does not.
func (c *Controller) clusterChanged(oldObj, newObj any) {
	if tomb, ok := newObj.(cache.DeletedFinalStateUnknown); ok {
		newObj = tomb.Obj
	}
	n, ok := newObj.(*v1beta1.FlinkDeployment)
	if !ok {
		return
	}
	if o, ok := oldObj.(*v1beta1.FlinkDeployment); ok && o.ResourceVersion != n.ResourceVersion &&
		o.Generation == n.Generation && o.DeletionTimestamp.Equal(n.DeletionTimestamp) &&
		o.Status.JobManagerDeploymentStatus == n.Status.JobManagerDeploymentStatus &&
		o.Status.ReconciliationStatus.State == n.Status.ReconciliationStatus.State {
		return
	}
	jobs, err := c.caches.SessionJobsOfCluster(n.Namespace, n.Name)
	if err != nil {
		utilruntime.HandleError(err)
		return
	}
	for _, j := range jobs {
		c.queue.Add(j.Namespace + "/" + j.Name)
	}
}

// Run starts workers and blocks until ctx ends, then stops the background
// submissions (a stopped operator acts no more).
func (c *Controller) Run(ctx context.Context, n int) {
	defer c.submissions.stop()
	workers.Loop{
		Name: QueueName, KeyName: "flinksessionjob", Queue: c.queue, Sync: c.Sync,
		Synced: []cache.InformerSynced{c.caches.HasSynced, c.jobManagers.HasSynced},
	}.Run(ctx, n)
}

func (c *Controller) fault(key, point string) {
	if c.faultPoint != nil {
		c.faultPoint(key, point)
	}
}
