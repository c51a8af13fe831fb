package flink_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"testing"

	"github.com/flinkops/flink-operator/pkg/flink"
	"github.com/flinkops/flink-operator/pkg/flink/internal/openapi"
)

// TestRequestsMatchSpec calls every client method with every option set,
// captures what goes over the wire, and checks it against the request
// schema of that Flink version: each JSON field name must exist there (with
// the right type and enum value), the expected fields must all be sent,
// the URL must match the spec's path, and query parameters must be known.
// Flink up to 1.19 rejects unknown fields with 400, so a name that is wrong
// for one version is a real outage there.

type requestCase struct {
	name         string
	method, path string // spec method and path template
	call         func(ctx context.Context, c *flink.Client) error
	// wantFields are the JSON fields that must be sent for version v.
	wantFields func(v flink.Version) []string
	// wantQuery are query parameters that must be sent.
	wantQuery []string
}

func fields(names ...string) func(flink.Version) []string {
	return func(flink.Version) []string { return names }
}

func requestCases() []requestCase {
	return []requestCase{
		{name: "savepoint", method: "POST", path: "/jobs/{jobid}/savepoints",
			call: func(ctx context.Context, c *flink.Client) error {
				_, err := c.TriggerSavepoint(ctx, testJobID, flink.SavepointRequest{
					TargetDirectory: "file:///savepoints", CancelJob: true,
					FormatType: flink.SavepointFormatNative, TriggerID: testTrig})
				return err
			},
			wantFields: fields("cancel-job", "formatType", "target-directory", "triggerId")},
		{name: "stop", method: "POST", path: "/jobs/{jobid}/stop",
			call: func(ctx context.Context, c *flink.Client) error {
				_, err := c.StopWithSavepoint(ctx, testJobID, flink.StopRequest{
					TargetDirectory: "file:///savepoints", Drain: true,
					FormatType: flink.SavepointFormatCanonical, TriggerID: testTrig})
				return err
			},
			wantFields: fields("drain", "formatType", "targetDirectory", "triggerId")},
		{name: "checkpoint", method: "POST", path: "/jobs/{jobid}/checkpoints",
			call: func(ctx context.Context, c *flink.Client) error {
				_, err := c.TriggerCheckpoint(ctx, testJobID, flink.CheckpointRequest{Type: flink.CheckpointFull, TriggerID: testTrig})
				return err
			},
			wantFields: fields("checkpointType", "triggerId")},
		{name: "disposal", method: "POST", path: "/savepoint-disposal",
			call: func(ctx context.Context, c *flink.Client) error {
				_, err := c.DisposeSavepoint(ctx, "file:/savepoints/savepoint-012345-abcdefabcdef")
				return err
			},
			wantFields: fields("savepoint-path")},
		{name: "jar-run", method: "POST", path: "/jars/{jarid}/run",
			call: func(ctx context.Context, c *flink.Client) error {
				_, err := c.RunJar(ctx, "2bd2c6a0-1234_job.jar", flink.JarRunRequest{
					EntryClass: "com.example.Job", ProgramArgs: []string{"--a", "1"}, Parallelism: 2,
					JobID: testJobID, AllowNonRestoredState: true, SavepointPath: "file:/sp/savepoint-1",
					ClaimMode: flink.ClaimModeClaim, FlinkConfiguration: map[string]string{"pipeline.name": "x"}})
				return err
			},
			wantFields: func(v flink.Version) []string {
				mode := "restoreMode"
				if v.AtLeast(flink.V1_20) {
					mode = "claimMode"
				}
				return []string{"allowNonRestoredState", "entryClass", "flinkConfiguration", "jobId",
					"parallelism", "programArgsList", "savepointPath", mode}
			}},
		{name: "cancel", method: "PATCH", path: "/jobs/{jobid}", wantQuery: []string{"mode"},
			call: func(ctx context.Context, c *flink.Client) error { return c.CancelJob(ctx, testJobID) }},
		{name: "exceptions", method: "GET", path: "/jobs/{jobid}/exceptions", wantQuery: []string{"maxExceptions"},
			call: func(ctx context.Context, c *flink.Client) error {
				_, err := c.JobExceptions(ctx, testJobID, 10)
				return err
			}},
		{name: "delete-jar", method: "DELETE", path: "/jars/{jarid}",
			call: func(ctx context.Context, c *flink.Client) error { return c.DeleteJar(ctx, "2bd2c6a0-1234_job.jar") }},
	}
}

// cannedAnswer is a body that satisfies every client method under test.
var cannedAnswer = []byte(`{"request-id":"` + testTrig + `","jobid":"` + testJobID + `","exceptionHistory":{"entries":[]}}`)

