package upstreame2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes"

	flinkjvm "github.com/flinkops/flink-operator/e2e/flink"
	"github.com/flinkops/flink-operator/e2e/framework"
	"github.com/flinkops/flink-operator/e2e/localcluster"
	flinkclient "github.com/flinkops/flink-operator/pkg/generated/clientset/versioned"
)

const (
	// flinkVersion is upstream CI's flink-version input: the Flink 2 line
	// the node agent runs (every flink:2.x image runs the pinned 2.3.0).
	flinkVersion = "v2_3"
	// pinnedFlink is the pinned Flink release of that line, whose examples
	// jar is STREAMING_EXAMPLES_JAR_URL.
	pinnedFlink = "2.3.0"
	// mode is upstream CI's mode input.
	mode = "native"
	// scriptTimeout bounds one script (upstream's waits are 300 s each).
	scriptTimeout = 15 * time.Minute

	// The operator "as a pod" (testdata/operator.yaml), as upstream's Helm
	// chart names it, in the namespace upstream's CI installs it in.
	operatorNamespace  = "default"
	operatorDeployment = "flink-kubernetes-operator"
	operatorContainer  = "flink-kubernetes-operator"
	operatorLabel      = "app.kubernetes.io/name=flink-kubernetes-operator"

	// envUpstreamTests names upstream's e2e-tests directory (of a checkout
	// of the release testdata/SOURCES.md records), which this repository
	// does not keep: upstream's scripts are its code.
	envUpstreamTests = "FLINKOP_UPSTREAM_E2E_TESTS"
	// envScripts selects scripts (comma-separated file names).
	envScripts = "FLINKOP_UPSTREAM_E2E_SCRIPTS"
	// envYQ is the directory holding mikefarah's yq (hack/build-yq.sh,
	// which the test runs itself when it is unset).
	envYQ = "FLINKOP_YQ_BIN_DIR"
)

// scripts are upstream's scripts this harness runs, in this order, each on
// a fresh cluster.
var scripts = []string{
	"test_snapshot.sh",
	"test_application_operations.sh",
	"test_sessionjob_operations.sh",
	"test_batch_job.sh",
}

// ciPrepare is upstream CI's "Run Flink e2e tests" step
// (.github/workflows/e2e.yaml of release-1.15.0) up to the script, with its
// ${{ inputs.* }} as variables: the same substitutions on data/*.yaml,
// here on a copy in the working directory.
const ciPrepare = `set -euo pipefail
FLINK_IMAGE=$(sed --regexp-extended 's/v([0-9]+)_([0-9]+)/flink:\1.\2/g' <<< ${FLINK_VERSION} )
ESCAPED_EXAMPLES_JAR=$(printf '%s\n' "$EXAMPLES_JAR" | sed -e 's/[\/&]/\\&/g')

echo FLINK_IMAGE=${FLINK_IMAGE}
echo EXAMPLES_JAR=${EXAMPLES_JAR}
sed -i "s/image: flink:.*/image: ${FLINK_IMAGE}/" e2e-tests/data/*.yaml
sed -i "s/flinkVersion: .*/flinkVersion: ${FLINK_VERSION}/" e2e-tests/data/*.yaml
sed -i "s/mode: .*/mode: ${MODE}/" e2e-tests/data/*.yaml
sed -i "s/STREAMING_EXAMPLES_JAR_URL/${ESCAPED_EXAMPLES_JAR}/" e2e-tests/data/*.yaml
`

// minikubeShim answers `minikube ip` with the ingress stand-in's address
// (assert_available_slots curls http://$(minikube ip)/<ns>/<name>/overview).
const minikubeShim = `#!/usr/bin/env bash
# minikube stand-in of e2e/upstreame2e: upstream's scripts only call "minikube ip", for the address
# of minikube's ingress controller; here the harness's ingress stand-in on 127.0.0.1.
if [[ "${1:-}" == "ip" && $# -eq 1 ]]; then
  echo "%s"
  exit 0
fi
echo "minikube (e2e/upstreame2e shim): only 'minikube ip' is supported, not: $*" >&2
exit 1
`

// shared is what every script's run uses.
type shared struct {
	ctx  context.Context
	root string // module root
	// upstreamTests is upstream's e2e-tests directory (envUpstreamTests).
	upstreamTests string
	yqDir         string
	jarURL        string // STREAMING_EXAMPLES_JAR_URL
	results       string // .cache/upstream-e2e/<time>

	scriptTime map[string]time.Duration // how long each script itself ran
}

