package config

import (
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/flinkops/flink-operator/pkg/upstreamtest"
)

// upstreamOption is one row of upstream's configuration reference.
type upstreamOption struct {
	key, def, typ string
}

// readUpstreamOptions reads a TSV of pkg/upstreamtest/testdata/config (key,
// default, type; see its SOURCES.md) and checks its row count, so a
// truncated copy cannot make the comparison pass.
func readUpstreamOptions(t *testing.T, name string, rows int) []upstreamOption {
	t.Helper()
	data, err := upstreamtest.ReadFile("config/" + name)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if lines[0] != "key\tdefault\ttype" {
		t.Fatalf("%s: header %q", name, lines[0])
	}
	var out []upstreamOption
	for i, l := range lines[1:] {
		f := strings.Split(l, "\t")
		if len(f) != 3 || !strings.HasPrefix(f[0], OperatorPrefix) {
			t.Fatalf("%s line %d: %q", name, i+2, l)
		}
		out = append(out, upstreamOption{key: f[0], def: f[1], typ: f[2]})
	}
	if len(out) != rows {
		t.Fatalf("%s: %d options, SOURCES.md says %d", name, len(out), rows)
	}
	return out
}

// sameDefaultAs lists registered keys whose default is written differently
// from upstream's but means the same, with why.
var sameDefaultAs = map[string]string{
	// Upstream's default is JOSDK's name for "all namespaces"; ours is
	// unset, which means the same, and JOSDK_ALL_NAMESPACES is accepted
	// (TestWatchedNamespaces). Upstream's String type is a comma-separated
	// list, which is our List.
	KeyWatchedNamespaces: "JOSDK_ALL_NAMESPACES",
}

// TestUpstreamParity is issue 18's acceptance check for operator-level
// parity: every option of upstream's operator and metric configuration
// reference is either implemented here (registered under the same name,
// type and default) or listed with a documented status and reason
// (upstreamKeys, rendered into docs/compatibility.md by ParityTable).
func TestUpstreamParity(t *testing.T) {
	options := append(readUpstreamOptions(t, "operator-options.tsv", 80), readUpstreamOptions(t, "metric-options.tsv", 12)...)
	inReference := map[string]bool{}
	for _, o := range options {
		inReference[o.key] = true
		u, listed := LookupUpstream(o.key)
		k, registered := LookupKey(o.key)
		switch {
		case !listed:
			t.Errorf("%s (upstream default %s) is neither implemented nor listed: add it to upstreamKeys with its status and reason", o.key, o.def)
			continue
		case u.Status == StatusImplemented && !registered:
			t.Errorf("%s is listed as implemented but not registered", o.key)
			continue
		case u.Status == StatusImplemented && k.Name != o.key:
			t.Errorf("%s is implemented only as a deprecated name of %s", o.key, k.Name)
			continue
		case u.Status != StatusImplemented && strings.TrimSpace(u.Reason) == "":
			t.Errorf("%s is %s without a reason", o.key, u.Status)
		case u.Status == StatusNotYet && !strings.Contains(u.Reason, "issue "):
			t.Errorf("%s is not yet implemented but its reason names no issue: %q", o.key, u.Reason)
		}
		if !slices.Contains([]Status{StatusImplemented, StatusDifferent, StatusNotApplicable, StatusNotYet}, u.Status) {
			t.Errorf("%s: unknown status %q", o.key, u.Status)
		}
		if !registered || u.Status != StatusImplemented {
			continue
		}
		// Implemented: upstream's type and default.
		if want, ok := sameDefaultAs[o.key]; ok {
			if unquote(o.def) != want || k.Default != "" {
				t.Errorf("%s: sameDefaultAs expects upstream %q and ours unset; got upstream %q, ours %q", o.key, want, o.def, k.Default)
			}
			continue
		}
		if !sameType(o.typ, k.Type) {
			t.Errorf("%s: type %s, upstream %s", o.key, k.Type, o.typ)
		}
		if msg := compareDefault(o, k); msg != "" {
			t.Errorf("%s: %s; implement upstream's default or list the key as different with the reason", o.key, msg)
		}
	}
	for _, u := range UpstreamKeys() {
		if !inReference[u.Key] {
			t.Errorf("upstreamKeys lists %s, which is not in upstream's reference", u.Key)
		}
	}
	// The operator's own keys say so, so that nobody takes them for
	// upstream's.
	for _, k := range Keys() {
		if _, upstream := LookupUpstream(k.Name); upstream || k.Flink {
			continue
		}
		if _, upstream := upstreamOutsideReference[k.Name]; upstream {
			continue
		}
		if !strings.Contains(k.Description, "Ours") {
			t.Errorf("%s is not upstream's: its description must say \"Ours\"", k.Name)
		}
	}
}

