package snapshot

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	flinkcache "github.com/flinkops/flink-operator/pkg/cache"
	"github.com/flinkops/flink-operator/pkg/config"
	"github.com/flinkops/flink-operator/pkg/metrics"
	"github.com/flinkops/flink-operator/pkg/reasons"
	"github.com/flinkops/flink-operator/pkg/snapshotrules"
)

// Handed-over disposals [ours].
//
// A savepoint to dispose of on deletion that a job not being deleted still
// holds (it starts from the snapshot by reference, or it is the restore
// point of the snapshot's job) must not be disposed yet. Keeping the
// snapshot until its holders go would not do: kubectl delete waits for the
// finalizer, and the usual clean-up (README "Try it") deletes the savepoint
// before the jobs started from it, so the command deleting those would not
// come while it waits. So the snapshot goes at once, and its disposal is
// recorded on the snapshot's job (flinkcache.AnnotationPendingDisposals),
// whose JobManager is the one that can dispose of it; syncPendingDisposals
// disposes of it there once every holder is being deleted or gone, and the
// job's own deletion keeps its JobManager up meanwhile
// (flinkcache.PendingDisposals). Bounded: a holder still there
// kubernetes.operator.snapshot.dispose.timeout after the snapshot's deletion
// keeps the data (DisposeSkipped, as before), and the disposal itself has
// that long again from when the last of them began its deletion. Crash
// safe: the record is written before the finalizer goes, and writing it
// again is a no-op.

// disposalsKeyPrefix marks, in the queue beside the snapshots' keys, the
// disposals handed to a job: "disposals:" + its snapshotrules.JobKey.
const disposalsKeyPrefix = "disposals:"

// jobObject is a FlinkDeployment or a FlinkSessionJob.
type jobObject interface {
	metav1.Object
	runtime.Object
}

// job returns the cached job of kind ns/name, or a NotFound error.
func (c *Controller) job(kind v1beta1.JobReferenceKind, ns, name string) (jobObject, error) {
	switch kind {
	case v1beta1.JobReferenceKindDeployment:
		return c.Caches.Deployment(ns, name)
	case v1beta1.JobReferenceKindSessionJob:
		return c.Caches.SessionJob(ns, name)
	}
	return nil, fmt.Errorf("unknown job kind %q", kind)
}

// handOver lets a deleted snapshot go whose savepoint holders (jobs not
// being deleted) still need: its disposal is recorded on the snapshot's job
// first. Without a job to record it on, the data is kept as before.
func (c *Controller) handOver(ctx context.Context, s *v1beta1.FlinkStateSnapshot, t *target, terr error, holders []string, start time.Time, timeout time.Duration) error {
	path, held := s.Status.Path, strings.Join(holders, ", ")
	if terr != nil || !t.found {
		c.Recorder.Eventf(s, corev1.EventTypeWarning, reasons.ReasonDisposeSkipped, "Savepoint %s is held by %s; its data is kept", path, held)
		return c.removeFinalizer(ctx, s)
	}
	entry := flinkcache.PendingDisposal{Path: path, Snapshot: s.Namespace + "/" + s.Name, Since: snapshotrules.FormatTime(start)}
	if err := c.addPendingDisposal(ctx, t.ref, entry); err != nil {
		return err // the next sync looks again (a job gone meanwhile: kept, as above)
	}
	c.Recorder.Eventf(s, corev1.EventTypeNormal, reasons.ReasonDisposeDeferred,
		"Savepoint %s is still held by %s: %s %s/%s disposes of it once they are all being deleted, if that is within %s (%s) of this deletion; otherwise its data is kept",
		path, held, t.ref.Kind, t.ref.Namespace, t.ref.Name, timeout, config.KeySnapshotDisposeTimeout)
	klog.FromContext(ctx).Info("Savepoint disposal handed to its job", "snapshot", klog.KObj(s), "path", path,
		"job", t.ref.Namespace+"/"+t.ref.Name, "heldBy", held)
	return c.removeFinalizer(ctx, s)
}

// addPendingDisposal records entry on the job ref, unless its path is
// already there (a sync that wrote it, then did not get to release the
// snapshot).
func (c *Controller) addPendingDisposal(ctx context.Context, ref v1beta1.JobReference, entry flinkcache.PendingDisposal) error {
	job, err := c.job(ref.Kind, ref.Namespace, ref.Name)
	if err != nil {
		return err
	}
	list, err := flinkcache.PendingDisposalsOf(job)
	if err != nil {
		klog.FromContext(ctx).Error(err, "Replacing an unreadable annotation")
		list = nil
	}
	if slices.ContainsFunc(list, func(d flinkcache.PendingDisposal) bool { return d.Path == entry.Path }) {
		return nil
	}
	return c.writePendingDisposals(ctx, job, append(list, entry))
}

// writePendingDisposals writes list onto the cached job (an update of
// the object, so a concurrent change is a conflict, retried).
func (c *Controller) writePendingDisposals(ctx context.Context, job jobObject, list []flinkcache.PendingDisposal) error {
	var err error
	switch o := job.(type) {
	case *v1beta1.FlinkDeployment:
		w := o.DeepCopy()
		flinkcache.SetPendingDisposals(w, list)
		_, err = c.Client.FlinkV1beta1().FlinkDeployments(w.Namespace).Update(ctx, w, metav1.UpdateOptions{})
	case *v1beta1.FlinkSessionJob:
		w := o.DeepCopy()
		flinkcache.SetPendingDisposals(w, list)
		_, err = c.Client.FlinkV1beta1().FlinkSessionJobs(w.Namespace).Update(ctx, w, metav1.UpdateOptions{})
	}
	if err != nil {
		return fmt.Errorf("writing the savepoint disposals of %s/%s: %w", job.GetNamespace(), job.GetName(), err)
	}
	return nil
}

