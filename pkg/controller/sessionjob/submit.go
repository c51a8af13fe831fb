package sessionjob

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"os"
	"path"
	"strings"

	"github.com/flinkops/flink-operator/pkg/cluster"
	"github.com/flinkops/flink-operator/pkg/config"
	"github.com/flinkops/flink-operator/pkg/flink"
	"github.com/flinkops/flink-operator/pkg/reasons"
	"github.com/flinkops/flink-operator/pkg/validation"
)

// submit makes the submission the status records (job id, restore point)
// in the background (submissions.go): fetch the jar, upload it to the
// session cluster, run it with the recorded job id, delete the uploaded
// jar. The sync only starts that task and returns; the task's completion
// enqueues the key. The job id makes it idempotent: if an earlier attempt
// got through, Flink answers DuplicateJobSubmission or the next
// observation finds the job. A failure is reported in status and with a
// SubmitFailed event, and retried with a growing delay (from the progress
// interval for a transient failure, from a minute otherwise, up to 10
// minutes) or when the spec changes.
func (c *Controller) submit(ctx context.Context, sc *syncState) {
	js := &sc.Obj().Status.JobStatus
	spec := sc.Recorded().Spec.Job

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
		sc.Fail(reasons.ReasonValidationError, "spec.flinkConfiguration: %v", err)
		return
	}
	if len(conf) > 0 && !sc.version.SupportsJarRunFlinkConfiguration() {
		sc.Fail(reasons.ReasonValidationError, "spec.flinkConfiguration of a session job is sent with the submission, which needs Flink 1.17 or newer; session cluster %s runs %s",
			sc.deploymentName(), sc.version)
		return
	}
	if sc.version.SupportsJarRunFlinkConfiguration() {
		// Upstream's job-level defaults, as an application gets them, where
		// neither the job nor its session cluster sets them: above all
		// checkpoints retained on cancellation, since a last-state stop
		// cancels the job and restarts from its latest checkpoint. Older
		// Flink takes no configuration with a submission; there the
		// session cluster's own configuration decides (sessionJob's
		// LastStateStop reads it from the running job).
		maps.Copy(conf, cluster.JobDefaults(mergedConf(sc.Cfg, conf), sc.Obj().Name, spec))
	}
	req.FlinkConfiguration = conf
	policy, err := artifactPolicyFrom(sc.Cfg)
	if err != nil {
		sc.Fail(reasons.ReasonValidationError, "%v", err)
		return
	}

	id := submissionID{uid: string(sc.Obj().UID), jobID: js.JobID, jarURI: spec.JarURI}
	if f := c.submissions.failure(sc.Key(), id); f != nil {
		// The last failure stays the status error (and its event is not
		// repeated) until an attempt succeeds.
		sc.Fail(f.reason, "%s", f.msg)
		if wait := f.notBefore.Sub(sc.Now()); wait > 0 {
			sc.RequeueWithin(wait)
			return
		}
	}
	if c.submissions.task(sc.Key()) != nil {
		// The gate waits for running tasks and takes finished ones over,
		// so this is an abandoned task that has not ended yet.
		sc.RequeueWithin(c.submitPoll())
		return
	}
	if c.startSubmission(withArtifactPolicy(ctx, policy), sc, id, req) {
		sc.Log().V(2).Info("Started the submission", "jobId", js.JobID, "jarURI", redactURI(spec.JarURI))
	}
	// A safety net: the task's completion enqueues the key at once.
	sc.RequeueWithin(sc.ProgressInterval())
}

