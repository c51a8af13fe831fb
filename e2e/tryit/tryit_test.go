package tryit

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	flinkjvm "github.com/flinkops/flink-operator/e2e/flink"
	"github.com/flinkops/flink-operator/e2e/framework"
	"github.com/flinkops/flink-operator/e2e/localcluster"
)

// section returns the shell lines of the README section headed title: the
// contents of its ```sh blocks, in order.
func section(readme, title string) (string, error) {
	start := strings.Index(readme, "\n## "+title+"\n")
	if start < 0 {
		return "", fmt.Errorf("no section %q in the README", title)
	}
	body := readme[start+len(title)+5:]
	if end := strings.Index(body, "\n## "); end >= 0 {
		body = body[:end]
	}
	var script strings.Builder
	in := false
	blocks := 0
	for _, line := range strings.Split(body, "\n") {
		switch {
		case !in && line == "```sh":
			in = true
			blocks++
		case in && line == "```":
			in = false
		case in:
			script.WriteString(line + "\n")
		}
	}
	if blocks == 0 || in {
		return "", fmt.Errorf("section %q: %d sh blocks, unterminated %v", title, blocks, in)
	}
	return script.String(), nil
}

func TestSectionParsing(t *testing.T) {
	readme := "# x\n\n## Try it\n\ntext\n\n```sh\na\n# c\nb \\\n  c\n```\n\n```go\nno\n```\n\n```sh\nd\n```\n\n## Next\n```sh\ne\n```\n"
	got, err := section(readme, "Try it")
	if err != nil {
		t.Fatal(err)
	}
	if want := "a\n# c\nb \\\n  c\nd\n"; got != want {
		t.Errorf("script %q, want %q", got, want)
	}
	if _, err := section(readme, "Missing"); err == nil {
		t.Error("a missing section parsed")
	}
}

// syncBuffer collects a process's output while it runs.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func TestReadmeTryIt(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 25*time.Minute)
	defer cancel()
	root, err := localcluster.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	script, err := section(string(readme), "Try it")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"source .cache/env", "kubectl apply", "kubectl logs", "kubectl delete"} {
		if !strings.Contains(script, want) {
			t.Fatalf("the Try it section lost %q:\n%s", want, script)
		}
	}
	// Flink's jars come from Maven on a pod's first start; resolve them
	// before the clock of the README's waits starts.
	for _, v := range flinkjvm.Versions() {
		if _, err := flinkjvm.Ensure(ctx, v); err != nil {
			t.Fatal(err)
		}
	}

	bin := filepath.Join(t.TempDir(), "local-cluster")
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./e2e/cmd/local-cluster")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	// make run's command line (Makefile: run).
	run := exec.Command(bin, "run", "--operator-args", "")
	run.Dir = root
	var runOut syncBuffer
	stdout, err := run.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	run.Stderr = &runOut
	if err := run.Start(); err != nil {
		t.Fatal(err)
	}
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			run.Process.Signal(syscall.SIGTERM)
			run.Wait()
		}
	})
	ready := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		signalled := false
		for sc.Scan() {
			runOut.Write(append(sc.Bytes(), '\n'))
			if !signalled && strings.Contains(sc.Text(), "ready in") {
				signalled = true
				ready <- nil
			}
		}
		if !signalled {
			ready <- errors.New("local-cluster ended before it was ready")
		}
	}()
	select {
	case err := <-ready:
		if err != nil {
			t.Fatalf("%v\n%s", err, runOut.String())
		}
	case <-time.After(10 * time.Minute):
		t.Fatalf("local-cluster not ready in 10 min\n%s", runOut.String())
	}
	envFile := filepath.Join(root, ".cache", "env")
	env, err := os.ReadFile(envFile)
	if err != nil {
		t.Fatalf("make run wrote no .cache/env: %v", err)
	}
	kubeconfig := ""
	for _, line := range strings.Split(string(env), "\n") {
		if v, ok := strings.CutPrefix(line, "export KUBECONFIG="); ok {
			kubeconfig = v
		}
	}
	if kubeconfig == "" {
		t.Fatalf(".cache/env sets no KUBECONFIG:\n%s", env)
	}

	// The section, as one bash: variables carry from line to line as in a
	// terminal; -x shows each command in the test log.
	sh := exec.CommandContext(ctx, "bash", "-o", "errexit", "-o", "nounset", "-o", "pipefail", "-x", "-c", script)
	sh.Dir = root
	sh.Env = withoutKube(os.Environ())
	var shOut syncBuffer
	sh.Stdout, sh.Stderr = &shOut, &shOut
	begin := time.Now()
	err = sh.Run()
	t.Logf("Try it: %s\n%s", time.Since(begin).Round(time.Second), shOut.String())
	if err != nil {
		dumpCluster(t, root, kubeconfig)
		t.Fatalf("the README's Try it commands failed: %v (operator and cluster output below)\n%s", err, tail(runOut.String(), 80))
	}
	for _, want := range []string{"Flink UI: http://127.", `"state":"RUNNING"`} {
		if !strings.Contains(shOut.String(), want) {
			t.Errorf("the Try it output lacks %q", want)
		}
	}
	// The operator is a pod of manifests/ (make run's default), Ready.
	if !regexp.MustCompile(`(?m)^flink-operator-\S+\s+1/1\s+Running\s`).MatchString(shOut.String()) {
		t.Errorf("the Try it output shows no Ready operator pod (kubectl get pods -n flink-operator)")
	}
	// The clean-up's promise: the savepoint's files are disposed of with
	// it, although example-deployment (deleted last) restored from it.
	savepointGone(t, root, kubeconfig, shOut.String())

	// Upstream's samples (native, serviceAccount flink) can run in
	// namespace default: Flink's resource manager may create pods as flink.
	canI, err := kubectl(root, kubeconfig, "auth", "can-i", "create", "pods", "-n", "default", "--as", "system:serviceaccount:default:flink")
	if err != nil || strings.TrimSpace(canI) != "yes" {
		t.Errorf("the Flink ServiceAccount default/flink may not create pods in make run's cluster: %q, %v", canI, err)
	}

	// No EndpointSlice controller warnings (loopback pod IPs).
	events, err := kubectl(root, kubeconfig, "get", "events", "-A", "--field-selector", "type=Warning", "-o", "custom-columns=REASON:.reason,OBJECT:.involvedObject.name,MESSAGE:.message")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(events, "EndpointSlice") {
		t.Errorf("EndpointSlice warnings in the events:\n%s", events)
	}

	// Ctrl-C: a clean stop, exit 0, .cache/env removed.
	if err := run.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- run.Wait() }()
	select {
	case err := <-done:
		stopped = true
		if err != nil {
			t.Errorf("local-cluster after an interrupt: %v, want exit 0\n%s", err, tail(runOut.String(), 30))
		}
	case <-time.After(2 * time.Minute):
		t.Fatalf("local-cluster did not stop within 2 min of an interrupt\n%s", tail(runOut.String(), 30))
	}
	if !strings.Contains(runOut.String(), "is alive") {
		t.Errorf("no stop report:\n%s", tail(runOut.String(), 10))
	}
	if _, err := os.Stat(envFile); !errors.Is(err, os.ErrNotExist) {
		t.Errorf(".cache/env is left after the stop: %v", err)
	}
}

