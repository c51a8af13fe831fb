package sessionjob

import (
	"context"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/controller/jobengine"
	"github.com/flinkops/flink-operator/pkg/controller/jobmanager"
	"github.com/flinkops/flink-operator/pkg/controller/snapshotref"
	"github.com/flinkops/flink-operator/pkg/lifecycle"
	"github.com/flinkops/flink-operator/pkg/validation"
)

// reconcile moves the job toward the spec, one step per sync.
func (c *Controller) reconcile(ctx context.Context, sc *syncState) error {
	st := &sc.Obj.Status
	if sc.cluster != nil && sc.cluster.DeletionTimestamp != nil {
		// Nothing new goes to a cluster on its way out; it waits for this
		// session job to be deleted.
		sc.Fail(ReasonSessionCluster, "Session cluster FlinkDeployment %s/%s is being deleted; it is kept until its FlinkSessionJobs are deleted",
			sc.cluster.Namespace, sc.cluster.Name)
		sc.RequeueWithin(sc.ReconcileInterval())
		return nil
	}
	switch {
	case sc.Recorded == nil:
		return c.firstDeploy(ctx, sc)
	case st.ReconciliationStatus.State == v1beta1.ReconciliationUpgrading:
		// Finish what the log says was started, with the recorded spec; a
		// newer spec is applied once this upgrade is done.
		return c.continueUpgrade(ctx, sc)
	}
	change := jobengine.Classify(sc.Recorded.Spec, sc.Obj.Spec)
	st.ObservedGeneration = sc.Obj.Generation
	if change != jobengine.ChangeNone && change != jobengine.ChangeNonces {
		err := c.validate(sc)
		if ref := sc.Obj.Spec.Job.InitialStateSnapshotRef; err == nil && change == jobengine.ChangeRedeploy && ref != nil {
			// The running job stays as it is until the snapshot will do.
			sc.refPath, err = c.snapshotRefPath(sc.Obj, ref)
		}
		if err != nil {
			// A bad spec is reported; the last good job keeps running.
			sc.Fail(jobengine.ReasonValidationError, "%v", err)
			sc.RequeueWithin(sc.ProgressInterval())
		} else if sc.cluster != nil && !c.upgradeWaitsForSavepoint(sc, change) {
			return c.startUpgrade(ctx, sc, change)
		}
	}
	return c.steady(ctx, sc)
}

// upgradeWaitsForSavepoint: a pending legacy savepoint of the running job
// delays a spec change (upstream's rule) unless
// kubernetes.operator.job.upgrade.ignore-pending-savepoint is set in the
// new spec's configuration; steady keeps following the savepoint.
func (c *Controller) upgradeWaitsForSavepoint(sc *syncState, change jobengine.Change) bool {
	running := sc.Job != nil && sc.Obj.Status.JobStatus.State == v1beta1.JobStatusRunning
	if change == jobengine.ChangeSuspended || !running {
		return false
	}
	cfg, err := jobmanager.EffectiveConfig(sc.Cfg, sc.Obj.Spec.FlinkConfiguration)
	if err != nil || !jobengine.UpgradeBlocked(cfg, &sc.Obj.Status.JobStatus) {
		return false
	}
	sc.Log.Info(jobengine.DelayMessage, "triggerId", sc.Obj.Status.JobStatus.SavepointInfo.TriggerID)
	return true
}

// validate applies the rules the webhook applies (pkg/validation), against
// the session cluster as it is now.
func (c *Controller) validate(sc *syncState) error {
	_, err := validation.SessionJob(sc.Obj, sc.cluster, c.Config)
	return err
}

