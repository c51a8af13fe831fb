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
