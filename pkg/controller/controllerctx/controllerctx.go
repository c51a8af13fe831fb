// Package controllerctx is what every controller of the operator is given:
// clients, informer caches, the event recorder, the clock, the operator-wide
// configuration, how to reach a JobManager and the trigger id source. Test
// hooks are not here: each controller's own Options holds them, nil in
// production.
package controllerctx

import (
	"net/http"

	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"

	flinkcache "github.com/flinkops/flink-operator/pkg/cache"
	clientset "github.com/flinkops/flink-operator/pkg/clients/flink"
	"github.com/flinkops/flink-operator/pkg/clients/kubernetes"
	"github.com/flinkops/flink-operator/pkg/config"
	"github.com/flinkops/flink-operator/pkg/controller/jobmanager"
	"github.com/flinkops/flink-operator/pkg/controller/workers"
	"github.com/flinkops/flink-operator/pkg/endpoints"
	"github.com/flinkops/flink-operator/pkg/reviewstamp"
	"github.com/flinkops/flink-operator/pkg/snapshotrules"
)

// Context is shared by the controllers of one operator process. Zero
// values get defaults (WithDefaults).
type Context struct {
	// Client writes flink.apache.org resources; Kube Kubernetes objects.
	Client clientset.Interface
	Kube   kubernetes.Interface
	// Caches are the informer caches of flink.apache.org resources.
	Caches   *flinkcache.Caches
	Recorder record.EventRecorder
	// Config is the operator-wide configuration the controllers were built
	// with; default config.Defaults. What is read once when a controller,
	// its queue or its informers are built (worker counts, retry pacing,
	// ingress management, snapshot resources and cross-namespace
	// references) comes from here. Per-sync reads use CurrentConfig.
	Config config.Config
	// Live, when set, is the operator configuration in use now: the
	// operator re-reads its config file and swaps it
	// (kubernetes.operator.dynamic.config.enabled). Nil: Config.
	Live *LiveConfig
	// Clock is the time source (a fake one in tests).
	Clock clock.WithTicker
	// Endpoints resolves JobManager REST URLs; default endpoints.Service.
	Endpoints endpoints.Resolver
	// HTTPClient carries Flink REST calls (instrumented by the operator).
	HTTPClient *http.Client
	// JobManagers reads a cluster's live JobManager Deployment and REST
	// Service (they decide the Flink version and port the running cluster
	// speaks); default jobmanager.NoObjects.
	JobManagers jobmanager.Lookup
	// NewTriggerID picks Flink trigger ids; default snapshotrules.NewTriggerID.
	NewTriggerID func() string
	// SnapshotCRDMissing says the FlinkStateSnapshot CRD is not installed:
	// every job runs in legacy mode (Config must then disable
	// kubernetes.operator.snapshot.resource.enabled).
	SnapshotCRDMissing bool
	// ReviewKeys verify the admission webhook's stamp on an object whose
	// reference names another namespace (pkg/reviewstamp); without a
	// valid stamp such a reference is never used.
	ReviewKeys reviewstamp.Keys
}

// WithDefaults fills what is unset.
func (c Context) WithDefaults() Context {
	if c.Config == nil {
		c.Config = config.Defaults()
	}
	if c.Clock == nil {
		c.Clock = clock.RealClock{}
	}
	if c.Endpoints == nil {
		c.Endpoints = endpoints.Service
	}
	if c.HTTPClient == nil {
		c.HTTPClient = http.DefaultClient
	}
	if c.JobManagers == nil {
		c.JobManagers = jobmanager.NoObjects
	}
	if c.NewTriggerID == nil {
		c.NewTriggerID = snapshotrules.NewTriggerID
	}
	return c
}

// CurrentConfig is the operator configuration in use now (Live, else
// Config): what a sync reads its resource defaults from, so that a changed
// operator config file applies without a restart.
func (c Context) CurrentConfig() config.Config {
	if c.Live != nil {
		return c.Live.Load()
	}
	return c.Config
}

// NewQueue is a controller's rate-limited workqueue, on the context's clock;
// failing keys are retried as kubernetes.operator.retry.* say.
func (c Context) NewQueue(name string) workqueue.TypedRateLimitingInterface[string] {
	return workqueue.NewTypedRateLimitingQueueWithConfig[string](
		workers.NewRetryLimiter(c.Config),
		workqueue.TypedRateLimitingQueueConfig[string]{Name: name, Clock: c.Clock},
	)
}

// NewUrgentFirstQueue is NewQueue handing out the keys urgent says are
// urgent before the others (workers.NewUrgentFirstQueue).
func (c Context) NewUrgentFirstQueue(name string, urgent func(key string) bool) workqueue.TypedRateLimitingInterface[string] {
	return workers.NewUrgentFirstQueue(name, c.Clock, workers.NewRetryLimiter(c.Config), urgent)
}

// Loop runs a controller's queue with the context's pacing
// (kubernetes.operator.rate-limiter.*, retry.max.attempts).
func (c Context) Loop(name, keyName string, queue workqueue.TypedRateLimitingInterface[string], sync workers.SyncFunc, synced ...cache.InformerSynced) workers.Loop {
	return workers.Loop{Name: name, KeyName: keyName, Queue: queue, Sync: sync, Synced: synced, Pacing: workers.PacingFrom(c.Config, c.Clock)}
}

// Dialer reaches JobManagers through the context's resolver and HTTP client.
func (c Context) Dialer() jobmanager.Dialer {
	return jobmanager.Dialer{Endpoints: c.Endpoints, HTTPClient: c.HTTPClient}
}
