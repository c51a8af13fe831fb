package sessionjob

import (
	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/controller/jobengine"
	"github.com/flinkops/flink-operator/pkg/lifecycle"
)

// manualRestore marks errors after which the resource is FAILED.
const manualRestore = lifecycle.ManualRestore

// lifecycleOf derives status.lifecycleState (pkg/lifecycle).
func lifecycleOf(j *v1beta1.FlinkSessionJob, recorded *reconciledSpec, manualRestore bool) v1beta1.ResourceLifecycleState {
	return lifecycle.State(lifecycle.Observed{
		Deleting:           j.DeletionTimestamp != nil,
		Recorded:           recorded != nil,
		Suspended:          recorded != nil && jobengine.JobSuspended(&recorded.Spec),
		Status:             j.Status.ReconciliationStatus,
		JobState:           j.Status.JobStatus.State,
		Error:              j.Status.Error,
		ManualRestore:      manualRestore,
		ManualRestoreFails: true,
	})
}
