package snapshot

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/config"
	"github.com/flinkops/flink-operator/pkg/flink"
	"github.com/flinkops/flink-operator/pkg/snapshotrules"
)

// Event reasons (docs/snapshots.md, "Events and metrics").
const (
	ReasonSavepointError    = "SavepointError"
	ReasonCheckpointError   = "CheckpointError"
	ReasonSnapshotAbandoned = "SnapshotAbandoned"
	ReasonValidationError   = "ValidationError"
	ReasonCleanupFailed     = "CleanupFailed"
	ReasonDisposeSkipped    = "DisposeSkipped"
	ReasonSnapshotTriggered = "SnapshotTriggered"
	ReasonSnapshotCompleted = "SnapshotCompleted"
)

// Requeue pacing for conditions the controller cannot speed up itself; the
// informer handlers wake snapshots earlier when the job or a sibling changes.
const (
	waitForValidation = time.Minute      // e.g. the target does not exist yet
	waitForSlot       = 30 * time.Second // another snapshot of the job is in flight
	// historyTolerance allows for clock skew between operator and JobManager
	// when matching a forgotten trigger against Flink's checkpoint history.
	historyTolerance = 2 * time.Second
)

// Sync reconciles one snapshot: read from the cache, decide, make at most one
// REST call that changes Flink, write status (and labels) at most once each,
// and say when to look again.
func (c *Controller) Sync(ctx context.Context, key string) (time.Duration, error) {
	if jobKey, ok := strings.CutPrefix(key, disposalsKeyPrefix); ok {
		return c.syncPendingDisposals(ctx, jobKey) // handover.go
	}
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return 0, err
	}
	cached, err := c.Caches.Snapshot(ns, name)
	if apierrors.IsNotFound(err) {
		c.release(key)
		c.writtenOver.Delete(key)
		return 0, nil
	} else if err != nil {
		return 0, err
	}
	if c.cacheBehind(key, cached.ResourceVersion) {
		klog.FromContext(ctx).V(4).Info("Cache behind this process's last write, waiting for it")
		return cacheLagRecheck, nil
	}
	if cached.DeletionTimestamp != nil {
		return c.syncDeletion(ctx, cached)
	}

	s := cached.DeepCopy()
	if s.Status.State == "" {
		s.Status.State = v1beta1.SnapshotTriggerPending
	}
	// Terminal snapshots cost nothing: no REST call, and a write only if
	// someone changed the operator's labels.
	if s.Status.State.IsTerminal() {
		t, _ := c.resolveTarget(s)
		_, err := c.commit(ctx, cached, s, t != nil && t.found)
		return 0, err
	}

	t, err := c.resolveTarget(s)
	if err == nil {
		err = c.validate(ctx, s, t)
	}
	if err != nil {
		// The spec or its job is unusable: say so, change nothing else. An
		// attempt already in flight that stays unobservable still ends at
		// the snapshot timeout, so nothing is stuck forever.
		if s.Status.State == v1beta1.SnapshotInProgress && c.pastTimeout(s) {
			requeue := c.fail(s, c.Clock.Now(), "cannot observe the snapshot: "+err.Error())
			_, werr := c.commit(ctx, cached, s, false)
			return requeue, werr
		}
		if s.Status.Error != err.Error() {
			c.Recorder.Event(s, corev1.EventTypeWarning, ReasonValidationError, err.Error())
			s.Status.Error = err.Error()
		}
		_, err := c.commit(ctx, cached, s, false)
		return waitForValidation, err
	}

	base := cached // what the API server has; trigger moves it forward
	var requeue time.Duration
	switch s.Status.State {
	case v1beta1.SnapshotTriggerPending:
		requeue, err = c.trigger(ctx, &base, s, t)
	case v1beta1.SnapshotInProgress:
		requeue, err = c.observe(ctx, s, t, false)
	}
	if err != nil {
		return 0, err
	}
	_, err = c.commit(ctx, base, s, t.found)
	return requeue, err
}

