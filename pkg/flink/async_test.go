package flink

import (
	"encoding/json"
	"testing"
)

// Interpretation of asynchronous-operation answers, including the odd
// shapes a JobManager may produce.

func parseAsync(t *testing.T, s string) asyncResponse {
	t.Helper()
	var ar asyncResponse
	if err := json.Unmarshal([]byte(s), &ar); err != nil {
		t.Fatal(err)
	}
	return ar
}

func TestSavepointResultInterpretation(t *testing.T) {
	cases := []struct {
		body  string
		state OperationState
		value string
	}{
		{`{"status":{"id":"IN_PROGRESS"},"operation":null}`, OperationPending, ""},
		{`{"status":{"id":"IN_PROGRESS"}}`, OperationPending, ""},
		{`{"status":{"id":"COMPLETED"},"operation":{"location":"file:/sp/a"}}`, OperationSucceeded, "file:/sp/a"},
		{`{"status":{"id":"COMPLETED"},"operation":{"failure-cause":{"class":"E","stack-trace":"E: x"}}}`, OperationFailed, ""},
		// Both present (never sent by Flink): the failure wins.
		{`{"status":{"id":"COMPLETED"},"operation":{"location":"l","failure-cause":{"class":"E"}}}`, OperationFailed, ""},
		// Completed with nothing usable is a failure, not a success without a path.
		{`{"status":{"id":"COMPLETED"},"operation":null}`, OperationFailed, ""},
		{`{"status":{"id":"COMPLETED"},"operation":{}}`, OperationFailed, ""},
	}
	for _, c := range cases {
		r, err := parseAsync(t, c.body).toSavepointResult()
		if err != nil || r.State != c.state || r.Value != c.value {
			t.Errorf("%s: got %+v, %v; want %s %q", c.body, r, err, c.state, c.value)
		}
		if r.Failed() && (r.Failure == nil || r.Err() == nil) {
			t.Errorf("%s: failed without cause", c.body)
		}
	}
	if _, err := parseAsync(t, `{"status":{"id":"QUEUED"}}`).toSavepointResult(); err == nil {
		t.Error("unknown status must be an error")
	}
	if _, err := parseAsync(t, `{"status":{"id":"COMPLETED"},"operation":"oops"}`).toSavepointResult(); err == nil {
		t.Error("non-object operation must be an error")
	}
}

func TestCheckpointAndDisposalInterpretation(t *testing.T) {
	r, err := parseAsync(t, `{"status":{"id":"COMPLETED"},"operation":{"checkpointId":0}}`).toCheckpointResult()
	if err != nil || !r.Succeeded() || r.Value != 0 {
		t.Errorf("checkpoint id 0 is a valid id: %+v %v", r, err)
	}
	r, _ = parseAsync(t, `{"status":{"id":"COMPLETED"},"operation":{"failure-cause":{"class":"E"}}}`).toCheckpointResult()
	if !r.Failed() || r.Failure.Class != "flink-client" {
		t.Errorf("savepoint-style failure key must not be read for checkpoints: %+v", r)
	}
	d, _ := parseAsync(t, `{"status":{"id":"COMPLETED"},"operation":{}}`).toDisposalResult()
	if !d.Succeeded() {
		t.Errorf("disposal {} = %+v", d)
	}
	d, _ = parseAsync(t, `{"status":{"id":"COMPLETED"},"operation":{"failure-cause":{"stack-trace":"java.io.FileNotFoundException: gone\n\tat x"}}}`).toDisposalResult()
	if !d.Failed() || d.Failure.Message() != "java.io.FileNotFoundException: gone" {
		t.Errorf("disposal failure = %+v", d)
	}
}

func TestFailureCauseMessage(t *testing.T) {
	for want, fc := range map[string]FailureCause{
		"E: boom": {Class: "E", StackTrace: "E: boom\n\tat x"},
		"E":       {Class: "E"},
		"unknown failure (only a serialized Java exception was returned)": {SerializedThrowable: "rO0"},
		"unknown failure (no cause returned)":                             {},
	} {
		if got := fc.Message(); got != want {
			t.Errorf("Message() = %q, want %q", got, want)
		}
	}
}

func TestKindForStatus(t *testing.T) {
	for status, want := range map[int]Kind{
		400: KindBadRequest, 404: KindNotFound, 409: KindConflict, 408: KindUnavailable, 429: KindUnavailable,
		500: KindServerError, 501: KindServerError, 502: KindUnavailable, 503: KindUnavailable, 504: KindUnavailable,
		308: KindUnexpected, 401: KindUnexpected,
	} {
		if got := kindForStatus(status); got != want {
			t.Errorf("kindForStatus(%d) = %s, want %s", status, got, want)
		}
	}
}

func TestErrorSummaryAndParse(t *testing.T) {
	e := &Error{Kind: KindServerError, StatusCode: 500, Method: "GET", Path: "/jobs/x",
		Errors: parseErrorBody([]byte(`{"errors":["Internal server error.","<Exception on server side:\njava.lang.IllegalStateException: nope\n\tat a\n\nEnd of exception on server side>"]}`))}
	if e.Summary() != "Internal server error.; java.lang.IllegalStateException: nope" || !e.Contains("IllegalStateException") {
		t.Errorf("summary %q", e.Summary())
	}
	if got := parseErrorBody([]byte("<html>bad gateway</html>")); len(got) != 1 || got[0] != "<html>bad gateway</html>" {
		t.Errorf("non-JSON body = %q", got)
	}
	if got := parseErrorBody(nil); got != nil {
		t.Errorf("empty body = %q", got)
	}
}
