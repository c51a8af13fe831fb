package sessionjob

import (
	"strings"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
)

// manualRestore marks errors after which upstream reports the resource
// FAILED: the operator will not act until a human says where to restart.
const manualRestore = "Manual restore required"

// lifecycleOf derives status.lifecycleState the way upstream's
// CommonStatus.getLifecycleState does for session jobs.
func lifecycleOf(j *v1beta1.FlinkSessionJob, recorded *reconciledSpec) v1beta1.ResourceLifecycleState {
	st := &j.Status
	switch {
	case j.DeletionTimestamp != nil:
		return v1beta1.LifecycleDeleting
	case recorded == nil || st.ReconciliationStatus.LastReconciledSpec == "":
		if st.Error != "" {
			return v1beta1.LifecycleFailed
		}
		return v1beta1.LifecycleCreated
	case st.ReconciliationStatus.State == v1beta1.ReconciliationUpgrading:
		return v1beta1.LifecycleUpgrading
	case jobSuspended(&recorded.Spec):
		return v1beta1.LifecycleSuspended
	case st.JobStatus.State == v1beta1.JobStatusFailed, strings.Contains(st.Error, manualRestore):
		return v1beta1.LifecycleFailed
	case st.ReconciliationStatus.LastReconciledSpec == st.ReconciliationStatus.LastStableSpec:
		return v1beta1.LifecycleStable
	}
	return v1beta1.LifecycleDeployed
}

func stateOrNew(s string) string {
	if s == "" {
		return "NEW"
	}
	return s
}
