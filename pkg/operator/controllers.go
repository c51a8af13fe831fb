package operator

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	flinkcache "github.com/flinkops/flink-operator/pkg/cache"
	"github.com/flinkops/flink-operator/pkg/config"
	"github.com/flinkops/flink-operator/pkg/controller/bluegreen"
	"github.com/flinkops/flink-operator/pkg/controller/controllerctx"
	"github.com/flinkops/flink-operator/pkg/controller/deployment"
	"github.com/flinkops/flink-operator/pkg/controller/jobmanager"
	"github.com/flinkops/flink-operator/pkg/controller/sessionjob"
	"github.com/flinkops/flink-operator/pkg/controller/snapshot"
	"github.com/flinkops/flink-operator/pkg/controller/workers"
	kubescheme "github.com/flinkops/flink-operator/pkg/generated/kube/kubernetes/scheme"
	listers "github.com/flinkops/flink-operator/pkg/generated/listers/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/metrics"
)

// controllers is the set of controllers one operator process runs.
type controllers struct {
	broadcaster record.EventBroadcaster
	snapshots   *snapshot.Controller
	deployments *deployment.Controller
	sessionJobs *sessionjob.Controller
	blueGreens  *bluegreen.Controller
	workers     int
	unregister  []func()
}

// eventCacheSize is how many objects the event recorder's spam filter and
// aggregation track.
const eventCacheSize = 256

func newControllers(ctx context.Context, cl clients, inf *Informers, opts *runState) (*controllers, error) {
	kube, flink := cl.kube, cl.flink
	scheme := runtime.NewScheme()
	if err := kubescheme.AddToScheme(scheme); err != nil {
		return nil, err
	}
	if err := v1beta1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	broadcaster, recorder := newEventRecorder(ctx, scheme, eventSink{client: cl.events})

	parallelism, err := opts.Config.Int(config.KeyReconcileParallelism)
	if err != nil {
		return nil, err
	}
	if !opts.snapshotCRDMissing {
		inf.SnapshotsWithoutNamespaceIndex()
	}
	caches, err := flinkcache.NewWithOptions(inf.Flink, flinkcache.Options{
		WithoutSnapshots: opts.snapshotCRDMissing,
		WithBlueGreen:    !opts.blueGreenCRDMissing && enabledBlueGreen(opts.Controllers),
	})
	if err != nil {
		return nil, err
	}
	flinkTransport := workers.MarkingTransport(metrics.InstrumentFlinkREST(http.DefaultTransport))
	if opts.fenceFlinkREST != nil {
		flinkTransport = opts.fenceFlinkREST(flinkTransport)
	}
	httpClient := &http.Client{Transport: flinkTransport}
	endpoints, err := endpointResolver(opts.FlinkEndpoint, inf)
	if err != nil {
		return nil, err
	}
	// The live JobManager Deployments and REST Services, from the informers
	// the FlinkDeployment controller watches too: the snapshot and session
	// job controllers reach a cluster in the version it runs.
	cc := controllerctx.Context{
		Client: flink, Kube: kube, Caches: caches, Recorder: recorder, Config: opts.Config,
		Endpoints: endpoints, HTTPClient: httpClient, JobManagers: jobmanager.NewLookup(inf.Kube),
		SnapshotCRDMissing: opts.snapshotCRDMissing, ReviewKeys: reviewKeys(opts.reviewKey), Live: opts.live,
	}
	snapshotOpts := snapshot.Options{AdmissionGuard: snapshotGuard(cc.ReviewKeys)}
	// Test fault points: none outside the faultinject build (faults_*.go).
	var jobFault func(key, point string)
	if err := installFaults(ctx, &snapshotOpts, &jobFault); err != nil {
		return nil, err
	}
	enabled, err := enabledControllers(opts.Controllers)
	if err != nil {
		return nil, err
	}
	c := &controllers{broadcaster: broadcaster, workers: parallelism}
	// Lifecycle metrics, from the FlinkDeployment and FlinkSessionJob
	// informers (pkg/metrics/lifecycle.go).
	lt, err := metrics.NewLifecycleTracker(opts.Config, clock.RealClock{})
	if err != nil {
		return nil, err
	}
	c.unregister = append(c.unregister, lt.Unregister)
	if err := caches.AddEventHandlers(flinkcache.Handlers{Deployments: lt.Handler(), SessionJobs: lt.Handler()}); err != nil {
		return nil, err
	}
	// Resource counts, from the FlinkDeployment and FlinkSessionJob
	// informers at scrape time (pkg/metrics/resources.go).
	if on, err := opts.Config.Bool(config.KeyResourceMetricsEnabled); err != nil {
		return nil, err
	} else if on {
		c.unregister = append(c.unregister, metrics.RegisterResourceCounter(inf.resourceListers()))
	}
	if opts.snapshotCRDMissing {
		// No FlinkStateSnapshot CRD: nothing to reconcile, and no informer
		// to read it from (see snapshotcrd.go).
		delete(enabled, snapshot.QueueName)
	}
	if enabled[snapshot.QueueName] {
		if c.snapshots, err = snapshot.New(cc, snapshotOpts); err != nil {
			return nil, fmt.Errorf("creating snapshot controller: %w", err)
		}
		c.unregister = append(c.unregister, metrics.RegisterSnapshotCounter(c.snapshots.CountSnapshots))
	}
	if enabled[deployment.QueueName] {
		c.deployments, err = deployment.New(cc, inf.Kube, deployment.Options{Canaries: opts.canaries, FaultPoint: jobFault})
		if err != nil {
			return nil, fmt.Errorf("creating FlinkDeployment controller: %w", err)
		}
	}
	if enabled[sessionjob.QueueName] {
		c.sessionJobs, err = sessionjob.New(cc, sessionjob.Options{Canaries: opts.canaries, FaultPoint: jobFault})
		if err != nil {
			return nil, fmt.Errorf("creating FlinkSessionJob controller: %w", err)
		}
	}
	if enabled[bluegreen.QueueName] && !opts.blueGreenCRDMissing {
		if c.blueGreens, err = bluegreen.New(cc, bluegreen.Options{}); err != nil {
			return nil, fmt.Errorf("creating FlinkBlueGreenDeployment controller: %w", err)
		}
		if on, err := opts.Config.Bool(config.KeyResourceMetricsEnabled); err != nil {
			return nil, err
		} else if on {
			var l []listers.FlinkBlueGreenDeploymentLister
			for _, f := range inf.Flink {
				l = append(l, f.Flink().V1beta1().FlinkBlueGreenDeployments().Lister())
			}
			c.unregister = append(c.unregister, metrics.RegisterBlueGreenCounter(l))
		}
	}
	return c, nil
}

