package fakejm_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flinkops/flink-operator/pkg/flink"
	"github.com/flinkops/flink-operator/pkg/flink/fakejm"
)

// Behaviour of the fake that tests of the operator will lean on.

func getJSON(t *testing.T, url string) (int, map[string]any) {
	t.Helper()
	status, body := httpDo(t, "GET", url, "", nil)
	var m map[string]any
	_ = json.Unmarshal(body, &m)
	return status, m
}

func postJSON(t *testing.T, url, body string) (int, string) {
	t.Helper()
	status, out := httpDo(t, "POST", url, "application/json", []byte(body))
	return status, string(out)
}

func errorsOf(m map[string]any) string {
	errs, _ := m["errors"].([]any)
	var parts []string
	for _, e := range errs {
		parts = append(parts, fmt.Sprint(e))
	}
	return strings.Join(parts, " | ")
}

func TestRoutingPrefixAndUnknownURL(t *testing.T) {
	jm := fakejm.New(fakejm.Options{})
	defer jm.Close()
	if status, m := getJSON(t, jm.URL()+"/v1/config"); status != 200 || m["flink-version"] != "1.20.0" {
		t.Errorf("/v1/config: %d %v", status, m)
	}
	status, m := getJSON(t, jm.URL()+"/no/such/thing")
	if status != 404 || errorsOf(m) != "Not found: /no/such/thing" {
		t.Errorf("unknown URL: %d %v", status, m)
	}
	if reqs := jm.Requests(); len(reqs) != 2 || reqs[0].Route != fakejm.RouteConfig || reqs[1].Route != "" || reqs[0].Path != "/config" {
		t.Errorf("log = %+v", reqs)
	}
}

func TestRequestValidationErrors(t *testing.T) {
	jm := fakejm.New(fakejm.Options{Version: flink.V1_20, SavepointDir: t.TempDir()})
	defer jm.Close()
	job := jm.MustAddJob(fakejm.JobSpec{})
	url := jm.URL() + "/jobs/" + job + "/savepoints"
	for name, body := range map[string]string{
		"wrong type":       `{"cancel-job":"yes"}`,
		"bad enum":         `{"formatType":"BINARY"}`,
		"bad trigger id":   `{"triggerId":"abc"}`,
		"not an object":    `[1,2]`,
		"broken JSON":      `{"target-directory":`,
		"uppercase hex id": `{"triggerId":"0123456789ABCDEF0123456789ABCDEF"}`,
	} {
		status, text := postJSON(t, url, body)
		if status != 400 || !strings.Contains(text, "Request did not match expected format SavepointTriggerRequestBody.") {
			t.Errorf("%s: %d %s", name, status, text)
		}
	}
	// An empty body means all defaults, as in Flink.
	if status, text := postJSON(t, url, ""); status != 202 {
		t.Errorf("empty body: %d %s", status, text)
	}
	if status, _ := postJSON(t, jm.URL()+"/jobs/nope/savepoints", "{}"); status != 400 {
		t.Errorf("malformed job id: %d", status)
	}
	status, text := httpDo(t, "PATCH", jm.URL()+"/jobs/"+job+"?mode=stop", "", nil)
	if status != http.StatusPermanentRedirect || !strings.Contains(string(text), "has been removed") {
		t.Errorf("mode=stop: %d %s", status, text)
	}
}

func TestOldVersionsLackNewerEndpoints(t *testing.T) {
	jm := fakejm.New(fakejm.Options{Version: flink.V1_15})
	defer jm.Close()
	job := jm.MustAddJob(fakejm.JobSpec{})
	if status, _ := getJSON(t, jm.URL()+"/jobs/"+job+"/status"); status != 404 {
		t.Errorf("1.15 /status: %d, want 404 (added in 1.16)", status)
	}
	if status, _ := postJSON(t, jm.URL()+"/jobs/"+job+"/checkpoints", "{}"); status != 404 {
		t.Errorf("1.15 checkpoint trigger: %d, want 404 (added in 1.17)", status)
	}
	status, text := postJSON(t, jm.URL()+"/jobs/"+job+"/savepoints", `{"target-directory":"/x","flinkConfiguration":{}}`)
	if status != 400 {
		t.Errorf("unknown field on 1.15: %d %s", status, text)
	}
}

