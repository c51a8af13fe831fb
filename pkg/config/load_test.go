package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The defaults the specs and the upstream reference (KubernetesOperatorConfigOptions)
// name, pinned so that a changed default is a deliberate, reviewed change.
func TestDefaultsMatchSpec(t *testing.T) {
	want := map[string]string{
		KeyReconcileInterval:                           "60 s",
		KeyBlueGreenAbortGracePeriod:                   "10 min",
		KeyBlueGreenRescheduleInterval:                 "15 s",
		KeyBlueGreenDeploymentDeletionDelay:            "0 ms",
		KeyProgressCheckInterval:                       "10 s",
		KeyFlinkClientTimeout:                          "10 s",
		KeyFlinkClientCancelTimeout:                    "1 min",
		KeyReconcileParallelism:                        "200",
		KeyRateLimiterLimit:                            "5",
		KeyRateLimiterRefreshPeriod:                    "15 s",
		KeyRetryInitialInterval:                        "5 s",
		KeyRetryIntervalMultiplier:                     "1.5",
		KeyRetryMaxAttempts:                            "15",
		KeyLeaderElectionEnabled:                       "false",
		KeyLeaderElectionLeaseDuration:                 "15 s",
		KeyLeaderElectionRenewDeadline:                 "10 s",
		KeyLeaderElectionRetryPeriod:                   "2 s",
		KeyResourceMetricsEnabled:                      "true",
		KeyKubernetesClientMetricsEnabled:              "true",
		KeyEventsExceptionsLimit:                       "10",
		KeyEventsExceptionsStacktraceLines:             "5",
		KeyIngressManage:                               "true",
		KeySnapshotDisposeTimeout:                      "10 min",
		KeySnapshotCrossNamespaceReferencesEnabled:     "false",
		KeySnapshotNormalEventsEnabled:                 "false",
		KeySnapshotResourceEnabled:                     "true",
		KeySavepointHistoryMaxCount:                    "10",
		KeySavepointHistoryMaxAge:                      "24 h",
		KeySavepointCleanupEnabled:                     "true",
		KeySavepointDisposeOnDelete:                    "false",
		KeySavepointFormatType:                         "CANONICAL",
		KeyCheckpointType:                              "FULL",
		KeySavepointTriggerGracePeriod:                 "1 min",
		KeyCheckpointTriggerGracePeriod:                "1 min",
		KeySnapshotBackoffLimit:                        "3",
		KeySnapshotMaxConcurrentPerJob:                 "1",
		KeyJobUpgradeLastStateFallbackEnabled:          "true",
		KeyJobUpgradeIgnorePendingSavepoint:            "false",
		KeyJobUpgradeInPlaceScalingEnabled:             "true",
		KeyUserArtifactsAllowedSchemes:                 "https",
		KeyUserArtifactsBaseDir:                        "/opt/flink/artifacts",
		KeyUserArtifactsDisallowRestrictedHosts:        "true",
		KeyJMDeploymentStartupProbeEnabled:             "true",
		KeyJMDeploymentShutdownTTL:                     "1 d",
		KeyJobSubmissionTimeout:                        "10 min",
		KeyExceptionFieldMaxLength:                     "2048",
		KeyExceptionStackTraceEnabled:                  "false",
		KeyExceptionStackTraceMaxLength:                "2048",
		KeyExceptionThrowableListMaxCount:              "2",
		KeyResourceCleanupTimeout:                      "5 min",
		KeyResourceDeletionPropagation:                 "Foreground",
		KeyJobUpgradeLastStateJobCancelEnabled:         "false",
		KeySessionDeletionBlockOnUnmanagedJobs:         "true",
		KeyResourceLifecycleMetricsEnabled:             "true",
		KeyResourceLifecycleNamespaceHistogramsEnabled: "true",
		KeyDynamicConfigEnabled:                        "true",
		KeyDynamicConfigCheckInterval:                  "5 min",
		KeyDynamicNamespacesEnabled:                    "false",
		KeyHealthProbeEnabled:                          "true",
		KeyHealthCanaryResourceTimeout:                 "1 min",
		KeyJobSavepointOnDeletion:                      "false",
		KeyJobDrainOnSavepointDeletion:                 "false",
		KeyJobRestartFailed:                            "false",
		KeyDeploymentReadinessTimeout:                  "5 min",
		KeyDeploymentRollbackEnabled:                   "false",

		KeyClusterHealthCheckEnabled:                   "false",
		KeyClusterHealthCheckRestartsWindow:            "2 min",
		KeyClusterHealthCheckRestartsThreshold:         "64",
		KeyClusterHealthCheckCheckpointProgressEnabled: "true",
		KeyJMDeploymentRecoveryEnabled:                 "true",
	}
	if diff := cmp.Diff(want, map[string]string(Defaults())); diff != "" {
		t.Errorf("Defaults() (-want +got):\n%s", diff)
	}
	// Keys without a default: unset means off / unlimited / derived.
	for _, k := range []string{KeyPeriodicSavepointInterval, KeyPeriodicCheckpointInterval,
		KeySavepointHistoryMaxCountThreshold, KeySavepointHistoryMaxAgeThreshold, KeySnapshotTimeout,
		KeySnapshotMaxConcurrent, KeyWatchedNamespaces, KeyLeaderElectionLeaseName,
		KeyJobUpgradeLastStateMaxAllowedCheckpointAge, KeyClusterHealthCheckCheckpointProgressWindow} {
		if _, ok := Defaults().Raw(k); ok {
			t.Errorf("%s should have no default", k)
		}
	}
	// Flink's own defaults, applied by getters but never written.
	flink := map[string]string{FlinkCheckpointsNumRetained: "1", FlinkCheckpointTimeout: "10 min",
		FlinkRestPort: "8081", FlinkRestAsyncStoreDuration: "5 min"}
	for k, v := range flink {
		if got := (Config{}).String(k); got != v {
			t.Errorf("default of %s = %q, want %q", k, got, v)
		}
	}
}

