package config

import (
	"slices"
	"strings"
)

// Status says how an option of the Apache Flink Kubernetes Operator's
// configuration reference (operator and metric options) stands here.
type Status string

// The statuses of upstream options.
const (
	// StatusImplemented: registered under the same name, with upstream's
	// meaning and default.
	StatusImplemented Status = "implemented"
	// StatusDifferent: deliberately different (a default, a meaning, or
	// fixed to upstream's default and not configurable); the reason says
	// how and why. The key may or may not be registered.
	StatusDifferent Status = "different"
	// StatusNotApplicable: the option configures something this operator
	// does not have (JOSDK, the JVM, Flink's metric reporters, Java
	// plugins); the reason names the equivalent here, if any.
	StatusNotApplicable Status = "not-applicable"
	// StatusNotYet: a known gap; the reason names the issue that tracks it.
	StatusNotYet Status = "not-yet"
)

// UpstreamKey is one option of upstream's configuration reference and its
// status here. The list is checked against upstream's reference (a copy in
// pkg/upstreamtest/testdata/config) by TestUpstreamParity, and rendered
// into the docs (ParityTable, DocTable), so code, docs and the comparison
// cannot drift.
type UpstreamKey struct {
	Key    string
	Status Status
	// Reason explains a status other than implemented (and may add a note
	// to an implemented one). Markdown.
	Reason string
}

// Reasons used by several keys.
const (
	reasonJOSDK = "configures upstream's Java Operator SDK (JOSDK), which this operator does not use"
	reasonScope = "scope format of Flink's metric reporters; metrics here are Prometheus series with labels (`namespace`, `type`, …), see [Metrics](operations.md#metrics)"
)

