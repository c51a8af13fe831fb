package deployment

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/cluster"
	"github.com/flinkops/flink-operator/pkg/flink/fakejm"
)

// Flink 2 labels its HA ConfigMaps with Flink's common labels only (no
// configmap-type=high-availability, which Flink 1.x adds), the labels the
// operator's own flink-config-<name> of a native cluster carries too. The
// controller finds them by name (cluster.IsHAConfigMap): it deletes them
// where it deletes Flink 1.x's, keeps its own ConfigMap, and recovers a
// last-state upgrade through them.

// flink2HAConfigMaps writes the HA ConfigMaps Flink 2's Kubernetes HA keeps
// for the job of name, with Flink 2's labels.
func (f *nativeFixture) flink2HAConfigMaps(name, jobID string) {
	f.T.Helper()
	for _, n := range []string{cluster.HAClusterConfigMapName(name), cluster.HAJobConfigMapName(name, jobID)} {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: n, Namespace: ns, Labels: cluster.CommonLabels(cluster.Native, name)},
			Data: map[string]string{"counter": "1"}}
		if _, err := f.Kube.CoreV1().ConfigMaps(ns).Create(f.Ctx, cm, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			f.T.Fatal(err)
		}
	}
}

// flink2ConfigMapNames are the ConfigMaps with Flink's common labels of
// name: the HA ConfigMaps of either Flink line and the operator's own.
func (f *nativeFixture) flink2ConfigMapNames(name string) []string {
	f.T.Helper()
	list, err := f.Kube.CoreV1().ConfigMaps(ns).List(f.Ctx, metav1.ListOptions{LabelSelector: cluster.HAConfigMapListSelector(name)})
	if err != nil {
		f.T.Fatal(err)
	}
	var out []string
	for _, cm := range list.Items {
		out = append(out, cm.Name)
	}
	slices.Sort(out)
	return out
}

func TestNativeFlink2HAConfigMapsSavepointUpgradeAndDeletion(t *testing.T) {
	f := newNativeFixture(t)
	before := f.Deploy(withHA(native(f.application("job", v1beta1.UpgradeModeSavepoint))))
	f.Step("job")
	f.flink2HAConfigMaps("job", before.Status.JobStatus.JobID)
	f.edit("job", newArgs)
	after := f.Until("job", 30, "savepoint upgrade", upgradedTo(2))
	if names := f.flink2ConfigMapNames("job"); !slices.Equal(names, []string{cluster.ConfigMapName("job")}) {
		t.Errorf("ConfigMaps after a savepoint upgrade: %v, want only the operator's %s (Flink 2's HA ConfigMaps deleted)", names, cluster.ConfigMapName("job"))
	}

	f.flink2HAConfigMaps("job", after.Status.JobStatus.JobID)
	f.markDeleted("job")
	f.Until("job", 10, "finalizer removed", finalized)
	for _, n := range f.flink2ConfigMapNames("job") {
		if n != cluster.ConfigMapName("job") {
			t.Errorf("Flink 2 HA ConfigMap %s left after the deletion", n)
		}
	}
}

func TestNativeFlink2LastStateUpgradeFromHA(t *testing.T) {
	f := newNativeFixture(t)
	before := f.Deploy(withHA(native(f.application("job", v1beta1.UpgradeModeLastState))))
	jobID := before.Status.JobStatus.JobID
	f.flink2HAConfigMaps("job", jobID)
	latest := f.haCheckpoint("job") // into the Flink 2-labelled job ConfigMap
	// Unreachable: only the HA metadata can tell the latest checkpoint.
	f.jm("job").InjectFault(fakejm.Fault{Status: 503})
	f.Step("job")
	f.edit("job", newArgs)
	f.Until("job", 30, "last-state upgrade", upgradedTo(2))
	if restored, _ := f.restoredFrom("job"); restored != latest {
		t.Errorf("restored from %q, want the latest checkpoint %s (Flink 2's HA ConfigMap)", restored, latest)
	}
	if _, err := f.Kube.CoreV1().ConfigMaps(ns).Get(f.Ctx, cluster.HAJobConfigMapName("job", jobID), metav1.GetOptions{}); err != nil {
		t.Errorf("job HA ConfigMap (Flink 2's labels) not kept by a last-state upgrade: %v", err)
	}
}