// validate re-checks the rules the webhook and CRD enforce (docs/webhook.md,
// "What is validated"), for objects created without them.
func (c *Controller) validate(ctx context.Context, s *v1beta1.FlinkStateSnapshot, t *target) error {
	if (s.Spec.Savepoint == nil) == (s.Spec.Checkpoint == nil) {
		return errors.New("exactly one of checkpoint or savepoint configurations has to be set")
	}
	// Before the alreadyExists shortcut: such a savepoint may name another
	// namespace's job too, and disposing it on delete goes through that job's
	// cluster.
	if snapshotrules.IsCrossNamespace(s) {
		allowed, err := c.Config.Bool(config.KeySnapshotCrossNamespaceReferencesEnabled)
		if err != nil || !allowed {
			return fmt.Errorf("job reference to namespace %q is not allowed: cross-namespace references need %s: true in the operator configuration",
				s.Spec.JobReference.Namespace, config.KeySnapshotCrossNamespaceReferencesEnabled)
		}
		// Only the webhook checked that the creator may act on the other
		// namespace's job; a reference this very snapshot cannot prove was
		// reviewed (its stamp) is never acted on.
		guard := errors.New("the operator has no admission guard")
		if c.guard != nil {
			guard = c.guard(ctx, s)
		}
		if guard != nil {
			return fmt.Errorf("job reference to namespace %q is not trusted: cross-namespace references are acted on only when the operator's admission webhook reviewed them (it checks the creator may update the referenced job, then stamps the snapshot): %v",
				s.Spec.JobReference.Namespace, guard)
		}
	}
	if snapshotrules.AlreadyExists(s) {
		return nil
	}
	if s.Spec.JobReference == nil || s.Spec.JobReference.Name == "" {
		return errors.New("job reference must be supplied for this snapshot")
	}
	if !t.found && s.Status.State == v1beta1.SnapshotTriggerPending {
		return fmt.Errorf("target for snapshot %s/%s was not found", t.ref.Namespace, t.ref.Name)
	}
	return nil
}

