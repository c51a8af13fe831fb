package config

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/labels"
)

// OperatorPrefix starts every operator option. Unknown keys with this prefix
// are reported as warnings, because a typo in one silently does nothing.
const OperatorPrefix = "kubernetes.operator."

// Operator-wide keys (not overridable per resource).
const (
	KeyReconcileInterval           = "kubernetes.operator.reconcile.interval"
	KeyReconcileParallelism        = "kubernetes.operator.reconcile.parallelism"
	KeyRateLimiterLimit            = "kubernetes.operator.rate-limiter.limit"
	KeyRateLimiterRefreshPeriod    = "kubernetes.operator.rate-limiter.refresh-period"
	KeyRetryInitialInterval        = "kubernetes.operator.retry.initial.interval"
	KeyRetryIntervalMultiplier     = "kubernetes.operator.retry.interval.multiplier"
	KeyRetryMaxAttempts            = "kubernetes.operator.retry.max.attempts"
	KeyRetryMaxInterval            = "kubernetes.operator.retry.max.interval"
	KeyProgressCheckInterval       = "kubernetes.operator.observer.progress-check.interval"
	KeyFlinkClientTimeout          = "kubernetes.operator.flink.client.timeout"
	KeyFlinkClientCancelTimeout    = "kubernetes.operator.flink.client.cancel.timeout"
	KeyWatchedNamespaces           = "kubernetes.operator.watched.namespaces"
	KeyLeaderElectionEnabled       = "kubernetes.operator.leader-election.enabled"
	KeyLeaderElectionLeaseName     = "kubernetes.operator.leader-election.lease-name"
	KeyLeaderElectionLeaseDuration = "kubernetes.operator.leader-election.lease-duration"
	KeyLeaderElectionRenewDeadline = "kubernetes.operator.leader-election.renew-deadline"
	KeyLeaderElectionRetryPeriod   = "kubernetes.operator.leader-election.retry-period"
	KeyResourceMetricsEnabled      = "kubernetes.operator.resource.metrics.enabled"

	KeyEventsExceptionsLimit           = "kubernetes.operator.events.exceptions.limit-per-reconciliation"
	KeyEventsExceptionsStacktraceLines = "kubernetes.operator.events.exceptions.stacktrace-lines"

	KeyIngressManage = "kubernetes.operator.ingress.manage"

	KeySavepointHistoryMaxCountThreshold = "kubernetes.operator.savepoint.history.max.count.threshold"
	KeySavepointHistoryMaxAgeThreshold   = "kubernetes.operator.savepoint.history.max.age.threshold"

	KeySnapshotMaxConcurrent                   = "kubernetes.operator.snapshot.max-concurrent"
	KeySnapshotDisposeTimeout                  = "kubernetes.operator.snapshot.dispose.timeout"
	KeySnapshotCrossNamespaceReferencesEnabled = "kubernetes.operator.snapshot.cross-namespace-references.enabled"
	KeySnapshotNormalEventsEnabled             = "kubernetes.operator.snapshot.normal-events.enabled"

	KeyDynamicConfigEnabled       = "kubernetes.operator.dynamic.config.enabled"
	KeyDynamicConfigCheckInterval = "kubernetes.operator.dynamic.config.check.interval"
	KeyDynamicNamespacesEnabled   = "kubernetes.operator.dynamic.namespaces.enabled"

	KeyHealthProbeEnabled          = "kubernetes.operator.health.probe.enabled"
	KeyHealthProbePort             = "kubernetes.operator.health.probe.port"
	KeyHealthCanaryResourceTimeout = "kubernetes.operator.health.canary.resource.timeout"

	KeyExceptionFieldMaxLength        = "kubernetes.operator.exception.field.max.length"
	KeyExceptionLabelMapper           = "kubernetes.operator.exception.label.mapper"
	KeyExceptionStackTraceEnabled     = "kubernetes.operator.exception.stacktrace.enabled"
	KeyExceptionStackTraceMaxLength   = "kubernetes.operator.exception.stacktrace.max.length"
	KeyExceptionThrowableListMaxCount = "kubernetes.operator.exception.throwable.list.max.count"

	KeyLabelSelector               = "kubernetes.operator.label.selector"
	KeyResourceCleanupTimeout      = "kubernetes.operator.resource.cleanup.timeout"
	KeyResourceDeletionPropagation = "kubernetes.operator.resource.deletion.propagation"

	KeyResourceLifecycleMetricsEnabled             = "kubernetes.operator.resource.lifecycle.metrics.enabled"
	KeyResourceLifecycleNamespaceHistogramsEnabled = "kubernetes.operator.resource.lifecycle.namespace.histograms.enabled"
	KeyKubernetesClientMetricsEnabled              = "kubernetes.operator.kubernetes.client.metrics.enabled"
)

