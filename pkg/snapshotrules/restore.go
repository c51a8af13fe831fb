package snapshotrules

import (
	"fmt"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
)

// Restore by reference [ours] (docs/snapshots.md, "Start a job from a snapshot"): a job's
// spec.job.initialStateSnapshotRef names the FlinkStateSnapshot it starts
// from instead of a path.

// RefNamespace is the namespace of a snapshot reference made by a resource
// in ownNamespace (empty means its own).
func RefNamespace(ref *v1beta1.SnapshotReference, ownNamespace string) string {
	if ref.Namespace == "" {
		return ownNamespace
	}
	return ref.Namespace
}

// RefKey is the cache key ("<namespace>/<name>") of a snapshot reference.
func RefKey(ref *v1beta1.SnapshotReference, ownNamespace string) string {
	return RefNamespace(ref, ownNamespace) + "/" + ref.Name
}

// RestorePath resolves a job's snapshot reference to the path to start
// from. snap is the referenced snapshot as cached (nil when it does not
// exist); crossNamespace says whether the operator allows references to
// other namespaces. Only a COMPLETED savepoint, or a COMPLETED checkpoint
// with a path, will do: anything else is an error that says why, and the
// job must not be started from empty state instead.
func RestorePath(ref *v1beta1.SnapshotReference, ownNamespace string, snap *v1beta1.FlinkStateSnapshot, crossNamespace bool) (string, error) {
	ns := RefNamespace(ref, ownNamespace)
	what := fmt.Sprintf("spec.job.initialStateSnapshotRef: FlinkStateSnapshot %s/%s", ns, ref.Name)
	switch {
	case ns != ownNamespace && !crossNamespace:
		return "", fmt.Errorf("%s is in another namespace, which the operator does not allow (kubernetes.operator.snapshot.cross-namespace-references.enabled is false)", what)
	case snap == nil:
		return "", fmt.Errorf("%s was not found", what)
	case snap.Status.State != v1beta1.SnapshotCompleted:
		state := string(snap.Status.State)
		if state == "" {
			state = "not started"
		}
		msg := fmt.Sprintf("%s is %s, not COMPLETED; the job starts only from a COMPLETED savepoint or checkpoint", what, state)
		if snap.Status.Error != "" {
			msg += " (its error: " + snap.Status.Error + ")"
		}
		if !snap.Status.State.IsTerminal() {
			msg += "; waiting for it"
		}
		return "", fmt.Errorf("%s", msg)
	case snap.Status.Path == "":
		return "", fmt.Errorf("%s is COMPLETED but has no path (a checkpoint whose location Flink did not report); the job cannot start from it", what)
	}
	return snap.Status.Path, nil
}