// TestUpstreamScripts runs upstream's e2e scripts (doc.go), one subtest per
// script, each on a fresh local cluster with a fresh operator pod.
func TestUpstreamScripts(t *testing.T) {
	if framework.Kind() {
		t.Skip("local provider only: the harness runs the operator as a pod of the node agent")
	}
	if os.Geteuid() != 0 {
		t.Skip("the node agent's mount namespaces need root")
	}
	selected := scripts
	if only := os.Getenv(envScripts); only != "" {
		selected = strings.Split(only, ",")
		for _, s := range selected {
			if !slices.Contains(scripts, s) {
				t.Fatalf("%s: %q is not one of %v", envScripts, s, scripts)
			}
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(len(selected))*(scriptTimeout+5*time.Minute))
	defer cancel()
	root, err := localcluster.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	upstreamTests := os.Getenv(envUpstreamTests)
	if upstreamTests == "" {
		t.Fatalf("%s is not set: it names upstream's e2e-tests directory (apache/flink-kubernetes-operator, tag release-1.15.0), which this repository does not keep (testdata/SOURCES.md)", envUpstreamTests)
	}
	if errs := notVerbatim(filepath.Join(root, "e2e", "upstreame2e", "testdata", "SOURCES.md"), upstreamTests); len(errs) != 0 {
		t.Fatalf("%s: %v", envUpstreamTests, errs)
	}
	// Maven work first (flink-examples-streaming lands in ~/.m2 with it).
	if _, err := flinkjvm.Ensure(ctx, pinnedFlink); err != nil {
		t.Fatal(err)
	}
	s := &shared{ctx: ctx, root: root, upstreamTests: upstreamTests, yqDir: findYQ(t, ctx, root), scriptTime: map[string]time.Duration{}}
	s.results = filepath.Join(root, ".cache", "upstream-e2e", time.Now().Format("20060102-150405"))
	if err := os.MkdirAll(s.results, 0o755); err != nil {
		t.Fatal(err)
	}
	bins, err := localcluster.BuildCommands(ctx, "./cmd/flink-operator")
	if err != nil {
		t.Fatal(err)
	}
	// The node agent inherits this PATH: the operator pod's command
	// (flink-operator, the host-command image) is found there.
	t.Setenv("PATH", bins+string(os.PathListSeparator)+os.Getenv("PATH"))
	s.jarURL = serveExamplesJar(t)
	t.Logf("results (script output, pod logs) in %s", s.results)

	var summary []string
	for _, script := range selected {
		begin := time.Now()
		ok := t.Run(script, func(t *testing.T) { s.run(t, script) })
		line := fmt.Sprintf("%-32s %-4s script %-7s with a fresh cluster and operator %s", script, map[bool]string{true: "PASS", false: "FAIL"}[ok],
			s.scriptTime[script].Round(time.Second), time.Since(begin).Round(time.Second))
		summary = append(summary, line)
	}
	t.Logf("upstream e2e scripts (Flink %s, %s mode), each on a fresh cluster:\n%s", flinkVersion, mode, strings.Join(summary, "\n"))
	_ = os.WriteFile(filepath.Join(s.results, "summary.txt"), []byte(strings.Join(summary, "\n")+"\n"), 0o644)
}

// run runs one script on a fresh cluster.
func (s *shared) run(t *testing.T, script string) {
	begin := time.Now()
	ctx := s.ctx
	work := t.TempDir()
	results := filepath.Join(s.results, strings.TrimSuffix(script, ".sh"))
	if err := os.MkdirAll(results, 0o755); err != nil {
		t.Fatal(err)
	}

	c, err := localcluster.Start(ctx, localcluster.Options{
		NodeAgent: true,
		// The operator pod's image (testdata/operator.yaml).
		NodeAgentArgs: []string{"--host-commands", "--container-paths"},
		// The scripts' cleanup deletes the PersistentVolumeClaim of the
		// data and waits until it is gone: its kubernetes.io/pvc-protection
		// finalizer (added by the API server) is removed by this
		// controller, as on minikube, once no pod uses the claim.
		Controllers: append(slices.Clone(localcluster.DefaultControllers), "persistentvolumeclaim-protection-controller"),
		Out:         framework.TestWriter{T: t},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			framework.DumpTail(t, c.NodeAgent.LogPath, 60)
		}
		if err := c.Stop(); err != nil {
			t.Errorf("stopping the local cluster: %v", err)
		}
	})
	if _, err := c.InstallCRDs(ctx, filepath.Join(s.root, "manifests", "crds")); err != nil {
		t.Fatal(err)
	}
	kube := kubernetes.NewForConfigOrDie(c.RESTConfig())

	// What the scripts run: kubectl of the cluster, yq, minikube.
	tools := filepath.Join(work, "bin")
	if err := os.MkdirAll(tools, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, target := range map[string]string{"kubectl": c.KubectlPath, "yq": filepath.Join(s.yqDir, "yq")} {
		if err := os.Symlink(target, filepath.Join(tools, name)); err != nil {
			t.Fatal(err)
		}
	}
	proxy := startIngressProxy(t, ctx, kube)
	if err := os.WriteFile(filepath.Join(tools, "minikube"), fmt.Appendf(nil, minikubeShim, proxy), 0o755); err != nil {
		t.Fatal(err)
	}
	// A copy: the scripts' cleanup sets the current context's namespace.
	kubeconfig := filepath.Join(work, "kubeconfig")
	if err := copyFile(c.Kubeconfig, kubeconfig, 0o600); err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(),
		"PATH="+tools+string(os.PathListSeparator)+os.Getenv("PATH"),
		"KUBECONFIG="+kubeconfig,
		"KUBECACHEDIR="+filepath.Join(work, "kubectl-cache"))
	sh := func(t *testing.T, what, command string, extraEnv ...string) string {
		t.Helper()
		cmd := exec.CommandContext(ctx, "bash", "-c", command)
		cmd.Dir, cmd.Env = work, append(slices.Clone(env), extraEnv...)
		out, err := cmd.CombinedOutput()
		t.Logf("%s:\n%s", what, bytes.TrimRight(out, "\n"))
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		return string(out)
	}

	keeper := keepPodLogs(c.NodeAgentDir, filepath.Join(results, "pods"))
	t.Cleanup(keeper.stop) // before the cluster stops (cleanups run last first)
	s.installOperator(t, work, sh)
	trail := recordStatusTrail(ctx, flinkclient.NewForConfigOrDie(c.RESTConfig()), filepath.Join(results, "status.log"))
	t.Cleanup(trail.stop)

	dir := s.prepareData(t, work, sh)
	t.Logf("cluster, CRDs, operator pod and data ready in %s", time.Since(begin).Round(time.Millisecond))

	logPath := filepath.Join(results, "script.log")
	scriptBegin := time.Now()
	err = runScript(t, ctx, filepath.Join(dir, script), work, env, logPath)
	s.scriptTime[script] = time.Since(scriptBegin)
	t.Logf("%s: %v after %s (output: %s)", script, errOrPass(err), time.Since(scriptBegin).Round(time.Second), logPath)
	if err != nil {
		keeper.copy()
		s.dump(t, sh, keeper)
		t.Fatalf("%s failed: %v", script, err)
	}
}