// upstreamKeys lists every option of upstream's operator configuration
// reference (kubernetes_operator_config_configuration.html) and metric
// configuration reference (kubernetes_operator_metric_configuration.html),
// release 1.15.0, sorted by name.
var upstreamKeys = []UpstreamKey{
	// --- operator configuration ---
	{Key: KeyCheckpointTriggerGracePeriod, Status: StatusImplemented},
	{Key: KeyCheckpointType, Status: StatusImplemented},
	{Key: KeyClusterHealthCheckCheckpointProgressEnabled, Status: StatusImplemented},
	{Key: KeyClusterHealthCheckCheckpointProgressWindow, Status: StatusImplemented},
	{Key: KeyClusterHealthCheckEnabled, Status: StatusImplemented,
		Reason: "an unhealthy job without HA is restarted too (upstream: only stateless or with HA metadata): the restart keeps its latest checkpoint through the JobManager, see [Health checks and restarts](deployments.md#health-checks-and-restarts)"},
	{Key: KeyClusterHealthCheckRestartsThreshold, Status: StatusImplemented},
	{Key: KeyClusterHealthCheckRestartsWindow, Status: StatusImplemented},
	{Key: "kubernetes.operator.cluster.resource-view.refresh-interval", Status: StatusNotApplicable,
		Reason: "feeds upstream's autoscaler (cluster capacity before scaling up; off by default there), which this operator does not have"},
	{Key: "kubernetes.operator.config.cache.size", Status: StatusNotApplicable,
		Reason: "upstream caches the Flink configurations it builds per resource; here a resource's effective configuration is a merge of two string maps, rebuilt on each sync, with nothing to cache"},
	{Key: "kubernetes.operator.config.cache.timeout", Status: StatusNotApplicable,
		Reason: "see `config.cache.size`"},
	{Key: KeyDeploymentReadinessTimeout, Status: StatusDifferent,
		Reason: "same default; upstream uses it only to decide a rollback; here it also bounds how long a JobManager may take to become ready before `DeploymentError`, and a session job's stop"},
	{Key: KeyDeploymentRollbackEnabled, Status: StatusImplemented,
		Reason: "upstream also requires high availability (its webhook rejects the key without it, and it rolls back only while the HA metadata is there); here the failed job's state is read through Flink's REST API, so HA is not required, and a rollback whose state cannot be known stops with \"Manual restore required\" instead"},
	{Key: KeyDynamicConfigCheckInterval, Status: StatusImplemented},
	{Key: KeyDynamicConfigEnabled, Status: StatusImplemented,
		Reason: "the `--config` file (the mounted ConfigMap) is read again, as upstream re-reads its conf dir; an invalid file is not applied and the configuration in use stays; keys read only at start log that they need a restart and keep their value until then (see [Changing the configuration](operations.md#changing-the-configuration)); the admission webhook validates with the same live configuration as the controllers"},
	{Key: KeyDynamicNamespacesEnabled, Status: StatusDifferent,
		Reason: "a changed namespace set rebuilds the informers, caches and controllers in the same process (as when the FlinkStateSnapshot CRD appears), where upstream only restarts its event sources: probes and webhook restart briefly and, with leader election, the lease is contested again; `--namespaces`, when given, wins"},
	{Key: KeyEventsExceptionsLimit, Status: StatusImplemented},
	{Key: KeyEventsExceptionsStacktraceLines, Status: StatusImplemented},
	{Key: KeyExceptionFieldMaxLength, Status: StatusImplemented,
		Reason: "`status.error` is upstream's FlinkResourceException JSON (several errors of one reconcile: the first's type, all messages joined with `; `); lengths count characters rather than UTF-16 units"},
	{Key: KeyExceptionLabelMapper, Status: StatusDifferent,
		Reason: "Go (RE2) regular expressions instead of Java's; patterns are applied in sorted order"},
	{Key: KeyExceptionStackTraceEnabled, Status: StatusDifferent,
		Reason: "the operator's own errors are Go errors with no Java stack trace, so only an error that carries Flink's exception has a `stackTrace`; a FAILED job's exception is reported as `JobException` events, not in `status.error`"},
	{Key: KeyExceptionStackTraceMaxLength, Status: StatusDifferent,
		Reason: "see `exception.stacktrace.enabled`"},
	{Key: KeyExceptionThrowableListMaxCount, Status: StatusImplemented},
	{Key: KeyFlinkClientCancelTimeout, Status: StatusImplemented},
	{Key: KeyFlinkClientTimeout, Status: StatusImplemented},
	{Key: KeyHealthCanaryResourceTimeout, Status: StatusImplemented,
		Reason: "see [Health probes and canary resources](operations.md#health-probes-and-canary-resources)"},
	{Key: KeyHealthProbeEnabled, Status: StatusDifferent,
		Reason: "`false` turns off the canary checks and `/healthz` always answers ok, but the probe server stays: it also serves `/readyz` (ready once the caches synced), and its address is the flag `--health-probe-bind-address` (`:8081`; `0` turns the server off). Upstream then serves no health endpoint at all"},
	{Key: "kubernetes.operator.health.probe.port", Status: StatusDifferent,
		Reason: "the probe address is the flag `--health-probe-bind-address` (default `:8081`), as in Kubernetes controllers"},
	{Key: KeyIngressManage, Status: StatusImplemented},
	{Key: KeyJMDeploymentRecoveryEnabled, Status: StatusImplemented,
		Reason: "as upstream, a lost JobManager of a job that is neither stateless nor highly available is not recreated (that would restart it from older state): \"Manual restore required\""},
	{Key: KeyJMDeploymentShutdownTTL, Status: StatusImplemented,
		Reason: "as upstream, counted from jobStatus.updateTime; the JobManager and TaskManager Deployments are deleted with a Cleanup event, HA ConfigMaps, ConfigMap and Services kept; the next upgrade restarts the job from the last state recorded when it ended"},
	{Key: KeyJMDeploymentStartupProbeEnabled, Status: StatusImplemented,
		Reason: "the probe (HTTP GET `/config`, every second, never giving up; a pod template's `startupProbe` wins) targets the REST port by number rather than upstream's port name `rest`; it changes only the JobManager Deployment, which is never updated in place, so running clusters get it at their next deploy"},
	{Key: KeyJobDrainOnSavepointDeletion, Status: StatusImplemented},
	{Key: KeyJobRestartFailed, Status: StatusImplemented},
	{Key: KeyJobSavepointOnDeletion, Status: StatusImplemented},
	{Key: KeyJobSubmissionTimeout, Status: StatusImplemented,
		Reason: "bounds the jar upload as well as the run (upstream: the run only; the upload by flink.client.timeout), and a session job or its cluster may set its own"},
	{Key: KeyJobUpgradeIgnorePendingSavepoint, Status: StatusImplemented},
	{Key: KeyJobUpgradeInPlaceScalingEnabled, Status: StatusImplemented,
		Reason: "FlinkDeployments in both modes (upstream: native mode); FlinkSessionJobs upgrade; standalone reactive mode's TaskManager replicas are not scaled in place"},
	{Key: KeyJobUpgradeLastStateFallbackEnabled, Status: StatusImplemented},
	{Key: KeyJobUpgradeLastStateJobCancelEnabled, Status: StatusImplemented,
		Reason: "matters where the job would otherwise not be cancelled: Kubernetes-HA clusters (native or standalone) whose job ConfigMap holds checkpoint pointers; a job with DELETE_ON_CANCELLATION is never cancelled; the new job restores from the newest checkpoint the REST API reports under a new job id, as upstream (Flink keeps the cancelled job's result in its job result store, under the old id)"},
	{Key: KeyJobUpgradeLastStateMaxAllowedCheckpointAge, Status: StatusImplemented},
	{Key: KeyLabelSelector, Status: StatusImplemented,
		Reason: "as upstream, the FlinkDeployment, FlinkSessionJob and FlinkStateSnapshot informers list and watch only matching resources, and the admission webhook validates every resource alike; the FlinkStateSnapshots the operator creates (periodic, manual nonce, upgrade, suspend, savepoint on deletion) copy their job's labels, so they match the selector their job matches (upstream's carry only the trigger-type label, so a selector hides them from upstream's own snapshot controller); a restart applies a change"},
	{Key: KeyLeaderElectionEnabled, Status: StatusImplemented, Reason: "also the flag `--leader-elect`, which wins"},
	{Key: KeyLeaderElectionLeaseDuration, Status: StatusImplemented},
	{Key: KeyLeaderElectionLeaseName, Status: StatusImplemented, Reason: "also the flag `--leader-election-id`, which wins"},
	{Key: KeyLeaderElectionRenewDeadline, Status: StatusImplemented},
	{Key: KeyLeaderElectionRetryPeriod, Status: StatusImplemented},
	{Key: KeyProgressCheckInterval, Status: StatusImplemented},
	{Key: "kubernetes.operator.observer.rest-ready.delay", Status: StatusNotApplicable,
		Reason: "upstream waits this long after the REST Service exists before calling it; here the REST API is called at once, and while it does not answer the JobManager is `DEPLOYED_NOT_READY` and asked again after `observer.progress-check.interval`"},
	{Key: KeyPeriodicCheckpointInterval, Status: StatusImplemented},
	{Key: KeyPeriodicSavepointInterval, Status: StatusImplemented},
	{Key: "kubernetes.operator.plugins.listeners.<listener-name>.class", Status: StatusNotApplicable,
		Reason: "Java listener plugins (`FlinkResourceListener`) loaded into upstream's JVM; here watch the resources' status and events through the Kubernetes API instead"},
	{Key: "kubernetes.operator.pod-template.merge-arrays-by-name", Status: StatusDifferent,
		Reason: "the arrays of `podTemplate` and `jobManager`/`taskManager.podTemplate` are always merged by name or natural key (volumeMounts by mountPath, ports by number and protocol; arrays without names appended, duplicates dropped), close to upstream's `true`. Upstream's default (`false`) merges them by position, deep-merging unrelated items (volumes `a` emptyDir + `b` configMap become one invalid volume `b`; env `[A]` + `[B]` becomes `[B]`); switching to it would change, and could invalidate, running clusters' TaskManager pods on an operator upgrade"},
	{Key: KeyRateLimiterLimit, Status: StatusImplemented,
		Reason: "counts the syncs that change something (an API write or a state-changing Flink REST call): upstream's framework never reconciles on the echo of a resource's own status write, while here that echo is a sync that finds nothing to do and must not use up the budget"},
	{Key: KeyRateLimiterRefreshPeriod, Status: StatusImplemented},
	{Key: KeyReconcileInterval, Status: StatusImplemented},
	{Key: KeyReconcileParallelism, Status: StatusDifferent,
		Reason: "syncs per controller at once, default 200 (-1 no bound, as upstream): upstream's 50 size a thread pool; here a sync is a goroutine started for the work, so an idle controller holds none and a burst of savepoints is taken up at once (docs/performance.md)"},
	{Key: KeyResourceCleanupTimeout, Status: StatusDifferent,
		Reason: "bounds how long a deletion waits for the cluster's Deployments and pods (after the savepoint on deletion's own bound); then the finalizer goes with a Warning event, as upstream. An upgrade's or suspend's teardown is not cut short (a new JobManager never starts beside the old one): past the timeout it reports what it waits for in `status.error` and a Warning event"},
	{Key: KeyResourceDeletionPropagation, Status: StatusImplemented,
		Reason: "every JobManager/TaskManager Deployment delete the operator makes uses it; a new cluster is still created only once the old cluster's pods are gone, whatever the policy (with `Orphan` an upgrade, suspend or restart waits, with `status.error`, until the orphaned pods are deleted), and a deletion with `Orphan` keeps the HA ConfigMaps of the cluster it leaves running; a standalone cluster's deletion is left to the garbage collector through owner references"},
	{Key: KeyRetryInitialInterval, Status: StatusImplemented},
	{Key: KeyRetryIntervalMultiplier, Status: StatusImplemented},
	{Key: KeyRetryMaxAttempts, Status: StatusDifferent,
		Reason: "same default; after the last attempt the resource is synced again after `reconcile.interval` with the delays starting over, where upstream waits for the resource's next change"},
	{Key: KeyRetryMaxInterval, Status: StatusImplemented},
	{Key: KeySavepointCleanupEnabled, Status: StatusImplemented},
	{Key: KeySavepointDisposeOnDelete, Status: StatusImplemented},
	{Key: KeySavepointFormatType, Status: StatusImplemented},
	{Key: KeySavepointHistoryMaxAge, Status: StatusImplemented},
	{Key: KeySavepointHistoryMaxAgeThreshold, Status: StatusImplemented},
	{Key: KeySavepointHistoryMaxCount, Status: StatusImplemented},
	{Key: KeySavepointHistoryMaxCountThreshold, Status: StatusImplemented},
	{Key: KeySavepointTriggerGracePeriod, Status: StatusImplemented},
	{Key: "kubernetes.operator.session.deletion.block-on-session-jobs", Status: StatusDifferent,
		Reason: "not configurable: always `true`, upstream's default (a session cluster is kept while FlinkSessionJobs run on it)"},
	{Key: KeySessionDeletionBlockOnUnmanagedJobs, Status: StatusImplemented,
		Reason: "as upstream: checked once no FlinkSessionJob is left; a JobManager that does not answer does not hold the deletion; reported in status.error with a Cleanup Warning (upstream: CleanupFailed)"},
	{Key: KeySnapshotResourceEnabled, Status: StatusImplemented},
	{Key: "kubernetes.operator.startup.stop-on-informer-error", Status: StatusNotApplicable,
		Reason: reasonJOSDK + "; here the operator stays not ready (`/readyz`) and keeps retrying until its caches sync"},
	{Key: "kubernetes.operator.termination.timeout", Status: StatusNotApplicable,
		Reason: reasonJOSDK + " (how long it waits for running reconciliations at shutdown); here the operator's HTTP servers get a fixed 10 s to shut down"},
	{Key: KeyUserArtifactsAllowedSchemes, Status: StatusImplemented,
		Reason: "checked by the webhook and again at every download and redirect; `file` must be listed for `file://` jars; schemes other than http(s) and file are refused even if listed (see [sessionjobs.md](sessionjobs.md))"},
	{Key: KeyUserArtifactsBaseDir, Status: StatusImplemented,
		Reason: "downloads are anonymous temporary files there, unlinked at once (no `<ns>/<cluster>/<job>` tree); `file://` jars are read in place; the install mounts an emptyDir there"},
	{Key: KeyUserArtifactsDisallowRestrictedHosts, Status: StatusImplemented,
		Reason: "checked on every address the download connects to, after DNS resolution and for redirects (DNS rebinding cannot bypass it); at admission only IP literals and localhost names; also refuses IPv6 unique local addresses (fc00::/7) and 0.0.0.0/8"},
	{Key: KeyUserArtifactsHTTPHeader, Status: StatusImplemented,
		Reason: "not sent on a redirect to another host; values never logged"},
	{Key: KeyWatchedNamespaces, Status: StatusImplemented,
		Reason: "unset means all namespaces, and upstream's default `JOSDK_ALL_NAMESPACES` is accepted with the same meaning; the flag `--namespaces` wins"},

	// --- metric configuration ---
	{Key: "kubernetes.operator.josdk.metrics.enabled", Status: StatusNotApplicable,
		Reason: reasonJOSDK + "; the equivalent, the `workqueue_*` series, is always on"},
	{Key: "kubernetes.operator.jvm.metrics.enabled", Status: StatusNotApplicable,
		Reason: "no JVM; the Go runtime and process series (`go_*`, `process_*`) are always on"},
	{Key: KeyKubernetesClientMetricsEnabled, Status: StatusImplemented,
		Reason: "client-go's request metrics under the names Kubernetes components give them (see [Metrics](operations.md#metrics)): `rest_client_requests_total` by `code` and `method` (upstream's `HttpRequest.<METHOD>.Count`, `HttpResponse.<code>.Count`; `HttpRequest.Failed` is code `<error>`), `rest_client_request_duration_seconds` by `verb` and `path` (`HttpResponse.TimeNanos`), rate-limiter waits and retries; upstream's `NumPerSecond` meters are `rate()`, its response code groups a label match (`code=~\"5..\"`) and its slow requests the count above the latency histogram's 5 s bucket, so `http.response.code.groups.enabled` and `slow.request.threshold` do not apply; read at start"},
	{Key: "kubernetes.operator.kubernetes.client.metrics.http.response.code.groups.enabled", Status: StatusNotApplicable,
		Reason: "see `kubernetes.client.metrics.enabled`"},
	{Key: "kubernetes.operator.kubernetes.client.metrics.slow.request.threshold", Status: StatusNotApplicable,
		Reason: "see `kubernetes.client.metrics.enabled`"},
	{Key: "kubernetes.operator.metrics.histogram.sample.size", Status: StatusNotApplicable,
		Reason: "Flink's histograms keep a sample; Prometheus histograms here have fixed buckets"},
	{Key: "kubernetes.operator.metrics.scope.k8soperator.resource", Status: StatusNotApplicable, Reason: reasonScope},
	{Key: "kubernetes.operator.metrics.scope.k8soperator.resourcens", Status: StatusNotApplicable, Reason: reasonScope},
	{Key: "kubernetes.operator.metrics.scope.k8soperator.system", Status: StatusNotApplicable, Reason: reasonScope},
	{Key: KeyResourceLifecycleMetricsEnabled, Status: StatusImplemented,
		Reason: "as `flink_operator_lifecycle_state_duration_seconds`, `flink_operator_lifecycle_transition_duration_seconds` and `flink_operator_lifecycle_resources` (see [Metrics](operations.md#metrics)), with upstream's states, transitions and clearing rules; tracked from the informers, a state's time ends when the resource is first seen in another state (upstream: its last sighting); read at start"},
	{Key: KeyResourceLifecycleNamespaceHistogramsEnabled, Status: StatusImplemented,
		Reason: "true: the histograms carry `namespace` and the operator-wide view is their sum (Prometheus histograms add up exactly, so upstream's separate operator-wide histograms are not exported as well); false: operator-wide only, without a namespace; read at start"},
	{Key: KeyResourceMetricsEnabled, Status: StatusImplemented,
		Reason: "per namespace, from the informer caches at scrape time (see [Metrics](operations.md#metrics)): FlinkDeployments and FlinkSessionJobs (`flink_operator_resources`, upstream's `Count`), FlinkDeployments by JobManager deployment status (`flink_operator_jobmanager_deployments`, `JmDeploymentStatus.<STATUS>.Count`) and by Flink version (`flink_operator_flink_versions`, `FlinkVersion` and, as a label, `FlinkMinorVersion`), FlinkStateSnapshots by type and state (`flink_operator_snapshots`); the lifecycle-state counts are `flink_operator_lifecycle_resources` (`resource.lifecycle.metrics.enabled`); upstream's `ResourceUsage` gauges (Cpu, Memory, StateSize) are left out, as the status here does not record their inputs; read at start"},
}