// Operator keys a resource may override in its flinkConfiguration.
const (
	KeyPeriodicSavepointInterval  = "kubernetes.operator.periodic.savepoint.interval"
	KeyPeriodicCheckpointInterval = "kubernetes.operator.periodic.checkpoint.interval"

	KeySavepointHistoryMaxCount = "kubernetes.operator.savepoint.history.max.count"
	KeySavepointHistoryMaxAge   = "kubernetes.operator.savepoint.history.max.age"
	KeySavepointCleanupEnabled  = "kubernetes.operator.savepoint.cleanup.enabled"
	KeySavepointDisposeOnDelete = "kubernetes.operator.savepoint.dispose-on-delete"
	KeySavepointFormatType      = "kubernetes.operator.savepoint.format.type"
	KeyCheckpointType           = "kubernetes.operator.checkpoint.type"

	KeySavepointTriggerGracePeriod = "kubernetes.operator.savepoint.trigger.grace-period"
	// KeySavepointTriggerGracePeriodDeprecated is the older name of
	// KeySavepointTriggerGracePeriod, still read as a fallback.
	KeySavepointTriggerGracePeriodDeprecated = "kubernetes.operator.observer.savepoint.trigger.grace-period"
	KeyCheckpointTriggerGracePeriod          = "kubernetes.operator.checkpoint.trigger.grace-period"

	KeySnapshotResourceEnabled     = "kubernetes.operator.snapshot.resource.enabled"
	KeySnapshotTimeout             = "kubernetes.operator.snapshot.timeout"
	KeySnapshotBackoffLimit        = "kubernetes.operator.snapshot.backoff-limit"
	KeySnapshotMaxConcurrentPerJob = "kubernetes.operator.snapshot.max-concurrent-per-job"

	KeyJobUpgradeLastStateFallbackEnabled         = "kubernetes.operator.job.upgrade.last-state-fallback.enabled"
	KeyJobUpgradeLastStateMaxAllowedCheckpointAge = "kubernetes.operator.job.upgrade.last-state.max.allowed.checkpoint.age"
	KeyJobUpgradeIgnorePendingSavepoint           = "kubernetes.operator.job.upgrade.ignore-pending-savepoint"
	KeyJobUpgradeInPlaceScalingEnabled            = "kubernetes.operator.job.upgrade.inplace-scaling.enabled"

	KeyUserArtifactsAllowedSchemes          = "kubernetes.operator.user.artifacts.allowed-schemes"
	KeyUserArtifactsBaseDir                 = "kubernetes.operator.user.artifacts.base.dir"
	KeyUserArtifactsDisallowRestrictedHosts = "kubernetes.operator.user.artifacts.disallow-restricted-hosts"
	KeyUserArtifactsHTTPHeader              = "kubernetes.operator.user.artifacts.http.header"

	KeyJMDeploymentStartupProbeEnabled = "kubernetes.operator.jm-deployment.startup.probe.enabled"

	KeyJMDeploymentShutdownTTL             = "kubernetes.operator.jm-deployment.shutdown-ttl"
	KeyJobSubmissionTimeout                = "kubernetes.operator.job.submission.timeout"
	KeyJobUpgradeLastStateJobCancelEnabled = "kubernetes.operator.job.upgrade.last-state.job-cancel.enabled"
	KeySessionDeletionBlockOnUnmanagedJobs = "kubernetes.operator.session.deletion.block-on-unmanaged-jobs"
	KeyJobSavepointOnDeletion              = "kubernetes.operator.job.savepoint-on-deletion"
	KeyJobDrainOnSavepointDeletion         = "kubernetes.operator.job.drain-on-savepoint-deletion"
	KeyJobRestartFailed                    = "kubernetes.operator.job.restart.failed"
	KeyDeploymentReadinessTimeout          = "kubernetes.operator.deployment.readiness.timeout"
	KeyDeploymentRollbackEnabled           = "kubernetes.operator.deployment.rollback.enabled"

	// Health checks and restarts (pkg/controller/jobengine/health.go).
	KeyClusterHealthCheckEnabled                   = "kubernetes.operator.cluster.health-check.enabled"
	KeyClusterHealthCheckRestartsWindow            = "kubernetes.operator.cluster.health-check.restarts.window"
	KeyClusterHealthCheckRestartsThreshold         = "kubernetes.operator.cluster.health-check.restarts.threshold"
	KeyClusterHealthCheckCheckpointProgressEnabled = "kubernetes.operator.cluster.health-check.checkpoint-progress.enabled"
	KeyClusterHealthCheckCheckpointProgressWindow  = "kubernetes.operator.cluster.health-check.checkpoint-progress.window"
	KeyJMDeploymentRecoveryEnabled                 = "kubernetes.operator.jm-deployment-recovery.enabled"
	// KeyJMDeploymentRecoveryEnabledDeprecated is upstream's older name of
	// KeyJMDeploymentRecoveryEnabled, still read as a fallback.
	KeyJMDeploymentRecoveryEnabledDeprecated = "kubernetes.operator.reconciler.jm-deployment-recovery.enabled"
)

// BlueGreenPrefix starts the options of a FlinkBlueGreenDeployment, which
// it sets in its spec.configuration (upstream's
// FlinkBlueGreenDeploymentConfigOptions).
const BlueGreenPrefix = OperatorPrefix + "bluegreen."

// The blue/green options (upstream's FlinkBlueGreenDeploymentConfigOptions,
// which upstream's configuration reference does not list).
const (
	KeyBlueGreenAbortGracePeriod        = BlueGreenPrefix + "abort.grace-period"
	KeyBlueGreenRescheduleInterval      = BlueGreenPrefix + "reconciliation.reschedule-interval"
	KeyBlueGreenDeploymentDeletionDelay = BlueGreenPrefix + "deployment-deletion.delay"
)

