package config

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestRegistryIsConsistent(t *testing.T) {
	for _, k := range Keys() {
		if k.Flink == strings.HasPrefix(k.Name, OperatorPrefix) {
			t.Errorf("%s: Flink=%v does not match its prefix", k.Name, k.Flink)
		}
		if k.Flink && !k.Overridable {
			t.Errorf("%s: Flink options are job configuration and must be overridable", k.Name)
		}
		if k.Description == "" {
			t.Errorf("%s: no description", k.Name)
		}
		if err := k.Validate(k.Default); err != nil {
			t.Errorf("%s: default %q does not validate: %v", k.Name, k.Default, err)
		}
		if (k.Type == TypeEnum) != (len(k.Enum) > 0) {
			t.Errorf("%s: enum values only and always for TypeEnum", k.Name)
		}
		if k.Type == TypeEnum && !slices.Contains(k.Enum, k.Default) {
			t.Errorf("%s: default %q not among %v", k.Name, k.Default, k.Enum)
		}
	}
}

// Which keys a resource may not override is a product decision (documented
// per key); this pins it so a change is deliberate.
func TestOperatorWideKeys(t *testing.T) {
	var got []string
	for _, k := range Keys() {
		if !k.Overridable {
			got = append(got, k.Name)
		}
	}
	want := []string{
		KeyEventsExceptionsLimit,
		KeyEventsExceptionsStacktraceLines,
		KeyFlinkClientCancelTimeout,
		KeyFlinkClientTimeout,
		KeyLeaderElectionEnabled,
		KeyLeaderElectionLeaseDuration,
		KeyLeaderElectionLeaseName,
		KeyLeaderElectionRenewDeadline,
		KeyLeaderElectionRetryPeriod,
		KeyProgressCheckInterval,
		KeyRateLimiterLimit,
		KeyIngressManage,
		KeyDynamicConfigEnabled,
		KeyDynamicConfigCheckInterval,
		KeyDynamicNamespacesEnabled,
		KeyHealthProbeEnabled,
		KeyHealthCanaryResourceTimeout,
		KeyExceptionFieldMaxLength,
		KeyExceptionLabelMapper,
		KeyExceptionStackTraceEnabled,
		KeyExceptionStackTraceMaxLength,
		KeyExceptionThrowableListMaxCount,
		KeyLabelSelector,
		KeyResourceCleanupTimeout,
		KeyUserArtifactsAllowedSchemes,
		KeyUserArtifactsBaseDir,
		KeyUserArtifactsDisallowRestrictedHosts,
		KeyResourceLifecycleMetricsEnabled,
		KeyResourceLifecycleNamespaceHistogramsEnabled,
		KeyKubernetesClientMetricsEnabled,
		KeyRateLimiterRefreshPeriod,
		KeyReconcileInterval,
		KeyReconcileParallelism,
		KeyResourceMetricsEnabled,
		KeyRetryInitialInterval,
		KeyRetryIntervalMultiplier,
		KeyRetryMaxAttempts,
		KeyRetryMaxInterval,
		KeySavepointHistoryMaxAgeThreshold,
		KeySavepointHistoryMaxCountThreshold,
		KeySnapshotCrossNamespaceReferencesEnabled,
		KeySnapshotDisposeTimeout,
		KeySnapshotMaxConcurrent,
		KeySnapshotNormalEventsEnabled,
		KeyWatchedNamespaces,
	}
	slices.Sort(want)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("operator-wide keys (-want +got):\n%s", diff)
	}
}

func TestLookupKey(t *testing.T) {
	k, ok := LookupKey(KeySavepointTriggerGracePeriodDeprecated)
	if !ok || k.Name != KeySavepointTriggerGracePeriod {
		t.Fatalf("LookupKey(deprecated) = %v, %v; want the current key", k.Name, ok)
	}
	if _, ok := LookupKey("kubernetes.operator.no.such.key"); ok {
		t.Fatal("unknown key found")
	}
	// Returned keys are copies: changing one must not change the registry.
	k, _ = LookupKey(KeySavepointFormatType)
	k.Enum[0] = "BROKEN"
	if s, err := (Config{KeySavepointFormatType: "canonical"}).Enum(KeySavepointFormatType); err != nil || s != "CANONICAL" {
		t.Fatalf("registry changed through a returned Key: %q, %v", s, err)
	}
	keys := Keys()
	keys[0].Name = "changed"
	if Keys()[0].Name == "changed" {
		t.Fatal("Keys() returned shared state")
	}
}

func TestKeysSortedAndComplete(t *testing.T) {
	keys := Keys()
	if !slices.IsSortedFunc(keys, func(a, b Key) int { return strings.Compare(a.Name, b.Name) }) {
		t.Error("Keys() not sorted")
	}
	if len(keys) != len(registry) {
		t.Errorf("Keys() has %d keys, registry %d", len(keys), len(registry))
	}
}

func TestDocTable(t *testing.T) {
	table := DocTable()
	lines := strings.Split(strings.TrimSpace(table), "\n")
	if len(lines) != len(registry)+2 {
		t.Fatalf("want a header, a separator and %d rows, got %d lines", len(registry), len(lines))
	}
	if lines[0] != "| Key | Type | Default | Per resource | Status | Description |" {
		t.Errorf("header = %q", lines[0])
	}
	for _, k := range Keys() {
		var row string
		for _, l := range lines {
			if strings.HasPrefix(l, "| `"+k.Name+"`") {
				row = l
			}
		}
		if row == "" {
			t.Errorf("no row for %s", k.Name)
			continue
		}
		// 7 unescaped pipes = 6 cells: descriptions must not break the table.
		if n := strings.Count(row, "|") - strings.Count(row, `\|`); n != 7 {
			t.Errorf("row for %s has %d cell separators, want 7: %s", k.Name, n, row)
		}
		for _, d := range k.Deprecated {
			if !strings.Contains(row, d) {
				t.Errorf("row for %s does not list deprecated name %s", k.Name, d)
			}
		}
	}
	for _, want := range []string{
		"| `" + KeyReconcileInterval + "` | Duration | `60 s` | no |",
		"| `" + KeySavepointHistoryMaxCount + "` | Integer | `10` | yes |",
		"| `" + KeySavepointFormatType + "` | Enum (CANONICAL, NATIVE) | `CANONICAL` | yes |",
		"| `" + KeySnapshotMaxConcurrent + "` | Integer | unset (unlimited) | no |",
		"| `" + FlinkRestPort + "` | Integer | `8081` | yes (Flink option) |",
		"| `" + KeyLeaderElectionLeaseName + "` | String | unset | no |",
	} {
		if !strings.Contains(table, want) {
			t.Errorf("table lacks %q", want)
		}
	}
}
