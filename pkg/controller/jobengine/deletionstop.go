package jobengine

import (
	"context"

	corev1 "k8s.io/api/core/v1"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/config"
	"github.com/flinkops/flink-operator/pkg/lifecycle"
	"github.com/flinkops/flink-operator/pkg/reasons"
)

// StopOnDeletion takes one step of stopping the job of a deleted resource
// and reports whether its finalizer may go. With savepoint
// (kubernetes.operator.job.savepoint-on-deletion) a running job is first
// stopped with a savepoint, the same crash-safe stop as an upgrade's
// (recorded as an UPGRADE snapshot); a job that is not running, or whose
// savepoint fails or is lost, is ended without one (JobKind.EndOnDeletion:
// the cluster's teardown, or a cancel). Bounded by the job's stop timeout
// after the deletion: after it the finalizer may go anyway, with a Warning
// event, so a deletion never hangs on an unreachable JobManager.
func (s *State[T, S]) StopOnDeletion(ctx context.Context, k JobKind, savepoint bool) (done bool, err error) {
	js := s.JobStatus()
	timeout := lifecycle.StopTimeout(s.Cfg)
	deadline := s.obj.GetDeletionTimestamp().Add(timeout)
	if !s.now.Before(deadline) {
		if savepoint {
			s.Event(corev1.EventTypeWarning, reasons.ReasonSavepointError, "No savepoint of job %s within %s of the deletion (%s); deleting without one",
				js.JobID, timeout, config.FlinkCheckpointTimeout)
		} else {
			s.Event(corev1.EventTypeWarning, reasons.ReasonCleanup, "Job %s could not be stopped within %s of the deletion (%s); deleting anyway",
				js.JobID, timeout, config.FlinkCheckpointTimeout)
		}
		lifecycle.ClearStopTrigger(js)
		return true, nil
	}
	done, err = s.stopOnDeletion(ctx, k, savepoint)
	if err == nil && !done {
		s.requeueNoLaterThan(deadline.Sub(s.now))
	}
	return done, err
}

func (s *State[T, S]) stopOnDeletion(ctx context.Context, k JobKind, savepoint bool) (bool, error) {
	js := s.JobStatus()
	if info := js.SavepointInfo; info != nil && info.TriggerType == v1beta1.SnapshotTriggerUpgrade && info.TriggerID != "" {
		o := s.checkStop(ctx, k)
		switch {
		case o.Pending:
			return false, nil
		case o.lost:
			s.Event(corev1.EventTypeWarning, reasons.ReasonSavepointError, "Job %s finished after stop-with-savepoint but its savepoint's path is unknown; %s",
				js.JobID, k.EndOnDeletionDescription())
			lifecycle.ClearStopTrigger(js)
		case o.Failure != "":
			s.Event(corev1.EventTypeWarning, reasons.ReasonSavepointError, "%s; %s", o.Failure, k.EndOnDeletionDescription())
			lifecycle.ClearStopTrigger(js)
		default:
			// Retried until recorded (bounded by the deadline): the
			// savepoint exists, and nobody loses a savepoint.
			if err := s.recordSavepoint(k, o.Path); err != nil {
				return false, err
			}
			js.UpgradeSavepointPath = o.Path
			js.State = v1beta1.JobStatusSuspended
			lifecycle.ClearStopTrigger(js)
		}
		return k.EndOnDeletion(), nil
	}
	if !savepoint {
		return k.EndOnDeletion(), nil
	}
	if js.State != v1beta1.JobStatusSuspended && s.jobHealthy() {
		s.triggerStop(k)
		return false, nil
	}
	if k.Starting() {
		s.RequeueWithin(s.ProgressInterval())
		return false, nil
	}
	if js.State != v1beta1.JobStatusSuspended {
		s.Event(corev1.EventTypeNormal, reasons.ReasonCleanup, "Job %s is %s: no savepoint taken on deletion", js.JobID, k.Describe())
	}
	return k.EndOnDeletion(), nil
}