// firstDeploy records the first valid spec and deploys it: from
// spec.job.initialSavepointPath if set (also recorded as
// upgradeSavepointPath, which the snapshot controller then never
// disposes), else from empty state. A job created suspended is only
// recorded. Nothing is recorded before the session cluster exists.
func (c *Controller) firstDeploy(ctx context.Context, sc *syncState) error {
	st := &sc.Obj.Status
	st.ObservedGeneration = sc.Obj.Generation
	if err := c.validate(sc); err != nil {
		sc.Fail(jobengine.ReasonValidationError, "%v", err)
		return nil
	}
	if sc.cluster == nil {
		return nil // reported by resolveCluster, retried with backoff
	}
	restore := strings.TrimSpace(sc.Obj.Spec.Job.InitialSavepointPath)
	if ref := sc.Obj.Spec.Job.InitialStateSnapshotRef; ref != nil {
		// Resolved before anything is recorded: a reference that cannot be
		// used submits nothing, never a job from empty state.
		path, err := c.snapshotRefPath(sc.Obj, ref)
		if err != nil {
			sc.Fail(jobengine.ReasonValidationError, "%v", err)
			sc.RequeueWithin(sc.ProgressInterval())
			return nil
		}
		restore = path
	}
	spec := *sc.Obj.Spec.DeepCopy()
	encoded, err := lifecycle.Encode(spec, true)
	if err != nil {
		return err
	}
	sc.Recorded = &reconciledSpec{Spec: spec, Meta: lifecycle.Meta{APIVersion: v1beta1.SchemeGroupVersion.String(), FirstDeployment: true}}
	st.ReconciliationStatus = v1beta1.ReconciliationStatus{
		State:                   v1beta1.ReconciliationUpgrading,
		LastReconciledSpec:      encoded,
		ReconciliationTimestamp: sc.Now.UnixMilli(),
	}
	st.JobStatus.UpgradeSavepointPath = restore
	st.JobStatus.State = v1beta1.JobStatusSuspended // nothing runs yet
	return c.continueUpgrade(ctx, sc)
}

// startUpgrade records the intent to apply a changed spec (the write-ahead
// log entry, jobengine.BeginUpgrade) together with what the stop of the old
// job needs, then goes as far as one status write allows.
func (c *Controller) startUpgrade(ctx context.Context, sc *syncState, change jobengine.Change) error {
	if upgrading, err := sc.RecordSpecChange(sc.Obj.Spec, change); err != nil || !upgrading {
		return err
	}
	if c.resolveConfig(sc) != nil {
		return nil
	}
	if err := sc.BeginUpgrade(ctx, change, sc.refPath); err != nil {
		return err
	}
	return c.continueUpgrade(ctx, sc)
}

// resolveConfig recomputes the effective configuration for the recorded
// spec (its flinkConfiguration may just have changed).
func (c *Controller) resolveConfig(sc *syncState) error {
	cfg, err := jobmanager.EffectiveConfig(c.Config, sc.cluster.Spec.FlinkConfiguration)
	if err == nil {
		cfg, err = jobmanager.EffectiveConfig(cfg, sc.Recorded.Spec.FlinkConfiguration)
	}
	if err != nil {
		sc.Fail(jobengine.ReasonValidationError, "spec.flinkConfiguration: %v", err)
		return err
	}
	sc.Cfg = cfg
	return nil
}

// continueUpgrade does the next step of the upgrade the log records: stop
// the old job keeping its state, then record the new submission (or settle
// as suspended).
func (c *Controller) continueUpgrade(ctx context.Context, sc *syncState) error {
	st := &sc.Obj.Status
	if sc.cluster == nil {
		return nil // reported; nothing can be stopped or submitted
	}
	if st.JobStatus.JobID != "" && st.JobStatus.State != v1beta1.JobStatusSuspended {
		if stopped, err := c.stopJob(ctx, sc); err != nil || !stopped {
			return err
		}
	}
	if !c.ensureEnded(sc) {
		return nil
	}
	if jobengine.JobSuspended(&sc.Recorded.Spec) {
		st.ReconciliationStatus.State = v1beta1.ReconciliationDeployed
		st.JobStatus.State = v1beta1.JobStatusSuspended
		what := "empty state"
		if p := st.JobStatus.UpgradeSavepointPath; p != "" && jobengine.UpgradeMode(&sc.Recorded.Spec) != v1beta1.UpgradeModeStateless {
			what = p
		}
		sc.Event(corev1.EventTypeNormal, jobengine.ReasonSuspended, "Job suspended; resuming restores from %s", what)
		return nil
	}
	c.deploy(sc)
	return nil
}