// upstreamOutsideReference lists upstream's options that its configuration
// reference leaves out, with the class that defines them: registered here
// with upstream's name, type and default (TestUpstreamOutsideReference),
// shown as upstream's in DocTable, and not in ParityTable, which mirrors the
// reference.
var upstreamOutsideReference = map[string]string{
	KeyBlueGreenAbortGracePeriod:        "FlinkBlueGreenDeploymentConfigOptions",
	KeyBlueGreenRescheduleInterval:      "FlinkBlueGreenDeploymentConfigOptions",
	KeyBlueGreenDeploymentDeletionDelay: "FlinkBlueGreenDeploymentConfigOptions",
}

// upstreamByKey indexes upstreamKeys.
var upstreamByKey = func() map[string]*UpstreamKey {
	m := make(map[string]*UpstreamKey, len(upstreamKeys))
	for i := range upstreamKeys {
		if _, dup := m[upstreamKeys[i].Key]; dup {
			panic("config: upstream key listed twice: " + upstreamKeys[i].Key)
		}
		m[upstreamKeys[i].Key] = &upstreamKeys[i]
	}
	return m
}()

// UpstreamKeys returns every option of upstream's configuration reference
// with its status here, sorted by name.
func UpstreamKeys() []UpstreamKey {
	out := slices.Clone(upstreamKeys)
	slices.SortFunc(out, func(a, b UpstreamKey) int { return strings.Compare(a.Key, b.Key) })
	return out
}