// trigger starts a Flink savepoint or checkpoint for a TRIGGER_PENDING
// snapshot. Crash safety: the trigger id is chosen here and written to status
// (IN_PROGRESS) before the POST that carries it, so a restart finds the id
// and can only ever re-send the same operation.
func (c *Controller) trigger(ctx context.Context, base **v1beta1.FlinkStateSnapshot, s *v1beta1.FlinkStateSnapshot, t *target) (time.Duration, error) {
	now := c.Clock.Now()
	if snapshotrules.AlreadyExists(s) {
		s.Status.State = v1beta1.SnapshotCompleted
		s.Status.Path = s.Spec.Savepoint.Path
		s.Status.TriggerTimestamp = snapshotrules.FormatTime(now)
		s.Status.ResultTimestamp = s.Status.TriggerTimestamp
		s.Status.Error = ""
		return 0, nil
	}
	if s.Status.Failures > 0 { // retry backoff, computed from status so it survives restarts
		if last, ok := snapshotrules.ParseTime(s.Status.ResultTimestamp); ok {
			if wait := last.Add(snapshotrules.RetryDelay(s.Status.Failures)).Sub(now); wait > 0 {
				return wait, nil
			}
		}
	}
	if !t.running() {
		c.abandon(s, t, now, "")
		return 0, nil
	}
	dir := ""
	if snapshotrules.IsSavepoint(s) {
		dir = s.Spec.Savepoint.Path
		if dir == "" {
			dir, _ = config.SavepointDir(t.cfg)
		}
		if dir == "" {
			return c.fail(s, now, fmt.Sprintf("either the savepoint path in the spec or configuration %s (or %s) in the Flink resource has to be supplied",
				config.FlinkSavepointDir, config.FlinkSavepointDirDeprecated)), nil
		}
	} else if !t.version.AtLeast(flink.MustParseVersion("1.17")) {
		return c.fail(s, now, "Manual checkpoint triggering is not supported for this Flink job (requires Flink 1.17+)"), nil
	}

	key := s.Namespace + "/" + s.Name
	perJob, _, err := t.cfg.OptionalInt(config.KeySnapshotMaxConcurrentPerJob)
	if err != nil {
		return 0, err
	}
	total, _, err := c.CurrentConfig().OptionalInt(config.KeySnapshotMaxConcurrent)
	if err != nil {
		return 0, err
	}
	ok, err := c.reserve(key, snapshotrules.JobKey(s), perJob, total)
	if err != nil {
		return 0, err
	}
	if !ok {
		klog.FromContext(ctx).V(2).Info("Waiting for a concurrency slot", "job", snapshotrules.JobRefString(&t.ref))
		return waitForSlot, nil
	}

	// The first write: labels (Type and Trigger columns,
	// snapshot.state=IN_PROGRESS) and, for a savepoint, the finalizer, so a
	// deletion from now on waits for the attempt to end instead of leaving
	// Flink writing files nobody will dispose. It precedes the intent: the
	// status subresource cannot carry metadata, and a finalizer written
	// after the POST would leave a window. Operator-made snapshots carry
	// both from creation, so for them this writes nothing.
	meta, err := c.writeMetadata(ctx, *base, s, v1beta1.SnapshotInProgress, true)
	if err != nil {
		c.release(key)
		return 0, err
	}
	*base = meta
	s.ObjectMeta = *meta.ObjectMeta.DeepCopy()

	s.Status.State = v1beta1.SnapshotInProgress
	s.Status.TriggerID = c.NewTriggerID()
	s.Status.TriggerTimestamp = snapshotrules.FormatTime(now)
	s.Status.Error = ""
	s.Status.Path = ""
	written, err := c.commit(ctx, *base, s, true)
	if err != nil {
		c.release(key)
		return 0, err // nothing was sent to Flink: the next attempt picks a new id
	}
	*base = written
	if c.afterIntent != nil {
		c.afterIntent(key)
	}
	if err := c.post(ctx, s, t, dir); err != nil {
		// Flink may or may not have started it; the next observe asks by id
		// and re-sends the same id if Flink does not know it.
		klog.FromContext(ctx).Info("Triggering snapshot failed, will check by trigger id", "triggerId", s.Status.TriggerID, "err", err)
	} else if c.normalEvents() {
		c.Recorder.Eventf(s, corev1.EventTypeNormal, ReasonSnapshotTriggered, "Triggered %s of %s with trigger id %s",
			lower(snapshotrules.Type(s)), snapshotrules.JobRefString(&t.ref), s.Status.TriggerID)
	}
	return snapshotrules.MinPollDelay, nil
}

// post sends the trigger recorded in s.Status to Flink.
func (c *Controller) post(ctx context.Context, s *v1beta1.FlinkStateSnapshot, t *target, dir string) error {
	client, err := c.flinkClient(t)
	if err != nil {
		return err
	}
	if snapshotrules.IsSavepoint(s) {
		if dir == "" {
			dir = s.Spec.Savepoint.Path
			if dir == "" {
				dir, _ = config.SavepointDir(t.cfg)
			}
		}
		format := flink.SavepointFormatType(s.Spec.Savepoint.FormatType)
		if format == "" || format == flink.SavepointFormatType(v1beta1.SavepointFormatUnknown) {
			format = flink.SavepointFormatCanonical
		}
		_, err = client.TriggerSavepoint(ctx, t.jobStatus.JobID, flink.SavepointRequest{
			TargetDirectory: dir, FormatType: format, TriggerID: s.Status.TriggerID,
		})
		return err
	}
	_, err = client.TriggerCheckpoint(ctx, t.jobStatus.JobID, flink.CheckpointRequest{
		Type: flink.CheckpointFull, TriggerID: s.Status.TriggerID,
	})
	return err
}

