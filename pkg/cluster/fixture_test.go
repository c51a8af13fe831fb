package cluster

import (
	"encoding/json"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/config"
)

const testJobID = "0123456789abcdef0123456789abcdef"

// application is a small application FlinkDeployment on Flink 1.20.
func application() *v1beta1.FlinkDeployment {
	return &v1beta1.FlinkDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: "demo", Namespace: "jobs", UID: types.UID("uid-1")},
		Spec: v1beta1.FlinkDeploymentSpec{
			Image:          "flink:1.20",
			FlinkVersion:   v1beta1.FlinkVersion1_20,
			ServiceAccount: "flink",
			Mode:           v1beta1.DeploymentModeStandalone,
			Job: &v1beta1.JobSpec{
				JarURI:      "local:///opt/flink/usrlib/job.jar",
				EntryClass:  "org.example.Job",
				Parallelism: ptr.To[int32](2),
				UpgradeMode: v1beta1.UpgradeModeSavepoint,
			},
		},
	}
}

// session is application() without a job.
func session() *v1beta1.FlinkDeployment {
	d := application()
	d.Spec.Job = nil
	return d
}

// input builds an Input for d with its own spec, the operator defaults, and
// the given changes applied.
func input(d *v1beta1.FlinkDeployment, changes ...func(*Input)) Input {
	in := Input{Deployment: d, Spec: *d.Spec.DeepCopy(), OperatorConfig: config.Defaults(), JobID: testJobID}
	for _, c := range changes {
		c(&in)
	}
	return in
}

func mustBuild(t *testing.T, in Input) *Cluster {
	t.Helper()
	c, err := Build(in)
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	return c
}

func mainContainer(t *testing.T, pod corev1.PodSpec) corev1.Container {
	t.Helper()
	for _, c := range pod.Containers {
		if c.Name == MainContainerName {
			return c
		}
	}
	t.Fatalf("no %s in %v", MainContainerName, pod.Containers)
	return corev1.Container{}
}

func flinkConf(values map[string]any) *v1beta1.Configuration {
	raw, err := json.Marshal(values)
	if err != nil {
		panic(err)
	}
	return &v1beta1.Configuration{Raw: raw}
}
