package localcluster

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// ModulePath is the import path of the operator's main module.
const ModulePath = "github.com/flinkops/flink-operator"

// Binaries every cluster needs in BinDir.
var requiredBinaries = []string{"etcd", "kube-apiserver", "kube-controller-manager", "kubectl"}

// ModuleRoot finds the root of the operator module by walking up from the
// working directory to the go.mod that declares ModulePath (skipping nested
// modules such as hack/cluster-bins).
func ModuleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if b, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil {
			sc := bufio.NewScanner(bytes.NewReader(b))
			for sc.Scan() {
				if f := strings.Fields(sc.Text()); len(f) == 2 && f[0] == "module" && strings.Trim(f[1], `"`) == ModulePath {
					return dir, nil
				}
			}
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod of %s above the working directory", ModulePath)
		}
		dir = parent
	}
}

// CacheDir is $FLINKOP_CACHE_DIR, or $HOME/.cache/flink-operator; the same
// directory hack/build-cluster-bins.sh uses.
func CacheDir() string {
	if d := os.Getenv("FLINKOP_CACHE_DIR"); d != "" {
		return d
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return filepath.Join(os.TempDir(), "flink-operator-cache")
	}
	return filepath.Join(home, ".cache", "flink-operator")
}

// FindBinaries returns the directory holding etcd, kube-apiserver,
// kube-controller-manager and kubectl: $FLINKOP_KUBE_BIN_DIR if set, else the
// output of hack/build-cluster-bins.sh (which builds them once per version and
// then answers from its cache). The script's progress goes to out.
func FindBinaries(ctx context.Context, out io.Writer) (string, error) {
	if dir := os.Getenv("FLINKOP_KUBE_BIN_DIR"); dir != "" {
		return dir, checkBinaries(dir)
	}
	root, err := ModuleRoot()
	if err != nil {
		return "", err
	}
	if out == nil {
		out = io.Discard
	}
	var stdout bytes.Buffer
	cmd := exec.CommandContext(ctx, "bash", filepath.Join(root, "hack", "build-cluster-bins.sh"))
	cmd.Dir = root
	cmd.Stdout, cmd.Stderr = &stdout, out
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("hack/build-cluster-bins.sh: %w", err)
	}
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	dir := strings.TrimSpace(lines[len(lines)-1])
	if dir == "" {
		return "", errors.New("hack/build-cluster-bins.sh printed no bin dir")
	}
	return dir, checkBinaries(dir)
}

func checkBinaries(dir string) error {
	for _, b := range requiredBinaries {
		fi, err := os.Stat(filepath.Join(dir, b))
		if err != nil {
			return fmt.Errorf("control-plane binary missing (run hack/build-cluster-bins.sh): %w", err)
		}
		if fi.Mode()&0o111 == 0 {
			return fmt.Errorf("%s is not executable", filepath.Join(dir, b))
		}
	}
	return nil
}