// observe polls an IN_PROGRESS snapshot by its trigger id. deleting: the
// snapshot is being deleted and only the end of the attempt matters; a
// trigger id Flink never saw is not sent again.
func (c *Controller) observe(ctx context.Context, s *v1beta1.FlinkStateSnapshot, t *target, deleting bool) (time.Duration, error) {
	now := c.Clock.Now()
	triggered, _ := snapshotrules.ParseTime(s.Status.TriggerTimestamp)
	elapsed := now.Sub(triggered)
	if !t.running() {
		return c.settleStopped(ctx, s, t, now), nil
	}
	timeout, err := config.SnapshotTimeout(t.cfg)
	if err != nil {
		return 0, err
	}
	if elapsed > timeout {
		return c.timedOut(ctx, s, t, now, timeout), nil
	}

	client, err := c.flinkClient(t)
	if err != nil {
		return 0, err
	}
	res, err := c.poll(ctx, client, s, t)
	if flink.IsNotFound(err) {
		res, err = c.recover(ctx, client, s, t, triggered, elapsed, deleting)
	}
	switch {
	case err != nil && flink.IsRetryable(err):
		klog.FromContext(ctx).V(2).Info("Flink not reachable, will poll again", "err", err)
		return snapshotrules.PollDelay(elapsed), nil
	case err != nil:
		return c.fail(s, now, err.Error()), nil
	case res.failure != "":
		return c.fail(s, now, res.failure), nil
	case res.pathPending:
		klog.FromContext(ctx).V(2).Info("Checkpoint completed, waiting for its path in the job's checkpoint statistics", "checkpointId", res.checkpointID)
		return snapshotrules.PollDelay(elapsed), nil
	case res.pending:
		return snapshotrules.PollDelay(elapsed), nil
	}
	c.complete(s, res, now)
	return 0, nil
}

// timedOut ends an attempt older than the snapshot timeout. A checkpoint
// that Flink finished may be waiting only for its path to reach the job's
// checkpoint statistics, which the operator does not record between polls:
// Flink is asked once more, so that the failure names the checkpoint and
// what to change, and a path that arrived just now is not thrown away.
func (c *Controller) timedOut(ctx context.Context, s *v1beta1.FlinkStateSnapshot, t *target, now time.Time, timeout time.Duration) time.Duration {
	msg := fmt.Sprintf("%s with trigger id %s did not complete within %s (%s)",
		lower(snapshotrules.Type(s)), s.Status.TriggerID, timeout, config.KeySnapshotTimeout)
	if snapshotrules.IsSavepoint(s) {
		return c.fail(s, now, msg)
	}
	client, err := c.flinkClient(t)
	if err != nil {
		return c.fail(s, now, msg)
	}
	res, err := c.poll(ctx, client, s, t)
	switch {
	case err == nil && res.path != "":
		c.complete(s, res, now)
		return 0
	case err == nil && res.pathPending:
		msg = pathFailure(res.checkpointID, fmt.Sprintf("it was not in the job's checkpoint statistics within %s (%s)", timeout, config.KeySnapshotTimeout))
	}
	return c.fail(s, now, msg)
}

// complete records a finished attempt; res.path is never empty.
func (c *Controller) complete(s *v1beta1.FlinkStateSnapshot, res pollResult, now time.Time) {
	s.Status.State = v1beta1.SnapshotCompleted
	s.Status.Path = res.path
	s.Status.Error = ""
	s.Status.ResultTimestamp = snapshotrules.FormatTime(now)
}

