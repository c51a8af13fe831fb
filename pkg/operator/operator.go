package operator

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	flinkv1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/canary"
	clientset "github.com/flinkops/flink-operator/pkg/clients/flink"
	"github.com/flinkops/flink-operator/pkg/clients/kubernetes"
	"github.com/flinkops/flink-operator/pkg/config"
	"github.com/flinkops/flink-operator/pkg/controller/controllerctx"
	"github.com/flinkops/flink-operator/pkg/metrics"
	"github.com/flinkops/flink-operator/pkg/webhook"
)

// Run runs the operator until ctx is cancelled. Start-up problems (no API
// server, CRDs missing, a port taken) come back as one error with context.
// Without the FlinkStateSnapshot CRD it runs in legacy mode until the CRD
// appears, then starts over in-process with snapshot resources (see
// snapshotcrd.go).
//
// With kubernetes.operator.dynamic.config.enabled the --config file is read
// again while it runs (dynamicconfig.go); a change of the watched namespaces
// with kubernetes.operator.dynamic.namespaces.enabled starts over the same
// way, on the new namespaces.
func Run(parent context.Context, opts Options) error {
	if err := kubeClientMetrics(opts.Config, metrics.RegisterKubeClientMetrics); err != nil {
		return err
	}
	latest := &latestConfig{cfg: opts.Config}
	for {
		opts = withLatestConfig(opts, latest)
		ctx, cancel := context.WithCancelCause(parent)
		err := run(ctx, cancel, &runState{Options: opts, latest: latest})
		cause := context.Cause(ctx)
		cancel(nil)
		if errors.Is(cause, ErrWatchedNamespacesChanged) && parent.Err() == nil {
			klog.FromContext(parent).Info("Restarting the controllers on the new watched namespaces")
			continue
		}
		if errors.Is(cause, ErrBlueGreenCRDInstalled) && parent.Err() == nil {
			klog.FromContext(parent).Info("Restarting the controllers with FlinkBlueGreenDeployments enabled")
			continue
		}
		if errors.Is(cause, ErrSnapshotCRDInstalled) && parent.Err() == nil {
			// Start over in this process: fresh informers (now including
			// FlinkStateSnapshots), fresh queues, snapshot controller on.
			klog.FromContext(parent).Info("Restarting the controllers with FlinkStateSnapshot resources enabled")
			continue
		}
		return err
	}
}

// runState is one internal run of the operator: the user's Options as this
// run applies them (Config and Namespaces from the --config file's latest
// valid contents, Config in legacy mode without the FlinkStateSnapshot CRD),
// and what start-up decides and the parts built later read. None of it is
// set by a user, so none of it is in Options.
type runState struct {
	Options

	// latest carries the last valid --config contents across internal
	// runs (set by Run, dynamicconfig.go).
	latest *latestConfig
	// snapshotCRDMissing is set when the FlinkStateSnapshot CRD is not
	// installed: legacy mode, no snapshot informer nor controller.
	snapshotCRDMissing bool
	// blueGreenCRDMissing is set when the FlinkBlueGreenDeployment CRD is
	// not installed: no blue/green informer nor controller.
	blueGreenCRDMissing bool
	// crdPoll overrides the CRD discovery poll interval (tests).
	crdPoll time.Duration
	// live is the configuration the controllers and the webhook read at
	// each sync and admission (dynamicconfig.go).
	live *controllerctx.LiveConfig
	// canaries are the canary resources the job controllers note and the
	// liveness probe checks (pkg/canary).
	canaries *canary.Monitor
	// reviewKey is set when cross-namespace references are enabled: the
	// key the webhook stamps reviewed references with and the controllers
	// verify them with (admissionguard.go).
	reviewKey *webhook.ReviewKey
	// fenceFlinkREST is set under leader election: it wraps the Flink REST
	// transport so that a replica whose lease may have passed to another
	// sends no state-changing request to a JobManager either.
	fenceFlinkREST func(http.RoundTripper) http.RoundTripper
}

