package sessionjob

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/config"
	"github.com/flinkops/flink-operator/pkg/flink"
)

// Event reasons, upstream's where it has one.
const (
	ReasonSpecChanged      = "SpecChanged"
	ReasonSuspended        = "Suspended"
	ReasonSubmit           = "Submit"
	ReasonJobStatusChanged = "JobStatusChanged"
	ReasonSavepointError   = "SavepointError"
	ReasonCheckpointError  = "CheckpointError"
	ReasonUpgradeFailed    = "UpgradeFailed"
	ReasonCleanup          = "Cleanup"
	ReasonValidationError  = "ValidationError"
	ReasonSessionCluster   = "SessionClusterNotReady"
	ReasonSubmitFailed     = "SubmitFailed"
)

const retryFailed = time.Minute // a step blocked by an error

// syncState is one sync of one FlinkSessionJob: what was read, what the
// status becomes, and the writes to make around the status write.
type syncState struct {
	key  string
	base *v1beta1.FlinkSessionJob // what the API server has
	sj   *v1beta1.FlinkSessionJob // a copy whose status this sync edits
	now  time.Time
	log  klog.Logger

	// recorded is lastReconciledSpec: the spec the job runs, or during an
	// upgrade the spec being deployed. nil before the first deploy.
	recorded *reconciledSpec
	// cluster is the session FlinkDeployment (nil when missing or unusable);
	// cfg the job's effective configuration: operator, cluster, job.
	cluster *v1beta1.FlinkDeployment
	cfg     config.Config
	version flink.Version

	// refPath is the resolved spec.job.initialStateSnapshotRef of a
	// savepointRedeployNonce change.
	refPath string

	client *flink.Client      // set when the session JobManager answered
	job    *flink.JobOverview // the job, when the JobManager knows it
	jobs   bool               // the jobs overview was read

	errs    []syncError
	events  []event
	pre     []action
	post    []action
	requeue time.Duration
}

type syncError struct{ reason, msg string }

type event struct{ typ, reason, msg string }

type action struct {
	name string
	run  func(ctx context.Context) error
}

func (sc *syncState) fail(reason, format string, args ...any) {
	sc.errs = append(sc.errs, syncError{reason, fmt.Sprintf(format, args...)})
}

func (sc *syncState) event(typ, reason, format string, args ...any) {
	sc.events = append(sc.events, event{typ, reason, fmt.Sprintf(format, args...)})
}

// after asks for the next sync within d (the earliest request wins).
func (sc *syncState) after(d time.Duration) {
	if d > 0 && (sc.requeue == 0 || d < sc.requeue) {
		sc.requeue = d
	}
}

func (sc *syncState) then(name string, run func(ctx context.Context) error) {
	sc.post = append(sc.post, action{name, run})
}

func (sc *syncState) before(name string, run func(ctx context.Context) error) {
	sc.pre = append(sc.pre, action{name, run})
}

// Sync reconciles one FlinkSessionJob: read it and its session cluster
// from the caches, observe the job through the cluster's REST API, decide,
// write the status at most once, make the writes and Flink calls the status
// announces, and say when to look again.
//
// The status is a write-ahead log: the job id of a submission, the trigger
// id of a stop-with-savepoint and the state to restore from are recorded
// before the calls that use them, so a crash anywhere leaves a status from
// which the next sync continues the same step.
func (c *Controller) Sync(ctx context.Context, key string) (time.Duration, error) {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return 0, err
	}
	cached, err := c.caches.SessionJob(ns, name)
	if apierrors.IsNotFound(err) {
		c.clusterMisses.Delete(key)
		c.submissions.forget(key)
		return 0, nil
	} else if err != nil {
		return 0, err
	}
	if wait, d := c.gateSubmission(ctx, key, cached); wait {
		return d, nil // a submission is in flight (submissions.go)
	}
	if cached.DeletionTimestamp != nil {
		return c.syncDeletion(ctx, key, cached)
	}
	base := cached
	if !slices.Contains(base.Finalizers, Finalizer) {
		if base, err = c.addFinalizer(ctx, base); err != nil {
			return 0, err
		}
	}
	sc, err := c.newSync(ctx, key, base)
	if err != nil {
		return 0, err
	}
	c.warnSnapshotCRDMissing(sc)
	if c.resolveCluster(sc) {
		if err := c.observe(ctx, sc); err != nil {
			return 0, err
		}
	}
	if err := c.reconcile(ctx, sc); err != nil {
		return 0, err
	}
	return c.commit(ctx, sc)
}

