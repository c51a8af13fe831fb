package jobengine

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/lifecycle"
	"github.com/flinkops/flink-operator/pkg/reasons"
	"github.com/flinkops/flink-operator/pkg/snapshotrules"
)

// recordSpecChange makes spec the recorded spec (Recorded) for an upgrade,
// the first half of its write-ahead entry. The manual snapshot nonces stay
// as they were recorded: a nonce that changed together with the rest is
// honoured once the new job runs. A change while the job stays suspended is
// only recorded (applied on resume): upgrading is then false and nothing
// else is to be done.
func (s *State[T, S]) recordSpecChange(spec S, change Change) (upgrading bool, err error) {
	old := s.recorded
	spec = spec.Copy()
	if job, rec := jobOf(&spec), jobOf(&old.Spec); job != nil && rec != nil {
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
		rs.ReconciliationTimestamp = s.now.UnixMilli()
		s.Event(corev1.EventTypeNormal, reasons.ReasonSpecChanged, "Spec changed while the job is suspended; it is applied when the job resumes")
		s.recorded = &lifecycle.Reconciled[S]{Spec: spec, Meta: old.Meta}
		return false, nil
	}
	s.recorded = &lifecycle.Reconciled[S]{Spec: spec, Meta: lifecycle.Meta{APIVersion: old.Meta.APIVersion, FirstDeployment: wasSuspended && old.Meta.FirstDeployment}}
	s.wasSuspended, s.firstDeployment = wasSuspended, old.Meta.FirstDeployment
	return true, nil
}

// beginUpgrade writes the intent to apply the spec recordSpecChange
// recorded (reconciliationStatus UPGRADING with it) together with what the
// stop of the old job needs: the state the new job restores from when it
// is known now, and jobStatus SUSPENDED when there is nothing to stop.
// refPath is the resolved spec.job.initialStateSnapshotRef of a
// savepointRedeployNonce change, or for a resume the state resumeFrom
// chose. The controller's continueUpgrade then goes as far as one status
// write allows.
func (s *State[T, S]) beginUpgrade(ctx context.Context, change Change, restore string) error {
	spec := &s.recorded.Spec
	encoded, err := lifecycle.Encode(*spec, s.recorded.Meta.FirstDeployment)
	if err != nil {
		return err
	}
	st := s.Status()
	st.Reconciliation.State = v1beta1.ReconciliationUpgrading
	st.Reconciliation.LastReconciledSpec = encoded
	st.Reconciliation.ReconciliationTimestamp = s.now.UnixMilli()
	js := st.Job
	lifecycle.ClearStopTrigger(js)
	// A legacy savepoint/checkpoint in flight belongs to the job being
	// stopped: drop it (with its failure event) before the stop reuses the
	// trigger fields.
	s.resetLegacyTriggers()

	job, mode := jobOf(spec), UpgradeMode(spec)
	switch {
	case change == ChangeRedeploy:
		// Upstream: cancel statelessly, restart from initialSavepointPath
		// (or, ours, the snapshot initialStateSnapshotRef names).
		js.UpgradeSavepointPath = strings.TrimSpace(job.InitialSavepointPath)
		if job.InitialStateSnapshotRef != nil {
			js.UpgradeSavepointPath = restore
		}
		js.State = v1beta1.JobStatusSuspended
		s.Event(corev1.EventTypeNormal, reasons.ReasonSpecChanged, "savepointRedeployNonce changed: redeploying from %s", js.UpgradeSavepointPath)
		return nil
	case s.wasSuspended:
		// Resume: the job was stopped and its state recorded at suspend.
		js.UpgradeSavepointPath = restore
		js.State = v1beta1.JobStatusSuspended
		s.Event(corev1.EventTypeNormal, reasons.ReasonSpecChanged, "Resuming job (upgradeMode %s)", mode)
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
		if path, err := s.latestState(ctx); err == nil {
			js.UpgradeSavepointPath = path
		}
	}
	if change == ChangeSuspend {
		s.Event(corev1.EventTypeNormal, reasons.ReasonSuspended, "Suspending the job (upgradeMode %s)", mode)
	} else {
		s.Event(corev1.EventTypeNormal, reasons.ReasonSpecChanged, "Spec changed, upgrading (upgradeMode %s)", mode)
	}
	return nil
}