func unquote(s string) string {
	if len(s) >= 2 && s[0] == '"' && s[len(s)-1] == '"' {
		return s[1 : len(s)-1]
	}
	return s
}

func sameType(upstream string, t Type) bool {
	if upstream == "List<String>" {
		return t == TypeList
	}
	return upstream == t.String()
}

// compareDefault says how a registered default differs from upstream's, or
// "" when they mean the same value.
func compareDefault(o upstreamOption, k Key) string {
	up := unquote(o.def)
	if up == "(none)" || up == "" {
		if k.Default != "" {
			return "default " + strconv.Quote(k.Default) + ", upstream has none"
		}
		return ""
	}
	if k.Default == "" {
		return "no default, upstream's is " + strconv.Quote(up)
	}
	differs := "default " + strconv.Quote(k.Default) + ", upstream's is " + strconv.Quote(up)
	switch k.Type {
	case TypeDuration:
		a, errA := ParseDuration(up)
		b, errB := ParseDuration(k.Default)
		if errA != nil || errB != nil || a != b {
			return differs
		}
	case TypeDouble:
		a, errA := strconv.ParseFloat(up, 64)
		b, errB := strconv.ParseFloat(k.Default, 64)
		if errA != nil || errB != nil || a != b {
			return differs
		}
	case TypeList:
		if !slices.Equal(Config{"x": up}.List("x"), Config{"x": k.Default}.List("x")) {
			return differs
		}
	default:
		if !strings.EqualFold(up, k.Default) {
			return differs
		}
	}
	return ""
}

// The comparison itself can fail: a wrong default, a missing key and a
// stale entry are caught.
func TestCompareDefault(t *testing.T) {
	for _, c := range []struct {
		o    upstreamOption
		k    Key
		same bool
	}{
		{upstreamOption{"a", "1 min", "Duration"}, Key{Type: TypeDuration, Default: "60 s"}, true},
		{upstreamOption{"a", "1 d", "Duration"}, Key{Type: TypeDuration, Default: "24 h"}, true},
		{upstreamOption{"a", "1 min", "Duration"}, Key{Type: TypeDuration, Default: "2 min"}, false},
		{upstreamOption{"a", "(none)", "Duration"}, Key{Type: TypeDuration}, true},
		{upstreamOption{"a", "(none)", "Duration"}, Key{Type: TypeDuration, Default: "1 s"}, false},
		{upstreamOption{"a", "5", "Integer"}, Key{Type: TypeInt}, false},
		{upstreamOption{"a", "50", "Integer"}, Key{Type: TypeInt, Default: "5"}, false},
		{upstreamOption{"a", "1.5", "Double"}, Key{Type: TypeDouble, Default: "1.50"}, true},
		{upstreamOption{"a", "FULL", "Enum"}, Key{Type: TypeEnum, Default: "full"}, true},
		{upstreamOption{"a", `"https"`, "List<String>"}, Key{Type: TypeList, Default: "[https]"}, true},
		{upstreamOption{"a", "true", "Boolean"}, Key{Type: TypeBool, Default: "false"}, false},
	} {
		if got := compareDefault(c.o, c.k) == ""; got != c.same {
			t.Errorf("compareDefault(%+v, %q) same = %v, want %v", c.o, c.k.Default, got, c.same)
		}
	}
}

// Setting an upstream option that has no effect here is a warning saying
// so (and why), not the generic unknown-key one; implemented keys are
// silent.
func TestUpstreamKeyWarnings(t *testing.T) {
	_, warnings, err := Load([]byte(`
kubernetes.operator.health.probe.port: 8085
kubernetes.operator.josdk.metrics.enabled: "false"
kubernetes.operator.job.restart.failed: "true"
kubernetes.operator.session.deletion.block-on-session-jobs: "false"
kubernetes.operator.events.exceptions.limit-per-reconciliation: 3
`))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, w := range warnings {
		got[w.Key] = w.Message
	}
	for key, want := range map[string]string{
		"kubernetes.operator.health.probe.port":                      "not configurable here: the probe address is the flag --health-probe-bind-address",
		"kubernetes.operator.josdk.metrics.enabled":                  "upstream option with no effect here: configures upstream's Java Operator SDK",
		"kubernetes.operator.session.deletion.block-on-session-jobs": "not configurable here",
	} {
		if !strings.Contains(got[key], want) {
			t.Errorf("warning for %s = %q, want it to contain %q", key, got[key], want)
		}
		if strings.Contains(got[key], "`") || strings.Contains(got[key], "](") {
			t.Errorf("warning for %s keeps Markdown: %q", key, got[key])
		}
	}
	for _, key := range []string{KeyEventsExceptionsLimit, KeyJobRestartFailed} {
		if msg, ok := got[key]; ok {
			t.Errorf("implemented key %s warned: %q", key, msg)
		}
	}
	if len(warnings) != 3 {
		t.Errorf("warnings %v, want 3", warnings)
	}
}

