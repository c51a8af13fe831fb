package config

import (
	"errors"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestGettersUseRegistryDefaults(t *testing.T) {
	for _, cfg := range []Config{nil, {}, Defaults()} {
		if d, err := cfg.Duration(KeyReconcileInterval); err != nil || d != time.Minute {
			t.Errorf("reconcile interval = %v, %v; want 1m", d, err)
		}
		if n, err := cfg.Int(KeySavepointHistoryMaxCount); err != nil || n != 10 {
			t.Errorf("history max count = %v, %v; want 10", n, err)
		}
		if b, err := cfg.Bool(KeySavepointCleanupEnabled); err != nil || !b {
			t.Errorf("cleanup enabled = %v, %v; want true", b, err)
		}
		if s, err := cfg.Enum(KeySavepointFormatType); err != nil || s != "CANONICAL" {
			t.Errorf("format type = %q, %v; want CANONICAL", s, err)
		}
		if s := cfg.String(KeyPeriodicSavepointInterval); s != "" {
			t.Errorf("periodic savepoint interval = %q, want blank", s)
		}
		// Flink keys: defaults come from the registry even though Defaults()
		// does not write them.
		if n, err := cfg.Int(FlinkRestPort); err != nil || n != 8081 {
			t.Errorf("rest.port = %v, %v; want 8081", n, err)
		}
	}
}

func TestGettersExplicitValues(t *testing.T) {
	cfg := Config{
		KeyReconcileInterval:        " 2 min ",
		KeySavepointHistoryMaxCount: "3",
		KeySavepointCleanupEnabled:  "FALSE",
		KeySavepointFormatType:      "native",
		KeyWatchedNamespaces:        "a, b,,c",
		"some.flink.key":            "  v  ",
	}
	if d, err := cfg.Duration(KeyReconcileInterval); err != nil || d != 2*time.Minute {
		t.Errorf("Duration = %v, %v", d, err)
	}
	if n, err := cfg.Int(KeySavepointHistoryMaxCount); err != nil || n != 3 {
		t.Errorf("Int = %v, %v", n, err)
	}
	if b, err := cfg.Bool(KeySavepointCleanupEnabled); err != nil || b {
		t.Errorf("Bool = %v, %v", b, err)
	}
	if s, err := cfg.Enum(KeySavepointFormatType); err != nil || s != "NATIVE" {
		t.Errorf("Enum = %q, %v; want canonical NATIVE", s, err)
	}
	if diff := cmp.Diff([]string{"a", "b", "c"}, cfg.List(KeyWatchedNamespaces)); diff != "" {
		t.Errorf("List (-want +got):\n%s", diff)
	}
	if s := cfg.String("some.flink.key"); s != "v" {
		t.Errorf("String of an unregistered key = %q, want trimmed v", s)
	}
}

func TestBlankMeansDefault(t *testing.T) {
	cfg := Config{KeyReconcileInterval: "  ", KeySavepointFormatType: ""}
	if d, err := cfg.Duration(KeyReconcileInterval); err != nil || d != time.Minute {
		t.Errorf("blank duration = %v, %v; want the default 1m", d, err)
	}
	if s, err := cfg.Enum(KeySavepointFormatType); err != nil || s != "CANONICAL" {
		t.Errorf("blank enum = %q, %v; want the default", s, err)
	}
	// Raw still sees the blank value: presence matters to some rules.
	if v, ok := cfg.Raw(KeySavepointFormatType); !ok || v != "" {
		t.Errorf("Raw = %q, %v; want present and blank", v, ok)
	}
	if _, ok := cfg.Raw(KeyCheckpointType); ok {
		t.Errorf("Raw reports a default as present")
	}
}

func TestOptionalGetters(t *testing.T) {
	var cfg Config
	if _, ok, err := cfg.OptionalInt(KeySnapshotMaxConcurrent); ok || err != nil {
		t.Errorf("unset max-concurrent: ok=%v err=%v; want unset", ok, err)
	}
	if _, ok, err := cfg.OptionalDuration(KeySavepointHistoryMaxAgeThreshold); ok || err != nil {
		t.Errorf("unset age threshold: ok=%v err=%v; want unset", ok, err)
	}
	if n, err := cfg.Int(KeySnapshotMaxConcurrent); n != 0 || err != nil {
		t.Errorf("Int of unset key = %v, %v; want 0", n, err)
	}
	cfg = Config{KeySnapshotMaxConcurrent: "4", KeySavepointHistoryMaxAgeThreshold: "2 h"}
	if n, ok, err := cfg.OptionalInt(KeySnapshotMaxConcurrent); !ok || err != nil || n != 4 {
		t.Errorf("OptionalInt = %v, %v, %v", n, ok, err)
	}
	if d, ok, err := cfg.OptionalDuration(KeySavepointHistoryMaxAgeThreshold); !ok || err != nil || d != 2*time.Hour {
		t.Errorf("OptionalDuration = %v, %v, %v", d, ok, err)
	}
}

func TestGetterErrorsNameKeyAndValue(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		get  func(Config) error
		key  string
	}{
		{"duration", Config{KeyReconcileInterval: "soon"},
			func(c Config) error { _, err := c.Duration(KeyReconcileInterval); return err }, KeyReconcileInterval},
		{"int", Config{KeySnapshotBackoffLimit: "three"},
			func(c Config) error { _, err := c.Int(KeySnapshotBackoffLimit); return err }, KeySnapshotBackoffLimit},
		{"int overflow", Config{KeySnapshotBackoffLimit: "3000000000"},
			func(c Config) error { _, err := c.Int(KeySnapshotBackoffLimit); return err }, KeySnapshotBackoffLimit},
		{"bool like strconv", Config{KeySavepointCleanupEnabled: "1"},
			func(c Config) error { _, err := c.Bool(KeySavepointCleanupEnabled); return err }, KeySavepointCleanupEnabled},
		{"bool yes", Config{KeySavepointCleanupEnabled: "yes"},
			func(c Config) error { _, err := c.Bool(KeySavepointCleanupEnabled); return err }, KeySavepointCleanupEnabled},
		{"enum", Config{KeyCheckpointType: "PARTIAL"},
			func(c Config) error { _, err := c.Enum(KeyCheckpointType); return err }, KeyCheckpointType},
		// The error names the deprecated key the user actually wrote.
		{"deprecated alias", Config{FlinkCheckpointsNumRetainedDeprecated: "x"},
			func(c Config) error { _, err := c.Int(FlinkCheckpointsNumRetained); return err }, FlinkCheckpointsNumRetainedDeprecated},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.get(tt.cfg)
			var ve *ValueError
			if !errors.As(err, &ve) {
				t.Fatalf("error %v (%T), want *ValueError", err, err)
			}
			if ve.Key != tt.key {
				t.Errorf("ValueError.Key = %q, want %q", ve.Key, tt.key)
			}
			if !strings.Contains(err.Error(), tt.key) || !strings.Contains(err.Error(), ve.Value) || ve.Value == "" {
				t.Errorf("message %q should name key %s and value %q", err, tt.key, ve.Value)
			}
		})
	}
}

