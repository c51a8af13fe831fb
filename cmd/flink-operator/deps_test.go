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
	pkgs, _ := binaryDeps(t)
	forbidden := map[string]bool{
		"k8s.io/client-go/kubernetes":                  true,
		"k8s.io/client-go/kubernetes/scheme":           true,
		"k8s.io/client-go/informers":                   true,
		"k8s.io/client-go/discovery":                   true,
		"k8s.io/client-go/tools/leaderelection":        true,
		"k8s.io/client-go/applyconfigurations/meta/v1": true,
	}
	apiGroups := 0
	for _, pkg := range pkgs {
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

// testOnlyImportedByClientGo are test packages the binary links only
// because client-go's gentype (the base of every generated typed client)
// keeps its fake clients in the same package; nothing of the operator's may
// import them.
var testOnlyImportedByClientGo = map[string]string{
	"k8s.io/client-go/testing":                        "k8s.io/client-go/gentype",
	"k8s.io/apimachinery/pkg/api/meta/testrestmapper": "k8s.io/client-go/testing",
}

// The binary carries no test code: no fake clients or JobManagers, no test
// builders, no httptest.
func TestBinaryLinksNoTestOnlyPackage(t *testing.T) {
	const module = "github.com/flinkops/flink-operator/"
	pkgs, importers := binaryDeps(t)
	for _, pkg := range pkgs {
		if via, ok := testOnlyImportedByClientGo[pkg]; ok {
			for _, imp := range importers[pkg] {
				if imp != via {
					t.Errorf("%s imports the test package %s (only %s may)", imp, pkg, via)
				}
			}
			continue
		}
		if isTestOnly(pkg, module) {
			t.Errorf("cmd/flink-operator links the test-only package %s (imported by %s)", pkg, strings.Join(importers[pkg], ", "))
		}
	}
}

// binaryDeps lists the packages cmd/flink-operator links (go list -deps)
// and, for each, the packages that import it.
func binaryDeps(t *testing.T) (pkgs []string, importers map[string][]string) {
	t.Helper()
	out, err := exec.Command("go", "list", "-deps", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	importers = map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		pkgs = append(pkgs, f[0])
		for _, imp := range f[1:] {
			importers[imp] = append(importers[imp], f[0])
		}
	}
	if len(pkgs) < 100 {
		t.Fatalf("go list -deps listed %d packages; the binary has hundreds", len(pkgs))
	}
	return pkgs, importers
}

// isTestOnly says whether pkg is test code: the standard library's testing
// packages and httptest, any package with a path element starting with
// fake, and the operator's own test builders (named …test) and e2e tree.
func isTestOnly(pkg, module string) bool {
	if pkg == "testing" || strings.HasPrefix(pkg, "testing/") || strings.HasPrefix(pkg, "net/http/httptest") {
		return true
	}
	for _, elem := range strings.Split(pkg, "/") {
		if strings.HasPrefix(elem, "fake") {
			return true
		}
	}
	rest, ours := strings.CutPrefix(pkg, module)
	return ours && (strings.HasPrefix(rest, "e2e/") || strings.HasSuffix(rest, "test"))
}