// Flink's own options that the operator reads. Flink 1.20 renamed several of
// them; the old names stay valid (and are the only ones Flink 1.18/1.19
// know), so both are read, the new one first.
const (
	FlinkSavepointDir                     = "execution.checkpointing.savepoint-dir"
	FlinkSavepointDirDeprecated           = "state.savepoints.dir"
	FlinkSavepointDirLegacy               = "savepoints.state.backend.fs.dir"
	FlinkCheckpointDir                    = "execution.checkpointing.dir"
	FlinkCheckpointDirDeprecated          = "state.checkpoints.dir"
	FlinkCheckpointsNumRetained           = "execution.checkpointing.num-retained"
	FlinkCheckpointsNumRetainedDeprecated = "state.checkpoints.num-retained"
	FlinkCheckpointTimeout                = "execution.checkpointing.timeout"
	FlinkRestPort                         = "rest.port"
	FlinkRestAsyncStoreDuration           = "rest.async.store-duration"
	// FlinkCheckpointRetention says whether a job's checkpoints outlive
	// its cancellation; only FlinkRetainOnCancellation keeps them (Flink's
	// default, NO_EXTERNALIZED_CHECKPOINTS, deletes them).
	FlinkCheckpointRetention  = "execution.checkpointing.externalized-checkpoint-retention"
	FlinkRetainOnCancellation = "RETAIN_ON_CANCELLATION"
	// FlinkParallelismOverrides is the per-vertex parallelism map
	// "<vertex id>:<parallelism>,...", which the operator applies to a
	// running job in place (jobengine/scale.go) and leaves out of the pods'
	// config hash (cluster/scalehash.go).
	FlinkParallelismOverrides = "pipeline.jobvertex-parallelism-overrides"
)

// IsParallelismOverridesKey reports whether a flat configuration key is
// FlinkParallelismOverrides or one of its per-vertex keys (the option
// written as a nested map).
func IsParallelismOverridesKey(k string) bool {
	return k == FlinkParallelismOverrides || strings.HasPrefix(k, FlinkParallelismOverrides+".")
}

// Type is how a key's value is parsed; it decides which getter reads it and
// how a value is validated when it is loaded.
type Type int

// The value types of registered keys.
const (
	TypeString Type = iota
	TypeDuration
	TypeInt
	TypeBool
	TypeEnum
	TypeList
	TypeDouble
	TypeMap
)

// String names the type in DocTable and in error messages.
func (t Type) String() string {
	switch t {
	case TypeString:
		return "String"
	case TypeDuration:
		return "Duration"
	case TypeInt:
		return "Integer"
	case TypeBool:
		return "Boolean"
	case TypeEnum:
		return "Enum"
	case TypeList:
		return "List"
	case TypeDouble:
		return "Double"
	case TypeMap:
		return "Map"
	}
	return fmt.Sprintf("Type(%d)", int(t))
}

// Key describes one registered option. The registry is the single source of
// defaults, of which keys a resource may override and of the documentation
// table, so these three can never drift apart.
type Key struct {
	// Name is the option as written in a config file or flinkConfiguration.
	Name string
	// Type decides parsing and validation.
	Type Type
	// Default is the value used when the key is absent or blank, written in
	// the same syntax a user would write. "" means the key has no default
	// ("unset"); what unset means is in DefaultDoc/Description.
	Default string
	// DefaultDoc, if not empty, replaces Default in DocTable, for defaults
	// that are derived or mean something special (for example "unlimited").
	DefaultDoc string
	// Enum lists the accepted values of a TypeEnum key (matched
	// case-insensitively, like Flink).
	Enum []string
	// Overridable says whether a resource's flinkConfiguration may set the
	// key. Operator-wide settings (loops, timeouts protecting the operator,
	// caps set by the admin, privileges) are not, so one resource cannot
	// weaken a guarantee the admin configured.
	Overridable bool
	// Flink marks Flink's own options (not kubernetes.operator.*). They are
	// always overridable and their defaults are Flink's; Defaults() does not
	// write them, because Flink applies its own defaults.
	Flink bool
	// Deprecated lists older names read as fallbacks, in order, after Name.
	Deprecated []string
	// Description says what the key does and why one would change it.
	Description string

	// check is an extra range check run after the value parsed.
	check func(Config, string) error
}

// Validate parses value as this key's type and runs its range checks. A
// blank value is valid: it means "use the default".
func (k Key) Validate(value string) error {
	if strings.TrimSpace(value) == "" {
		return nil
	}
	c := Config{k.Name: value}
	var err error
	switch k.Type {
	case TypeDuration:
		_, err = c.Duration(k.Name)
	case TypeInt:
		_, err = c.Int(k.Name)
	case TypeBool:
		_, err = c.Bool(k.Name)
	case TypeEnum:
		_, err = c.Enum(k.Name)
	case TypeDouble:
		_, err = c.Float(k.Name)
	case TypeMap:
		_, err = c.Map(k.Name)
	}
	if err == nil && k.check != nil {
		if cerr := k.check(c, k.Name); cerr != nil {
			err = &ValueError{Key: k.Name, Value: value, Err: cerr}
		}
	}
	return err
}

// atLeast is a check for integer keys with a lower bound.
func atLeast(min int) func(Config, string) error {
	return func(c Config, key string) error {
		if n, _ := c.Int(key); n < min {
			return fmt.Errorf("must be at least %d", min)
		}
		return nil
	}
}

// parallelism is the check of KeyReconcileParallelism: at least 1, or -1
// (no bound, as upstream).
func parallelism(c Config, key string) error {
	if n, _ := c.Int(key); n < 1 && n != -1 {
		return fmt.Errorf("must be at least 1, or -1 (no bound)")
	}
	return nil
}

// atLeastFloat is a check for Double keys with a lower bound.
func atLeastFloat(min float64) func(Config, string) error {
	return func(c Config, key string) error {
		if f, _ := c.Float(key); f < min {
			return fmt.Errorf("must be at least %g", min)
		}
		return nil
	}
}

// labelSelector checks Kubernetes label-selector syntax.
func labelSelector(c Config, key string) error {
	_, err := labels.Parse(c.String(key))
	return err
}