// jobFlinkConfiguration is the job's own flinkConfiguration as sent with
// the submission: Flink options only (the operator's kubernetes.operator.*
// keys stay with the operator).
func jobFlinkConfiguration(sc *syncState) (map[string]string, error) {
	raw, err := sc.Recorded().Spec.FlinkConfiguration.Values()
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

// mergedConf is the job's configuration over the effective one.
func mergedConf(effective, job map[string]string) map[string]string {
	out := maps.Clone(effective)
	if out == nil {
		out = map[string]string{}
	}
	maps.Copy(out, job)
	return out
}

// localJar is a jar ready for upload: a temporary copy of a downloaded
// one, or the file a file:// URI names.
type localJar struct {
	name string
	body *os.File
	size int64
	// temp is the temporary copy's path, removed on close (it may already
	// be gone, see fetchJar).
	temp string
}

func (j *localJar) close() {
	_ = j.body.Close()
	if j.temp != "" {
		_ = os.Remove(j.temp)
	}
}

// fetchJar makes a session job's jarURI ready for upload, under the
// user.artifacts options the submission carries (artifacts.go): the scheme
// must be allowed; http(s):// is downloaded into a temporary file in
// base.dir (streamed, never held in memory, at most the size limit, within
// the artifact client's timeout, with the configured headers, connecting
// to no restricted address unless allowed), file:// is read from the
// operator's file system as it is. local:// names a file inside the
// session cluster's image, which the REST API cannot run, and is refused
// (the webhook and validation say so before it gets here).
//
// Downloading first, rather than streaming the download into the upload,
// keeps a slow jar server from holding a JobManager upload open.
func (c *Controller) fetchJar(ctx context.Context, uri string) (*localJar, error) {
	u, err := url.Parse(uri)
	if err != nil {
		return nil, fmt.Errorf("jarURI %q: %w", redactURI(uri), err)
	}
	name := path.Base(u.Path)
	if !strings.HasSuffix(name, ".jar") {
		name += ".jar"
	}
	policy := artifactPolicyOf(ctx)
	if u.Scheme != "" {
		if err := validation.JarSchemeAllowed(u.Scheme, policy.schemes); err != nil {
			return nil, err
		}
	}
	switch strings.ToLower(u.Scheme) {
	case "http", "https":
		return c.download(ctx, u, name, policy)
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
		return &localJar{name: name, body: f, size: st.Size()}, nil
	}
	return nil, fmt.Errorf("jarURI %q: a session job's jar must be an http://, https:// or file:// URI", redactURI(uri))
}

func (c *Controller) download(ctx context.Context, u *url.URL, name string, policy artifactPolicy) (*localJar, error) {
	limit := c.submissions.maxJarBytes
	if u.Hostname() == "" {
		return nil, fmt.Errorf("GET %s: the jarURI has no host", redact(u))
	}
	dir, err := c.stagingDir(policy)
	if err != nil {
		return nil, err
	}
	client, done, err := c.artifactHTTPClient(policy, u)
	if err != nil {
		return nil, err
	}
	defer done()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, err
	}
	for k, v := range policy.headers {
		req.Header.Set(k, v)
	}
	resp, err := client.Do(req)
	if err != nil {
		var re *restrictedAddrError
		var rr *redirectRefused
		switch {
		// Refusals, not network errors (which a retry soon may get past):
		// the error chain is dropped so that they are retried slowly.
		case errors.As(err, &re):
			return nil, fmt.Errorf("GET %s: %s", redact(u), re.Error())
		case errors.As(err, &rr):
			return nil, fmt.Errorf("GET %s: %s", redact(u), rr.Error())
		}
		return nil, fmt.Errorf("GET %s: %w", redact(u), err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", redact(u), resp.Status)
	}
	if resp.ContentLength > limit {
		return nil, fmt.Errorf("GET %s: the jar has %d bytes, more than the operator's limit of %d", redact(u), resp.ContentLength, limit)
	}
	f, err := os.CreateTemp(dir, "sessionjob-*.jar")
	if err != nil {
		return nil, fmt.Errorf("GET %s: creating a temporary file in %s: %w", redact(u), dir, err)
	}
	jar := &localJar{name: name, body: f, temp: f.Name()}
	// Unlinked at once where the OS allows it (the open file stays
	// readable): a killed operator then leaves no file behind. Elsewhere
	// close removes it.
	if os.Remove(f.Name()) == nil {
		jar.temp = ""
	}
	n, err := io.Copy(f, io.LimitReader(resp.Body, limit+1))
	switch {
	case err != nil:
		jar.close()
		return nil, fmt.Errorf("GET %s: reading the jar after %d bytes: %w", redact(u), n, err)
	case n > limit:
		jar.close()
		return nil, fmt.Errorf("GET %s: the jar has more than the operator's limit of %d bytes", redact(u), limit)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		jar.close()
		return nil, fmt.Errorf("GET %s: rewinding the temporary file: %w", redact(u), err)
	}
	jar.size = n
	return jar, nil
}

// redactURI is redact for a URI that may not parse.
func redactURI(uri string) string {
	u, err := url.Parse(uri)
	if err != nil {
		return "(unparsable URI)"
	}
	return redact(u)
}

// redact drops credentials and the query (tokens) from a URL for messages.
func redact(u *url.URL) string {
	c := *u
	c.User, c.RawQuery = nil, ""
	return c.String()
}
