package upstreame2e

import (
	"bytes"
	"context"
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

	flinkjvm "github.com/flinkops/flink-operator/e2e/flink"
	"github.com/flinkops/flink-operator/e2e/framework"
	"github.com/flinkops/flink-operator/e2e/localcluster"
	flinkclient "github.com/flinkops/flink-operator/pkg/generated/clientset/versioned"
)

const (
	// scriptTimeout bounds one script (upstream's waits are 300 s each).
	scriptTimeout = 15 * time.Minute

	// Upstream CI's Helm install: release flink-kubernetes-operator of the
	// chart; with nameOverride (harness values) the Deployment, the pods'
	// label app.kubernetes.io/name and the names the scripts look up are
	// upstream's chart's.
	helmRelease        = "flink-kubernetes-operator"
	operatorDeployment = "flink-kubernetes-operator"
	operatorLabel      = "app.kubernetes.io/name=flink-kubernetes-operator"
	// operatorContainer is the container name of upstream's chart (its
	// chart name), which utils.sh's wait_for_operator_logs and the scripts
	// pass to kubectl logs/exec -c; this chart names it the same.
	operatorContainer = "flink-kubernetes-operator"

	// ingressPort: `minikube ip` is a host the scripts curl on port 80.
	ingressPort = 80

	// envUpstreamTests names upstream's e2e-tests directory (of a checkout
	// of the release testdata/SOURCES.md records), which this repository
	// does not keep: upstream's scripts are its code.
	envUpstreamTests = "FLINKOP_UPSTREAM_E2E_TESTS"
	// envYQ is the directory holding mikefarah's yq (hack/build-yq.sh,
	// which the test runs itself when it is unset).
	envYQ = "FLINKOP_YQ_BIN_DIR"
	// envHelm is the helm binary (hack/build-helm.sh, which the test runs
	// itself when it is unset).
	envHelm = "FLINKOP_HELM"
)

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

// minikubeShim answers `minikube ip` with the host of the local cluster's
// ingress (assert_available_slots curls http://$(minikube ip)/<ns>/<name>/overview;
// the ingress listens on port 80 as minikube's ingress-nginx).
const minikubeShim = `#!/usr/bin/env bash
# minikube stand-in of e2e/upstreame2e: upstream's scripts only call "minikube ip", for the address
# of minikube's ingress controller; here the local cluster's ingress (class nginx) on port 80.
if [[ "${1:-}" == "ip" && $# -eq 1 ]]; then
  echo "%s"
  exit 0
fi
echo "minikube (e2e/upstreame2e shim): only 'minikube ip' is supported, not: $*" >&2
exit 1
`

// shared is what every run uses.
type shared struct {
	ctx  context.Context
	root string // module root
	// upstreamTests is upstream's e2e-tests directory (envUpstreamTests).
	upstreamTests string
	yqDir         string
	helm          string
	jarURL        map[string]string // line version -> STREAMING_EXAMPLES_JAR_URL
	results       string            // .cache/upstream-e2e/<time>

	scriptTime map[string]time.Duration // cell -> how long the script itself ran
}

