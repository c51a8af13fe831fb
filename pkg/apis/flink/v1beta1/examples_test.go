package v1beta1_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/crdtest"
	"github.com/flinkops/flink-operator/pkg/upstreamtest"
)

// example is one flink.apache.org object from the upstream samples or
// manifests/examples.
type example struct {
	source string
	object map[string]any
}

func upstreamExamples(t *testing.T) []example {
	t.Helper()
	type file struct {
		name string
		read func() ([]byte, error)
	}
	var files []file
	for _, dir := range []string{"examples", "e2e-data"} {
		names, err := upstreamtest.Glob(dir, "*.yaml")
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range names {
			files = append(files, file{name, func() ([]byte, error) { return upstreamtest.ReadFile(name) }})
		}
	}
	// Ours too: manifests/examples must stay valid against the CRDs.
	ours, err := filepath.Glob(filepath.Join("..", "..", "..", "..", "manifests", "examples", "*.yaml"))
	if err != nil || len(ours) < 5 {
		t.Fatalf("manifests/examples: %d files, %v", len(ours), err)
	}
	for _, name := range ours {
		files = append(files, file{name, func() ([]byte, error) { return os.ReadFile(name) }})
	}
	var out []example
	for _, fl := range files {
		f := fl.name
		data, err := fl.read()
		if err != nil {
			t.Fatal(err)
		}
		reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
		for i := 0; ; i++ {
			doc, err := reader.Read()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			var obj map[string]any
			if err := yaml.Unmarshal(doc, &obj); err != nil {
				t.Fatalf("%s document %d: %v", f, i, err)
			}
			if obj == nil || !strings.HasPrefix(obj["apiVersion"].(string), v1beta1.GroupName+"/") {
				continue
			}
			out = append(out, example{source: filepath.Base(f) + "#" + obj["kind"].(string) + "/" + obj["metadata"].(map[string]any)["name"].(string), object: obj})
		}
	}
	if len(out) < 15 {
		t.Fatalf("found only %d flink.apache.org objects in the upstream samples", len(out))
	}
	return out
}

func validators(t *testing.T) map[string]*crdtest.Validator {
	t.Helper()
	out := map[string]*crdtest.Validator{}
	for _, p := range crdPairs {
		_, ours := loadPair(t, p)
		v, err := crdtest.NewValidator(ours)
		if err != nil {
			t.Fatal(err)
		}
		out[ours.Spec.Names.Kind] = v
	}
	return out
}

// TestUpstreamExamplesValidate checks every upstream sample against our CRD
// schema as the API server would: OpenAPI, CEL, and no field pruned.
func TestUpstreamExamplesValidate(t *testing.T) {
	vals := validators(t)
	for _, ex := range upstreamExamples(t) {
		t.Run(ex.source, func(t *testing.T) {
			v := vals[ex.object["kind"].(string)]
			if v == nil {
				t.Fatalf("no CRD for kind %v", ex.object["kind"])
			}
			pruned, errs := v.Validate(ex.object, nil)
			if len(pruned) > 0 {
				t.Errorf("fields unknown to our schema (would be pruned or rejected): %v", pruned)
			}
			if len(errs) > 0 {
				t.Errorf("rejected by our schema: %v", errs.ToAggregate())
			}
		})
	}
}

// TestUpstreamExamplesRoundTrip decodes every sample into our Go types
// (strictly: an unknown field fails) and encodes it again without losing or
// changing a field.
func TestUpstreamExamplesRoundTrip(t *testing.T) {
	for _, ex := range upstreamExamples(t) {
		t.Run(ex.source, func(t *testing.T) {
			in, err := json.Marshal(ex.object)
			if err != nil {
				t.Fatal(err)
			}
			typed := newObject(t, ex.object["kind"].(string))
			strictErrs, err := kjson.UnmarshalStrict(in, typed)
			if err != nil {
				t.Fatalf("decoding into our types: %v", err)
			}
			if len(strictErrs) > 0 {
				t.Fatalf("fields our types do not know: %v", strictErrs)
			}
			out, err := json.Marshal(typed)
			if err != nil {
				t.Fatal(err)
			}
			var got map[string]any
			if err := json.Unmarshal(out, &got); err != nil {
				t.Fatal(err)
			}
			var want map[string]any
			if err := json.Unmarshal(in, &want); err != nil {
				t.Fatal(err)
			}
			dropEmptyExtras(got, want)
			if diff := cmp.Diff(want, got, sameQuantity); diff != "" {
				t.Errorf("round trip changed the object (-sample +ours):\n%s", diff)
			}
		})
	}
}

