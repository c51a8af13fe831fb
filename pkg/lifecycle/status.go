package lifecycle

import (
	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
)

// Observed is what the lifecycle state of a FlinkDeployment or
// FlinkSessionJob is derived from.
type Observed struct {
	Deleting bool
	// Recorded: a spec was recorded (lastReconciledSpec set).
	Recorded bool
	// Suspended: the recorded spec asks for a suspended job.
	Suspended bool
	Status    v1beta1.ReconciliationStatus
	JobState  v1beta1.JobStatusState
	Error     string
	// ManualRestore: this sync recorded an error after which a person must
	// say where the job restarts from (ErrManualRestore).
	ManualRestore bool
	// ManualRestoreFails: such an error means FAILED (for FlinkDeployments
	// only while the JobManager is missing or in error, upstream's rule;
	// always for session jobs).
	ManualRestoreFails bool
}

// State derives status.lifecycleState the way upstream's
// CommonStatus.getLifecycleState does.
func State(o Observed) v1beta1.ResourceLifecycleState {
	switch {
	case o.Deleting:
		return v1beta1.LifecycleDeleting
	case !o.Recorded || o.Status.LastReconciledSpec == "":
		if o.Error != "" {
			return v1beta1.LifecycleFailed
		}
		return v1beta1.LifecycleCreated
	case o.Status.State == v1beta1.ReconciliationUpgrading:
		return v1beta1.LifecycleUpgrading
	case o.Status.State == v1beta1.ReconciliationRollingBack:
		return v1beta1.LifecycleRollingBack
	case o.Suspended:
		return v1beta1.LifecycleSuspended
	case o.JobState == v1beta1.JobStatusFailed:
		return v1beta1.LifecycleFailed
	case o.ManualRestoreFails && o.ManualRestore:
		return v1beta1.LifecycleFailed
	case o.Status.State == v1beta1.ReconciliationRolledBack:
		return v1beta1.LifecycleRolledBack
	case o.Status.LastReconciledSpec == o.Status.LastStableSpec:
		return v1beta1.LifecycleStable
	}
	return v1beta1.LifecycleDeployed
}