// run is one internal run: its start-up in phases, each a method below in
// the order run calls them, with why it comes where it does. The deferred
// steps stop the run in the reverse order: the informers, then the
// controllers' event recorder and metrics, then the HTTP servers (so that
// the probes and the webhook answer until the end).
func run(ctx context.Context, cancel context.CancelCauseFunc, r *runState) error {
	limitMemory(ctx)
	api, snapshotCRD, err := r.connect(ctx)
	if err != nil {
		return err
	}
	if !snapshotCRD {
		r.enterLegacyMode(ctx, cancel, api.kube)
	}
	if err := r.checkBlueGreenCRD(ctx, cancel, restDiscovery{client: api.kube.CoreV1().RESTClient()}); err != nil {
		return err
	}
	r.watchConfig(ctx, cancel)
	inf, err := r.newInformers(ctx, api)
	if err != nil {
		return err
	}
	srv, err := r.startServers(ctx, api, inf)
	if err != nil {
		return err
	}
	defer srv.shutdown(ctx, r.ShutdownTimeout)
	election, ctrlConfig, err := r.prepareElection(api.config)
	if err != nil {
		return err
	}
	ctrls, cl, err := r.buildControllers(ctx, ctrlConfig, inf)
	if err != nil {
		return err
	}
	defer ctrls.shutdown()
	// Start the informers only now: the webhook and the controllers have
	// requested every informer they read, and a factory starts only the
	// informers requested before its Start.
	inf.Start(ctx.Done())
	defer inf.Shutdown()
	if synced, err := r.waitForCaches(ctx, inf, srv.ready); !synced {
		return err
	}
	return r.runControllers(ctx, api.kube, election, ctrls, cl)
}

// limitMemory sets Go's memory limit from the container's (memlimit.go).
// First: the limit paces the garbage collector for everything the run
// allocates after, the informer caches the most.
func limitMemory(ctx context.Context) {
	if limit := setMemoryLimitFromCgroup(); limit > 0 {
		klog.FromContext(ctx).Info("Go memory limit set from the container's", "bytes", limit)
	}
}

// apiServer is the API server as every replica reads it, leader or not:
// its configuration and the unfenced clients of the start-up checks, the
// informers, the webhook and the leader election.
type apiServer struct {
	config *rest.Config
	kube   kubernetes.Interface
	flink  clientset.Interface
}

// connect builds the unfenced clients and checks that the API server
// answers and serves the job CRDs (checkAPIServer); it reports whether the
// FlinkStateSnapshot CRD is served. Before anything else: every later phase
// needs the API server, and a wrong kubeconfig or a missing CRD should stop
// start-up with one clear error before a port is bound or anything is
// written.
func (r *runState) connect(ctx context.Context) (api apiServer, snapshotCRD bool, err error) {
	restConfig, err := loadRESTConfig(r.Kubeconfig)
	if err != nil {
		return api, false, err
	}
	restConfig.UserAgent = "flink-operator"
	// Uncompressed responses: every watch stream (one per namespace and
	// type) would otherwise hold a gzip reader of ~45 KB for good, and the
	// API server is near (make bench-scale, docs/performance.md).
	restConfig.DisableCompression = true
	restConfig.QPS, restConfig.Burst = r.KubeAPIQPS, r.KubeAPIBurst
	api.config = restConfig
	if api.kube, err = kubernetes.NewForConfig(restConfig); err != nil {
		return api, false, fmt.Errorf("creating Kubernetes client: %w", err)
	}
	if api.flink, err = clientset.NewForConfig(restConfig); err != nil {
		return api, false, fmt.Errorf("creating flink.apache.org client: %w", err)
	}
	snapshotCRD, err = checkAPIServer(ctx, api.kube, restConfig.Host, r.ConnectTimeout)
	return api, snapshotCRD, err
}

