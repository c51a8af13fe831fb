package snapshot

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/config"
	"github.com/flinkops/flink-operator/pkg/flink"
	"github.com/flinkops/flink-operator/pkg/metrics"
	"github.com/flinkops/flink-operator/pkg/snapshotrules"
)

// syncDeletion disposes a deleted snapshot's savepoint data when asked to,
// then releases the finalizer. A savepoint deleted while IN_PROGRESS is held
// until its attempt ends (bounded by the snapshot timeout): only then is it
// known whether there are files to dispose. Deletion never hangs [ours]: if
// disposal does not succeed within kubernetes.operator.snapshot.dispose.timeout,
// the finalizer goes anyway with a DisposeSkipped event naming the path left
// on storage.
func (c *Controller) syncDeletion(ctx context.Context, cached *v1beta1.FlinkStateSnapshot) (time.Duration, error) {
	if !slices.Contains(cached.Finalizers, v1beta1.SnapshotFinalizer) {
		return 0, nil
	}
	logger := klog.FromContext(ctx)
	s := cached.DeepCopy()
	key := s.Namespace + "/" + s.Name
	now := c.Clock.Now()

	switch {
	case s.Status.State == v1beta1.SnapshotInProgress:
		return c.awaitAttempt(ctx, cached, s)
	case s.Status.State != v1beta1.SnapshotCompleted, s.Status.Path == "":
		return 0, c.removeFinalizer(ctx, s)
	case !snapshotrules.DisposeOnDelete(s):
		if endedAfterDeletion(s) {
			// Whoever deleted it saw no path yet: say where the kept files are.
			c.Recorder.Eventf(s, corev1.EventTypeWarning, ReasonDisposeSkipped,
				"Savepoint deleted while in progress completed at %s; disposeOnDelete is false, so its data is kept", s.Status.Path)
		}
		return 0, c.removeFinalizer(ctx, s)
	}

	path := s.Status.Path
	// [ours] A job that starts from this snapshot by reference keeps its
	// data: the resource goes, the savepoint stays.
	referrers, err := c.Caches.SnapshotReferrers(s.Namespace, s.Name)
	if err != nil {
		return 0, err
	}
	if len(referrers) > 0 {
		c.Recorder.Eventf(s, corev1.EventTypeWarning, ReasonDisposeSkipped,
			"Savepoint %s is referenced by %s (spec.job.initialStateSnapshotRef); its data is kept", path, strings.Join(referrers, ", "))
		return 0, c.removeFinalizer(ctx, s)
	}
	t, terr := c.resolveTarget(s)
	if terr == nil && slices.Contains(t.restorePaths, path) {
		c.Recorder.Eventf(s, corev1.EventTypeWarning, ReasonDisposeSkipped,
			"Savepoint %s is the restore point of %s; its data is kept", path, snapshotrules.JobRefString(&t.ref))
		return 0, c.removeFinalizer(ctx, s)
	}

	timeout, err := c.CurrentConfig().Duration(config.KeySnapshotDisposeTimeout)
	if err != nil {
		return 0, err
	}
	// The disposal's time starts when there was something to dispose: at
	// the deletion, or when an attempt deleted in flight ended.
	start := s.DeletionTimestamp.Time
	if ended, ok := snapshotrules.ParseTime(s.Status.ResultTimestamp); ok && ended.After(start) {
		start = ended
	}
	deadline := start.Add(timeout)
	if !now.Before(deadline) {
		c.Recorder.Eventf(s, corev1.EventTypeWarning, ReasonDisposeSkipped,
			"Could not dispose savepoint within %s (%s); its data is left at %s", timeout, config.KeySnapshotDisposeTimeout, path)
		metrics.SnapshotDisposeSkipped.WithLabelValues(s.Namespace).Inc()
		c.disposals.Delete(key)
		return 0, c.removeFinalizer(ctx, s)
	}
	retry := min(snapshotrules.PollDelay(now.Sub(start)), deadline.Sub(now))

	cleanupFailed := func(format string, args ...any) (time.Duration, error) {
		msg := fmt.Sprintf(format, args...)
		c.Recorder.Event(s, corev1.EventTypeWarning, ReasonCleanupFailed, msg)
		logger.Info("Disposing savepoint failed, will retry", "path", path, "reason", msg, "retryIn", retry)
		return retry, nil
	}
	switch {
	case terr != nil:
		return cleanupFailed("Cannot dispose of savepoint %s: %v", path, terr)
	case !t.found || t.cluster == nil:
		return cleanupFailed("Cannot dispose of savepoint %s because the referenced Flink job %s cannot be found", path, snapshotrules.JobRefString(&t.ref))
	}
	client, err := c.flinkClient(t)
	if err != nil {
		return cleanupFailed("Cannot dispose of savepoint %s: %v", path, err)
	}

	value, pending := c.disposals.Load(key)
	if !pending {
		id, err := client.DisposeSavepoint(ctx, path)
		if err != nil {
			return cleanupFailed("Cannot dispose of savepoint %s: %v", path, err)
		}
		c.disposals.Store(key, id)
		return snapshotrules.MinPollDelay, nil
	}
	res, err := client.DisposalStatus(ctx, value.(string))
	switch {
	case flink.IsNotFound(err):
		c.disposals.Delete(key) // Flink forgot it (restart): ask again
		return snapshotrules.MinPollDelay, nil
	case err != nil:
		return cleanupFailed("Cannot check disposal of savepoint %s: %v", path, err)
	case res.Pending():
		return retry, nil
	case res.Failed() && !alreadyGone(res.Failure):
		c.disposals.Delete(key)
		return cleanupFailed("Disposing savepoint %s failed: %s", path, res.Failure.Message())
	}
	c.disposals.Delete(key)
	logger.Info("Disposed savepoint", "snapshot", klog.KObj(s), "path", path)
	return 0, c.removeFinalizer(ctx, s)
}

