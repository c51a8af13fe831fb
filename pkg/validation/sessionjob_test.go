package validation

import (
	"testing"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/config"
)

// TestSessionJob covers every FlinkSessionJob rule; upstream's messages are
// compared verbatim, ours by what they must name.
func TestSessionJob(t *testing.T) {
	type mut = func(*v1beta1.FlinkSessionJob)
	recorded := func(spec string) mut {
		return func(j *v1beta1.FlinkSessionJob) { j.Status.ReconciliationStatus.LastReconciledSpec = spec }
	}
	for _, tc := range []struct {
		name    string
		change  mut
		cluster *v1beta1.FlinkDeployment
		exact   string   // upstream message
		want    []string // our message must mention these
	}{
		{name: "valid", change: func(*v1beta1.FlinkSessionJob) {}, cluster: session("cluster")},
		{name: "valid before its cluster exists", change: func(*v1beta1.FlinkSessionJob) {}},
		{name: "no deploymentName", change: func(j *v1beta1.FlinkSessionJob) { j.Spec.DeploymentName = "" },
			want: []string{"spec.deploymentName is required", "session cluster FlinkDeployment"}},
		{name: "bad deploymentName", change: func(j *v1beta1.FlinkSessionJob) { j.Spec.DeploymentName = "Cluster" },
			exact: "The FlinkDeployment name: Cluster is invalid, must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123'), and the length must be no more than 45 characters."},
		{name: "no job", change: func(j *v1beta1.FlinkSessionJob) { j.Spec.Job = nil }, exact: "The job spec should not be empty"},
		{name: "deploymentName differs from the reconciled one", cluster: session("cluster"),
			change: recorded(`{"spec":{"deploymentName":"old-cluster","job":{}},"resource_metadata":{"apiVersion":"flink.apache.org/v1beta1","firstDeployment":true}}`),
			exact:  "The deploymentName can't be changed"},
		{name: "deploymentName same as the reconciled one", cluster: session("cluster"),
			change: recorded(`{"spec":{"deploymentName":"cluster","job":{}},"resource_metadata":{"apiVersion":"flink.apache.org/v1beta1","firstDeployment":true}}`)},
		{name: "file jar", change: func(j *v1beta1.FlinkSessionJob) { j.Spec.Job.JarURI = "file:///opt/jobs/job.jar" }},
		{name: "http jar", change: func(j *v1beta1.FlinkSessionJob) { j.Spec.Job.JarURI = "http://repo/job.jar" }},
		{name: "local jar", change: func(j *v1beta1.FlinkSessionJob) { j.Spec.Job.JarURI = "local:///opt/flink/job.jar" },
			want: []string{"local://", "REST API", "http(s)://", "file://"}},
		{name: "s3 jar", change: func(j *v1beta1.FlinkSessionJob) { j.Spec.Job.JarURI = "s3://bucket/job.jar" },
			want: []string{"s3://", "not supported", "http://, https:// or file://"}},
		{name: "jar without scheme", change: func(j *v1beta1.FlinkSessionJob) { j.Spec.Job.JarURI = "/opt/job.jar" },
			want: []string{"no scheme", "file://"}},
		{name: "bad job state", change: func(j *v1beta1.FlinkSessionJob) { j.Spec.Job.State = "paused" },
			exact: `spec.job.state "paused": want running or suspended`},
		{name: "application cluster", change: func(*v1beta1.FlinkSessionJob) {}, cluster: application("cluster"),
			exact: "Can not submit session job to application cluster"},
		{name: "savepoint mode, dirs from the cluster", change: func(j *v1beta1.FlinkSessionJob) { j.Spec.Job.UpgradeMode = v1beta1.UpgradeModeSavepoint },
			cluster: withConf(session("cluster"), config.FlinkSavepointDir, spDir, config.FlinkCheckpointDir, cpDir)},
		{name: "savepoint mode, dirs from the job", change: func(j *v1beta1.FlinkSessionJob) {
			j.Spec.Job.UpgradeMode = v1beta1.UpgradeModeSavepoint
			j.Spec.FlinkConfiguration = conf(config.FlinkSavepointDir, spDir, config.FlinkCheckpointDirDeprecated, cpDir)
		}, cluster: session("cluster")},
		{name: "savepoint mode without savepoint dir", change: func(j *v1beta1.FlinkSessionJob) { j.Spec.Job.UpgradeMode = v1beta1.UpgradeModeSavepoint },
			cluster: withConf(session("cluster"), config.FlinkCheckpointDir, cpDir),
			exact:   "Job could not be upgraded with savepoint while config key[execution.checkpointing.savepoint-dir] is not set"},
		{name: "last-state without checkpoint dir", change: func(j *v1beta1.FlinkSessionJob) { j.Spec.Job.UpgradeMode = v1beta1.UpgradeModeLastState },
			cluster: session("cluster"),
			exact:   "Checkpoint directory[execution.checkpointing.dir] must be defined for last-state and savepoint upgrade modes"},
		{name: "periodic savepoints in the job, no dir", change: func(j *v1beta1.FlinkSessionJob) {
			j.Spec.FlinkConfiguration = conf(config.KeyPeriodicSavepointInterval, "10m")
		}, cluster: session("cluster"),
			exact: "Periodic savepoints cannot be enabled when config key[execution.checkpointing.savepoint-dir] is not set"},
		{name: "dir rules wait for the cluster", change: func(j *v1beta1.FlinkSessionJob) { j.Spec.Job.UpgradeMode = v1beta1.UpgradeModeSavepoint }},
		{name: "redeploy nonce without path", change: func(j *v1beta1.FlinkSessionJob) {
			j.Spec.Job.SavepointRedeployNonce = ptr(int64(1))
			j.Status.ReconciliationStatus.LastReconciledSpec = `{"spec":{"deploymentName":"cluster","job":{}},"resource_metadata":{}}`
		}, cluster: session("cluster"), exact: "InitialSavepointPath must not be empty for savepoint redeployment"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			job := sessionJob("sj", "cluster")
			tc.change(job)
			res, err := SessionJob(job, tc.cluster, config.Defaults())
			if tc.exact != "" {
				checkErr(t, err, tc.exact)
			} else {
				checkErrContains(t, err, tc.want...)
			}
			if err == nil && res == nil {
				t.Error("nil result without an error")
			}
			if err == nil && tc.cluster != nil && (res.Config == nil || res.Version.IsZero()) {
				t.Errorf("result %+v, want the effective config and the cluster's version", res)
			}
		})
	}
}

func TestSessionJobUpdate(t *testing.T) {
	old := sessionJob("sj", "cluster")
	cur := old.DeepCopy()
	cur.Spec.Job.Parallelism = ptr(int32(4))
	checkErr(t, SessionJobUpdate(old, cur), "")
	cur.Spec.DeploymentName = "other"
	checkErr(t, SessionJobUpdate(old, cur), "The deploymentName can't be changed")
}

func TestSessionJarURI(t *testing.T) {
	for uri, ok := range map[string]bool{
		"": true, "https://h/j.jar": true, "HTTP://h/j.jar": true, "file:///j.jar": true,
		"local:///j.jar": false, "s3://b/j.jar": false, "j.jar": false, "http://[::1": false,
	} {
		if err := SessionJarURI(uri); (err == nil) != ok {
			t.Errorf("SessionJarURI(%q) = %v, want ok=%v", uri, err, ok)
		}
	}
}