// enterLegacyMode runs this run without the FlinkStateSnapshot CRD
// (snapshotcrd.go): the legacy configuration, and a poll that ends the run
// when the CRD appears. Right after connect, which found the CRD missing,
// and before the configuration goes live: the live configuration, the
// review key, the informers and the controllers all start from the legacy
// configuration.
func (r *runState) enterLegacyMode(ctx context.Context, cancel context.CancelCauseFunc, kube kubernetes.Interface) {
	logger := klog.FromContext(ctx)
	logger.Error(nil, snapshotCRDMissingLog)
	r.Config = legacyConfig(r.Config)
	r.snapshotCRDMissing = true
	go watchSnapshotCRD(ctx, restDiscovery{client: kube.CoreV1().RESTClient()}, snapshotCRDPollInterval, func() {
		logger.Info("FlinkStateSnapshot CRD is now installed: switching to FlinkStateSnapshot resources")
		cancel(ErrSnapshotCRDInstalled)
	})
}

// watchConfig makes this run's configuration the live one and, with
// dynamic configuration, watches the --config file (dynamicconfig.go),
// ending the run when the watched namespaces change. After legacy mode is
// decided (a reloaded file stays in it) and before the webhook and the
// controllers, which read the live configuration.
func (r *runState) watchConfig(ctx context.Context, cancel context.CancelCauseFunc) {
	r.live = controllerctx.NewLiveConfig(r.Config)
	if w := newConfigWatcher(ctx, r, func() { cancel(ErrWatchedNamespacesChanged) }); w != nil {
		go w.run(ctx, clock.RealClock{})
	}
}

// newInformers builds the shared informer factories of the watched
// namespaces, filtered by the configured label selector; nothing is
// started yet. Before the webhook and the controllers, which request their
// informers from these factories.
func (r *runState) newInformers(ctx context.Context, api apiServer) (*Informers, error) {
	sel := r.Config.String(config.KeyLabelSelector)
	inf, err := NewInformersWithSelector(api.kube, api.flink, r.Namespaces, r.ResyncPeriod, sel)
	if err != nil {
		return nil, err
	}
	if sel != "" {
		klog.FromContext(ctx).Info("Watching only the custom resources matching the label selector", "labelSelector", sel)
	}
	return inf, nil
}

// httpServers are the servers this run serves, and the readiness /readyz
// reports.
type httpServers struct {
	ready   *readiness
	serving []*server
}

// startServers binds the probe, metrics and webhook ports, with what they
// need (the canaries the liveness probe checks, the review key the webhook
// signs with), then serves them. Before the controllers and the informers'
// start: a taken port fails start-up before the caches fill, /readyz says
// "not ready" while they do, and the webhook takes its listers before the
// factories start. Every replica serves these, so this comes before the
// leader election too.
func (r *runState) startServers(ctx context.Context, api apiServer, inf *Informers) (*httpServers, error) {
	logger := klog.FromContext(ctx)
	ready := &readiness{}
	ready.set(false, "informer caches not synced")
	var err error
	if r.canaries, err = canary.New(r.Config, nil); err != nil {
		return nil, err
	}
	probes, err := listen("probe", r.ProbeAddr, probeMux(ready, r.canaries.Healthy))
	if err != nil {
		return nil, err
	}
	metricsSrv, err := listen("metrics", r.MetricsAddr, metricsMux(r.Profiling))
	if err != nil {
		closeListeners(probes)
		return nil, err
	}
	// The key of cross-namespace review stamps, for the webhook (signs) and
	// the controllers (verify).
	if r.reviewKey = newReviewKey(ctx, api.kube, r.Options); r.reviewKey != nil {
		go r.reviewKey.Run(ctx, reviewKeyRefresh)
	}
	// The webhook takes its listers now, before the factories start.
	webhookSrv, webhookCerts, err := newWebhook(ctx, api.kube, api.flink, inf, r)
	if err != nil {
		closeListeners(probes, metricsSrv)
		return nil, err
	}
	if webhookCerts != nil {
		go webhookCerts.Run(klog.NewContext(ctx, logger.WithName("webhook")))
	}
	s := &httpServers{ready: ready}
	for _, srv := range []*server{probes, metricsSrv, webhookSrv} {
		if srv != nil {
			s.serving = append(s.serving, srv)
			go srv.serve(logger)
		}
	}
	return s, nil
}