func TestJobLifecycleAndTaskCounts(t *testing.T) {
	clock := fakejm.NewManualClock(time.Time{})
	jm := fakejm.New(fakejm.Options{Clock: clock, JobStartDelay: 10 * time.Second})
	defer jm.Close()
	c, err := flink.New(flink.Config{BaseURL: jm.URL(), Version: flink.V1_20})
	if err != nil {
		t.Fatal(err)
	}
	up := uploadJar(t, jm)
	status, text := postJSON(t, jm.URL()+"/jars/"+up+"/run", `{"entryClass":"com.example.Main","parallelism":3}`)
	if status != 200 {
		t.Fatalf("run: %d %s", status, text)
	}
	var run struct{ JobID string }
	if err := json.Unmarshal([]byte(text), &run); err != nil || run.JobID == "" {
		t.Fatalf("run answer %s", text)
	}

	ov := jobsOverview(t, c)
	if ov[0].State != flink.JobCreated || ov[0].Name != "com.example.Main" || ov[0].Tasks["total"] != 6 || ov[0].Tasks["created"] != 6 {
		t.Fatalf("before the start delay: %+v", ov[0])
	}
	clock.Advance(10 * time.Second)
	ov = jobsOverview(t, c)
	if ov[0].State != flink.JobRunning || !ov[0].AllTasksRunning() || ov[0].EndTime != -1 {
		t.Fatalf("after the start delay: %+v", ov[0])
	}
	// A RUNNING job whose tasks are still deploying.
	if err := jm.SetTaskStates(run.JobID, map[flink.ExecutionState]int{flink.TaskRunning: 2, flink.TaskDeploying: 4}); err != nil {
		t.Fatal(err)
	}
	ov = jobsOverview(t, c)
	if ov[0].AllTasksRunning() || ov[0].Tasks["deploying"] != 4 {
		t.Errorf("task override: %+v", ov[0].Tasks)
	}
	clock.Advance(time.Second)
	if err := jm.FailJob(run.JobID, "java.lang.ArithmeticException", "/ by zero"); err != nil {
		t.Fatal(err)
	}
	det, err := c.Job(t.Context(), run.JobID)
	if err != nil {
		t.Fatal(err)
	}
	if det.State != flink.JobFailed || det.JobType != "STREAMING" || len(det.Vertices) != 2 ||
		det.Timestamps[flink.JobRunning] == 0 || det.Timestamps[flink.JobFailed] <= det.Timestamps[flink.JobRunning] {
		t.Errorf("details = %+v", det)
	}
	over, err := c.Overview(t.Context())
	if err != nil || over.JobsFailed != 1 || over.JobsRunning != 0 || over.TaskManagers != 1 {
		t.Errorf("overview = %+v, %v", over, err)
	}
}

func jobsOverview(t *testing.T, c *flink.Client) []flink.JobOverview {
	t.Helper()
	ov, err := c.JobsOverview(t.Context())
	if err != nil || len(ov) != 1 {
		t.Fatalf("jobs overview = %+v, %v", ov, err)
	}
	return ov
}

func uploadJar(t *testing.T, jm *fakejm.Server) string {
	t.Helper()
	status, body := httpDo(t, "POST", jm.URL()+"/jars/upload", "", nil)
	if status != 400 || !strings.Contains(string(body), "Exactly 1 file must be sent, received 0.") {
		t.Fatalf("upload without a file: %d %s", status, body)
	}
	b, ct := jarUploadBody()
	status, body = httpDo(t, "POST", jm.URL()+"/jars/upload", ct, b)
	if status != 200 {
		t.Fatalf("upload: %d %s", status, body)
	}
	var up struct{ Filename string }
	_ = json.Unmarshal(body, &up)
	return up.Filename[strings.LastIndex(up.Filename, "/")+1:]
}

func TestWebSubmitCanBeDisabled(t *testing.T) {
	jm := fakejm.New(fakejm.Options{DisableWebSubmit: true})
	defer jm.Close()
	b, ct := jarUploadBody()
	status, body := httpDo(t, "POST", jm.URL()+"/jars/upload", ct, b)
	if status != 404 {
		t.Errorf("upload without flink-runtime-web: %d %s", status, body)
	}
}

func TestFaultsMatchRoutePathAndTimes(t *testing.T) {
	jm := fakejm.New(fakejm.Options{})
	defer jm.Close()
	a, b := jm.MustAddJob(fakejm.JobSpec{}), jm.MustAddJob(fakejm.JobSpec{})
	jm.InjectFault(fakejm.Fault{Route: fakejm.RouteJob, Path: "/jobs/" + a, Status: 404, Times: 2})
	for i := 0; i < 2; i++ {
		if status, _ := getJSON(t, jm.URL()+"/jobs/"+a); status != 404 {
			t.Errorf("faulted call %d: %d", i, status)
		}
	}
	if status, _ := getJSON(t, jm.URL()+"/jobs/"+a); status != 200 {
		t.Errorf("after Times ran out: %d", status)
	}
	if status, _ := getJSON(t, jm.URL()+"/jobs/"+b); status != 200 {
		t.Errorf("other job must not be affected: %d", status)
	}
	remove := jm.InjectFault(fakejm.Fault{Latency: 150 * time.Millisecond})
	start := time.Now()
	getJSON(t, jm.URL()+"/overview")
	if d := time.Since(start); d < 150*time.Millisecond {
		t.Errorf("latency fault: answered after %s", d)
	}
	remove()
	jm.InjectFault(fakejm.Fault{Status: 503, Errors: []string{"custom"}})
	if status, m := getJSON(t, jm.URL()+"/config"); status != 503 || errorsOf(m) != "custom" {
		t.Errorf("503 fault: %d %v", status, m)
	}
	jm.ClearFaults()
	if status, _ := getJSON(t, jm.URL()+"/config"); status != 200 {
		t.Errorf("after ClearFaults: %d", status)
	}
}

