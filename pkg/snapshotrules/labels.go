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

// snapshotLabelKeys are the labels the operator itself sets on snapshots.
var snapshotLabelKeys = []string{
	v1beta1.LabelSnapshotType,
	v1beta1.LabelSnapshotTriggerType,
	v1beta1.LabelSnapshotState,
	v1beta1.LabelJobReferenceKind,
	v1beta1.LabelJobReferenceName,
	v1beta1.LabelJobReferenceNamespace,
}

// JobLabels are the labels an operator-made snapshot copies from its job
// (a new map, never nil): all of them, so the snapshot matches the
// kubernetes.operator.label.selector its job matches and an operator
// sharded by label sees the snapshots of its own jobs and no other's.
// The operator sets no labels on FlinkDeployments or FlinkSessionJobs, so
// these are the user's; the keys the operator sets on snapshots
// (snapshot.*, job-reference.*) are left out, to be set from the snapshot
// itself. The labels are copied when the snapshot is made: relabelling a
// job later does not relabel its existing snapshots.
func JobLabels(job map[string]string) map[string]string {
	labels := maps.Clone(job)
	if labels == nil {
		labels = map[string]string{}
	}
	for _, k := range snapshotLabelKeys {
		delete(labels, k)
	}
	return labels
}