// settleStopped ends an IN_PROGRESS snapshot whose job stopped running; it
// is not retried. The job's JobManager may still be up and Flink may have
// finished the snapshot: a savepoint that completed while its job was being
// suspended is recorded COMPLETED with its path rather than left on
// storage, named by no resource. So Flink is asked once more by trigger id
// before abandoning. When the result cannot be read, or Flink is still at
// it, the abandon message (status.error and the SnapshotAbandoned event)
// names the savepoint directory, so the files can be found.
func (c *Controller) settleStopped(ctx context.Context, s *v1beta1.FlinkStateSnapshot, t *target, now time.Time) time.Duration {
	where := ""
	if dir := savepointDir(s, t); snapshotrules.IsSavepoint(s) && dir != "" {
		where = fmt.Sprintf("; if Flink completes savepoint %s (trigger id %s), its files are in %s", s.Name, s.Status.TriggerID, dir)
	}
	if !t.found || t.cluster == nil {
		c.abandon(s, t, now, where)
		return 0
	}
	client, err := c.flinkClient(t)
	if err != nil {
		c.abandon(s, t, now, fmt.Sprintf("; its result could not be read (%v)%s", err, where))
		return 0
	}
	res, err := c.poll(ctx, client, s, t)
	switch {
	case err != nil:
		c.abandon(s, t, now, fmt.Sprintf("; its result could not be read (%v)%s", err, where))
	case res.failure != "":
		c.abandon(s, t, now, "; "+res.failure)
	case res.pathPending:
		c.abandon(s, t, now, fmt.Sprintf("; checkpoint %d completed, but its path was not in the job's checkpoint statistics yet", res.checkpointID))
	case res.pending:
		c.abandon(s, t, now, "; Flink was still taking it"+where)
	default:
		klog.FromContext(ctx).Info("Snapshot completed although its job stopped", "snapshot", klog.KObj(s), "path", res.path)
		c.complete(s, res, now)
	}
	return 0
}

// savepointDir is where a savepoint of s goes: its own path, else the job's
// configured savepoint directory; "" when unknown (the job is gone).
func savepointDir(s *v1beta1.FlinkStateSnapshot, t *target) string {
	if s.Spec.Savepoint != nil && s.Spec.Savepoint.Path != "" {
		return s.Spec.Savepoint.Path
	}
	if t.cfg != nil {
		dir, _ := config.SavepointDir(t.cfg)
		return dir
	}
	return ""
}

// pastTimeout reports whether an IN_PROGRESS attempt is older than the
// operator-wide snapshot timeout (used when the job's own config is
// unreadable).
func (c *Controller) pastTimeout(s *v1beta1.FlinkStateSnapshot) bool {
	triggered, ok := snapshotrules.ParseTime(s.Status.TriggerTimestamp)
	timeout, err := config.SnapshotTimeout(c.CurrentConfig())
	return ok && err == nil && c.Clock.Since(triggered) > timeout
}

// pollResult is what one status poll learned. The attempt is done only
// with a path: a COMPLETED snapshot always has one.
type pollResult struct {
	pending bool
	path    string
	failure string // the attempt failed: Flink says so, or the path cannot be had
	// pathPending: Flink finished checkpoint checkpointID, but its path is
	// not in the job's checkpoint statistics yet.
	pathPending  bool
	checkpointID int64
}

func (c *Controller) poll(ctx context.Context, client *flink.Client, s *v1beta1.FlinkStateSnapshot, t *target) (pollResult, error) {
	if snapshotrules.IsSavepoint(s) {
		r, err := client.SavepointStatus(ctx, t.jobStatus.JobID, s.Status.TriggerID)
		switch {
		case err != nil:
			return pollResult{}, err
		case r.Failed():
			return pollResult{failure: "savepoint failed: " + r.Failure.Message()}, nil
		case r.Pending():
			return pollResult{pending: true}, nil
		}
		return pollResult{path: r.Value}, nil
	}
	r, err := client.CheckpointStatus(ctx, t.jobStatus.JobID, s.Status.TriggerID)
	switch {
	case err != nil:
		return pollResult{}, err
	case r.Failed():
		return pollResult{failure: "checkpoint failed: " + r.Failure.Message()}, nil
	case r.Pending():
		return pollResult{pending: true}, nil
	}
	return checkpointPath(ctx, client, t.jobStatus.JobID, r.Value)
}

