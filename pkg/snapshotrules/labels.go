package snapshotrules

import (
	"maps"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
)

// DesiredLabels returns the snapshot's labels with the operator's keys set:
// snapshot.type from the spec, snapshot.trigger-type kept if present (set
// once, never overwritten) else MANUAL, job-reference.* when the job was
// found, and snapshot.state: the terminal state, or IN_PROGRESS while the
// snapshot is not finished.
//
// The status subresource cannot carry labels, so labels are written only
// twice in a snapshot's life: with the operator's first write (before the
// first trigger; operator-made snapshots carry them from creation) and with
// the terminal state. In between, snapshot.state=IN_PROGRESS stands for
// "not finished" (also while TRIGGER_PENDING waits for a slot or a retry);
// status.state is exact.
func DesiredLabels(s *v1beta1.FlinkStateSnapshot, state v1beta1.SnapshotState, jobFound bool) map[string]string {
	labels := maps.Clone(s.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	labels[v1beta1.LabelSnapshotType] = Type(s)
	if labels[v1beta1.LabelSnapshotTriggerType] == "" {
		labels[v1beta1.LabelSnapshotTriggerType] = string(v1beta1.SnapshotTriggerManual)
	}
	if state.IsTerminal() {
		labels[v1beta1.LabelSnapshotState] = string(state)
	} else {
		labels[v1beta1.LabelSnapshotState] = string(v1beta1.SnapshotInProgress)
	}
	if r := s.Spec.JobReference; jobFound && r != nil {
		labels[v1beta1.LabelJobReferenceKind] = string(r.Kind)
		labels[v1beta1.LabelJobReferenceName] = r.Name
		if IsCrossNamespace(s) {
			labels[v1beta1.LabelJobReferenceNamespace] = r.Namespace
		}
	}
	return labels
}
