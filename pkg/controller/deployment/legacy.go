package deployment

import (
	"context"
	"strings"
	"time"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/config"
	"github.com/flinkops/flink-operator/pkg/flink"
	"github.com/flinkops/flink-operator/pkg/lifecycle"
	"github.com/flinkops/flink-operator/pkg/snapshots"
)

// Legacy mode (snapshots.md §6, upstream-operator.md §3.6): a job whose
// snapshot resources are disabled (operator-wide, per job, or because the
// FlinkStateSnapshot CRD is not installed) keeps its periodic and manual
// savepoints and checkpoints in the deprecated status fields
// status.jobStatus.savepointInfo / checkpointInfo.
//
// Crash safety is the project's usual write-ahead: the operator chooses the
// trigger id, records {triggerId, triggerTimestamp, triggerType, formatType}
// (and a handled nonce, in lastReconciledSpec) in the status write, and only
// then POSTs the trigger carrying that id. A crash on either side of the POST
// leaves a status whose id the next sync polls; a 404 for it (Flink never got
// the POST, or restarted) within the grace period sends the same id again,
// which Flink de-duplicates. Polls are requeues, never waits.
//
// A legacy trigger in flight when snapshot resources get enabled is still
// observed to its end (upstream 3.3 step 2), and the legacy history is
// cleaned in both modes (completed snapshot resources count toward its
// limit, upstream §5).

// Event reasons of legacy mode and of the missing CRD.
const (
	ReasonSnapshotResourcesDisabled = "SnapshotResourcesDisabled"
	ReasonCleanupFailed             = "CleanupFailed"
)

// snapshotCRDMissingMessage is the Warning event each job gets while the
// operator runs without the FlinkStateSnapshot CRD.
const snapshotCRDMissingMessage = "The FlinkStateSnapshot CRD is not installed, so snapshot resources are disabled: " +
	"savepoints and checkpoints of this job are kept in the legacy status fields status.jobStatus.savepointInfo/checkpointInfo. " +
	"Install the CRD with `kubectl apply --server-side -f manifests/crds/flink.apache.org_flinkstatesnapshots.yaml`; " +
	"the operator notices it within a minute and restarts into snapshot-resource mode"

// warnSnapshotCRDMissing emits SnapshotResourcesDisabled once per job (per
// operator process) while the CRD is missing.
func (c *Controller) warnSnapshotCRDMissing(sc *syncState) {
	if !c.snapshotCRDMissing || sc.dep.Spec.Job == nil {
		return
	}
	if _, seen := c.crdWarned.LoadOrStore(sc.dep.UID, struct{}{}); seen {
		return
	}
	sc.event("Warning", ReasonSnapshotResourcesDisabled, "%s", snapshotCRDMissingMessage)
}

