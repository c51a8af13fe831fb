package jobengine

import (
	"context"
	"strconv"

	corev1 "k8s.io/api/core/v1"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/flink"
	"github.com/flinkops/flink-operator/pkg/lifecycle"
	"github.com/flinkops/flink-operator/pkg/reasons"
)

// ObserveJob updates jobStatus from s.Job, the job as its JobManager
// reports it (nil: not known; the controller decides what that means). A
// RUNNING job whose tasks are not all running counts as CREATED
// (upstream's rule). When the job ends (FAILED, CANCELED, FINISHED) its
// newest checkpoint or savepoint is recorded in upgradeSavepointPath in the
// same write, so an upgrade of an ended job restarts from its last state.
func (s *State[T, S]) ObserveJob(ctx context.Context) {
	js := s.JobStatus()
	if s.Job == nil {
		return
	}
	state := lifecycle.EffectiveState(s.Job)
	js.JobName = s.Job.Name
	if s.Job.StartTime > 0 {
		js.StartTime = strconv.FormatInt(s.Job.StartTime, 10)
	}
	if state == js.State {
		return
	}
	if js.State == v1beta1.JobStatusCancelling && !state.IsGloballyTerminal() &&
		s.Status().Reconciliation.State == v1beta1.ReconciliationUpgrading {
		// A cancel of this upgrade is in flight (markCancelling): the job
		// reads CANCELLING until Flink reports it ended.
		return
	}
	if state.IsGloballyTerminal() && !js.State.IsGloballyTerminal() {
		path, err := s.latestState(ctx)
		switch {
		case err != nil && flink.IsRetryable(err):
			// Record the terminal state together with its last checkpoint
			// or not at all: try again soon.
			s.log.Info("Job ended but its checkpoints cannot be read yet", "state", state, "err", err)
			s.RequeueWithin(s.ProgressInterval())
			return
		case err != nil && s.recorded != nil && UpgradeMode(&s.recorded.Spec) == v1beta1.UpgradeModeStateless:
			// Nothing restores a stateless job's last state (its upgrades
			// and restarts start empty): no error, no "Manual restore
			// required" for what nobody will ask of it.
			s.log.V(1).Info("The ended stateless job's last state cannot be used", "state", state, "err", err)
		case err != nil:
			s.Fail(reasons.ReasonUpgradeFailed, "Job %s is %s and its last state cannot be used: %v", js.JobID, state, err)
		case path != js.UpgradeSavepointPath:
			s.log.Info("Recorded the last state of the ended job", "state", state, "path", path)
			js.UpgradeSavepointPath = path
		}
	}
	typ := corev1.EventTypeNormal
	if state == v1beta1.JobStatusFailed {
		typ = corev1.EventTypeWarning
	}
	s.Event(typ, reasons.ReasonJobStatusChanged, "Job status changed from %s to %s", stateOrNew(string(js.State)), state)
	js.State = state
	js.UpdateTime = strconv.FormatInt(s.now.UnixMilli(), 10)
	if !state.IsGloballyTerminal() && state != v1beta1.JobStatusRunning {
		s.RequeueWithin(s.ProgressInterval())
	}
}
