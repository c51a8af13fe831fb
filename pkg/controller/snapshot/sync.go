package snapshot

import (
	"context"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/config"
	"github.com/flinkops/flink-operator/pkg/flink"
	"github.com/flinkops/flink-operator/pkg/snapshots"
)

// Event reasons (snapshots.md §8).
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
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return 0, err
	}
	cached, err := c.caches.Snapshot(ns, name)
	if apierrors.IsNotFound(err) {
		c.release(key)
		return 0, nil
	} else if err != nil {
		return 0, err
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
			requeue := c.fail(s, c.clock.Now(), "cannot observe the snapshot: "+err.Error())
			_, werr := c.commit(ctx, cached, s, false)
			return requeue, werr
		}
		if s.Status.Error != err.Error() {
			c.recorder.Event(s, "Warning", ReasonValidationError, err.Error())
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
		requeue, err = c.observe(ctx, s, t)
	}
	if err != nil {
		return 0, err
	}
	_, err = c.commit(ctx, base, s, t.found)
	return requeue, err
}

// validate re-checks the rules the webhook and CRD enforce (snapshots.md §7),
// for objects created without them.
func (c *Controller) validate(ctx context.Context, s *v1beta1.FlinkStateSnapshot, t *target) error {
	if (s.Spec.Savepoint == nil) == (s.Spec.Checkpoint == nil) {
		return errors.New("exactly one of checkpoint or savepoint configurations has to be set")
	}
	if snapshots.AlreadyExists(s) {
		return nil
	}
	if s.Spec.JobReference == nil || s.Spec.JobReference.Name == "" {
		return errors.New("job reference must be supplied for this snapshot")
	}
	if snapshots.IsCrossNamespace(s) {
		allowed, err := c.cfg.Bool(config.KeySnapshotCrossNamespaceReferencesEnabled)
		if err != nil || !allowed {
			return fmt.Errorf("job reference to namespace %q is not allowed: cross-namespace references need %s: true in the operator configuration",
				s.Spec.JobReference.Namespace, config.KeySnapshotCrossNamespaceReferencesEnabled)
		}
		// Only the webhook checked that the creator may act on the other
		// namespace's job; a reference that may have bypassed it is never
		// acted on.
		guard := errors.New("no validating webhook is configured")
		if c.guard != nil {
			guard = c.guard(ctx)
		}
		if guard != nil {
			return fmt.Errorf("job reference to namespace %q is not trusted: cross-namespace references are acted on only when the operator's validating webhook admits FlinkStateSnapshots (it checks the creator may update the referenced job): %v",
				s.Spec.JobReference.Namespace, guard)
		}
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
	now := c.clock.Now()
	if snapshots.AlreadyExists(s) {
		s.Status.State = v1beta1.SnapshotCompleted
		s.Status.Path = s.Spec.Savepoint.Path
		s.Status.TriggerTimestamp = snapshots.FormatTime(now)
		s.Status.ResultTimestamp = s.Status.TriggerTimestamp
		s.Status.Error = ""
		return 0, nil
	}
	if s.Status.Failures > 0 { // retry backoff, computed from status so it survives restarts
		if last, ok := snapshots.ParseTime(s.Status.ResultTimestamp); ok {
			if wait := last.Add(snapshots.RetryDelay(s.Status.Failures)).Sub(now); wait > 0 {
				return wait, nil
			}
		}
	}
	if !t.running() {
		c.abandon(s, t, now)
		return 0, nil
	}
	dir := ""
	if snapshots.IsSavepoint(s) {
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
	total, _, err := c.cfg.OptionalInt(config.KeySnapshotMaxConcurrent)
	if err != nil {
		return 0, err
	}
	ok, err := c.reserve(key, snapshots.JobKey(s), perJob, total)
	if err != nil {
		return 0, err
	}
	if !ok {
		klog.FromContext(ctx).V(2).Info("Waiting for a concurrency slot", "job", snapshots.JobRefString(&t.ref))
		return waitForSlot, nil
	}

	s.Status.State = v1beta1.SnapshotInProgress
	s.Status.TriggerID = c.newTriggerID()
	s.Status.TriggerTimestamp = snapshots.FormatTime(now)
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
	} else {
		c.recorder.Eventf(s, "Normal", ReasonSnapshotTriggered, "Triggered %s of %s with trigger id %s",
			lower(snapshots.Type(s)), snapshots.JobRefString(&t.ref), s.Status.TriggerID)
	}
	return snapshots.MinPollDelay, nil
}

// post sends the trigger recorded in s.Status to Flink.
func (c *Controller) post(ctx context.Context, s *v1beta1.FlinkStateSnapshot, t *target, dir string) error {
	client, err := c.flinkClient(t)
	if err != nil {
		return err
	}
	if snapshots.IsSavepoint(s) {
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

// observe polls an IN_PROGRESS snapshot by its trigger id.
func (c *Controller) observe(ctx context.Context, s *v1beta1.FlinkStateSnapshot, t *target) (time.Duration, error) {
	now := c.clock.Now()
	if !t.running() {
		c.abandon(s, t, now)
		return 0, nil
	}
	triggered, _ := snapshots.ParseTime(s.Status.TriggerTimestamp)
	elapsed := now.Sub(triggered)
	timeout, err := config.SnapshotTimeout(t.cfg)
	if err != nil {
		return 0, err
	}
	if elapsed > timeout {
		return c.fail(s, now, fmt.Sprintf("%s with trigger id %s did not complete within %s (%s)",
			lower(snapshots.Type(s)), s.Status.TriggerID, timeout, config.KeySnapshotTimeout)), nil
	}

	client, err := c.flinkClient(t)
	if err != nil {
		return 0, err
	}
	res, err := c.poll(ctx, client, s, t)
	if flink.IsNotFound(err) {
		res, err = c.recover(ctx, client, s, t, triggered, elapsed)
	}
	switch {
	case err != nil && flink.IsRetryable(err):
		klog.FromContext(ctx).V(2).Info("Flink not reachable, will poll again", "err", err)
		return snapshots.PollDelay(elapsed), nil
	case err != nil:
		return c.fail(s, now, err.Error()), nil
	case res.failure != "":
		return c.fail(s, now, res.failure), nil
	case res.pending:
		return snapshots.PollDelay(elapsed), nil
	}
	if res.pathErr != "" {
		c.recorder.Eventf(s, "Warning", ReasonCheckpointError,
			"Checkpoint %s was successful, but failed to fetch path. Flink webserver stores only a limited amount of checkpoints in its cache, try increasing 'web.checkpoints.history' config for this job.\n%s",
			s.Name, res.pathErr)
	}
	s.Status.State = v1beta1.SnapshotCompleted
	s.Status.Path = res.path
	s.Status.Error = ""
	s.Status.ResultTimestamp = snapshots.FormatTime(now)
	return 0, nil
}

// pastTimeout reports whether an IN_PROGRESS attempt is older than the
// operator-wide snapshot timeout (used when the job's own config is
// unreadable).
func (c *Controller) pastTimeout(s *v1beta1.FlinkStateSnapshot) bool {
	triggered, ok := snapshots.ParseTime(s.Status.TriggerTimestamp)
	timeout, err := config.SnapshotTimeout(c.cfg)
	return ok && err == nil && c.clock.Since(triggered) > timeout
}

// pollResult is what one status poll learned.
type pollResult struct {
	pending bool
	path    string
	pathErr string // checkpoint completed but its path could not be read
	failure string // Flink reported the operation failed
}

func (c *Controller) poll(ctx context.Context, client *flink.Client, s *v1beta1.FlinkStateSnapshot, t *target) (pollResult, error) {
	if snapshots.IsSavepoint(s) {
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
	details, err := client.CheckpointDetails(ctx, t.jobStatus.JobID, r.Value)
	switch {
	case err != nil && flink.IsRetryable(err):
		return pollResult{}, err
	case err != nil:
		return pollResult{pathErr: err.Error()}, nil
	case details.Status == flink.CheckpointStatsInProgress:
		return pollResult{pending: true}, nil
	case details.ExternalPath == "":
		return pollResult{pathErr: fmt.Sprintf("checkpoint %d has no external path (status %s)", r.Value, details.Status)}, nil
	}
	return pollResult{path: details.ExternalPath}, nil
}

// recover handles a trigger id Flink does not know [ours]: Flink forgets
// results after rest.async.store-duration and on a JobManager restart, and an
// operator crash between writing the intent and the POST leaves an id Flink
// never saw. First look for the result in the job's checkpoint history; if
// it is not there and the attempt is young, re-send the same id (Flink starts
// it once); otherwise the attempt failed.
func (c *Controller) recover(ctx context.Context, client *flink.Client, s *v1beta1.FlinkStateSnapshot, t *target,
	triggered time.Time, elapsed time.Duration) (pollResult, error) {
	stats, err := client.Checkpoints(ctx, t.jobStatus.JobID)
	if err != nil && !flink.IsNotFound(err) { // 404: checkpointing disabled, so no history
		return pollResult{}, err
	}
	since := triggered.Add(-historyTolerance).UnixMilli()
	wantSavepoint := snapshots.IsSavepoint(s)
	var history []flink.CheckpointStatistics
	if stats != nil {
		history = stats.History
	}
	for _, h := range history {
		if h.IsSavepoint != wantSavepoint || h.TriggerTimestamp < since {
			continue
		}
		switch h.Status {
		case flink.CheckpointStatsCompleted:
			klog.FromContext(ctx).Info("Adopted snapshot found in Flink's checkpoint history", "triggerId", s.Status.TriggerID, "checkpointId", h.ID, "path", h.ExternalPath)
			return pollResult{path: h.ExternalPath}, nil
		case flink.CheckpointStatsInProgress:
			return pollResult{pending: true}, nil
		}
	}
	storeDuration := 5 * time.Minute
	if d, ok, err := t.cfg.OptionalDuration(config.FlinkRestAsyncStoreDuration); err == nil && ok {
		storeDuration = d
	}
	if elapsed < storeDuration {
		klog.FromContext(ctx).Info("Flink does not know the trigger id, sending it again", "triggerId", s.Status.TriggerID)
		if err := c.post(ctx, s, t, ""); err != nil {
			return pollResult{}, err
		}
		return pollResult{pending: true}, nil
	}
	return pollResult{failure: fmt.Sprintf("Flink does not know trigger id %s (results are forgotten after %s and on JobManager restart) and no matching %s was found in the job's checkpoint history",
		s.Status.TriggerID, config.FlinkRestAsyncStoreDuration, lower(snapshots.Type(s)))}, nil
}

// fail records a failed attempt and decides between retry and FAILED.
func (c *Controller) fail(s *v1beta1.FlinkStateSnapshot, now time.Time, msg string) time.Duration {
	s.Status.Failures++
	s.Status.Error = msg
	s.Status.ResultTimestamp = snapshots.FormatTime(now)
	s.Status.Path = ""
	reason := ReasonCheckpointError
	if snapshots.IsSavepoint(s) {
		reason = ReasonSavepointError
	}
	c.recorder.Event(s, "Warning", reason, msg)
	if snapshots.RetryAllowed(s.Status.Failures, snapshots.BackoffLimit(s)) {
		s.Status.State = v1beta1.SnapshotTriggerPending
		return snapshots.RetryDelay(s.Status.Failures)
	}
	s.Status.State = v1beta1.SnapshotFailed
	return 0
}

// abandon ends a snapshot whose job is gone or not running; it is not retried.
func (c *Controller) abandon(s *v1beta1.FlinkStateSnapshot, t *target, now time.Time) {
	what := "is not running"
	if !t.found {
		what = "was not found"
	}
	msg := fmt.Sprintf("Secondary resource %s for savepoint %s %s", snapshots.JobRefString(&t.ref), s.Name, what)
	s.Status.State = v1beta1.SnapshotAbandoned
	s.Status.Path = ""
	s.Status.Error = msg
	s.Status.ResultTimestamp = snapshots.FormatTime(now)
	c.recorder.Event(s, "Warning", ReasonSnapshotAbandoned, msg)
}

func (c *Controller) flinkClient(t *target) (*flink.Client, error) {
	port := 8081
	if p, ok, err := t.cfg.OptionalInt(config.FlinkRestPort); err == nil && ok {
		port = p
	}
	url, err := c.endpoints(t.cluster, port)
	if err != nil {
		return nil, err
	}
	timeout, err := t.cfg.Duration(config.KeyFlinkClientTimeout)
	if err != nil {
		return nil, err
	}
	return flink.New(flink.Config{BaseURL: url, Version: t.version, HTTPClient: c.httpClient, Timeout: timeout})
}

func lower(typ string) string {
	if typ == v1beta1.SnapshotTypeSavepoint {
		return "savepoint"
	}
	return "checkpoint"
}