// shutdown stops the servers gracefully, within timeout even when ctx has
// ended.
func (s *httpServers) shutdown(ctx context.Context, timeout time.Duration) {
	logger := klog.FromContext(ctx)
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
	defer cancel()
	for _, srv := range s.serving {
		if err := srv.shutdown(shutdownCtx); err != nil {
			logger.Error(err, "Shutting down HTTP server", "server", srv.name)
		}
	}
}

// prepareElection, with leader election, reads its timings and fences the
// controllers' clients by this replica's view of the lease (leaseFence), so
// a replica that lost it cannot write even in the instant before it exits;
// informers, the webhook and probes keep the unfenced clients, as every
// replica serves them. It returns the election (nil without leader
// election) and the configuration the controllers' clients are built on.
// Before the controllers, whose clients and Flink REST transport it fences.
func (r *runState) prepareElection(restConfig *rest.Config) (*election, *rest.Config, error) {
	if !r.LeaderElect {
		return nil, restConfig, nil
	}
	election, err := newElection(r.Options)
	if err != nil {
		return nil, nil, err
	}
	ctrlConfig := rest.CopyConfig(restConfig)
	ctrlConfig.Wrap(election.fence.wrap)
	r.fenceFlinkREST = election.fence.wrap
	return election, ctrlConfig, nil
}

// buildControllers builds the controllers' clients (on ctrlConfig) and the
// controllers. Before the informers start: the controllers request their
// informers now, so the caches are warm before this replica leads.
func (r *runState) buildControllers(ctx context.Context, ctrlConfig *rest.Config, inf *Informers) (*controllers, clients, error) {
	cl, err := newClients(ctrlConfig, r.Options)
	if err != nil {
		return nil, cl, err
	}
	ctrls, err := newControllers(ctx, cl, inf, r)
	if err != nil {
		return nil, cl, err
	}
	return ctrls, cl, nil
}

// waitForCaches waits for the started informers' caches, then reports
// ready. It reports false when the run ends first (a nil error: shut down
// while starting) or the caches cannot sync. Before the controllers run:
// they act on what the caches hold.
func (r *runState) waitForCaches(ctx context.Context, inf *Informers, ready *readiness) (synced bool, err error) {
	if err := inf.WaitForCacheSync(ctx); err != nil {
		if ctx.Err() != nil {
			return false, nil // shut down while starting
		}
		return false, err
	}
	ready.set(true, "")
	klog.FromContext(ctx).Info("Informer caches synced", "namespaces", namespacesForLog(r.Namespaces))
	return true, nil
}

// runControllers runs the controllers and the canary checks until ctx
// ends, or, with leader election, while this replica leads. Last: it
// blocks for the rest of the run.
func (r *runState) runControllers(ctx context.Context, kube kubernetes.Interface, election *election, ctrls *controllers, cl clients) error {
	logger := klog.FromContext(ctx)
	runControllers := func(ctx context.Context) {
		logger.Info("Running controllers")
		go r.canaries.Run(ctx, cl.flink) // bumps and checks the canary resources (pkg/canary)
		ctrls.run(ctx)
	}
	if !r.LeaderElect {
		runControllers(ctx)
		logger.Info("Shutting down")
		return nil
	}
	return election.run(ctx, kube, runControllers)
}

func loadRESTConfig(kubeconfig string) (*rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if kubeconfig != "" {
		if _, err := os.Stat(kubeconfig); err != nil {
			return nil, fmt.Errorf("reading kubeconfig: %w", err)
		}
		rules.ExplicitPath = kubeconfig
	}
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("loading Kubernetes client configuration: %w", err)
	}
	return cfg, nil
}

