package operator

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/flinkops/flink-operator/pkg/config"
	"github.com/flinkops/flink-operator/pkg/controller/controllerctx"
)

// Dynamic configuration (kubernetes.operator.dynamic.config.enabled, on by
// default, as upstream): the --config file is read again every
// kubernetes.operator.dynamic.config.check.interval (5 min), and a changed
// file applies without a restart. The file is the operator's ConfigMap
// mounted as a volume (manifests/base/deployment.yaml); the kubelet updates
// such a mount in place (an atomic symlink swap, so a read never sees half a
// file) within its sync period. Re-reading the file, as upstream re-reads its
// conf directory, rather than watching the ConfigMap through the API: it
// works for any --config file (a local run, a file not from a ConfigMap),
// needs no RBAC on ConfigMaps in the operator's namespace (the Kubernetes
// informers only see the Flink clusters' objects), and what applies is
// exactly what a restart would read.
//
// A changed file is loaded and validated like at start (config.Load). An
// invalid one (unreadable, bad YAML, a bad value) is not applied: the
// configuration in use stays, and an error is logged, once per distinct
// problem. A valid one becomes the configuration the controllers read at
// each sync (controllerctx.Context.CurrentConfig, the job engine's
// Engine.Operator) and the admission webhook at each admission: resource
// defaults, Flink defaults of every cluster (so what the webhook accepts),
// timeouts, history limits, events, status.error's shape
// (kubernetes.operator.exception.*). Keys read
// only when the controllers, their queues, their informers or the leader
// election are built (restartOnlyKeys) keep their value until the next
// restart, and their change is logged as needing one.
//
// Watched namespaces (kubernetes.operator.watched.namespaces) need a restart
// too, unless kubernetes.operator.dynamic.namespaces.enabled is true (read
// from the new file, as upstream) and --namespaces was not given: then the
// operator starts over in the same process on the new namespaces (Run's
// loop, as when the FlinkStateSnapshot CRD appears): informers, caches,
// queues and controllers are rebuilt for the new set, so nothing keeps
// serving a namespace no longer watched.

// ErrWatchedNamespacesChanged ends one internal run when the watched
// namespaces changed with kubernetes.operator.dynamic.namespaces.enabled;
// Run then starts over on the new namespaces.
var ErrWatchedNamespacesChanged = errors.New("the watched namespaces changed (kubernetes.operator.dynamic.namespaces.enabled)")

// restartOnlyKeys are the operator keys read once per run: changing one in
// the file is logged as needing a restart, and the configuration in use
// keeps its value until then.
var restartOnlyKeys = []string{
	// Worker count and queue pacing: the queues and workers are built once.
	config.KeyReconcileParallelism,
	config.KeyRateLimiterLimit,
	config.KeyRateLimiterRefreshPeriod,
	config.KeyRetryInitialInterval,
	config.KeyRetryIntervalMultiplier,
	config.KeyRetryMaxAttempts,
	config.KeyRetryMaxInterval,
	// Leader election: decided by the command line and the election built
	// at start.
	config.KeyLeaderElectionEnabled,
	config.KeyLeaderElectionLeaseName,
	config.KeyLeaderElectionLeaseDuration,
	config.KeyLeaderElectionRenewDeadline,
	config.KeyLeaderElectionRetryPeriod,
	// Which informers and controllers exist: the Ingress informer, the
	// snapshot controller, the review key of cross-namespace references
	// (shared with the admission webhook).
	config.KeyIngressManage,
	config.KeySnapshotResourceEnabled,
	config.KeySnapshotCrossNamespaceReferencesEnabled,
	config.KeyLabelSelector, // the flink.apache.org informers' list/watch selector
	// The probe server, and this mechanism itself (as upstream, read at
	// start).
	config.KeyHealthProbeEnabled,
	config.KeyHealthProbePort,
	config.KeyDynamicConfigEnabled,
	config.KeyDynamicConfigCheckInterval,
	// Metrics: the lifecycle tracker and the resource counts are built
	// with the controllers, client-go's request metrics installed once per
	// process.
	config.KeyResourceMetricsEnabled,
	config.KeyResourceLifecycleMetricsEnabled,
	config.KeyResourceLifecycleNamespaceHistogramsEnabled,
	config.KeyKubernetesClientMetricsEnabled,
}

// latestConfig is the last valid contents of the --config file (as loaded,
// before the legacy-mode change), carried by Run from one internal run to
// the next, so that starting over never goes back to an older file.
type latestConfig struct {
	mu  sync.Mutex
	cfg config.Config
}

