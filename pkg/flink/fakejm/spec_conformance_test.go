package fakejm_test

import (
	"bytes"
	"encoding/json"
	"io"
	"mime/multipart"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/flinkops/flink-operator/pkg/flink"
	"github.com/flinkops/flink-operator/pkg/flink/fakejm"
	"github.com/flinkops/flink-operator/pkg/flink/internal/openapi"
)

// The fake builds its answers without package flink's types, so it can
// catch client mistakes only if its own answers are right. These tests
// check every answer the fake gives against the OpenAPI spec of the
// version it emulates, and its request-field tables against the specs'
// request schemas.

func loadSpec(t *testing.T, version string) *openapi.Spec {
	t.Helper()
	spec, err := openapi.Load(version)
	if err != nil {
		t.Fatalf("cannot load the Flink %s REST spec: %v", version, err)
	}
	return spec
}

// httpDo sends a raw request and returns status and body.
func httpDo(t *testing.T, method, url, contentType string, body []byte) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// specCheck validates one answer of the fake.
type specCheck struct {
	t    *testing.T
	spec *openapi.Spec
	base string
}

// call sends method url, expects the spec's documented status, validates
// the body against the response schema of specPath, and returns it.
func (sc specCheck) call(method, specPath, url string, body any) map[string]any {
	sc.t.Helper()
	var raw []byte
	ct := ""
	switch b := body.(type) {
	case nil:
	case multipartBody:
		raw, ct = b.body, b.contentType
	default:
		raw, _ = json.Marshal(b)
		ct = "application/json"
	}
	status, out := httpDo(sc.t, method, sc.base+url, ct, raw)
	codes, err := sc.spec.ResponseStatuses(method, specPath)
	if err != nil {
		sc.t.Fatal(err)
	}
	if strconv.Itoa(status) != codes[0] {
		sc.t.Fatalf("%s %s: status %d, spec documents %v; body %s", method, url, status, codes, out)
	}
	schema, err := sc.spec.ResponseSchema(method, specPath)
	if err != nil {
		sc.t.Fatal(err)
	}
	if errs := sc.spec.ValidateJSON(schema, out); len(errs) > 0 {
		sc.t.Errorf("Flink %s %s %s: answer violates the spec:\n  %s\nbody: %s", sc.spec.Version, method, url, strings.Join(errs, "\n  "), out)
	}
	var m map[string]any
	if err := json.Unmarshal(out, &m); err != nil {
		sc.t.Fatalf("%s %s: %v", method, url, err)
	}
	return m
}

// operation validates the "operation" of an async answer against the
// specific schema (the spec's oneOf alone would accept a savepoint answer
// spelt like a checkpoint answer).
func (sc specCheck) operation(answer map[string]any, schemaName string) map[string]any {
	sc.t.Helper()
	op, _ := answer["operation"].(map[string]any)
	if op == nil {
		sc.t.Fatalf("no operation in %v", answer)
	}
	schema, _ := sc.spec.Schema(schemaName)
	if errs := sc.spec.Validate(schema, op); len(errs) > 0 {
		sc.t.Errorf("operation violates %s: %v (%v)", schemaName, errs, op)
	}
	return op
}

// multipartBody is a ready multipart request body with its Content-Type.
type multipartBody struct {
	body        []byte
	contentType string
}

// jarUploadBody builds a /jars/upload body the way curl -F jarfile=@job.jar does.
func jarUploadBody() ([]byte, string) {
	var b bytes.Buffer
	mw := multipart.NewWriter(&b)
	w, _ := mw.CreateFormFile("jarfile", "job.jar")
	_, _ = w.Write([]byte("PK fake"))
	_ = mw.Close()
	return b.Bytes(), mw.FormDataContentType()
}

func TestFakeAnswersMatchSpec(t *testing.T) {
	for _, version := range openapi.Versions {
		t.Run(version, func(t *testing.T) {
			spec := loadSpec(t, version)
			v := flink.MustParseVersion(version)
			jm := fakejm.New(fakejm.Options{Version: v, SavepointDir: t.TempDir(), CheckpointDir: t.TempDir(), TaskManagers: 2})
			defer jm.Close()
			sc := specCheck{t: t, spec: spec, base: jm.URL()}
			runConformanceScenario(t, sc, jm)
		})
	}
}

