package snapshot

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/flinkops/flink-operator/pkg/config"
	"github.com/flinkops/flink-operator/pkg/reasons"
	corev1 "k8s.io/api/core/v1"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/metrics"
	"github.com/flinkops/flink-operator/pkg/snapshotrules"
)

// commit writes what changed between base (what the API server has) and s:
// at a terminal state first labels and finalizer, then status, each at most
// once. It returns the last object written (base when nothing was).
//
// Metadata is written twice in a snapshot's life: before its first trigger
// (writeMetadata from trigger; operator-made snapshots carry it from
// creation) and with the terminal state. The status subresource drops
// metadata, so following every in-flight transition in labels would double
// the writes.
func (c *Controller) commit(ctx context.Context, base, s *v1beta1.FlinkStateSnapshot, jobFound bool) (*v1beta1.FlinkStateSnapshot, error) {
	return c.write(ctx, base, s, jobFound, true)
}

// commitStatus is commit without metadata, for a snapshot being deleted: its
// finalizer is syncDeletion's to remove, and only after the status is
// written.
func (c *Controller) commitStatus(ctx context.Context, base, s *v1beta1.FlinkStateSnapshot) (*v1beta1.FlinkStateSnapshot, error) {
	return c.write(ctx, base, s, false, false)
}

func (c *Controller) write(ctx context.Context, base, s *v1beta1.FlinkStateSnapshot, jobFound, withMetadata bool) (*v1beta1.FlinkStateSnapshot, error) {
	logger := klog.FromContext(ctx)
	latest := base
	if withMetadata && s.Status.State.IsTerminal() {
		written, err := c.writeMetadata(ctx, base, s, s.Status.State, jobFound)
		if err != nil {
			return nil, err
		}
		latest = written
	}
	if !equality.Semantic.DeepEqual(base.Status, s.Status) {
		toWrite := latest.DeepCopy()
		toWrite.Status = s.Status
		written, err := c.Client.FlinkV1beta1().FlinkStateSnapshots(s.Namespace).UpdateStatus(ctx, toWrite, metav1.UpdateOptions{})
		if err != nil {
			return nil, fmt.Errorf("updating status of snapshot %s/%s: %w", s.Namespace, s.Name, err)
		}
		c.wroteOver(s.Namespace+"/"+s.Name, latest.ResourceVersion, written.ResourceVersion)
		latest = written
	}
	// Events and metrics follow what was recorded, never what a sync merely
	// computed: a sync on a stale cache computes a failure again, and its
	// write is refused (conflict), so an event emitted before the write
	// would count one failure twice.
	if s.Status.Failures > base.Status.Failures {
		reason := reasons.ReasonCheckpointError
		if kindOf(s) == savepoint {
			reason = reasons.ReasonSavepointError
		}
		c.Recorder.Event(s, corev1.EventTypeWarning, reason, s.Status.Error)
		metrics.SnapshotFailures.WithLabelValues(s.Namespace, string(kindOf(s))).Inc()
	}
	if base.Status.State != s.Status.State {
		c.stateChanged(ctx, logger, base, s)
	}
	return latest, nil
}

// writeMetadata writes the operator's labels and finalizer as they should be
// for state, if they differ from base's, and returns what the API server
// has afterwards.
func (c *Controller) writeMetadata(ctx context.Context, base, s *v1beta1.FlinkStateSnapshot, state v1beta1.SnapshotState, jobFound bool) (*v1beta1.FlinkStateSnapshot, error) {
	labels := snapshotrules.DesiredLabels(s, state, jobFound)
	finalizers := slices.Clone(base.Finalizers)
	has := slices.Contains(finalizers, v1beta1.SnapshotFinalizer)
	switch need := snapshotrules.NeedsFinalizer(s, state); {
	case need && !has:
		finalizers = append(finalizers, v1beta1.SnapshotFinalizer)
	case !need && has:
		finalizers = slices.DeleteFunc(finalizers, func(f string) bool { return f == v1beta1.SnapshotFinalizer })
	}
	if maps.Equal(labels, base.Labels) && slices.Equal(finalizers, base.Finalizers) {
		return base, nil
	}
	toWrite := base.DeepCopy()
	toWrite.Labels, toWrite.Finalizers = labels, finalizers
	written, err := c.Client.FlinkV1beta1().FlinkStateSnapshots(s.Namespace).Update(ctx, toWrite, metav1.UpdateOptions{})
	if err != nil {
		return nil, fmt.Errorf("updating labels of snapshot %s/%s: %w", s.Namespace, s.Name, err)
	}
	c.wroteOver(s.Namespace+"/"+s.Name, base.ResourceVersion, written.ResourceVersion)
	return written, nil
}

// stateChanged logs one line per transition and keeps the metrics.
func (c *Controller) stateChanged(_ context.Context, logger klog.Logger, old, s *v1beta1.FlinkStateSnapshot) {
	key := s.Namespace + "/" + s.Name
	if s.Status.State != v1beta1.SnapshotInProgress {
		c.release(key)
	}
	typ := string(kindOf(s))
	logger.Info("Snapshot state changed", "snapshot", klog.KObj(s), "type", typ,
		"job", snapshotrules.JobRefString(s.Spec.JobReference), "from", stateOrNew(old.Status.State), "to", s.Status.State,
		"triggerId", s.Status.TriggerID, "path", s.Status.Path, "failures", s.Status.Failures, "error", s.Status.Error)
	switch s.Status.State {
	case v1beta1.SnapshotCompleted:
		if triggered, ok := snapshotrules.ParseTime(s.Status.TriggerTimestamp); ok && !snapshotrules.AlreadyExists(s) {
			metrics.SnapshotDuration.WithLabelValues(typ, string(snapshotrules.TriggerType(s))).Observe(c.Clock.Since(triggered).Seconds())
		}
		if !snapshotrules.AlreadyExists(s) && c.normalEvents() {
			c.Recorder.Eventf(s, corev1.EventTypeNormal, reasons.ReasonSnapshotCompleted, "%s completed: %s", snapshotrules.Type(s), s.Status.Path)
		}
	case v1beta1.SnapshotAbandoned:
		c.Recorder.Event(s, corev1.EventTypeWarning, reasons.ReasonSnapshotAbandoned, s.Status.Error)
		metrics.SnapshotAbandoned.WithLabelValues(s.Namespace, typ).Inc()
	}
}

// normalEvents: kubernetes.operator.snapshot.normal-events.enabled (off by
// default, as upstream: two writes per snapshot for what the status says).
func (c *Controller) normalEvents() bool {
	on, _ := c.CurrentConfig().Bool(config.KeySnapshotNormalEventsEnabled)
	return on
}

func stateOrNew(s v1beta1.SnapshotState) string {
	if s == "" {
		return "NEW"
	}
	return string(s)
}
