package integration

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestCRDsEstablished(t *testing.T) {
	want := []string{
		"flinkdeployments.flink.apache.org",
		"flinksessionjobs.flink.apache.org",
		"flinkstatesnapshots.flink.apache.org",
		"flinkbluegreendeployments.flink.apache.org",
	}
	for _, name := range want {
		if !slices.Contains(crdNames, name) {
			t.Errorf("manifests/crds has no CRD %s (has %v)", name, crdNames)
		}
	}
	client := apiextensionsclient.NewForConfigOrDie(cluster.RESTConfig())
	for _, name := range crdNames {
		crd, err := client.ApiextensionsV1().CustomResourceDefinitions().Get(ctx(t), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, cond := range []apiextensionsv1.CustomResourceDefinitionConditionType{apiextensionsv1.Established, apiextensionsv1.NamesAccepted} {
			ok := slices.ContainsFunc(crd.Status.Conditions, func(c apiextensionsv1.CustomResourceDefinitionCondition) bool {
				return c.Type == cond && c.Status == apiextensionsv1.ConditionTrue
			})
			if !ok {
				t.Errorf("CRD %s is not %s: %+v", name, cond, crd.Status.Conditions)
			}
		}
	}
}

// TestUpstreamExamplesApply checks that every example of the upstream
// operator is accepted unchanged by our CRDs.
func TestUpstreamExamplesApply(t *testing.T) {
	dir := filepath.Join(moduleRoot, "pkg", "upstreamtest", "testdata", "examples")
	files, _ := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if len(files) < 10 {
		t.Fatalf("%d upstream examples in %s, want the 13 upstream publishes", len(files), dir)
	}
	ns := namespace(t)
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			out, err := cluster.Kubectl("apply", "--dry-run=server", "-n", ns, "-f", f)
			if err != nil {
				t.Fatalf("%s is rejected: %v", f, err)
			}
			t.Log(strings.TrimSpace(out))
		})
	}
}

const validSnapshot = `
apiVersion: flink.apache.org/v1beta1
kind: FlinkStateSnapshot
metadata:
  name: snap
spec:
  backoffLimit: 0
  jobReference:
    kind: FlinkDeployment
    name: example-deployment
  checkpoint: {}
`