// deploy records the next submission: a new job id (derived from the
// resource and the id it replaces) and the state it restores from
// (upgradeSavepointPath, which every path here has set). The submission
// itself is made by the next sync, once this record is written, so that a
// crash can never leave a submitted job the status does not name.
func (c *Controller) deploy(sc *syncState) {
	st := &sc.Obj.Status
	jobID := newJobID(string(sc.Obj.UID), st.JobStatus.JobID, sc.Obj.Generation)
	restore := st.JobStatus.UpgradeSavepointPath
	st.ReconciliationStatus.State = v1beta1.ReconciliationDeployed
	st.ReconciliationStatus.ReconciliationTimestamp = sc.Now.UnixMilli()
	prev := st.JobStatus
	st.JobStatus = v1beta1.JobStatus{
		JobID:                jobID,
		State:                v1beta1.JobStatusReconciling,
		UpgradeSavepointPath: restore,
		SavepointInfo:        prev.SavepointInfo,
		CheckpointInfo:       prev.CheckpointInfo,
	}
	sc.Job = nil
	sc.RequeueWithin(time.Millisecond) // submit right after the record is written
}

// steady keeps a deployed job as recorded: the recorded submission is made
// if Flink does not have it yet, the spec is marked stable once the job
// runs, snapshots are planned, and the job is looked at again soon or late.
func (c *Controller) steady(ctx context.Context, sc *syncState) error {
	st := &sc.Obj.Status
	spec := sc.Recorded.Spec
	if jobengine.JobSuspended(&spec) || sc.cluster == nil {
		return nil
	}
	js := &st.JobStatus
	if !sc.clusterReady() || !sc.jobs {
		sc.Log.V(2).Info("Waiting for the session cluster to be ready", "cluster", sc.cluster.Name,
			"jobManager", sc.cluster.Status.JobManagerDeploymentStatus)
		sc.RequeueWithin(sc.ProgressInterval())
		return nil
	}
	if sc.Job == nil {
		switch {
		case js.State == v1beta1.JobStatusReconciling && sc.Base.Status.JobStatus.JobID == js.JobID:
			c.submit(ctx, sc)
		case jobengine.UpgradeMode(&spec) == v1beta1.UpgradeModeStateless:
			// The cluster lost the job (a restart without HA): a stateless
			// job is simply submitted again, under a new id.
			sc.Event(corev1.EventTypeWarning, jobengine.ReasonJobStatusChanged, "Job %s is not known to session cluster %s any more (last seen %s); submitting it again",
				js.JobID, sc.cluster.Name, js.State)
			c.deploy(sc)
		default:
			sc.FailManualRestore(jobengine.ReasonUpgradeFailed, "Job %s (last seen %s) is not known to session cluster %s any more, so its last checkpoint cannot be read. "+
				"%s: set spec.job.initialSavepointPath to its latest checkpoint or savepoint and change spec.job.savepointRedeployNonce",
				js.JobID, js.State, sc.cluster.Name, manualRestore)
			sc.RequeueWithin(jobengine.RetryFailed)
		}
		return nil
	}
	healthy := js.State == v1beta1.JobStatusRunning
	rs := &st.ReconciliationStatus
	if healthy && rs.LastStableSpec != rs.LastReconciledSpec {
		rs.LastStableSpec = rs.LastReconciledSpec
	}
	// New snapshots only once RUNNING is recorded: a snapshot created in the
	// sync that observes RUNNING would reach the snapshot controller before
	// the status does, and be abandoned as "not running".
	recordedRunning := sc.Base.Status.JobStatus.State == v1beta1.JobStatusRunning
	if healthy && !recordedRunning {
		sc.RequeueWithin(time.Second)
	}
	if err := c.reconcileSnapshots(ctx, sc, healthy && recordedRunning); err != nil {
		return err
	}
	if healthy {
		sc.RequeueWithin(sc.ReconcileInterval())
	} else {
		sc.RequeueWithin(sc.ProgressInterval())
	}
	return nil
}

// snapshotRefPath resolves spec.job.initialStateSnapshotRef of sj
// (snapshotref.Path: a cross-namespace reference needs the webhook's stamp).
func (c *Controller) snapshotRefPath(sj *v1beta1.FlinkSessionJob, ref *v1beta1.SnapshotReference) (string, error) {
	return snapshotref.Path(c.Caches, c.Config, c.ReviewKeys, "FlinkSessionJob", sj, ref)
}
