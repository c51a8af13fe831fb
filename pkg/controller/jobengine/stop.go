package jobengine

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/config"
	"github.com/flinkops/flink-operator/pkg/flink"
	"github.com/flinkops/flink-operator/pkg/lifecycle"
	"github.com/flinkops/flink-operator/pkg/reasons"
	"github.com/flinkops/flink-operator/pkg/snapshotrules"
)

// The stop of the old job during an upgrade, suspend or deletion, recorded
// in status.jobStatus so that every step survives a crash:
//
//   - savepointInfo {triggerId, triggerTimestamp, triggerType: UPGRADE}: a
//     stop-with-savepoint with that trigger id was (or is about to be) sent;
//   - savepointInfo {triggerType: UPGRADE, triggerTimestamp} without a
//     trigger id: that stop-with-savepoint failed; the job is stopped by
//     last-state instead (or, with the fallback disabled, retried later);
//   - jobStatus.state SUSPENDED: the job is stopped (or, for a session job,
//     about to be cancelled) and upgradeSavepointPath holds the state to
//     restart from.

// JobKind is what the stop protocol needs from the controller of one kind,
// bound to one sync.
type JobKind interface {
	// Starting: the cluster or the job is still coming up after its
	// deploy; a savepoint stop waits for it rather than falling back.
	Starting() bool
	// NeverRan: as far as the operator can tell the job never ran since its
	// deploy, so it still has the state it was deployed from.
	NeverRan() bool
	// Describe says in a few words what state the job is in, for errors.
	Describe() string
	// Unreachable handles a stop while the JobManager's jobs could not be
	// read; handled false leaves it to the common rules.
	Unreachable() (handled, stopped bool)
	// LastStateStop says how the running job is ended keeping its latest
	// checkpoint, and for NoLastStateStop why it cannot be.
	LastStateStop(ctx context.Context) (how LastStateStop, why string)
	// EndOnDeletion ends the job of a deleted resource without a (further)
	// savepoint and reports whether it has ended (StopOnDeletion).
	EndOnDeletion() bool
	// EndOnDeletionDescription says in a few words what EndOnDeletion
	// does, for the Warning of a deletion whose savepoint failed.
	EndOnDeletionDescription() string
}

// lastStateStop asks k once per sync (for a session job it is a REST call).
func (s *State[T, S]) lastStateStop(ctx context.Context, k JobKind) (LastStateStop, string) {
	if s.lastStop == nil {
		how, why := k.LastStateStop(ctx)
		s.lastStop = &lastStateAnswer{how, why}
	}
	return s.lastStop.how, s.lastStop.why
}

type lastStateAnswer struct {
	how LastStateStop
	why string
}

// LastStateStop is how a running job is ended keeping its latest
// checkpoint, the one it is to restart from.
type LastStateStop int

const (
	// StopByCancel: cancel it; Flink retains its checkpoints.
	StopByCancel LastStateStop = iota
	// StopByTeardown: record its latest checkpoint; the controller then
	// ends the job by tearing its cluster down (a cancel would delete the
	// checkpoint, or the HA metadata the new JobManager recovers from).
	StopByTeardown
	// NoLastStateStop: every way to end the job would delete that
	// checkpoint (a session job whose checkpoints are not retained on
	// cancellation), so it is not stopped by last-state at all.
	NoLastStateStop
)

// errSavepointLost: the job finished after a stop-with-savepoint but Flink
// no longer knows the savepoint's path.
var errSavepointLost = errors.New("the job finished after stop-with-savepoint but Flink no longer knows the savepoint's path")

// RetryFailed is how soon a step blocked by an error is tried again.
const RetryFailed = time.Minute

