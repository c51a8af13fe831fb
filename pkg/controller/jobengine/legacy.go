// Legacy mode (docs/snapshots.md, "Legacy mode"), the same for the
// FlinkDeployment and FlinkSessionJob controllers: a job whose snapshot resources are disabled
// (operator-wide, per job, or because the FlinkStateSnapshot CRD is not
// installed) keeps its periodic and manual savepoints and checkpoints in the
// deprecated status fields status.jobStatus.savepointInfo/checkpointInfo.
//
// Crash safety is the project's usual write-ahead: the operator chooses the
// trigger id, records {triggerId, triggerTimestamp, triggerType, formatType}
// (and a handled nonce, which the caller records in lastReconciledSpec) in
// the status write, and only then POSTs the trigger carrying that id. A
// crash on either side of the POST leaves a status whose id the next sync
// polls; a 404 for it (Flink never got the POST, or restarted) within the
// grace period sends the same id again, which Flink de-duplicates. Polls are
// requeues, never waits.
//
// A legacy trigger in flight when snapshot resources get enabled is still
// observed to its end, and the legacy history is cleaned in both modes
// (completed snapshot resources count toward its limit), both as upstream.
// Like the stop (stop.go) it edits the sync's status copy and hands REST
// calls to the post-write actions; the commit writes.

package jobengine

