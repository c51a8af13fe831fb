package flink

import (
	"encoding/json"
	"strings"
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

// TestFailureCauseRootCause pins that the innermost cause reaches the
// message: Flink's answer for a savepoint to an unwritable directory names
// the directory only in the last "Caused by:".
func TestFailureCauseRootCause(t *testing.T) {
	trace := "java.util.concurrent.CompletionException: org.apache.flink.runtime.checkpoint.CheckpointException: An Exception occurred while triggering the checkpoint. IO-problem detected.\n" +
		"\tat java.base/java.util.concurrent.CompletableFuture.encodeThrowable(CompletableFuture.java:332)\n" +
		"Caused by: org.apache.flink.runtime.checkpoint.CheckpointException: An Exception occurred while triggering the checkpoint. IO-problem detected.\n" +
		"\tat org.apache.flink.runtime.checkpoint.CheckpointCoordinator.lambda$startTriggeringCheckpoint$7(CheckpointCoordinator.java:643)\n" +
		"\t... 20 more\n" +
		"\tSuppressed: java.lang.RuntimeException: not the root\n" +
		"\t\tat x\n" +
		"Caused by: java.io.IOException: Failed to create savepoint directory at file:/tmp/ro/savepoints\n" +
		"  second line of the message\n" +
		"\tat org.apache.flink.runtime.state.filesystem.AbstractFsCheckpointStorageAccess.initializeLocationForSavepoint(AbstractFsCheckpointStorageAccess.java:165)\n" +
		"\t... 27 more\n" +
		"Caused by: java.nio.file.FileAlreadyExistsException: /tmp/ro\n" +
		"\tat sun.nio.fs.UnixException.translateToIOException(UnixException.java:94)\n" +
		"\t... 30 more\n"
	got := FailureCause{Class: "java.util.concurrent.CompletionException", StackTrace: trace}.Message()
	want := "java.util.concurrent.CompletionException: org.apache.flink.runtime.checkpoint.CheckpointException: An Exception occurred while triggering the checkpoint. IO-problem detected." +
		"; caused by: java.io.IOException: Failed to create savepoint directory at file:/tmp/ro/savepoints second line of the message" +
		"; caused by: java.nio.file.FileAlreadyExistsException: /tmp/ro"
	if got != want {
		t.Errorf("Message() =\n%q\nwant\n%q", got, want)
	}
	// A cause the first line already names is not repeated.
	if got := (FailureCause{StackTrace: "E: x: boom\n\tat a\nCaused by: x: boom\n\tat b"}).Message(); got != "E: x: boom" {
		t.Errorf("Message() = %q", got)
	}
	// Bounded, and the root cause survives the bound.
	long := FailureCause{StackTrace: "E: " + strings.Repeat("a", 5000) + "\nCaused by: java.io.IOException: the real reason\n\tat x"}.Message()
	if len(long) > maxMessageLen || !strings.HasSuffix(long, "; caused by: java.io.IOException: the real reason") || !strings.HasPrefix(long, "E: aaa") {
		t.Errorf("long message (%d bytes) = %q", len(long), long[max(0, len(long)-80):])
	}
}
