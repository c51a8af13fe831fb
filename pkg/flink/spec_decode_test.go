package flink_test

import (
	"context"
	"encoding/json"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/flinkops/flink-operator/pkg/flink"
	"github.com/flinkops/flink-operator/pkg/flink/internal/openapi"
)

// TestDecodeSpecExamples builds a response body from each version's OpenAPI
// response schema for every endpoint the client uses, serves it, calls the
// client, and checks that every client field found in the body decoded to
// the exact example value. A misspelt JSON name (target-directory vs
// targetDirectory, failure-cause vs failureCause) leaves a field zero and
// fails here; so does a client field that no spec version has at all.

const (
	testJobID = "0123456789abcdef0123456789abcdef"
	testTrig  = "fedcba9876543210fedcba9876543210"
)

type decodeCase struct {
	name         string
	method, path string // as in the spec
	// generator tweaks: subtype substitution, oneOf choice, omitted keys.
	substitute map[string]string
	prefer     []string
	omit       []string
	// status overrides status.id of an async answer ("" keeps the example).
	status string
	// call runs the client; the result is compared with sub(example).
	call func(ctx context.Context, c *flink.Client) (any, error)
	// sub selects the part of the example the result mirrors; nil = all.
	sub func(ex map[string]any) any
	// check adds semantic assertions for results that are not mirrors.
	check func(t *testing.T, ex map[string]any, result any)
}

func asyncOperation(ex map[string]any) map[string]any {
	op, _ := ex["operation"].(map[string]any)
	return op
}

func serializedThrowable(t *testing.T, ex map[string]any, key string) string {
	t.Helper()
	cause, _ := asyncOperation(ex)[key].(map[string]any)
	st, _ := cause["serialized-throwable"].(string)
	if st == "" {
		t.Fatalf("example has no %s.serialized-throwable: %v", key, ex)
	}
	return st
}