// savepointGone checks that the savepoint the section took (the path its
// trace shows assigned to $savepoint) is gone from disk once the clean-up
// commands returned, waiting a little: the operator disposes of it
// through example-deployment's JobManager, whose deletion waits for that.
// make run's pods write /tmp/flink-data of this machine (hostPath).
func savepointGone(t *testing.T, root, kubeconfig, trace string) {
	t.Helper()
	var path string
	for _, line := range strings.Split(trace, "\n") {
		if v, ok := strings.CutPrefix(line, "+ savepoint="); ok {
			path = strings.Trim(v, "'")
		}
	}
	u, err := url.Parse(path)
	if path == "" || err != nil || u.Scheme != "file" {
		t.Errorf("no file: savepoint path in the trace of savepoint=$(kubectl get flinksnp ...): %q, %v", path, err)
		return
	}
	dir := filepath.Clean(u.Path)
	if parent := filepath.Dir(dir); parent != "/tmp/flink-data/savepoints" || !strings.HasPrefix(filepath.Base(dir), "savepoint-") {
		t.Errorf("savepoint %s is not a savepoint directory under /tmp/flink-data/savepoints (manifests/examples)", path)
		return
	}
	if _, err := os.Stat(filepath.Dir(dir)); err != nil {
		t.Errorf("the savepoint directory's parent: %v", err)
		return
	}
	deadline := time.Now().Add(time.Minute)
	for {
		_, err := os.Stat(dir)
		if errors.Is(err, os.ErrNotExist) {
			t.Logf("savepoint %s disposed of by the clean-up", dir)
			return
		}
		if time.Now().After(deadline) {
			events, _ := kubectl(root, kubeconfig, "get", "events", "-A", "--sort-by=.lastTimestamp",
				"-o", "custom-columns=TYPE:.type,REASON:.reason,OBJECT:.involvedObject.name,MESSAGE:.message")
			t.Errorf("the README's clean-up left the savepoint's directory %s on disk (stat: %v); events:\n%s", dir, err, events)
			return
		}
		time.Sleep(2 * time.Second)
	}
}

// withoutKube drops a KUBECONFIG of the test's own environment: the section
// must set up kubectl itself.
func withoutKube(env []string) []string {
	var out []string
	for _, kv := range env {
		if !strings.HasPrefix(kv, "KUBECONFIG=") {
			out = append(out, kv)
		}
	}
	return out
}

func kubectl(root, kubeconfig string, args ...string) (string, error) {
	bins, err := localcluster.FindBinaries(context.Background(), io.Discard)
	if err != nil {
		return "", err
	}
	cmd := exec.Command(filepath.Join(bins, "kubectl"), append([]string{"--kubeconfig", kubeconfig}, args...)...)
	cmd.Dir = root
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("kubectl %s: %w\n%s", strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

func dumpCluster(t *testing.T, root, kubeconfig string) {
	for _, args := range [][]string{
		{"get", "flinkdep,flinksnp,pods", "-o", "wide"},
		{"get", "flinkdep", "-o", "yaml"},
		{"get", "events", "--sort-by=.lastTimestamp"},
	} {
		out, err := kubectl(root, kubeconfig, args...)
		t.Logf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func TestMain(m *testing.M) {
	if framework.Kind() {
		// make run is the local provider; on kind the README's section does
		// not apply (its .cache/env comes from make run).
		fmt.Println("tryit: the README's Try it section runs on make run's local cluster only; nothing to do on kind")
		os.Exit(0)
	}
	os.Exit(m.Run())
}
