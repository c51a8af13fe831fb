package sessionjob

import (
	"context"
	"github.com/flinkops/flink-operator/pkg/controller/autoscaling"
	"net/http"
	"sync"
	"time"

	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	flinkcache "github.com/flinkops/flink-operator/pkg/cache"
	"github.com/flinkops/flink-operator/pkg/canary"
	"github.com/flinkops/flink-operator/pkg/controller/controllerctx"
	"github.com/flinkops/flink-operator/pkg/controller/jobengine"
	"github.com/flinkops/flink-operator/pkg/controller/jobmanager"
)

// QueueName names the controller's workqueue (and its metrics).
const QueueName = "flinksessionjob"

// Finalizer holds a FlinkSessionJob until its job is stopped.
const Finalizer = v1beta1.SessionJobFinalizer

// Options are this controller's own settings; what all controllers share
// is a controllerctx.Context.
type Options struct {
	// ArtifactClient downloads http(s) jarURIs; default a client with a
	// 5-minute timeout.
	ArtifactClient *http.Client
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
	// Canaries tracks canary resources (pkg/canary), which are never
	// submitted; nil: they are skipped, not tracked.
	Canaries *canary.Monitor
}

// Controller reconciles FlinkSessionJobs: jobs submitted through the REST
// API of a session cluster (a FlinkDeployment without spec.job).
type Controller struct {
	controllerctx.Context // clients, caches, recorder, clock, configuration

	queue          workqueue.TypedRateLimitingInterface[string]
	dialer         jobmanager.Dialer
	artifactClient *http.Client
	faultPoint     func(key, point string)
	engine         *jobengine.Engine[*v1beta1.FlinkSessionJob, v1beta1.FlinkSessionJobSpec]
	canaries       *canary.Monitor
	// autoscaler runs the session jobs' job autoscaler.
	autoscaler *autoscaling.Runner

	// submissions are the background jar submissions (submissions.go).
	submissions *submissions
	// clusterMisses counts consecutive syncs of a key that found no usable
	// session cluster, for the retry backoff (memory only: a restart
	// retries at once, which is harmless).
	clusterMisses sync.Map
}

// New creates the controller and registers its event handlers on the
// FlinkSessionJob, FlinkDeployment and FlinkStateSnapshot informers.
func New(cc controllerctx.Context, opts Options) (*Controller, error) {
	cc = cc.WithDefaults()
	caches := cc.Caches
	if opts.ArtifactClient == nil {
		opts.ArtifactClient = &http.Client{Timeout: 5 * time.Minute}
	}
	if opts.MaxConcurrentSubmissions <= 0 {
		opts.MaxConcurrentSubmissions = defaultMaxSubmissions
	}
	if opts.MaxJarBytes <= 0 {
		opts.MaxJarBytes = defaultMaxJarBytes
	}
	c := &Controller{
		Context:        cc,
		queue:          cc.NewQueue(QueueName),
		dialer:         cc.Dialer(),
		artifactClient: opts.ArtifactClient,
		faultPoint:     opts.FaultPoint,
		submissions:    newSubmissions(opts.MaxConcurrentSubmissions, opts.MaxJarBytes, opts.JarDir),
		canaries:       opts.Canaries,
		autoscaler:     &autoscaling.Runner{Kube: cc.Kube},
	}
	c.engine = &jobengine.Engine[*v1beta1.FlinkSessionJob, v1beta1.FlinkSessionJobSpec]{
		Client: cc.Client, Recorder: cc.Recorder, Caches: caches, Operator: cc.CurrentConfig, Clock: cc.Clock,
		SnapshotCRDMissing: cc.SnapshotCRDMissing, NewTriggerID: cc.NewTriggerID,
		Fault: opts.FaultPoint,
		Writes: func(ns string) jobengine.Writer[*v1beta1.FlinkSessionJob] {
			return cc.Client.FlinkV1beta1().FlinkSessionJobs(ns)
		},
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
	jobs, err := c.Caches.SessionJobsOfCluster(n.Namespace, n.Name)
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
	c.Loop(QueueName, "flinksessionjob", c.queue, c.sync, c.Caches.HasSynced, c.JobManagers.HasSynced).Run(ctx, n)
}

// sync is the queue's: a canary resource (pkg/canary) is only noted as
// reconciled, never submitted; every other FlinkSessionJob goes to Sync.
func (c *Controller) sync(ctx context.Context, key string) (time.Duration, error) {
	if isCanary, err := canary.Sync(ctx, c.canaries, c.Client, key, c.Caches.SessionJob); isCanary {
		return 0, err
	}
	return c.Sync(ctx, key)
}

func (c *Controller) fault(key, point string) {
	if c.faultPoint != nil {
		c.faultPoint(key, point)
	}
}
