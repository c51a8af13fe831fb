package framework

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	flinkjvm "github.com/flinkops/flink-operator/e2e/flink"
	"github.com/flinkops/flink-operator/e2e/localcluster"
	"github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	flinkclient "github.com/flinkops/flink-operator/pkg/generated/clientset/versioned"
)

// Provider environment variables.
const (
	EnvProvider   = "FLINKOP_E2E_PROVIDER"   // "local" (default) or "kind"
	EnvKubeconfig = "FLINKOP_E2E_KUBECONFIG" // the kind cluster's kubeconfig
	// EnvDataDir is a host directory mounted at the same path in the kind
	// node: Env.Base goes under it, so checkpoint and savepoint paths are
	// the same on the host, the node and (hostPath) in Flink pods.
	EnvDataDir = "FLINKOP_E2E_DATA_DIR"
	// EnvFlinkImages maps pinned Flink versions to images on kind
	// ("1.20.5=flinkops/flink-testjob:1.20,2.3.0=...").
	EnvFlinkImages = "FLINKOP_E2E_FLINK_IMAGES"
	// EnvHostAddress is the address at which pods and the in-cluster
	// operator reach the test process on kind (the docker network's
	// gateway, e.g. 172.18.0.1); locally everything is 127.0.0.1.
	EnvHostAddress = "FLINKOP_E2E_HOST_ADDRESS"
)

// Env is one e2e environment, shared by the scenarios of a test.
type Env struct {
	Ctx  context.Context
	Kube kubernetes.Interface
	// Flink is the flink.apache.org clientset (as cluster admin).
	Flink flinkclient.Interface
	// Config is the admin REST config.
	Config *rest.Config
	// Local is the local cluster; nil on kind.
	Local *localcluster.Cluster
	// Base is a host directory for checkpoints and savepoints (the local
	// provider's JVMs write there; on kind it is inside the nodes).
	Base string
	// Root is the operator module's root.
	Root string
	// Op is the operator process (local provider only).
	Op *Operator
	// OpLog is the operator's log file (local provider only).
	OpLog string

	kubeconfig string   // kind: kubectl --kubeconfig
	bins       string   // local: directory of the built operator binary
	opArgs     []string // local: the operator's extra flags
	dumped     bool
}

// Options shape Setup.
type Options struct {
	// Name prefixes the host directory.
	Name string
	// OperatorArgs are extra flags for the local operator process.
	OperatorArgs []string
	// NoOperator leaves the operator to the test (local provider); the
	// operator user then gets no RBAC either.
	NoOperator bool
	// NoCRDs leaves installing the CRDs to the test.
	NoCRDs bool
}

// Kind reports whether the scenarios run against a kind cluster.
func Kind() bool { return os.Getenv(EnvProvider) == "kind" }

// Setup prepares the environment: the pinned Flink versions' jars (Maven,
// before any clock starts), then the cluster with CRDs and the operator.
// Everything is torn down by t.Cleanup.
func Setup(t *testing.T, ctx context.Context, opts Options) *Env {
	t.Helper()
	for _, v := range flinkjvm.Versions() {
		if _, err := flinkjvm.Ensure(ctx, v); err != nil {
			t.Fatal(err)
		}
	}
	root, err := localcluster.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	parent := ""
	if Kind() {
		if parent = os.Getenv(EnvDataDir); parent == "" {
			t.Fatalf("%s=kind needs %s (e2e/kind/README.md)", EnvProvider, EnvDataDir)
		}
	}
	base, err := os.MkdirTemp(parent, "flinkop-"+opts.Name+"-")
	if err != nil {
		t.Fatal(err)
	}
	if Kind() {
		// Flink runs as uid 9999 in the official image.
		if err := os.Chmod(base, 0o777); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { os.RemoveAll(base) }) // registered first: runs last
	e := &Env{Ctx: ctx, Root: root, Base: base, OpLog: filepath.Join(base, "operator.log")}
	if Kind() {
		e.setupKind(t)
		return e
	}
	bins, err := localcluster.BuildCommands(ctx, "./cmd/flink-operator")
	if err != nil {
		t.Fatal(err)
	}
	c, err := localcluster.Start(ctx, localcluster.Options{NodeAgent: true, Out: TestWriter{T: t}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			DumpTail(t, c.NodeAgent.LogPath, 100)
		}
		if err := c.Stop(); err != nil {
			t.Errorf("stopping the local cluster: %v", err)
		}
	})
	if !opts.NoCRDs {
		if _, err := c.InstallCRDs(ctx, filepath.Join(root, "manifests", "crds")); err != nil {
			t.Fatal(err)
		}
	}
	if !opts.NoOperator {
		if err := c.GrantClusterAdmin(ctx, localcluster.OperatorUser); err != nil {
			t.Fatal(err)
		}
	}
	e.Local, e.Config, e.bins, e.opArgs = c, c.RESTConfig(), bins, opts.OperatorArgs
	e.Kube = kubernetes.NewForConfigOrDie(e.Config)
	e.Flink = flinkclient.NewForConfigOrDie(e.Config)
	if !opts.NoOperator {
		e.Op = StartOperator(t, filepath.Join(bins, "flink-operator"), c.OperatorKubeconfig, e.OpLog, opts.OperatorArgs...)
		t.Cleanup(func() {
			e.Op.Stop()
			if t.Failed() && !e.dumped {
				DumpTail(t, e.OpLog, 200)
			}
		})
	}
	return e
}