// checkpointPath reads the path of checkpoint id, which Flink reported
// finished, from the job's checkpoint statistics: the trigger result has
// only the id. Flink's REST handlers answer from a copy of the statistics
// kept for rest.cache.checkpoint-statistics.timeout (default 3 s) after the
// read that took it, so when anyone read them just before (the poll of the
// previous snapshot of the job, say) they show the checkpoint IN_PROGRESS or
// not at all; that is waited for (pathPending), within the snapshot
// timeout, as they catch up within seconds. The statistics keep only the last
// web.checkpoints.history checkpoints: a checkpoint older than the oldest
// one kept will never show up, and fails the attempt at once. So does an
// entry that is there without a path, or an error answer.
func checkpointPath(ctx context.Context, client *flink.Client, jobID string, id int64) (pollResult, error) {
	details, err := client.CheckpointDetails(ctx, jobID, id)
	switch {
	case err == nil:
		return pathFromStats(id, details), nil
	case flink.IsRetryable(err):
		return pollResult{}, err
	case !flink.IsNotFound(err):
		return pollResult{failure: pathFailure(id, err.Error())}, nil
	}
	stats, err := client.Checkpoints(ctx, jobID)
	switch {
	case err != nil && flink.IsRetryable(err):
		return pollResult{}, err
	case err != nil:
		return pollResult{failure: pathFailure(id, err.Error())}, nil
	}
	var oldest int64
	for i := range stats.History {
		h := &stats.History[i]
		if h.ID == id { // the details answer lags behind the history
			return pathFromStats(id, h), nil
		}
		if oldest == 0 || h.ID < oldest {
			oldest = h.ID
		}
	}
	// Ids grow with every attempt and enter the history in that order, so
	// only one below the oldest entry is certainly gone; anything else may
	// still be on its way (an empty history included: the cached copy may
	// predate the job's first checkpoint).
	if oldest > id {
		return pollResult{failure: pathFailure(id, fmt.Sprintf("it is no longer in the job's checkpoint statistics (the oldest kept is checkpoint %d)", oldest))}, nil
	}
	return pollResult{pathPending: true, checkpointID: id}, nil
}

// pathFromStats reads the path from the statistics entry of checkpoint id.
func pathFromStats(id int64, h *flink.CheckpointStatistics) pollResult {
	switch {
	case h.Status == flink.CheckpointStatsInProgress:
		return pollResult{pathPending: true, checkpointID: id}
	case h.Status == flink.CheckpointStatsCompleted && h.ExternalPath != "":
		return pollResult{path: h.ExternalPath}
	case h.Status == flink.CheckpointStatsCompleted:
		return pollResult{failure: pathFailure(id, "its statistics have no external path")}
	}
	return pollResult{failure: pathFailure(id, fmt.Sprintf("its statistics say %s: %s", h.Status, h.FailureMessage))}
}

// pathFailure is the status error of a checkpoint that completed without a
// path the operator can read; it keeps upstream's hint.
func pathFailure(id int64, why string) string {
	return fmt.Sprintf("checkpoint %d was successful, but failed to fetch its path: %s. Flink webserver stores only a limited amount of checkpoints in its cache, try increasing 'web.checkpoints.history' config for this job",
		id, why)
}

