package config

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestFlattenYAML(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want map[string]string
	}{
		{"empty", "", map[string]string{}},
		{"comment only", "# nothing\n", map[string]string{}},
		{"null document", "~\n", map[string]string{}},
		{"flat", "kubernetes.operator.reconcile.interval: 30 s\nrest.port: 8081\n",
			map[string]string{KeyReconcileInterval: "30 s", FlinkRestPort: "8081"}},
		{"nested", "kubernetes:\n  operator:\n    reconcile:\n      interval: 30 s\n",
			map[string]string{KeyReconcileInterval: "30 s"}},
		{"mixed", "kubernetes.operator:\n  savepoint.history:\n    max.count: 5\n    max.age: 24 h\nstate.savepoints.dir: s3://b/sp\n",
			map[string]string{KeySavepointHistoryMaxCount: "5", KeySavepointHistoryMaxAge: "24 h", FlinkSavepointDirDeprecated: "s3://b/sp"}},
		// YAML 1.2 like Flink's config.yaml: yes/on stay strings.
		{"yaml 1.2 scalars", "a: yes\nb: on\nc: true\nd: TRUE\n",
			map[string]string{"a": "yes", "b": "on", "c": "true", "d": "TRUE"}},
		{"numbers as written", "a: 1.0\nb: 007\nc: 1e3\nd: 0x10\n",
			map[string]string{"a": "1.0", "b": "007", "c": "1e3", "d": "0x10"}},
		{"quoted strings unquoted", "a: \"10 s\"\nb: '0 */10 * * * ?'\n",
			map[string]string{"a": "10 s", "b": "0 */10 * * * ?"}},
		{"null values are blank", "kubernetes.operator.periodic.savepoint.interval:\nb: ~\nc: null\n",
			map[string]string{KeyPeriodicSavepointInterval: "", "b": "", "c": ""}},
		{"lists in flow style", "a: [x, y]\nb:\n  - p\n  - q\nc: []\n",
			map[string]string{"a": "[x, y]", "b": "[p, q]", "c": "[]"}},
		{"list elements quoted only where needed", "a: [plain, 'has, comma', \"true\", 1]\n",
			map[string]string{"a": `[plain, 'has, comma', "true", 1]`}},
		{"nested collections in lists", "a: [{k: v}, [1, 2]]\n",
			map[string]string{"a": "[{k: v}, [1, 2]]"}},
		{"anchors and aliases", "base: &d 10 s\na: *d\n",
			map[string]string{"base": "10 s", "a": "10 s"}},
		{"empty nested map sets nothing", "a: {}\nb: 1\n", map[string]string{"b": "1"}},
		{"block scalar", "a: |\n  line1\n  line2\n", map[string]string{"a": "line1\nline2\n"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := FlattenYAML([]byte(tt.in))
			if err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestFlattenYAMLErrors(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"not yaml", "a: [unclosed\n", "parsing YAML"},
		{"top-level list", "- a\n- b\n", "must be a mapping"},
		{"top-level scalar", "just text\n", "must be a mapping"},
		{"flat and nested twice", "a.b: 1\na:\n  b: 2\n", "a.b is set twice"},
		{"empty key", "'': 1\n", "empty key"},
		{"complex key", "? [a, b]\n: 1\n", "keys must be plain scalars"},
		{"merge key", "x: &m {a: 1}\ny:\n  <<: *m\n", "keys must be plain scalars"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := FlattenYAML([]byte(tt.in))
			if err == nil {
				t.Fatalf("want error containing %q, got %v", tt.want, got)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q does not contain %q", err, tt.want)
			}
		})
	}
}

func decodeJSON(t *testing.T, s string) map[string]any {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber() // what v1beta1.Configuration.Values does
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestFlatten(t *testing.T) {
	tests := []struct {
		name string
		in   map[string]any
		want map[string]string
	}{
		{"nil", nil, map[string]string{}},
		{"flat strings", map[string]any{KeyReconcileInterval: "30 s"}, map[string]string{KeyReconcileInterval: "30 s"}},
		{"nested from JSON", decodeJSON(t, `{"kubernetes":{"operator":{"savepoint":{"history":{"max.count":5}}}}}`),
			map[string]string{KeySavepointHistoryMaxCount: "5"}},
		{"json.Number as written", decodeJSON(t, `{"a":10.0,"b":1e6,"c":-3}`),
			map[string]string{"a": "10.0", "b": "1e6", "c": "-3"}},
		{"float64 in plain decimal", map[string]any{"a": 1e6, "b": 0.5, "c": float64(3)},
			map[string]string{"a": "1000000", "b": "0.5", "c": "3"}},
		{"ints and bools", map[string]any{"a": 3, "b": int64(-4), "c": true, "d": false},
			map[string]string{"a": "3", "b": "-4", "c": "true", "d": "false"}},
		{"null", map[string]any{"a": nil}, map[string]string{"a": ""}},
		{"lists", decodeJSON(t, `{"a":["x","y"],"b":["true",1,null],"c":[]}`),
			map[string]string{"a": "[x, y]", "b": `["true", 1, null]`, "c": "[]"}},
		{"string slice", map[string]any{"a": []string{"x", "has, comma"}}, map[string]string{"a": "[x, 'has, comma']"}},
		{"nested string map", map[string]any{"a": map[string]string{"b": "c"}}, map[string]string{"a.b": "c"}},
		{"values that look like YAML stay strings", map[string]any{"a": "yes", "b": "[not, a, list]"},
			map[string]string{"a": "yes", "b": "[not, a, list]"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Flatten(tt.in)
			if err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestFlattenErrors(t *testing.T) {
	tests := []struct {
		name string
		in   map[string]any
		want string
	}{
		{"flat and nested twice", map[string]any{"a.b": "1", "a": map[string]any{"b": "2"}}, "a.b is set twice"},
		{"unsupported type", map[string]any{"a": map[string]any{"b": struct{}{}}}, "config key a.b: unsupported value type"},
		{"empty nested key", map[string]any{"a": map[string]any{" ": "x"}}, "empty key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Flatten(tt.in)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want it to contain %q", err, tt.want)
			}
		})
	}
}

// A list rendered by Flatten must read back through Config.List, since the
// operator's config file may give watched namespaces as a YAML list.
func TestFlattenedListReadsBack(t *testing.T) {
	flat, err := FlattenYAML([]byte("kubernetes.operator.watched.namespaces: [team-a, 'team-b']\n"))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"team-a", "team-b"}, Config(flat).List(KeyWatchedNamespaces)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}