func runConformanceScenario(t *testing.T, sc specCheck, jm *fakejm.Server) {
	a := jm.MustAddJob(fakejm.JobSpec{Parallelism: 2})
	failed := jm.MustAddJob(fakejm.JobSpec{})
	if err := jm.FailJob(failed, "java.lang.RuntimeException", "user code failed"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := jm.CompleteCheckpoint(a); err != nil {
		t.Fatal(err)
	}

	sc.call("GET", "/config", "/config", nil)
	sc.call("GET", "/overview", "/overview", nil)
	sc.call("GET", "/taskmanagers", "/taskmanagers", nil)
	sc.call("GET", "/jobs/overview", "/jobs/overview", nil)
	sc.call("GET", "/jobs/{jobid}", "/jobs/"+a, nil)
	sc.call("GET", "/jobs/{jobid}/exceptions", "/jobs/"+failed+"/exceptions", nil)
	sc.call("GET", "/jobs/{jobid}/checkpoints/config", "/jobs/"+a+"/checkpoints/config", nil)

	// Savepoint: trigger, poll (success), with an explicit and a default dir.
	trig := flink.NewID()
	sc.call("POST", "/jobs/{jobid}/savepoints", "/jobs/"+a+"/savepoints", map[string]any{"triggerId": trig, "formatType": "NATIVE"})
	spStatus := sc.call("GET", "/jobs/{jobid}/savepoints/{triggerid}", "/jobs/"+a+"/savepoints/"+trig, nil)
	location, _ := sc.operation(spStatus, "SavepointInfo")["location"].(string)
	if !strings.HasPrefix(location, "file:/") {
		t.Fatalf("savepoint location %q", location)
	}

	// Checkpoint: success, then a failing one, then a pending one.
	ctrig := flink.NewID()
	sc.call("POST", "/jobs/{jobid}/checkpoints", "/jobs/"+a+"/checkpoints", map[string]any{"triggerId": ctrig, "checkpointType": "FULL"})
	cStatus := sc.call("GET", "/jobs/{jobid}/checkpoints/{triggerid}", "/jobs/"+a+"/checkpoints/"+ctrig, nil)
	cid, _ := sc.operation(cStatus, "CheckpointInfo")["checkpointId"].(float64)
	jm.FailCheckpoints(a, "checkpoint declined")
	ftrig := flink.NewID()
	sc.call("POST", "/jobs/{jobid}/checkpoints", "/jobs/"+a+"/checkpoints", map[string]any{"triggerId": ftrig})
	fStatus := sc.call("GET", "/jobs/{jobid}/checkpoints/{triggerid}", "/jobs/"+a+"/checkpoints/"+ftrig, nil)
	if sc.operation(fStatus, "CheckpointInfo")["failureCause"] == nil {
		t.Errorf("failed checkpoint answer lacks failureCause: %v", fStatus)
	}
	jm.FailCheckpoints(a, "")
	jm.FailSavepoints(a, "savepoint declined")
	strig := flink.NewID()
	sc.call("POST", "/jobs/{jobid}/savepoints", "/jobs/"+a+"/savepoints", map[string]any{"triggerId": strig})
	sfStatus := sc.call("GET", "/jobs/{jobid}/savepoints/{triggerid}", "/jobs/"+a+"/savepoints/"+strig, nil)
	if sc.operation(sfStatus, "SavepointInfo")["failure-cause"] == nil {
		t.Errorf("failed savepoint answer lacks failure-cause: %v", sfStatus)
	}
	jm.FailSavepoints(a, "")
	jm.SetCompletion(100, 0)
	ptrig := flink.NewID()
	sc.call("POST", "/jobs/{jobid}/checkpoints", "/jobs/"+a+"/checkpoints", map[string]any{"triggerId": ptrig})
	pStatus := sc.call("GET", "/jobs/{jobid}/checkpoints/{triggerid}", "/jobs/"+a+"/checkpoints/"+ptrig, nil)
	if st, _ := pStatus["status"].(map[string]any); st["id"] != "IN_PROGRESS" {
		t.Errorf("pending checkpoint status %v", pStatus)
	}

	stats := sc.call("GET", "/jobs/{jobid}/checkpoints", "/jobs/"+a+"/checkpoints", nil)
	history, _ := stats["history"].([]any)
	classes := map[string]bool{}
	for _, h := range history {
		hm, _ := h.(map[string]any)
		cls, _ := hm["className"].(string)
		classes[cls] = true
		id := strconv.FormatInt(int64(hm["id"].(float64)), 10)
		sc.call("GET", "/jobs/{jobid}/checkpoints/details/{checkpointid}", "/jobs/"+a+"/checkpoints/details/"+id, nil)
	}
	if !classes["completed"] || !classes["failed"] || !classes["in_progress"] {
		t.Errorf("history should hold all three subtypes, got %v", classes)
	}
	jm.SetCompletion(0, 0)
	if cid == 0 {
		t.Error("checkpoint id 0")
	}

	// Stop-with-savepoint, then disposal (success and failure).
	stop := flink.NewID()
	sc.call("POST", "/jobs/{jobid}/stop", "/jobs/"+a+"/stop", map[string]any{"triggerId": stop, "drain": false})
	stopStatus := sc.call("GET", "/jobs/{jobid}/savepoints/{triggerid}", "/jobs/"+a+"/savepoints/"+stop, nil)
	stopLoc, _ := sc.operation(stopStatus, "SavepointInfo")["location"].(string)
	for i, wantFailure := range []bool{false, true} {
		d := sc.call("POST", "/savepoint-disposal", "/savepoint-disposal", map[string]any{"savepoint-path": stopLoc})
		dStatus := sc.call("GET", "/savepoint-disposal/{triggerid}", "/savepoint-disposal/"+d["request-id"].(string), nil)
		op := sc.operation(dStatus, "AsynchronousOperationInfo")
		if (op["failure-cause"] != nil) != wantFailure {
			t.Errorf("disposal %d: %v", i, dStatus)
		}
	}

	// Jar upload and run restoring from the first savepoint.
	jar, ct := jarUploadBody()
	up := sc.call("POST", "/jars/upload", "/jars/upload", multipartBody{jar, ct})
	filename, _ := up["filename"].(string)
	jarID := filename[strings.LastIndex(filename, "/")+1:]
	run := sc.call("POST", "/jars/{jarid}/run", "/jars/"+jarID+"/run", map[string]any{"savepointPath": location, "parallelism": 1})
	restoredJob, _ := run["jobid"].(string)
	restored := sc.call("GET", "/jobs/{jobid}/checkpoints", "/jobs/"+restoredJob+"/checkpoints", nil)
	latest, _ := restored["latest"].(map[string]any)
	if r, _ := latest["restored"].(map[string]any); r == nil || r["external_path"] != location || r["is_savepoint"] != true {
		t.Errorf("latest.restored = %v, want %s", latest["restored"], location)
	}
}

// requestClasses maps the fake's request classes to spec operations.
var requestClasses = map[string][2]string{
	"SavepointTriggerRequestBody":  {"POST", "/jobs/{jobid}/savepoints"},
	"StopWithSavepointRequestBody": {"POST", "/jobs/{jobid}/stop"},
	"CheckpointTriggerRequestBody": {"POST", "/jobs/{jobid}/checkpoints"},
	"SavepointDisposalRequest":     {"POST", "/savepoint-disposal"},
	"JarRunRequestBody":            {"POST", "/jars/{jarid}/run"},
}

func TestFakeRequestFieldsMatchSpec(t *testing.T) {
	for _, version := range openapi.Versions {
		spec := loadSpec(t, version)
		v := flink.MustParseVersion(version)
		for class, op := range requestClasses {
			schema, err := spec.RequestSchema(op[0], op[1])
			if err != nil {
				t.Fatal(err)
			}
			if name := openapi.RefName(schema); name != class {
				t.Errorf("%s %s %s: spec request class is %s, fake calls it %s", version, op[0], op[1], name, class)
			}
			want, err := spec.PropertyNames(schema)
			if err != nil {
				t.Fatal(err)
			}
			got := fakejm.RequestFields(class, v)
			sort.Strings(got)
			if strings.Join(got, ",") != strings.Join(want, ",") {
				t.Errorf("Flink %s %s: fake accepts %v, spec has %v", version, class, got, want)
			}
		}
	}
}
