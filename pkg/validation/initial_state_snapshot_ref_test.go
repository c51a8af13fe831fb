package validation

import (
	"testing"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/config"
)

// TestInitialStateSnapshotRef pins the rules of spec.job.initialStateSnapshotRef
// (snapshots.md, "Start a job from a snapshot"): it names a snapshot, it
// excludes initialSavepointPath, and it counts as the source of a savepoint
// redeploy.
func TestInitialStateSnapshotRef(t *testing.T) {
	const (
		exclusive = "spec.job.initialSavepointPath and spec.job.initialStateSnapshotRef are mutually exclusive: set one state to start from"
		noName    = "spec.job.initialStateSnapshotRef.name is required"
	)
	for _, tc := range []struct {
		name   string
		change func(*v1beta1.JobSpec)
		last   bool // a last reconciled spec without nonces exists
		want   string
	}{
		{name: "a named snapshot", change: func(j *v1beta1.JobSpec) {
			j.InitialStateSnapshotRef = &v1beta1.SnapshotReference{Name: "before-release-42"}
		}},
		{name: "a named snapshot in another namespace", change: func(j *v1beta1.JobSpec) {
			j.InitialStateSnapshotRef = &v1beta1.SnapshotReference{Name: "before-release-42", Namespace: "team-b"}
		}},
		{name: "and an initialSavepointPath", change: func(j *v1beta1.JobSpec) {
			j.InitialStateSnapshotRef = &v1beta1.SnapshotReference{Name: "before-release-42"}
			j.InitialSavepointPath = "file:///sp/1"
		}, want: exclusive},
		{name: "a blank initialSavepointPath is no path", change: func(j *v1beta1.JobSpec) {
			j.InitialStateSnapshotRef = &v1beta1.SnapshotReference{Name: "before-release-42"}
			j.InitialSavepointPath = "  "
		}},
		{name: "without a name", change: func(j *v1beta1.JobSpec) {
			j.InitialStateSnapshotRef = &v1beta1.SnapshotReference{Name: " ", Namespace: "team-b"}
		}, want: noName},
		{name: "as the source of a savepoint redeploy", change: func(j *v1beta1.JobSpec) {
			j.InitialStateSnapshotRef = &v1beta1.SnapshotReference{Name: "before-release-42"}
			j.SavepointRedeployNonce = ptr(int64(3))
		}, last: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := application("job").Spec
			tc.change(spec.Job)
			var last *v1beta1.FlinkDeploymentSpec
			if tc.last {
				last = &application("job").Spec
			}
			_, err := DeploymentSpec(&spec, last, config.Defaults())
			checkErr(t, err, tc.want)

			// The same rule holds for a session job on a session cluster.
			job := sessionJob("job", "session")
			tc.change(job.Spec.Job)
			_, err = SessionJob(job, session("session"), config.Defaults())
			checkErr(t, err, tc.want)
		})
	}
}