func TestConcurrentTriggersWithSameIDStartOneOperation(t *testing.T) {
	jm := fakejm.New(fakejm.Options{SavepointDir: t.TempDir(), CompletionPolls: 3})
	defer jm.Close()
	job := jm.MustAddJob(fakejm.JobSpec{})
	trig := flink.NewID()
	var wg sync.WaitGroup
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			status, body := postJSON(t, jm.URL()+"/jobs/"+job+"/savepoints", `{"triggerId":"`+trig+`"}`)
			if status != 202 || !strings.Contains(body, trig) {
				t.Errorf("trigger: %d %s", status, body)
			}
		}()
	}
	wg.Wait()
	if n := jm.StartedOperations(fakejm.OpSavepoint); n != 1 {
		t.Errorf("started %d savepoints, want 1", n)
	}
	if n := len(jm.RequestsTo(fakejm.RouteSavepointTrigger)); n != 20 {
		t.Errorf("logged %d triggers", n)
	}
}

func TestRestartRecoversJobsFromLatestSnapshot(t *testing.T) {
	jm := fakejm.New(fakejm.Options{Version: flink.V1_19, SavepointDir: t.TempDir()})
	defer jm.Close()
	c, _ := flink.New(flink.Config{BaseURL: jm.URL(), Version: flink.V1_19})
	job := jm.MustAddJob(fakejm.JobSpec{})
	id, path, err := jm.CompleteCheckpoint(job)
	if err != nil {
		t.Fatal(err)
	}
	jm.Restart()
	stats, err := c.Checkpoints(t.Context(), job)
	if err != nil {
		t.Fatal(err)
	}
	r := stats.Latest.Restored
	if r == nil || r.ID != id || r.ExternalPath != path || r.IsSavepoint || stats.Latest.Completed != nil || len(stats.History) != 0 {
		t.Fatalf("after restart: restored=%+v stats=%+v", r, stats)
	}
	// The checkpoint counter continues after the restored id.
	next, _, err := jm.CompleteCheckpoint(job)
	if err != nil || next != id+1 {
		t.Errorf("next checkpoint id %d, want %d (%v)", next, id+1, err)
	}
}

// With a statistics cache, both statistics endpoints answer from the copy
// taken by the first read until it is ttl old, as Flink's
// rest.cache.checkpoint-statistics.timeout: a checkpoint completed since is
// missing from them (404 for its details) or still IN_PROGRESS.
func TestCheckpointStatsCache(t *testing.T) {
	clock := fakejm.NewManualClock(time.Time{})
	jm := fakejm.New(fakejm.Options{Clock: clock})
	defer jm.Close()
	c, _ := flink.New(flink.Config{BaseURL: jm.URL(), Version: flink.V1_20})
	job := jm.MustAddJob(fakejm.JobSpec{})
	jm.SetCheckpointStatsCache(3 * time.Second)
	if stats, err := c.Checkpoints(t.Context(), job); err != nil || len(stats.History) != 0 {
		t.Fatalf("before any checkpoint: %+v, %v", stats, err)
	}
	id, path, err := jm.CompleteCheckpoint(job)
	if err != nil {
		t.Fatal(err)
	}
	clock.Advance(2 * time.Second)
	if stats, err := c.Checkpoints(t.Context(), job); err != nil || len(stats.History) != 0 || stats.Latest.Completed != nil {
		t.Errorf("within the cache timeout: %+v, %v; want the cached copy", stats, err)
	}
	if _, err := c.CheckpointDetails(t.Context(), job, id); !flink.IsNotFound(err) {
		t.Errorf("details within the cache timeout: %v, want 404", err)
	}
	clock.Advance(time.Second)
	if d, err := c.CheckpointDetails(t.Context(), job, id); err != nil || d.ExternalPath != path {
		t.Errorf("details after the cache timeout: %+v, %v; want path %s", d, err, path)
	}
	jm.SetCheckpointStatsCache(0)
	next, _, err := jm.CompleteCheckpoint(job)
	if err != nil {
		t.Fatal(err)
	}
	if stats, err := c.Checkpoints(t.Context(), job); err != nil || len(stats.History) != 2 || stats.History[0].ID != next {
		t.Errorf("without a cache: %+v, %v; want the live statistics", stats, err)
	}
}

