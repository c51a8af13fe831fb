package jobengine

import (
	"context"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/config"
	"github.com/flinkops/flink-operator/pkg/lifecycle"
	"github.com/flinkops/flink-operator/pkg/reasons"
)

// Driver is what a job controller gives Reconcile, bound to one sync: the
// stop protocol's JobKind and the steps that differ between an application
// cluster (objects built and torn down) and a session job (a submission to
// a cluster that outlives it).
type Driver[S Spec[S]] interface {
	JobKind
	// Validate checks the resource's spec by the webhook's rules (against
	// the recorded one, if any) and gives the spec to record with its
	// effective configuration.
	Validate() (S, config.Config, error)
	// RestorePath resolves spec.job.initialStateSnapshotRef.
	RestorePath(ref *v1beta1.SnapshotReference) (string, error)
	// CanRun: the job has somewhere to run (a session job's cluster);
	// without it nothing is recorded, stopped or submitted.
	CanRun() bool
	// Ended: what the previous deploy left is gone (an application's
	// Deployments) or has ended (a session job's job); else it is asked
	// for and waited for.
	Ended() bool
	// Suspended settles the kind's own status of a job now suspended and
	// says what happened, for the Suspended event.
	Suspended() string
	// NextJobID names the job the next deploy starts.
	NextJobID() string
	// Deploy makes the recorded spec run as jobID from restore, in the
	// writes after the status write that records it; false when it cannot
	// (reported), and nothing is recorded.
	Deploy(ctx context.Context, jobID, restore string) bool
	// Steady keeps a deployed job as recorded (drift, submission) and says
	// how the engine ends the steady step.
	Steady(ctx context.Context) (SteadyAnswer, error)
	// CheckpointTrigger: the running Flink version can trigger checkpoints.
	CheckpointTrigger() bool

	// What the kind may do.

	// InPlaceScaling: the job may be rescaled in place (scale.go): its
	// cluster runs the recorded spec's configuration (State.Cfg), which
	// says whether its scheduler is the adaptive one. A session job's
	// cluster is another resource's: false.
	InPlaceScaling() bool
	// HealthCheck is the kind's check of a running job's health (an
	// application cluster's ClusterHealthInfo), nil when the kind has none
	// (a session job).
	HealthCheck() HealthChecker
	// RollbackSupported: a deployed spec that does not become stable in
	// time may be rolled back (rollback.go; upstream: FlinkDeployments
	// only).
	RollbackSupported() bool
}