func TestAliasLookup(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		want string
	}{
		{"new name", Config{FlinkSavepointDir: "s3://new"}, "s3://new"},
		{"old name", Config{FlinkSavepointDirDeprecated: "s3://old"}, "s3://old"},
		{"oldest name", Config{FlinkSavepointDirLegacy: "s3://oldest"}, "s3://oldest"},
		// Within one map the new name wins, as in Flink.
		{"both", Config{FlinkSavepointDir: "s3://new", FlinkSavepointDirDeprecated: "s3://old"}, "s3://new"},
		// Asking by an old name finds a value under the new one too.
		{"by old name", Config{FlinkSavepointDir: "s3://new"}, "s3://new"},
	}
	for _, tt := range tests {
		key := FlinkSavepointDir
		if tt.name == "by old name" {
			key = FlinkSavepointDirDeprecated
		}
		if got := tt.cfg.String(key); got != tt.want {
			t.Errorf("%s: String(%s) = %q, want %q", tt.name, key, got, tt.want)
		}
	}
}

func TestListForms(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"a,b", []string{"a", "b"}},
		{"[a, b]", []string{"a", "b"}},
		{"['a', \"b\"]", []string{"a", "b"}},
		{"[]", nil},
		{"", nil},
		{"single", []string{"single"}},
	}
	for _, tt := range tests {
		got := Config{KeyWatchedNamespaces: tt.in}.List(KeyWatchedNamespaces)
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("List(%q) (-want +got):\n%s", tt.in, diff)
		}
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name    string
		cfg     Config
		wantErr []string // substrings; nil = valid
	}{
		{"defaults", Defaults(), nil},
		{"empty", Config{}, nil},
		{"unregistered keys are not checked", Config{"taskmanager.numberOfTaskSlots": "x"}, nil},
		{"bad duration", Config{KeyReconcileInterval: "fast"}, []string{KeyReconcileInterval, `"fast"`}},
		{"zero interval", Config{KeyReconcileInterval: "0"}, []string{KeyReconcileInterval, "greater than zero"}},
		{"parallelism below 1", Config{KeyReconcileParallelism: "0"}, []string{KeyReconcileParallelism, "at least 1"}},
		{"parallelism -1: no bound, as upstream", Config{KeyReconcileParallelism: "-1"}, nil},
		{"parallelism -2", Config{KeyReconcileParallelism: "-2"}, []string{KeyReconcileParallelism, "or -1"}},
		{"backoff -1 ok", Config{KeySnapshotBackoffLimit: "-1"}, nil},
		{"backoff -2", Config{KeySnapshotBackoffLimit: "-2"}, []string{KeySnapshotBackoffLimit, "at least -1"}},
		{"port", Config{FlinkRestPort: "70000"}, []string{FlinkRestPort, "port"}},
		{"deprecated name checked", Config{FlinkCheckpointsNumRetainedDeprecated: "many"}, []string{FlinkCheckpointsNumRetainedDeprecated}},
		{"all errors reported", Config{KeyReconcileInterval: "fast", KeyJobRestartFailed: "maybe"},
			[]string{KeyReconcileInterval, KeyJobRestartFailed}},
		{"leader election needs a lease name", Config{KeyLeaderElectionEnabled: "true"}, []string{KeyLeaderElectionLeaseName}},
		{"leader election with lease", Config{KeyLeaderElectionEnabled: "true", KeyLeaderElectionLeaseName: "flink-operator"}, nil},
		{"renew deadline below lease duration", Config{KeyLeaderElectionRenewDeadline: "20 s"}, []string{KeyLeaderElectionRenewDeadline}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.Validate()
			if tt.wantErr == nil {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("want an error containing %q", tt.wantErr)
			}
			for _, s := range tt.wantErr {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not contain %q", err, s)
				}
			}
		})
	}
}

