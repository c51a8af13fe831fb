package flink_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/flinkops/flink-operator/pkg/flink"
	"github.com/flinkops/flink-operator/pkg/flink/fakejm"
)

// Session-job submission and version gating against the fake, which
// rejects unknown request fields on 1.19 and older like real Flink.

func uploadTestJar(t *testing.T, c *flink.Client) string {
	t.Helper()
	content := "PK\x03\x04fake"
	up, err := c.UploadJar(context.Background(), "job.jar", strings.NewReader(content), int64(len(content)))
	if err != nil {
		t.Fatalf("upload: %v", err)
	}
	return up.ID()
}

func TestJarRunVersionGating118(t *testing.T) {
	jm, c := startFake(t, fakejm.Options{Version: flink.V1_18})
	ctx := context.Background()

	// A savepoint to restore from.
	src := jm.MustAddJob(fakejm.JobSpec{})
	trig, err := c.StopWithSavepoint(ctx, src, flink.StopRequest{TargetDirectory: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	sp := waitSavepoint(t, c, src, trig)
	if !sp.Succeeded() {
		t.Fatal(sp.Err())
	}

	jarID := uploadTestJar(t, c)
	if jars := jm.Jars(); len(jars) != 1 || jars[0].FieldName != "jarfile" || jars[0].ID != jarID {
		t.Fatalf("uploaded jars = %+v", jars)
	}
	jobID := flink.NewID()
	req := flink.JarRunRequest{
		EntryClass: "com.example.Job", ProgramArgs: []string{"--x"}, Parallelism: 2, JobID: jobID,
		SavepointPath: sp.Value, ClaimMode: flink.ClaimModeNoClaim, AllowNonRestoredState: true,
		FlinkConfiguration: map[string]string{"pipeline.name": "x"},
	}
	got, err := c.RunJar(ctx, jarID, req)
	if err != nil {
		t.Fatalf("run on 1.18 must succeed with only 1.18 fields: %v", err)
	}
	if got != jobID {
		t.Fatalf("job id %s, want %s", got, jobID)
	}
	runs := jm.RequestsTo(fakejm.RouteJarRun)
	body := string(runs[len(runs)-1].Body)
	if !strings.Contains(body, `"restoreMode":"NO_CLAIM"`) || strings.Contains(body, "claimMode") {
		t.Errorf("1.18 run body %s: want restoreMode and no claimMode", body)
	}

	stats, err := c.Checkpoints(ctx, jobID)
	if err != nil {
		t.Fatal(err)
	}
	r := stats.Latest.Restored
	if r == nil || r.ExternalPath != sp.Value || !r.IsSavepoint || r.ID == 0 {
		t.Fatalf("latest.restored = %+v, want the savepoint %s", r, sp.Value)
	}
	if snap, ok := stats.LatestSnapshot(); !ok || snap.ExternalPath != sp.Value {
		t.Errorf("LatestSnapshot = %+v", snap)
	}

	// Same job id again: Flink's DuplicateJobSubmissionException.
	_, err = c.RunJar(ctx, jarID, req)
	if !flink.IsDuplicateJob(err) || !flink.IsBadRequest(err) {
		t.Fatalf("second run: err = %v, want duplicate job (400)", err)
	}

	// A client configured for the wrong version sends claimMode, which a
	// 1.18 JobManager rejects: this is what version-awareness prevents.
	wrong := newClient(t, jm.URL(), flink.V1_20)
	req.JobID = flink.NewID()
	_, err = wrong.RunJar(ctx, jarID, req)
	if !flink.IsBadRequest(err) {
		t.Fatalf("claimMode on 1.18: err = %v, want 400", err)
	}
	if fe, _ := flink.AsError(err); !fe.Contains("Request did not match expected format JarRunRequestBody") || !fe.Contains(`"claimMode"`) {
		t.Errorf("400 text: %v", fe.Errors)
	}

	if err := c.DeleteJar(ctx, jarID); err != nil {
		t.Fatal(err)
	}
	if err := c.DeleteJar(ctx, jarID); !flink.IsBadRequest(err) {
		t.Errorf("deleting twice: err = %v", err)
	}
	if _, err := c.RunJar(ctx, jarID, flink.JarRunRequest{}); !flink.IsBadRequest(err) {
		t.Errorf("run of deleted jar: err = %v", err)
	}
}

func TestJarRunFromMissingSavepointFailsJob(t *testing.T) {
	jm, c := startFake(t, fakejm.Options{Version: flink.V2_0})
	ctx := context.Background()
	jarID := uploadTestJar(t, c)
	jobID, err := c.RunJar(ctx, jarID, flink.JarRunRequest{SavepointPath: "file:///nonexistent/savepoint-000000-000000000000", ClaimMode: flink.ClaimModeClaim})
	if err != nil {
		t.Fatalf("submission itself succeeds in Flink: %v", err)
	}
	if st, _ := jm.JobState(jobID); st != flink.JobFailed {
		t.Fatalf("state = %s, want FAILED", st)
	}
	ex, err := c.JobExceptions(ctx, jobID, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(ex.History.Entries) != 1 || !strings.Contains(ex.History.Entries[0].Stacktrace, "FileNotFoundException") {
		t.Errorf("exceptions = %+v", ex.History)
	}
	if ex.RootException != "" {
		t.Errorf("2.0 has no root-exception field, got %q", ex.RootException)
	}
}

func TestFakeValidatesRequestFieldsByVersion(t *testing.T) {
	post := func(t *testing.T, url, body string) (int, string) {
		t.Helper()
		resp, err := http.Post(url, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var b bytes.Buffer
		_, _ = b.ReadFrom(resp.Body)
		return resp.StatusCode, b.String()
	}
	for _, tc := range []struct {
		v    flink.Version
		want int
	}{{flink.V1_18, 400}, {flink.V1_19, 400}, {flink.V1_20, 202}, {flink.V2_0, 202}} {
		t.Run(tc.v.String(), func(t *testing.T) {
			jm, _ := startFake(t, fakejm.Options{Version: tc.v})
			job := jm.MustAddJob(fakejm.JobSpec{})
			// targetDirectory is the /stop spelling; /savepoints wants target-directory.
			body, _ := json.Marshal(map[string]any{"targetDirectory": t.TempDir()})
			status, text := post(t, jm.URL()+"/jobs/"+job+"/savepoints", string(body))
			if tc.want == 400 {
				if status != 400 || !strings.Contains(text, "SavepointTriggerRequestBody") {
					t.Fatalf("status %d body %s, want 400 for an unknown field", status, text)
				}
				return
			}
			// 1.20+ ignores the unknown field, so the missing target
			// directory is what fails.
			if status != 400 || !strings.Contains(text, "target-directory] must be provided") {
				t.Fatalf("status %d body %s, want 400 about the missing target-directory", status, text)
			}
			status, text = post(t, jm.URL()+"/v1/jobs/"+job+"/savepoints", `{"target-directory":"`+t.TempDir()+`","unknown":1}`)
			if status != tc.want {
				t.Fatalf("status %d body %s, want %d", status, text, tc.want)
			}
		})
	}
}

func TestFlinkConfigurationNeedsFlink117(t *testing.T) {
	srv := newCannedServer(t, 200, cannedAnswer)
	c := newClient(t, srv.URL, flink.V1_16)
	_, err := c.RunJar(context.Background(), "a_job.jar", flink.JarRunRequest{FlinkConfiguration: map[string]string{"a": "b"}})
	if !flink.IsUnsupported(err) {
		t.Fatalf("err = %v, want unsupported", err)
	}
	if _, err := c.RunJar(context.Background(), "a_job.jar", flink.JarRunRequest{EntryClass: "x"}); err != nil {
		t.Fatalf("plain run on 1.16: %v", err)
	}
}
