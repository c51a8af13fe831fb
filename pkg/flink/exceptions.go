package flink

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
)

// JobExceptions is GET /jobs/:jobid/exceptions (JobExceptionsInfoWithHistory).
// The operator turns these into Kubernetes events.
type JobExceptions struct {
	History JobExceptionHistory `json:"exceptionHistory"`

	// Deprecated top-level fields, present up to 1.20 and removed in 2.0.
	// Prefer History; they are kept for reading older JobManagers.
	RootException string `json:"root-exception"`
	Timestamp     int64  `json:"timestamp"`
	Truncated     bool   `json:"truncated"`
}

// JobExceptionHistory is the bounded list of root failures, newest first.
type JobExceptionHistory struct {
	Entries   []RootException `json:"entries"`
	Truncated bool            `json:"truncated"`
}

// ExceptionInfo is one failure (Flink's ExceptionInfo).
type ExceptionInfo struct {
	ExceptionName string            `json:"exceptionName"`
	Stacktrace    string            `json:"stacktrace"`
	Timestamp     int64             `json:"timestamp"`
	TaskName      string            `json:"taskName"`
	Endpoint      string            `json:"endpoint"` // 1.19+
	Location      string            `json:"location"` // up to 1.20
	TaskManagerID string            `json:"taskManagerId"`
	FailureLabels map[string]string `json:"failureLabels"` // 1.18+
}

// RootException is a root failure with the failures that happened
// concurrently (Flink's RootExceptionInfo).
type RootException struct {
	ExceptionInfo
	ConcurrentExceptions []ExceptionInfo `json:"concurrentExceptions"`
}

// JobExceptions fetches GET /jobs/:jobid/exceptions. maxExceptions > 0
// limits the history length (query parameter maxExceptions).
func (c *Client) JobExceptions(ctx context.Context, jobID string, maxExceptions int) (*JobExceptions, error) {
	p, err := jobPath(http.MethodGet, jobID, "/exceptions")
	if err != nil {
		return nil, err
	}
	var q url.Values
	if maxExceptions > 0 {
		q = url.Values{"maxExceptions": {strconv.Itoa(maxExceptions)}}
	}
	var out JobExceptions
	if err := c.getJSON(ctx, p, q, &out); err != nil {
		return nil, err
	}
	return &out, nil
}
