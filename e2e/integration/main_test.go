package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	"github.com/flinkops/flink-operator/e2e/localcluster"
)

// The control plane shared by all tests of the package.
var (
	cluster    *localcluster.Cluster
	moduleRoot string
	crdNames   []string
	dyn        *dynamic.DynamicClient
	kube       *kubernetes.Clientset
)

var (
	snapshotsGVR   = schema.GroupVersionResource{Group: "flink.apache.org", Version: "v1beta1", Resource: "flinkstatesnapshots"}
	deploymentsGVR = schema.GroupVersionResource{Group: "flink.apache.org", Version: "v1beta1", Resource: "flinkdeployments"}
)

func TestMain(m *testing.M) { os.Exit(runTests(m)) }

func runTests(m *testing.M) int {
	fail := func(format string, args ...any) int {
		fmt.Fprintf(os.Stderr, "integration: "+format+"\n", args...)
		return 1
	}
	var err error
	if moduleRoot, err = localcluster.ModuleRoot(); err != nil {
		return fail("%v", err)
	}
	// Generous: includes a cold build of the binaries when
	// FLINKOP_KUBE_BIN_DIR is not set (make test builds them first).
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	// Start stops what an earlier, killed run left behind first.
	cluster, err = localcluster.Start(ctx, localcluster.Options{Out: os.Stderr})
	if err != nil {
		return fail("start control plane: %v", err)
	}
	defer cluster.Stop() // also after a panic in a test
	defer cluster.StopOnSignal()()

	crdDir := filepath.Join(moduleRoot, "manifests", "crds")
	crdCtx, cancelCRDs := context.WithTimeout(ctx, time.Minute)
	defer cancelCRDs()
	if crdNames, err = cluster.InstallCRDs(crdCtx, crdDir); err != nil {
		cluster.Stop()
		return fail("install CRDs from %s: %v", crdDir, err)
	}
	dyn = dynamic.NewForConfigOrDie(cluster.RESTConfig())
	kube = kubernetes.NewForConfigOrDie(cluster.RESTConfig())

	code := m.Run()
	if err := cluster.Stop(); err != nil {
		return fail("stop control plane: %v", err)
	}
	return code
}

// namespace creates a namespace for the test and deletes it afterwards.
func namespace(t *testing.T) string {
	t.Helper()
	name := strings.Trim(regexp.MustCompile(`[^a-z0-9]+`).ReplaceAllString(strings.ToLower(t.Name()), "-"), "-")
	if len(name) > 50 {
		name = name[:50]
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if _, err := kube.CoreV1().Namespaces().Create(context.Background(), ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		kube.CoreV1().Namespaces().Delete(context.Background(), name, metav1.DeleteOptions{})
	})
	return name
}

// object parses a YAML manifest into an unstructured object.
func object(t *testing.T, manifest string) *unstructured.Unstructured {
	t.Helper()
	m := map[string]any{}
	if err := yaml.Unmarshal([]byte(manifest), &m); err != nil {
		t.Fatalf("bad test manifest: %v\n%s", err, manifest)
	}
	return &unstructured.Unstructured{Object: m}
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return c
}

// kubectl runs kubectl as admin and fails the test on error.
func kubectl(t *testing.T, args ...string) string {
	t.Helper()
	out, err := cluster.Kubectl(args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// table splits `kubectl get` output into rows of cells (columns are
// separated by at least two spaces, so cells must not be empty).
func table(out string) [][]string {
	var rows [][]string
	for line := range strings.SplitSeq(strings.TrimRight(out, "\n"), "\n") {
		rows = append(rows, regexp.MustCompile(`\s{2,}`).Split(strings.TrimSpace(line), -1))
	}
	return rows
}
