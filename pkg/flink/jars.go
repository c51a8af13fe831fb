package flink

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"path"
	"strings"
)

// Session-job submission: upload a jar, run it, delete it. These endpoints
// exist only when flink-runtime-web is on the JobManager classpath; without
// it Flink answers 404.

// JarUpload is the answer of POST /jars/upload.
type JarUpload struct {
	// Filename is the server-side path, e.g.
	// "/tmp/flink-web-…/flink-web-upload/<uuid>_job.jar".
	Filename string `json:"filename"`
	Status   string `json:"status"` // "success"
}

// ID is the jar id used by RunJar and DeleteJar: the last path element of
// Filename, exactly as the Java operator derives it.
func (j JarUpload) ID() string { return path.Base(j.Filename) }

// JarRunRequest runs an uploaded jar (POST /jars/:jarid/run). Zero values
// are not sent, so the cluster configuration decides.
type JarRunRequest struct {
	EntryClass  string
	ProgramArgs []string // sent as programArgsList
	// Parallelism is sent only when > 0.
	Parallelism int
	// JobID fixes the job id, which makes a retried submission detectable
	// (a second run gives IsDuplicateJob). Empty lets Flink choose.
	JobID                 string
	AllowNonRestoredState bool
	SavepointPath         string
	// ClaimMode is sent as claimMode on 1.20+ and as restoreMode before.
	ClaimMode ClaimMode
	// FlinkConfiguration needs Flink 1.17+; the call fails with
	// KindUnsupported on older versions rather than silently dropping it.
	FlinkConfiguration map[string]string
}

// jarRunBody is JarRunRequestBody; only fields valid for the target
// version are filled in (see jarRunBodyFor).
type jarRunBody struct {
	EntryClass            string            `json:"entryClass,omitempty"`
	ProgramArgsList       []string          `json:"programArgsList,omitempty"`
	Parallelism           int               `json:"parallelism,omitempty"`
	JobID                 string            `json:"jobId,omitempty"`
	AllowNonRestoredState bool              `json:"allowNonRestoredState,omitempty"`
	SavepointPath         string            `json:"savepointPath,omitempty"`
	RestoreMode           ClaimMode         `json:"restoreMode,omitempty"`
	ClaimMode             ClaimMode         `json:"claimMode,omitempty"`
	FlinkConfiguration    map[string]string `json:"flinkConfiguration,omitempty"`
}

// jarRunBodyFor maps the request onto the fields version v accepts.
func jarRunBodyFor(v Version, req JarRunRequest) (jarRunBody, error) {
	b := jarRunBody{
		EntryClass:            req.EntryClass,
		ProgramArgsList:       req.ProgramArgs,
		JobID:                 req.JobID,
		AllowNonRestoredState: req.AllowNonRestoredState,
		SavepointPath:         req.SavepointPath,
	}
	if req.Parallelism > 0 {
		b.Parallelism = req.Parallelism
	}
	if req.ClaimMode != "" {
		if v.UsesClaimMode() {
			b.ClaimMode = req.ClaimMode
		} else {
			b.RestoreMode = req.ClaimMode
		}
	}
	if len(req.FlinkConfiguration) > 0 {
		if !v.SupportsJarRunFlinkConfiguration() {
			return b, fmt.Errorf("flinkConfiguration in jar run needs Flink 1.17 or newer")
		}
		b.FlinkConfiguration = req.FlinkConfiguration
	}
	return b, nil
}

// jarPath validates a jar id (a file name, never a path) and builds the URL path.
func jarPath(method, jarID, suffix string) (string, error) {
	p := "/jars/" + url.PathEscape(jarID) + suffix
	if jarID == "" || strings.ContainsAny(jarID, "/\\") || jarID == "." || jarID == ".." {
		return p, &Error{Kind: KindBadRequest, Method: method, Path: p, Message: fmt.Sprintf("invalid jar id %q", jarID)}
	}
	return p, nil
}

// RunJar runs an uploaded jar and returns the job id.
func (c *Client) RunJar(ctx context.Context, jarID string, req JarRunRequest) (string, error) {
	p, err := jarPath(http.MethodPost, jarID, "/run")
	if err != nil {
		return "", err
	}
	if req.JobID != "" {
		if err := checkID(http.MethodPost, p, "job id", req.JobID); err != nil {
			return "", err
		}
	}
	body, err := jarRunBodyFor(c.version, req)
	if err != nil {
		return "", c.unsupported(http.MethodPost, p, "%v", err)
	}
	r, err := jsonBody(body)
	if err != nil {
		return "", &Error{Kind: KindBadRequest, Method: http.MethodPost, Path: p, Message: "cannot encode request", Err: err}
	}
	var out struct {
		JobID string `json:"jobid"`
	}
	err = c.do(ctx, call{method: http.MethodPost, path: p, body: r, contentType: "application/json",
		timeout: c.submitTimeout, out: &out})
	if err != nil {
		return "", err
	}
	if !IsValidID(out.JobID) {
		return "", unexpected(http.MethodPost, p, fmt.Errorf("invalid jobid %q", out.JobID))
	}
	return out.JobID, nil
}

// DeleteJar removes an uploaded jar (DELETE /jars/:jarid).
func (c *Client) DeleteJar(ctx context.Context, jarID string) error {
	p, err := jarPath(http.MethodDelete, jarID, "")
	if err != nil {
		return err
	}
	return c.do(ctx, call{method: http.MethodDelete, path: p})
}
