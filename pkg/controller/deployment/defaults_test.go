package deployment

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/cluster"
	"github.com/flinkops/flink-operator/pkg/controller/controllertest"
)

// clusterObjects is what a changed operator default must not touch in a
// running cluster: the Flink configuration, the JobManager (its UID: it is
// never updated in place, only recreated) and the TaskManagers' pod
// template (a changed config hash rolls them).
type clusterObjects struct {
	config   string
	jm       types.UID
	tmConfig string // "" in native mode
}

func readClusterObjects(t *testing.T, f *controllertest.Fixture, name string) clusterObjects {
	t.Helper()
	cm, err := f.Kube.CoreV1().ConfigMaps(ns).Get(f.Ctx, cluster.ConfigMapName(name), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	jm, err := f.Kube.AppsV1().Deployments(ns).Get(f.Ctx, cluster.JobManagerDeploymentName(name), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := clusterObjects{config: flinkConfigOf(cm), jm: jm.UID}
	tm, err := f.Kube.AppsV1().Deployments(ns).Get(f.Ctx, cluster.TaskManagerDeploymentName(name), metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		t.Fatal(err)
	default:
		out.tmConfig = podConfigHash(tm)
	}
	return out
}

func flinkConfigOf(cm *corev1.ConfigMap) string {
	return cm.Data[cluster.ConfigYAMLFile] + cm.Data[cluster.LegacyConfigFile]
}

func podConfigHash(d *appsv1.Deployment) string {
	return d.Spec.Template.Annotations[cluster.AnnotationConfigHash]
}

// TestChangedOperatorDefaultWaitsForNextDeploy: a Flink default changed in
// the operator configuration (read at a restart, or reloaded) reaches a
// running cluster at its next deploy, as upstream: the running job is not
// restarted and its TaskManagers are not rolled by a change it did not ask
// for; its next upgrade deploys with the new default.
func TestChangedOperatorDefaultWaitsForNextDeploy(t *testing.T) {
	const key, value = "pekko.ask.timeout", "42 s"
	for _, mode := range []v1beta1.KubernetesDeploymentMode{v1beta1.DeploymentModeStandalone, v1beta1.DeploymentModeNative} {
		t.Run(string(mode), func(t *testing.T) {
			var f *fixture
			if mode == v1beta1.DeploymentModeNative {
				f = newNativeFixture(t).podFixture.fixture
			} else {
				f = newFixture(t)
			}
			d := f.application("job", v1beta1.UpgradeModeSavepoint)
			d.Spec.Mode = mode
			before := f.Deploy(d)
			objs := readClusterObjects(t, f.Fixture, "job")

			f.Config[key] = value
			f.Restart()
			for range 5 {
				f.Step("job")
			}
			if got := readClusterObjects(t, f.Fixture, "job"); got != objs {
				t.Errorf("a changed operator default changed the running cluster:\nbefore %+v\nafter  %+v", objs, got)
			}
			if got := f.Get("job"); got.Status.JobStatus.JobID != before.Status.JobStatus.JobID || !running(got) {
				t.Errorf("job after the default changed: %s", statusString(got))
			}
			if f.stops() != 0 {
				t.Errorf("%d stop-with-savepoint operations", f.stops())
			}

			f.edit("job", newArgs)
			f.Until("job", 30, "upgraded", upgradedTo(2))
			if got := readClusterObjects(t, f.Fixture, "job"); !strings.Contains(got.config, key) || !strings.Contains(got.config, value) {
				t.Errorf("the upgrade did not deploy the new default %s: %s", key, got.config)
			}
		})
	}
}
