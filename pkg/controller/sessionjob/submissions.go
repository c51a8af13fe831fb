package sessionjob

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"

	"k8s.io/klog/v2"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/config"
	"github.com/flinkops/flink-operator/pkg/controller/jobengine"
	"github.com/flinkops/flink-operator/pkg/flink"
	"github.com/flinkops/flink-operator/pkg/lifecycle"
	"github.com/flinkops/flink-operator/pkg/reasons"
)

// Submissions run in the background. Fetching a jar (up to the artifact
// client's 5 minutes), uploading it and running its main() (up to the
// submission timeout, 10 minutes) are far longer than a worker may wait on
// anything (the Flink client timeout), so a sync only starts a submission
// task and returns; the task's completion enqueues the key, and the sync
// that follows picks up its outcome. Tasks live in memory only: after a
// restart the status still records the submission (job id, RECONCILING),
// and the first sync starts it again — the job id makes a repeated run
// Flink's DuplicateJobSubmission, or the job is found by its id.
//
// While a task is in flight for a key, its syncs do nothing else (gate):
// every other step (an upgrade, a deletion) decides from whether Flink
// knows the job, and a run in flight would make that answer stale. A task
// that is no longer wanted (the resource deleted, re-created, its spec
// changed) is abandoned: fetching and uploading stop at once; a run already
// sent is seen through, so that its outcome is known before anything else
// is decided; then the key is synced as usual.

const (
	// defaultMaxSubmissions bounds the submission tasks running at once
	// (more wait for a slot), and with defaultMaxJarBytes the disk they use.
	defaultMaxSubmissions = 4
	// defaultMaxJarBytes bounds one downloaded jar. Flink's own upload
	// limit (rest.server.max-content-length) is 100 MiB by default.
	defaultMaxJarBytes = 1 << 30
	// submitRetryMax caps the backoff between failed attempts.
	submitRetryMax = 10 * time.Minute
	// jarCleanupTimeout bounds deleting an uploaded jar, also after the
	// task was cancelled (an operator shutting down).
	jarCleanupTimeout = flink.DefaultTimeout
)

// submissionID names one recorded submission: the resource (by uid, so a
// resource deleted and created again under the same name never meets the
// other's task), the job id the status records, and the jar.
type submissionID struct {
	uid, jobID, jarURI string
}

// submitTask is one submission in the background. Its fields below mu are
// written by the task and read by syncs.
type submitTask struct {
	key string
	id  submissionID
	// Captured at the start, for the outcome's messages and backoff.
	cluster   string
	restore   string
	retryBase time.Duration // first backoff of a retryable failure

	abandon context.CancelFunc // stops the fetch and upload (not a run already sent)
	kill    context.CancelFunc // stops everything (operator shutdown)
	done    chan struct{}      // closed when the task has ended

	mu        sync.Mutex
	phase     string // waiting, fetching, uploading, running, done
	abandoned bool
	ran       bool   // the run request was sent
	what      string // the step that failed
	err       error
	duplicate bool // Flink had the job id already
	finished  time.Time
}

func (t *submitTask) setPhase(p string) {
	t.mu.Lock()
	t.phase = p
	t.mu.Unlock()
}

func (t *submitTask) isDone() bool {
	select {
	case <-t.done:
		return true
	default:
		return false
	}
}

// submitFailure is the last failed attempt of a submission, for the
// status error while it is retried and the backoff before the next.
type submitFailure struct {
	id        submissionID
	count     int
	reason    string
	msg       string
	notBefore time.Time
}

// submissions is the controller's set of background submission tasks, at
// most one per key, and the failures being backed off.
type submissions struct {
	slots       chan struct{} // one per running task
	maxJarBytes int64
	jarDir      string

	mu       sync.Mutex
	tasks    map[string]*submitTask
	failures map[string]*submitFailure
	stopped  bool
	wg       sync.WaitGroup
}

func newSubmissions(maxTasks int, maxJarBytes int64, jarDir string) *submissions {
	return &submissions{
		slots:       make(chan struct{}, maxTasks),
		maxJarBytes: maxJarBytes,
		jarDir:      jarDir,
		tasks:       map[string]*submitTask{},
		failures:    map[string]*submitFailure{},
	}
}

func (s *submissions) task(key string) *submitTask {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tasks[key]
}

func (s *submissions) failure(key string, id submissionID) *submitFailure {
	s.mu.Lock()
	defer s.mu.Unlock()
	if f := s.failures[key]; f != nil && f.id == id {
		return f
	}
	return nil
}

// forget drops what is known about a key whose resource is gone; a task
// still running is abandoned and removed once it has ended.
func (s *submissions) forget(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.failures, key)
	if t := s.tasks[key]; t != nil {
		if t.isDone() {
			delete(s.tasks, key)
		} else {
			t.mu.Lock()
			t.abandoned = true
			t.mu.Unlock()
			t.abandon()
		}
	}
}