// stopJob takes the next step in stopping the job with its state
// (upgrade modes savepoint and last-state). stopped reports that the
// state is recorded and the job marked SUSPENDED.
func (s *State[T, S]) stopJob(ctx context.Context, k JobKind) (stopped bool, err error) {
	js := s.JobStatus()
	info := js.SavepointInfo
	if info != nil && info.TriggerType == v1beta1.SnapshotTriggerUpgrade && info.TriggerID != "" {
		return s.pollStop(ctx, k)
	}
	if handled, stopped := k.Unreachable(); handled {
		if stopped {
			s.finishStop(js.UpgradeSavepointPath)
		}
		return stopped, nil
	}
	failedAttempt := info != nil && info.TriggerType == v1beta1.SnapshotTriggerUpgrade && info.TriggerID == ""
	if UpgradeMode(&s.recorded.Spec) != v1beta1.UpgradeModeSavepoint {
		if how, why := s.lastStateStop(ctx, k); how != NoLastStateStop || !s.jobHealthy() {
			return s.stopLastState(ctx, k), nil
		} else if !failedAttempt {
			// Ending the job would delete its latest checkpoint: a
			// stop-with-savepoint keeps its state instead.
			s.log.Info("Stopping the job with a savepoint instead of by last-state", "jobId", js.JobID, "reason", why)
		}
	}
	fallback, noFallback, err := s.lastStateFallback(ctx, k)
	if err != nil {
		return false, err
	}
	if failedAttempt {
		if fallback {
			return s.stopLastState(ctx, k), nil
		}
		// The last stop-with-savepoint failed and the fallback is off:
		// retry after a pause, keeping the error visible meanwhile.
		failedAt := time.UnixMilli(deref(info.TriggerTimestamp))
		if wait := failedAt.Add(s.ReconcileInterval()).Sub(s.now); wait > 0 {
			s.keepError(reasons.ReasonSavepointError)
			s.RequeueWithin(wait)
			return false, nil
		}
	}
	switch {
	case s.jobHealthy():
		s.triggerStop(k)
	case s.Job != nil && lifecycle.EffectiveState(s.Job).IsGloballyTerminal(), s.Job == nil && js.State.IsGloballyTerminal():
		// An ended job takes no savepoint; its last state is recorded.
		return s.stopLastState(ctx, k), nil
	case k.Starting():
		s.log.V(2).Info("Waiting for the job to run before stopping it with a savepoint", "state", js.State)
		s.RequeueWithin(s.ProgressInterval())
	case k.NeverRan():
		// Nothing to save: the job still has the state it was deployed from.
		s.finishStop(js.UpgradeSavepointPath)
		return true, nil
	case fallback:
		s.log.Info("Job cannot take a savepoint, falling back to its last checkpoint", "state", js.State)
		lifecycle.MarkFailedStop(js, s.now)
		return s.stopLastState(ctx, k), nil
	default:
		s.Fail(reasons.ReasonUpgradeFailed, "Job %s is %s and cannot be stopped with a savepoint; %s, "+
			"so it keeps running and nothing was torn down. The upgrade continues once the job runs again.", js.JobID, k.Describe(), noFallback)
		s.RequeueWithin(s.ProgressInterval())
	}
	return false, nil
}

// lastStateFallback says whether a savepoint stop that cannot be made may
// fall back to the job's latest checkpoint, and if not, why: the fallback
// is disabled, or ending the running job would delete that checkpoint.
func (s *State[T, S]) lastStateFallback(ctx context.Context, k JobKind) (ok bool, why string, err error) {
	on, err := s.Cfg.Bool(config.KeyJobUpgradeLastStateFallbackEnabled)
	if err != nil {
		return false, "", err
	}
	if !on {
		return false, "the last-state fallback is disabled (" + config.KeyJobUpgradeLastStateFallbackEnabled + ": false)", nil
	}
	if s.Client != nil && s.Job != nil && !lifecycle.EffectiveState(s.Job).IsGloballyTerminal() {
		if how, why := s.lastStateStop(ctx, k); how == NoLastStateStop {
			return false, "the last-state fallback would lose the job's state: " + why, nil
		}
	}
	return true, "", nil
}

// jobHealthy: the JobManager answers and the job runs on all its tasks,
// the condition for a savepoint.
func (s *State[T, S]) jobHealthy() bool {
	return s.Client != nil && s.Job != nil && lifecycle.EffectiveState(s.Job) == v1beta1.JobStatusRunning
}