// recover handles a trigger id Flink does not know [ours]: Flink forgets
// results after rest.async.store-duration and on a JobManager restart, and an
// operator crash between writing the intent and the POST leaves an id Flink
// never saw. First look for the result in the job's checkpoint history (see
// adoptFromHistory); if it is not there and the attempt is young, re-send
// the same id (Flink starts it once) unless the snapshot is being deleted;
// otherwise the attempt failed.
func (c *Controller) recover(ctx context.Context, client *flink.Client, s *v1beta1.FlinkStateSnapshot, t *target,
	triggered time.Time, elapsed time.Duration, deleting bool) (pollResult, error) {
	stats, err := client.Checkpoints(ctx, t.jobStatus.JobID)
	if err != nil && !flink.IsNotFound(err) { // 404: checkpointing disabled, so no history
		return pollResult{}, err
	}
	var history []flink.CheckpointStatistics
	if stats != nil {
		history = stats.History
	}
	claimed, err := c.claimedPaths(s)
	if err != nil {
		return pollResult{}, err
	}
	if h := adoptFromHistory(s, t.cfg, history, triggered, claimed); h != nil {
		switch h.Status {
		case flink.CheckpointStatsCompleted:
			if h.ExternalPath == "" {
				return pollResult{failure: fmt.Sprintf("%s found in the job's checkpoint history as %d completed, but without a path",
					lower(snapshotrules.Type(s)), h.ID)}, nil
			}
			klog.FromContext(ctx).Info("Adopted snapshot found in Flink's checkpoint history", "triggerId", s.Status.TriggerID, "checkpointId", h.ID, "path", h.ExternalPath)
			return pollResult{path: h.ExternalPath}, nil
		case flink.CheckpointStatsInProgress:
			return pollResult{pending: true}, nil
		default:
			return pollResult{failure: fmt.Sprintf("%s failed (found in the job's checkpoint history as %d): %s", lower(snapshotrules.Type(s)), h.ID, h.FailureMessage)}, nil
		}
	}
	storeDuration := 5 * time.Minute
	if d, ok, err := t.cfg.OptionalDuration(config.FlinkRestAsyncStoreDuration); err == nil && ok {
		storeDuration = d
	}
	if elapsed < storeDuration && !deleting {
		klog.FromContext(ctx).Info("Flink does not know the trigger id, sending it again", "triggerId", s.Status.TriggerID)
		if err := c.post(ctx, s, t, ""); err != nil {
			return pollResult{}, err
		}
		return pollResult{pending: true}, nil
	}
	return pollResult{failure: fmt.Sprintf("Flink does not know trigger id %s (results are forgotten after %s and on JobManager restart) and no matching %s was found in the job's checkpoint history",
		s.Status.TriggerID, config.FlinkRestAsyncStoreDuration, lower(snapshotrules.Type(s)))}, nil
}

// claimedPaths are the paths other snapshots of the same job already name.
func (c *Controller) claimedPaths(s *v1beta1.FlinkStateSnapshot) (map[string]bool, error) {
	claimed := map[string]bool{}
	others, err := c.Caches.SnapshotsOfJob(snapshotrules.JobKey(s))
	if err != nil {
		return nil, err
	}
	for _, o := range others {
		if o.Status.Path != "" && (o.Namespace != s.Namespace || o.Name != s.Name) {
			claimed[o.Status.Path] = true
		}
	}
	return claimed, nil
}

// adoptFromHistory picks the entry of Flink's checkpoint history that is
// most likely the forgotten attempt: the EARLIEST one of the same kind
// triggered at or after the attempt (less historyTolerance for clock skew),
// whatever its status. A later entry is someone else's snapshot (the next
// periodic checkpoint, another resource's savepoint): adopting it would make
// two resources name one path, and deleting one would dispose the other's
// data, so entries whose path another snapshot of the job names are skipped
// too. Same kind means:
//   - savepoints: a savepoint, not a stop-with-savepoint's (SYNC_SAVEPOINT,
//     an upgrade's), in the requested format where Flink reports it;
//   - checkpoints: the operator asks for a FULL checkpoint, which Flink's
//     history does not tell apart from an incremental one (checkpoint_type
//     is CHECKPOINT for both), so a checkpoint is adopted only when the job
//     takes no incremental checkpoints at all.
//
// nil when nothing qualifies.
func adoptFromHistory(s *v1beta1.FlinkStateSnapshot, cfg config.Config, history []flink.CheckpointStatistics,
	triggered time.Time, claimed map[string]bool) *flink.CheckpointStatistics {
	since := triggered.Add(-historyTolerance).UnixMilli()
	var best *flink.CheckpointStatistics
	for i := range history {
		h := &history[i]
		if h.TriggerTimestamp < since || !sameKind(s, cfg, h) || (h.ExternalPath != "" && claimed[h.ExternalPath]) {
			continue
		}
		if best == nil || h.TriggerTimestamp < best.TriggerTimestamp || (h.TriggerTimestamp == best.TriggerTimestamp && h.ID < best.ID) {
			best = h
		}
	}
	return best
}