// Reconcile moves the job toward its spec, one step per sync: the first
// deploy, the next step of a recorded upgrade, a new spec change, or else
// the steady state.
func (s *State[T, S]) Reconcile(ctx context.Context, d Driver[S]) error {
	st := s.Status()
	switch {
	case s.recorded == nil:
		return s.firstDeploy(ctx, d)
	case st.Reconciliation.State == v1beta1.ReconciliationUpgrading:
		// Finish what the log says was started, with the recorded spec; a
		// newer spec is applied once this upgrade is done.
		return s.continueUpgrade(ctx, d)
	case st.Reconciliation.State == v1beta1.ReconciliationRollingBack:
		// Likewise a rollback (rollback.go).
		return s.continueRollback(ctx, d)
	}
	change := s.classify()
	if (change == ChangeNone || change == ChangeNonces) && s.rollbackDue(d) {
		*st.ObservedGeneration = s.obj.GetGeneration()
		return s.beginRollback(ctx, d)
	}
	if change == ChangeNone {
		*st.ObservedGeneration = s.obj.GetGeneration()
		return s.steady(ctx, d)
	}
	spec, cfg, err := d.Validate()
	restore := ""
	if ref := jobOf(&spec); err == nil && change == ChangeRedeploy && ref != nil && ref.InitialStateSnapshotRef != nil {
		// The running job stays as it is until the snapshot will do.
		restore, err = d.RestorePath(ref.InitialStateSnapshotRef)
	}
	if err == nil && change == ChangeUpgrade && JobSuspended(&s.recorded.Spec) {
		// A resume: it stays suspended until it has a restore point.
		var ok bool
		if restore, ok = s.resumeFrom(spec); !ok {
			*st.ObservedGeneration = s.obj.GetGeneration()
			s.RequeueWithin(RetryFailed)
			return nil
		}
	}
	waits := err == nil && change != ChangeNonces && d.CanRun() && s.upgradeWaitsForSavepoint(cfg, change)
	if !waits {
		// Handled now (applied, rejected, or nothing to apply); a change
		// held back by a pending savepoint is observed when it goes ahead.
		*st.ObservedGeneration = s.obj.GetGeneration()
	}
	switch {
	case err != nil:
		// A bad spec is reported; the last good job keeps running.
		s.Fail(reasons.ReasonValidationError, "%v", err)
		s.RequeueWithin(s.ProgressInterval())
	case change == ChangeNonces, !d.CanRun(), waits:
		// Steady creates manual snapshots once the job runs, and follows
		// a pending savepoint.
	case change == ChangeUpgrade && s.scaleInPlace(ctx, d, spec, cfg):
		// Rescaled without a restart and recorded as deployed (scale.go);
		// the steady state keeps the new spec.
	default:
		if upgrading, err := s.recordSpecChange(spec, change); err != nil || !upgrading {
			return err
		}
		s.Cfg = cfg
		if err := s.beginUpgrade(ctx, change, restore); err != nil {
			return err
		}
		return s.continueUpgrade(ctx, d)
	}
	return s.steady(ctx, d)
}

// upgradeWaitsForSavepoint: a pending legacy savepoint of the running job
// delays a spec change (upstream's rule) unless
// kubernetes.operator.job.upgrade.ignore-pending-savepoint is set, read from
// the new spec's configuration so that the change itself can say so.
func (s *State[T, S]) upgradeWaitsForSavepoint(cfg config.Config, change Change) bool {
	js := s.JobStatus()
	if change == ChangeSuspended || !s.jobHealthy() || !upgradeBlocked(cfg, js) {
		return false
	}
	s.log.Info(delayMessage, "triggerId", js.SavepointInfo.TriggerID)
	return true
}

// firstDeploy records the first valid spec and deploys it: from
// spec.job.initialSavepointPath or the snapshot
// spec.job.initialStateSnapshotRef names if set (also recorded as
// upgradeSavepointPath, which the snapshot controller then never
// disposes), else from empty state. A job created suspended is only
// recorded.
func (s *State[T, S]) firstDeploy(ctx context.Context, d Driver[S]) error {
	st := s.Status()
	*st.ObservedGeneration = s.obj.GetGeneration()
	spec, cfg, err := d.Validate()
	if err != nil {
		s.Fail(reasons.ReasonValidationError, "%v", err)
		return nil
	}
	if !d.CanRun() {
		return nil // reported by the controller
	}
	job := jobOf(&spec)
	var restore string
	if job != nil {
		restore = strings.TrimSpace(job.InitialSavepointPath)
		if job.InitialStateSnapshotRef != nil {
			// Resolved before anything is recorded: a reference that cannot
			// be used deploys nothing, never a job from empty state.
			if restore, err = d.RestorePath(job.InitialStateSnapshotRef); err != nil {
				s.Fail(reasons.ReasonValidationError, "%v", err)
				s.RequeueWithin(s.ProgressInterval())
				return nil
			}
		}
	}
	encoded, err := lifecycle.Encode(spec, true)
	if err != nil {
		return err
	}
	s.recorded = &lifecycle.Reconciled[S]{Spec: spec, Meta: lifecycle.Meta{APIVersion: v1beta1.SchemeGroupVersion.String(), FirstDeployment: true}}
	s.Cfg = cfg
	*st.Reconciliation = v1beta1.ReconciliationStatus{
		State:                   v1beta1.ReconciliationUpgrading,
		LastReconciledSpec:      encoded,
		ReconciliationTimestamp: s.now.UnixMilli(),
	}
	if job != nil {
		st.Job.UpgradeSavepointPath = restore
		st.Job.State = v1beta1.JobStatusSuspended // nothing runs yet
	}
	before := s.base.JobResourceStatus()
	if err := s.continueUpgrade(ctx, d); err != nil || !s.deployRefused {
		return err
	}
	// The deploy could not start (the driver reported why) and created
	// nothing: the resource is still before its first deployment, as
	// upstream shows it (lifecycle FAILED with the error, no job state),
	// not a suspended job being upgraded; the next sync starts over.
	s.recorded = nil
	*st.Reconciliation, *st.Job = *before.Reconciliation, *before.Job
	return nil
}

