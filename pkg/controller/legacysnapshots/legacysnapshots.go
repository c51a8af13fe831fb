// Package legacysnapshots runs legacy-mode snapshots (docs/snapshots.md,
// "Legacy mode") the same way for the FlinkDeployment and
// FlinkSessionJob controllers: a job whose snapshot resources are disabled
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
// Like the stop in pkg/controller/jobengine it is a mechanism both job
// controllers share: it edits the status copy it is given and hands REST
// calls to the caller's post-write actions; the caller writes.
package legacysnapshots

import (
	"context"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/config"
	"github.com/flinkops/flink-operator/pkg/flink"
	"github.com/flinkops/flink-operator/pkg/lifecycle"
	"github.com/flinkops/flink-operator/pkg/snapshots"
)

// Event reasons (the same strings as the controllers' own).
const (
	ReasonSavepointError  = "SavepointError"
	ReasonCheckpointError = "CheckpointError"
	ReasonValidationError = "ValidationError"
	ReasonCleanupFailed   = "CleanupFailed"
)

// ReasonSnapshotResourcesDisabled is the Warning each job gets, once per
// operator process, while the FlinkStateSnapshot CRD is missing, with
// CRDMissingMessage.
const ReasonSnapshotResourcesDisabled = "SnapshotResourcesDisabled"

// CRDMissingMessage says where the job's snapshots go and how to install
// the CRD.
const CRDMissingMessage = "The FlinkStateSnapshot CRD is not installed, so snapshot resources are disabled: " +
	"savepoints and checkpoints of this job are kept in the legacy status fields status.jobStatus.savepointInfo/checkpointInfo. " +
	"Install the CRD with `kubectl apply --server-side -f manifests/crds/flink.apache.org_flinkstatesnapshots.yaml`; " +
	"the operator notices it within a minute and restarts into snapshot-resource mode"

// DelayMessage is upstream's log line for an upgrade that waits for a
// pending legacy savepoint.
const DelayMessage = "Delaying job reconciliation until pending savepoint is completed."

// Runner keeps what legacy snapshots need across syncs: the trigger id
// source and the disposals of the legacy history in flight (in memory;
// after a restart a disposal is asked again, and a savepoint already gone
// counts as disposed).
type Runner struct {
	newTriggerID func() string
	disposals    sync.Map // "<key>\x00<path>" → disposal trigger id
	crdWarned    sync.Map // UIDs that got SnapshotResourcesDisabled
}

// WarnCRDMissing emits SnapshotResourcesDisabled (CRDMissingMessage) for
// the job with this UID, once per operator process.
func (r *Runner) WarnCRDMissing(uid types.UID, event func(typ, reason, format string, args ...any)) {
	if _, seen := r.crdWarned.LoadOrStore(uid, struct{}{}); !seen {
		event(corev1.EventTypeWarning, ReasonSnapshotResourcesDisabled, "%s", CRDMissingMessage)
	}
}

// NewRunner returns a Runner that makes trigger ids with newTriggerID.
func NewRunner(newTriggerID func() string) *Runner {
	return &Runner{newTriggerID: newTriggerID}
}

// Job is one sync's view of a job and the hooks of the caller's sync.
type Job struct {
	// Key identifies the job (namespace/name) across syncs.
	Key string
	// Status is the sync's copy of the job status, edited in place.
	Status *v1beta1.JobStatus
	// Recorded is the recorded (lastReconciledSpec) job spec: the nonce a
	// MANUAL trigger in flight was made for. May be nil.
	Recorded *v1beta1.JobSpec
	Config   config.Config
	Now      time.Time
	// Client reaches the JobManager; nil when it did not answer.
	Client *flink.Client
	// Healthy: the job runs, so a trigger can be made and followed.
	Healthy bool
	// RetryAfter paces retries of a failed history disposal.
	RetryAfter time.Duration
	Log        klog.Logger

	Event func(typ, reason, format string, args ...any)
	Fail  func(reason, format string, args ...any)
	After func(d time.Duration)
	// Then runs an action after the status write.
	Then func(name string, run func(ctx context.Context) error)
}

