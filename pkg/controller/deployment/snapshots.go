package deployment

import (
	"context"

	"k8s.io/client-go/tools/cache"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/controller/jobengine"
	"github.com/flinkops/flink-operator/pkg/flink"
	"github.com/flinkops/flink-operator/pkg/snapshots"
)

// reconcileSnapshots plans and applies the job's operator-made snapshots
// (jobengine.ReconcileSnapshots). running means the deployed job is RUNNING
// on all its tasks and no upgrade is in progress.
func (c *Controller) reconcileSnapshots(ctx context.Context, sc *syncState, running bool) error {
	in := jobengine.SnapshotInputs{Running: running, Healthy: sc.JobHealthy()}
	if sc.Recorded != nil {
		version, err := flink.ParseVersion(string(sc.Recorded.Spec.FlinkVersion))
		in.Checkpoints = err == nil && version.SupportsCheckpointTrigger()
		in.SpecValid = func() bool {
			_, err := c.validate(sc.Obj, sc.Obj.Spec, sc.Recorded)
			return err == nil
		}
	}
	return sc.ReconcileSnapshots(ctx, in)
}

// snapshotEvent wakes the FlinkDeployment a snapshot refers to when the
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
func (c *Controller) snapshotEvent(oldObj, newObj any) {
	old, _ := unwrapSnapshot(oldObj)
	cur, _ := unwrapSnapshot(newObj)
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
	if key := deploymentKeyOf(s); key != "" {
		c.queue.Add(key)
	}
}

// blocksPeriodic mirrors what pkg/snapshots counts as in flight.
func blocksPeriodic(s *v1beta1.FlinkStateSnapshot) bool {
	return snapshots.InFlight(s) && s.DeletionTimestamp == nil
}

// deploymentKeyOf is the queue key of the FlinkDeployment a snapshot refers
// to, or "" for other references.
func deploymentKeyOf(s *v1beta1.FlinkStateSnapshot) string {
	r := s.Spec.JobReference
	if r == nil || r.Kind != v1beta1.JobReferenceKindDeployment || r.Name == "" {
		return ""
	}
	return snapshots.JobRefNamespace(s) + "/" + r.Name
}

func unwrapSnapshot(obj any) (*v1beta1.FlinkStateSnapshot, bool) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	s, ok := obj.(*v1beta1.FlinkStateSnapshot)
	return s, ok
}

// snapshotHandler registers snapshotEvent on the snapshot informers.
func (c *Controller) snapshotHandler() cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { c.snapshotEvent(nil, obj) },
		UpdateFunc: c.snapshotEvent,
		DeleteFunc: func(obj any) { c.snapshotEvent(obj, nil) },
	}
}
