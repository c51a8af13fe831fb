package sessionjob

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path"
	"strings"

	"github.com/flinkops/flink-operator/pkg/config"
	"github.com/flinkops/flink-operator/pkg/flink"
)

// submit makes the submission the status records (job id, restore point):
// fetch the jar, upload it to the session cluster, run it with the
// recorded job id, delete the uploaded jar. The job id makes it idempotent:
// if an earlier attempt got through, Flink answers DuplicateJobSubmission
// and the next observation finds the job. A failure is reported in status
// and retried after a minute (or when the spec changes).
func (c *Controller) submit(ctx context.Context, sc *syncState) {
	js := &sc.sj.Status.JobStatus
	spec := sc.recorded.Spec.Job
	log := sc.log.WithValues("jobId", js.JobID, "jarURI", spec.JarURI)

	req := flink.JarRunRequest{
		EntryClass:            spec.EntryClass,
		ProgramArgs:           spec.Args,
		JobID:                 js.JobID,
		AllowNonRestoredState: spec.AllowNonRestoredState != nil && *spec.AllowNonRestoredState,
		SavepointPath:         js.UpgradeSavepointPath,
	}
	if spec.Parallelism != nil {
		req.Parallelism = int(*spec.Parallelism)
	}
	conf, err := jobFlinkConfiguration(sc)
	if err != nil {
		sc.fail(ReasonValidationError, "spec.flinkConfiguration: %v", err)
		return
	}
	if len(conf) > 0 && !sc.version.SupportsJarRunFlinkConfiguration() {
		sc.fail(ReasonValidationError, "spec.flinkConfiguration of a session job is sent with the submission, which needs Flink 1.17 or newer; session cluster %s runs %s",
			sc.deploymentName(), sc.version)
		return
	}
	req.FlinkConfiguration = conf

	failed := func(what string, err error) {
		msg := fmt.Sprintf("Submitting job %s to session cluster %s failed: %s: %v", js.JobID, sc.deploymentName(), what, err)
		if fe, ok := flink.AsError(err); ok {
			msg = fmt.Sprintf("Submitting job %s to session cluster %s failed: %s: %s", js.JobID, sc.deploymentName(), what, fe.Summary())
		}
		sc.fail(ReasonSubmitFailed, "%s", msg)
		if flink.IsRetryable(err) {
			sc.after(sc.progressInterval())
		} else {
			sc.after(retryFailed)
		}
	}
	jar, err := c.openJar(ctx, spec.JarURI)
	if err != nil {
		failed("fetching the jar", err)
		return
	}
	defer jar.body.Close()
	up, err := sc.client.UploadJar(ctx, jar.name, jar.body, jar.size)
	if err != nil {
		failed("uploading the jar", err)
		return
	}
	_, err = sc.client.RunJar(ctx, up.ID(), req)
	if derr := sc.client.DeleteJar(ctx, up.ID()); derr != nil {
		log.Info("Deleting the uploaded jar failed", "jar", up.ID(), "err", derr)
	}
	c.fault(sc.key, "submitted")
	switch {
	case err == nil:
	case flink.IsDuplicateJob(err):
		log.Info("The job was submitted before (an earlier attempt got through)")
	default:
		failed("running the jar", err)
		return
	}
	from := "empty state"
	if js.UpgradeSavepointPath != "" {
		from = js.UpgradeSavepointPath
	}
	log.Info("Submitted job", "cluster", sc.deploymentName(), "restorePath", js.UpgradeSavepointPath)
	sc.event("Normal", ReasonSubmit, "Submitted job %s to session cluster %s from %s", js.JobID, sc.deploymentName(), from)
	sc.after(sc.progressInterval())
}

// jobFlinkConfiguration is the job's own flinkConfiguration as sent with
// the submission: Flink options only (the operator's kubernetes.operator.*
// keys stay with the operator).
func jobFlinkConfiguration(sc *syncState) (map[string]string, error) {
	raw, err := sc.recorded.Spec.FlinkConfiguration.Values()
	if err != nil {
		return nil, err
	}
	values, err := config.Flatten(raw)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for k, v := range values {
		if !strings.HasPrefix(k, config.OperatorPrefix) {
			out[k] = v
		}
	}
	return out, nil
}

type jarContent struct {
	name string
	body io.ReadCloser
	size int64 // -1 when unknown
}

// openJar opens a session job's jarURI for upload: http(s):// is
// downloaded (streamed, never held in memory), file:// is read from the
// operator's file system. local:// names a file inside the session
// cluster's image, which the REST API cannot run, and is refused (the
// webhook and validation say so before it gets here).
func (c *Controller) openJar(ctx context.Context, uri string) (*jarContent, error) {
	u, err := url.Parse(uri)
	if err != nil {
		return nil, fmt.Errorf("jarURI %q: %w", uri, err)
	}
	name := path.Base(u.Path)
	if !strings.HasSuffix(name, ".jar") {
		name += ".jar"
	}
	switch strings.ToLower(u.Scheme) {
	case "http", "https":
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, uri, nil)
		if err != nil {
			return nil, err
		}
		resp, err := c.artifactClient.Do(req)
		if err != nil {
			return nil, fmt.Errorf("GET %s: %w", redact(u), err)
		}
		if resp.StatusCode != http.StatusOK {
			resp.Body.Close()
			return nil, fmt.Errorf("GET %s: %s", redact(u), resp.Status)
		}
		return &jarContent{name: name, body: resp.Body, size: resp.ContentLength}, nil
	case "file":
		f, err := os.Open(u.Path)
		if err != nil {
			return nil, err
		}
		st, err := f.Stat()
		if err != nil {
			f.Close()
			return nil, err
		}
		return &jarContent{name: name, body: f, size: st.Size()}, nil
	}
	return nil, fmt.Errorf("jarURI %q: a session job's jar must be an http://, https:// or file:// URI", uri)
}

// redact drops credentials and the query (tokens) from a URL for messages.
func redact(u *url.URL) string {
	c := *u
	c.User, c.RawQuery = nil, ""
	return c.String()
}
