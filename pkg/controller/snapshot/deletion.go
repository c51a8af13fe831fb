package snapshot

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/config"
	"github.com/flinkops/flink-operator/pkg/flink"
	"github.com/flinkops/flink-operator/pkg/metrics"
	"github.com/flinkops/flink-operator/pkg/reasons"
	"github.com/flinkops/flink-operator/pkg/snapshotrules"
)

// syncDeletion disposes a deleted snapshot's savepoint data when asked to,
// then releases the finalizer. A savepoint deleted while IN_PROGRESS is held
// until its attempt ends (bounded by the snapshot timeout): only then is it
// known whether there are files to dispose. Deletion never hangs [ours]: if
// disposal does not succeed within kubernetes.operator.snapshot.dispose.timeout,
// the finalizer goes anyway with a DisposeSkipped event naming the path left
// on storage.
//
// A savepoint that a job not being deleted still holds (liveHolders) is not
// disposed now [ours]: its disposal is handed to the snapshot's job
// (handOver), which disposes of it once every holder is being deleted or
// gone, and the snapshot goes at once.
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
			c.Recorder.Eventf(s, corev1.EventTypeWarning, reasons.ReasonDisposeSkipped,
				"Savepoint deleted while in progress completed at %s; disposeOnDelete is false, so its data is kept", s.Status.Path)
		}
		return 0, c.removeFinalizer(ctx, s)
	}

	path := s.Status.Path
	t, terr := c.resolveTarget(s)
	holders, err := c.liveHolders(s.Namespace, s.Name, path, t, terr)
	if err != nil {
		return 0, err
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
	switch {
	case len(holders) > 0 && now.Before(deadline):
		return 0, c.handOver(ctx, s, t, terr, holders, start, timeout)
	case len(holders) > 0:
		c.Recorder.Eventf(s, corev1.EventTypeWarning, reasons.ReasonDisposeSkipped,
			"Savepoint %s is held by %s; its data is kept", path, strings.Join(holders, ", "))
		c.disposals.Delete(key)
		return 0, c.removeFinalizer(ctx, s)
	case !now.Before(deadline):
		c.Recorder.Eventf(s, corev1.EventTypeWarning, reasons.ReasonDisposeSkipped,
			"Could not dispose savepoint within %s (%s); its data is left at %s", timeout, config.KeySnapshotDisposeTimeout, path)
		metrics.SnapshotDisposeSkipped.WithLabelValues(s.Namespace).Inc()
		c.disposals.Delete(key)
		return 0, c.removeFinalizer(ctx, s)
	}
	done, retry := c.dispose(ctx, disposal{key: key, about: s, path: path, t: t, terr: terr, start: start, deadline: deadline})
	if !done {
		return retry, nil
	}
	logger.Info("Disposed savepoint", "snapshot", klog.KObj(s), "path", path)
	return 0, c.removeFinalizer(ctx, s)
}

// liveHolders names the jobs not being deleted that hold the savepoint at
// path of snapshot ns/name, so that it must not be disposed [ours]: those
// that start from the snapshot by reference (spec.job.initialStateSnapshotRef),
// and the snapshot's job t when the path is its restore point. A job being
// deleted never starts again: it holds nothing.
func (c *Controller) liveHolders(ns, name, path string, t *target, terr error) ([]string, error) {
	referrers, err := c.Caches.LiveSnapshotReferrers(ns, name)
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(referrers)+1)
	for _, r := range referrers {
		out = append(out, r+" (spec.job.initialStateSnapshotRef)")
	}
	if terr == nil && t.found && !t.deleting && slices.Contains(t.restorePaths, path) {
		job := fmt.Sprintf("%s %s/%s", t.ref.Kind, t.ref.Namespace, t.ref.Name)
		if i := slices.Index(referrers, job); i >= 0 {
			out[i] = job + " (spec.job.initialStateSnapshotRef, its restore point)"
		} else {
			out = append(out, job+" (its restore point)")
		}
	}
	return out, nil
}

// disposal is one savepoint to dispose of through a job's JobManager.
type disposal struct {
	key   string         // of the trigger id in c.disposals
	about runtime.Object // what its events are about
	path  string
	t     *target // the job whose JobManager disposes
	terr  error   // why t could not be resolved
	// start is when the disposal was asked for; deadline when it is given
	// up (the caller checks it before each step).
	start, deadline time.Time
}

// dispose takes one step of a disposal: ask Flink to dispose of the
// savepoint, or poll what it was asked. done: Flink confirmed it (or the
// savepoint was already gone). Otherwise retry says when to look again; a
// failed try is a CleanupFailed event, never an error, and the caller's
// deadline bounds them.
func (c *Controller) dispose(ctx context.Context, d disposal) (done bool, retry time.Duration) {
	now := c.Clock.Now()
	retry = min(snapshotrules.PollDelay(now.Sub(d.start)), d.deadline.Sub(now))
	cleanupFailed := func(format string, args ...any) (bool, time.Duration) {
		msg := fmt.Sprintf(format, args...)
		c.Recorder.Event(d.about, corev1.EventTypeWarning, reasons.ReasonCleanupFailed, msg)
		klog.FromContext(ctx).Info("Disposing savepoint failed, will retry", "path", d.path, "reason", msg, "retryIn", retry)
		return false, retry
	}
	switch {
	case d.terr != nil:
		return cleanupFailed("Cannot dispose of savepoint %s: %v", d.path, d.terr)
	case !d.t.found || d.t.cluster == nil:
		return cleanupFailed("Cannot dispose of savepoint %s because the referenced Flink job %s cannot be found", d.path, snapshotrules.JobRefString(&d.t.ref))
	}
	client, err := c.flinkClient(d.t)
	if err != nil {
		return cleanupFailed("Cannot dispose of savepoint %s: %v", d.path, err)
	}

	value, pending := c.disposals.Load(d.key)
	if !pending {
		id, err := client.DisposeSavepoint(ctx, d.path)
		if err != nil {
			return cleanupFailed("Cannot dispose of savepoint %s: %v", d.path, err)
		}
		c.disposals.Store(d.key, id)
		return false, snapshotrules.MinPollDelay
	}
	res, err := client.DisposalStatus(ctx, value.(string))
	switch {
	case flink.IsNotFound(err):
		c.disposals.Delete(d.key) // Flink forgot it (restart): ask again
		return false, snapshotrules.MinPollDelay
	case err != nil:
		return cleanupFailed("Cannot check disposal of savepoint %s: %v", d.path, err)
	case res.Pending():
		return false, retry
	case res.Failed() && !alreadyGone(res.Failure):
		c.disposals.Delete(d.key)
		return cleanupFailed("Disposing savepoint %s failed: %s", d.path, res.Failure.Message())
	}
	c.disposals.Delete(d.key)
	return true, 0
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
		c.Recorder.Eventf(s, corev1.EventTypeWarning, reasons.ReasonDisposeSkipped,
			"Snapshot deleted while in progress (trigger id %s) cannot be followed (%v); if Flink completes it, its files stay in the savepoint directory %s",
			s.Status.TriggerID, err, requestOf(s, nil).dir)
		return 0, c.removeFinalizer(ctx, s)
	}
	requeue, err := c.observe(ctx, s, t, requestOf(s, t.cfg), true)
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
