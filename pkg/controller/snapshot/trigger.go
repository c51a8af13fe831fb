package snapshot

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"

	"k8s.io/klog/v2"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/config"
	"github.com/flinkops/flink-operator/pkg/flink"
	"github.com/flinkops/flink-operator/pkg/reasons"
	"github.com/flinkops/flink-operator/pkg/snapshotrules"
)

// trigger starts a Flink savepoint or checkpoint for a TRIGGER_PENDING
// snapshot. Crash safety: the trigger id is chosen here and written to status
// (IN_PROGRESS) before the POST that carries it, so a restart finds the id
// and can only ever re-send the same operation. It returns what the API
// server has afterwards (base when nothing was written), for commit to
// write the rest over.
func (c *Controller) trigger(ctx context.Context, base, s *v1beta1.FlinkStateSnapshot, t *target, r request) (*v1beta1.FlinkStateSnapshot, time.Duration, error) {
	now := c.Clock.Now()
	if snapshotrules.AlreadyExists(s) {
		s.Status.State = v1beta1.SnapshotCompleted
		s.Status.Path = s.Spec.Savepoint.Path
		s.Status.TriggerTimestamp = snapshotrules.FormatTime(now)
		s.Status.ResultTimestamp = s.Status.TriggerTimestamp
		s.Status.Error = ""
		return base, 0, nil
	}
	if s.Status.Failures > 0 { // retry backoff, computed from status so it survives restarts
		if last, ok := snapshotrules.ParseTime(s.Status.ResultTimestamp); ok {
			if wait := last.Add(snapshotrules.RetryDelay(s.Status.Failures)).Sub(now); wait > 0 {
				return base, wait, nil
			}
		}
	}
	if !t.running() {
		c.abandon(s, t, now, "")
		return base, 0, nil
	}
	switch {
	case r.kind == savepoint && r.dir == "":
		return base, c.fail(s, now, fmt.Sprintf("either the savepoint path in the spec or configuration %s (or %s) in the Flink resource has to be supplied",
			config.FlinkSavepointDir, config.FlinkSavepointDirDeprecated)), nil
	case r.kind == checkpoint && !t.version.AtLeast(flink.MustParseVersion("1.17")):
		return base, c.fail(s, now, "Manual checkpoint triggering is not supported for this Flink job (requires Flink 1.17+)"), nil
	}

	key := s.Namespace + "/" + s.Name
	perJob, _, err := t.cfg.OptionalInt(config.KeySnapshotMaxConcurrentPerJob)
	if err != nil {
		return nil, 0, err
	}
	total, _, err := c.CurrentConfig().OptionalInt(config.KeySnapshotMaxConcurrent)
	if err != nil {
		return nil, 0, err
	}
	ok, err := c.reserve(key, snapshotrules.JobKey(s), perJob, total)
	if err != nil {
		return nil, 0, err
	}
	if !ok {
		klog.FromContext(ctx).V(2).Info("Waiting for a concurrency slot", "job", snapshotrules.JobRefString(&t.ref))
		return base, waitForSlot, nil
	}

	// The first write: labels (Type and Trigger columns,
	// snapshot.state=IN_PROGRESS) and, for a savepoint, the finalizer, so a
	// deletion from now on waits for the attempt to end instead of leaving
	// Flink writing files nobody will dispose. It precedes the intent: the
	// status subresource cannot carry metadata, and a finalizer written
	// after the POST would leave a window. Operator-made snapshots carry
	// both from creation, so for them this writes nothing.
	base, err = c.writeMetadata(ctx, base, s, v1beta1.SnapshotInProgress, true)
	if err != nil {
		c.release(key)
		return nil, 0, err
	}
	s.ObjectMeta = *base.ObjectMeta.DeepCopy()

	s.Status.State = v1beta1.SnapshotInProgress
	s.Status.TriggerID = c.NewTriggerID()
	s.Status.TriggerTimestamp = snapshotrules.FormatTime(now)
	s.Status.Error = ""
	s.Status.Path = ""
	base, err = c.commit(ctx, base, s, true)
	if err != nil {
		c.release(key)
		return nil, 0, err // nothing was sent to Flink: the next attempt picks a new id
	}
	if c.afterIntent != nil {
		c.afterIntent(key)
	}
	if err := c.post(ctx, s, t, r); err != nil {
		// Flink may or may not have started it; the next observe asks by id
		// and re-sends the same id if Flink does not know it.
		klog.FromContext(ctx).Info("Triggering snapshot failed, will check by trigger id", "triggerId", s.Status.TriggerID, "err", err)
	} else if c.normalEvents() {
		c.Recorder.Eventf(s, corev1.EventTypeNormal, reasons.ReasonSnapshotTriggered, "Triggered %s of %s with trigger id %s",
			r.kind, snapshotrules.JobRefString(&t.ref), s.Status.TriggerID)
	}
	return base, snapshotrules.MinPollDelay, nil
}

// post sends the trigger recorded in s.Status to Flink, as r asks.
func (c *Controller) post(ctx context.Context, s *v1beta1.FlinkStateSnapshot, t *target, r request) error {
	client, err := c.flinkClient(t)
	if err != nil {
		return err
	}
	if r.kind == savepoint {
		_, err = client.TriggerSavepoint(ctx, t.jobStatus.JobID, flink.SavepointRequest{
			TargetDirectory: r.dir, FormatType: r.format, TriggerID: s.Status.TriggerID,
		})
		return err
	}
	_, err = client.TriggerCheckpoint(ctx, t.jobStatus.JobID, flink.CheckpointRequest{
		Type: flink.CheckpointFull, TriggerID: s.Status.TriggerID,
	})
	return err
}