// checkAPIServer fails fast, with one clear message, when the API server does
// not answer or the FlinkDeployment/FlinkSessionJob CRDs are not installed;
// otherwise the informers would retry silently forever. It reports whether
// the (optional) FlinkStateSnapshot CRD is installed.
//
// CRDs applied together with the operator (one `kubectl apply`, a Helm
// release) are served a moment after they are created: the API server adds a
// new group to discovery asynchronously, even after the CRD reports
// Established. So missing CRDs are asked for again until ConnectTimeout ends
// before the operator gives up, instead of exiting into a restart loop.
func checkAPIServer(ctx context.Context, kube kubernetes.Interface, host string, timeout time.Duration) (snapshotCRD bool, err error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := kube.CoreV1().RESTClient().Get().AbsPath("/version").Do(ctx).Error(); err != nil {
		return false, fmt.Errorf("cannot reach the Kubernetes API server at %s: %w", host, rootCause(err))
	}
	return waitForCRDs(ctx, restDiscovery{client: kube.CoreV1().RESTClient()}, host, crdRetryInterval)
}

// crdRetryInterval is how often checkAPIServer asks again for missing CRDs.
const crdRetryInterval = 500 * time.Millisecond

// waitForCRDs is checkCRDs, asked again every interval while the job CRDs
// are missing, until ctx ends.
func waitForCRDs(ctx context.Context, d groupResources, host string, interval time.Duration) (snapshotCRD bool, err error) {
	logged := false
	for {
		snapshotCRD, err = checkCRDs(d, host)
		if !errors.Is(err, errCRDMissing) {
			return snapshotCRD, err
		}
		if !logged {
			klog.FromContext(ctx).Info("Waiting for the CRDs to be served", "groupVersion", flinkv1beta1.SchemeGroupVersion, "reason", err.Error())
			logged = true
		}
		select {
		case <-ctx.Done():
			return false, err
		case <-time.After(interval):
		}
	}
}

// errCRDMissing marks checkCRDs' errors for a job CRD the API server does
// not serve.
var errCRDMissing = errors.New("CRD missing")

// checkCRDs is the CRD part of checkAPIServer.
func checkCRDs(d groupResources, host string) (snapshotCRD bool, err error) {
	served, err := servedResources(d)
	if err != nil {
		return false, fmt.Errorf("discovering %s on %s: %w", flinkv1beta1.SchemeGroupVersion, host, err)
	}
	if len(served) == 0 {
		return false, crdMissing{fmt.Errorf("the %s CRDs are not installed on %s: install them with `kubectl apply --server-side -f manifests/crds/`", flinkv1beta1.SchemeGroupVersion, host)}
	}
	for _, plural := range []string{"flinkdeployments", "flinksessionjobs"} {
		if !served[plural] {
			return false, crdMissing{fmt.Errorf("the %s.%s CRD is not installed on %s: install it with `kubectl apply --server-side -f manifests/crds/`", plural, flinkv1beta1.GroupName, host)}
		}
	}
	return served[snapshotsPlural], nil
}

// crdMissing is a checkCRDs error that Is errCRDMissing; its message is the
// wrapped one alone, as the operator prints it when it gives up.
type crdMissing struct{ error }

func (crdMissing) Is(target error) bool { return target == errCRDMissing }

// rootCause drops the wrapping url.Error text ("Get \"https://...\": ") that
// repeats the host already named in the message.
func rootCause(err error) error {
	for {
		next := errors.Unwrap(err)
		if next == nil {
			return err
		}
		err = next
	}
}

// election is this replica's part in leader election.
type election struct {
	opts     Options
	identity string
	timings  leaseTimings
	fence    *leaseFence
}

// newElection reads the timings before anything starts, so a bad value stops
// the operator at once with the key's name.
func newElection(opts Options) (*election, error) {
	timings, err := leaderElectionTimings(opts.Config)
	if err != nil {
		return nil, fmt.Errorf("configuring leader election: %w", err)
	}
	host, _ := os.Hostname()
	return &election{
		opts:     opts,
		identity: leaderIdentity(host, os.Getenv),
		timings:  timings,
		fence:    newLeaseFence(timings.renew),
	}, nil
}

