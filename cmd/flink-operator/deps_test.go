package main

import (
	"os/exec"
	"strings"
	"testing"
)

// The operator links only the Kubernetes API groups it uses: client-go's
// clientset, informers, discovery client and leader election each import
// all 56 groups Kubernetes serves, and registering them at start cost about
// 10 MiB of resident memory (docs/performance.md, "After, third round").
func TestBinaryLinksNoAllGroupsPackage(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	forbidden := map[string]bool{
		"k8s.io/client-go/kubernetes":                  true,
		"k8s.io/client-go/kubernetes/scheme":           true,
		"k8s.io/client-go/informers":                   true,
		"k8s.io/client-go/discovery":                   true,
		"k8s.io/client-go/tools/leaderelection":        true,
		"k8s.io/client-go/applyconfigurations/meta/v1": true,
	}
	apiGroups := 0
	for _, pkg := range strings.Fields(string(out)) {
		if forbidden[pkg] {
			t.Errorf("cmd/flink-operator links %s, which brings in every Kubernetes API group (use pkg/clients and pkg/generated/kube)", pkg)
		}
		if strings.HasPrefix(pkg, "k8s.io/api/") {
			apiGroups++
		}
	}
	if apiGroups > 12 {
		t.Errorf("cmd/flink-operator links %d k8s.io/api packages, want the few it uses (9 when this test was written)", apiGroups)
	}
}