// awaitAttempt follows the attempt of a savepoint deleted while IN_PROGRESS
// until it ends, writing only its status (the finalizer stays until the next
// sync decides on the result). Bounded: observe fails the attempt at the
// snapshot timeout, and a failed or timed-out attempt is not retried (the
// next sync sees a state other than IN_PROGRESS and lets the resource go).
// Never blocks: it polls and returns when to look again.
func (c *Controller) awaitAttempt(ctx context.Context, cached, s *v1beta1.FlinkStateSnapshot) (time.Duration, error) {
	t, err := c.resolveTarget(s)
	if err != nil {
		c.Recorder.Eventf(s, corev1.EventTypeWarning, ReasonDisposeSkipped,
			"Snapshot deleted while in progress (trigger id %s) cannot be followed (%v); if Flink completes it, its files stay in the savepoint directory %s",
			s.Status.TriggerID, err, savepointDir(s, &target{}))
		return 0, c.removeFinalizer(ctx, s)
	}
	requeue, err := c.observe(ctx, s, t, true)
	if err != nil {
		return 0, err
	}
	if _, err := c.commitStatus(ctx, cached, s); err != nil {
		return 0, err
	}
	klog.FromContext(ctx).V(2).Info("Deleted snapshot waits for its attempt to end", "snapshot", klog.KObj(s), "state", s.Status.State)
	return max(requeue, snapshotrules.MinPollDelay), nil
}

// endedAfterDeletion reports whether the snapshot's attempt ended after it
// was deleted.
func endedAfterDeletion(s *v1beta1.FlinkStateSnapshot) bool {
	ended, ok := snapshotrules.ParseTime(s.Status.ResultTimestamp)
	return ok && s.DeletionTimestamp != nil && ended.After(s.DeletionTimestamp.Time)
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

func (c *Controller) removeFinalizer(ctx context.Context, s *v1beta1.FlinkStateSnapshot) error {
	toWrite := s.DeepCopy()
	toWrite.Finalizers = slices.DeleteFunc(toWrite.Finalizers, func(f string) bool { return f == v1beta1.SnapshotFinalizer })
	if _, err := c.Client.FlinkV1beta1().FlinkStateSnapshots(s.Namespace).Update(ctx, toWrite, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("removing finalizer of snapshot %s/%s: %w", s.Namespace, s.Name, err)
	}
	return nil
}