func TestRequestsMatchSpec(t *testing.T) {
	for _, version := range openapi.Versions {
		spec := loadSpec(t, version)
		v := flink.MustParseVersion(version)
		for _, tc := range requestCases() {
			t.Run(version+"/"+tc.name, func(t *testing.T) {
				srv := newCannedServer(t, http.StatusOK, cannedAnswer)
				c := newClient(t, srv.URL, v)
				if err := tc.call(context.Background(), c); err != nil {
					t.Fatalf("call failed: %v", err)
				}
				got := srv.last(t)
				checkRequestAgainstSpec(t, spec, v, tc, got)
			})
		}
	}
}

func checkRequestAgainstSpec(t *testing.T, spec *openapi.Spec, v flink.Version, tc requestCase, got captured) {
	t.Helper()
	if got.Method != tc.method || !openapi.MatchPath(tc.path, got.Path) {
		t.Errorf("sent %s %s, spec operation is %s %s", got.Method, got.Path, tc.method, tc.path)
	}
	if !spec.HasOperation(tc.method, tc.path) {
		t.Fatalf("Flink %s has no %s %s", spec.Version, tc.method, tc.path)
	}
	known, err := spec.QueryParams(tc.method, tc.path)
	if err != nil {
		t.Fatal(err)
	}
	q, _ := url.ParseQuery(got.Query)
	for name := range q {
		if !containsString(known, name) {
			t.Errorf("query parameter %q is not in the %s spec (known: %v)", name, spec.Version, known)
		}
	}
	for _, name := range tc.wantQuery {
		if !q.Has(name) {
			t.Errorf("query parameter %q not sent", name)
		}
	}
	if tc.wantFields == nil {
		if len(bytes.TrimSpace(got.Body)) != 0 {
			t.Errorf("unexpected body %s", got.Body)
		}
		return
	}
	schema, err := spec.RequestSchema(tc.method, tc.path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(got.ContentType, "application/json") {
		t.Errorf("Content-Type = %q, want application/json", got.ContentType)
	}
	if errs := spec.ValidateJSON(schema, got.Body); len(errs) > 0 {
		allowed, _ := spec.PropertyNames(schema)
		t.Errorf("request body %s violates the Flink %s request schema (allowed fields %v):\n  %s",
			got.Body, spec.Version, allowed, strings.Join(errs, "\n  "))
	}
	var sent map[string]any
	if err := json.Unmarshal(got.Body, &sent); err != nil {
		t.Fatalf("body is not a JSON object: %s", got.Body)
	}
	var sentNames []string
	for k := range sent {
		sentNames = append(sentNames, k)
	}
	sort.Strings(sentNames)
	want := tc.wantFields(v)
	sort.Strings(want)
	if strings.Join(sentNames, ",") != strings.Join(want, ",") {
		t.Errorf("sent fields %v, want exactly %v", sentNames, want)
	}
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// TestJarUploadIsMultipartJarfile checks the upload wire format against
// what Flink's JarUploadHandler needs: one multipart file part, field
// "jarfile", a .jar name, the jar's bytes, and a known length.
func TestJarUploadIsMultipartJarfile(t *testing.T) {
	srv := newCannedServer(t, http.StatusOK, []byte(`{"filename":"/tmp/flink-web/flink-web-upload/abc_job.jar","status":"success"}`))
	c := newClient(t, srv.URL, flink.V1_18)
	content := "PK\x03\x04 pretend this is a jar"
	up, err := c.UploadJar(context.Background(), "/build/libs/job.jar", strings.NewReader(content), int64(len(content)))
	if err != nil {
		t.Fatal(err)
	}
	if up.ID() != "abc_job.jar" {
		t.Errorf("jar id = %q, want abc_job.jar", up.ID())
	}
	got := srv.last(t)
	if got.Path != "/jars/upload" || got.Method != http.MethodPost {
		t.Errorf("sent %s %s", got.Method, got.Path)
	}
	mt, params, err := mime.ParseMediaType(got.ContentType)
	if err != nil || mt != "multipart/form-data" {
		t.Fatalf("Content-Type %q is not multipart/form-data", got.ContentType)
	}
	mr := multipart.NewReader(bytes.NewReader(got.Body), params["boundary"])
	part, err := mr.NextPart()
	if err != nil {
		t.Fatal(err)
	}
	data, _ := io.ReadAll(part)
	if part.FormName() != "jarfile" || part.FileName() != "job.jar" || string(data) != content {
		t.Errorf("part field=%q file=%q content=%q", part.FormName(), part.FileName(), data)
	}
	if ct := part.Header.Get("Content-Type"); ct != "application/x-java-archive" {
		t.Errorf("part Content-Type = %q", ct)
	}
	if _, err := mr.NextPart(); err != io.EOF {
		t.Errorf("want exactly one part, next part err = %v", err)
	}
	if _, err := c.UploadJar(context.Background(), "job.zip", strings.NewReader("x"), 1); !flink.IsBadRequest(err) {
		t.Errorf("non-.jar upload: err = %v, want a local bad-request error", err)
	}
}