// triggerStop records a new stop-with-savepoint (trigger id chosen here)
// and sends it once the record is written: Flink treats a repeated trigger
// id as the same request, so a crash on either side of the POST resumes
// this same operation.
func (s *State[T, S]) triggerStop(k JobKind) {
	js := s.JobStatus()
	ts := s.now.UnixMilli()
	if js.SavepointInfo == nil {
		js.SavepointInfo = &v1beta1.SavepointInfo{}
	}
	js.SavepointInfo.TriggerID = s.e.NewTriggerID()
	js.SavepointInfo.TriggerTimestamp = &ts
	js.SavepointInfo.TriggerType = v1beta1.SnapshotTriggerUpgrade
	js.SavepointInfo.FormatType = v1beta1.SavepointFormatType(lifecycle.SavepointFormat(s.Cfg))
	s.log.Info("Stopping the job with a savepoint", "jobId", js.JobID, "triggerId", js.SavepointInfo.TriggerID)
	s.postStop(js.JobID, js.SavepointInfo.TriggerID)
	s.RequeueWithin(snapshotrules.MinPollDelay)
}

// postStop queues the POST /jobs/{id}/stop. Its failure is not an error:
// the next poll asks Flink by trigger id and re-sends it if unknown.
func (s *State[T, S]) postStop(jobID, triggerID string) {
	client, cfg, log := s.Client, s.Cfg, s.log
	dir, _ := config.SavepointDir(cfg)
	req := flink.StopRequest{TargetDirectory: dir, FormatType: flink.SavepointFormatType(lifecycle.SavepointFormat(cfg)), TriggerID: triggerID}
	if s.obj.GetDeletionTimestamp() != nil {
		req.Drain, _ = cfg.Bool(config.KeyJobDrainOnSavepointDeletion)
	}
	s.AfterStatusWrite("stop-with-savepoint", func(ctx context.Context) error {
		if client == nil {
			return nil
		}
		if _, err := client.StopWithSavepoint(ctx, jobID, req); err != nil {
			log.Info("Stop-with-savepoint request failed, will check by trigger id", "triggerId", triggerID, "err", err)
		}
		return nil
	})
}

// pollStop follows the stop-with-savepoint recorded in status.
func (s *State[T, S]) pollStop(ctx context.Context, k JobKind) (bool, error) {
	o := s.checkStop(ctx, k)
	js := s.JobStatus()
	switch {
	case o.Pending:
		return false, nil
	case o.lost:
		dir, _ := config.SavepointDir(s.Cfg)
		s.FailManualRestore(reasons.ReasonUpgradeFailed, "Job %s finished after stop-with-savepoint (trigger id %s) but the savepoint's path is unknown (%v). "+
			"%s: find the newest savepoint of job %s under %s, set spec.job.initialSavepointPath to it and change spec.job.savepointRedeployNonce",
			js.JobID, js.SavepointInfo.TriggerID, errSavepointLost, lifecycle.ManualRestore, js.JobID, dir)
		s.RequeueWithin(RetryFailed)
		return false, nil
	case o.Failure != "":
		return s.stopFailed(ctx, k, o.Failure), nil
	}
	if err := s.recordSavepoint(k, o.Path); err != nil {
		return false, err
	}
	s.finishStop(o.Path)
	return true, nil
}

// checkStop asks Flink about the stop-with-savepoint in flight, bounded by
// the job's checkpoint timeout; it schedules the next poll while pending
// and re-sends the same stop when Flink forgot an id the running job never
// acted on.
func (s *State[T, S]) checkStop(ctx context.Context, k JobKind) StopOutcome {
	js := s.JobStatus()
	q := StopQuery{
		Client: s.Client, JobID: js.JobID, TriggerID: js.SavepointInfo.TriggerID,
		triggered: time.UnixMilli(deref(js.SavepointInfo.TriggerTimestamp)), Now: s.now,
		Timeout: lifecycle.StopTimeout(s.Cfg), Recorded: s.upgradeSnapshotPath(),
	}
	if s.Job != nil {
		q.JobState = lifecycle.EffectiveState(s.Job)
	}
	o := checkStop(ctx, q)
	if o.resend {
		s.log.Info("Flink does not know the stop trigger id, sending it again", "triggerId", q.TriggerID)
		s.postStop(q.JobID, q.TriggerID)
	}
	if o.Pending {
		s.RequeueWithin(o.pollAfter)
	}
	return o
}

