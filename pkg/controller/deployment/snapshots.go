package deployment

import (
	"context"

	"k8s.io/client-go/tools/cache"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/controller/jobengine"
	"github.com/flinkops/flink-operator/pkg/flink"
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

// snapshotHandler wakes a FlinkDeployment when one of its snapshots turns
// terminal or stops being in flight (jobengine.SnapshotHandler).
func (c *Controller) snapshotHandler() cache.ResourceEventHandler {
	return jobengine.SnapshotHandler(v1beta1.JobReferenceKindDeployment, c.queue.Add)
}

// resourceHandler enqueues a FlinkDeployment on changes other than the
// controller's own status writes (jobengine.ResourceHandler).
func (c *Controller) resourceHandler() cache.ResourceEventHandlerFuncs {
	return jobengine.ResourceHandler(c.queue.Add)
}