// TestUpstreamScripts runs upstream's e2e scripts (doc.go), one subtest per
// line, mode and script, each on a fresh local cluster with a fresh
// operator installed by Helm.
func TestUpstreamScripts(t *testing.T) {
	if framework.Kind() {
		t.Skip("local provider only: the harness runs the operator as a pod of the node agent")
	}
	if os.Geteuid() != 0 {
		t.Skip("the node agent's mount namespaces need root")
	}
	cells, err := selectCells()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(len(cells))*(scriptTimeout+5*time.Minute))
	defer cancel()
	root, err := localcluster.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	upstreamTests := os.Getenv(envUpstreamTests)
	if upstreamTests == "" {
		t.Fatalf("%s is not set: it names upstream's e2e-tests directory (apache/flink-kubernetes-operator, tag release-1.15.0), which this repository does not keep (testdata/SOURCES.md)", envUpstreamTests)
	}
	sources := filepath.Join(root, "e2e", "upstreame2e", "testdata", "SOURCES.md")
	if errs := notVerbatim(sources, upstreamTests); len(errs) != 0 {
		t.Fatalf("%s: %v", envUpstreamTests, errs)
	}
	if missing := unlistedScripts(t, upstreamTests); len(missing) != 0 {
		t.Fatalf("%s: scripts the harness does not know (add them to matrix_test.go and SOURCES.md): %v", envUpstreamTests, missing)
	}
	s := &shared{ctx: ctx, root: root, upstreamTests: upstreamTests, yqDir: findYQ(t, ctx, root), helm: findHelm(t, ctx, root),
		scriptTime: map[string]time.Duration{}, jarURL: map[string]string{}}
	// Maven work first (flink-examples-streaming lands in ~/.m2 with it).
	for _, l := range lines {
		if !slices.ContainsFunc(cells, func(c cell) bool { return c.line.version == l.version }) {
			continue
		}
		if _, err := flinkjvm.Ensure(ctx, l.pinned); err != nil {
			t.Fatal(err)
		}
		s.jarURL[l.version] = serveExamplesJar(t, l.examples)
	}
	s.results = filepath.Join(root, ".cache", "upstream-e2e", time.Now().UTC().Format("20060102-150405"))
	if err := os.MkdirAll(s.results, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Logf("results (script output, pod logs) in %s; %d runs", s.results, len(cells))

	header := fmt.Sprintf("%-36s %-6s %-10s %-8s %-8s %s", "script", "line", "mode", "result", "script", "with cluster+install")
	summary := []string{header}
	counts := map[outcome]int{}
	writeSummary := func() {
		_ = os.WriteFile(filepath.Join(s.results, "summary"), []byte(strings.Join(summary, "\n")+"\n"), 0o644)
	}
	for _, c := range cells {
		begin := time.Now()
		var got outcome = fail
		t.Run(c.String(), func(t *testing.T) { got = s.run(t, c) })
		counts[got]++
		row := fmt.Sprintf("%-36s %-6s %-10s %-8s %-8s %s", c.script.name, c.line.version, c.mode, got,
			s.scriptTime[c.String()].Round(time.Second), time.Since(begin).Round(time.Second))
		if got == pending {
			row += "  (pending: " + c.script.pendingReason(c.line) + ")"
		}
		summary = append(summary, row)
		writeSummary()
	}
	summary = append(summary, fmt.Sprintf("%d pass, %d pending, %d fail", counts[pass], counts[pending], counts[fail]))
	writeSummary()
	t.Logf("upstream e2e scripts, each on a fresh cluster (%s):\n%s", filepath.Join(s.results, "summary"), strings.Join(summary, "\n"))
}

// run runs one cell on a fresh cluster and returns its outcome; the
// subtest fails unless it is pass or pending.
func (s *shared) run(t *testing.T, c cell) outcome {
	begin := time.Now()
	ctx := s.ctx
	work := t.TempDir()
	results := filepath.Join(s.results, c.line.version+"-"+c.mode, strings.TrimSuffix(c.script.name, ".sh"))
	if err := os.MkdirAll(results, 0o755); err != nil {
		t.Fatal(err)
	}

	lc, err := localcluster.Start(ctx, localcluster.Options{
		NodeAgent: true,
		// Flink sees the pod's paths (test_snapshot.sh greps them).
		NodeAgentArgs: []string{"--container-paths"},
		// assert_available_slots curls http://$(minikube ip)/...: port 80.
		IngressPort: ingressPort,
		Out:         framework.TestWriter{T: t},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			framework.DumpTail(t, lc.NodeAgent.LogPath, 60)
		}
		if err := lc.Stop(); err != nil {
			t.Errorf("stopping the local cluster: %v", err)
		}
	})
	if lc.IngressAddress != fmt.Sprintf("127.0.0.1:%d", ingressPort) {
		t.Fatalf("the local cluster's ingress is at %q, not 127.0.0.1:%d", lc.IngressAddress, ingressPort)
	}

	// What the scripts run: kubectl of the cluster, yq, minikube.
	tools := filepath.Join(work, "bin")
	if err := os.MkdirAll(tools, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, target := range map[string]string{"kubectl": lc.KubectlPath, "yq": filepath.Join(s.yqDir, "yq"), "helm": s.helm} {
		if err := os.Symlink(target, filepath.Join(tools, name)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(tools, "minikube"), fmt.Appendf(nil, minikubeShim, "127.0.0.1"), 0o755); err != nil {
		t.Fatal(err)
	}
	// A copy: the scripts' cleanup sets the current context's namespace.
	kubeconfig := filepath.Join(work, "kubeconfig")
	if err := copyFile(lc.Kubeconfig, kubeconfig, 0o600); err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(),
		"PATH="+tools+string(os.PathListSeparator)+os.Getenv("PATH"),
		"KUBECONFIG="+kubeconfig,
		"KUBECACHEDIR="+filepath.Join(work, "kubectl-cache"),
		"HELM_CONFIG_HOME="+filepath.Join(work, "helm", "config"),
		"HELM_CACHE_HOME="+filepath.Join(work, "helm", "cache"),
		"HELM_DATA_HOME="+filepath.Join(work, "helm", "data"))
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

	keeper := keepPodLogs(lc.NodeAgentDir, filepath.Join(results, "pods"))
	t.Cleanup(keeper.stop) // before the cluster stops (cleanups run last first)
	s.installOperator(t, c, work, sh)
	trail := recordStatusTrail(ctx, flinkclient.NewForConfigOrDie(lc.RESTConfig()), filepath.Join(results, "status.log"))
	t.Cleanup(trail.stop)

	dir := s.prepareData(t, c, work, sh)
	t.Logf("cluster, operator (Helm) and data ready in %s", time.Since(begin).Round(time.Millisecond))

	logPath := filepath.Join(results, "script.log")
	scriptBegin := time.Now()
	err = runScript(t, ctx, filepath.Join(dir, c.script.name), work, env, logPath)
	s.scriptTime[c.String()] = time.Since(scriptBegin)
	t.Logf("%s: %v after %s (output: %s)", c, errOrPass(err), time.Since(scriptBegin).Round(time.Second), logPath)
	got, verdict := judge(c, err)
	switch got {
	case pending:
		t.Logf("%s: pending, as listed (%s); the script failed: %v", c, c.script.pendingReason(c.line), err)
	case fail:
		keeper.copy()
		s.dump(t, sh, keeper)
		t.Errorf("%s: %v", c, verdict)
	}
	return got
}