func sameKind(s *v1beta1.FlinkStateSnapshot, cfg config.Config, h *flink.CheckpointStatistics) bool {
	if !snapshotrules.IsSavepoint(s) {
		return !h.IsSavepoint && !incrementalCheckpoints(cfg)
	}
	if !h.IsSavepoint || strings.EqualFold(h.CheckpointType, "SYNC_SAVEPOINT") {
		return false
	}
	want := string(s.Spec.Savepoint.FormatType)
	if want == "" || want == string(v1beta1.SavepointFormatUnknown) {
		want = string(flink.SavepointFormatCanonical)
	}
	return h.SavepointFormat == "" || strings.EqualFold(h.SavepointFormat, want)
}

// incrementalCheckpoints reports whether the job may take incremental
// checkpoints (execution.checkpointing.incremental, formerly
// state.backend.incremental; default false). Unparseable counts as yes: it
// only ever makes adoption stricter.
func incrementalCheckpoints(cfg config.Config) bool {
	for _, key := range []string{"execution.checkpointing.incremental", "state.backend.incremental"} {
		if v, ok := cfg.Raw(key); ok {
			on, err := strconv.ParseBool(strings.TrimSpace(v))
			return err != nil || on
		}
	}
	return false
}

// fail records a failed attempt and decides between retry and FAILED.
func (c *Controller) fail(s *v1beta1.FlinkStateSnapshot, now time.Time, msg string) time.Duration {
	s.Status.Failures++
	s.Status.Error = msg
	s.Status.ResultTimestamp = snapshotrules.FormatTime(now)
	s.Status.Path = ""
	// The SavepointError/CheckpointError event is emitted by commit once
	// this failure is recorded.
	if snapshotrules.RetryAllowed(s.Status.Failures, snapshotrules.BackoffLimit(s)) {
		s.Status.State = v1beta1.SnapshotTriggerPending
		return snapshotrules.RetryDelay(s.Status.Failures)
	}
	s.Status.State = v1beta1.SnapshotFailed
	return 0
}

// abandon ends a snapshot whose job is gone or not running; it is not
// retried. detail is appended to the message. The SnapshotAbandoned event is
// emitted by commit once the state is recorded.
func (c *Controller) abandon(s *v1beta1.FlinkStateSnapshot, t *target, now time.Time, detail string) {
	what := "is not running"
	if !t.found {
		what = "was not found"
	}
	s.Status.State = v1beta1.SnapshotAbandoned
	s.Status.Path = ""
	s.Status.Error = fmt.Sprintf("Secondary resource %s for savepoint %s %s", snapshotrules.JobRefString(&t.ref), s.Name, what) + detail
	s.Status.ResultTimestamp = snapshotrules.FormatTime(now)
}

// flinkClient is a REST client for the JobManager of t's cluster, in the
// Flink version it runs (see resolveTarget).
func (c *Controller) flinkClient(t *target) (*flink.Client, error) {
	return c.dialer.Client(t.jobManager)
}

func lower(typ string) string {
	if typ == v1beta1.SnapshotTypeSavepoint {
		return "savepoint"
	}
	return "checkpoint"
}