// Nonces are the manual trigger nonces the caller records as handled.
type Nonces struct {
	Savepoint, Checkpoint *int64
	// Record: the nonces are to be recorded (they were handled this sync).
	Record bool
}

// Reconcile observes legacy triggers in flight, cleans the legacy savepoint
// history, and, when snapshot resources are off (resources false), triggers
// the due periodic or manual snapshots. handleNonces says whether changed
// nonces may be handled now; the result says which to record.
func (r *Runner) Reconcile(ctx context.Context, j Job, view snapshots.JobView, resources, handleNonces bool) Nonces {
	r.observeSavepoint(ctx, j)
	r.observeCheckpoint(ctx, j)
	r.cleanupHistory(ctx, j, view, resources)
	if resources {
		return Nonces{}
	}
	js := j.Status
	running := view.Running && j.Healthy
	sp, cp := view.ReconciledSavepointNonce, view.ReconciledCheckpointNonce

	due := snapshots.LegacyDue(v1beta1.SnapshotTypeSavepoint, snapshots.LegacyJob{
		Config: j.Config, Running: running, Pending: js.SavepointInfo != nil && js.SavepointInfo.TriggerID != "",
		Nonce: view.SavepointNonce, Reconciled: view.ReconciledSavepointNonce,
		LastPeriodic: lastPeriodicSavepoint(js), Since: view.Since,
	}, j.Now)
	if due.Warning != "" {
		j.Fail(ReasonValidationError, "spec.flinkConfiguration: %s", due.Warning)
	}
	if due.Type != "" {
		r.triggerSavepoint(j, due.Type)
		if due.Type == v1beta1.SnapshotTriggerManual {
			sp = due.Nonce
		}
	}
	j.After(due.RequeueAfter)

	if view.CheckpointsSupported {
		due := snapshots.LegacyDue(v1beta1.SnapshotTypeCheckpoint, snapshots.LegacyJob{
			Config: j.Config, Running: running, Pending: js.CheckpointInfo != nil && js.CheckpointInfo.TriggerID != "",
			Nonce: view.CheckpointNonce, Reconciled: view.ReconciledCheckpointNonce,
			LastPeriodic: lastPeriodicCheckpoint(js), Since: view.Since,
		}, j.Now)
		if due.Warning != "" {
			j.Fail(ReasonValidationError, "spec.flinkConfiguration: %s", due.Warning)
		}
		if due.Type != "" {
			r.triggerCheckpoint(j, due.Type)
			if due.Type == v1beta1.SnapshotTriggerManual {
				cp = due.Nonce
			}
		}
		j.After(due.RequeueAfter)
	}

	if !handleNonces {
		return Nonces{}
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
		j.Event(corev1.EventTypeWarning, ReasonCheckpointError, "Checkpoint failed for checkpointTriggerNonce: %d: manual checkpoints need Flink 1.17+", *view.CheckpointNonce)
		cp = view.CheckpointNonce
	}
	return Nonces{Savepoint: sp, Checkpoint: cp, Record: true}
}

// UpgradeBlocked reports whether a spec upgrade must wait: a legacy
// savepoint is pending and kubernetes.operator.job.upgrade.ignore-pending-
// savepoint is not set (upstream's rule; the savepoint belongs to the job
// the upgrade would stop, and ends within Flink's checkpoint timeout or the
// trigger grace period).
func UpgradeBlocked(cfg config.Config, js *v1beta1.JobStatus) bool {
	if !snapshots.LegacySavepointPending(js.SavepointInfo) {
		return false
	}
	ignore, err := cfg.Bool(config.KeyJobUpgradeIgnorePendingSavepoint)
	return err != nil || !ignore
}

