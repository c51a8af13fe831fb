package helmchart

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// fakeGo stands in for `go install`: it records its arguments and environment, then writes into
// $GOBIN a helm that reports the version stamped with -X (or $FAKE_HELM_VERSION), or fails when
// $FAKE_GO_FAIL is set. So hack/build-helm.sh's own behaviour is checked in milliseconds.
const fakeGo = `#!/usr/bin/env bash
echo "go $* GOBIN=${GOBIN} GOFLAGS=${GOFLAGS} GOWORK=${GOWORK} CGO_ENABLED=${CGO_ENABLED} PWD=${PWD}" >>"${FAKE_GO_LOG}"
if [[ -n "${FAKE_GO_FAIL:-}" ]]; then echo "go: module lookup failed" >&2; exit 7; fi
version="${FAKE_HELM_VERSION:-}"
if [[ -z "${version}" ]]; then
  for a in "$@"; do
    [[ "${a}" =~ internal/version\.version=(v[^ ]+) ]] && version="${BASH_REMATCH[1]}"
  done
fi
printf '#!/bin/sh\n[ "$1" = version ] && printf %%s %s\n' "${version}" >"${GOBIN}/helm"
chmod +x "${GOBIN}/helm"
`

type buildHelmRun struct {
	stdout, stderr string
	err            error
}

// buildHelm runs hack/build-helm.sh with the fake go first on PATH and the cache in cache.
func buildHelm(t *testing.T, cache, goLog string, env ...string) buildHelmRun {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bin, "go"), []byte(fakeGo), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("bash", filepath.Join(RepoRoot(), "hack", "build-helm.sh"))
	cmd.Env = append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"), "FLINKOP_CACHE_DIR="+cache, "FAKE_GO_LOG="+goLog)
	cmd.Env = append(cmd.Env, env...)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	return buildHelmRun{stdout.String(), stderr.String(), err}
}

func goCalls(t *testing.T, goLog string) []string {
	t.Helper()
	data, err := os.ReadFile(goLog)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSpace(string(data)), "\n")
}

func TestBuildHelmBuildsOnceFromTheModuleProxy(t *testing.T) {
	cache, goLog := t.TempDir(), filepath.Join(t.TempDir(), "go.log")
	want := filepath.Join(cache, "tools", "helm-v4.3.2", "helm")

	run := buildHelm(t, cache, goLog)
	if run.err != nil {
		t.Fatalf("build-helm.sh: %v\n%s", run.err, run.stderr)
	}
	if got := strings.TrimSpace(run.stdout); got != want {
		t.Errorf("stdout %q, want the binary's path %q alone", got, want)
	}
	calls := goCalls(t, goLog)
	if len(calls) != 1 {
		t.Fatalf("go ran %d times, want once: %v", len(calls), calls)
	}
	for _, part := range []string{
		"go install ", "helm.sh/helm/v4/cmd/helm@v4.3.2", "-X helm.sh/helm/v4/internal/version.version=v4.3.2",
		"-trimpath", "GOFLAGS=-mod=mod", "GOWORK=off", "CGO_ENABLED=0",
	} {
		if !strings.Contains(calls[0], part) {
			t.Errorf("go call %q lacks %q", calls[0], part)
		}
	}
	// Outside any module (so that go install resolves Helm's own go.mod), in a temporary directory
	// of the cache whose binary is moved into place only once it reports the right version.
	if !strings.Contains(calls[0], "PWD="+filepath.Join(cache, "tools", "helm-v4.3.2", ".build.")) {
		t.Errorf("go install did not run in a temporary build directory of the cache: %q", calls[0])
	}
	if out, err := exec.Command(want, "version", "--template", "{{.Version}}").Output(); err != nil || string(out) != "v4.3.2" {
		t.Errorf("cached helm reports %q (%v)", out, err)
	}

	// Cached: printed again, not rebuilt.
	run = buildHelm(t, cache, goLog)
	if run.err != nil || strings.TrimSpace(run.stdout) != want || !strings.Contains(run.stderr, "cached") {
		t.Errorf("second run: %v stdout %q stderr %q", run.err, run.stdout, run.stderr)
	}
	if calls := goCalls(t, goLog); len(calls) != 1 {
		t.Errorf("go ran again for a cached build: %v", calls)
	}

	// Another version is another build in its own directory.
	run = buildHelm(t, cache, goLog, "FLINKOP_HELM_VERSION=v4.3.1")
	if run.err != nil || strings.TrimSpace(run.stdout) != filepath.Join(cache, "tools", "helm-v4.3.1", "helm") {
		t.Errorf("v4.3.1: %v stdout %q stderr %q", run.err, run.stdout, run.stderr)
	}
}

func TestBuildHelmRefusesAWrongVersion(t *testing.T) {
	cache, goLog := t.TempDir(), filepath.Join(t.TempDir(), "go.log")
	run := buildHelm(t, cache, goLog, "FAKE_HELM_VERSION=v4.3")
	if run.err == nil {
		t.Fatalf("build-helm.sh accepted a helm reporting v4.3: stdout %q", run.stdout)
	}
	if !strings.Contains(run.stderr, "reports version 'v4.3', want v4.3.2") {
		t.Errorf("stderr %q does not say which version it got", run.stderr)
	}
	if _, err := os.Stat(filepath.Join(cache, "tools", "helm-v4.3.2", "helm")); err == nil {
		t.Error("the wrong binary was left in the cache")
	}
}

func TestBuildHelmFailsWhenGoFails(t *testing.T) {
	cache, goLog := t.TempDir(), filepath.Join(t.TempDir(), "go.log")
	run := buildHelm(t, cache, goLog, "FAKE_GO_FAIL=1")
	if run.err == nil {
		t.Fatalf("build-helm.sh succeeded although go install failed: %q", run.stdout)
	}
	if strings.TrimSpace(run.stdout) != "" {
		t.Errorf("stdout %q: a failed build must print no path", run.stdout)
	}
	if !strings.Contains(run.stderr, "module lookup failed") {
		t.Errorf("stderr %q lacks go's error", run.stderr)
	}
}