func errOrPass(err error) any {
	if err == nil {
		return "passed"
	}
	return err
}

// installOperator is upstream CI's "Start the operator" step with this
// project's chart (helm/flink-operator): helm install of release
// flink-kubernetes-operator in the namespace of the run (default; flink,
// created first, for the namespace tests, with watchNamespaces
// {default,flink} as CI's EXTRA_HELM_INSTALL_ARGS), CI's per-script value
// edits where they map (values), then CI's kubectl wait; and the
// operator's informers synced, so that the script starts on a working
// operator.
func (s *shared) installOperator(t *testing.T, c cell, work string, sh func(*testing.T, string, string, ...string) string) {
	t.Helper()
	ns := operatorNamespace(c.script)
	valuesFile := filepath.Join(work, "values.yaml")
	if err := os.WriteFile(valuesFile, []byte(helmValues(c.script)), 0o644); err != nil {
		t.Fatal(err)
	}
	create := ""
	if c.script.namespaceTest {
		create = " --create-namespace"
	}
	sh(t, "helm install (upstream CI's 'Start the operator', this project's chart and image)",
		fmt.Sprintf("cat %s && helm install %s -n %s%s %s -f %s",
			valuesFile, helmRelease, ns, create, filepath.Join(s.root, "helm", "flink-operator"), valuesFile))
	sh(t, "operator container named as upstream's chart names it",
		fmt.Sprintf(`test "$(kubectl get deploy -n %s %s -o jsonpath='{.spec.template.spec.containers[0].name}')" = %s`, ns, operatorDeployment, operatorContainer))
	sh(t, "CRDs established",
		"for crd in flinkdeployments flinksessionjobs flinkstatesnapshots flinkbluegreendeployments; do kubectl wait --for=condition=Established --timeout=60s crd/$crd.flink.apache.org || exit 1; done")
	sh(t, "operator Available (as upstream's CI waits)",
		fmt.Sprintf("kubectl wait --for=condition=Available --timeout=120s -n %s deploy/%s && kubectl get pods -n %[1]s", ns, operatorDeployment))
	sh(t, "operator informers synced",
		fmt.Sprintf(`for i in $(seq 1 120); do if kubectl logs -n %s -l %s --all-containers --tail=-1 | grep -m1 "Informer caches synced"; then exit 0; fi; sleep 1; done; kubectl logs -n %[1]s -l %[2]s --all-containers --tail=50; exit 1`,
			ns, operatorLabel))
}

// operatorNamespace is the namespace CI installs the operator in.
func operatorNamespace(s upstreamScript) string {
	if s.namespaceTest {
		return "flink"
	}
	return "default"
}