// continueUpgrade does the next step of the upgrade the log records: stop
// the old job keeping its state, end what its deploy left, then deploy the
// recorded spec (or settle as suspended).
func (s *State[T, S]) continueUpgrade(ctx context.Context, d Driver[S]) error {
	if !d.CanRun() {
		return nil // reported; nothing can be stopped or deployed
	}
	st := s.Status()
	if js := st.Job; jobOf(&s.recorded.Spec) != nil && js.JobID != "" && js.State != v1beta1.JobStatusSuspended {
		if stopped, err := s.stopJob(ctx, d); err != nil || !stopped {
			return err
		}
	}
	if !d.Ended() {
		return nil
	}
	if JobSuspended(&s.recorded.Spec) {
		st.Reconciliation.State = v1beta1.ReconciliationDeployed
		st.Job.State = v1beta1.JobStatusSuspended
		what := "empty state"
		if p := st.Job.UpgradeSavepointPath; p != "" && UpgradeMode(&s.recorded.Spec) != v1beta1.UpgradeModeStateless {
			what = p
		}
		suspended := d.Suspended()
		if s.base.JobResourceStatus().Reconciliation.LastReconciledSpec != "" {
			// Not for a job created suspended: nothing was suspended, and
			// its first status write is its only write (docs/performance.md).
			s.Event(corev1.EventTypeNormal, reasons.ReasonSuspended, "%s; resuming restores from %s", suspended, what)
		}
		return nil
	}
	s.deploy(ctx, d)
	return nil
}

// deploy records the recorded spec as deployed, with a new job (the id
// NextJobID gives) restoring from upgradeSavepointPath, which every path
// here has set (initialSavepointPath, the upgrade savepoint, the last
// checkpoint, or "" for stateless), and has the driver deploy it after the
// record is written, so that a crash never leaves a job the status does
// not name.
func (s *State[T, S]) deploy(ctx context.Context, d Driver[S]) {
	st := s.Status()
	hasJob := jobOf(&s.recorded.Spec) != nil
	jobID, restore := "", ""
	if hasJob {
		jobID, restore = d.NextJobID(), st.Job.UpgradeSavepointPath
	}
	if !d.Deploy(ctx, jobID, restore) {
		s.deployRefused = true
		return
	}
	if st.Reconciliation.State == v1beta1.ReconciliationRollingBack {
		st.Reconciliation.State = v1beta1.ReconciliationRolledBack
	} else {
		st.Reconciliation.State = v1beta1.ReconciliationDeployed
	}
	st.Reconciliation.ReconciliationTimestamp = s.now.UnixMilli()
	prev := *st.Job
	*st.Job = v1beta1.JobStatus{
		JobID:                jobID,
		UpgradeSavepointPath: restore,
		SavepointInfo:        prev.SavepointInfo,
		CheckpointInfo:       prev.CheckpointInfo,
	}
	if hasJob {
		st.Job.State = v1beta1.JobStatusReconciling
	}
}