// regexpKeys checks that every key of a Map value is a regular expression.
func regexpKeys(c Config, key string) error {
	m, err := c.Map(key)
	if err != nil {
		return err
	}
	for k := range m {
		if _, err := regexp.Compile(k); err != nil {
			return fmt.Errorf("%q is not a regular expression: %w", k, err)
		}
	}
	return nil
}

// positive is a check for durations where zero would make the operator spin
// or give up at once.
func positive(c Config, key string) error {
	if d, _ := c.Duration(key); d <= 0 {
		return errors.New("must be greater than zero")
	}
	return nil
}

// registry holds every key the operator knows. Defaults are upstream's
// (KubernetesOperatorConfigOptions, Flink's CheckpointingOptions/RestOptions)
// unless the description says otherwise.
var registry = []Key{
	// --- operator-wide: loops, clients, leader election ---
	{Name: KeyReconcileInterval, Type: TypeDuration, Default: "60 s", check: positive,
		Description: "How often every resource is resynced when nothing happens, and the retry delay of snapshot cleanup. Operator-wide because it sizes the operator's own load."},
	{Name: KeyProgressCheckInterval, Type: TypeDuration, Default: "10 s", check: positive,
		Description: "How often an in-flight operation (deploy, savepoint, stop) is polled. Operator-wide for the same reason as the reconcile interval."},
	{Name: KeyReconcileParallelism, Type: TypeInt, Default: "200", check: parallelism,
		Description: "Syncs each controller runs at once; -1: no bound. Upstream's option (default 50, -1 = unbounded) sizes a pool of reconcile threads that block on Flink; here a sync is a goroutine started when there is work (an idle controller holds none) and waits mostly for the API server, so a burst (1,000 savepoints created together) is taken up at once instead of queueing (docs/performance.md). When every sync is busy, the snapshot controller hands a waiting snapshot that is still to be triggered (new or `TRIGGER_PENDING`) to the next free one before the running, settled and deleted ones queued earlier. Must be at least 1, or -1."},
	{Name: KeyRateLimiterLimit, Type: TypeInt, Default: "5",
		Description: "At most this many syncs of one resource that change something (an API write or a state-changing Flink REST call) per refresh period; once reached, its syncs wait for the next period (upstream's per-resource limiter). At most 0 disables it."},
	{Name: KeyRateLimiterRefreshPeriod, Type: TypeDuration, Default: "15 s", check: positive,
		Description: "The period of the per-resource rate limiter."},
	{Name: KeyRetryInitialInterval, Type: TypeDuration, Default: "5 s", check: positive,
		Description: "Delay before the first retry of a sync that failed (an API or REST error); each further retry waits interval.multiplier times longer."},
	{Name: KeyRetryIntervalMultiplier, Type: TypeDouble, Default: "1.5", check: atLeastFloat(1),
		Description: "Growth factor of the retry delay. Must be at least 1."},
	{Name: KeyRetryMaxAttempts, Type: TypeInt, Default: "15", check: atLeast(1),
		Description: "Retries of a failing sync with growing delays. Then, unlike upstream (which waits for the next change of the resource), the resource is synced again after the reconcile interval, and the delays start over: a resource is never left alone because the API server was down for an hour."},
	{Name: KeyRetryMaxInterval, Type: TypeDuration, DefaultDoc: "unset (no cap)",
		Description: "Cap on the retry delay."},
	{Name: KeyFlinkClientTimeout, Type: TypeDuration, Default: "10 s", check: positive,
		Description: "Timeout of each Flink REST call. Operator-wide: it bounds how long a worker can be held, which protects every other resource."},
	{Name: KeyFlinkClientCancelTimeout, Type: TypeDuration, Default: "1 min", check: positive,
		Description: "How long a job cancellation is waited for before the operator treats it as failed."},
	{Name: KeyWatchedNamespaces, Type: TypeList, DefaultDoc: "unset (all namespaces)",
		Description: "Comma-separated namespaces to watch (`[a, b]` also accepted); unset, empty or upstream's `JOSDK_ALL_NAMESPACES` = all namespaces."},
	{Name: KeyLeaderElectionEnabled, Type: TypeBool, Default: "false",
		Description: "Run leader election on a Lease so that only one of several operator replicas acts. Requires the lease name."},
	{Name: KeyLeaderElectionLeaseName, Type: TypeString,
		Description: "Name of the Lease used for leader election; required when leader election is enabled (no default, as upstream)."},
	{Name: KeyLeaderElectionLeaseDuration, Type: TypeDuration, Default: "15 s", check: positive,
		Description: "How long a lease is valid; a standby takes over at most this long after the leader dies."},
	{Name: KeyLeaderElectionRenewDeadline, Type: TypeDuration, Default: "10 s", check: positive,
		Description: "How long the leader keeps retrying to renew before it gives up leadership. Must be less than the lease duration."},
	{Name: KeyLeaderElectionRetryPeriod, Type: TypeDuration, Default: "2 s", check: positive,
		Description: "Interval between attempts to acquire or renew the lease."},
	{Name: KeyResourceMetricsEnabled, Type: TypeBool, Default: "true",
		Description: "Export per-namespace counts of the custom resources, from the informer caches: FlinkDeployments and FlinkSessionJobs (`flink_operator_resources`), FlinkDeployments by JobManager deployment status and by Flink version (`flink_operator_jobmanager_deployments`, `flink_operator_flink_versions`), FlinkStateSnapshots by type and state (`flink_operator_snapshots`); see Metrics. Read at start."},
	{Name: KeyKubernetesClientMetricsEnabled, Type: TypeBool, Default: "true",
		Description: "Export client-go's metrics of the operator's Kubernetes API requests (`rest_client_*`: requests by status code and method, latency by verb and path, rate-limiter waits, retries; see Metrics). Read at start."},
	{Name: KeyEventsExceptionsLimit, Type: TypeInt, Default: "10", check: atLeast(0),
		Description: "At most this many of a job's new exceptions (Flink's exception history) become JobException events per sync, newest first; the rest are not reported."},
	{Name: KeyEventsExceptionsStacktraceLines, Type: TypeInt, Default: "5", check: atLeast(0),
		Description: "Lines of an exception's stack trace in its JobException event (then how many more there were)."},
	{Name: KeyDynamicConfigEnabled, Type: TypeBool, Default: "true",
		Description: "Re-read the operator's `--config` file every check interval and apply a valid change without a restart; keys read only at start log that they need a restart. Read at start."},
	{Name: KeyDynamicConfigCheckInterval, Type: TypeDuration, Default: "5 min", check: positive,
		Description: "How often the operator's configuration is read again when dynamic configuration is on. Read at start."},
	{Name: KeyDynamicNamespacesEnabled, Type: TypeBool, Default: "false",
		Description: "Apply a change of `kubernetes.operator.watched.namespaces` in the `--config` file without restarting the process (needs dynamic configuration; `--namespaces` wins)."},
	{Name: KeyHealthProbeEnabled, Type: TypeBool, Default: "true",
		Description: "Check canary resources in the liveness probe `/healthz` (the probe server itself is governed by `--health-probe-bind-address`)."},
	{Name: KeyHealthCanaryResourceTimeout, Type: TypeDuration, Default: "1 min", check: positive,
		Description: "A canary resource (label `flink.apache.org/canary: \"true\"`) not reconciled within this time after it changed makes the health probe fail."},
	{Name: KeyResourceLifecycleMetricsEnabled, Type: TypeBool, Default: "true",
		Description: "Export how long FlinkDeployments and FlinkSessionJobs spend in each lifecycle state and transition, and their counts by state (`flink_operator_lifecycle_*`, see Metrics). Needs `resource.metrics.enabled`; both are read at start."},
	{Name: KeyResourceLifecycleNamespaceHistogramsEnabled, Type: TypeBool, Default: "true",
		Description: "Label the lifecycle histograms with the resource's namespace (the operator-wide view is their sum); false: operator-wide histograms only. Read at start."},
	{Name: KeyExceptionFieldMaxLength, Type: TypeInt, Default: "2048", check: atLeast(0),
		Description: "Maximum length of the type, message and reason of each exception in the JSON of `status.error`."},
	{Name: KeyExceptionLabelMapper, Type: TypeMap, check: regexpKeys,
		Description: "Maps a regular expression to a label (`regex:label,...`); when it is found in the message of the `status.error` exception or of one of its causes, the label is added to `additionalMetadata.labels`."},
	{Name: KeyExceptionStackTraceEnabled, Type: TypeBool, Default: "false",
		Description: "Put the exception's stack trace into `status.error` (`stackTrace`) when it has one."},
	{Name: KeyExceptionStackTraceMaxLength, Type: TypeInt, Default: "2048", check: atLeast(0),
		Description: "Maximum length of that stack trace."},
	{Name: KeyExceptionThrowableListMaxCount, Type: TypeInt, Default: "2", check: atLeast(0),
		Description: "Maximum number of causes in `throwableList` of `status.error`."},
	{Name: KeyLabelSelector, Type: TypeString, check: labelSelector,
		Description: "Label selector of the FlinkDeployments, FlinkSessionJobs and FlinkStateSnapshots this operator watches (Kubernetes label-selector syntax, e.g. `team=a,env in (prod)`); unset: all. The snapshots the operator makes copy their job's labels; snapshots a user creates, and a session job's FlinkDeployment, must match too. Read at start."},
	{Name: KeyResourceCleanupTimeout, Type: TypeDuration, Default: "5 min", check: positive, Deprecated: []string{"kubernetes.operator.reconciler.flink.cluster.shutdown.timeout"},
		Description: "How long the deletion of a resource waits for its Flink cluster (Deployments and pods) to go before its finalizer is removed anyway, with a Warning event; a teardown before a new cluster reports what it still waits for after this time."},
	{Name: KeyIngressManage, Type: TypeBool, Default: "true",
		Description: "Manage the Ingress of `spec.ingress` (create, update, delete it, and watch Ingresses). False: no Ingress informer, no Ingress is created, and a FlinkDeployment with `spec.ingress` gets an `IngressManagement` Warning event when deployed."},

	// --- snapshots: operator-wide caps and guards ---
	{Name: KeySavepointHistoryMaxCountThreshold, Type: TypeInt, DefaultDoc: "unset (no cap)",
		Description: "Admin cap on the per-job savepoint history count: effective = min(max.count, threshold). Not overridable, or a job could lift its own cap."},
	{Name: KeySavepointHistoryMaxAgeThreshold, Type: TypeDuration, DefaultDoc: "unset (no cap)",
		Description: "Admin cap on the per-job savepoint history age: effective = min(max.age, threshold). Not overridable, or a job could lift its own cap."},
	{Name: KeySnapshotMaxConcurrent, Type: TypeInt, DefaultDoc: "unset (unlimited)", check: atLeast(1),
		Description: "Operator-wide cap on snapshots IN_PROGRESS at once, to protect shared storage; others wait in TRIGGER_PENDING. Ours."},
	{Name: KeySnapshotDisposeTimeout, Type: TypeDuration, Default: "10 min", check: positive,
		Description: "How long a savepoint's disposal is retried on deletion before the finalizer is removed anyway (with a DisposeSkipped event naming the path). Ours: upstream retries forever. Not overridable, because it is what guarantees that deletion never hangs."},
	{Name: KeySnapshotNormalEventsEnabled, Type: TypeBool, Default: "false",
		Description: "Emit Normal SnapshotTriggered and SnapshotCompleted events on FlinkStateSnapshots. Ours; off by default, as upstream has no such events: they are two API writes per snapshot (of five) for what status.state and the operator's log already say. Warnings are always emitted."},
	{Name: KeySnapshotCrossNamespaceReferencesEnabled, Type: TypeBool, Default: "false",
		Description: "Allow a FlinkStateSnapshot to reference a job in another namespace (also needs the webhook's access review). Ours. Not overridable: it is a privilege the admin grants, not one a resource grants itself."},

	// --- snapshots: per resource ---
	{Name: KeySnapshotResourceEnabled, Type: TypeBool, Default: "true", Overridable: true,
		Description: "Use FlinkStateSnapshot resources; false = legacy status fields. Snapshot resources are used only if both the operator-wide and the job's value are true (see SnapshotResourcesEnabled)."},
	{Name: KeyPeriodicSavepointInterval, Type: TypeString, DefaultDoc: "unset (off)", Overridable: true,
		Description: "Periodic savepoints: a duration (`10m`, `6h`) or a Quartz cron expression (`0 */10 * * * ?`); blank or `0` = off."},
	{Name: KeyPeriodicCheckpointInterval, Type: TypeString, DefaultDoc: "unset (off)", Overridable: true,
		Description: "Periodic checkpoints (Flink 1.17+), same syntax as the savepoint interval; blank or `0` = off."},
	{Name: KeySavepointHistoryMaxCount, Type: TypeInt, Default: "10", Overridable: true,
		Description: "Savepoints (PERIODIC and UPGRADE) kept per job by history cleanup; values below 1 count as 1."},
	{Name: KeySavepointHistoryMaxAge, Type: TypeDuration, Default: "24 h", Overridable: true,
		Description: "Savepoints (PERIODIC and UPGRADE) older than this are removed by history cleanup; the newest completed one is always kept."},
	{Name: KeySavepointCleanupEnabled, Type: TypeBool, Default: "true", Overridable: true,
		Description: "Enable history cleanup of savepoint and checkpoint snapshots."},
	{Name: KeySavepointDisposeOnDelete, Type: TypeBool, Default: "false", Overridable: true,
		Description: "disposeOnDelete of savepoints the operator creates (periodic, manual nonce, upgrade)."},
	{Name: KeySavepointFormatType, Type: TypeEnum, Default: "CANONICAL", Enum: []string{"CANONICAL", "NATIVE"}, Overridable: true,
		Description: "Format of savepoints the operator triggers, including stop-with-savepoint."},
	{Name: KeyCheckpointType, Type: TypeEnum, Default: "FULL", Enum: []string{"FULL", "INCREMENTAL", "UNKNOWN"}, Overridable: true,
		Description: "Checkpoint type of legacy-mode checkpoint triggers (snapshot resources always trigger FULL, like upstream)."},
	{Name: KeySavepointTriggerGracePeriod, Type: TypeDuration, Default: "1 min", Overridable: true,
		Deprecated:  []string{KeySavepointTriggerGracePeriodDeprecated},
		Description: "Legacy mode: how long a failing savepoint trigger is retried before it is given up."},
	// --- blue/green (a FlinkBlueGreenDeployment's spec.configuration) ---
	{Name: KeyBlueGreenAbortGracePeriod, Type: TypeDuration, Default: "10 min", Overridable: true,
		Description: "FlinkBlueGreenDeployment (`spec.configuration`): how long a new child FlinkDeployment may take to become ready before the transition is aborted and the active child kept."},
	{Name: KeyBlueGreenRescheduleInterval, Type: TypeDuration, Default: "15 s", Overridable: true,
		Description: "FlinkBlueGreenDeployment (`spec.configuration`): how often a transition in progress is looked at again."},
	{Name: KeyBlueGreenDeploymentDeletionDelay, Type: TypeDuration, Default: "0 ms", Overridable: true,
		Description: "FlinkBlueGreenDeployment (`spec.configuration`): how long the old child FlinkDeployment is kept after the new one became ready."},
	{Name: KeyCheckpointTriggerGracePeriod, Type: TypeDuration, Default: "1 min", Overridable: true,
		Description: "Legacy mode: how long a failing checkpoint trigger is retried before it is given up."},
	{Name: KeySnapshotTimeout, Type: TypeDuration, DefaultDoc: "`execution.checkpointing.timeout` + 1 min (11 min)", Overridable: true, check: positive,
		Description: "A snapshot IN_PROGRESS longer than this fails (and is retried per its backoff), so none is stuck forever. Ours. See SnapshotTimeout."},
	{Name: KeySnapshotBackoffLimit, Type: TypeInt, Default: "3", Overridable: true, check: atLeast(-1),
		Description: "backoffLimit of snapshots the operator creates (-1 = unlimited, 0 = no retry). Ours: upstream leaves them at 0."},
	{Name: KeySnapshotMaxConcurrentPerJob, Type: TypeInt, Default: "1", Overridable: true, check: atLeast(1),
		Description: "Snapshots of one job IN_PROGRESS at once; others wait in TRIGGER_PENDING. Ours. Per job; the operator-wide cap still applies."},

	// --- jobs ---
	{Name: KeyJobUpgradeLastStateFallbackEnabled, Type: TypeBool, Default: "true", Overridable: true,
		Description: "Savepoint upgrades of a job too unhealthy to take a savepoint fall back to its latest checkpoint; false = stop with an error instead."},
	{Name: KeyJobUpgradeLastStateMaxAllowedCheckpointAge, Type: TypeDuration, DefaultDoc: "unset", Overridable: true,
		Description: "Last-state upgrades whose latest checkpoint is older than this take a savepoint instead (needs a savepoint directory)."},
	{Name: KeyJobUpgradeIgnorePendingSavepoint, Type: TypeBool, Default: "false", Overridable: true,
		Description: "Legacy mode: let a spec upgrade proceed while a savepoint is pending instead of waiting for it."},
	{Name: KeyJobUpgradeInPlaceScalingEnabled, Type: TypeBool, Default: "true", Overridable: true,
		Description: "Apply a change of only `pipeline.jobvertex-parallelism-overrides` to a running job in place, through Flink's resource-requirements REST API (Flink 1.18+ with `jobmanager.scheduler: adaptive`), instead of an upgrade; the upgrade follows when it cannot (a removed override, an error). FlinkDeployments."},
	{Name: KeyUserArtifactsAllowedSchemes, Type: TypeList, Default: "https",
		Description: "URI schemes a FlinkSessionJob's `jarURI` may use (comma-separated, any case; `file` too must be listed), checked by the webhook and at every download and redirect. Operator-wide, as upstream: a resource cannot widen it."},
	{Name: KeyUserArtifactsBaseDir, Type: TypeString, Default: "/opt/flink/artifacts",
		Description: "Directory where the operator stages the jars it downloads for FlinkSessionJobs between download and upload; created when missing, must be writable."},
	{Name: KeyUserArtifactsDisallowRestrictedHosts, Type: TypeBool, Default: "true",
		Description: "Refuse to fetch a session job's jar from a loopback, link-local, private, unspecified or multicast address, checked on every address the download connects to. Operator-wide, as upstream."},
	{Name: KeyUserArtifactsHTTPHeader, Type: TypeMap, Overridable: true,
		Description: "HTTP headers sent when downloading a session job's jar, `name:value,name:value`; not sent to another host on a redirect."},
	{Name: KeyJMDeploymentStartupProbeEnabled, Type: TypeBool, Default: "true", Overridable: true,
		Description: "Give the JobManager container a startup probe on its REST port."},
	{Name: KeyJMDeploymentShutdownTTL, Type: TypeDuration, Default: "1 d", Overridable: true, check: positive,
		Description: "How long the JobManager of an application whose job reached a terminal state (FINISHED, FAILED, CANCELED) keeps running before it is shut down."},
	{Name: KeyJobSubmissionTimeout, Type: TypeDuration, Default: "10 min", Overridable: true, check: positive,
		Description: "Bounds each job submission REST call (a FlinkSessionJob's jar upload and jar run)."},
	{Name: KeyJobUpgradeLastStateJobCancelEnabled, Type: TypeBool, Default: "false", Overridable: true,
		Description: "Last-state upgrades cancel the job before the cluster is deleted."},
	{Name: KeySessionDeletionBlockOnUnmanagedJobs, Type: TypeBool, Default: "true", Overridable: true,
		Deprecated:  []string{"kubernetes.operator.session.block-on-unmanaged-jobs"},
		Description: "A session cluster is not deleted while it runs jobs that no FlinkSessionJob manages."},
	{Name: KeyResourceDeletionPropagation, Type: TypeEnum, Default: "Foreground", Enum: []string{"Foreground", "Background", "Orphan"}, Overridable: true,
		Description: "Deletion propagation of the JobManager and TaskManager Deployments the operator deletes."},
	{Name: KeyJobSavepointOnDeletion, Type: TypeBool, Default: "false", Overridable: true,
		Description: "Stop the job with a savepoint when its resource is deleted (bounded by a timeout; deletion never blocks forever)."},
	{Name: KeyJobDrainOnSavepointDeletion, Type: TypeBool, Default: "false", Overridable: true,
		Description: "`drain` flag of the stop-with-savepoint on deletion."},
	{Name: KeyJobRestartFailed, Type: TypeBool, Default: "false", Overridable: true,
		Description: "Redeploy a job that reached FAILED, with the same spec, from its latest checkpoint or savepoint (recorded when it failed); FlinkDeployments and FlinkSessionJobs."},
	{Name: KeyClusterHealthCheckEnabled, Type: TypeBool, Default: "false", Overridable: true,
		Description: "Health check of application clusters: a job that restarts too often (`restarts.*`) or completes no checkpoint in time (`checkpoint-progress.*`) is restarted keeping its state (last-state), with a `RestartUnhealthyJob` event. The check's record is `status.clusterInfo.ClusterHealthInfo`, as upstream."},
	{Name: KeyClusterHealthCheckRestartsWindow, Type: TypeDuration, Default: "2 min", Overridable: true, check: positive,
		Description: "Window in which the job's restarts (Flink's `numRestarts` metric) are counted."},
	{Name: KeyClusterHealthCheckRestartsThreshold, Type: TypeInt, Default: "64", Overridable: true,
		Description: "More restarts than this within the window make the job unhealthy."},
	{Name: KeyClusterHealthCheckCheckpointProgressEnabled, Type: TypeBool, Default: "true", Overridable: true,
		Description: "With the health check on: a job with checkpointing that completes no checkpoint within the window is unhealthy."},
	{Name: KeyClusterHealthCheckCheckpointProgressWindow, Type: TypeDuration, DefaultDoc: "unset: `max(checkpointing interval, checkpoint timeout) × (tolerable failed checkpoints + 2)`", Overridable: true,
		Description: "Window for the checkpoint progress check; a shorter one than the default's formula is raised to it, as upstream."},
	{Name: KeyJMDeploymentRecoveryEnabled, Type: TypeBool, Default: "true", Overridable: true,
		Deprecated:  []string{KeyJMDeploymentRecoveryEnabledDeprecated},
		Description: "Recreate a JobManager Deployment deleted by someone else (a `RecoverDeployment` Warning event) when that cannot lose state: a session cluster, a stateless job, or a job with high availability, whose new JobManager recovers it from the HA metadata's latest checkpoint. Otherwise, and when false, the loss is reported and nothing is recreated."},
	{Name: KeyDeploymentReadinessTimeout, Type: TypeDuration, Default: "5 min", Overridable: true, check: positive,
		Description: "How long a deployed spec may take to become stable (its job observed running; a session cluster's JobManager ready) before it is rolled back (with `deployment.rollback.enabled`), and a JobManager deployment to become ready before it is reported as an error."},
	{Name: KeyDeploymentRollbackEnabled, Type: TypeBool, Default: "false", Overridable: true,
		Description: "Roll back a FlinkDeployment upgrade that is not stable within `deployment.readiness.timeout` to the last stable spec, keeping the job's state (the upgrade savepoint or its latest checkpoint): reconciliation state `ROLLING_BACK`, then `ROLLED_BACK` until the spec changes again. Never back to a job that was suspended, nor across a Flink version change. See [Rollbacks](deployments.md#rollbacks)."},

	// --- Flink options the operator reads ---
	{Name: FlinkSavepointDir, Type: TypeString, Flink: true, Overridable: true, DefaultDoc: "unset",
		Deprecated:  []string{FlinkSavepointDirDeprecated, FlinkSavepointDirLegacy},
		Description: "Flink: default savepoint directory; needed for periodic, manual-nonce and upgrade savepoints unless the snapshot gives a path."},
	{Name: FlinkCheckpointDir, Type: TypeString, Flink: true, Overridable: true, DefaultDoc: "unset",
		Deprecated:  []string{FlinkCheckpointDirDeprecated},
		Description: "Flink: checkpoint directory; needed for last-state and savepoint upgrade modes."},
	{Name: FlinkCheckpointsNumRetained, Type: TypeInt, Flink: true, Overridable: true, Default: "1",
		Deprecated:  []string{FlinkCheckpointsNumRetainedDeprecated},
		Description: "Flink: retained checkpoints; also the number of checkpoint snapshots kept by history cleanup (values below 1 count as 1)."},
	{Name: FlinkCheckpointTimeout, Type: TypeDuration, Flink: true, Overridable: true, Default: "10 min", check: positive,
		Description: "Flink: checkpoint/savepoint timeout; the snapshot timeout is derived from it."},
	{Name: FlinkRestPort, Type: TypeInt, Flink: true, Overridable: true, Default: "8081",
		check: func(c Config, key string) error {
			if n, _ := c.Int(key); n < 1 || n > 65535 {
				return errors.New("must be a port between 1 and 65535")
			}
			return nil
		},
		Description: "Flink: JobManager REST port; the operator's REST endpoint is `<name>-rest.<namespace>.svc:<rest.port>`."},
	{Name: FlinkRestAsyncStoreDuration, Type: TypeDuration, Flink: true, Overridable: true, Default: "5 min", check: positive,
		Description: "Flink: how long the JobManager remembers async operation results (trigger ids); after it a status poll gets 404."},
}

