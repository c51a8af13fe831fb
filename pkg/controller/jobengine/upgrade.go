package jobengine

import (
	"context"
	"strings"

	corev1 "k8s.io/api/core/v1"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/lifecycle"
)

// RecordSpecChange makes spec the recorded spec (Recorded) for an upgrade,
// the first half of its write-ahead entry. The manual snapshot nonces stay
// as they were recorded: a nonce that changed together with the rest is
// honoured once the new job runs. A change while the job stays suspended is
// only recorded (applied on resume): upgrading is then false and nothing
// else is to be done.
func (s *State[T, S]) RecordSpecChange(spec S, change Change) (upgrading bool, err error) {
	old := s.Recorded
	spec = deepCopySpec(spec)
	if job, rec := JobOf(&spec), JobOf(&old.Spec); job != nil && rec != nil {
		job.SavepointTriggerNonce, job.CheckpointTriggerNonce = rec.SavepointTriggerNonce, rec.CheckpointTriggerNonce
	}
	wasSuspended := JobSuspended(&old.Spec)
	encoded, err := lifecycle.Encode(spec, wasSuspended && old.Meta.FirstDeployment)
	if err != nil {
		return false, err
	}
	if change == ChangeSuspended {
		rs := s.Status().Reconciliation
		rs.LastReconciledSpec = encoded
		rs.ReconciliationTimestamp = s.Now.UnixMilli()
		s.Event(corev1.EventTypeNormal, ReasonSpecChanged, "Spec changed while the job is suspended; it is applied when the job resumes")
		s.Recorded = &lifecycle.Reconciled[S]{Spec: spec, Meta: old.Meta}
		return false, nil
	}
	s.Recorded = &lifecycle.Reconciled[S]{Spec: spec, Meta: lifecycle.Meta{APIVersion: old.Meta.APIVersion, FirstDeployment: wasSuspended && old.Meta.FirstDeployment}}
	s.wasSuspended, s.firstDeployment = wasSuspended, old.Meta.FirstDeployment
	return true, nil
}

// BeginUpgrade writes the intent to apply the spec RecordSpecChange
// recorded (reconciliationStatus UPGRADING with it) together with what the
// stop of the old job needs: the state the new job restores from when it
// is known now, and jobStatus SUSPENDED when there is nothing to stop.
// refPath is the resolved spec.job.initialStateSnapshotRef of a
// savepointRedeployNonce change. The controller's continueUpgrade then goes
// as far as one status write allows.
func (s *State[T, S]) BeginUpgrade(ctx context.Context, change Change, refPath string) error {
	spec := &s.Recorded.Spec
	encoded, err := lifecycle.Encode(*spec, s.Recorded.Meta.FirstDeployment)
	if err != nil {
		return err
	}
	st := s.Status()
	st.Reconciliation.State = v1beta1.ReconciliationUpgrading
	st.Reconciliation.LastReconciledSpec = encoded
	st.Reconciliation.ReconciliationTimestamp = s.Now.UnixMilli()
	js := st.Job
	lifecycle.ClearStopTrigger(js)
	// A legacy savepoint/checkpoint in flight belongs to the job being
	// stopped: drop it (with its failure event) before the stop reuses the
	// trigger fields.
	s.ResetLegacyTriggers()

	job, mode := JobOf(spec), UpgradeMode(spec)
	switch {
	case change == ChangeRedeploy:
		// Upstream: cancel statelessly, restart from initialSavepointPath
		// (or, ours, the snapshot initialStateSnapshotRef names).
		js.UpgradeSavepointPath = strings.TrimSpace(job.InitialSavepointPath)
		if job.InitialStateSnapshotRef != nil {
			js.UpgradeSavepointPath = refPath
		}
		js.State = v1beta1.JobStatusSuspended
		s.Event(corev1.EventTypeNormal, ReasonSpecChanged, "savepointRedeployNonce changed: redeploying from %s", js.UpgradeSavepointPath)
		return nil
	case s.wasSuspended:
		// Resume: the job was stopped and its state recorded at suspend.
		if mode == v1beta1.UpgradeModeStateless && !s.firstDeployment {
			js.UpgradeSavepointPath = ""
		}
		js.State = v1beta1.JobStatusSuspended
		s.Event(corev1.EventTypeNormal, ReasonSpecChanged, "Resuming job (upgradeMode %s)", mode)
		return nil
	case job == nil || mode == v1beta1.UpgradeModeStateless:
		// Nothing to keep: the teardown or a cancel ends the job.
		js.UpgradeSavepointPath = ""
		if job != nil {
			js.State = v1beta1.JobStatusSuspended
		}
	case mode == v1beta1.UpgradeModeLastState && s.Client != nil && s.Job != nil:
		// Best-effort early record of the last state, in the same write as
		// the intent; the stop refines it once the job can no longer
		// checkpoint.
		if path, err := s.LatestState(ctx); err == nil {
			js.UpgradeSavepointPath = path
		}
	}
	if change == ChangeSuspend {
		s.Event(corev1.EventTypeNormal, ReasonSuspended, "Suspending the job (upgradeMode %s)", mode)
	} else {
		s.Event(corev1.EventTypeNormal, ReasonSpecChanged, "Spec changed, upgrading (upgradeMode %s)", mode)
	}
	return nil
}