// syncPendingDisposals works on the disposals handed to the job jobKey: a
// savepoint still held waits (bounded), one no longer held is disposed of
// through the job's JobManager, and each one done or given up leaves the
// list.
func (c *Controller) syncPendingDisposals(ctx context.Context, jobKey string) (time.Duration, error) {
	parts := strings.SplitN(jobKey, "/", 3)
	if len(parts) != 3 {
		return 0, fmt.Errorf("malformed job key %q", jobKey)
	}
	kind, ns, name := v1beta1.JobReferenceKind(parts[0]), parts[1], parts[2]
	logger := klog.FromContext(ctx)
	job, err := c.job(kind, ns, name)
	if apierrors.IsNotFound(err) {
		c.forgetDisposals(jobKey) // what it held went with it
		return 0, nil
	} else if err != nil {
		return 0, err
	}
	list, err := flinkcache.PendingDisposalsOf(job)
	if err != nil {
		logger.Error(err, "Ignoring the handed-over savepoint disposals")
		return 0, nil
	}
	if len(list) == 0 {
		return 0, nil
	}
	timeout, err := c.CurrentConfig().Duration(config.KeySnapshotDisposeTimeout)
	if err != nil {
		return 0, err
	}
	ref := &v1beta1.JobReference{Kind: kind, Namespace: ns, Name: name}
	t, terr := c.resolveTarget(&v1beta1.FlinkStateSnapshot{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns},
		Spec:       v1beta1.FlinkStateSnapshotSpec{JobReference: ref},
	})
	now := c.Clock.Now()
	var requeue time.Duration
	wait := func(d time.Duration) {
		if d > 0 && (requeue == 0 || d < requeue) {
			requeue = d
		}
	}
	keep := make([]flinkcache.PendingDisposal, 0, len(list))
	for _, d := range list {
		key := disposalsKeyPrefix + jobKey + "\x00" + d.Path
		since, _ := snapshotrules.ParseTime(d.Since) // unreadable: long past
		snapNS, snapName, _ := strings.Cut(d.Snapshot, "/")
		holders, err := c.liveHolders(snapNS, snapName, d.Path, t, terr)
		if err != nil {
			return 0, err
		}
		if len(holders) > 0 {
			deadline := since.Add(timeout)
			if !now.Before(deadline) {
				c.Recorder.Eventf(job, corev1.EventTypeWarning, reasons.ReasonDisposeSkipped,
					"Savepoint %s of deleted FlinkStateSnapshot %s is still held by %s %s after its deletion (%s); its data is kept",
					d.Path, d.Snapshot, strings.Join(holders, ", "), timeout, config.KeySnapshotDisposeTimeout)
				c.disposals.Delete(key)
				continue
			}
			keep = append(keep, d)
			wait(min(snapshotrules.PollDelay(now.Sub(since)), deadline.Sub(now)))
			continue
		}
		// Nothing holds it: the disposal has its time from when the last
		// holder began its deletion (this job's, the usual last one).
		start := since
		if del := job.GetDeletionTimestamp(); del != nil && del.After(start) {
			start = del.Time
		}
		deadline := start.Add(timeout)
		if !now.Before(deadline) {
			c.Recorder.Eventf(job, corev1.EventTypeWarning, reasons.ReasonDisposeSkipped,
				"Could not dispose savepoint %s of deleted FlinkStateSnapshot %s within %s (%s); its data is left there",
				d.Path, d.Snapshot, timeout, config.KeySnapshotDisposeTimeout)
			metrics.SnapshotDisposeSkipped.WithLabelValues(snapNS).Inc()
			c.disposals.Delete(key)
			continue
		}
		done, retry := c.dispose(ctx, disposal{key: key, about: job, path: d.Path, t: t, terr: terr, start: start, deadline: deadline})
		if done {
			logger.Info("Disposed savepoint", "snapshot", d.Snapshot, "path", d.Path)
			continue
		}
		keep = append(keep, d)
		wait(retry)
	}
	if len(keep) < len(list) {
		if err := c.writePendingDisposals(ctx, job, keep); err != nil {
			return 0, err
		}
	}
	return requeue, nil
}

// forgetDisposals drops the disposal trigger ids of a job that is gone.
func (c *Controller) forgetDisposals(jobKey string) {
	prefix := disposalsKeyPrefix + jobKey + "\x00"
	c.disposals.Range(func(k, _ any) bool {
		if strings.HasPrefix(k.(string), prefix) {
			c.disposals.Delete(k)
		}
		return true
	})
}

// handedOver reports whether a job carries handed-over disposals.
func handedOver(obj any) bool {
	m, ok := obj.(metav1.Object)
	return ok && m.GetAnnotations()[flinkcache.AnnotationPendingDisposals] != ""
}

// DisposalsKey is the queue key, for Sync, of the disposals handed to the
// job with the given snapshotrules.JobKey.
func DisposalsKey(jobKey string) string { return disposalsKeyPrefix + jobKey }
