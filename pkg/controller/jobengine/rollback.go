package jobengine

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/config"
	"github.com/flinkops/flink-operator/pkg/lifecycle"
	"github.com/flinkops/flink-operator/pkg/reasons"
)

// Rollback of an upgrade that does not become stable in time
// (kubernetes.operator.deployment.rollback.enabled,
// kubernetes.operator.deployment.readiness.timeout), upstream's
// AbstractFlinkResourceReconciler.shouldRollBack and its rollback flow,
// FlinkDeployments only. The status keeps upstream's layout, and is the
// write-ahead log of the rollback:
//
//	DEPLOYED → ROLLING_BACK   beginRollback: the target is lastStableSpec,
//	                          lastReconciledSpec stays the spec rolled back from
//	ROLLING_BACK → ROLLED_BACK continueRollback: the job of the failed spec is
//	                          stopped keeping its state (upgradeSavepointPath:
//	                          the state it was deployed from, the upgrade
//	                          savepoint, or its newer latest checkpoint), its
//	                          cluster torn down and lastStableSpec deployed
//	                          (State.deploy)
//	ROLLED_BACK → UPGRADING   the user changes the spec again (compared with
//	                          the spec rolled back from: the failed spec is
//	                          never retried on its own)
//	ROLLED_BACK → DEPLOYED    the user sets the spec back to the stable one
//	                          (acceptRollback; nothing is redeployed)
//
// While the log says ROLLING_BACK or ROLLED_BACK, recorded is lastStableSpec
// (what is being deployed or runs) and rolledBackFrom lastReconciledSpec.

// decodeRollback makes Recorded the spec a rollback deploys or deployed
// (lastStableSpec) and keeps lastReconciledSpec as rolledBackFrom.
func (s *State[T, S]) decodeRollback() error {
	rs := s.base.JobResourceStatus().Reconciliation
	if s.recorded == nil || (rs.State != v1beta1.ReconciliationRollingBack && rs.State != v1beta1.ReconciliationRolledBack) {
		return nil
	}
	stable, err := lifecycle.Decode[S](rs.LastStableSpec)
	if err != nil || stable == nil {
		// Nothing to roll back to: the recorded spec stays what runs.
		return err
	}
	s.rolledBackFrom, s.recorded = s.recorded, stable
	return nil
}

// classify compares the current spec with the recorded one, or once rolled
// back with the spec rolled back from; a spec set back to the stable one
// accepts the rollback (acceptRollback).
func (s *State[T, S]) classify() Change {
	current := s.obj.CurrentSpec()
	if s.rolledBackFrom == nil {
		return Classify(s.recorded.Spec, current)
	}
	if c := Classify(s.recorded.Spec, current); c == ChangeNone || c == ChangeNonces {
		s.acceptRollback()
		return c
	}
	return Classify(s.rolledBackFrom.Spec, current)
}

// acceptRollback: the spec is the stable one again; it is what runs, so the
// log records it as deployed and stable without a redeploy.
func (s *State[T, S]) acceptRollback() {
	rs := s.Status().Reconciliation
	if rs.State != v1beta1.ReconciliationRolledBack {
		return // a rollback in flight finishes first
	}
	rs.State = v1beta1.ReconciliationDeployed
	rs.LastReconciledSpec = rs.LastStableSpec
	s.rolledBackFrom = nil
	s.log.Info("Spec set back to the last stable spec, which runs: rollback accepted")
}

// rollbackDue says whether the deployed spec is to be rolled back now
// (upstream's shouldRollBack): rollbacks are on, the spec deployed (DEPLOYED,
// not yet stable, not already rolled back) is not healthy
// kubernetes.operator.deployment.readiness.timeout after its deploy, and
// there is a stable spec to go back to that runs a job (never one the user
// had suspended) on the same Flink version.
func (s *State[T, S]) rollbackDue(d Driver[S]) bool {
	if !d.RollbackSupported() {
		return false // upstream: FlinkDeployments only
	}
	rs := s.Status().Reconciliation
	if rs.State != v1beta1.ReconciliationDeployed || rs.LastStableSpec == "" || rs.LastStableSpec == rs.LastReconciledSpec || !d.CanRun() {
		return false
	}
	if on, err := s.Cfg.Bool(config.KeyDeploymentRollbackEnabled); err != nil || !on {
		return false
	}
	timeout, err := s.Cfg.Duration(config.KeyDeploymentReadinessTimeout)
	if err != nil || timeout <= 0 {
		return false
	}
	deployedAt := time.UnixMilli(rs.ReconciliationTimestamp)
	if s.now.Sub(deployedAt) <= timeout || s.readyNow() {
		if wait := deployedAt.Add(timeout).Sub(s.now); wait > 0 && !s.readyNow() {
			s.RequeueWithin(wait + time.Second) // look again when it is due
		}
		return false
	}
	stable, err := lifecycle.Decode[S](rs.LastStableSpec)
	switch {
	case err != nil || stable == nil:
		s.log.Info("Not rolling back: the last stable spec cannot be read", "err", err)
		return false
	case JobSuspended(&stable.Spec):
		// Upstream: never back to a job the user had suspended.
		return false
	case stable.Spec.GetFlinkVersion() != s.recorded.Spec.GetFlinkVersion():
		s.log.V(1).Info("Not rolling back across a Flink version change", "stable", stable.Spec.GetFlinkVersion(), "deployed", s.recorded.Spec.GetFlinkVersion())
		return false
	}
	return true
}

