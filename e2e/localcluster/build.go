package localcluster

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
)

// BuildCommands builds main packages of the operator module (paths relative
// to its root, e.g. "./cmd/fake-jobmanager") with go build into
// <CacheDir>/bin/<checkout>, and returns that directory. Each binary is named after the
// last element of its package path. Builds of concurrent test processes are
// serialized by a lock file; go build does nothing for an up-to-date binary.
//
// Building the node agent (NodeAgentPackage) builds the commands it runs
// too (nodeAgentCommands), in the same go build: whoever starts the agent
// from this directory finds them beside it.
func BuildCommands(ctx context.Context, pkgs ...string) (string, error) {
	return goBuild(ctx, "", nil, withNodeAgentCommands(pkgs)...)
}

// NodeAgentPackage is the node agent's main package.
const NodeAgentPackage = "./e2e/nodeagent/cmd/node-agent"

// nodeAgentCommands are what the node agent runs for pods (startNodeAgent
// passes their paths): fake JobManagers, and the operator for pods of its
// image (ghcr.io/flinkops/flink-operator).
var nodeAgentCommands = []string{"./cmd/fake-jobmanager", "./cmd/flink-operator"}

// withNodeAgentCommands is pkgs plus nodeAgentCommands when pkgs has the
// node agent, each package once.
func withNodeAgentCommands(pkgs []string) []string {
	if !slices.Contains(pkgs, NodeAgentPackage) {
		return pkgs
	}
	out := slices.Clone(pkgs)
	for _, p := range nodeAgentCommands {
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out
}

// BuildTaggedCommand builds one main package like BuildCommands, with
// -tags tags, into <CacheDir>/bin/name (a name of its own, so the default
// build of the package stays beside it), and returns the binary's path. The
// e2e crash tests use it for the operator's fault-injection build
// (FaultInjectTag).
func BuildTaggedCommand(ctx context.Context, pkg, name string, tags ...string) (string, error) {
	dir, err := goBuild(ctx, name, tags, pkg)
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, name), nil
}

// FaultInjectTag is the build tag of the operator's test fault points
// (pkg/operator/faults_faultinject.go); the shipped operator is built
// without it and has none.
const FaultInjectTag = "faultinject"

// goBuild runs go build into <CacheDir>/bin/<checkout> (into the file
// name there if name is set) under the build lock.
func goBuild(ctx context.Context, name string, tags []string, pkgs ...string) (string, error) {
	root, err := ModuleRoot()
	if err != nil {
		return "", err
	}
	// One directory per checkout: two checkouts testing at once (a clean
	// clone's CI run beside a working tree) must not run each other's
	// binaries, which a shared one swapped under a running test.
	sum := sha256.Sum256([]byte(root))
	dir := filepath.Join(CacheDir(), "bin", hex.EncodeToString(sum[:6]))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	lock, err := os.OpenFile(filepath.Join(dir, ".build.lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return "", err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return "", err
	}
	out := dir + string(filepath.Separator)
	if name != "" {
		out = filepath.Join(dir, name)
	}
	args := []string{"build", "-o", out}
	if len(tags) > 0 {
		args = append(args, "-tags", strings.Join(tags, ","))
	}
	args = append(args, pkgs...)
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go %s: %w\n%s", strings.Join(args, " "), err, out)
	}
	return dir, nil
}

type buildResult struct {
	dir string
	err error
}

// BusyboxEnv, when set, names the busybox binary Busybox returns (a static
// one: it runs in a root of its own), instead of Debian's.
const BusyboxEnv = "FLINKOP_BUSYBOX"

// Busybox returns a static busybox binary for the node agent's containers
// of the busybox image (node-agent --busybox): $FLINKOP_BUSYBOX if set,
// else Debian's busybox-static, fetched once with apt-get download (after
// an apt-get update if the package lists lack it) and unpacked with
// dpkg-deb -x into <CacheDir>/busybox/<version>/ (nothing is installed on
// the machine); later calls answer from the cache. Concurrent test
// processes are serialized by a lock file.
func Busybox(ctx context.Context) (string, error) {
	if bin := os.Getenv(BusyboxEnv); bin != "" {
		if st, err := os.Stat(bin); err != nil || st.IsDir() {
			return "", fmt.Errorf("$%s=%s is not a file (%v)", BusyboxEnv, bin, err)
		}
		return filepath.Abs(bin)
	}
	dir := filepath.Join(CacheDir(), "busybox")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	lock, err := os.OpenFile(filepath.Join(dir, ".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return "", err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return "", err
	}
	if cached, _ := filepath.Glob(filepath.Join(dir, "*", "bin", "busybox")); len(cached) > 0 {
		slices.Sort(cached)
		return cached[len(cached)-1], nil
	}
	for _, tool := range []string{"apt-get", "dpkg-deb"} {
		if _, err := exec.LookPath(tool); err != nil {
			return "", fmt.Errorf("busybox: fetching Debian's busybox-static needs %s (Debian/Ubuntu), or set $%s to a static busybox binary", tool, BusyboxEnv)
		}
	}
	tmp, err := os.MkdirTemp(dir, ".fetch-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	run := func(name string, args ...string) (string, error) {
		cmd := exec.CommandContext(ctx, name, args...)
		cmd.Dir = tmp
		out, err := cmd.CombinedOutput()
		if err != nil {
			return "", fmt.Errorf("busybox: %s %s: %w\n%s", name, strings.Join(args, " "), err, out)
		}
		return string(out), nil
	}
	if _, err := run("apt-get", "download", "busybox-static"); err != nil {
		if os.Geteuid() != 0 {
			return "", err
		}
		// Package lists missing or stale (a fresh container).
		if _, uerr := run("apt-get", "update"); uerr != nil {
			return "", fmt.Errorf("%w\n%w", err, uerr)
		}
		if _, err := run("apt-get", "download", "busybox-static"); err != nil {
			return "", err
		}
	}
	debs, _ := filepath.Glob(filepath.Join(tmp, "busybox-static_*.deb"))
	if len(debs) != 1 {
		return "", fmt.Errorf("busybox: apt-get download left %d .deb files in %s", len(debs), tmp)
	}
	version, err := run("dpkg-deb", "-f", debs[0], "Version")
	if err != nil {
		return "", err
	}
	version = strings.TrimSpace(version)
	if _, v, ok := strings.Cut(version, ":"); ok { // the epoch
		version = v
	}
	if version == "" || strings.ContainsAny(version, "/ ") {
		return "", fmt.Errorf("busybox: unexpected package version %q", version)
	}
	if _, err := run("dpkg-deb", "-x", debs[0], "root"); err != nil {
		return "", err
	}
	bin := filepath.Join(tmp, "root", "bin", "busybox")
	if st, err := os.Stat(bin); err != nil || st.IsDir() {
		return "", fmt.Errorf("busybox: the package has no bin/busybox (%v)", err)
	}
	final := filepath.Join(dir, version)
	if err := os.Rename(filepath.Join(tmp, "root"), final); err != nil {
		return "", err
	}
	return filepath.Join(final, "bin", "busybox"), nil
}