// sameQuantity compares resource quantities (…limits/requests[name]) by value:
// Kubernetes' Quantity writes its canonical form ("0.5" → "500m", "2048Mi" →
// "2Gi"), as the API server does for every Pod; the value is unchanged.
var sameQuantity = cmp.FilterPath(func(p cmp.Path) bool {
	var keys []string
	for _, step := range p {
		if mi, ok := step.(cmp.MapIndex); ok {
			keys = append(keys, mi.Key().String())
		}
	}
	n := len(keys)
	return n >= 2 && (keys[n-2] == "limits" || keys[n-2] == "requests")
}, cmp.Comparer(func(a, b string) bool {
	qa, errA := resource.ParseQuantity(a)
	qb, errB := resource.ParseQuantity(b)
	return errA == nil && errB == nil && qa.Cmp(qb) == 0
}))

func newObject(t *testing.T, kind string) runtime.Object {
	switch kind {
	case "FlinkDeployment":
		return &v1beta1.FlinkDeployment{}
	case "FlinkSessionJob":
		return &v1beta1.FlinkSessionJob{}
	case "FlinkStateSnapshot":
		return &v1beta1.FlinkStateSnapshot{}
	}
	t.Fatalf("unknown kind %q", kind)
	return nil
}

// dropEmptyExtras removes from got the keys the sample did not have whose
// value is empty (null, {}, []): Go zero structs such as an empty status or
// creationTimestamp: null, which carry no information. Anything else extra is
// left in and fails the comparison.
func dropEmptyExtras(got, want any) {
	g, ok := got.(map[string]any)
	if !ok {
		if gl, ok := got.([]any); ok {
			if wl, ok := want.([]any); ok && len(gl) == len(wl) {
				for i := range gl {
					dropEmptyExtras(gl[i], wl[i])
				}
			}
		}
		return
	}
	w, _ := want.(map[string]any)
	for k, v := range g {
		if wv, ok := w[k]; ok {
			dropEmptyExtras(v, wv)
			continue
		}
		dropEmptyExtras(v, nil)
		if isEmpty(v) {
			delete(g, k)
		}
	}
}

func isEmpty(v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case map[string]any:
		return len(x) == 0
	case []any:
		return len(x) == 0
	}
	return false
}

// TestSnapshotSchemaRejectsInvalid covers the CRD-level snapshot rules (the
// same cases run against a real API server in e2e/integration).
func TestSnapshotSchemaRejectsInvalid(t *testing.T) {
	v := validators(t)["FlinkStateSnapshot"]
	snapshot := func(spec string) map[string]any {
		var obj map[string]any
		if err := yaml.Unmarshal([]byte("apiVersion: flink.apache.org/v1beta1\nkind: FlinkStateSnapshot\nmetadata: {name: s, namespace: default}\nspec:\n"+spec), &obj); err != nil {
			t.Fatal(err)
		}
		return obj
	}
	valid := snapshot("  jobReference: {kind: FlinkDeployment, name: job}\n  savepoint: {}\n")
	if _, errs := v.Validate(valid, nil); len(errs) > 0 {
		t.Fatalf("valid snapshot rejected: %v", errs.ToAggregate())
	}
	cases := []struct {
		name    string
		obj     map[string]any
		old     map[string]any
		wantMsg string
	}{
		{"both savepoint and checkpoint", snapshot("  savepoint: {}\n  checkpoint: {}\n"), nil, "exactly one of spec.savepoint and spec.checkpoint"},
		{"neither savepoint nor checkpoint", snapshot("  jobReference: {kind: FlinkDeployment, name: job}\n"), nil, "exactly one of spec.savepoint and spec.checkpoint"},
		{"backoffLimit -2", snapshot("  savepoint: {}\n  backoffLimit: -2\n"), nil, "greater than or equal to -1"},
		{"spec changed after creation", snapshot("  jobReference: {kind: FlinkDeployment, name: other}\n  savepoint: {}\n"), valid, "spec is immutable"},
		{"unknown jobReference kind", snapshot("  jobReference: {kind: Deployment, name: job}\n  savepoint: {}\n"), nil, "Unsupported value"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, errs := v.Validate(tc.obj, tc.old)
			if !containsMessage(errs, tc.wantMsg) {
				t.Fatalf("want an error containing %q, got %v", tc.wantMsg, errs.ToAggregate())
			}
		})
	}
}

func containsMessage(errs field.ErrorList, msg string) bool {
	for _, e := range errs {
		if strings.Contains(e.Error(), msg) {
			return true
		}
	}
	return false
}