// LookupUpstream finds an option of upstream's configuration reference.
func LookupUpstream(name string) (UpstreamKey, bool) {
	u, ok := upstreamByKey[name]
	if !ok {
		return UpstreamKey{}, false
	}
	return *u, true
}

// statusText is the status as the docs show it.
func (u UpstreamKey) statusText() string {
	switch u.Status {
	case StatusImplemented:
		return "implemented"
	case StatusDifferent:
		return "**different**"
	case StatusNotApplicable:
		return "not applicable"
	case StatusNotYet:
		return "**not yet**"
	}
	return string(u.Status)
}

// ParityTable renders every option of upstream's configuration reference
// with its status here and the reason, as a Markdown table sorted by name,
// for docs/compatibility.md.
func ParityTable() string {
	var b strings.Builder
	b.WriteString("| upstream key | here | notes |\n")
	b.WriteString("| --- | --- | --- |\n")
	for _, u := range UpstreamKeys() {
		writeRow(&b, "`"+u.Key+"`", u.statusText(), u.Reason)
	}
	return b.String()
}

// GapTable renders the options of upstream's reference that are not
// registered here (not yet, not applicable, or fixed to upstream's
// default), for docs/operations.md beside DocTable.
func GapTable() string {
	var b strings.Builder
	b.WriteString("| upstream key | here | notes |\n")
	b.WriteString("| --- | --- | --- |\n")
	for _, u := range UpstreamKeys() {
		if _, registered := byName[u.Key]; registered {
			continue
		}
		writeRow(&b, "`"+u.Key+"`", u.statusText(), u.Reason)
	}
	return b.String()
}