// resumeFrom is the state a suspended job resumes from with spec, decided
// before the resume is recorded: the recorded restore point
// (lifecycle.RestorePath, the legacy lastSavepoint included), empty state
// for a stateless job that ran before, or what it was created with. A job
// that ran and kept state, whose status names no restore point, never
// starts empty unless the spec says so: with allowNonRestoredState it
// starts empty (a Warning says so), with initialSavepointPath it starts
// from that; otherwise ok is false, the job stays suspended and the error
// says how to go on.
func (s *State[T, S]) resumeFrom(spec S) (restore string, ok bool) {
	js := s.JobStatus()
	first := s.recorded.Meta.FirstDeployment
	if UpgradeMode(&spec) == v1beta1.UpgradeModeStateless && !first {
		return "", true
	}
	if p := lifecycle.RestorePath(js); p != "" || first {
		return p, true
	}
	had := s.stateEvidence()
	if had == "" {
		// Stopped before it had any state to keep.
		return "", true
	}
	job := jobOf(&spec)
	switch {
	case strings.TrimSpace(job.InitialSavepointPath) != "":
		p := strings.TrimSpace(job.InitialSavepointPath)
		s.Event(corev1.EventTypeWarning, reasons.ReasonUpgradeFailed, "No restore point is recorded for job %s although %s; resuming from spec.job.initialSavepointPath %s", js.JobID, had, p)
		return p, true
	case job.AllowNonRestoredState != nil && *job.AllowNonRestoredState:
		s.Event(corev1.EventTypeWarning, reasons.ReasonUpgradeFailed, "No restore point is recorded for job %s although %s; resuming from empty state as spec.job.allowNonRestoredState allows", js.JobID, had)
		return "", true
	}
	s.FailManualRestore(reasons.ReasonUpgradeFailed, "Cannot resume job %s: %s, but neither status.jobStatus.upgradeSavepointPath nor savepointInfo.lastSavepoint names a state to restore, "+
		"and it is never started from empty state unasked. %s: set spec.job.initialSavepointPath to the state to resume from, "+
		"or set spec.job.allowNonRestoredState: true to start from empty state", js.JobID, had, lifecycle.ManualRestore)
	return "", false
}

// stateEvidence says what in the status or the snapshot cache shows that
// the job had state ("" if nothing does): a savepoint or checkpoint
// recorded in the legacy fields, or a completed snapshot resource.
func (s *State[T, S]) stateEvidence() string {
	js := s.JobStatus()
	if info := js.SavepointInfo; info != nil && len(info.SavepointHistory) > 0 {
		return "status.jobStatus.savepointInfo.savepointHistory records savepoints"
	}
	if info := js.CheckpointInfo; info != nil && info.LastCheckpoint != nil {
		return "status.jobStatus.checkpointInfo.lastCheckpoint records a checkpoint"
	}
	obj := s.obj
	snaps, err := s.e.Caches.SnapshotsOfJob(snapshotrules.JobKeyFor(obj.JobReferenceKind(), obj.GetNamespace(), obj.GetName()))
	if err != nil {
		return ""
	}
	for _, snap := range snaps {
		if snap.Status.State == v1beta1.SnapshotCompleted && snap.Status.Path != "" {
			return fmt.Sprintf("FlinkStateSnapshot %s/%s holds its %s %s", snap.Namespace, snap.Name, strings.ToLower(snapshotrules.Type(snap)), snap.Status.Path)
		}
	}
	return ""
}
