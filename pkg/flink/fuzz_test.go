package flink

import (
	"bytes"
	"testing"
)

// Fuzz targets for everything the client decodes from the network. A
// JobManager (or whatever answers in its place: a proxy, a half-dead pod)
// can send anything; decoding must never panic and the async result
// invariants must hold for every input.
//
// Run bounded, e.g. in CI:
//
//	go test -run='^$' -fuzz='^FuzzDecodeResponse$' -fuzztime=10s ./pkg/flink
//	go test -run='^$' -fuzz='^FuzzDecodeErrorBody$' -fuzztime=10s ./pkg/flink

var fuzzSeeds = []string{
	`{"status":{"id":"IN_PROGRESS"},"operation":null}`,
	`{"status":{"id":"COMPLETED"},"operation":{"location":"file:/sp/savepoint-012345-0123456789ab"}}`,
	`{"status":{"id":"COMPLETED"},"operation":{"failure-cause":{"class":"java.io.IOException","stack-trace":"java.io.IOException: boom\n\tat x","serialized-throwable":"rO0AB"}}}`,
	`{"status":{"id":"COMPLETED"},"operation":{"checkpointId":42}}`,
	`{"status":{"id":"COMPLETED"},"operation":{"failureCause":{"class":"x","stack-trace":"y"}}}`,
	`{"status":{"id":"COMPLETED"},"operation":{}}`,
	`{"status":{"id":"COMPLETED"}}`,
	`{"status":{"id":"WEIRD"},"operation":"x"}`,
	`{"request-id":"0123456789abcdef0123456789abcdef"}`,
	`{"jobs":[{"jid":"0123456789abcdef0123456789abcdef","name":"j","state":"RUNNING","start-time":1,"end-time":-1,"duration":5,"last-modification":1,"tasks":{"total":2,"running":2}}]}`,
	`{"counts":{"restored":1,"total":3,"in_progress":1,"completed":1,"failed":1},"latest":{"completed":{"className":"completed","id":2,"external_path":"file:/c/chk-2"},"savepoint":null,"failed":null,"restored":{"id":1,"restore_timestamp":5,"is_savepoint":true,"external_path":"file:/sp"}},"history":[{"className":"in_progress","id":3,"status":"IN_PROGRESS"}]}`,
	`{"filename":"/tmp/flink-web-x/flink-web-upload/abc_job.jar","status":"success"}`,
	`{"exceptionHistory":{"entries":[{"exceptionName":"x","stacktrace":"y","concurrentExceptions":[{}]}],"truncated":false},"root-exception":"r"}`,
	`{"taskmanagers":[{"id":"x","totalResource":{"cpuCores":1.5,"extendedResources":{"gpu":1}}}]}`,
	`{"errors":["org.apache.flink.runtime.rest.handler.RestHandlerException: Job x not found\n\tat a"]}`,
	`{"errors":["Internal server error.","<Exception on server side:\njava.lang.X\n\nEnd of exception on server side>"]}`,
	`<html>502 Bad Gateway</html>`,
	``, `null`, `[]`, `{"jobs":null}`, `{"jobs":[null]}`, `"str"`, `1e999`,
}

func FuzzDecodeResponse(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		decodeAll(t, data)
	})
}

func FuzzDecodeErrorBody(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s), 503)
	}
	f.Fuzz(func(t *testing.T, data []byte, status int) {
		e := &Error{Kind: kindForStatus(status), StatusCode: status, Method: "GET", Path: "/x", Errors: parseErrorBody(data)}
		msg := e.Error()
		if msg == "" {
			t.Fatal("empty error message")
		}
		_ = e.Summary()
		_ = e.Contains("Exception")
		if len(bytes.TrimSpace(data)) > 0 && len(e.Errors) == 0 {
			t.Fatalf("non-empty body %q produced no error text", data)
		}
	})
}

// decodeAll runs every response decoder of the client on data.
func decodeAll(t *testing.T, data []byte) {
	var ar asyncResponse
	if decodeJSON(bytes.NewReader(data), &ar) == nil {
		if r, err := ar.toSavepointResult(); err == nil {
			checkAsync(t, r.State, r.Failure, r.Value != "")
			if r.Failure != nil {
				_ = r.Failure.Message()
				_ = r.Err().Error()
			}
		}
		if r, err := ar.toCheckpointResult(); err == nil {
			checkAsync(t, r.State, r.Failure, true)
		}
		if r, err := ar.toDisposalResult(); err == nil {
			checkAsync(t, r.State, r.Failure, true)
		}
	}
	var tr triggerResponse
	_ = decodeJSON(bytes.NewReader(data), &tr)

	var jobs struct {
		Jobs []JobOverview `json:"jobs"`
	}
	if decodeJSON(bytes.NewReader(data), &jobs) == nil {
		for _, j := range jobs.Jobs {
			_ = j.AllTasksRunning()
			_ = j.State.IsTerminal()
		}
	}
	var stats CheckpointingStatistics
	if decodeJSON(bytes.NewReader(data), &stats) == nil {
		if snap, ok := stats.LatestSnapshot(); ok && snap.ExternalPath == "" {
			t.Fatalf("LatestSnapshot returned a snapshot without a path: %+v", snap)
		}
		_, _ = stats.InProgress()
	}
	var up JarUpload
	if decodeJSON(bytes.NewReader(data), &up) == nil {
		_ = up.ID()
	}
	var (
		cfg  DashboardConfig
		ov   ClusterOverview
		jd   JobDetails
		det  CheckpointStatistics
		ccfg CheckpointConfig
		exc  JobExceptions
		tms  struct {
			TaskManagers []TaskManager `json:"taskmanagers"`
		}
		run struct {
			JobID string `json:"jobid"`
		}
	)
	for _, out := range []any{&cfg, &ov, &jd, &det, &ccfg, &exc, &tms, &run} {
		_ = decodeJSON(bytes.NewReader(data), out)
	}
}

// checkAsync asserts the AsyncResult invariants callers rely on.
func checkAsync(t *testing.T, st OperationState, failure *FailureCause, hasValue bool) {
	t.Helper()
	switch st {
	case OperationPending:
	case OperationSucceeded:
		if !hasValue || failure != nil {
			t.Fatalf("succeeded without a value or with a failure")
		}
	case OperationFailed:
		if failure == nil {
			t.Fatalf("failed without a cause")
		}
	default:
		t.Fatalf("unknown state %q", st)
	}
}