func TestPlain(t *testing.T) {
	got := plain("a [b](c.md#d) `e` [f](g)")
	if got != "a b e f" {
		t.Errorf("plain = %q", got)
	}
}

func TestParityTables(t *testing.T) {
	table := ParityTable()
	if n := strings.Count(table, "\n"); n != len(upstreamKeys)+2 {
		t.Errorf("ParityTable has %d lines, want %d", n, len(upstreamKeys)+2)
	}
	gaps := GapTable()
	for _, u := range UpstreamKeys() {
		_, registered := byName[u.Key]
		if row := "| `" + u.Key + "` |"; strings.Contains(gaps, row) == registered {
			t.Errorf("GapTable lists %s: %v, want %v (registered: %v)", u.Key, !registered, !registered, registered)
		}
	}
	for _, row := range strings.Split(strings.TrimSpace(table), "\n") {
		if n := strings.Count(row, "|") - strings.Count(row, `\|`); n != 4 {
			t.Errorf("row has %d cell separators, want 4: %s", n, row)
		}
	}
}

// The blue/green options are upstream's (FlinkBlueGreenDeploymentConfigOptions)
// although its configuration reference leaves them out: registered with
// upstream's type and defaults, per resource, readable through their getters,
// and shown as upstream's.
func TestUpstreamOutsideReference(t *testing.T) {
	upstreamDefaults := map[string]time.Duration{ // FlinkBlueGreenDeploymentConfigOptions, release 1.15.0
		KeyBlueGreenAbortGracePeriod:        10 * time.Minute,
		KeyBlueGreenRescheduleInterval:      15 * time.Second,
		KeyBlueGreenDeploymentDeletionDelay: 0,
	}
	if len(upstreamOutsideReference) != len(upstreamDefaults) {
		t.Errorf("upstreamOutsideReference has %d keys, want %d", len(upstreamOutsideReference), len(upstreamDefaults))
	}
	getters := map[string]func(Config) (time.Duration, error){
		KeyBlueGreenAbortGracePeriod:        BlueGreenAbortGracePeriod,
		KeyBlueGreenRescheduleInterval:      BlueGreenRescheduleInterval,
		KeyBlueGreenDeploymentDeletionDelay: BlueGreenDeploymentDeletionDelay,
	}
	for name, want := range upstreamDefaults {
		k, ok := LookupKey(name)
		if !ok {
			t.Errorf("%s is not registered", name)
			continue
		}
		if _, ok := upstreamOutsideReference[name]; !ok {
			t.Errorf("%s is not in upstreamOutsideReference", name)
		}
		if _, listed := LookupUpstream(name); listed {
			t.Errorf("%s is in upstream's reference after all: list it in upstreamKeys only", name)
		}
		if k.Type != TypeDuration || !k.Overridable {
			t.Errorf("%s: type %s, overridable %v; want a Duration a resource sets", name, k.Type, k.Overridable)
		}
		if d, err := ParseDuration(k.Default); err != nil || d != want {
			t.Errorf("%s: default %q = %v, %v; upstream's is %v", name, k.Default, d, err, want)
		}
		if status := registeredStatus(k); status != "upstream" {
			t.Errorf("%s: DocTable status %q, want upstream", name, status)
		}
		get := getters[name]
		if d, err := get(Config{}); err != nil || d != want {
			t.Errorf("%s getter on an empty config = %v, %v; want the default %v", name, d, err, want)
		}
		if d, err := get(Config{name: "1s"}); err != nil || d != time.Second {
			t.Errorf("%s getter of 1s = %v, %v", name, d, err)
		}
		if _, err := get(Config{name: "soon"}); err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%s getter of soon: error %v, want one naming the key", name, err)
		}
	}
	// As a FlinkBlueGreenDeployment's spec.configuration: no warning, and a
	// value that does not parse is an error naming the key.
	cfg, warnings, err := Effective(Defaults(), map[string]string{KeyBlueGreenAbortGracePeriod: "10 min", KeyBlueGreenRescheduleInterval: "15s", KeyBlueGreenDeploymentDeletionDelay: "0ms"})
	if err != nil || len(warnings) != 0 {
		t.Fatalf("Effective: %v, warnings %v", err, warnings)
	}
	if d, _ := BlueGreenRescheduleInterval(cfg); d != 15*time.Second {
		t.Errorf("reschedule interval %v, want 15s", d)
	}
	if _, _, err := Effective(Defaults(), map[string]string{KeyBlueGreenDeploymentDeletionDelay: "-1 s"}); err == nil || !strings.Contains(err.Error(), KeyBlueGreenDeploymentDeletionDelay) {
		t.Errorf("Effective with a negative delay: %v, want an error naming the key", err)
	}
}