// helmValues are the values of the harness's helm install: nameOverride
// (upstream's chart is named flink-kubernetes-operator, so its Deployment
// and pod label are; this chart's are flink-operator unless overridden),
// CI's values edits where they map, and the configuration the local jar
// URL needs.
func helmValues(s upstreamScript) string {
	var b strings.Builder
	b.WriteString("# e2e/upstreame2e: upstream CI's helm install of its chart, with this project's chart.\n")
	b.WriteString("nameOverride: " + operatorDeployment + "\n")
	if s.namespaceTest {
		b.WriteString("# CI's EXTRA_HELM_INSTALL_ARGS of the namespace tests.\nwatchNamespaces: [default, flink]\n")
	}
	if s.name == "test_flink_operator_ha.sh" {
		// CI: replicas 2 and leader election with lease flink-operator-lease
		// (this chart always elects a leader, lease flink-operator-lease).
		b.WriteString("# CI's sed for test_flink_operator_ha.sh (leader election is always on here).\nreplicas: 2\n")
	}
	if s.name == "test_logback_logging.sh" {
		b.WriteString("# CI's sed for test_logback_logging.sh.\nlogging:\n  framework: logback\n")
	}
	conf := "kubernetes.operator.reconcile.interval: 15 s\n" +
		"kubernetes.operator.observer.progress-check.interval: 5 s\n" +
		"# Harness: the session jobs' jarURI is the examples jar served over http on 127.0.0.1\n" +
		"# (CI: https from Maven Central, which the defaults allow).\n" +
		"kubernetes.operator.user.artifacts.allowed-schemes: http,https\n" +
		"kubernetes.operator.user.artifacts.disallow-restricted-hosts: \"false\"\n"
	b.WriteString("defaultConfiguration:\n  create: true\n  append: true\n")
	key := "flink-conf.yaml"
	if s.name == "test_dynamic_config.sh" {
		// CI's sed renames the chart's flink-conf.yaml value to config.yaml.
		b.WriteString("  # CI's sed for test_dynamic_config.sh: config.yaml instead of flink-conf.yaml.\n  flink-conf.yaml: null\n")
		key = "config.yaml"
	}
	b.WriteString("  " + key + ": |+\n")
	for _, l := range strings.Split(strings.TrimSuffix(conf, "\n"), "\n") {
		b.WriteString("    " + l + "\n")
	}
	return b.String()
}

// prepareData copies upstream's e2e-tests directory into work and
// prepares data/*.yaml as upstream's CI does (ciPrepare), nothing else. It
// returns the copy's directory.
func (s *shared) prepareData(t *testing.T, c cell, work string, sh func(*testing.T, string, string, ...string) string) string {
	t.Helper()
	src := s.upstreamTests
	dst := filepath.Join(work, "e2e-tests")
	if err := copyTree(src, dst); err != nil {
		t.Fatal(err)
	}
	sh(t, "upstream CI's data preparation", ciPrepare,
		"FLINK_VERSION="+c.line.version, "MODE="+c.mode, "EXAMPLES_JAR="+s.jarURL[c.line.version])
	sh(t, "prepared data (diff against upstream's)", fmt.Sprintf("diff -ru %s %s || true", filepath.Join(src, "data"), filepath.Join(dst, "data")))
	return dst
}

// unlistedScripts are the test_*.sh of dir that the harness's matrix
// does not name.
func unlistedScripts(t *testing.T, dir string) []string {
	t.Helper()
	found, err := filepath.Glob(filepath.Join(dir, "test_*.sh"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, f := range found {
		if _, ok := scriptNamed(filepath.Base(f)); !ok {
			out = append(out, filepath.Base(f))
		}
	}
	return out
}

// findHelm is $FLINKOP_HELM, or what hack/build-helm.sh builds.
func findHelm(t *testing.T, ctx context.Context, root string) string {
	t.Helper()
	if h := os.Getenv(envHelm); h != "" {
		return h
	}
	var stdout bytes.Buffer
	cmd := exec.CommandContext(ctx, "bash", filepath.Join(root, "hack", "build-helm.sh"))
	cmd.Stdout, cmd.Stderr = &stdout, framework.TestWriter{T: t}
	if err := cmd.Run(); err != nil {
		t.Fatalf("hack/build-helm.sh: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
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
	sh(t, "resources at the failure", `kubectl get flinkbgdep,flinkdep,sessionjob,flinksnp,pods,pvc,ingress -A -o wide; `+
		`kubectl get flinkbgdep,flinkdep,sessionjob -A -o yaml | yq '.items[] | {"name": .metadata.name, "status": .status}' || true`)
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

// serveExamplesJar serves flink-examples-streaming of the given version
// from the local Maven repository (e2e/flink's build resolves it) over
// http on 127.0.0.1 (upstream's CI: Maven Central over https) and returns
// its URL.
func serveExamplesJar(t *testing.T, version string) string {
	t.Helper()
	home, err := os.UserHomeDir()
	if err != nil {
		t.Fatal(err)
	}
	name := "flink-examples-streaming-" + version + ".jar"
	dir := filepath.Join(home, ".m2", "repository", "org", "apache", "flink", "flink-examples-streaming", version)
	if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
		t.Fatalf("the examples jar (e2e/flink's build resolves it into ~/.m2): %v", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/"+name, func(w http.ResponseWriter, r *http.Request) {
		http.ServeFile(w, r, filepath.Join(dir, name))
	})
	return framework.ServeHTTP(t, mux) + "/" + name
}

// logKeeper copies the container logs of the pods (the operator's, the
// JobManagers', the TaskManagers', init containers') out of the node
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
	logs, _ := filepath.Glob(filepath.Join(k.src, "pods", "*_*_*", "logs", "*", "*.log"))
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