func TestDefaultsIsACopy(t *testing.T) {
	d := Defaults()
	d[KeyReconcileInterval] = "1 s"
	if Defaults()[KeyReconcileInterval] != "60 s" {
		t.Fatal("Defaults() returned shared state")
	}
}

func writeFile(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestLoadFile(t *testing.T) {
	path := writeFile(t, `
# operator-wide
kubernetes.operator.reconcile.interval: 30 s
kubernetes.operator:
  watched.namespaces: team-a,team-b
  savepoint:
    history:
      max.count: 5
  observer.savepoint.trigger.grace-period: 2 min
  reconcile.intervall: 10 s
  totally.new.thing: x
# cluster defaults for every resource
state.savepoints.dir: s3://bucket/savepoints
taskmanager.numberOfTaskSlots: 2
`)
	cfg, warnings, err := LoadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	checks := map[string]string{
		KeyReconcileInterval:                      "30 s",
		KeySavepointHistoryMaxCount:               "5",
		KeySavepointTriggerGracePeriod:            "2 min", // via the deprecated name
		KeySavepointHistoryMaxAge:                 "24 h",  // default kept
		FlinkSavepointDir:                         "s3://bucket/savepoints",
		"taskmanager.numberOfTaskSlots":           "2",
		"kubernetes.operator.reconcile.intervall": "10 s", // unknown keys are kept
	}
	for k, want := range checks {
		if got := cfg.String(k); got != want {
			t.Errorf("%s = %q, want %q", k, got, want)
		}
	}
	if _, ok := cfg[KeySavepointTriggerGracePeriod]; ok {
		t.Errorf("the default under the new name should give way to the file's deprecated name")
	}
	if diff := cmp.Diff([]string{"team-a", "team-b"}, WatchedNamespaces(cfg)); diff != "" {
		t.Errorf("watched namespaces (-want +got):\n%s", diff)
	}

	got := map[string]string{}
	for _, w := range warnings {
		got[w.Key] = w.Message
	}
	if len(got) != 3 {
		t.Errorf("want 3 warnings (typo, unknown, deprecated), got %v", warnings)
	}
	if m := got["kubernetes.operator.reconcile.intervall"]; !strings.Contains(m, "did you mean "+KeyReconcileInterval) {
		t.Errorf("typo warning %q should suggest %s", m, KeyReconcileInterval)
	}
	if m := got["kubernetes.operator.totally.new.thing"]; !strings.Contains(m, "unknown") || strings.Contains(m, "did you mean") {
		t.Errorf("unknown key warning = %q, want unknown without a far-fetched suggestion", m)
	}
	if m := got[KeySavepointTriggerGracePeriodDeprecated]; !strings.Contains(m, KeySavepointTriggerGracePeriod) {
		t.Errorf("deprecated warning %q should name the new key", m)
	}
	if _, ok := got[FlinkSavepointDirDeprecated]; ok {
		t.Errorf("old Flink key names must not warn: Flink 1.18/1.19 only know them")
	}
}

func TestLoadFileErrors(t *testing.T) {
	tests := []struct {
		name, content string
		want          []string
	}{
		{"invalid value names key, value and file", "kubernetes.operator.flink.client.timeout: 10 parsecs\n",
			[]string{KeyFlinkClientTimeout, `"10 parsecs"`, "config.yaml"}},
		{"invalid Flink value", "rest.port: http\n", []string{FlinkRestPort}},
		{"not a mapping", "- a\n", []string{"mapping"}},
		{"leader election without lease", "kubernetes.operator.leader-election.enabled: true\n", []string{KeyLeaderElectionLeaseName}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := LoadFile(writeFile(t, tt.content))
			if err == nil {
				t.Fatal("want an error")
			}
			for _, s := range tt.want {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not contain %q", err, s)
				}
			}
		})
	}
	_, _, err := LoadFile(filepath.Join(t.TempDir(), "missing.yaml"))
	if !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: error %v, want os.ErrNotExist", err)
	}
}