func errOrPass(err error) any {
	if err == nil {
		return "passed"
	}
	return err
}

// installOperator installs what upstream's CI installs with Helm before a
// script, with this project's manifests: the operator's ServiceAccount and
// RBAC (manifests/base, in namespace default), the Flink ServiceAccount
// flink with its Role (manifests/flink-serviceaccount, namespace default:
// the chart's jobServiceAccount), and the operator Deployment
// (testdata/operator.yaml); then it waits as CI does, and for the
// operator's informers.
func (s *shared) installOperator(t *testing.T, work string, sh func(*testing.T, string, string, ...string) string) {
	t.Helper()
	rbac := filepath.Join(work, "operator-rbac")
	if err := os.MkdirAll(rbac, 0o755); err != nil {
		t.Fatal(err)
	}
	base, err := filepath.Rel(rbac, filepath.Join(s.root, "manifests", "base"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(rbac, "kustomization.yaml"), fmt.Appendf(nil, "namespace: %s\nresources: [%s]\n", operatorNamespace, base), 0o644); err != nil {
		t.Fatal(err)
	}
	// Only the ServiceAccount and RBAC of the install: not its Namespace
	// (it would become default, restricted), Deployment, webhook or
	// Services.
	sh(t, "operator ServiceAccount and RBAC (manifests/base in namespace "+operatorNamespace+")",
		`kubectl kustomize operator-rbac | yq 'select(.kind == "ServiceAccount" or .kind == "ClusterRole" or .kind == "ClusterRoleBinding" or .kind == "Role" or .kind == "RoleBinding")' | kubectl apply --server-side -f -`)
	sh(t, "Flink ServiceAccount (manifests/flink-serviceaccount)",
		"kubectl apply --server-side -k "+filepath.Join(s.root, "manifests", "flink-serviceaccount"))
	sh(t, "operator Deployment", "kubectl apply -f "+filepath.Join(s.root, "e2e", "upstreame2e", "testdata", "operator.yaml"))
	sh(t, "operator Available (as upstream's CI waits)",
		fmt.Sprintf("kubectl wait --for=condition=Available --timeout=120s -n %s deploy/%s && kubectl get pods -n %[1]s", operatorNamespace, operatorDeployment))
	sh(t, "operator informers synced",
		fmt.Sprintf(`for i in $(seq 1 120); do if kubectl logs -n %s -l %s -c %s --tail=-1 | grep -m1 "Informer caches synced"; then exit 0; fi; sleep 1; done; kubectl logs -n %[1]s -l %[2]s -c %[3]s --tail=50; exit 1`,
			operatorNamespace, operatorLabel, operatorContainer))
}

// prepareData copies upstream's e2e-tests directory into work, prepares data/*.yaml as
// upstream's CI does (ciPrepare) and makes the harness's one data
// adaptation (adaptInitContainers). It returns the copy's directory.
func (s *shared) prepareData(t *testing.T, work string, sh func(*testing.T, string, string, ...string) string) string {
	t.Helper()
	src := s.upstreamTests
	dst := filepath.Join(work, "e2e-tests")
	if err := copyTree(src, dst); err != nil {
		t.Fatal(err)
	}
	sh(t, "upstream CI's data preparation", ciPrepare,
		"FLINK_VERSION="+flinkVersion, "MODE="+mode, "EXAMPLES_JAR="+s.jarURL)
	s.adaptInitContainers(t, dst, sh)
	sh(t, "prepared data (diff against upstream's)", fmt.Sprintf("diff -ru %s %s || true", filepath.Join(src, "data"), filepath.Join(dst, "data")))
	return dst
}

// fetcher is upstream's busybox init container that wgets the job jar.
const fetcher = "artifacts-fetcher"

// adaptInitContainers replaces, in the prepared data, each FlinkDeployment's
// artifacts-fetcher init container (busybox `wget <jar URL> -O
// <mount>/myjob.jar` into an emptyDir that the Flink container mounts at
// /opt/flink/usrlib), which the node agent cannot run: the harness runs
// that wget itself (an HTTP GET of the same URL into a host directory) and
// the emptyDir becomes a hostPath volume of that directory. Nothing else
// changes.
func (s *shared) adaptInitContainers(t *testing.T, dir string, sh func(*testing.T, string, string, ...string) string) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "data", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		adapt := false
		dec := yaml.NewYAMLOrJSONDecoder(bytes.NewReader(raw), 4096)
		for {
			var doc struct {
				Kind string `json:"kind"`
				Spec struct {
					PodTemplate struct {
						Spec struct {
							InitContainers []struct {
								Name         string   `json:"name"`
								Command      []string `json:"command"`
								VolumeMounts []struct {
									Name      string `json:"name"`
									MountPath string `json:"mountPath"`
								} `json:"volumeMounts"`
							} `json:"initContainers"`
						} `json:"spec"`
					} `json:"podTemplate"`
				} `json:"spec"`
			}
			if err := dec.Decode(&doc); errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			if doc.Kind != "FlinkDeployment" {
				continue
			}
			for _, ic := range doc.Spec.PodTemplate.Spec.InitContainers {
				if ic.Name != fetcher {
					t.Fatalf("%s: init container %q: the harness adapts only %s", f, ic.Name, fetcher)
				}
				if len(ic.Command) != 4 || ic.Command[0] != "wget" || ic.Command[2] != "-O" || len(ic.VolumeMounts) != 1 || ic.VolumeMounts[0].Name != "flink-artifact" {
					t.Fatalf("%s: %s is not `wget <url> -O <file>` into volume flink-artifact: %v %v", f, fetcher, ic.Command, ic.VolumeMounts)
				}
				rel, err := filepath.Rel(ic.VolumeMounts[0].MountPath, ic.Command[3])
				if err != nil || strings.HasPrefix(rel, "..") {
					t.Fatalf("%s: %s writes %s outside its volume %s", f, fetcher, ic.Command[3], ic.VolumeMounts[0].MountPath)
				}
				if err := wget(s.ctx, ic.Command[1], filepath.Join(s.usrlib(dir), rel)); err != nil {
					t.Fatalf("%s: the harness's run of %s: %v", f, fetcher, err)
				}
				adapt = true
			}
		}
		if !adapt {
			continue
		}
		sh(t, "harness adaptation of "+filepath.Base(f)+": "+fetcher+" run by the harness, its emptyDir a hostPath",
			`yq -i '(select(.kind == "FlinkDeployment" and ([.spec.podTemplate.spec.initContainers[] | select(.name == "`+fetcher+`")] | length) > 0) | .spec.podTemplate.spec) |=
				(.volumes[] |= (select(.name == "flink-artifact") |= {"name": .name, "hostPath": {"path": strenv(USRLIB), "type": "Directory"}}) | del(.initContainers))' `+f,
			"USRLIB="+s.usrlib(dir))
	}
}