// writeRow writes one Markdown table row, escaping pipes in the cells.
func writeRow(b *strings.Builder, cells ...string) {
	for i, c := range cells {
		cells[i] = strings.ReplaceAll(c, "|", `\|`)
	}
	b.WriteString("| " + strings.Join(cells, " | ") + " |\n")
}

// upstreamWarning is the load-time warning for an upstream option that has
// no effect here (not yet, not applicable, or not configurable), so an
// upstream configuration file shows at once what it does not get.
func upstreamWarning(name string) (Warning, bool) {
	u, ok := upstreamByKey[name]
	if !ok {
		return Warning{}, false
	}
	switch u.Status {
	case StatusNotYet:
		return Warning{Key: name, Message: "upstream option not implemented yet, it has no effect (" + plain(u.Reason) + ")"}, true
	case StatusNotApplicable:
		return Warning{Key: name, Message: "upstream option with no effect here: " + plain(u.Reason)}, true
	case StatusDifferent:
		if _, registered := byName[name]; !registered {
			return Warning{Key: name, Message: "upstream option, not configurable here: " + plain(u.Reason)}, true
		}
	}
	return Warning{}, false
}

// plain drops Markdown's backquotes and links' targets from a reason, for
// log lines and events.
func plain(s string) string {
	s = strings.ReplaceAll(s, "`", "")
	for {
		i := strings.Index(s, "](")
		if i < 0 {
			return s
		}
		j := strings.Index(s[i:], ")")
		if j < 0 {
			return s
		}
		k := strings.LastIndex(s[:i], "[")
		if k < 0 {
			return s
		}
		s = s[:k] + s[k+1:i] + s[i+j+1:]
	}
}
