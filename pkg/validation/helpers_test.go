package validation

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/config"
)

const (
	spDir = "file:///flink/savepoints"
	cpDir = "file:///flink/checkpoints"
)

func ptr[T any](v T) *T { return &v }

func conf(kv ...string) *v1beta1.Configuration {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return v1beta1.NewConfiguration(m)
}

// application is a valid application FlinkDeployment in namespace "ns".
func application(name string) *v1beta1.FlinkDeployment {
	return &v1beta1.FlinkDeployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name},
		Spec: v1beta1.FlinkDeploymentSpec{
			Image:              "flink:1.20",
			FlinkVersion:       v1beta1.FlinkVersion1_20,
			ServiceAccount:     "flink",
			FlinkConfiguration: conf(config.FlinkSavepointDir, spDir, config.FlinkCheckpointDir, cpDir),
			Job: &v1beta1.JobSpec{
				JarURI:      "local:///opt/flink/examples/streaming/StateMachineExample.jar",
				UpgradeMode: v1beta1.UpgradeModeSavepoint,
			},
		},
	}
}

// session is a session cluster FlinkDeployment without a savepoint dir.
func session(name string) *v1beta1.FlinkDeployment {
	d := application(name)
	d.Spec.Job = nil
	d.Spec.FlinkConfiguration = nil
	return d
}

func sessionJob(name, cluster string) *v1beta1.FlinkSessionJob {
	return &v1beta1.FlinkSessionJob{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name},
		Spec: v1beta1.FlinkSessionJobSpec{
			DeploymentName: cluster,
			Job: &v1beta1.JobSpec{
				JarURI:      "https://repo.example/jobs/job.jar",
				UpgradeMode: v1beta1.UpgradeModeStateless,
			},
		},
	}
}

// checkErr fails unless err is nil (want "") or its message is exactly want.
func checkErr(t *testing.T, err error, want string) {
	t.Helper()
	switch {
	case want == "" && err != nil:
		t.Errorf("unexpected error: %v", err)
	case want != "" && err == nil:
		t.Errorf("no error, want %q", want)
	case want != "" && err.Error() != want:
		t.Errorf("error\n  %q\nwant\n  %q", err.Error(), want)
	}
}

// checkErrContains is checkErr for our own messages, where the test names
// what the message must say rather than all of it.
func checkErrContains(t *testing.T, err error, wants ...string) {
	t.Helper()
	if len(wants) == 0 {
		if err != nil {
			t.Errorf("unexpected error: %v", err)
		}
		return
	}
	if err == nil {
		t.Errorf("no error, want one mentioning %q", wants)
		return
	}
	for _, w := range wants {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not mention %q", err.Error(), w)
		}
	}
}