// stop kills every task and waits for them to end (operator shutdown);
// nothing starts afterwards. A run cut short here is repeated by the next
// leader under the same job id.
func (s *submissions) stop() {
	s.mu.Lock()
	s.stopped = true
	for _, t := range s.tasks {
		t.kill()
	}
	s.mu.Unlock()
	s.wg.Wait()
}

// submissionWanted says whether the resource still asks for the
// submission a task makes: the same object, not being deleted, its status
// still recording that job id as RECONCILING, and no spec change that
// would stop or replace it.
func submissionWanted(sj *v1beta1.FlinkSessionJob, id submissionID) bool {
	js := &sj.Status.JobStatus
	if string(sj.UID) != id.uid || sj.DeletionTimestamp != nil || js.JobID != id.jobID || js.State != v1beta1.JobStatusReconciling ||
		sj.Status.ReconciliationStatus.State != v1beta1.ReconciliationDeployed {
		return false
	}
	rec, err := lifecycle.Decode[v1beta1.FlinkSessionJobSpec](sj.Status.ReconciliationStatus.LastReconciledSpec)
	if err != nil || rec == nil || rec.Spec.Job == nil || rec.Spec.Job.JarURI != id.jarURI {
		return false
	}
	change := jobengine.Classify(rec.Spec, sj.Spec)
	return change == jobengine.ChangeNone || change == jobengine.ChangeNonces
}

// gateSubmission runs first in every sync of an existing resource. While
// the key's submission task is running the sync waits for it (wait true;
// the task's completion enqueues the key), abandoning it first if it is no
// longer wanted. A finished task's outcome is taken over here: a success is
// announced (the next observation finds the job), a failure is kept for
// submit to report and back off from.
func (c *Controller) gateSubmission(ctx context.Context, key string, sj *v1beta1.FlinkSessionJob) (wait bool, requeue time.Duration) {
	s := c.submissions
	t := s.task(key)
	if t == nil {
		return false, 0
	}
	log := klog.FromContext(ctx).WithValues("jobId", t.id.jobID)
	if !t.isDone() {
		t.mu.Lock()
		phase, abandoned := t.phase, t.abandoned
		if !abandoned && !submissionWanted(sj, t.id) {
			t.abandoned = true
		}
		nowAbandoned := t.abandoned && !abandoned
		t.mu.Unlock()
		if nowAbandoned {
			log.Info("Abandoning the submission: the session job no longer asks for it", "phase", phase)
			t.abandon()
		} else {
			log.V(4).Info("Submission in progress", "phase", phase)
		}
		return true, c.submitPoll()
	}

	s.mu.Lock()
	if s.tasks[key] == t {
		delete(s.tasks, key)
	}
	s.mu.Unlock()
	t.mu.Lock()
	ran, what, err, duplicate, finished, abandoned := t.ran, t.what, t.err, t.duplicate, t.finished, t.abandoned
	t.mu.Unlock()
	if ran {
		c.fault(key, "submitted")
	}
	switch {
	case err == nil:
		s.mu.Lock()
		delete(s.failures, key)
		s.mu.Unlock()
		if duplicate {
			log.Info("The job was submitted before (an earlier attempt got through)")
		}
		from := "empty state"
		if t.restore != "" {
			from = t.restore
		}
		log.Info("Submitted job", "cluster", t.cluster, "restorePath", t.restore)
		c.Recorder.Eventf(sj, corev1.EventTypeNormal, reasons.ReasonSubmit, "Submitted job %s to session cluster %s from %s", t.id.jobID, t.cluster, from)
	case abandoned:
		// Its outcome no longer matters (a cut-short attempt is no failure
		// to report or back off from): the sync decides afresh, and if the
		// resource asks for the submission again it starts anew.
		log.V(2).Info("Abandoned submission ended", "step", what, "err", err)
	default:
		msg := fmt.Sprintf("Submitting job %s to session cluster %s failed: %s: %v", t.id.jobID, t.cluster, what, err)
		if fe, ok := flink.AsError(err); ok {
			msg = fmt.Sprintf("Submitting job %s to session cluster %s failed: %s: %s", t.id.jobID, t.cluster, what, fe.Summary())
		}
		s.mu.Lock()
		f := s.failures[key]
		if f == nil || f.id != t.id {
			f = &submitFailure{id: t.id}
			s.failures[key] = f
		}
		f.count++
		base := jobengine.RetryFailed
		if retryableSubmitError(err) {
			base = t.retryBase
		}
		delay := min(base<<min(f.count-1, 10), submitRetryMax)
		f.reason, f.msg, f.notBefore = reasons.ReasonSubmitFailed, msg, finished.Add(delay)
		s.mu.Unlock()
		log.Info("Submission failed", "step", what, "err", err, "attempt", f.count, "retryIn", delay)
	}
	return false, 0
}