// readyNow: the spec deployed is healthy in this sync, the condition on
// which keepSteady marks it stable: the JobManager answers and the job (if
// any) runs, or finished on its own.
func (s *State[T, S]) readyNow() bool {
	if s.Client == nil {
		return false
	}
	if jobOf(&s.recorded.Spec) == nil {
		return true
	}
	switch s.JobStatus().State {
	case v1beta1.JobStatusRunning, v1beta1.JobStatusFinished:
		return true
	}
	return false
}

// beginRollback writes the intent to roll back (ROLLING_BACK; the target,
// lastStableSpec, is already in the status) before anything is stopped or
// torn down, with upstream's Rollback event, and goes on as far as this
// sync allows.
func (s *State[T, S]) beginRollback(ctx context.Context, d Driver[S]) error {
	st := s.Status()
	timeout, _ := s.Cfg.Duration(config.KeyDeploymentReadinessTimeout)
	deployedAt := time.UnixMilli(st.Reconciliation.ReconciliationTimestamp)
	failed := s.recorded
	stable, err := lifecycle.Decode[S](st.Reconciliation.LastStableSpec)
	if err != nil {
		return err
	}
	st.Reconciliation.State = v1beta1.ReconciliationRollingBack
	st.Reconciliation.ReconciliationTimestamp = s.now.UnixMilli()
	s.rolledBackFrom, s.recorded = failed, stable
	js := st.Job
	lifecycle.ClearStopTrigger(js)
	s.resetLegacyTriggers() // a legacy snapshot in flight belongs to the job being stopped
	if jobOf(&failed.Spec) != nil && UpgradeMode(&failed.Spec) == v1beta1.UpgradeModeStateless {
		// Upstream: a stateless failed spec is rolled back statelessly;
		// the teardown ends its job.
		js.UpgradeSavepointPath = ""
		js.State = v1beta1.JobStatusSuspended
	}
	s.log.Info("Rolling back failed deployment", "deployedAt", deployedAt, "readinessTimeout", timeout,
		"jobId", js.JobID, "jobState", js.State, "job", d.Describe())
	s.Event(corev1.EventTypeNormal, reasons.ReasonRollback, "Rolling back failed deployment: the spec deployed at %s was not stable within %s (%s); "+
		"redeploying the last stable spec with the job's state", deployedAt.UTC().Format(time.RFC3339), timeout, config.KeyDeploymentReadinessTimeout)
	return s.continueRollback(ctx, d)
}

// continueRollback does the next step of the rollback the log records: stop
// the failed spec's job keeping its state, end what its deploy left, then
// deploy the stable spec from that state (ROLLED_BACK).
func (s *State[T, S]) continueRollback(ctx context.Context, d Driver[S]) error {
	if !d.CanRun() {
		return nil
	}
	st := s.Status()
	if js := st.Job; jobOf(&s.recorded.Spec) != nil && js.JobID != "" && js.State != v1beta1.JobStatusSuspended {
		if !s.stopForRollback(ctx, d) {
			return nil
		}
	}
	if !d.Ended() {
		return nil
	}
	s.deploy(ctx, d)
	if st.Reconciliation.State == v1beta1.ReconciliationRolledBack {
		from := "empty state"
		if p := st.Job.UpgradeSavepointPath; p != "" {
			from = p
		}
		if jobOf(&s.recorded.Spec) == nil {
			from = "a new session cluster"
		}
		s.Event(corev1.EventTypeNormal, reasons.ReasonRollback, "Rolled back to the last stable spec, from %s; the failed spec is not retried until the spec changes", from)
	}
	return nil
}

// stopForRollback stops the job of the failed spec (or, for a restart, the
// rolled-back job). As upstream, its state is kept the last-state way
// whatever its upgrade mode (a stop-with-savepoint of a job that is not
// healthy would not complete): the newest checkpoint or savepoint Flink
// reports, else the state it was deployed from (the upgrade savepoint). A
// job whose last state cannot be known is not stopped ("Manual restore
// required"), never restarted from older state. (A stateless rollback
// marks the job stopped in beginRollback.)
func (s *State[T, S]) stopForRollback(ctx context.Context, k JobKind) bool {
	js := s.JobStatus()
	if handled, stopped := k.Unreachable(); handled {
		if stopped {
			s.finishStop(js.UpgradeSavepointPath)
		}
		return stopped
	}
	return s.stopLastState(ctx, k)
}

// restartRolledBack is State.Restart (health.go: a FAILED job with
// job.restart.failed, an unhealthy one) of a rolled-back job: the stable
// spec it runs is redeployed through the rollback's own steps (ROLLING_BACK,
// then ROLLED_BACK again), so that lastReconciledSpec stays the failed spec,
// which a restart recorded as UPGRADING would deploy.
func (s *State[T, S]) restartRolledBack(ctx context.Context, d Driver[S], typ, reason, msg string) error {
	st := s.Status()
	st.Reconciliation.State = v1beta1.ReconciliationRollingBack
	st.Reconciliation.ReconciliationTimestamp = s.now.UnixMilli()
	js := st.Job
	lifecycle.ClearStopTrigger(js)
	s.resetLegacyTriggers()
	if UpgradeMode(&s.recorded.Spec) == v1beta1.UpgradeModeStateless {
		js.UpgradeSavepointPath = ""
		js.State = v1beta1.JobStatusSuspended
	}
	s.Event(typ, reason, "%s", msg)
	return s.continueRollback(ctx, d)
}