// steady keeps a deployed job as recorded, unless it is suspended (resuming
// is a spec change) or has nowhere to run.
func (s *State[T, S]) steady(ctx context.Context, d Driver[S]) error {
	if JobSuspended(&s.recorded.Spec) || !d.CanRun() {
		return nil
	}
	if restarted, err := s.restartIfNeeded(ctx, d); restarted || err != nil { // health.go
		return err
	}
	answer, err := d.Steady(ctx)
	switch {
	case err != nil:
		return err
	case answer.Redeploy:
		s.deploy(ctx, d)
		return nil
	case answer.Kept:
		return s.keepSteady(ctx, d, answer.Healthy, answer.PlanSnapshots)
	}
	return nil
}

// logFullyReconciled logs upstream's line for a job that runs its spec
// healthy with nothing left to do ("[<ns>/<name>] Resource fully
// reconciled, nothing to do", which upstream's e2e scripts wait for in the
// leader's log), once per generation and operator process rather than at
// every sync as upstream: a new leader logs it at its first steady sync.
func (s *State[T, S]) logFullyReconciled() {
	gen := s.obj.GetGeneration()
	if prev, ok := s.e.reconciledLogged.Load(s.obj.GetUID()); ok && prev.(int64) == gen {
		return
	}
	s.e.reconciledLogged.Store(s.obj.GetUID(), gen)
	s.log.Info("[" + s.key + "] Resource fully reconciled, nothing to do")
}

// SteadyAnswer is what a Driver's Steady found of a deployed job.
type SteadyAnswer struct {
	// Kept: the job is kept as recorded, and the engine ends the steady
	// step (keepSteady). Neither Kept nor Redeploy: the driver waits or
	// reported why it cannot keep the job (and asked when to look again).
	Kept bool
	// Healthy (with Kept): the deployed spec is healthy; it becomes the
	// stable one and the job is looked at again late, not soon.
	Healthy bool
	// PlanSnapshots (with Kept): the job's snapshots are planned (its
	// JobManager answers).
	PlanSnapshots bool
	// Redeploy: the job is gone and is deployed again from the recorded
	// spec (State.deploy), as a new job.
	Redeploy bool
}

// keepSteady ends a steady sync: the spec is marked stable once the job is
// healthy, the job's snapshots are planned (when plan: its JobManager
// answers), and the job is looked at again soon or late.
func (s *State[T, S]) keepSteady(ctx context.Context, d Driver[S], healthy, plan bool) error {
	rs := s.Status().Reconciliation
	// Not once rolled back: lastReconciledSpec is then the spec that
	// never became stable (rollback.go).
	if healthy && rs.State == v1beta1.ReconciliationDeployed && rs.LastStableSpec != rs.LastReconciledSpec {
		rs.LastStableSpec = rs.LastReconciledSpec
	}
	if healthy && rs.State == v1beta1.ReconciliationDeployed {
		s.logFullyReconciled()
	}
	if plan {
		// New snapshots only once RUNNING is recorded: a snapshot created
		// in the sync that observes RUNNING would reach the snapshot
		// controller before the status does, and be abandoned as "not
		// running". The next sync, right after this status write, takes it.
		recordedRunning := s.base.JobResourceStatus().Job.State == v1beta1.JobStatusRunning
		if healthy && !recordedRunning {
			s.RequeueWithin(time.Second)
		}
		err := s.reconcileSnapshots(ctx, SnapshotInputs{
			Running:     healthy && recordedRunning && (rs.State == v1beta1.ReconciliationDeployed || rs.State == v1beta1.ReconciliationRolledBack),
			Checkpoints: d.CheckpointTrigger(),
			specValid:   func() bool { _, _, err := d.Validate(); return err == nil },
			Healthy:     s.jobHealthy(),
		})
		if err != nil {
			return err
		}
	}
	if healthy {
		s.RequeueWithin(s.ReconcileInterval())
	} else {
		s.RequeueWithin(s.ProgressInterval())
	}
	return nil
}
