package operator

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"

	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/klog/v2"

	flinkv1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	clientset "github.com/flinkops/flink-operator/pkg/generated/clientset/versioned"
)

// Run runs the operator until ctx is cancelled. Start-up problems (no API
// server, CRDs missing, a port taken) come back as one error with context.
// Without the FlinkStateSnapshot CRD it runs in legacy mode until the CRD
// appears, then starts over in-process with snapshot resources (see
// snapshotcrd.go).
func Run(parent context.Context, opts Options) error {
	for {
		ctx, cancel := context.WithCancelCause(parent)
		err := run(ctx, cancel, opts)
		cause := context.Cause(ctx)
		cancel(nil)
		if errors.Is(cause, ErrSnapshotCRDInstalled) && parent.Err() == nil {
			// Start over in this process: fresh informers (now including
			// FlinkStateSnapshots), fresh queues, snapshot controller on.
			klog.FromContext(parent).Info("Restarting the controllers with FlinkStateSnapshot resources enabled")
			continue
		}
		return err
	}
}

func run(ctx context.Context, cancel context.CancelCauseFunc, opts Options) error {
	logger := klog.FromContext(ctx)

	restConfig, err := loadRESTConfig(opts.Kubeconfig)
	if err != nil {
		return err
	}
	restConfig.UserAgent = "flink-operator"
	kube, err := kubernetes.NewForConfig(restConfig)
	if err != nil {
		return fmt.Errorf("creating Kubernetes client: %w", err)
	}
	flink, err := clientset.NewForConfig(restConfig)
	if err != nil {
		return fmt.Errorf("creating flink.apache.org client: %w", err)
	}
	snapshotCRD, err := checkAPIServer(ctx, kube, restConfig.Host, opts)
	if err != nil {
		return err
	}
	if !snapshotCRD {
		logger.Error(nil, snapshotCRDMissingLog)
		opts.Config = legacyConfig(opts.Config)
		opts.snapshotCRDMissing = true
		go watchSnapshotCRD(ctx, kube.Discovery(), snapshotCRDPollInterval, func() {
			logger.Info("FlinkStateSnapshot CRD is now installed: switching to FlinkStateSnapshot resources")
			cancel(ErrSnapshotCRDInstalled)
		})
	}

	inf := NewInformers(kube, flink, opts.Namespaces, opts.ResyncPeriod)

	ready := &readiness{}
	ready.set(false, "informer caches not synced")
	probes, err := listen("probe", opts.ProbeAddr, probeMux(ready))
	if err != nil {
		return err
	}
	metricsSrv, err := listen("metrics", opts.MetricsAddr, metricsMux())
	if err != nil {
		closeListeners(probes)
		return err
	}
	// The webhook takes its listers now, before the factories start.
	webhookSrv, webhookCerts, err := newWebhook(ctx, kube, flink, inf, opts)
	if err != nil {
		closeListeners(probes, metricsSrv)
		return err
	}
	if webhookCerts != nil {
		go webhookCerts.Run(klog.NewContext(ctx, logger.WithName("webhook")))
	}
	servers := []*server{}
	for _, s := range []*server{probes, metricsSrv, webhookSrv} {
		if s != nil {
			servers = append(servers, s)
			go s.serve(logger)
		}
	}
	defer func() {
		shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), opts.ShutdownTimeout)
		defer cancel()
		for _, s := range servers {
			if err := s.shutdown(shutdownCtx); err != nil {
				logger.Error(err, "Shutting down HTTP server", "server", s.name)
			}
		}
	}()

	// Controllers request their informers now, so the caches are warm before
	// this replica leads.
	ctrls, err := newControllers(ctx, kube, flink, inf, opts)
	if err != nil {
		return err
	}
	defer ctrls.shutdown()
	inf.Start(ctx.Done())
	defer inf.Shutdown()
	if err := inf.WaitForCacheSync(ctx); err != nil {
		if ctx.Err() != nil {
			return nil // shut down while starting
		}
		return err
	}
	ready.set(true, "")
	logger.Info("Informer caches synced", "namespaces", namespacesForLog(opts.Namespaces))

	runControllers := func(ctx context.Context) {
		logger.Info("Running controllers")
		ctrls.run(ctx)
	}
	if !opts.LeaderElect {
		runControllers(ctx)
		logger.Info("Shutting down")
		return nil
	}
	return runWithLeaderElection(ctx, kube, opts, runControllers)
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
func checkAPIServer(ctx context.Context, kube kubernetes.Interface, host string, opts Options) (snapshotCRD bool, err error) {
	ctx, cancel := context.WithTimeout(ctx, opts.ConnectTimeout)
	defer cancel()
	if err := kube.Discovery().RESTClient().Get().AbsPath("/version").Do(ctx).Error(); err != nil {
		return false, fmt.Errorf("cannot reach the Kubernetes API server at %s: %w", host, rootCause(err))
	}
	return checkCRDs(kube.Discovery(), host)
}