func decodeCases() []decodeCase {
	ctx := func(f func(ctx context.Context, c *flink.Client) (any, error)) func(context.Context, *flink.Client) (any, error) {
		return f
	}
	field := func(k string) func(map[string]any) any { return func(ex map[string]any) any { return ex[k] } }
	expectTrigger := func(t *testing.T, ex map[string]any, result any) {
		if result != ex["request-id"] {
			t.Errorf("trigger id = %v, example request-id = %v", result, ex["request-id"])
		}
	}
	return []decodeCase{
		{name: "config", method: "GET", path: "/config",
			call: ctx(func(ctx context.Context, c *flink.Client) (any, error) { return c.Config(ctx) })},
		{name: "overview", method: "GET", path: "/overview",
			call: ctx(func(ctx context.Context, c *flink.Client) (any, error) { return c.Overview(ctx) })},
		{name: "jobs-overview", method: "GET", path: "/jobs/overview", sub: field("jobs"),
			call: ctx(func(ctx context.Context, c *flink.Client) (any, error) { return c.JobsOverview(ctx) })},
		{name: "job", method: "GET", path: "/jobs/{jobid}",
			call: ctx(func(ctx context.Context, c *flink.Client) (any, error) { return c.Job(ctx, testJobID) })},
		{name: "exceptions", method: "GET", path: "/jobs/{jobid}/exceptions",
			call: ctx(func(ctx context.Context, c *flink.Client) (any, error) { return c.JobExceptions(ctx, testJobID, 5) })},
		{name: "taskmanagers", method: "GET", path: "/taskmanagers", sub: field("taskmanagers"),
			call: ctx(func(ctx context.Context, c *flink.Client) (any, error) { return c.TaskManagers(ctx) })},

		{name: "savepoint-trigger", method: "POST", path: "/jobs/{jobid}/savepoints", check: expectTrigger,
			call: ctx(func(ctx context.Context, c *flink.Client) (any, error) {
				return c.TriggerSavepoint(ctx, testJobID, flink.SavepointRequest{TargetDirectory: "/sp"})
			})},
		{name: "stop-trigger", method: "POST", path: "/jobs/{jobid}/stop", check: expectTrigger,
			call: ctx(func(ctx context.Context, c *flink.Client) (any, error) {
				return c.StopWithSavepoint(ctx, testJobID, flink.StopRequest{TargetDirectory: "/sp"})
			})},
		{name: "savepoint-status-success", method: "GET", path: "/jobs/{jobid}/savepoints/{triggerid}",
			prefer: []string{"SavepointInfo"}, omit: []string{"failure-cause"}, status: "COMPLETED",
			call: ctx(func(ctx context.Context, c *flink.Client) (any, error) {
				return c.SavepointStatus(ctx, testJobID, testTrig)
			}),
			check: func(t *testing.T, ex map[string]any, result any) {
				r := result.(flink.SavepointResult)
				if !r.Succeeded() || r.Value != asyncOperation(ex)["location"] {
					t.Errorf("result %+v, want success at %v", r, asyncOperation(ex)["location"])
				}
			}},
		{name: "savepoint-status-failure", method: "GET", path: "/jobs/{jobid}/savepoints/{triggerid}",
			prefer: []string{"SavepointInfo"}, omit: []string{"location"}, status: "COMPLETED",
			call: ctx(func(ctx context.Context, c *flink.Client) (any, error) {
				return c.SavepointStatus(ctx, testJobID, testTrig)
			}),
			check: func(t *testing.T, ex map[string]any, result any) {
				r := result.(flink.SavepointResult)
				want := serializedThrowable(t, ex, "failure-cause")
				if !r.Failed() || r.Failure == nil || r.Failure.SerializedThrowable != want {
					t.Errorf("result %+v, want failure carrying %q", r, want)
				}
			}},
		{name: "savepoint-status-pending", method: "GET", path: "/jobs/{jobid}/savepoints/{triggerid}",
			prefer: []string{"SavepointInfo"}, status: "IN_PROGRESS",
			call: ctx(func(ctx context.Context, c *flink.Client) (any, error) {
				return c.SavepointStatus(ctx, testJobID, testTrig)
			}),
			check: func(t *testing.T, _ map[string]any, result any) {
				if r := result.(flink.SavepointResult); !r.Pending() {
					t.Errorf("result %+v, want pending", r)
				}
			}},

		{name: "checkpoint-trigger", method: "POST", path: "/jobs/{jobid}/checkpoints", check: expectTrigger,
			call: ctx(func(ctx context.Context, c *flink.Client) (any, error) {
				return c.TriggerCheckpoint(ctx, testJobID, flink.CheckpointRequest{Type: flink.CheckpointFull})
			})},
		{name: "checkpoint-status-success", method: "GET", path: "/jobs/{jobid}/checkpoints/{triggerid}",
			prefer: []string{"CheckpointInfo"}, omit: []string{"failureCause"}, status: "COMPLETED",
			call: ctx(func(ctx context.Context, c *flink.Client) (any, error) {
				return c.CheckpointStatus(ctx, testJobID, testTrig)
			}),
			check: func(t *testing.T, ex map[string]any, result any) {
				r := result.(flink.CheckpointResult)
				if want := asyncOperation(ex)["checkpointId"].(float64); !r.Succeeded() || float64(r.Value) != want {
					t.Errorf("result %+v, want checkpoint %v", r, want)
				}
			}},
		{name: "checkpoint-status-failure", method: "GET", path: "/jobs/{jobid}/checkpoints/{triggerid}",
			prefer: []string{"CheckpointInfo"}, omit: []string{"checkpointId"}, status: "COMPLETED",
			call: ctx(func(ctx context.Context, c *flink.Client) (any, error) {
				return c.CheckpointStatus(ctx, testJobID, testTrig)
			}),
			check: func(t *testing.T, ex map[string]any, result any) {
				r := result.(flink.CheckpointResult)
				want := serializedThrowable(t, ex, "failureCause")
				if !r.Failed() || r.Failure == nil || r.Failure.SerializedThrowable != want {
					t.Errorf("result %+v, want failure carrying %q", r, want)
				}
			}},
		{name: "checkpoints", method: "GET", path: "/jobs/{jobid}/checkpoints",
			substitute: map[string]string{"CheckpointStatistics": "CompletedCheckpointStatistics"},
			call:       ctx(func(ctx context.Context, c *flink.Client) (any, error) { return c.Checkpoints(ctx, testJobID) }),
			check: func(t *testing.T, ex map[string]any, result any) {
				stats := result.(*flink.CheckpointingStatistics)
				if _, ok := stats.LatestSnapshot(); !ok {
					t.Errorf("LatestSnapshot found nothing in %+v", stats.Latest)
				}
			}},
		{name: "checkpoint-details-completed", method: "GET", path: "/jobs/{jobid}/checkpoints/details/{checkpointid}",
			substitute: map[string]string{"CheckpointStatistics": "CompletedCheckpointStatistics"},
			call:       ctx(func(ctx context.Context, c *flink.Client) (any, error) { return c.CheckpointDetails(ctx, testJobID, 7) })},
		{name: "checkpoint-details-failed", method: "GET", path: "/jobs/{jobid}/checkpoints/details/{checkpointid}",
			substitute: map[string]string{"CheckpointStatistics": "FailedCheckpointStatistics"},
			call:       ctx(func(ctx context.Context, c *flink.Client) (any, error) { return c.CheckpointDetails(ctx, testJobID, 7) })},
		{name: "checkpoint-details-pending", method: "GET", path: "/jobs/{jobid}/checkpoints/details/{checkpointid}",
			substitute: map[string]string{"CheckpointStatistics": "PendingCheckpointStatistics"},
			call:       ctx(func(ctx context.Context, c *flink.Client) (any, error) { return c.CheckpointDetails(ctx, testJobID, 7) })},
		{name: "checkpoint-config", method: "GET", path: "/jobs/{jobid}/checkpoints/config",
			call: ctx(func(ctx context.Context, c *flink.Client) (any, error) { return c.CheckpointConfig(ctx, testJobID) })},

		{name: "disposal-trigger", method: "POST", path: "/savepoint-disposal", check: expectTrigger,
			call: ctx(func(ctx context.Context, c *flink.Client) (any, error) { return c.DisposeSavepoint(ctx, "file:/sp/x") })},
		{name: "disposal-status-success", method: "GET", path: "/savepoint-disposal/{triggerid}",
			prefer: []string{"AsynchronousOperationInfo"}, omit: []string{"failure-cause"}, status: "COMPLETED",
			call: ctx(func(ctx context.Context, c *flink.Client) (any, error) { return c.DisposalStatus(ctx, testTrig) }),
			check: func(t *testing.T, _ map[string]any, result any) {
				if r := result.(flink.DisposalResult); !r.Succeeded() {
					t.Errorf("result %+v, want success", r)
				}
			}},
		{name: "disposal-status-failure", method: "GET", path: "/savepoint-disposal/{triggerid}",
			prefer: []string{"AsynchronousOperationInfo"}, status: "COMPLETED",
			call: ctx(func(ctx context.Context, c *flink.Client) (any, error) { return c.DisposalStatus(ctx, testTrig) }),
			check: func(t *testing.T, ex map[string]any, result any) {
				r := result.(flink.DisposalResult)
				want := serializedThrowable(t, ex, "failure-cause")
				if !r.Failed() || r.Failure == nil || r.Failure.SerializedThrowable != want {
					t.Errorf("result %+v, want failure carrying %q", r, want)
				}
			}},

		{name: "jar-upload", method: "POST", path: "/jars/upload",
			call: ctx(func(ctx context.Context, c *flink.Client) (any, error) {
				return c.UploadJar(ctx, "job.jar", strings.NewReader("PK fake jar"), 11)
			})},
		{name: "jar-run", method: "POST", path: "/jars/{jarid}/run",
			call: ctx(func(ctx context.Context, c *flink.Client) (any, error) {
				return c.RunJar(ctx, "abc_job.jar", flink.JarRunRequest{EntryClass: "x.Main"})
			}),
			check: func(t *testing.T, ex map[string]any, result any) {
				if result != ex["jobid"] {
					t.Errorf("job id = %v, example jobid = %v", result, ex["jobid"])
				}
			}},
	}
}

