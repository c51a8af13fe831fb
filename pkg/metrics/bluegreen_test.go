package metrics

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	listers "github.com/flinkops/flink-operator/pkg/generated/listers/flink/v1beta1"
)

// Upstream's FlinkBlueGreenDeploymentMetrics: deployments per namespace by
// blue/green state (every state, zeros included) and by job status, from
// the cache at scrape time; failures counted as the controller reports them.
func TestBlueGreenMetrics(t *testing.T) {
	bg := func(name string, state v1beta1.FlinkBlueGreenDeploymentState, job v1beta1.JobStatusState) *v1beta1.FlinkBlueGreenDeployment {
		b := &v1beta1.FlinkBlueGreenDeployment{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: name}}
		b.Status.BlueGreenState, b.Status.JobStatus.State = state, job
		return b
	}
	idx := newIndexer(t,
		bg("a", v1beta1.BlueGreenActiveBlue, v1beta1.JobStatusRunning),
		bg("b", v1beta1.BlueGreenActiveBlue, v1beta1.JobStatusFailing),
		bg("c", v1beta1.BlueGreenTransitioningToGreen, v1beta1.JobStatusReconciling))
	unregister := RegisterBlueGreenCounter([]listers.FlinkBlueGreenDeploymentLister{listers.NewFlinkBlueGreenDeploymentLister(idx)})
	defer unregister()
	before := scrape(t)[`flink_operator_bluegreen_failures_total{namespace="team-a"}`]
	BlueGreenFailed("team-a")
	want := map[string]float64{
		`flink_operator_bluegreen_deployments{namespace="team-a",state="ACTIVE_BLUE"}`:            2,
		`flink_operator_bluegreen_deployments{namespace="team-a",state="ACTIVE_GREEN"}`:           0,
		`flink_operator_bluegreen_deployments{namespace="team-a",state="INITIALIZING_BLUE"}`:      0,
		`flink_operator_bluegreen_deployments{namespace="team-a",state="SAVEPOINTING_BLUE"}`:      0,
		`flink_operator_bluegreen_deployments{namespace="team-a",state="SAVEPOINTING_GREEN"}`:     0,
		`flink_operator_bluegreen_deployments{namespace="team-a",state="TRANSITIONING_TO_BLUE"}`:  0,
		`flink_operator_bluegreen_deployments{namespace="team-a",state="TRANSITIONING_TO_GREEN"}`: 1,
		`flink_operator_bluegreen_job_status{namespace="team-a",status="RUNNING"}`:                1,
		`flink_operator_bluegreen_job_status{namespace="team-a",status="FAILING"}`:                1,
		`flink_operator_bluegreen_job_status{namespace="team-a",status="RECONCILING"}`:            1,
		`flink_operator_bluegreen_failures_total{namespace="team-a"}`:                             before + 1,
	}
	got := seriesOf(scrape(t), "flink_operator_bluegreen_deployments", "flink_operator_bluegreen_job_status", "flink_operator_bluegreen_failures_total")
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("blue/green metrics (-want +got):\n%s", diff)
	}
}