func (e *Env) setupKind(t *testing.T) {
	path := os.Getenv(EnvKubeconfig)
	if path == "" {
		t.Fatalf("%s=kind needs %s", EnvProvider, EnvKubeconfig)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		t.Fatal(err)
	}
	e.kubeconfig, e.Config = path, cfg
	e.Kube = kubernetes.NewForConfigOrDie(cfg)
	e.Flink = flinkclient.NewForConfigOrDie(cfg)
}

// Kubectl runs kubectl against the cluster as admin.
func (e *Env) Kubectl(args ...string) (string, error) {
	return e.KubectlInput(nil, args...)
}

// MustKubectl runs kubectl (with stdin, unless empty), logs its output and
// fails t on an error.
func (e *Env) MustKubectl(t testing.TB, stdin string, args ...string) {
	t.Helper()
	var in io.Reader
	if stdin != "" {
		in = strings.NewReader(stdin)
	}
	out, err := e.KubectlInput(in, args...)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("kubectl %s: %s", strings.Join(args, " "), strings.TrimSpace(out))
}

// KubectlInput runs kubectl with stdin.
func (e *Env) KubectlInput(stdin io.Reader, args ...string) (string, error) {
	if e.Local != nil {
		if stdin == nil {
			return e.Local.Kubectl(args...)
		}
		return e.Local.KubectlInput(stdin, args...)
	}
	cmd := exec.CommandContext(e.Ctx, "kubectl", append([]string{"--kubeconfig", e.kubeconfig}, args...)...)
	cmd.Stdin = stdin
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("kubectl %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

// OperatorExited returns an error once the local operator has exited (nil
// on kind, where Kubernetes restarts it).
func (e *Env) OperatorExited() error {
	if e.Op == nil {
		return nil
	}
	return e.Op.Exited()
}

// CreateNamespace creates ns and waits for its default ServiceAccount
// (pods are admitted only then).
func (e *Env) CreateNamespace(t *testing.T, ns string) {
	t.Helper()
	if _, err := e.Kube.CoreV1().Namespaces().Create(e.Ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.WaitFor(t, time.Minute, "ServiceAccount default in "+ns, func() (bool, string) {
		_, err := e.Kube.CoreV1().ServiceAccounts(ns).Get(e.Ctx, "default", metav1.GetOptions{})
		return err == nil, fmt.Sprint(err)
	})
}

// WaitFor polls cond every 250 ms until it holds; it fails with the last
// observation on timeout, or at once if the operator exits.
func (e *Env) WaitFor(t *testing.T, timeout time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	last := ""
	for {
		ok, seen := cond()
		if seen != "" {
			last = seen
		}
		if ok {
			return
		}
		if err := e.OperatorExited(); err != nil {
			t.Fatalf("waiting for %s: %v (last seen: %s)", what, err, last)
		}
		if time.Now().After(deadline) || e.Ctx.Err() != nil {
			t.Fatalf("timed out after %s waiting for %s; last seen: %s", timeout, what, last)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// Dump logs what explains a failure in namespace ns: the flink.apache.org
// objects and their events, pod logs (local provider), the operator log.
func (e *Env) Dump(t *testing.T, ns string) {
	for _, args := range [][]string{
		{"get", "flinkdeployment,flinksessionjob,flinkstatesnapshot,deployment,pod,service", "-n", ns, "-o", "wide"},
		{"get", "flinkdeployment,flinksessionjob", "-n", ns, "-o", "yaml"},
		{"get", "events", "-n", ns, "--sort-by=.lastTimestamp"},
	} {
		out, err := e.Kubectl(args...)
		t.Logf("--- kubectl %s\n%s%v", strings.Join(args, " "), out, errText(err))
	}
	if e.Local != nil {
		pods := filepath.Join(e.Local.NodeAgentDir, "pods", ns+"_*")
		logs, _ := filepath.Glob(filepath.Join(pods, "logs", "*", "*.log")) // every run of every container
		flinkLogs, _ := filepath.Glob(filepath.Join(pods, "containers", "*", "log", "*.log"))
		for _, l := range append(logs, flinkLogs...) {
			DumpTail(t, l, 80)
		}
		DumpTail(t, e.OpLog, 200)
		e.dumped = true
	}
}

func errText(err error) any {
	if err == nil {
		return ""
	}
	return err
}

// RestartOperator stops the operator process and starts it again with the
// same flags: a new process with empty caches, as upstream's e2e deletes the
// operator pod "to clear CR state cache" (local provider only).
func (e *Env) RestartOperator(t *testing.T) {
	t.Helper()
	e.Op.Stop()
	e.Op = StartOperator(t, e.OperatorBinary(), e.Local.OperatorKubeconfig, e.OpLog, e.opArgs...)
}

// RestartOperatorWithFault stops the operator process and starts the
// fault-injection build (FaultInjectOperatorBinary) with the same flags and
// FaultEnv=fault, which kills it (SIGKILL) at that fault point; then
// RestartOperator starts the ordinary build again (local provider only).
func (e *Env) RestartOperatorWithFault(t *testing.T, fault string) {
	t.Helper()
	bin := e.FaultInjectOperatorBinary(t)
	e.Op.Stop()
	e.Op = StartOperatorWithEnv(t, []string{FaultEnv + "=" + fault}, bin, e.Local.OperatorKubeconfig, e.OpLog, e.opArgs...)
}

// WhileOperatorStopped runs f with the operator process stopped, then
// starts it again with the same flags: what f creates is there before the
// new process's first sync, as when a user switches operators (local
// provider only).
func (e *Env) WhileOperatorStopped(t *testing.T, f func()) {
	t.Helper()
	e.Op.Stop()
	f()
	e.Op = StartOperator(t, e.OperatorBinary(), e.Local.OperatorKubeconfig, e.OpLog, e.opArgs...)
}

// OperatorBinary is the operator binary built for the local provider.
func (e *Env) OperatorBinary() string { return filepath.Join(e.bins, "flink-operator") }

// FaultInjectOperatorBinary builds the operator with -tags faultinject, the
// only build in which FaultEnv arms a test fault point, and returns its path
// (<cache>/bin/flink-operator-faultinject, beside OperatorBinary; go build
// caches it like the default build). Local provider only: the crash tests
// that use it kill and restart the operator process.
func (e *Env) FaultInjectOperatorBinary(t *testing.T) string {
	t.Helper()
	if Kind() {
		t.Fatal("FaultInjectOperatorBinary: the kind provider runs the operator image, which has no fault points")
	}
	bin, err := localcluster.BuildTaggedCommand(e.Ctx, "./cmd/flink-operator", "flink-operator-faultinject", localcluster.FaultInjectTag)
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// Flavour is the image and the FlinkDeployment spelling of a pinned Flink
// line, as the node agent runs it.
type Flavour struct {
	Image   string
	Version v1beta1.FlinkVersion
}

// Flavours are the pinned Flink lines by version.
var Flavours = map[string]Flavour{
	"1.20.5": {"flink:1.20", v1beta1.FlinkVersion1_20},
	"2.3.0":  {"flink:2.3", v1beta1.FlinkVersion2_3},
}