// specGapFields are client fields that no spec lists but real Flink sends.
var specGapFields = map[string]string{
	"FailureCause.class":       "SerializedThrowable's custom serializer writes class",
	"FailureCause.stack-trace": "SerializedThrowable's custom serializer writes stack-trace",
}

func TestDecodeSpecExamples(t *testing.T) {
	coverage := newFieldCoverage()
	for _, version := range openapi.Versions {
		spec := loadSpec(t, version)
		v := flink.MustParseVersion(version)
		for _, tc := range decodeCases() {
			t.Run(version+"/"+tc.name, func(t *testing.T) {
				runDecodeCase(t, spec, v, tc, coverage)
			})
		}
	}
	if unseen := coverage.unseen(specGapFields); len(unseen) > 0 {
		sort.Strings(unseen)
		t.Errorf("client fields that appear in no Flink spec (misspelt JSON names?): %v", unseen)
	}
}

func runDecodeCase(t *testing.T, spec *openapi.Spec, v flink.Version, tc decodeCase, coverage *fieldCoverage) {
	schema, err := spec.ResponseSchema(tc.method, tc.path)
	if err != nil {
		t.Fatal(err)
	}
	statuses, err := spec.ResponseStatuses(tc.method, tc.path)
	if err != nil {
		t.Fatal(err)
	}
	status, _ := strconv.Atoi(statuses[0])
	omit := map[string]bool{}
	for _, k := range tc.omit {
		omit[k] = true
	}
	gen := &openapi.Generator{Spec: spec, Substitute: tc.substitute, Prefer: tc.prefer, Omit: omit}
	exAny, err := gen.Example(schema)
	if err != nil {
		t.Fatal(err)
	}
	ex := exAny.(map[string]any)
	if tc.status != "" {
		ex["status"] = map[string]any{"id": tc.status}
		if tc.status == "IN_PROGRESS" {
			ex["operation"] = nil
		}
	}
	body, err := json.Marshal(ex)
	if err != nil {
		t.Fatal(err)
	}
	// Continue with the example as JSON decodes it (numbers as float64).
	ex = nil
	if err := json.Unmarshal(body, &ex); err != nil {
		t.Fatal(err)
	}
	if errs := spec.ValidateJSON(schema, body); len(errs) > 0 {
		t.Fatalf("generated example does not match its own schema: %v", errs)
	}
	srv := newCannedServer(t, status, body)
	c := newClient(t, srv.URL, v)
	result, err := tc.call(context.Background(), c)
	if err != nil {
		t.Fatalf("client failed on %s %s example %s: %v", tc.method, tc.path, body, err)
	}
	if tc.check != nil {
		tc.check(t, ex, result)
		return
	}
	want := any(ex)
	if tc.sub != nil {
		want = tc.sub(ex)
	}
	if errs := coverage.compare(reflect.ValueOf(result), want, "$"); len(errs) > 0 {
		t.Errorf("decoded value differs from the example:\n  %s\nexample: %s", strings.Join(errs, "\n  "), body)
	}
}
