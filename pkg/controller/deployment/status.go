package deployment

import (
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/controller/jobengine"
	"github.com/flinkops/flink-operator/pkg/lifecycle"
)

// lifecycleOf derives status.lifecycleState (pkg/lifecycle); "Manual
// restore required" means FAILED while the JobManager is missing or in
// error, as upstream.
func lifecycleOf(d *v1beta1.FlinkDeployment, recorded *reconciledSpec, manualRestore bool) v1beta1.ResourceLifecycleState {
	st := &d.Status
	return lifecycle.State(lifecycle.Observed{
		Deleting:      d.DeletionTimestamp != nil,
		Recorded:      recorded != nil,
		Suspended:     recorded != nil && jobengine.JobSuspended(&recorded.Spec),
		Status:        st.ReconciliationStatus,
		JobState:      st.JobStatus.State,
		Error:         st.Error,
		ManualRestore: manualRestore,
		ManualRestoreFails: st.JobManagerDeploymentStatus == v1beta1.JobManagerMissing ||
			st.JobManagerDeploymentStatus == v1beta1.JobManagerError,
	})
}

// setRunningCondition keeps the one condition upstream has: Running, true
// when the job runs (applications) or the JobManager is ready (session
// clusters).
func setRunningCondition(sc *syncState) {
	st := &sc.Obj().Status
	cond := metav1.Condition{Type: "Running", ObservedGeneration: sc.Obj().Generation, LastTransitionTime: metav1.NewTime(sc.Now())}
	app := sc.Recorded() != nil && sc.Recorded().Spec.Job != nil
	if sc.Recorded() == nil {
		app = sc.Obj().Spec.Job != nil
	}
	if app {
		state := string(st.JobStatus.State)
		cond.Status = metav1.ConditionFalse
		if st.JobStatus.State == v1beta1.JobStatusRunning {
			cond.Status = metav1.ConditionTrue
		}
		cond.Reason, cond.Message = camel(state), "Job status "+state
		if state == "" {
			cond.Reason, cond.Message = "NotDeployed", "The job is not deployed yet"
		}
	} else {
		jm := st.JobManagerDeploymentStatus
		if jm == "" {
			jm = v1beta1.JobManagerMissing
		}
		cond.Status = metav1.ConditionFalse
		cond.Reason = "JobManager" + camel(string(jm))
		cond.Message = "JobManager deployment is " + string(jm)
		if jm == v1beta1.JobManagerReady {
			cond.Status = metav1.ConditionTrue
			cond.Message = "JobManager is running and ready to receive REST API calls"
		}
	}
	meta.SetStatusCondition(&st.Conditions, cond)
}

// camel turns RUNNING or DEPLOYED_NOT_READY into Running or DeployedNotReady.
func camel(s string) string {
	var b strings.Builder
	for _, part := range strings.Split(strings.ToLower(s), "_") {
		if part == "" {
			continue
		}
		b.WriteString(strings.ToUpper(part[:1]) + part[1:])
	}
	return b.String()
}