// retryableSubmitError: the same attempt may well succeed soon (Flink or
// the jar server unreachable, slow or busy), so the first retry comes after
// the progress interval rather than a minute.
func retryableSubmitError(err error) bool {
	var ne net.Error
	return flink.IsRetryable(err) || errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne)
}

// submitPoll is how often a sync waiting for a running submission looks
// again, should the completion's enqueue be lost: a safety net only.
func (c *Controller) submitPoll() time.Duration {
	d, err := c.CurrentConfig().Duration(config.KeyProgressCheckInterval)
	if err != nil || d <= 0 {
		return 10 * time.Second
	}
	return d
}

// startSubmission starts the background task for the submission the
// status records. It returns false when the operator is shutting down.
func (c *Controller) startSubmission(ctx context.Context, sc *syncState, id submissionID, req flink.JarRunRequest) bool {
	s := c.submissions
	// The task outlives the sync: it keeps the sync's logger, not its
	// cancellation.
	runCtx, kill := context.WithCancel(context.WithoutCancel(ctx))
	fetchCtx, abandon := context.WithCancel(runCtx)
	t := &submitTask{
		key: sc.Key(), id: id, cluster: sc.deploymentName(), restore: req.SavepointPath, retryBase: sc.ProgressInterval(),
		abandon: abandon, kill: kill, done: make(chan struct{}), phase: "waiting",
	}
	s.mu.Lock()
	if s.stopped || s.tasks[sc.Key()] != nil {
		s.mu.Unlock()
		abandon()
		kill()
		return false
	}
	s.tasks[sc.Key()] = t
	s.wg.Add(1)
	s.mu.Unlock()
	client := sc.Client
	go func() {
		defer s.wg.Done()
		defer kill()
		c.runSubmission(runCtx, fetchCtx, t, client, req)
	}()
	return true
}

// runSubmission is the task: wait for a slot, fetch the jar, upload it,
// run it with the recorded job id, delete the uploaded jar. fetchCtx ends
// when the task is abandoned; ctx only when the operator stops. The task
// counts as done only once its slot, its temporary file and the uploaded
// jar are released.
func (c *Controller) runSubmission(ctx, fetchCtx context.Context, t *submitTask, client *flink.Client, req flink.JarRunRequest) {
	what, err := c.submissionSteps(ctx, fetchCtx, t, client, req)
	t.mu.Lock()
	t.what, t.err, t.phase, t.finished = what, err, "done", c.Clock.Now()
	t.mu.Unlock()
	close(t.done)
	// The sync that follows takes the outcome over.
	c.queue.Add(t.key)
}

func (c *Controller) submissionSteps(ctx, fetchCtx context.Context, t *submitTask, client *flink.Client, req flink.JarRunRequest) (string, error) {
	log := klog.FromContext(ctx).WithValues("jobId", t.id.jobID, "cluster", t.cluster)
	select {
	case c.submissions.slots <- struct{}{}:
		defer func() { <-c.submissions.slots }()
	case <-fetchCtx.Done():
		return "waiting for a submission slot", fetchCtx.Err()
	}
	t.setPhase("fetching")
	start := time.Now()
	jar, err := c.fetchJar(fetchCtx, t.id.jarURI)
	if err != nil {
		return "fetching the jar", err
	}
	defer jar.close()
	log.V(2).Info("Fetched the jar", "bytes", jar.size, "took", time.Since(start))
	t.setPhase("uploading")
	up, err := client.UploadJar(fetchCtx, jar.name, jar.body, jar.size)
	if err != nil {
		return "uploading the jar", err
	}
	// The uploaded jar is deleted whatever happens next, also when the
	// operator is stopping: an uploaded jar is never used again.
	defer func() {
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), jarCleanupTimeout)
		defer cancel()
		if derr := client.DeleteJar(dctx, up.ID()); derr != nil {
			log.Info("Deleting the uploaded jar failed", "jar", up.ID(), "err", derr)
		}
	}()
	if err := fetchCtx.Err(); err != nil {
		return "uploading the jar", err // abandoned: nothing is run
	}
	// From here on only the operator stopping cancels: a run that may have
	// reached Flink is seen through, so that its outcome is known before
	// anything else is decided.
	t.mu.Lock()
	t.phase, t.ran = "running", true
	t.mu.Unlock()
	if _, err := client.RunJar(ctx, up.ID(), req); err != nil {
		if !flink.IsDuplicateJob(err) {
			return "running the jar", err
		}
		t.mu.Lock()
		t.duplicate = true
		t.mu.Unlock()
	}
	return "", nil
}