func TestLoadEmptyIsDefaults(t *testing.T) {
	cfg, warnings, err := Load(nil)
	if err != nil || len(warnings) != 0 {
		t.Fatalf("Load(nil) = %v, %v", warnings, err)
	}
	if diff := cmp.Diff(Defaults(), cfg); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func operatorConfig(t *testing.T) Config {
	t.Helper()
	cfg, _, err := Load([]byte(`
kubernetes.operator.reconcile.interval: 30 s
kubernetes.operator.savepoint.history.max.count.threshold: 20
kubernetes.operator.snapshot.max-concurrent: 8
execution.checkpointing.savepoint-dir: s3://operator/savepoints
taskmanager.numberOfTaskSlots: 2
`))
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func TestEffectiveOverrides(t *testing.T) {
	op := operatorConfig(t)
	before := op.Clone()
	resource := map[string]string{
		// overridable
		KeyPeriodicSavepointInterval: "6h",
		KeySavepointHistoryMaxCount:  "50",
		KeySnapshotResourceEnabled:   "false",
		// not overridable: ignored, reported
		KeyReconcileInterval:                       "1 s",
		KeySavepointHistoryMaxCountThreshold:       "1000",
		KeySnapshotMaxConcurrent:                   "100",
		KeySnapshotCrossNamespaceReferencesEnabled: "true",
		// Flink keys: always the resource's
		"taskmanager.numberOfTaskSlots": "4",
		"parallelism.default":           "3",
		// unknown operator key: kept, reported
		"kubernetes.operator.periodic.savepoint.intervall": "1h",
	}
	eff, warnings, err := Effective(op, resource)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		KeyPeriodicSavepointInterval:                       "6h",
		KeySavepointHistoryMaxCount:                        "50",
		KeySnapshotResourceEnabled:                         "false",
		KeyReconcileInterval:                               "30 s",
		KeySavepointHistoryMaxCountThreshold:               "20",
		KeySnapshotMaxConcurrent:                           "8",
		KeySnapshotCrossNamespaceReferencesEnabled:         "false",
		"taskmanager.numberOfTaskSlots":                    "4",
		"parallelism.default":                              "3",
		"kubernetes.operator.periodic.savepoint.intervall": "1h",
		FlinkSavepointDir:                                  "s3://operator/savepoints",
	}
	for k, v := range want {
		if got := eff.String(k); got != v {
			t.Errorf("effective %s = %q, want %q", k, got, v)
		}
	}
	// The threshold from the operator still caps the resource's count.
	if n, err := SavepointHistoryMaxCount(eff); err != nil || n != 20 {
		t.Errorf("SavepointHistoryMaxCount = %v, %v; want 20 (capped)", n, err)
	}

	var ignored, unknown []string
	for _, w := range warnings {
		switch {
		case strings.Contains(w.Message, "ignored"):
			ignored = append(ignored, w.Key)
		case strings.Contains(w.Message, "unknown"):
			unknown = append(unknown, w.Key)
		default:
			t.Errorf("unexpected warning %s", w)
		}
	}
	wantIgnored := []string{KeyReconcileInterval, KeySavepointHistoryMaxCountThreshold,
		KeySnapshotCrossNamespaceReferencesEnabled, KeySnapshotMaxConcurrent}
	if diff := cmp.Diff(wantIgnored, ignored); diff != "" {
		t.Errorf("ignored keys (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"kubernetes.operator.periodic.savepoint.intervall"}, unknown); diff != "" {
		t.Errorf("unknown keys (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(before, op); diff != "" {
		t.Errorf("Effective modified the operator config (-before +after):\n%s", diff)
	}
}

func TestEffectiveNestedResource(t *testing.T) {
	resource := decodeJSON(t, `{
		"kubernetes.operator": {"savepoint": {"format.type": "native", "history.max.age": "2 h"}},
		"execution.checkpointing.num-retained": 3,
		"state.backend.type": "rocksdb"
	}`)
	eff, warnings, err := Effective(Defaults(), resource)
	if err != nil || len(warnings) != 0 {
		t.Fatalf("Effective: %v, %v", warnings, err)
	}
	if s, _ := eff.Enum(KeySavepointFormatType); s != "NATIVE" {
		t.Errorf("format type = %q", s)
	}
	if n, _ := CheckpointHistoryMaxCount(eff); n != 3 {
		t.Errorf("num-retained = %d, want 3", n)
	}
	if eff["state.backend.type"] != "rocksdb" {
		t.Errorf("Flink keys must pass through: %v", eff)
	}
}

func TestEffectiveInvalidValues(t *testing.T) {
	tests := []struct {
		name     string
		resource map[string]string
		want     []string
	}{
		{"bad duration", map[string]string{KeySavepointHistoryMaxAge: "a day"}, []string{KeySavepointHistoryMaxAge, `"a day"`}},
		{"bad bool", map[string]string{KeyJobSavepointOnDeletion: "yes"}, []string{KeyJobSavepointOnDeletion}},
		{"bad enum", map[string]string{KeySavepointFormatType: "DELUXE"}, []string{KeySavepointFormatType, "CANONICAL, NATIVE"}},
		{"out of range", map[string]string{KeySnapshotMaxConcurrentPerJob: "0"}, []string{KeySnapshotMaxConcurrentPerJob, "at least 1"}},
		{"bad Flink value", map[string]string{FlinkCheckpointTimeout: "never"}, []string{FlinkCheckpointTimeout}},
		{"deprecated name reported as written", map[string]string{FlinkCheckpointsNumRetainedDeprecated: "lots"}, []string{FlinkCheckpointsNumRetainedDeprecated}},
		{"all problems at once", map[string]string{KeyJobRestartFailed: "nope", KeySnapshotBackoffLimit: "x"},
			[]string{KeyJobRestartFailed, KeySnapshotBackoffLimit}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			eff, _, err := Effective(Defaults(), tt.resource)
			if err == nil {
				t.Fatalf("want an error, got %v", eff)
			}
			if eff != nil {
				t.Errorf("no config may be returned with an error")
			}
			for _, s := range tt.want {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not contain %q", err, s)
				}
			}
		})
	}
	// A non-overridable key with an invalid value is ignored, not an error.
	if _, w, err := Effective(Defaults(), map[string]string{KeyReconcileInterval: "garbage"}); err != nil || len(w) != 1 {
		t.Errorf("invalid non-overridable value: warnings %v, err %v; want one warning, no error", w, err)
	}
	// Duplicates after flattening are an error.
	if _, _, err := Effective(Defaults(), map[string]any{"a.b": "1", "a": map[string]any{"b": "2"}}); err == nil {
		t.Errorf("flat and nested duplicate should be an error")
	}
	if _, _, err := Effective(Defaults(), map[string]string{"a.b": "1", " a.b ": "2"}); err == nil {
		t.Errorf("keys equal after trimming should be an error")
	}
}

// A resource's value under an old key name beats the operator's value under
// the new name (user-pains E4: per-job savepoint dir ignored).
func TestEffectiveAliasPrecedence(t *testing.T) {
	op := operatorConfig(t) // sets execution.checkpointing.savepoint-dir
	tests := []struct {
		name     string
		resource map[string]string
		want     string
	}{
		{"old name in resource", map[string]string{FlinkSavepointDirDeprecated: "s3://job/old"}, "s3://job/old"},
		{"oldest name in resource", map[string]string{FlinkSavepointDirLegacy: "s3://job/oldest"}, "s3://job/oldest"},
		{"new name in resource", map[string]string{FlinkSavepointDir: "s3://job/new"}, "s3://job/new"},
		{"both in resource: new wins", map[string]string{FlinkSavepointDir: "s3://job/new", FlinkSavepointDirDeprecated: "s3://job/old"}, "s3://job/new"},
		{"not in resource", map[string]string{}, "s3://operator/savepoints"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			eff, _, err := Effective(op, tt.resource)
			if err != nil {
				t.Fatal(err)
			}
			if got, _ := SavepointDir(eff); got != tt.want {
				t.Errorf("SavepointDir = %q, want %q", got, tt.want)
			}
		})
	}
}

