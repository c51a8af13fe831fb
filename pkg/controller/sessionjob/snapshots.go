package sessionjob

import (
	"context"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/controller/jobengine"
)

// Snapshots the operator makes for a session job follow the same rules as
// for applications (docs/snapshots.md; pkg/snapshotrules applied by
// pkg/controller/jobengine). Savepoints go to the job's own savepoint
// directory when its flinkConfiguration sets one, else to the session
// cluster's (the snapshot controller resolves it the same way).

// reconcileSnapshots plans and applies the job's operator-made snapshots
// (jobengine.ReconcileSnapshots). running means the job is RUNNING, that is
// recorded, and no upgrade is in progress.
func (c *Controller) reconcileSnapshots(ctx context.Context, sc *syncState, running bool) error {
	js := &sc.Obj.Status.JobStatus
	return sc.ReconcileSnapshots(ctx, jobengine.SnapshotInputs{
		Running:     running,
		Checkpoints: sc.version.SupportsCheckpointTrigger(),
		SpecValid:   func() bool { return c.validate(sc) == nil },
		Healthy:     sc.Client != nil && sc.Job != nil && js.State == v1beta1.JobStatusRunning,
	})
}
