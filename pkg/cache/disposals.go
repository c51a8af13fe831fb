package cache

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/snapshotrules"
)

// AnnotationPendingDisposals, on a FlinkDeployment or FlinkSessionJob, lists
// the savepoints of deleted FlinkStateSnapshots of that job whose disposal
// was handed to it [ours]: when a snapshot with disposeOnDelete is deleted
// while a job that is not being deleted still holds its savepoint (starts
// from it by spec.job.initialStateSnapshotRef, or has it as its restore
// point), the snapshot controller records the savepoint here and lets the
// snapshot go (kubectl delete waits for it); it disposes of the savepoint
// through this job's JobManager once every holder is being deleted or gone,
// or gives up (DisposeSkipped) if one is still there
// kubernetes.operator.snapshot.dispose.timeout after the snapshot's
// deletion. The job's own deletion keeps its JobManager up meanwhile
// (PendingDisposals). The value is a JSON list of PendingDisposal, sorted
// by path.
const AnnotationPendingDisposals = "flinkops.io/pending-disposals"

// PendingDisposal is one savepoint of AnnotationPendingDisposals.
type PendingDisposal struct {
	// Path is the savepoint's path, as the snapshot's status.path had it.
	Path string `json:"path"`
	// Snapshot is the deleted FlinkStateSnapshot, "<namespace>/<name>":
	// the jobs that refer to it by name still hold the savepoint.
	Snapshot string `json:"snapshot"`
	// Since is when the disposal was asked for (RFC 3339): the snapshot's
	// deletion, or the end of an attempt deleted in flight. The dispose
	// timeout counts from it.
	Since string `json:"since"`
}

// PendingDisposalsOf reads AnnotationPendingDisposals of a job (nil when
// unset).
func PendingDisposalsOf(obj metav1.Object) ([]PendingDisposal, error) {
	v, ok := obj.GetAnnotations()[AnnotationPendingDisposals]
	if !ok {
		return nil, nil
	}
	var out []PendingDisposal
	if err := json.Unmarshal([]byte(v), &out); err != nil {
		return nil, fmt.Errorf("annotation %s of %s/%s: %w", AnnotationPendingDisposals, obj.GetNamespace(), obj.GetName(), err)
	}
	return out, nil
}

// SetPendingDisposals writes list as AnnotationPendingDisposals of obj,
// sorted by path; an empty list removes the annotation.
func SetPendingDisposals(obj metav1.Object, list []PendingDisposal) {
	ann := obj.GetAnnotations()
	if len(list) == 0 {
		if _, ok := ann[AnnotationPendingDisposals]; ok {
			delete(ann, AnnotationPendingDisposals)
			obj.SetAnnotations(ann)
		}
		return
	}
	list = slices.Clone(list)
	slices.SortFunc(list, func(a, b PendingDisposal) int { return strings.Compare(a.Path, b.Path) })
	v, _ := json.Marshal(list) // strings only: cannot fail
	if ann == nil {
		ann = map[string]string{}
	}
	ann[AnnotationPendingDisposals] = string(v)
	obj.SetAnnotations(ann)
}

// LiveSnapshotReferrers is SnapshotReferrers without the jobs being
// deleted: those never start from the snapshot again.
func (c *Caches) LiveSnapshotReferrers(ns, name string) ([]string, error) {
	return c.snapshotReferrers(ns, name, true)
}

// PendingDisposals describes the savepoint disposals that need the
// JobManager of the job obj of kind (a FlinkDeployment or FlinkSessionJob
// of the caches): its FlinkStateSnapshots being deleted whose savepoint is
// to be disposed and still is not (COMPLETED with a path, disposeOnDelete,
// the finalizer still on), and the disposals handed to it
// (AnnotationPendingDisposals; one that does not parse counts as none: it
// must never hold a deletion). The job's deletion keeps its JobManager up
// while there are any, bounded by kubernetes.operator.snapshot.dispose.timeout.
func (c *Caches) PendingDisposals(kind v1beta1.JobReferenceKind, obj metav1.Object) ([]string, error) {
	snaps, err := c.SnapshotsOfJob(snapshotrules.JobKeyFor(kind, obj.GetNamespace(), obj.GetName()))
	if err != nil {
		return nil, err
	}
	var out []string
	for _, s := range snaps {
		if s.DeletionTimestamp != nil && slices.Contains(s.Finalizers, v1beta1.SnapshotFinalizer) &&
			s.Status.State == v1beta1.SnapshotCompleted && s.Status.Path != "" && snapshotrules.DisposeOnDelete(s) {
			out = append(out, fmt.Sprintf("savepoint %s (FlinkStateSnapshot %s/%s, being deleted)", s.Status.Path, s.Namespace, s.Name))
		}
	}
	handed, _ := PendingDisposalsOf(obj)
	for _, d := range handed {
		out = append(out, fmt.Sprintf("savepoint %s (of deleted FlinkStateSnapshot %s)", d.Path, d.Snapshot))
	}
	slices.Sort(out)
	return out, nil
}