// ResetTriggers drops the legacy savepoint/checkpoint in flight when the
// job is about to be stopped (an upgrade that may proceed): its result
// could only be polled on the old job. As upstream, a dropped one is a
// failure event.
func ResetTriggers(j Job) {
	js := j.Status
	var spNonce, cpNonce *int64
	if j.Recorded != nil {
		spNonce, cpNonce = j.Recorded.SavepointTriggerNonce, j.Recorded.CheckpointTriggerNonce
	}
	if info := js.SavepointInfo; snapshots.LegacySavepointPending(info) {
		if info.TriggerType != v1beta1.SnapshotTriggerManual {
			spNonce = nil
		}
		j.Event(corev1.EventTypeWarning, ReasonSavepointError, "%s", snapshots.LegacyFailureMessage(v1beta1.SnapshotTypeSavepoint, info.TriggerType, spNonce))
		snapshots.ResetLegacySavepointTrigger(info)
	}
	if info := js.CheckpointInfo; snapshots.LegacyCheckpointPending(info) {
		if info.TriggerType != v1beta1.SnapshotTriggerManual {
			cpNonce = nil
		}
		j.Event(corev1.EventTypeWarning, ReasonCheckpointError, "%s", snapshots.LegacyFailureMessage(v1beta1.SnapshotTypeCheckpoint, info.TriggerType, cpNonce))
		snapshots.ResetLegacyCheckpointTrigger(info)
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

// triggerSavepoint records a savepoint trigger and sends it after the
// status write.
func (r *Runner) triggerSavepoint(j Job, trigger v1beta1.SnapshotTriggerType) {
	js := j.Status
	if js.SavepointInfo == nil {
		js.SavepointInfo = &v1beta1.SavepointInfo{}
	}
	format := v1beta1.SavepointFormatType(lifecycle.SavepointFormat(j.Config))
	id := r.newTriggerID()
	snapshots.SetLegacySavepointTrigger(js.SavepointInfo, id, trigger, format, j.Now)
	j.Log.Info("Triggering savepoint (legacy status fields)", "jobId", js.JobID, "triggerId", id, "triggerType", trigger)
	postSavepoint(j, js.JobID, id, format)
	j.After(snapshots.MinPollDelay)
}

func postSavepoint(j Job, jobID, id string, format v1beta1.SavepointFormatType) {
	client, log := j.Client, j.Log
	dir, _ := config.SavepointDir(j.Config)
	req := flink.SavepointRequest{TargetDirectory: dir, FormatType: flink.SavepointFormatType(format), TriggerID: id}
	j.Then("trigger savepoint", func(ctx context.Context) error {
		if client == nil {
			return nil
		}
		if _, err := client.TriggerSavepoint(ctx, jobID, req); err != nil {
			log.Info("Savepoint trigger request failed, will check by trigger id", "triggerId", id, "err", err)
		}
		return nil
	})
}

// triggerCheckpoint records a checkpoint trigger and sends it after the
// status write.
func (r *Runner) triggerCheckpoint(j Job, trigger v1beta1.SnapshotTriggerType) {
	js := j.Status
	if js.CheckpointInfo == nil {
		js.CheckpointInfo = &v1beta1.CheckpointInfo{}
	}
	typ := checkpointType(j.Config)
	id := r.newTriggerID()
	snapshots.SetLegacyCheckpointTrigger(js.CheckpointInfo, id, trigger, typ, j.Now)
	j.Log.Info("Triggering checkpoint (legacy status fields)", "jobId", js.JobID, "triggerId", id, "triggerType", trigger)
	postCheckpoint(j, js.JobID, id, typ)
	j.After(snapshots.MinPollDelay)
}

func postCheckpoint(j Job, jobID, id string, typ v1beta1.CheckpointType) {
	client, log := j.Client, j.Log
	req := flink.CheckpointRequest{Type: flink.CheckpointType(typ), TriggerID: id}
	j.Then("trigger checkpoint", func(ctx context.Context) error {
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

// observeSavepoint follows the legacy savepoint in flight (PERIODIC or
// MANUAL; an UPGRADE trigger is the stop-with-savepoint's).
func (r *Runner) observeSavepoint(ctx context.Context, j Job) {
	info := j.Status.SavepointInfo
	if !snapshots.LegacySavepointPending(info) {
		return
	}
	var nonce *int64
	if info.TriggerType == v1beta1.SnapshotTriggerManual && j.Recorded != nil {
		nonce = j.Recorded.SavepointTriggerNonce
	}
	jobID := j.Status.JobID
	r.observe(ctx, j, inFlight{
		typ: v1beta1.SnapshotTypeSavepoint, reason: ReasonSavepointError, graceKey: config.KeySavepointTriggerGracePeriod,
		id: &info.TriggerID, triggerType: info.TriggerType, triggered: time.UnixMilli(deref(info.TriggerTimestamp)), nonce: nonce,
		post: func(id string) { postSavepoint(j, jobID, id, info.FormatType) },
		poll: func(ctx context.Context, id string) (outcome, string, any) {
			res, err := j.Client.SavepointStatus(ctx, jobID, id)
			o, cause := classify(err, res.Pending(), res.Failed(), failureMessage(res.Failure))
			return o, cause, res.Value
		},
		complete: func(path any) { snapshots.CompleteLegacySavepoint(info, path.(string), nonce) },
		giveUp:   func() { snapshots.FailLegacySavepoint(info) },
		reset:    func() { snapshots.ResetLegacySavepointTrigger(info) },
	})
}

// observeCheckpoint follows the legacy checkpoint in flight.
func (r *Runner) observeCheckpoint(ctx context.Context, j Job) {
	info := j.Status.CheckpointInfo
	if !snapshots.LegacyCheckpointPending(info) {
		return
	}
	var nonce *int64
	if info.TriggerType == v1beta1.SnapshotTriggerManual && j.Recorded != nil {
		nonce = j.Recorded.CheckpointTriggerNonce
	}
	jobID := j.Status.JobID
	r.observe(ctx, j, inFlight{
		typ: v1beta1.SnapshotTypeCheckpoint, reason: ReasonCheckpointError, graceKey: config.KeyCheckpointTriggerGracePeriod,
		id: &info.TriggerID, triggerType: info.TriggerType, triggered: time.UnixMilli(deref(info.TriggerTimestamp)), nonce: nonce,
		post: func(id string) { postCheckpoint(j, jobID, id, info.FormatType) },
		poll: func(ctx context.Context, id string) (outcome, string, any) {
			res, err := j.Client.CheckpointStatus(ctx, jobID, id)
			o, cause := classify(err, res.Pending(), res.Failed(), failureMessage(res.Failure))
			return o, cause, res.Value
		},
		complete: func(any) { snapshots.CompleteLegacyCheckpoint(info, nonce) },
		giveUp:   func() { snapshots.FailLegacyCheckpoint(info) },
		reset:    func() { snapshots.ResetLegacyCheckpointTrigger(info) },
	})
}

// observe polls a legacy trigger in flight by its id: pending → look again;
// unknown to Flink within the grace period → the same id again; failed
// within the grace period → again under a new id (Flink keeps the failed
// result under the old one; the grace period still counts from the first
// trigger); past it → given up. A job that stopped running drops it
// (upstream resetSnapshotTriggers). Every failure is a Warning event.
func (r *Runner) observe(ctx context.Context, j Job, t inFlight) {
	msg := snapshots.LegacyFailureMessage(t.typ, t.triggerType, t.nonce)
	giveUp := snapshots.LegacyGiveUp(t.triggered, gracePeriod(j.Config, t.graceKey), j.Now)
	log := j.Log.WithValues("type", t.typ, "triggerType", t.triggerType)
	fail := func(cause string) {
		j.Event(corev1.EventTypeWarning, t.reason, "%s", msg)
		if giveUp {
			log.Info("Legacy snapshot failed, giving up", "triggerId", *t.id, "reason", cause)
			t.giveUp()
			return
		}
		*t.id = r.newTriggerID()
		log.Info("Legacy snapshot failed, retrying", "triggerId", *t.id, "reason", cause)
		t.post(*t.id)
		j.After(snapshots.MinPollDelay)
	}
	if !j.Healthy || j.Client == nil {
		j.Event(corev1.EventTypeWarning, t.reason, "%s", msg)
		log.Info("Job is not running, dropping the pending legacy snapshot", "triggerId", *t.id)
		t.reset()
		return
	}
	switch o, cause, value := t.poll(ctx, *t.id); o {
	case outcomePending:
		j.After(snapshots.PollDelay(j.Now.Sub(t.triggered)))
	case outcomeUnknown:
		if giveUp {
			fail("Flink does not know trigger id " + *t.id)
			return
		}
		log.Info("Flink does not know the trigger id, sending it again", "triggerId", *t.id)
		t.post(*t.id)
		j.After(snapshots.MinPollDelay)
	case outcomeFailed:
		fail(cause)
	case outcomeDone:
		log.Info("Legacy snapshot completed (status fields)", "triggerId", *t.id, "result", value)
		t.complete(value)
	}
}

func classify(err error, pending, failed bool, failure string) (outcome, string) {
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

func deref(p *int64) int64 {
	if p == nil {
		return 0
	}
	return *p
}

// cleanupHistory trims status.jobStatus.savepointInfo.savepointHistory
// (upstream's cleanupSavepointHistoryLegacy, pkg/snapshots). Disposal goes
// through Flink's POST /savepoint-disposal; an entry leaves the history only
// once its disposal succeeded, polled by id across syncs.
func (r *Runner) cleanupHistory(ctx context.Context, j Job, view snapshots.JobView, resources bool) {
	info := j.Status.SavepointInfo
	if info == nil || len(info.SavepointHistory) == 0 || j.Client == nil {
		return
	}
	policy, err := snapshots.LegacyHistoryPolicyOf(j.Config)
	if err != nil {
		j.Fail(ReasonValidationError, "spec.flinkConfiguration: %v", err)
		return
	}
	completed := 0
	if resources {
		completed = snapshots.CompletedSavepointResources(view.Snapshots)
	}
	kept := snapshots.CleanupLegacyHistory(info.SavepointHistory, policy, completed, j.Now, view.Keep, func(path string) bool {
		return r.dispose(ctx, j, path)
	})
	if len(kept) != len(info.SavepointHistory) {
		j.Log.Info("Cleaned up legacy savepoint history", "removed", len(info.SavepointHistory)-len(kept), "kept", len(kept))
		if len(kept) == 0 {
			kept = nil
		}
		info.SavepointHistory = kept
	}
}

// dispose takes one step disposing a savepoint of the legacy history and
// reports whether it is disposed: the first call POSTs the disposal, later
// ones poll it.
func (r *Runner) dispose(ctx context.Context, j Job, path string) bool {
	key := j.Key + "\x00" + path
	if id, ok := r.disposals.Load(key); ok {
		res, err := j.Client.DisposalStatus(ctx, id.(string))
		switch {
		case flink.IsNotFound(err):
			r.disposals.Delete(key) // Flink forgot it: ask again next time
			j.After(snapshots.MinPollDelay)
			return false
		case err != nil:
			j.After(snapshots.MaxPollDelay)
			return false
		case res.Pending():
			j.After(2 * snapshots.MinPollDelay)
			return false
		case res.Failed() && !alreadyGone(res.Failure):
			r.disposals.Delete(key)
			j.Event(corev1.EventTypeWarning, ReasonCleanupFailed, "Disposing savepoint %s failed: %s; it stays in the savepoint history", path, failureMessage(res.Failure))
			j.After(j.RetryAfter)
			return false
		}
		r.disposals.Delete(key)
		j.Log.Info("Disposed savepoint of the legacy history", "path", path)
		return true
	}
	id, err := j.Client.DisposeSavepoint(ctx, path)
	if err != nil {
		j.Log.Info("Disposing savepoint failed, will retry", "path", path, "err", err)
		j.After(j.RetryAfter)
		return false
	}
	r.disposals.Store(key, id)
	j.After(snapshots.MinPollDelay)
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