// byName indexes the registry by every name, deprecated ones included. It
// is filled in init, not in its declaration, because the registry's checks
// read values through Config getters, which use byName (an initialization
// cycle otherwise).
var byName map[string]*Key

func init() {
	byName = make(map[string]*Key, len(registry)*2)
	for i := range registry {
		k := &registry[i]
		for _, name := range k.names() {
			if _, dup := byName[name]; dup {
				panic("config: key registered twice: " + name)
			}
			byName[name] = k
		}
	}
}

// Keys returns a copy of every registered key, sorted by name.
func Keys() []Key {
	keys := make([]Key, len(registry))
	for i := range registry {
		keys[i] = registry[i].clone()
	}
	slices.SortFunc(keys, func(a, b Key) int { return strings.Compare(a.Name, b.Name) })
	return keys
}

// LookupKey finds a registered key by its name or one of its deprecated
// names; the result always carries the current name.
func LookupKey(name string) (Key, bool) {
	k, ok := byName[name]
	if !ok {
		return Key{}, false
	}
	return k.clone(), true
}

// clone copies the slices too, so a caller cannot change the registry.
func (k *Key) clone() Key {
	c := *k
	c.Enum = slices.Clone(k.Enum)
	c.Deprecated = slices.Clone(k.Deprecated)
	return c
}

// names lists the current name first, then the deprecated ones.
func (k *Key) names() []string {
	return append([]string{k.Name}, k.Deprecated...)
}

// AutoscalerPrefix starts the options of upstream's job autoscaler.
const AutoscalerPrefix = "job.autoscaler."

// OperatorOnlyKey reports a flinkConfiguration key that configures the
// operator, not Flink: a change of such keys alone never redeploys a job
// (upstream's AbstractFlinkSpec marks them IGNORE for its spec diff), and
// the operator reads them from the current spec, not the deployed one
// (upstream's FlinkConfigManager.getObserveConfig).
func OperatorOnlyKey(key string) bool {
	return strings.HasPrefix(key, OperatorPrefix) || strings.HasPrefix(key, AutoscalerPrefix)
}