// checkCRDs is the CRD part of checkAPIServer.
func checkCRDs(d discovery.DiscoveryInterface, host string) (snapshotCRD bool, err error) {
	served, err := servedResources(d)
	if err != nil {
		return false, fmt.Errorf("discovering %s on %s: %w", flinkv1beta1.SchemeGroupVersion, host, err)
	}
	if len(served) == 0 {
		return false, fmt.Errorf("the %s CRDs are not installed on %s: install them with `kubectl apply --server-side -f manifests/crds/`", flinkv1beta1.SchemeGroupVersion, host)
	}
	for _, plural := range []string{"flinkdeployments", "flinksessionjobs"} {
		if !served[plural] {
			return false, fmt.Errorf("the %s.%s CRD is not installed on %s: install it with `kubectl apply --server-side -f manifests/crds/`", plural, flinkv1beta1.GroupName, host)
		}
	}
	return served[snapshotsPlural], nil
}

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

func runWithLeaderElection(ctx context.Context, kube kubernetes.Interface, opts Options, run func(context.Context)) error {
	logger := klog.FromContext(ctx)
	host, _ := os.Hostname()
	identity := host + "_" + string(uuid.NewUUID())
	namespace := opts.LeaderElectionNamespace
	if namespace == "" {
		namespace = os.Getenv("POD_NAMESPACE")
	}
	if namespace == "" {
		namespace = "default"
	}
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1ObjectMeta(namespace, opts.LeaderElectionID),
		Client:     kube.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: identity},
	}
	timings, err := leaderElectionTimings(opts.Config)
	if err != nil {
		return fmt.Errorf("configuring leader election: %w", err)
	}
	var wg sync.WaitGroup
	elector, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:            lock,
		ReleaseOnCancel: true,
		LeaseDuration:   timings.lease,
		RenewDeadline:   timings.renew,
		RetryPeriod:     timings.retry,
		Name:            opts.LeaderElectionID,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(ctx context.Context) {
				wg.Add(1)
				defer wg.Done()
				logger.Info("Became leader", "lease", klog.KRef(namespace, opts.LeaderElectionID), "identity", identity)
				run(ctx)
			},
			OnStoppedLeading: func() {
				logger.Info("Stopped leading", "lease", klog.KRef(namespace, opts.LeaderElectionID), "identity", identity)
			},
		},
	})
	if err != nil {
		return fmt.Errorf("configuring leader election: %w", err)
	}
	elector.Run(ctx)
	wg.Wait()
	if ctx.Err() == nil {
		// Lost the lease while the process should keep running: exit so a
		// restart rejoins the election with fresh caches, never two leaders.
		return errors.New("lost leader election lease")
	}
	logger.Info("Shutting down")
	return nil
}

func namespacesForLog(ns []string) any {
	if len(ns) == 0 {
		return "all"
	}
	return ns
}