func (l *latestConfig) get() config.Config {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.cfg
}

func (l *latestConfig) set(cfg config.Config) {
	l.mu.Lock()
	l.cfg = cfg
	l.mu.Unlock()
}

// configWatcher re-reads the --config file for one internal run.
type configWatcher struct {
	path     string
	interval time.Duration
	load     func(path string) (config.Config, []config.Warning, error)
	// latest is the file's last applied contents (shared with Run).
	latest *latestConfig
	// live is what the controllers read; adjust turns file contents into
	// it (legacyConfig without the FlinkStateSnapshot CRD).
	live   *controllerctx.LiveConfig
	adjust func(config.Config) config.Config
	// namespaces are those this run's informers watch; fixed says they
	// came from --namespaces, which the file does not override.
	namespaces []string
	fixed      bool
	// namespacesChanged ends the run (dynamic namespaces).
	namespacesChanged func()
	// lastProblem avoids logging the same invalid file at every check.
	lastProblem string
}

// newConfigWatcher returns nil when there is nothing to watch: no --config
// file, or kubernetes.operator.dynamic.config.enabled false in the
// configuration this run started with.
func newConfigWatcher(ctx context.Context, opts *runState, namespacesChanged func()) *configWatcher {
	logger := klog.FromContext(ctx)
	if opts.ConfigFile == "" || opts.latest == nil {
		return nil
	}
	start := opts.latest.get()
	enabled, err := start.Bool(config.KeyDynamicConfigEnabled)
	if err != nil || !enabled {
		logger.V(2).Info("Dynamic operator configuration disabled: the config file is read at start only", "file", opts.ConfigFile)
		return nil
	}
	interval, err := start.Duration(config.KeyDynamicConfigCheckInterval)
	if err != nil || interval <= 0 {
		// Load validated it; defensive only.
		return nil
	}
	adjust := func(c config.Config) config.Config { return c }
	if opts.snapshotCRDMissing {
		adjust = legacyConfig
	}
	return &configWatcher{
		path: opts.ConfigFile, interval: interval, load: config.LoadFile,
		latest: opts.latest, live: opts.live, adjust: adjust,
		namespaces: opts.Namespaces, fixed: opts.NamespacesFromFlag,
		namespacesChanged: namespacesChanged,
	}
}

// run checks the file every interval until ctx ends.
func (w *configWatcher) run(ctx context.Context, clk clock.WithTicker) {
	klog.FromContext(ctx).Info("Dynamic operator configuration enabled: the config file is checked for changes",
		"file", w.path, "interval", w.interval)
	t := clk.NewTicker(w.interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C():
		}
		if w.check(ctx) {
			return
		}
	}
}

// check reads the file once and applies it if it changed and is valid. It
// reports whether the run is ending (the watched namespaces changed).
func (w *configWatcher) check(ctx context.Context) (ending bool) {
	logger := klog.FromContext(ctx).WithValues("file", w.path)
	next, warnings, err := w.load(w.path)
	if err != nil {
		if problem := err.Error(); problem != w.lastProblem {
			w.lastProblem = problem
			logger.Error(err, "Operator configuration file changed but is invalid: it is not applied, the configuration in use stays")
		} else {
			logger.V(2).Info("Operator configuration file still invalid: not applied", "err", err)
		}
		return false
	}
	w.lastProblem = ""
	prev := w.latest.get()
	changed := changedKeys(prev, next)
	if len(changed) == 0 {
		logger.V(4).Info("Operator configuration file unchanged")
		return false
	}
	for _, warning := range warnings {
		logger.Info("Operator configuration warning", "key", warning.Key, "message", warning.Message)
	}

	// Restart-only keys keep the value in use; a restart applies them.
	inUse := w.live.Load()
	applied := next.Clone()
	var restart []string
	for _, k := range restartOnlyKeys {
		if !sameValue(prev, next, k) {
			restart = append(restart, k)
			logger.Info("Operator configuration key changed, but it needs a restart of the operator to apply: the value in use stays until then", "key", k)
		}
		pin(applied, inUse, k)
	}

	// The file's namespaces against the previous file's (for what to log)
	// and against those this run watches (for what to do): enabling
	// dynamic namespaces applies a list changed earlier.
	newNamespaces := config.WatchedNamespaces(next)
	fileChanged := !sameNamespaces(config.WatchedNamespaces(prev), newNamespaces)
	namespacesChanged := !sameNamespaces(w.namespaces, newNamespaces)
	dynamicNamespaces, _ := next.Bool(config.KeyDynamicNamespacesEnabled)
	switch {
	case !fileChanged:
	case w.fixed:
		logger.Info("Operator configuration changed the watched namespaces, but --namespaces sets them: the file's value is ignored",
			"key", config.KeyWatchedNamespaces, "namespaces", namespacesForLog(w.namespaces))
	case !dynamicNamespaces:
		logger.Info("Operator configuration changed the watched namespaces, but it needs a restart of the operator to apply (or "+config.KeyDynamicNamespacesEnabled+": true)",
			"key", config.KeyWatchedNamespaces, "namespaces", namespacesForLog(w.namespaces), "configured", namespacesForLog(newNamespaces))
	}

	w.latest.set(next)
	w.live.Store(w.adjust(applied))
	// Upstream's line, which its e2e test_dynamic_config.sh waits for: the
	// file's configuration (what it sets beyond the defaults) as a Java
	// Map prints, sensitive values hidden as Flink hides them (options
	// such as s3.secret-key are passed on to every cluster).
	logger.Info("Setting default configuration to " + javaMap(next, setBeyondDefaults(next)))
	logger.Info("Applied the changed operator configuration", "changedKeys", changed, "needRestart", len(restart))

	if namespacesChanged && !w.fixed && dynamicNamespaces && w.namespacesChanged != nil {
		logger.Info("Watched namespaces changed: restarting the informers and controllers on the new namespaces",
			"from", namespacesForLog(w.namespaces), "to", namespacesForLog(newNamespaces))
		w.namespacesChanged()
		return true
	}
	return false
}