import (
	"context"
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

// crdMissingMessage says where the job's snapshots go and how to install
// the CRD.
const crdMissingMessage = "The FlinkStateSnapshot CRD is not installed, so snapshot resources are disabled: " +
	"savepoints and checkpoints of this job are kept in the legacy status fields status.jobStatus.savepointInfo/checkpointInfo. " +
	"Install the CRD with `kubectl apply --server-side -f manifests/crds/flink.apache.org_flinkstatesnapshots.yaml`; " +
	"the operator notices it within a minute and restarts into snapshot-resource mode"

// delayMessage is upstream's log line for an upgrade that waits for a
// pending legacy savepoint.
const delayMessage = "Delaying job reconciliation until pending savepoint is completed."

// WarnCRDMissing emits SnapshotResourcesDisabled (crdMissingMessage) for
// the job with this UID, once per operator process.
func (s *State[T, S]) warnCRDMissing() {
	if _, seen := s.e.crdWarned.LoadOrStore(s.obj.GetUID(), struct{}{}); !seen {
		s.Event(corev1.EventTypeWarning, reasons.ReasonSnapshotResourcesDisabled, "%s", crdMissingMessage)
	}
}

// legacyNonces are the manual trigger nonces the caller records as handled.
type legacyNonces struct {
	Savepoint, Checkpoint *int64
	// record: the nonces are to be recorded (they were handled this sync).
	record bool
}

// legacyReconcile observes legacy triggers in flight, cleans the legacy savepoint
// history, and, when snapshot resources are off (resources false), triggers
// the due periodic or manual snapshots. handleNonces says whether changed
// nonces may be handled now; the result says which to record.
func (s *State[T, S]) legacyReconcile(ctx context.Context, view snapshotrules.JobView, resources, handleNonces bool) legacyNonces {
	s.legacyObserveSavepoint(ctx)
	s.legacyObserveCheckpoint(ctx)
	s.legacyCleanupHistory(ctx, view, resources)
	if resources {
		return legacyNonces{}
	}
	js := s.JobStatus()
	running := view.Running && s.legacyHealthy
	sp, cp := view.ReconciledSavepointNonce, view.ReconciledCheckpointNonce

	if n, due := s.legacyTriggerIfDue(v1beta1.SnapshotTypeSavepoint, snapshotrules.LegacyJob{
		Config: s.Cfg, Running: running, Pending: js.SavepointInfo != nil && js.SavepointInfo.TriggerID != "",
		Nonce: view.SavepointNonce, Reconciled: view.ReconciledSavepointNonce,
		LastPeriodic: lastPeriodicSavepoint(js), Since: view.Since,
	}, s.legacyTriggerSavepoint); due {
		sp = n
	}
	if view.CheckpointsSupported {
		if n, due := s.legacyTriggerIfDue(v1beta1.SnapshotTypeCheckpoint, snapshotrules.LegacyJob{
			Config: s.Cfg, Running: running, Pending: js.CheckpointInfo != nil && js.CheckpointInfo.TriggerID != "",
			Nonce: view.CheckpointNonce, Reconciled: view.ReconciledCheckpointNonce,
			LastPeriodic: lastPeriodicCheckpoint(js), Since: view.Since,
		}, s.legacyTriggerCheckpoint); due {
			cp = n
		}
	}

	if !handleNonces {
		return legacyNonces{}
	}
	// Nonces removed from the spec are recorded as such; a checkpoint nonce
	// this Flink version cannot honour is said once, then consumed.
	if view.SavepointNonce == nil {
		sp = nil
	}
	switch {
	case view.CheckpointNonce == nil:
		cp = nil
	case !view.CheckpointsSupported && !lifecycle.EqualNonce(view.CheckpointNonce, view.ReconciledCheckpointNonce):
		s.Event(corev1.EventTypeWarning, reasons.ReasonCheckpointError, "Checkpoint failed for checkpointTriggerNonce: %d: manual checkpoints need Flink 1.17+", *view.CheckpointNonce)
		cp = view.CheckpointNonce
	}
	return legacyNonces{Savepoint: sp, Checkpoint: cp, record: true}
}

// legacyTriggerIfDue triggers a snapshot of typ when its schedule or a
// manual nonce says so; manual reports a MANUAL trigger and its nonce.
func (s *State[T, S]) legacyTriggerIfDue(typ string, job snapshotrules.LegacyJob, trigger func(v1beta1.SnapshotTriggerType)) (nonce *int64, manual bool) {
	due := snapshotrules.LegacyDue(typ, job, s.now)
	if due.Warning != "" {
		s.Fail(reasons.ReasonValidationError, "spec.flinkConfiguration: %s", due.Warning)
	}
	s.RequeueWithin(due.RequeueAfter)
	if due.Type == "" {
		return nil, false
	}
	trigger(due.Type)
	return due.Nonce, due.Type == v1beta1.SnapshotTriggerManual
}

// upgradeBlocked reports whether a spec upgrade must wait: a legacy
// savepoint is pending and kubernetes.operator.job.upgrade.ignore-pending-
// savepoint is not set (upstream's rule; the savepoint belongs to the job
// the upgrade would stop, and ends within Flink's checkpoint timeout or the
// trigger grace period).
func upgradeBlocked(cfg config.Config, js *v1beta1.JobStatus) bool {
	if !snapshotrules.LegacySavepointPending(js.SavepointInfo) {
		return false
	}
	ignore, err := cfg.Bool(config.KeyJobUpgradeIgnorePendingSavepoint)
	return err != nil || !ignore
}

// resetLegacyTriggers drops the legacy savepoint/checkpoint in flight when the
// job is about to be stopped (an upgrade that may proceed): its result
// could only be polled on the old job. As upstream, a dropped one is a
// failure event.
func (s *State[T, S]) resetLegacyTriggers() {
	js := s.JobStatus()
	var spNonce, cpNonce *int64
	if s.recordedJob() != nil {
		spNonce, cpNonce = s.recordedJob().SavepointTriggerNonce, s.recordedJob().CheckpointTriggerNonce
	}
	if info := js.SavepointInfo; snapshotrules.LegacySavepointPending(info) {
		if info.TriggerType != v1beta1.SnapshotTriggerManual {
			spNonce = nil
		}
		s.Event(corev1.EventTypeWarning, reasons.ReasonSavepointError, "%s", snapshotrules.LegacyFailureMessage(v1beta1.SnapshotTypeSavepoint, info.TriggerType, spNonce))
		snapshotrules.ResetLegacySavepointTrigger(info)
	}
	if info := js.CheckpointInfo; snapshotrules.LegacyCheckpointPending(info) {
		if info.TriggerType != v1beta1.SnapshotTriggerManual {
			cpNonce = nil
		}
		s.Event(corev1.EventTypeWarning, reasons.ReasonCheckpointError, "%s", snapshotrules.LegacyFailureMessage(v1beta1.SnapshotTypeCheckpoint, info.TriggerType, cpNonce))
		snapshotrules.ResetLegacyCheckpointTrigger(info)
	}
}

// lastPeriodicSavepoint/lastPeriodicCheckpoint read the status as the
// observation of this sync left it (a completion just recorded counts).
func lastPeriodicSavepoint(js *v1beta1.JobStatus) time.Time {
	if info := js.SavepointInfo; info != nil && info.LastPeriodicSavepointTimestamp > 0 {
		return time.UnixMilli(info.LastPeriodicSavepointTimestamp)
	}
	return time.Time{}
}

func lastPeriodicCheckpoint(js *v1beta1.JobStatus) time.Time {
	if info := js.CheckpointInfo; info != nil && info.LastPeriodicCheckpointTimestamp > 0 {
		return time.UnixMilli(info.LastPeriodicCheckpointTimestamp)
	}
	return time.Time{}
}

// legacyTriggerSavepoint records a savepoint trigger and sends it after the
// status write.
func (s *State[T, S]) legacyTriggerSavepoint(trigger v1beta1.SnapshotTriggerType) {
	js := s.JobStatus()
	if js.SavepointInfo == nil {
		js.SavepointInfo = &v1beta1.SavepointInfo{}
	}
	format := v1beta1.SavepointFormatType(lifecycle.SavepointFormat(s.Cfg))
	id := s.e.NewTriggerID()
	snapshotrules.SetLegacySavepointTrigger(js.SavepointInfo, id, trigger, format, s.now)
	s.log.Info("Triggering savepoint (legacy status fields)", "jobId", js.JobID, "triggerId", id, "triggerType", trigger)
	s.legacyPostSavepoint(js.JobID, id, format)
	s.RequeueWithin(snapshotrules.MinPollDelay)
}

func (s *State[T, S]) legacyPostSavepoint(jobID, id string, format v1beta1.SavepointFormatType) {
	client, log := s.Client, s.log
	dir, _ := config.SavepointDir(s.Cfg)
	req := flink.SavepointRequest{TargetDirectory: dir, FormatType: flink.SavepointFormatType(format), TriggerID: id}
	s.AfterStatusWrite("trigger savepoint", func(ctx context.Context) error {
		if client == nil {
			return nil
		}
		if _, err := client.TriggerSavepoint(ctx, jobID, req); err != nil {
			log.Info("Savepoint trigger request failed, will check by trigger id", "triggerId", id, "err", err)
		}
		return nil
	})
}

// legacyTriggerCheckpoint records a checkpoint trigger and sends it after the
// status write.
func (s *State[T, S]) legacyTriggerCheckpoint(trigger v1beta1.SnapshotTriggerType) {
	js := s.JobStatus()
	if js.CheckpointInfo == nil {
		js.CheckpointInfo = &v1beta1.CheckpointInfo{}
	}
	typ := checkpointType(s.Cfg)
	id := s.e.NewTriggerID()
	snapshotrules.SetLegacyCheckpointTrigger(js.CheckpointInfo, id, trigger, typ, s.now)
	s.log.Info("Triggering checkpoint (legacy status fields)", "jobId", js.JobID, "triggerId", id, "triggerType", trigger)
	s.legacyPostCheckpoint(js.JobID, id, typ)
	s.RequeueWithin(snapshotrules.MinPollDelay)
}

func (s *State[T, S]) legacyPostCheckpoint(jobID, id string, typ v1beta1.CheckpointType) {
	client, log := s.Client, s.log
	req := flink.CheckpointRequest{Type: flink.CheckpointType(typ), TriggerID: id}
	s.AfterStatusWrite("trigger checkpoint", func(ctx context.Context) error {
		if client == nil {
			return nil
		}
		if _, err := client.TriggerCheckpoint(ctx, jobID, req); err != nil {
			log.Info("Checkpoint trigger request failed, will check by trigger id", "triggerId", id, "err", err)
		}
		return nil
	})
}

func checkpointType(cfg config.Config) v1beta1.CheckpointType {
	t, err := cfg.Enum(config.KeyCheckpointType)
	if err != nil || t == "" || t == string(v1beta1.CheckpointTypeUnknown) {
		return v1beta1.CheckpointTypeFull
	}
	return v1beta1.CheckpointType(t)
}

// outcome is what Flink says about a legacy trigger.
type outcome int

const (
	outcomePending outcome = iota
	outcomeDone
	outcomeFailed
	outcomeUnknown // Flink does not know the trigger id
)

// inFlight is a legacy trigger in flight: what following it needs, the
// same for savepoints and checkpoints but for these parts.
type inFlight struct {
	typ         string // v1beta1.SnapshotTypeSavepoint or SnapshotTypeCheckpoint
	reason      string // event reason of a failure
	graceKey    string
	id          *string // the status' triggerId
	triggerType v1beta1.SnapshotTriggerType
	triggered   time.Time
	nonce       *int64 // of a MANUAL trigger
	post        func(id string)
	// poll asks Flink; value is the savepoint path or the checkpoint id.
	poll     func(ctx context.Context, id string) (o outcome, cause string, value any)
	complete func(value any)
	giveUp   func()
	reset    func()
}

// manualNonce is the recorded nonce a MANUAL trigger was made for (nil for
// other triggers).
func (s *State[T, S]) manualNonce(trigger v1beta1.SnapshotTriggerType, of func(*v1beta1.JobSpec) *int64) *int64 {
	if trigger != v1beta1.SnapshotTriggerManual || s.recordedJob() == nil {
		return nil
	}
	return of(s.recordedJob())
}

// legacyObserveSavepoint follows the legacy savepoint in flight (PERIODIC
// or MANUAL; an UPGRADE trigger is the stop-with-savepoint's).
func (s *State[T, S]) legacyObserveSavepoint(ctx context.Context) {
	info, jobID := s.JobStatus().SavepointInfo, s.JobStatus().JobID
	if !snapshotrules.LegacySavepointPending(info) {
		return
	}
	nonce := s.manualNonce(info.TriggerType, func(j *v1beta1.JobSpec) *int64 { return j.SavepointTriggerNonce })
	s.legacyObserve(ctx, inFlight{
		typ: v1beta1.SnapshotTypeSavepoint, reason: reasons.ReasonSavepointError, graceKey: config.KeySavepointTriggerGracePeriod,
		id: &info.TriggerID, triggerType: info.TriggerType, triggered: time.UnixMilli(deref(info.TriggerTimestamp)), nonce: nonce,
		post: func(id string) { s.legacyPostSavepoint(jobID, id, info.FormatType) },
		poll: func(ctx context.Context, id string) (outcome, string, any) {
			res, err := s.Client.SavepointStatus(ctx, jobID, id)
			o, cause := legacyClassify(err, res.Pending(), res.Failed(), failureMessage(res.Failure))
			return o, cause, res.Value
		},
		complete: func(path any) { snapshotrules.CompleteLegacySavepoint(info, path.(string), nonce) },
		giveUp:   func() { snapshotrules.FailLegacySavepoint(info) },
		reset:    func() { snapshotrules.ResetLegacySavepointTrigger(info) },
	})
}

// legacyObserveCheckpoint follows the legacy checkpoint in flight.
func (s *State[T, S]) legacyObserveCheckpoint(ctx context.Context) {
	info, jobID := s.JobStatus().CheckpointInfo, s.JobStatus().JobID
	if !snapshotrules.LegacyCheckpointPending(info) {
		return
	}
	nonce := s.manualNonce(info.TriggerType, func(j *v1beta1.JobSpec) *int64 { return j.CheckpointTriggerNonce })
	t := inFlight{typ: v1beta1.SnapshotTypeCheckpoint, reason: reasons.ReasonCheckpointError, graceKey: config.KeyCheckpointTriggerGracePeriod,
		id: &info.TriggerID, triggerType: info.TriggerType, triggered: time.UnixMilli(deref(info.TriggerTimestamp)), nonce: nonce}
	t.post = func(id string) { s.legacyPostCheckpoint(jobID, id, info.FormatType) }
	t.poll = func(ctx context.Context, id string) (outcome, string, any) {
		res, err := s.Client.CheckpointStatus(ctx, jobID, id)
		o, cause := legacyClassify(err, res.Pending(), res.Failed(), failureMessage(res.Failure))
		return o, cause, res.Value
	}
	t.complete = func(any) { snapshotrules.CompleteLegacyCheckpoint(info, nonce) }
	t.giveUp = func() { snapshotrules.FailLegacyCheckpoint(info) }
	t.reset = func() { snapshotrules.ResetLegacyCheckpointTrigger(info) }
	s.legacyObserve(ctx, t)
}

// legacyObserve polls a legacy trigger in flight by its id: pending → look again;
// unknown to Flink within the grace period → the same id again; failed
// within the grace period → again under a new id (Flink keeps the failed
// result under the old one; the grace period still counts from the first
// trigger); past it → given up. A job that stopped running drops it
// (upstream resetSnapshotTriggers). Every failure is a Warning event.
func (s *State[T, S]) legacyObserve(ctx context.Context, t inFlight) {
	msg := snapshotrules.LegacyFailureMessage(t.typ, t.triggerType, t.nonce)
	giveUp := snapshotrules.LegacyGiveUp(t.triggered, gracePeriod(s.Cfg, t.graceKey), s.now)
	log := s.log.WithValues("type", t.typ, "triggerType", t.triggerType)
	fail := func(cause string) {
		s.Event(corev1.EventTypeWarning, t.reason, "%s", msg)
		if giveUp {
			log.Info("Legacy snapshot failed, giving up", "triggerId", *t.id, "reason", cause)
			t.giveUp()
			return
		}
		*t.id = s.e.NewTriggerID()
		log.Info("Legacy snapshot failed, retrying", "triggerId", *t.id, "reason", cause)
		t.post(*t.id)
		s.RequeueWithin(snapshotrules.MinPollDelay)
	}
	if !s.legacyHealthy || s.Client == nil {
		s.Event(corev1.EventTypeWarning, t.reason, "%s", msg)
		log.Info("Job is not running, dropping the pending legacy snapshot", "triggerId", *t.id)
		t.reset()
		return
	}
	switch o, cause, value := t.poll(ctx, *t.id); o {
	case outcomePending:
		s.RequeueWithin(snapshotrules.PollDelay(s.now.Sub(t.triggered)))
	case outcomeUnknown:
		if giveUp {
			fail("Flink does not know trigger id " + *t.id)
			return
		}
		log.Info("Flink does not know the trigger id, sending it again", "triggerId", *t.id)
		t.post(*t.id)
		s.RequeueWithin(snapshotrules.MinPollDelay)
	case outcomeFailed:
		fail(cause)
	case outcomeDone:
		log.Info("Legacy snapshot completed (status fields)", "triggerId", *t.id, "result", value)
		t.complete(value)
	}
}

func legacyClassify(err error, pending, failed bool, failure string) (outcome, string) {
	switch {
	case flink.IsNotFound(err):
		return outcomeUnknown, ""
	case err != nil && flink.IsRetryable(err):
		return outcomePending, ""
	case err != nil:
		return outcomeFailed, err.Error()
	case pending:
		return outcomePending, ""
	case failed:
		return outcomeFailed, failure
	}
	return outcomeDone, ""
}

func failureMessage(f *flink.FailureCause) string {
	if f == nil {
		return "unknown cause"
	}
	return f.Message()
}

// gracePeriod reads a trigger grace period (default 1 min).
func gracePeriod(cfg config.Config, key string) time.Duration {
	d, err := cfg.Duration(key)
	if err != nil || d <= 0 {
		return time.Minute
	}
	return d
}

// legacyCleanupHistory trims status.jobStatus.savepointInfo.savepointHistory
// (upstream's cleanupSavepointHistoryLegacy, pkg/snapshotrules). Disposal goes
// through Flink's POST /savepoint-disposal; an entry leaves the history only
// once its disposal succeeded, polled by id across syncs.
func (s *State[T, S]) legacyCleanupHistory(ctx context.Context, view snapshotrules.JobView, resources bool) {
	info := s.JobStatus().SavepointInfo
	if info == nil || len(info.SavepointHistory) == 0 || s.Client == nil {
		return
	}
	policy, err := snapshotrules.LegacyHistoryPolicyOf(s.Cfg)
	if err != nil {
		s.Fail(reasons.ReasonValidationError, "spec.flinkConfiguration: %v", err)
		return
	}
	completed := 0
	if resources {
		completed = snapshotrules.CompletedSavepointResources(view.Snapshots)
	}
	kept := snapshotrules.CleanupLegacyHistory(info.SavepointHistory, policy, completed, s.now, view.Keep, func(path string) bool {
		return s.legacyDispose(ctx, path)
	})
	if len(kept) != len(info.SavepointHistory) {
		s.log.Info("Cleaned up legacy savepoint history", "removed", len(info.SavepointHistory)-len(kept), "kept", len(kept))
		if len(kept) == 0 {
			kept = nil
		}
		info.SavepointHistory = kept
	}
}

// legacyDispose takes one step disposing a savepoint of the legacy history and
// reports whether it is disposed: the first call POSTs the disposal, later
// ones poll it.
func (s *State[T, S]) legacyDispose(ctx context.Context, path string) bool {
	key := s.key + "\x00" + path
	if id, ok := s.e.legacyDisposals.Load(key); ok {
		res, err := s.Client.DisposalStatus(ctx, id.(string))
		switch {
		case flink.IsNotFound(err):
			s.e.legacyDisposals.Delete(key) // Flink forgot it: ask again next time
			s.RequeueWithin(snapshotrules.MinPollDelay)
			return false
		case err != nil:
			s.RequeueWithin(snapshotrules.MaxPollDelay)
			return false
		case res.Pending():
			s.RequeueWithin(2 * snapshotrules.MinPollDelay)
			return false
		case res.Failed() && !alreadyGone(res.Failure):
			s.e.legacyDisposals.Delete(key)
			s.Event(corev1.EventTypeWarning, reasons.ReasonCleanupFailed, "Disposing savepoint %s failed: %s; it stays in the savepoint history", path, failureMessage(res.Failure))
			s.RequeueWithin(s.ReconcileInterval())
			return false
		}
		s.e.legacyDisposals.Delete(key)
		s.log.Info("Disposed savepoint of the legacy history", "path", path)
		return true
	}
	id, err := s.Client.DisposeSavepoint(ctx, path)
	if err != nil {
		s.log.Info("Disposing savepoint failed, will retry", "path", path, "err", err)
		s.RequeueWithin(s.ReconcileInterval())
		return false
	}
	s.e.legacyDisposals.Store(key, id)
	s.RequeueWithin(snapshotrules.MinPollDelay)
	return false
}

// alreadyGone recognises a disposal that failed because the savepoint is no
// longer there (an earlier attempt removed it before a restart).
func alreadyGone(cause *flink.FailureCause) bool {
	if cause == nil {
		return false
	}
	msg := strings.ToLower(cause.Message() + " " + cause.Class)
	return strings.Contains(msg, "filenotfound") || strings.Contains(msg, "does not exist") || strings.Contains(msg, "no such file")
}