// usrlib is the host directory that replaces the artifacts emptyDir.
func (s *shared) usrlib(dataDir string) string {
	return filepath.Join(filepath.Dir(dataDir), "flink-artifact")
}

// wget fetches url into file.
func wget(ctx context.Context, url, file string) error {
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// runScript runs `bash <script>` as upstream's CI does, in its own process
// group, killed after scriptTimeout; its output goes to logPath (a file, so
// that what the script leaves running in the background, such as its
// cleanup's `kubectl delete -f ... &`, holds no pipe) and from there to the
// test log. What is left of the group when the script ends is killed.
func runScript(t *testing.T, ctx context.Context, script, dir string, env []string, logPath string) error {
	log, err := os.Create(logPath)
	if err != nil {
		return err
	}
	defer log.Close()
	cmd := exec.Command("bash", script)
	cmd.Dir, cmd.Env = dir, env
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return err
	}
	stopTail := tailToLog(t, logPath)
	defer stopTail()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	killGroup := func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	defer killGroup()
	select {
	case err = <-done:
		return err
	case <-time.After(scriptTimeout):
		killGroup()
		<-done
		return fmt.Errorf("timed out after %s", scriptTimeout)
	case <-ctx.Done():
		killGroup()
		<-done
		return ctx.Err()
	}
}