func TestSnapshotValidation(t *testing.T) {
	ns := namespace(t)
	for _, tc := range []struct {
		name, spec string
		want       []string // all in the error message
	}{
		{"savepoint and checkpoint", `{jobReference: {kind: FlinkDeployment, name: d}, savepoint: {}, checkpoint: {}}`, []string{"spec", "exactly one of spec.savepoint and spec.checkpoint"}},
		{"neither savepoint nor checkpoint", `{jobReference: {kind: FlinkDeployment, name: d}}`, []string{"spec", "exactly one of spec.savepoint and spec.checkpoint"}},
		{"backoffLimit below -1", `{jobReference: {kind: FlinkDeployment, name: d}, checkpoint: {}, backoffLimit: -2}`, []string{"spec.backoffLimit", "greater than or equal to -1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obj := object(t, "apiVersion: flink.apache.org/v1beta1\nkind: FlinkStateSnapshot\nmetadata: {name: bad}\nspec: "+tc.spec)
			_, err := dyn.Resource(snapshotsGVR).Namespace(ns).Create(ctx(t), obj, metav1.CreateOptions{})
			if !apierrors.IsInvalid(err) {
				t.Fatalf("create: got error %v, want Invalid", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
			t.Log(err)
		})
	}

	t.Run("spec change after creation", func(t *testing.T) {
		api := dyn.Resource(snapshotsGVR).Namespace(ns)
		created, err := api.Create(ctx(t), object(t, validSnapshot), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		changed := created.DeepCopy()
		unstructured.SetNestedField(changed.Object, int64(3), "spec", "backoffLimit")
		_, err = api.Update(ctx(t), changed, metav1.UpdateOptions{})
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec is immutable") {
			t.Fatalf("spec update: got error %v, want Invalid mentioning %q", err, "spec is immutable")
		}
		t.Log(err)
		// Metadata stays mutable (the operator keeps labels on snapshots).
		relabelled := created.DeepCopy()
		relabelled.SetLabels(map[string]string{"snapshot.state": "COMPLETED"})
		if _, err := api.Update(ctx(t), relabelled, metav1.UpdateOptions{}); err != nil {
			t.Fatalf("label update rejected: %v", err)
		}
	})
}

func TestSnapshotStatusSubresource(t *testing.T) {
	ns := namespace(t)
	api := dyn.Resource(snapshotsGVR).Namespace(ns)
	obj := object(t, validSnapshot+"status: {state: FAILED}\n")
	created, err := api.Create(ctx(t), obj, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, found, _ := unstructured.NestedMap(created.Object, "status"); found {
		t.Errorf("status given on create was kept: %v", created.Object["status"])
	}

	// A status update via /status is kept; a spec change in it is ignored.
	withStatus := created.DeepCopy()
	unstructured.SetNestedMap(withStatus.Object, map[string]any{"state": "COMPLETED", "path": "/savepoints/sp-1"}, "status")
	unstructured.SetNestedField(withStatus.Object, int64(5), "spec", "backoffLimit")
	updated, err := api.UpdateStatus(ctx(t), withStatus, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("status update: %v", err)
	}
	if s, _, _ := unstructured.NestedString(updated.Object, "status", "state"); s != "COMPLETED" {
		t.Errorf("status.state after /status update = %q, want COMPLETED", s)
	}
	if b, _, _ := unstructured.NestedInt64(updated.Object, "spec", "backoffLimit"); b != 0 {
		t.Errorf("spec.backoffLimit changed through /status to %d", b)
	}

	// A status change through the main resource is ignored.
	viaMain := updated.DeepCopy()
	unstructured.SetNestedField(viaMain.Object, "FAILED", "status", "state")
	viaMain.SetLabels(map[string]string{"touched": "yes"})
	if _, err := api.Update(ctx(t), viaMain, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("main resource update: %v", err)
	}
	got, err := api.Get(ctx(t), "snap", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if s, _, _ := unstructured.NestedString(got.Object, "status", "state"); s != "COMPLETED" {
		t.Errorf("status.state changed through the main resource to %q", s)
	}
	if got.GetLabels()["touched"] != "yes" {
		t.Errorf("label update through the main resource lost")
	}
}

func exampleDeployment(t *testing.T, ns string) *unstructured.Unstructured {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(moduleRoot, "pkg", "upstreamtest", "testdata", "examples", "basic.yaml"))
	if err != nil {
		t.Fatalf("upstream example basic.yaml: %v", err)
	}
	obj, err := dyn.Resource(deploymentsGVR).Namespace(ns).Create(ctx(t), object(t, string(b)), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return obj
}

func TestDeploymentScaleSubresource(t *testing.T) {
	ns := namespace(t)
	dep := exampleDeployment(t, ns)
	name := dep.GetName()
	api := dyn.Resource(deploymentsGVR).Namespace(ns)

	kubectl(t, "scale", "-n", ns, "flinkdep", name, "--replicas=3")
	got, err := api.Get(ctx(t), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if r, _, _ := unstructured.NestedInt64(got.Object, "spec", "taskManager", "replicas"); r != 3 {
		t.Errorf("spec.taskManager.replicas after kubectl scale = %d, want 3", r)
	}

	selector := "app=" + name + ",component=taskmanager"
	unstructured.SetNestedMap(got.Object, map[string]any{"replicas": int64(2), "labelSelector": selector}, "status", "taskManager")
	if _, err := api.UpdateStatus(ctx(t), got, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	scale, err := api.Get(ctx(t), name, metav1.GetOptions{}, "scale")
	if err != nil {
		t.Fatal(err)
	}
	if scale.GetKind() != "Scale" {
		t.Errorf("scale subresource kind = %q", scale.GetKind())
	}
	spec, _, _ := unstructured.NestedInt64(scale.Object, "spec", "replicas")
	status, _, _ := unstructured.NestedInt64(scale.Object, "status", "replicas")
	sel, _, _ := unstructured.NestedString(scale.Object, "status", "selector")
	if spec != 3 || status != 2 || sel != selector {
		t.Errorf("scale = spec %d, status %d, selector %q; want 3, 2, %q", spec, status, sel, selector)
	}
}

func TestPrinterColumns(t *testing.T) {
	ns := namespace(t)

	snap := object(t, validSnapshot)
	snap.SetLabels(map[string]string{"snapshot.type": "CHECKPOINT", "snapshot.trigger-type": "MANUAL"})
	snapAPI := dyn.Resource(snapshotsGVR).Namespace(ns)
	created, err := snapAPI.Create(ctx(t), snap, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	unstructured.SetNestedMap(created.Object, map[string]any{"state": "COMPLETED", "path": "/checkpoints/chk-7"}, "status")
	if _, err := snapAPI.UpdateStatus(ctx(t), created, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	rows := table(kubectl(t, "get", "flinksnp", "-n", ns))
	wantHeader := []string{"NAME", "TYPE", "JOB", "TRIGGER", "STATE", "PATH", "AGE"}
	if len(rows) != 2 || !slices.Equal(rows[0], wantHeader) {
		t.Fatalf("kubectl get flinksnp: got %q, want header %q and one row", rows, wantHeader)
	}
	if want := []string{"snap", "CHECKPOINT", "example-deployment", "MANUAL", "COMPLETED", "/checkpoints/chk-7"}; !slices.Equal(rows[1][:6], want) {
		t.Errorf("kubectl get flinksnp row = %q, want %q + age", rows[1], want)
	}

	dep := exampleDeployment(t, ns)
	unstructured.SetNestedMap(dep.Object, map[string]any{
		"jobStatus":      map[string]any{"state": "RUNNING"},
		"lifecycleState": "STABLE",
	}, "status")
	if _, err := dyn.Resource(deploymentsGVR).Namespace(ns).UpdateStatus(ctx(t), dep, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	rows = table(kubectl(t, "get", "flinkdep", "-n", ns))
	wantHeader = []string{"NAME", "JOB STATUS", "LIFECYCLE STATE", "AGE"}
	if len(rows) != 2 || !slices.Equal(rows[0], wantHeader) {
		t.Fatalf("kubectl get flinkdep: got %q, want header %q and one row", rows, wantHeader)
	}
	if want := []string{dep.GetName(), "RUNNING", "STABLE"}; !slices.Equal(rows[1][:3], want) {
		t.Errorf("kubectl get flinkdep row = %q, want %q + age", rows[1], want)
	}
}