// reconcileLegacy observes legacy triggers in flight, triggers due ones
// (only when snapshot resources are off for the job), and cleans the legacy
// savepoint history. nonces says whether changed nonces may be handled now.
func (c *Controller) reconcileLegacy(ctx context.Context, sc *syncState, view snapshots.JobView, resources, nonces bool) error {
	c.observeLegacySavepoint(ctx, sc)
	c.observeLegacyCheckpoint(ctx, sc)
	if err := c.cleanupLegacyHistory(ctx, sc, view, resources); err != nil {
		return err
	}
	if resources {
		return nil
	}
	js := &sc.dep.Status.JobStatus
	running := view.Running && c.jobHealthy(sc)
	sp, cp := view.ReconciledSavepointNonce, view.ReconciledCheckpointNonce

	due := snapshots.LegacyDue(v1beta1.SnapshotTypeSavepoint, snapshots.LegacyJob{
		Config: sc.cfg, Running: running, Pending: js.SavepointInfo != nil && js.SavepointInfo.TriggerID != "",
		Nonce: view.SavepointNonce, Reconciled: view.ReconciledSavepointNonce,
		LastPeriodic: lastPeriodicSavepoint(js), Since: view.Since,
	}, sc.now)
	if due.Warning != "" {
		sc.fail(ReasonValidationError, "spec.flinkConfiguration: %s", due.Warning)
	}
	if due.Type != "" {
		c.triggerLegacySavepoint(sc, due.Type)
		if due.Type == v1beta1.SnapshotTriggerManual {
			sp = due.Nonce
		}
	}
	sc.after(due.RequeueAfter)

	if view.CheckpointsSupported {
		due := snapshots.LegacyDue(v1beta1.SnapshotTypeCheckpoint, snapshots.LegacyJob{
			Config: sc.cfg, Running: running, Pending: js.CheckpointInfo != nil && js.CheckpointInfo.TriggerID != "",
			Nonce: view.CheckpointNonce, Reconciled: view.ReconciledCheckpointNonce,
			LastPeriodic: lastPeriodicCheckpoint(js), Since: view.Since,
		}, sc.now)
		if due.Warning != "" {
			sc.fail(ReasonValidationError, "spec.flinkConfiguration: %s", due.Warning)
		}
		if due.Type != "" {
			c.triggerLegacyCheckpoint(sc, due.Type)
			if due.Type == v1beta1.SnapshotTriggerManual {
				cp = due.Nonce
			}
		}
		sc.after(due.RequeueAfter)
	}

	if !nonces {
		return nil
	}
	// Nonces removed from the spec are recorded as such; a checkpoint nonce
	// this Flink version cannot honour is said once, then consumed.
	if view.SavepointNonce == nil {
		sp = nil
	}
	switch {
	case view.CheckpointNonce == nil:
		cp = nil
	case !view.CheckpointsSupported && !equalNonce(view.CheckpointNonce, view.ReconciledCheckpointNonce):
		sc.event("Warning", ReasonCheckpointError, "Checkpoint failed for checkpointTriggerNonce: %d: manual checkpoints need Flink 1.17+", *view.CheckpointNonce)
		cp = view.CheckpointNonce
	}
	return c.recordNonces(sc, sp, cp)
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

// triggerLegacySavepoint records a savepoint trigger and sends it after the
// status write.
func (c *Controller) triggerLegacySavepoint(sc *syncState, trigger v1beta1.SnapshotTriggerType) {
	js := &sc.dep.Status.JobStatus
	if js.SavepointInfo == nil {
		js.SavepointInfo = &v1beta1.SavepointInfo{}
	}
	format := v1beta1.SavepointFormatType(lifecycle.SavepointFormat(sc.cfg))
	id := c.newTriggerID()
	snapshots.SetLegacySavepointTrigger(js.SavepointInfo, id, trigger, format, sc.now)
	sc.log.Info("Triggering savepoint (legacy status fields)", "jobId", js.JobID, "triggerId", id, "triggerType", trigger)
	c.postLegacySavepoint(sc, js.JobID, id, format)
	sc.after(snapshots.MinPollDelay)
}

func (c *Controller) postLegacySavepoint(sc *syncState, jobID, id string, format v1beta1.SavepointFormatType) {
	client, log := sc.client, sc.log
	dir, _ := config.SavepointDir(sc.cfg)
	req := flink.SavepointRequest{TargetDirectory: dir, FormatType: flink.SavepointFormatType(format), TriggerID: id}
	sc.then("trigger savepoint", func(ctx context.Context) error {
		if client == nil {
			return nil
		}
		if _, err := client.TriggerSavepoint(ctx, jobID, req); err != nil {
			log.Info("Savepoint trigger request failed, will check by trigger id", "triggerId", id, "err", err)
		}
		return nil
	})
}

// triggerLegacyCheckpoint records a checkpoint trigger and sends it after
// the status write.
func (c *Controller) triggerLegacyCheckpoint(sc *syncState, trigger v1beta1.SnapshotTriggerType) {
	js := &sc.dep.Status.JobStatus
	if js.CheckpointInfo == nil {
		js.CheckpointInfo = &v1beta1.CheckpointInfo{}
	}
	typ := checkpointType(sc.cfg)
	id := c.newTriggerID()
	snapshots.SetLegacyCheckpointTrigger(js.CheckpointInfo, id, trigger, typ, sc.now)
	sc.log.Info("Triggering checkpoint (legacy status fields)", "jobId", js.JobID, "triggerId", id, "triggerType", trigger)
	c.postLegacyCheckpoint(sc, js.JobID, id, typ)
	sc.after(snapshots.MinPollDelay)
}

func (c *Controller) postLegacyCheckpoint(sc *syncState, jobID, id string, typ v1beta1.CheckpointType) {
	client, log := sc.client, sc.log
	req := flink.CheckpointRequest{Type: flink.CheckpointType(typ), TriggerID: id}
	sc.then("trigger checkpoint", func(ctx context.Context) error {
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

// legacyOutcome is what Flink says about a legacy trigger.
type legacyOutcome int

const (
	legacyPending legacyOutcome = iota
	legacyDone
	legacyFailed
	legacyUnknown // Flink does not know the trigger id
)

// observeLegacySavepoint follows the legacy savepoint in flight (PERIODIC or
// MANUAL; an UPGRADE trigger is the stop-with-savepoint's).
func (c *Controller) observeLegacySavepoint(ctx context.Context, sc *syncState) {
	js := &sc.dep.Status.JobStatus
	info := js.SavepointInfo
	if !snapshots.LegacySavepointPending(info) {
		return
	}
	var nonce *int64
	if info.TriggerType == v1beta1.SnapshotTriggerManual {
		nonce = sc.recorded.Spec.Job.SavepointTriggerNonce
	}
	msg := snapshots.LegacyFailureMessage(v1beta1.SnapshotTypeSavepoint, info.TriggerType, nonce)
	triggered := time.UnixMilli(derefInt64(info.TriggerTimestamp))
	giveUp := snapshots.LegacyGiveUp(triggered, gracePeriod(sc.cfg, config.KeySavepointTriggerGracePeriod), sc.now)
	fail := func(cause string) {
		sc.event("Warning", ReasonSavepointError, "%s", msg)
		if giveUp {
			sc.log.Info("Savepoint failed, giving up", "triggerId", info.TriggerID, "triggerType", info.TriggerType, "reason", cause)
			snapshots.FailLegacySavepoint(info)
			return
		}
		// Within the grace period: again, under a new id (Flink keeps the
		// failed result under the old one); the grace period still counts
		// from the first trigger.
		info.TriggerID = c.newTriggerID()
		sc.log.Info("Savepoint failed, retrying", "triggerId", info.TriggerID, "reason", cause)
		c.postLegacySavepoint(sc, js.JobID, info.TriggerID, info.FormatType)
		sc.after(snapshots.MinPollDelay)
	}
	if !c.jobHealthy(sc) {
		// Upstream resetSnapshotTriggers: the job stopped running.
		sc.event("Warning", ReasonSavepointError, "%s", msg)
		sc.log.Info("Job is not running, dropping the pending savepoint", "triggerId", info.TriggerID)
		snapshots.ResetLegacySavepointTrigger(info)
		return
	}
	res, err := sc.client.SavepointStatus(ctx, js.JobID, info.TriggerID)
	switch outcome, cause := classifyLegacy(err, res.Pending(), res.Failed(), failureMessage(res.Failure)); outcome {
	case legacyPending:
		sc.after(snapshots.PollDelay(sc.now.Sub(triggered)))
	case legacyUnknown:
		if giveUp {
			fail("Flink does not know trigger id " + info.TriggerID)
			return
		}
		sc.log.Info("Flink does not know the savepoint trigger id, sending it again", "triggerId", info.TriggerID)
		c.postLegacySavepoint(sc, js.JobID, info.TriggerID, info.FormatType)
		sc.after(snapshots.MinPollDelay)
	case legacyFailed:
		fail(cause)
	case legacyDone:
		sc.log.Info("Savepoint completed (legacy status fields)", "triggerId", info.TriggerID, "triggerType", info.TriggerType, "path", res.Value)
		snapshots.CompleteLegacySavepoint(info, res.Value, nonce)
	}
}

// observeLegacyCheckpoint follows the legacy checkpoint in flight.
func (c *Controller) observeLegacyCheckpoint(ctx context.Context, sc *syncState) {
	js := &sc.dep.Status.JobStatus
	info := js.CheckpointInfo
	if !snapshots.LegacyCheckpointPending(info) {
		return
	}
	var nonce *int64
	if info.TriggerType == v1beta1.SnapshotTriggerManual {
		nonce = sc.recorded.Spec.Job.CheckpointTriggerNonce
	}
	msg := snapshots.LegacyFailureMessage(v1beta1.SnapshotTypeCheckpoint, info.TriggerType, nonce)
	triggered := time.UnixMilli(derefInt64(info.TriggerTimestamp))
	giveUp := snapshots.LegacyGiveUp(triggered, gracePeriod(sc.cfg, config.KeyCheckpointTriggerGracePeriod), sc.now)
	fail := func(cause string) {
		sc.event("Warning", ReasonCheckpointError, "%s", msg)
		if giveUp {
			sc.log.Info("Checkpoint failed, giving up", "triggerId", info.TriggerID, "triggerType", info.TriggerType, "reason", cause)
			snapshots.FailLegacyCheckpoint(info)
			return
		}
		info.TriggerID = c.newTriggerID()
		sc.log.Info("Checkpoint failed, retrying", "triggerId", info.TriggerID, "reason", cause)
		c.postLegacyCheckpoint(sc, js.JobID, info.TriggerID, info.FormatType)
		sc.after(snapshots.MinPollDelay)
	}
	if !c.jobHealthy(sc) {
		sc.event("Warning", ReasonCheckpointError, "%s", msg)
		sc.log.Info("Job is not running, dropping the pending checkpoint", "triggerId", info.TriggerID)
		snapshots.ResetLegacyCheckpointTrigger(info)
		return
	}
	res, err := sc.client.CheckpointStatus(ctx, js.JobID, info.TriggerID)
	switch outcome, cause := classifyLegacy(err, res.Pending(), res.Failed(), failureMessage(res.Failure)); outcome {
	case legacyPending:
		sc.after(snapshots.PollDelay(sc.now.Sub(triggered)))
	case legacyUnknown:
		if giveUp {
			fail("Flink does not know trigger id " + info.TriggerID)
			return
		}
		sc.log.Info("Flink does not know the checkpoint trigger id, sending it again", "triggerId", info.TriggerID)
		c.postLegacyCheckpoint(sc, js.JobID, info.TriggerID, info.FormatType)
		sc.after(snapshots.MinPollDelay)
	case legacyFailed:
		fail(cause)
	case legacyDone:
		sc.log.Info("Checkpoint completed (legacy status fields)", "triggerId", info.TriggerID, "triggerType", info.TriggerType, "checkpointId", res.Value)
		snapshots.CompleteLegacyCheckpoint(info, nonce)
	}
}

func classifyLegacy(err error, pending, failed bool, failure string) (legacyOutcome, string) {
	switch {
	case flink.IsNotFound(err):
		return legacyUnknown, ""
	case err != nil && flink.IsRetryable(err):
		return legacyPending, ""
	case err != nil:
		return legacyFailed, err.Error()
	case pending:
		return legacyPending, ""
	case failed:
		return legacyFailed, failure
	}
	return legacyDone, ""
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

// resetLegacyTriggers drops the legacy savepoint/checkpoint in flight when
// the job is about to be stopped (an upgrade): its result could only be
// polled on the old job. As upstream, a dropped one is a failure event.
func (c *Controller) resetLegacyTriggers(sc *syncState) {
	js := &sc.dep.Status.JobStatus
	var spNonce, cpNonce *int64
	if sc.recorded != nil && sc.recorded.Spec.Job != nil {
		spNonce, cpNonce = sc.recorded.Spec.Job.SavepointTriggerNonce, sc.recorded.Spec.Job.CheckpointTriggerNonce
	}
	if info := js.SavepointInfo; snapshots.LegacySavepointPending(info) {
		if info.TriggerType != v1beta1.SnapshotTriggerManual {
			spNonce = nil
		}
		sc.event("Warning", ReasonSavepointError, "%s", snapshots.LegacyFailureMessage(v1beta1.SnapshotTypeSavepoint, info.TriggerType, spNonce))
		snapshots.ResetLegacySavepointTrigger(info)
	}
	if info := js.CheckpointInfo; snapshots.LegacyCheckpointPending(info) {
		if info.TriggerType != v1beta1.SnapshotTriggerManual {
			cpNonce = nil
		}
		sc.event("Warning", ReasonCheckpointError, "%s", snapshots.LegacyFailureMessage(v1beta1.SnapshotTypeCheckpoint, info.TriggerType, cpNonce))
		snapshots.ResetLegacyCheckpointTrigger(info)
	}
}

// cleanupLegacyHistory trims status.jobStatus.savepointInfo.savepointHistory
// (upstream's cleanupSavepointHistoryLegacy, pkg/snapshots). Disposal goes
// through Flink's POST /savepoint-disposal; an entry leaves the history only
// once its disposal succeeded, polled by id across syncs.
func (c *Controller) cleanupLegacyHistory(ctx context.Context, sc *syncState, view snapshots.JobView, resources bool) error {
	info := sc.dep.Status.JobStatus.SavepointInfo
	if info == nil || len(info.SavepointHistory) == 0 || sc.client == nil {
		return nil
	}
	policy, err := snapshots.LegacyHistoryPolicyOf(sc.cfg)
	if err != nil {
		sc.fail(ReasonValidationError, "spec.flinkConfiguration: %v", err)
		return nil
	}
	completed := 0
	if resources {
		completed = snapshots.CompletedSavepointResources(view.Snapshots)
	}
	kept := snapshots.CleanupLegacyHistory(info.SavepointHistory, policy, completed, sc.now, view.Keep, func(path string) bool {
		return c.disposeLegacy(ctx, sc, path)
	})
	if len(kept) != len(info.SavepointHistory) {
		sc.log.Info("Cleaned up legacy savepoint history", "removed", len(info.SavepointHistory)-len(kept), "kept", len(kept))
		if len(kept) == 0 {
			kept = nil
		}
		info.SavepointHistory = kept
	}
	return nil
}

// disposeLegacy takes one step disposing a savepoint of the legacy history
// and reports whether it is disposed: the first call POSTs the disposal,
// later ones poll it (the trigger id is kept in memory; after a restart the
// disposal is asked again, and a savepoint already gone counts as disposed).
func (c *Controller) disposeLegacy(ctx context.Context, sc *syncState, path string) bool {
	key := sc.key + "\x00" + path
	if id, ok := c.legacyDisposals.Load(key); ok {
		res, err := sc.client.DisposalStatus(ctx, id.(string))
		switch {
		case flink.IsNotFound(err):
			c.legacyDisposals.Delete(key) // Flink forgot it: ask again next time
			sc.after(snapshots.MinPollDelay)
			return false
		case err != nil:
			sc.after(snapshots.MaxPollDelay)
			return false
		case res.Pending():
			sc.after(2 * snapshots.MinPollDelay)
			return false
		case res.Failed() && !alreadyGone(res.Failure):
			c.legacyDisposals.Delete(key)
			sc.event("Warning", ReasonCleanupFailed, "Disposing savepoint %s failed: %s; it stays in the savepoint history", path, failureMessage(res.Failure))
			sc.after(sc.reconcileInterval())
			return false
		}
		c.legacyDisposals.Delete(key)
		sc.log.Info("Disposed savepoint of the legacy history", "path", path)
		return true
	}
	id, err := sc.client.DisposeSavepoint(ctx, path)
	if err != nil {
		sc.log.Info("Disposing savepoint failed, will retry", "path", path, "err", err)
		sc.after(sc.reconcileInterval())
		return false
	}
	c.legacyDisposals.Store(key, id)
	sc.after(snapshots.MinPollDelay)
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