// leaderIdentity is the Lease holder identity: in a pod (the API server's
// service variables and $POD_NAMESPACE, which the manifests and the chart
// set) the pod's name, its hostname, as upstream's operator holds it (its
// e2e scripts and dashboards read the leader's pod from the Lease); a pod's
// name is unique, and a restarted container of the same pod is the same
// member. Elsewhere (a process beside others on one machine) the hostname
// and a random suffix, as client-go's.
func leaderIdentity(host string, getenv func(string) string) string {
	if host != "" && getenv("KUBERNETES_SERVICE_HOST") != "" && getenv("POD_NAMESPACE") != "" {
		return host
	}
	return host + "_" + string(uuid.NewUUID())
}

// exitLostLease ends the process when the lease is lost while it should keep
// running, as kube-controller-manager and controller-runtime do: nothing the
// controllers are doing may continue (a worker mid-sync, a Flink call about
// to be sent), and a restart rejoins the election with fresh caches. A
// variable so that in-process tests can observe it instead.
var exitLostLease = func() { klog.FlushAndExit(klog.ExitFlushTimeout, 1) }

func (e *election) run(ctx context.Context, kube kubernetes.Interface, run func(context.Context)) error {
	logger := klog.FromContext(ctx)
	namespace := e.opts.LeaderElectionNamespace
	if namespace == "" {
		namespace = os.Getenv("POD_NAMESPACE")
	}
	if namespace == "" {
		namespace = "default"
	}
	lease := klog.KRef(namespace, e.opts.LeaderElectionID)
	el := newElector(fencedLock{fence: e.fence, leaseLock: &kubeLeaseLock{
		client: kube.CoordinationV1(), namespace: namespace, name: e.opts.LeaderElectionID, identity: e.identity,
	}}, e.timings)
	lost := func(why string) {
		e.fence.revoke()
		logger.Error(nil, "Lost the leader election lease: exiting at once", "lease", lease, "identity", e.identity, "reason", why)
		exitLostLease()
	}
	logger.Info("Joining leader election", "lease", lease, "identity", e.identity,
		"leaseDuration", e.timings.lease, "renewDeadline", e.timings.renew, "retryPeriod", e.timings.retry)
	if !el.acquire(ctx) {
		logger.Info("Shutting down")
		return nil
	}
	leaderCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	logger.Info("Became leader", "lease", lease, "identity", e.identity, "validFor", e.fence.remaining().Round(time.Millisecond))
	var (
		running  sync.WaitGroup
		lostOnce sync.Once
	)
	running.Add(2)
	go func() {
		defer running.Done()
		watchFence(leaderCtx, e.fence, func() { lostOnce.Do(func() { lost("lease not renewed within the renew deadline") }) })
	}()
	go func() {
		defer running.Done()
		run(leaderCtx)
	}()
	err := el.renew(leaderCtx)
	if err != nil {
		lostOnce.Do(func() { lost(err.Error()) })
	}
	// Hand the lease over before waiting for the controllers to stop, so a
	// standby takes over at once instead of after the lease duration:
	// release closes the fence first, so nothing they still do is written.
	relCtx, relCancel := context.WithTimeout(context.WithoutCancel(ctx), e.timings.renew)
	defer relCancel()
	if rerr := el.release(relCtx); rerr != nil {
		logger.Error(rerr, "Could not hand the leader election lease over; a standby takes over when it expires", "lease", lease)
	}
	cancel()
	running.Wait()
	if ctx.Err() == nil {
		// Only reached when exitLostLease returns (tests).
		return errors.New("lost leader election lease")
	}
	logger.Info("Stopped leading", "lease", lease, "identity", e.identity)
	logger.Info("Shutting down")
	return nil
}

func namespacesForLog(ns []string) any {
	if len(ns) == 0 {
		return "all"
	}
	return ns
}