// recordSavepoint records the savepoint of a stop: an UPGRADE
// FlinkStateSnapshot (written before the status, adopted if it exists
// already) or, in legacy mode, savepointInfo. The caller records
// upgradeSavepointPath in the same status write.
func (s *State[T, S]) recordSavepoint(k JobKind, path string) error {
	js := s.JobStatus()
	info := js.SavepointInfo
	recorded, err := s.recordUpgradeSnapshot(path, deref(info.TriggerTimestamp))
	if err != nil {
		return err
	}
	if !recorded {
		lifecycle.RecordLegacySavepoint(info, path, s.now)
	}
	s.log.Info("Job stopped with a savepoint", "jobId", js.JobID, "triggerId", info.TriggerID, "path", path)
	s.Event(corev1.EventTypeNormal, reasons.ReasonSuspended, "Job %s stopped with savepoint %s", js.JobID, path)
	return nil
}

// stopFailed ends a failed stop-with-savepoint: the job is stopped by
// last-state instead, or, with the fallback disabled, it keeps running and
// the stop is retried later.
func (s *State[T, S]) stopFailed(ctx context.Context, k JobKind, msg string) bool {
	js := s.JobStatus()
	s.log.Info("Stop-with-savepoint failed", "jobId", js.JobID, "triggerId", js.SavepointInfo.TriggerID, "reason", msg)
	lifecycle.MarkFailedStop(js, s.now)
	s.Event(corev1.EventTypeWarning, reasons.ReasonSavepointError, "%s", msg)
	fallback, noFallback, _ := s.lastStateFallback(ctx, k)
	if fallback {
		return s.stopLastState(ctx, k)
	}
	s.Fail(reasons.ReasonSavepointError, "%s. The job keeps running and nothing was torn down, because %s; retrying in %s",
		msg, noFallback, s.ReconcileInterval())
	s.RequeueWithin(s.ReconcileInterval())
	return false
}

// stopLastState stops the job keeping its latest checkpoint: cancel it
// (checkpoints are retained on cancellation, which the operator
// configures), and once it has ended read the newest restorable checkpoint
// or savepoint. When the JobManager cannot be asked, only a state recorded
// earlier is trusted; otherwise the stop ends in "manual restore required"
// and nothing is stopped: a job is never silently restarted from empty or
// older state.
func (s *State[T, S]) stopLastState(ctx context.Context, k JobKind) bool {
	js := s.JobStatus()
	if s.Client != nil && s.Job != nil {
		if !lifecycle.EffectiveState(s.Job).IsGloballyTerminal() {
			switch how, why := s.lastStateStop(ctx, k); how {
			case StopByCancel:
				s.markCancelling()
				s.Cancel()
				return false
			case NoLastStateStop:
				s.Fail(reasons.ReasonUpgradeFailed, "Job %s cannot be stopped keeping its latest checkpoint: %s. It keeps running and nothing was stopped; retrying in %s",
					js.JobID, why, s.ReconcileInterval())
				s.RequeueWithin(s.ReconcileInterval())
				return false
			}
		}
		// Ended, or a cancel would delete the checkpoints: the controller
		// stops the job by a teardown once its latest one is recorded.
		path, err := s.latestState(ctx)
		switch {
		case err != nil && flink.IsRetryable(err):
			s.RequeueWithin(s.ProgressInterval())
			return false
		case err != nil:
			s.Fail(reasons.ReasonUpgradeFailed, "Cannot upgrade job %s: %v", js.JobID, err)
			s.RequeueWithin(RetryFailed)
			return false
		}
		s.finishStop(path)
		return true
	}
	if js.State.IsGloballyTerminal() || k.NeverRan() {
		// Recorded when the job was seen ending, or never ran.
		s.finishStop(js.UpgradeSavepointPath)
		return true
	}
	s.FailManualRestore(reasons.ReasonUpgradeFailed, "Job %s (last seen %s) is %s, so its last checkpoint cannot be read and nothing was stopped. "+
		"%s: set spec.job.initialSavepointPath to the latest checkpoint or savepoint and change spec.job.savepointRedeployNonce, "+
		"or wait for the JobManager to answer again", js.JobID, js.State, k.Describe(), lifecycle.ManualRestore)
	s.RequeueWithin(RetryFailed)
	return false
}

