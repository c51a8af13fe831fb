package framework

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ApplyFlinkServiceAccount gives namespace ns the Flink ServiceAccount of
// native mode as docs/install.md tells a user to: manifests/flink-serviceaccount
// through a kustomization of one's own naming the namespace (which also
// sets the RoleBinding subject's), written under t's temporary directory.
func (e *Env) ApplyFlinkServiceAccount(t testing.TB, ns string) {
	t.Helper()
	dir := t.TempDir()
	// kustomize takes relative paths only.
	rel, err := filepath.Rel(dir, filepath.Join(e.Root, "manifests", "flink-serviceaccount"))
	if err != nil {
		t.Fatal(err)
	}
	k := fmt.Sprintf("namespace: %s\nresources: [%s]\n", ns, rel)
	if err := os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(k), 0o644); err != nil {
		t.Fatal(err)
	}
	e.MustKubectl(t, "", "apply", "--server-side", "-k", dir)
	rb, err := e.Kube.RbacV1().RoleBindings(ns).Get(e.Ctx, "flink", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rb.Subjects) != 1 || rb.Subjects[0].Namespace != ns || rb.Subjects[0].Name != "flink" {
		t.Fatalf("RoleBinding flink subjects %+v, want ServiceAccount %s/flink", rb.Subjects, ns)
	}
}
