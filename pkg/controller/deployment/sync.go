package deployment

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
	"github.com/flinkops/flink-operator/pkg/controller/legacysnapshots"
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
	ReasonDeploymentError  = "DeploymentError"
)

// Requeue pacing. A worker never waits on Flink or on Kubernetes: it asks
// to look again later.
const (
	teardownPoll = 2 * time.Second // owned Deployments being deleted
	retryFailed  = time.Minute     // an upgrade blocked by an error
)

// syncState is one sync of one FlinkDeployment: what was read, what the
// status becomes, and the writes to make once the status is recorded.
type syncState struct {
	key  string
	base *v1beta1.FlinkDeployment // what the API server has
	dep  *v1beta1.FlinkDeployment // a copy whose status this sync edits
	now  time.Time
	log  klog.Logger

	// recorded is lastReconciledSpec: the spec the cluster runs, or during
	// an upgrade the spec being deployed. nil before the first deploy.
	recorded *reconciledSpec
	// cfg is the effective configuration of recorded (of the current spec
	// before the first deploy).
	cfg   config.Config
	owned ownedObjects

	// refPath is the resolved spec.job.initialStateSnapshotRef of a
	// savepointRedeployNonce change.
	refPath string

	// Observation of the running cluster.
	client *flink.Client      // set when the JobManager answered
	job    *flink.JobOverview // the job, when the JobManager knows it

	errs    []syncError
	events  []event
	pre     []action // idempotent writes that must precede the status write
	post    []action // writes and Flink calls that must follow it
	requeue time.Duration
}

type syncError struct{ reason, msg string }

type event struct{ typ, reason, msg string }

type action struct {
	name string
	run  func(ctx context.Context) error
}

// fail records an error for status.error; its Warning event is emitted
// only when status.error changes, so a persisting error is not repeated.
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

// Sync reconciles one FlinkDeployment: read it and its cluster from the
// caches, observe the cluster (Deployments, then Flink's REST API), decide,
// write the status at most once, then make the writes and Flink calls the
// status now announces, and say when to look again.
//
// The status is a write-ahead log: whatever is about to be torn down,
// stopped or deployed is recorded first, so a crash at any point leaves a
// status from which the next sync continues the same step.
func (c *Controller) Sync(ctx context.Context, key string) (time.Duration, error) {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return 0, err
	}
	cached, err := c.caches.Deployment(ns, name)
	if apierrors.IsNotFound(err) {
		return 0, nil
	} else if err != nil {
		return 0, err
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
	if err := c.observe(ctx, sc); err != nil {
		return 0, err
	}
	if err := c.reconcile(ctx, sc); err != nil {
		return 0, err
	}
	return c.commit(ctx, sc)
}

func (c *Controller) newSync(ctx context.Context, key string, base *v1beta1.FlinkDeployment) (*syncState, error) {
	sc := &syncState{key: key, base: base, dep: base.DeepCopy(), now: c.clock.Now(), log: klog.FromContext(ctx)}
	rec, err := decodeSpec(base.Status.ReconciliationStatus.LastReconciledSpec)
	if err != nil {
		return nil, err
	}
	sc.recorded = rec
	spec := &sc.dep.Spec
	if rec != nil {
		spec = &rec.Spec
	}
	if sc.cfg, err = c.effectiveConfig(spec); err != nil {
		// Only the operator configuration can have changed since the spec
		// was accepted: act on the operator's values and say so.
		sc.fail(ReasonValidationError, "spec.flinkConfiguration: %v", err)
		sc.cfg = c.cfg
	}
	if sc.owned, err = c.owned.objectsOf(base); err != nil {
		return nil, err
	}
	return sc, nil
}

func (c *Controller) addFinalizer(ctx context.Context, d *v1beta1.FlinkDeployment) (*v1beta1.FlinkDeployment, error) {
	toWrite := d.DeepCopy()
	toWrite.Finalizers = append(toWrite.Finalizers, Finalizer)
	written, err := c.client.FlinkV1beta1().FlinkDeployments(d.Namespace).Update(ctx, toWrite, metav1.UpdateOptions{})
	if err != nil {
		return nil, fmt.Errorf("adding finalizer to FlinkDeployment %s/%s: %w", d.Namespace, d.Name, err)
	}
	return written, nil
}