// setBeyondDefaults lists, sorted, the keys of c that are not the
// registered defaults (config.Load puts the file on top of them).
func setBeyondDefaults(c config.Config) []string {
	defaults := config.Defaults()
	var out []string
	for k, v := range c {
		if d, ok := defaults[k]; !ok || d != v {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// sensitiveKeyParts are the parts of a key whose value Flink never logs
// (GlobalConfiguration's sensitive keys).
var sensitiveKeyParts = []string{"password", "secret", "fs.azure.account.key", "apikey", "api-key", "auth-params",
	"service-key", "token", "basic-auth", "jaas.config", "http-headers"}

// javaMap writes keys of c as a Java Map prints: {k1=v1, k2=v2}, values
// of sensitive keys as ****** (a key missing from c reads <removed>).
func javaMap(c config.Config, keys []string) string {
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		v, ok := c[k]
		switch {
		case !ok:
			v = "<removed>"
		case slices.ContainsFunc(sensitiveKeyParts, func(p string) bool { return strings.Contains(strings.ToLower(k), p) }):
			v = "******"
		}
		parts = append(parts, k+"="+v)
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

// changedKeys lists, sorted, the keys whose value differs between a and b
// (present in one only included).
func changedKeys(a, b config.Config) []string {
	var out []string
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			out = append(out, k)
		}
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// sameValue says whether a registered key reads the same in a and b
// (under any of its names, defaults included).
func sameValue(a, b config.Config, key string) bool {
	return a.String(key) == b.String(key)
}

// pin gives key in dst the value it has in src, under every name of the key.
func pin(dst, src config.Config, key string) {
	names := []string{key}
	if k, ok := config.LookupKey(key); ok {
		names = append(names, k.Deprecated...)
	}
	for _, n := range names {
		if v, ok := src[n]; ok {
			dst[n] = v
		} else {
			delete(dst, n)
		}
	}
}

// sameNamespaces compares two watched-namespace lists as sets (nil = all).
func sameNamespaces(a, b []string) bool {
	if (len(a) == 0) != (len(b) == 0) {
		return false
	}
	set := func(l []string) map[string]bool {
		m := map[string]bool{}
		for _, ns := range l {
			m[ns] = true
		}
		return m
	}
	return maps.Equal(set(a), set(b))
}

// withLatestConfig starts an internal run from the file's last valid
// contents (all of them: starting over rebuilds what restart-only keys
// configure, except what the command line decided at start, such as leader
// election). With kubernetes.operator.dynamic.namespaces.enabled, and no
// --namespaces, the watched namespaces follow the file.
func withLatestConfig(o Options, latest *latestConfig) Options {
	o.Config = latest.get()
	if dynamic, _ := o.Config.Bool(config.KeyDynamicNamespacesEnabled); dynamic && !o.NamespacesFromFlag {
		o.Namespaces = config.WatchedNamespaces(o.Config)
	}
	return o
}
