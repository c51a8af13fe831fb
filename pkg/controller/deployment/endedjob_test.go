package deployment

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/cluster"
	"github.com/flinkops/flink-operator/pkg/flink"
)

// TestEndedJobRecorded: once a native application's job has ended, its
// ConfigMap names the token of its JobManager Deployment
// (cluster.EndedJobKey), which that JobManager's guard reads, so that
// restarted it does not run the job again (the fixture restarts the
// JobManager when the ConfigMap changes, as a pod restart would); not with
// Kubernetes HA (Flink's job result store does that, which the fixture
// does not play), nor while the job runs. An upgrade afterwards deploys a
// JobManager with a new token (a last-state upgrade without HA keeps the
// job id), whose ConfigMap names no ended job, and the job runs again.
func TestEndedJobRecorded(t *testing.T) {
	for _, tc := range []struct {
		name string
		ha   bool
	}{
		{name: "without HA"},
		{name: "with HA", ha: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newNativeFixture(t)
			d := native(f.application("job", v1beta1.UpgradeModeLastState))
			if tc.ha {
				d = withHA(d)
			}
			f.Deploy(d)
			recorded := func() string {
				t.Helper()
				cm, err := f.Kube.CoreV1().ConfigMaps(ns).Get(f.Ctx, cluster.ConfigMapName("job"), metav1.GetOptions{})
				if err != nil {
					t.Fatal(err)
				}
				return cm.Data[cluster.EndedJobKey]
			}
			token := cluster.DeployTokenOf(f.jmDeployment("job"))
			if token == "" {
				t.Fatalf("JobManager Deployment without the ended-job guard")
			}
			if got := recorded(); got != "" {
				t.Fatalf("running job recorded as ended: %q", got)
			}
			f.endJob("job", flink.JobFailed)
			f.Step("job")
			got := recorded()
			switch {
			case tc.ha && got != "":
				t.Fatalf("%s = %q with HA", cluster.EndedJobKey, got)
			case !tc.ha && got != token:
				t.Fatalf("%s = %q after the job ended, want the JobManager's token %s", cluster.EndedJobKey, got, token)
			case !tc.ha:
				if d := f.Get("job"); d.Status.JobStatus.State != v1beta1.JobStatusFailed || f.jm("job").jobID != "" {
					t.Fatalf("the restarted JobManager runs the ended job: %s", statusString(d))
				}
			}
			f.edit("job", func(s *v1beta1.FlinkDeploymentSpec) { s.Job.Args = []string{"--fixed"} })
			upgraded := f.Until("job", 20, "the upgraded job running", func(d *v1beta1.FlinkDeployment) bool {
				return d.Status.ReconciliationStatus.State == v1beta1.ReconciliationDeployed && d.Status.JobStatus.State == v1beta1.JobStatusRunning
			})
			newToken := cluster.DeployTokenOf(f.jmDeployment("job"))
			if got := recorded(); got != "" || newToken == "" || newToken == token {
				t.Errorf("after the upgrade (job %s): recorded %q, JobManager token %q (was %q)", upgraded.Status.JobStatus.JobID, got, newToken, token)
			}
		})
	}
}