// tailToLog sends the lines written to path to t's log until the returned
// function is called (which sends the rest).
func tailToLog(t *testing.T, path string) (stop func()) {
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		f, err := os.Open(path)
		if err != nil {
			t.Log(err)
			return
		}
		defer f.Close()
		var partial []byte
		final := false
		buf := make([]byte, 64<<10)
		for {
			n, _ := f.Read(buf)
			if n > 0 {
				partial = append(partial, buf[:n]...)
				if i := bytes.LastIndexByte(partial, '\n'); i >= 0 {
					t.Log(string(partial[:i]))
					partial = append([]byte(nil), partial[i+1:]...)
				}
				continue
			}
			if final {
				if len(partial) > 0 {
					t.Log(string(partial))
				}
				return
			}
			select {
			case <-quit:
				final = true // read what is left, then stop
			case <-time.After(200 * time.Millisecond):
			}
		}
	}()
	return func() { close(quit); <-done }
}

// dump logs what explains a failure beside the script's own
// debug_and_show_logs: the resources, and the operator's log tail.
func (s *shared) dump(t *testing.T, sh func(*testing.T, string, string, ...string) string, k *logKeeper) {
	t.Helper()
	sh(t, "resources at the failure", `kubectl get flinkdep,sessionjob,flinksnp,pods -A -o wide; `+
		`kubectl get flinkdep,sessionjob -A -o yaml | yq '.items[] | {"name": .metadata.name, "status": .status}' || true`)
	for _, f := range k.operatorLogs() {
		framework.DumpTail(t, f, 150)
	}
}