func (c *Controller) newSync(ctx context.Context, key string, base *v1beta1.FlinkSessionJob) (*syncState, error) {
	sc := &syncState{key: key, base: base, sj: base.DeepCopy(), now: c.clock.Now(), log: klog.FromContext(ctx), cfg: c.cfg}
	rec, err := decodeSpec(base.Status.ReconciliationStatus.LastReconciledSpec)
	if err != nil {
		return nil, err
	}
	sc.recorded = rec
	return sc, nil
}

func (c *Controller) addFinalizer(ctx context.Context, j *v1beta1.FlinkSessionJob) (*v1beta1.FlinkSessionJob, error) {
	toWrite := j.DeepCopy()
	toWrite.Finalizers = append(toWrite.Finalizers, Finalizer)
	written, err := c.client.FlinkV1beta1().FlinkSessionJobs(j.Namespace).Update(ctx, toWrite, metav1.UpdateOptions{})
	if err != nil {
		return nil, fmt.Errorf("adding finalizer to FlinkSessionJob %s/%s: %w", j.Namespace, j.Name, err)
	}
	return written, nil
}

// commit writes the status if it changed, then emits events and runs the
// actions the status announced. Pre-commit writes (snapshot resources) come
// first: they are idempotent, and a status that refers to them must not
// exist without them.
func (c *Controller) commit(ctx context.Context, sc *syncState) (time.Duration, error) {
	st := &sc.sj.Status
	prevError := sc.base.Status.Error
	msgs := make([]string, 0, len(sc.errs))
	for _, e := range sc.errs {
		msgs = append(msgs, e.msg)
	}
	st.Error = strings.Join(msgs, "; ")
	if rs := &st.ReconciliationStatus; sc.recorded != nil && jobSuspended(&sc.recorded.Spec) &&
		rs.State == v1beta1.ReconciliationDeployed && rs.LastStableSpec != rs.LastReconciledSpec {
		// A job suspended by the user is stable in that state.
		rs.LastStableSpec = rs.LastReconciledSpec
	}
	st.LifecycleState = lifecycleOf(sc.sj, sc.recorded)

	for _, a := range sc.pre {
		if err := a.run(ctx); err != nil {
			return 0, err
		}
		c.fault(sc.key, "pre-commit:"+a.name)
	}
	if !equality.Semantic.DeepEqual(sc.base.Status, sc.sj.Status) {
		toWrite := sc.base.DeepCopy()
		toWrite.Status = sc.sj.Status
		written, err := c.client.FlinkV1beta1().FlinkSessionJobs(toWrite.Namespace).UpdateStatus(ctx, toWrite, metav1.UpdateOptions{})
		if err != nil {
			return 0, fmt.Errorf("updating status of FlinkSessionJob %s: %w", sc.key, err)
		}
		if old, now := sc.base.Status.LifecycleState, written.Status.LifecycleState; old != now {
			sc.log.Info("Lifecycle state changed", "from", stateOrNew(string(old)), "to", now,
				"jobId", written.Status.JobStatus.JobID, "jobState", written.Status.JobStatus.State,
				"restorePath", written.Status.JobStatus.UpgradeSavepointPath)
		}
		sc.base = written
		c.fault(sc.key, "status-written")
	}
	if st.Error != "" && st.Error != prevError {
		for _, e := range sc.errs {
			c.recorder.Event(sc.sj, "Warning", e.reason, e.msg)
		}
	}
	for _, e := range sc.events {
		c.recorder.Event(sc.sj, e.typ, e.reason, e.msg)
	}
	for _, a := range sc.post {
		if err := a.run(ctx); err != nil {
			return 0, err
		}
		c.fault(sc.key, "action:"+a.name)
	}
	return sc.requeue, nil
}

// progressInterval is how soon to look again while something is changing.
func (sc *syncState) progressInterval() time.Duration {
	d, err := sc.cfg.Duration(config.KeyProgressCheckInterval)
	if err != nil || d <= 0 {
		return 10 * time.Second
	}
	return d
}

// reconcileInterval is how soon to look again when all is well.
func (sc *syncState) reconcileInterval() time.Duration {
	d, err := sc.cfg.Duration(config.KeyReconcileInterval)
	if err != nil || d <= 0 {
		return time.Minute
	}
	return d
}
