package deployment

import (
	"k8s.io/client-go/tools/cache"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/controller/jobengine"
)

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