func TestRequestLogIsBounded(t *testing.T) {
	jm := fakejm.New(fakejm.Options{MaxRequestLog: 3})
	defer jm.Close()
	for i := 0; i < 5; i++ {
		getJSON(t, jm.URL()+"/config?n="+fmt.Sprint(i))
	}
	log := jm.Requests()
	if len(log) != 3 || log[0].Query != "n=2" || log[2].Query != "n=4" || log[2].Status != 200 {
		t.Errorf("log = %+v", log)
	}
	jm.ResetRequests()
	if len(jm.Requests()) != 0 {
		t.Error("ResetRequests")
	}
}

func TestAddJobValidation(t *testing.T) {
	jm := fakejm.New(fakejm.Options{})
	defer jm.Close()
	id := jm.MustAddJob(fakejm.JobSpec{ID: "0123456789abcdef0123456789abcdef", State: flink.JobCreated})
	if _, err := jm.AddJob(fakejm.JobSpec{ID: id}); err == nil {
		t.Error("duplicate id accepted")
	}
	if _, err := jm.AddJob(fakejm.JobSpec{ID: "job-1"}); err == nil {
		t.Error("malformed id accepted")
	}
	if err := jm.SetJobState(id, flink.JobRunning); err != nil {
		t.Fatal(err)
	}
	if st, ok := jm.JobState(id); !ok || st != flink.JobRunning {
		t.Errorf("state %s", st)
	}
	if !jm.RemoveJob(id) || jm.RemoveJob(id) || len(jm.JobIDs()) != 0 {
		t.Error("RemoveJob")
	}
	if err := jm.SetJobState(id, flink.JobRunning); err == nil {
		t.Error("SetJobState on a removed job")
	}
}

func TestCancelWithSavepointAndRestoreFromSyntheticCheckpoint(t *testing.T) {
	jm := fakejm.New(fakejm.Options{Version: flink.V1_20})
	defer jm.Close()
	c, _ := flink.New(flink.Config{BaseURL: jm.URL(), Version: flink.V1_20})
	ctx := t.Context()
	job := jm.MustAddJob(fakejm.JobSpec{})

	// A checkpoint without CheckpointDir has a synthetic, unwritten path
	// that the fake still accepts as a restore source.
	id, path, err := jm.CompleteCheckpoint(job)
	if err != nil || !strings.HasPrefix(path, "file:/fakejm-checkpoints/"+job+"/chk-") {
		t.Fatalf("checkpoint %d %q %v", id, path, err)
	}
	trig, err := c.TriggerSavepoint(ctx, job, flink.SavepointRequest{TargetDirectory: "file://" + t.TempDir(), CancelJob: true})
	if err != nil {
		t.Fatal(err)
	}
	if r, err := c.SavepointStatus(ctx, job, trig); err != nil || !r.Succeeded() {
		t.Fatalf("cancel-with-savepoint: %+v %v", r, err)
	}
	if st, _ := jm.JobState(job); st != flink.JobCanceled {
		t.Fatalf("cancel-job=true left the job %s, want CANCELED", st)
	}
	ops := jm.Operations()
	if len(ops) != 1 || !ops[0].CancelJob {
		t.Errorf("operations %+v", ops)
	}

	restoredID, err := jm.AddJob(fakejm.JobSpec{RestoredFrom: path})
	if err != nil {
		t.Fatal(err)
	}
	stats, err := c.Checkpoints(ctx, restoredID)
	if err != nil || stats.Latest.Restored == nil || stats.Latest.Restored.ID != id || stats.Latest.Restored.IsSavepoint {
		t.Fatalf("restored = %+v %v", stats, err)
	}
	// S3 paths cannot be checked locally; the fake trusts them.
	s3, err := jm.AddJob(fakejm.JobSpec{RestoredFrom: "s3://bucket/cp/" + job + "/chk-42"})
	if err != nil {
		t.Fatal(err)
	}
	if st, _ := jm.JobState(s3); st != flink.JobRunning {
		t.Errorf("job restored from s3 = %s", st)
	}
	stats, _ = c.Checkpoints(ctx, s3)
	if stats.Latest.Restored == nil || stats.Latest.Restored.ID != 42 {
		t.Errorf("s3 restore = %+v", stats.Latest.Restored)
	}
}
