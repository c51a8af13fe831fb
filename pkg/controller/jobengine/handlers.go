package jobengine

import (
	"k8s.io/apimachinery/pkg/api/meta"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/tools/cache"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/snapshotrules"
)

// ResourceHandler enqueues a job resource on every change except the
// controller's own status writes: what those change was decided by a sync
// that already asked for its next look (AddAfter). Spec, deletion and
// finalizer changes, and resyncs (same resourceVersion), wake it.
func ResourceHandler(enqueue func(key string)) cache.ResourceEventHandlerFuncs {
	add := func(obj any) {
		key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
		if err != nil {
			utilruntime.HandleError(err)
			return
		}
		enqueue(key)
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    add,
		DeleteFunc: add,
		UpdateFunc: func(oldObj, newObj any) {
			o, err1 := meta.Accessor(oldObj)
			n, err2 := meta.Accessor(newObj)
			if err1 == nil && err2 == nil && o.GetResourceVersion() != n.GetResourceVersion() && o.GetGeneration() == n.GetGeneration() &&
				o.GetDeletionTimestamp().Equal(n.GetDeletionTimestamp()) && len(o.GetFinalizers()) == len(n.GetFinalizers()) {
				return
			}
			add(newObj)
		},
	}
}

// SnapshotHandler wakes the job of kind a snapshot refers to when the
// snapshot's change can alter what the job's snapshot plan does:
//
//   - it turned terminal (COMPLETED, FAILED, ABANDONED): a periodic slot
//     that waited for it may fire, and history cleanup may delete an older
//     one;
//   - it stopped being in flight otherwise (deleted, or marked for deletion,
//     while in flight): the slot is free;
//   - it appeared already terminal (an informer relist, a restored backup):
//     cleanup may have work.
//
// Other changes (a new snapshot, TRIGGER_PENDING ↔ IN_PROGRESS, labels, the
// final removal of a terminal one) change nothing the plan acts on, and each
// wake costs a sync with a JobManager REST call, so they wake nothing.
func SnapshotHandler(kind v1beta1.JobReferenceKind, enqueue func(key string)) cache.ResourceEventHandlerFuncs {
	event := func(oldObj, newObj any) {
		old, cur := unwrapSnapshot(oldObj), unwrapSnapshot(newObj)
		var wake bool
		switch {
		case old == nil && cur != nil: // added
			wake = cur.Status.State.IsTerminal()
		case old != nil && cur == nil: // deleted
			wake = blocksPeriodic(old)
		case old != nil && cur != nil:
			wake = (old.Status.State != cur.Status.State && cur.Status.State.IsTerminal()) || blocksPeriodic(old) != blocksPeriodic(cur)
		}
		if !wake {
			return
		}
		s := cur
		if s == nil {
			s = old
		}
		if r := s.Spec.JobReference; r != nil && r.Kind == kind && r.Name != "" {
			enqueue(snapshotrules.JobRefNamespace(s) + "/" + r.Name)
		}
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { event(nil, obj) },
		UpdateFunc: event,
		DeleteFunc: func(obj any) { event(obj, nil) },
	}
}

// blocksPeriodic mirrors what pkg/snapshotrules counts as in flight.
func blocksPeriodic(s *v1beta1.FlinkStateSnapshot) bool {
	return snapshotrules.InFlight(s) && s.DeletionTimestamp == nil
}

func unwrapSnapshot(obj any) *v1beta1.FlinkStateSnapshot {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	s, _ := obj.(*v1beta1.FlinkStateSnapshot)
	return s
}
