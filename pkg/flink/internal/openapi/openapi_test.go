package openapi

import (
	"strings"
	"testing"
)

// The spec helpers are test infrastructure; these tests make sure they
// can fail, so that a green spec test means something.

func TestLoadAllVersions(t *testing.T) {
	for _, v := range Versions {
		spec, err := Load(v)
		if err != nil {
			t.Fatalf("cannot load the Flink %s spec: %v", v, err)
		}
		if !spec.HasOperation("GET", "/jobs/{jobid}/savepoints/{triggerid}") {
			t.Errorf("%s: savepoint status operation missing", v)
		}
	}
	if _, err := Load("0.1"); err == nil {
		t.Error("loading a missing version must fail")
	}
}

func TestValidateRejectsWrongNamesAndTypes(t *testing.T) {
	spec, err := Load("1.18")
	if err != nil {
		t.Fatal(err)
	}
	schema, err := spec.RequestSchema("POST", "/jobs/{jobid}/stop")
	if err != nil {
		t.Fatal(err)
	}
	for body, want := range map[string]string{
		`{"targetDirectory":"/x","drain":true}`:               "",
		`{"target-directory":"/x"}`:                           "property not in the spec",
		`{"drain":"yes"}`:                                     "want boolean",
		`{"formatType":"BINARY"}`:                             "is not one of",
		`{"triggerId":"ABC"}`:                                 "32 lowercase hex",
		`{"targetDirectory":"/x","triggerId":null}`:           "",
		`{"formatType":"NATIVE","triggerId":"` + hex32 + `"}`: "",
	} {
		errs := strings.Join(spec.ValidateJSON(schema, []byte(body)), "; ")
		if (want == "") != (errs == "") || !strings.Contains(errs, want) {
			t.Errorf("%s: errors %q, want %q", body, errs, want)
		}
	}
}

const hex32 = "0123456789abcdef0123456789abcdef"

func TestExampleValuesAreDistinctAndValid(t *testing.T) {
	spec, err := Load("2.0")
	if err != nil {
		t.Fatal(err)
	}
	schema, err := spec.ResponseSchema("GET", "/overview")
	if err != nil {
		t.Fatal(err)
	}
	g := &Generator{Spec: spec}
	ex, err := g.Example(schema)
	if err != nil {
		t.Fatal(err)
	}
	obj := ex.(map[string]any)
	seen := map[any]string{}
	for k, v := range obj {
		if prev, dup := seen[v]; dup {
			t.Errorf("%s and %s share the example value %v", k, prev, v)
		}
		seen[v] = k
	}
	if errs := spec.Validate(schema, ex); len(errs) > 0 {
		t.Errorf("example violates its schema: %v", errs)
	}
}

func TestMatchPath(t *testing.T) {
	if !MatchPath("/jobs/{jobid}/savepoints", "/jobs/abc/savepoints") ||
		MatchPath("/jobs/{jobid}/savepoints", "/jobs/abc/stop") ||
		MatchPath("/jobs/{jobid}", "/jobs/abc/stop") {
		t.Error("MatchPath")
	}
}