// Session jobs chain: operator → session cluster → job.
func TestEffectiveChained(t *testing.T) {
	cluster, _, err := Effective(operatorConfig(t), map[string]string{
		FlinkSavepointDirDeprecated:  "s3://cluster/sp",
		KeyPeriodicSavepointInterval: "1h",
	})
	if err != nil {
		t.Fatal(err)
	}
	job, _, err := Effective(cluster, map[string]string{FlinkSavepointDir: "s3://job/sp"})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := SavepointDir(job); got != "s3://job/sp" {
		t.Errorf("job savepoint dir = %q, want the job's", got)
	}
	if got := job.String(KeyPeriodicSavepointInterval); got != "1h" {
		t.Errorf("periodic interval = %q, want inherited from the cluster", got)
	}
	if _, ok := job[FlinkSavepointDirDeprecated]; ok {
		t.Errorf("the cluster's value under the old name should be dropped")
	}
}

func TestSnapshotResourcesEnabled(t *testing.T) {
	off := Config{KeySnapshotResourceEnabled: "false"}
	on := Config{KeySnapshotResourceEnabled: "true"}
	tests := []struct {
		name          string
		operator, job Config
		want          bool
	}{
		{"defaults", Config{}, Config{}, true},
		{"job off", on, off, false},
		{"operator off wins over job on", off, on, false},
		{"both on", on, on, true},
	}
	for _, tt := range tests {
		got, err := SnapshotResourcesEnabled(tt.operator, tt.job)
		if err != nil || got != tt.want {
			t.Errorf("%s: got %v, %v; want %v", tt.name, got, err, tt.want)
		}
	}
	if _, err := SnapshotResourcesEnabled(Config{}, Config{KeySnapshotResourceEnabled: "maybe"}); err == nil {
		t.Errorf("invalid value should be an error")
	}
}