// latestState is the state to restart the job from: the newest restorable
// checkpoint or savepoint Flink reports for it, else what the job itself
// started from (upgradeSavepointPath, "" for empty state). Call it only
// when the job cannot take another checkpoint (ended), or as a best-effort
// early record.
func (s *State[T, S]) latestState(ctx context.Context) (string, error) {
	js := s.JobStatus()
	stats, err := s.Client.Checkpoints(ctx, js.JobID)
	switch {
	case flink.IsNotFound(err): // checkpointing disabled
		return js.UpgradeSavepointPath, nil
	case err != nil:
		return "", err
	}
	return lifecycle.LatestStatePath(stats, js.UpgradeSavepointPath)
}

// Cancel queues PATCH /jobs/{id}?mode=cancel; the job's end is observed by
// a later sync.
func (s *State[T, S]) Cancel() {
	client, jobID, log := s.Client, s.JobStatus().JobID, s.log
	s.AfterStatusWrite("cancel job", func(ctx context.Context) error {
		err := client.CancelJob(ctx, jobID)
		switch {
		case err == nil, flink.IsJobAlreadyTerminal(err), flink.IsNotFound(err):
		default:
			log.Info("Cancelling the job failed, will retry", "jobId", jobID, "err", err)
		}
		return nil
	})
	s.RequeueWithin(cancelPollDelay)
}

// cancelPollDelay is how soon a job whose cancel was asked for is looked at
// again. Never sooner: its CANCELLING record stays readable that long,
// and tools wait for it (upstream's e2e polls the status every second).
const cancelPollDelay = 2 * snapshotrules.MinPollDelay

// markCancelling records, in the status write that queues the cancel, that
// the job is being cancelled (upstream's cancelJobOrError sets CANCELLING
// once the cancel is accepted); ObserveJob keeps the record until Flink
// reports the job ended.
func (s *State[T, S]) markCancelling() {
	js := s.JobStatus()
	if js.State == v1beta1.JobStatusCancelling {
		return
	}
	s.Event(corev1.EventTypeNormal, reasons.ReasonJobStatusChanged, "Job status changed from %s to %s", stateOrNew(string(js.State)), v1beta1.JobStatusCancelling)
	js.State = v1beta1.JobStatusCancelling
	js.UpdateTime = strconv.FormatInt(s.now.UnixMilli(), 10)
}

// finishStop records the state to restart from and marks the job stopped.
func (s *State[T, S]) finishStop(path string) {
	js := s.JobStatus()
	js.UpgradeSavepointPath = path
	js.State = v1beta1.JobStatusSuspended
	lifecycle.ClearStopTrigger(js)
}

// DeletesCheckpointsOnCancel reports a job configured so that a cancel
// deletes its checkpoints: DELETE_ON_CANCELLATION, or
// NO_EXTERNALIZED_CHECKPOINTS (Flink's default; the operator defaults the
// key to RETAIN_ON_CANCELLATION).
func DeletesCheckpointsOnCancel(cfg map[string]string) bool {
	v := strings.TrimSpace(cfg[config.FlinkCheckpointRetention])
	return v != "" && !strings.EqualFold(v, config.FlinkRetainOnCancellation)
}

func deref(p *int64) int64 {
	if p == nil {
		return 0
	}
	return *p
}
