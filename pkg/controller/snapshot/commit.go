package snapshot

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/metrics"
	"github.com/flinkops/flink-operator/pkg/snapshots"
)

// commit writes what changed between base (what the API server has) and s:
// first labels and finalizer, then status, each at most once. It returns the
// last object written (base when nothing was).
//
// Labels and the finalizer are written only once the snapshot is terminal:
// the status subresource drops metadata, so keeping them current through
// every in-flight transition would double the writes. The finalizer matters
// only for COMPLETED savepoints (there is data to dispose), and it is written
// before the status that says COMPLETED.
func (c *Controller) commit(ctx context.Context, base, s *v1beta1.FlinkStateSnapshot, jobFound bool) (*v1beta1.FlinkStateSnapshot, error) {
	logger := klog.FromContext(ctx)
	latest := base
	if s.Status.State.IsTerminal() {
		want := s.DeepCopy()
		want.Labels = snapshots.DesiredLabels(s, s.Status.State, jobFound)
		if s.Status.State == v1beta1.SnapshotCompleted && snapshots.NeedsFinalizer(s) && !slices.Contains(want.Finalizers, v1beta1.SnapshotFinalizer) {
			want.Finalizers = append(want.Finalizers, v1beta1.SnapshotFinalizer)
		}
		if !maps.Equal(want.Labels, base.Labels) || !slices.Equal(want.Finalizers, base.Finalizers) {
			toWrite := base.DeepCopy()
			toWrite.Labels, toWrite.Finalizers = want.Labels, want.Finalizers
			written, err := c.client.FlinkV1beta1().FlinkStateSnapshots(s.Namespace).Update(ctx, toWrite, metav1.UpdateOptions{})
			if err != nil {
				return nil, fmt.Errorf("updating labels of snapshot %s/%s: %w", s.Namespace, s.Name, err)
			}
			latest = written
		}
	}
	if !equality.Semantic.DeepEqual(base.Status, s.Status) {
		toWrite := latest.DeepCopy()
		toWrite.Status = s.Status
		written, err := c.client.FlinkV1beta1().FlinkStateSnapshots(s.Namespace).UpdateStatus(ctx, toWrite, metav1.UpdateOptions{})
		if err != nil {
			return nil, fmt.Errorf("updating status of snapshot %s/%s: %w", s.Namespace, s.Name, err)
		}
		latest = written
	}
	if base.Status.State != s.Status.State {
		c.stateChanged(ctx, logger, base, s)
	}
	if s.Status.Failures > base.Status.Failures {
		metrics.SnapshotFailures.WithLabelValues(s.Namespace, lower(snapshots.Type(s))).Inc()
	}
	return latest, nil
}

// stateChanged logs one line per transition and keeps the metrics.
func (c *Controller) stateChanged(_ context.Context, logger klog.Logger, old, s *v1beta1.FlinkStateSnapshot) {
	key := s.Namespace + "/" + s.Name
	if s.Status.State != v1beta1.SnapshotInProgress {
		c.release(key)
	}
	typ := lower(snapshots.Type(s))
	logger.Info("Snapshot state changed", "snapshot", klog.KObj(s), "type", typ,
		"job", snapshots.JobRefString(s.Spec.JobReference), "from", stateOrNew(old.Status.State), "to", s.Status.State,
		"triggerId", s.Status.TriggerID, "path", s.Status.Path, "failures", s.Status.Failures, "error", s.Status.Error)
	switch s.Status.State {
	case v1beta1.SnapshotCompleted:
		if triggered, ok := snapshots.ParseTime(s.Status.TriggerTimestamp); ok && !snapshots.AlreadyExists(s) {
			metrics.SnapshotDuration.WithLabelValues(typ, string(snapshots.TriggerType(s))).Observe(c.clock.Since(triggered).Seconds())
		}
		if !snapshots.AlreadyExists(s) {
			c.recorder.Eventf(s, "Normal", ReasonSnapshotCompleted, "%s completed: %s", snapshots.Type(s), s.Status.Path)
		}
	case v1beta1.SnapshotAbandoned:
		metrics.SnapshotAbandoned.WithLabelValues(s.Namespace, typ).Inc()
	}
}

func stateOrNew(s v1beta1.SnapshotState) string {
	if s == "" {
		return "NEW"
	}
	return string(s)
}
