// Tests of hack/build-cluster-bins.sh with a stand-in `go` that only takes
// time, so the script's own behaviour (progress, estimates, no deadline,
// failure) is checked in seconds instead of a 13-minute cold build.
package hack_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeGo "builds" by sleeping $FAKE_GO_SECONDS, then writes an executable
// that prints the version the script checks; with $FAKE_GO_FAIL matching the
// package it fails like a compile error.
const fakeGo = `#!/usr/bin/env bash
out="" pkg=""
while (($#)); do
  case "$1" in
    -o) out="$2"; shift 2 ;;
    -ldflags) shift 2 ;;
    -*|build) shift ;;
    *) pkg="$1"; shift ;;
  esac
done
sleep "${FAKE_GO_SECONDS:-1}"
if [[ -n "${FAKE_GO_FAIL:-}" && "${pkg}" == *"${FAKE_GO_FAIL}"* ]]; then
  echo "${pkg}: compile error" >&2
  exit 3
fi
cat >"${out}" <<'EOS'
#!/bin/sh
case "$0" in
  *kube-apiserver) echo "Kubernetes v1.37.2" ;;
  *etcd) echo "etcd Version: 3.7.3" ;;
esac
EOS
chmod +x "${out}"
`

// tree copies the script and the cluster-bins go.mod into a temporary
// module root and returns it with a PATH that finds the fake go first.
func tree(t *testing.T) (root, path string) {
	t.Helper()
	root = t.TempDir()
	for _, f := range []string{"build-cluster-bins.sh", "cluster-bins/go.mod"} {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		dst := filepath.Join(root, "hack", f)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, data, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	fakeBin := filepath.Join(root, "fakebin")
	if err := os.MkdirAll(fakeBin, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(fakeBin, "go"), []byte(fakeGo), 0o755); err != nil {
		t.Fatal(err)
	}
	return root, fakeBin + string(os.PathListSeparator) + os.Getenv("PATH")
}

// line is one line of the script's stderr and when it arrived.
type line struct {
	at   time.Time
	text string
}

// runScript runs the script and returns its stdout, its stderr lines with
// their arrival times, and its error.
func runScript(t *testing.T, root, path, cache string, env ...string) (string, []line, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", filepath.Join(root, "hack", "build-cluster-bins.sh"))
	cmd.Env = append(os.Environ(), "PATH="+path, "FLINKOP_CACHE_DIR="+cache)
	cmd.Env = append(cmd.Env, env...)
	var stdout strings.Builder
	cmd.Stdout = &stdout
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var lines []line
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		lines = append(lines, line{time.Now(), sc.Text()})
	}
	// Wait first: it is what finishes copying stdout into the builder.
	err = cmd.Wait()
	return stdout.String(), lines, err
}

// load keeps every core busy until stop is closed: the "parallel build
// load" a busy machine puts on the script.
func load(stop <-chan struct{}) *sync.WaitGroup {
	var wg sync.WaitGroup
	for range runtime.NumCPU() * 2 {
		wg.Go(func() {
			x := 0
			for {
				select {
				case <-stop:
					return
				default:
				}
				for i := range 1 << 16 {
					x += i
				}
			}
		})
	}
	return &wg
}

func TestColdBuildReportsProgressUnderLoadAndFinishes(t *testing.T) {
	root, path := tree(t)
	cache := t.TempDir()
	stop := make(chan struct{})
	wg := load(stop)
	// Each binary takes 3 s, progress every 1 s: at least two progress lines
	// per binary, and never a silence longer than the interval (plus slack
	// for a loaded machine).
	out, lines, err := runScript(t, root, path, cache, "FAKE_GO_SECONDS=3", "FLINKOP_BUILD_PROGRESS_SECONDS=1")
	close(stop)
	wg.Wait()
	if err != nil {
		t.Fatalf("build failed: %v\n%s", err, dump(lines))
	}
	binDir := strings.TrimSpace(out)
	if want := filepath.Join(cache, "kube-bins", "v1.37.2-etcd3.7.3"); binDir != want {
		t.Errorf("bin dir %q, want %q", binDir, want)
	}
	if !strings.Contains(lines[0].text, "estimated from cold durations measured on 2 cores") {
		t.Errorf("first line %q does not say where the estimate comes from", lines[0].text)
	}
	progress := 0
	for i, l := range lines {
		if strings.Contains(l.text, "so far") {
			progress++
			if !strings.Contains(l.text, "left in all") {
				t.Errorf("progress line without an estimate of what is left: %q", l.text)
			}
		}
		if i > 0 {
			if gap := l.at.Sub(lines[i-1].at); gap > 3*time.Second+time.Second {
				t.Errorf("%s of silence before %q (progress every 1 s)", gap, l.text)
			}
		}
	}
	if progress < 5 {
		t.Errorf("%d progress lines for 5 binaries of 3 s each, want at least 5\n%s", progress, dump(lines))
	}
	times, err := os.ReadFile(filepath.Join(cache, "kube-bins", "build-seconds"))
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range []string{"etcd", "etcdctl", "kube-apiserver", "kube-controller-manager", "kubectl"} {
		if !strings.Contains(string(times), b+" ") {
			t.Errorf("build-seconds lacks %s:\n%s", b, times)
		}
	}

	// Cached now: nothing is built, the same directory is printed.
	out, lines, err = runScript(t, root, path, cache, "FAKE_GO_FAIL=k8s.io")
	if err != nil || strings.TrimSpace(out) != binDir {
		t.Fatalf("cached run: %v, printed %q\n%s", err, out, dump(lines))
	}

	// A rebuild (new version) estimates from the last build's durations.
	if err := os.Remove(filepath.Join(binDir, ".complete")); err != nil {
		t.Fatal(err)
	}
	_, lines, err = runScript(t, root, path, cache, "FAKE_GO_SECONDS=0")
	if err != nil {
		t.Fatalf("rebuild: %v\n%s", err, dump(lines))
	}
	if !strings.Contains(lines[0].text, "estimated from the last build's durations") {
		t.Errorf("rebuild's first line %q ignores the last build's durations", lines[0].text)
	}
}

func TestFailedBuildStopsWithItsReason(t *testing.T) {
	root, path := tree(t)
	cache := t.TempDir()
	_, lines, err := runScript(t, root, path, cache, "FAKE_GO_SECONDS=0", "FAKE_GO_FAIL=kube-apiserver")
	if err == nil {
		t.Fatalf("a failed go build succeeded\n%s", dump(lines))
	}
	text := dump(lines)
	for _, want := range []string{"compile error", "go build k8s.io/kubernetes/cmd/kube-apiserver failed (exit 3)"} {
		if !strings.Contains(text, want) {
			t.Errorf("output lacks %q:\n%s", want, text)
		}
	}
	if _, err := os.Stat(filepath.Join(cache, "kube-bins", "v1.37.2-etcd3.7.3", ".complete")); err == nil {
		t.Error("a failed build left a complete stamp")
	}
}

func dump(lines []line) string {
	var b strings.Builder
	for _, l := range lines {
		fmt.Fprintf(&b, "%s %s\n", l.at.Format("15:04:05.000"), l.text)
	}
	return b.String()
}