// reconcile moves the cluster toward the spec, one step per sync.
func (c *Controller) reconcile(ctx context.Context, sc *syncState) error {
	st := &sc.dep.Status
	switch {
	case sc.recorded == nil:
		return c.firstDeploy(ctx, sc)
	case st.ReconciliationStatus.State == v1beta1.ReconciliationUpgrading:
		// Finish what the log says was started, with the recorded spec;
		// a newer spec is applied once this upgrade is done.
		return c.continueUpgrade(ctx, sc)
	}
	change := classify(sc.recorded.Spec, sc.dep.Spec)
	if change != changeNone {
		v, err := c.validate(sc.dep, sc.dep.Spec, sc.recorded)
		switch {
		case err != nil:
			// A bad spec is reported; the last good deployment keeps running.
			sc.fail(ReasonValidationError, "%v", err)
			sc.dep.Status.ObservedGeneration = sc.dep.Generation
		case change == changeNonces:
			// Manual snapshots only: steady creates them once the job runs.
			sc.dep.Status.ObservedGeneration = sc.dep.Generation
		case change == changeRedeploy && sc.dep.Spec.Job.InitialStateSnapshotRef != nil:
			path, err := c.snapshotRefPath(sc.dep, sc.dep.Spec.Job.InitialStateSnapshotRef)
			if err != nil {
				// The running job stays as it is until the snapshot will do.
				sc.fail(ReasonValidationError, "%v", err)
				sc.after(sc.progressInterval())
				sc.dep.Status.ObservedGeneration = sc.dep.Generation
				break
			}
			sc.refPath = path
			if !c.upgradeWaitsForSavepoint(sc, v, change) {
				return c.startUpgrade(ctx, sc, v, change)
			}
		case c.upgradeWaitsForSavepoint(sc, v, change):
			// steady keeps following the savepoint; the upgrade comes after.
		default:
			return c.startUpgrade(ctx, sc, v, change)
		}
	} else {
		sc.dep.Status.ObservedGeneration = sc.dep.Generation
	}
	return c.steady(ctx, sc)
}

// upgradeWaitsForSavepoint: a pending legacy savepoint of the running job
// delays a spec change (upstream's rule) unless
// kubernetes.operator.job.upgrade.ignore-pending-savepoint is set, read from
// the new spec so that the change itself can say so.
func (c *Controller) upgradeWaitsForSavepoint(sc *syncState, v *validated, change specChange) bool {
	if change == changeSuspended || !c.jobHealthy(sc) || !legacysnapshots.UpgradeBlocked(v.cfg, &sc.dep.Status.JobStatus) {
		return false
	}
	sc.log.Info(legacysnapshots.DelayMessage, "triggerId", sc.dep.Status.JobStatus.SavepointInfo.TriggerID)
	return true
}

// commit writes the status if it changed, then emits events and runs the
// actions the status announced. Pre-commit writes (snapshot resources) come
// first: they are idempotent, and the status that refers to them must not
// exist without them.
func (c *Controller) commit(ctx context.Context, sc *syncState) (time.Duration, error) {
	st := &sc.dep.Status
	prevError := sc.base.Status.Error
	msgs := make([]string, 0, len(sc.errs))
	for _, e := range sc.errs {
		msgs = append(msgs, e.msg)
	}
	st.Error = strings.Join(msgs, "; ")
	// A job suspended by the user is stable in that state (upstream's rule),
	// so resuming it reads DEPLOYED until the job runs again, not STABLE.
	if rs := &st.ReconciliationStatus; sc.recorded != nil && jobSuspended(&sc.recorded.Spec) &&
		rs.State == v1beta1.ReconciliationDeployed && rs.LastStableSpec != rs.LastReconciledSpec {
		rs.LastStableSpec = rs.LastReconciledSpec
	}
	st.LifecycleState = lifecycleOf(sc.dep, sc.recorded)
	setRunningCondition(sc)

	for _, a := range sc.pre {
		if err := a.run(ctx); err != nil {
			return 0, err
		}
		c.fault(sc.key, "pre-commit:"+a.name)
	}
	if !equality.Semantic.DeepEqual(sc.base.Status, sc.dep.Status) {
		toWrite := sc.base.DeepCopy()
		toWrite.Status = sc.dep.Status
		written, err := c.client.FlinkV1beta1().FlinkDeployments(toWrite.Namespace).UpdateStatus(ctx, toWrite, metav1.UpdateOptions{})
		if err != nil {
			return 0, fmt.Errorf("updating status of FlinkDeployment %s: %w", sc.key, err)
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
			c.recorder.Event(sc.dep, "Warning", e.reason, e.msg)
		}
	}
	for _, e := range sc.events {
		c.recorder.Event(sc.dep, e.typ, e.reason, e.msg)
	}
	for _, a := range sc.post {
		if err := a.run(ctx); err != nil {
			return 0, err
		}
		c.fault(sc.key, "action:"+a.name)
	}
	return sc.requeue, nil
}

func (c *Controller) fault(key, point string) {
	if c.faultPoint != nil {
		c.faultPoint(key, point)
	}
}

func stateOrNew(s string) string {
	if s == "" {
		return "NEW"
	}
	return s
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