func TestCloneIsIndependent(t *testing.T) {
	a := Config{"k": "v"}
	b := a.Clone()
	b["k"] = "changed"
	if a["k"] != "v" {
		t.Fatal("Clone shares the map")
	}
	if Config(nil).Clone() == nil {
		t.Fatal("Clone of nil should be an empty, writable map")
	}
}

// Double options parse finite decimals; the multiplier must be at least 1.
func TestFloatOptions(t *testing.T) {
	for _, tc := range []struct {
		value string
		want  float64
		ok    bool
	}{{"1.5", 1.5, true}, {" 2 ", 2, true}, {"1e1", 10, true}, {"x", 0, false}, {"Inf", 0, false}, {"NaN", 0, false}} {
		got, err := Config{KeyRetryIntervalMultiplier: tc.value}.Float(KeyRetryIntervalMultiplier)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("Float(%q) = %v, %v; want %v, ok %v", tc.value, got, err, tc.want, tc.ok)
		}
	}
	k, _ := LookupKey(KeyRetryIntervalMultiplier)
	if err := k.Validate("0.5"); err == nil {
		t.Error("a multiplier below 1 was accepted")
	}
	if err := k.Validate("1.5"); err != nil {
		t.Errorf("1.5 refused: %v", err)
	}
}

func TestMap(t *testing.T) {
	for _, tc := range []struct {
		value string
		want  map[string]string
		err   bool
	}{
		{value: "", want: nil},
		{value: "Authorization:Bearer x:y, X-Id : '7',", want: map[string]string{"Authorization": "Bearer x:y", "X-Id": "7"}},
		{value: "nosecret", err: true},
		{value: ":secret", err: true},
	} {
		got, err := Config{"m": tc.value}.Map("m")
		if (err != nil) != tc.err || !maps.Equal(got, tc.want) {
			t.Errorf("Map(%q) = %v, %v; want %v (error %v)", tc.value, got, err, tc.want, tc.err)
		}
		if err != nil && strings.Contains(err.Error(), tc.value) {
			t.Errorf("the error repeats the value: %v", err)
		}
	}
}