// findYQ is $FLINKOP_YQ_BIN_DIR, or hack/build-yq.sh's directory.
func findYQ(t *testing.T, ctx context.Context, root string) string {
	t.Helper()
	if d := os.Getenv(envYQ); d != "" {
		return d
	}
	var stdout bytes.Buffer
	cmd := exec.CommandContext(ctx, "bash", filepath.Join(root, "hack", "build-yq.sh"))
	cmd.Stdout, cmd.Stderr = &stdout, framework.TestWriter{T: t}
	if err := cmd.Run(); err != nil {
		t.Fatalf("hack/build-yq.sh: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

// serveExamplesJar serves flink-examples-streaming of the pinned release
// from the local Maven repository over http on 127.0.0.1 (upstream's CI:
// flink-examples-streaming 2.0.0 from Maven Central for the v2 lines) and
// returns its URL.
func serveExamplesJar(t *testing.T) string {
	t.Helper()
	home, err := os.UserHomeDir()
	if err != nil {
		t.Fatal(err)
	}
	name := "flink-examples-streaming-" + pinnedFlink + ".jar"
	dir := filepath.Join(home, ".m2", "repository", "org", "apache", "flink", "flink-examples-streaming", pinnedFlink)
	if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
		t.Fatalf("the examples jar (e2e/flink's build resolves it into ~/.m2): %v", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/"+name, func(w http.ResponseWriter, r *http.Request) {
		http.ServeFile(w, r, filepath.Join(dir, name))
	})
	return framework.ServeHTTP(t, mux) + "/" + name
}

// logKeeper copies the container logs of the pods in namespace default
// (the operator's, the JobManagers', the TaskManagers') out of the node
// agent's pod directories while they exist, to <dst>/<pod>/<container>-<run>.log:
// a deleted pod's logs go with its directory (as with a kubelet), and the
// scripts delete pods (the operator, JobManagers on upgrades).
type logKeeper struct {
	src, dst string
	quit     chan struct{}
	done     chan struct{}

	mu     sync.Mutex
	copied map[string]int64 // source log -> bytes copied
	order  []string         // copies, in the order they appeared
}

func keepPodLogs(agentDir, dst string) *logKeeper {
	k := &logKeeper{src: agentDir, dst: dst, quit: make(chan struct{}), done: make(chan struct{}), copied: map[string]int64{}}
	go func() {
		defer close(k.done)
		for {
			k.copy()
			select {
			case <-k.quit:
				return
			case <-time.After(time.Second):
			}
		}
	}()
	return k
}

// copy appends what every log of the namespace's pods has gained.
func (k *logKeeper) copy() {
	logs, _ := filepath.Glob(filepath.Join(k.src, "pods", operatorNamespace+"_*", "logs", "*", "*.log"))
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, l := range logs {
		// <agent dir>/pods/<ns>_<pod>_<uid>/logs/<container>/<run>.log
		container := filepath.Base(filepath.Dir(l))
		parts := strings.Split(filepath.Base(filepath.Dir(filepath.Dir(filepath.Dir(l)))), "_")
		if len(parts) != 3 {
			continue
		}
		dst := filepath.Join(k.dst, parts[1], container+"-"+filepath.Base(l))
		n, err := appendFrom(l, dst, k.copied[l])
		if err != nil {
			continue
		}
		if _, seen := k.copied[l]; !seen {
			k.order = append(k.order, dst)
		}
		k.copied[l] = n
	}
}

// appendFrom appends src from offset to dst and returns src's new size.
func appendFrom(src, dst string, offset int64) (int64, error) {
	in, err := os.Open(src)
	if err != nil {
		return offset, err
	}
	defer in.Close()
	if _, err := in.Seek(offset, io.SeekStart); err != nil {
		return offset, err
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return offset, err
	}
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return offset, err
	}
	n, err := io.Copy(out, in)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return offset + n, err
}

// operatorLogs are the copies of the operator pods' logs, oldest first.
func (k *logKeeper) operatorLogs() []string {
	k.mu.Lock()
	defer k.mu.Unlock()
	var out []string
	for _, f := range k.order {
		if strings.HasPrefix(filepath.Base(filepath.Dir(f)), operatorDeployment+"-") {
			out = append(out, f)
		}
	}
	return out
}

func (k *logKeeper) stop() {
	select {
	case <-k.quit:
	default:
		close(k.quit)
	}
	<-k.done
	k.copy()
}

func copyFile(src, dst string, perm fs.FileMode) error {
	data, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	return os.WriteFile(dst, data, perm)
}

// copyTree copies the regular files under src to dst, keeping modes.
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		return copyFile(p, target, info.Mode().Perm())
	})
}