// enabledBlueGreen: --controllers runs the blue/green controller (its
// informers are requested only then).
func enabledBlueGreen(names []string) bool {
	enabled, err := enabledControllers(names)
	return err == nil && enabled[bluegreen.QueueName]
}

// resourceListers are the FlinkDeployment and FlinkSessionJob listers of
// every watched namespace: the informers the caches requested.
func (i *Informers) resourceListers() metrics.ResourceListers {
	var l metrics.ResourceListers
	for _, f := range i.Flink {
		v := f.Flink().V1beta1()
		l.Deployments = append(l.Deployments, v.FlinkDeployments().Lister())
		l.SessionJobs = append(l.SessionJobs, v.FlinkSessionJobs().Lister())
	}
	return l
}

// kubeClientMetrics installs client-go's request metrics (rest_client_*)
// when kubernetes.operator.kubernetes.client.metrics.enabled is true. Read
// at start: client-go takes its metric hooks once per process.
func kubeClientMetrics(cfg config.Config, register func()) error {
	on, err := cfg.Bool(config.KeyKubernetesClientMetricsEnabled)
	if err != nil {
		return err
	}
	if on {
		register()
	}
	return nil
}

// newEventRecorder builds the controllers' event recorder: events go to
// sink (the API server) and to the log of ctx. Each recorded event is one
// info line (verbosity 0: reason, object, message as recorded), as upstream
// logs every event it emits; its e2e greps the operator log for "Job status
// changed from .* to FINISHED". The log watcher sees each event as
// recorded, before the sink's correlation: repeats patched into one Event
// and events aggregated "(combined from similar events)" are still one line
// each with their own message, and the spam filter drops writes, not lines.
func newEventRecorder(ctx context.Context, scheme *runtime.Scheme, sink record.EventSink) (record.EventBroadcaster, record.EventRecorderLogger) {
	// The recorder's spam filter and aggregation remember the last
	// eventCacheSize objects (client-go's default, 4,096, holds ~4.5 MiB
	// for objects that mostly emit one event in their life).
	broadcaster := record.NewBroadcaster(record.WithContext(ctx), record.WithCorrelatorOptions(record.CorrelatorOptions{LRUCacheSize: eventCacheSize}))
	broadcaster.StartStructuredLogging(0)
	broadcaster.StartRecordingToSink(sink)
	return broadcaster, broadcaster.NewRecorder(scheme, corev1.EventSource{Component: "flink-operator"})
}

// ControllerNames lists the controllers --controllers can choose from.
var ControllerNames = []string{snapshot.QueueName, deployment.QueueName, sessionjob.QueueName, bluegreen.QueueName}

// enabledControllers reads --controllers: empty or "*" means all.
func enabledControllers(names []string) (map[string]bool, error) {
	enabled := map[string]bool{}
	for _, n := range names {
		if n == "*" {
			names = nil
			break
		}
		if !slices.Contains(ControllerNames, n) {
			return nil, fmt.Errorf("unknown controller %q in --controllers (known: %s)", n, strings.Join(ControllerNames, ", "))
		}
		enabled[n] = true
	}
	if len(names) == 0 {
		for _, n := range ControllerNames {
			enabled[n] = true
		}
	}
	return enabled, nil
}

// run runs every controller until ctx ends.
func (c *controllers) run(ctx context.Context) {
	var wg sync.WaitGroup
	if c.snapshots != nil {
		wg.Go(func() { c.snapshots.Run(ctx, c.workers) })
	}
	if c.deployments != nil {
		wg.Go(func() { c.deployments.Run(ctx, c.workers) })
	}
	if c.sessionJobs != nil {
		wg.Go(func() { c.sessionJobs.Run(ctx, c.workers) })
	}
	if c.blueGreens != nil {
		wg.Go(func() { c.blueGreens.Run(ctx, c.workers) })
	}
	wg.Wait()
}

func (c *controllers) shutdown() {
	for _, f := range c.unregister {
		f()
	}
	c.broadcaster.Shutdown()
}
