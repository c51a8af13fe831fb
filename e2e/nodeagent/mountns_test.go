package nodeagent

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// runInNamespace runs script with sh in a mount namespace with mounts (as
// the agent starts a container) and returns its combined output.
func runInNamespace(t *testing.T, dir string, mounts []mountSpec, script string) (string, error) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("mount namespaces need root")
	}
	cmd := exec.Command("sh", "-c", script)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "GREETING=hello"}
	cmd.Dir = "/"
	h, err := inMountNamespace(cmd, dir, mounts)
	if err != nil {
		t.Fatal(err)
	}
	out, err := h.CombinedOutput()
	return string(out), err
}

// TestMountNamespace: volumes at their mount paths, parents first, through
// symlinks (/var/run), at paths that do not exist on the machine, read-only
// where asked; two containers with different sources at one mount path see
// their own; nothing appears on the machine outside the sources.
func TestMountNamespace(t *testing.T) {
	dir := t.TempDir()
	vol := func(name, file, content string) string {
		d := filepath.Join(dir, name)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if file != "" {
			if err := os.WriteFile(filepath.Join(d, file), []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return d
	}
	top := "/nodeagent-mountns-test-" + strconv.Itoa(os.Getpid()) // not on the machine
	conf := vol("conf", "config.yaml", "a: 1")
	token := vol("token", "token", "secret-token")
	data1, data2 := vol("data1", "who", "one"), vol("data2", "who", "two")
	sub := vol("sub", "", "")
	fileSrc := filepath.Join(vol("files", "settings", "x=1"), "settings")
	etcFile := "/etc/nodeagent-mountns-test-" + strconv.Itoa(os.Getpid())
	_, runSecretsErr := os.Lstat("/run/secrets")
	mounts := func(data string) []mountSpec {
		return []mountSpec{
			{Source: sub, Target: top + "/data/sub"}, // a child first in the list: mounted after its parent
			{Source: data, Target: top + "/data"},
			{Source: conf, Target: "/opt/nodeagent-test-flink/conf", ReadOnly: true},
			{Source: token, Target: "/var/run/secrets/kubernetes.io/serviceaccount", ReadOnly: true},
			{Source: fileSrc, Target: etcFile, ReadOnly: true},
		}
	}
	script := `set -e
cat ` + top + `/data/who; echo
cat /opt/nodeagent-test-flink/conf/config.yaml; echo
cat /var/run/secrets/kubernetes.io/serviceaccount/token; echo
cat ` + etcFile + `; echo
echo written > ` + top + `/data/sub/out
echo $GREETING $(pwd)
if (echo x > /opt/nodeagent-test-flink/conf/new) 2>/dev/null; then echo read-only volume written; fi
mkdir /nodeagent-private-` + strconv.Itoa(os.Getpid()) + `
ls / | grep -c . >/dev/null
`
	out, err := runInNamespace(t, filepath.Join(dir, "c1"), mounts(data1), script)
	if err != nil {
		t.Fatalf("container: %v\n%s", err, out)
	}
	if want := "one\na: 1\nsecret-token\nx=1\nhello /\n"; out != want {
		t.Errorf("output %q, want %q", out, want)
	}
	out, err = runInNamespace(t, filepath.Join(dir, "c2"), mounts(data2), "cat "+top+"/data/who")
	if err != nil || out != "two" {
		t.Errorf("second container with another source at the same path: %q, %v", out, err)
	}
	if b, err := os.ReadFile(filepath.Join(sub, "out")); err != nil || string(b) != "written\n" {
		t.Errorf("write to a volume: %q, %v", b, err)
	}
	for _, p := range []string{top, "/opt/nodeagent-test-flink", etcFile, "/nodeagent-private-" + strconv.Itoa(os.Getpid())} {
		if _, err := os.Lstat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s exists on the machine (%v)", p, err)
			os.RemoveAll(p)
		}
	}
	if errors.Is(runSecretsErr, os.ErrNotExist) {
		if _, err := os.Lstat("/run/secrets"); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("/run/secrets exists on the machine (%v)", err)
		}
	}
	if _, err := os.Stat(filepath.Join(conf, "new")); err == nil {
		t.Error("a read-only volume was written")
	}

	// A mount point that is a directory for a file source fails the start,
	// in the container's output.
	out, err = runInNamespace(t, filepath.Join(dir, "c3"), []mountSpec{{Source: fileSrc, Target: "/etc"}}, "true")
	if err == nil || !strings.Contains(out, "container setup failed") || !strings.Contains(out, "is a directory") {
		t.Errorf("file on a directory: %v, %q", err, out)
	}
}

func TestResolveInRoot(t *testing.T) {
	root := t.TempDir()
	for _, d := range []string{"run", "usr/lib", "etc"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// In order: var/run needs var first (a map's order is random).
	for _, l := range []struct{ link, target string }{{"var", ""}, {"var/run", "/run"}, {"lib", "usr/lib"}, {"etc/up", "../../../.."}} {
		if l.target == "" {
			if err := os.Mkdir(filepath.Join(root, l.link), 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.Symlink(l.target, filepath.Join(root, l.link)); err != nil {
			t.Fatal(err)
		}
	}
	r := &rootBuilder{root: root}
	for p, want := range map[string]string{
		"/var/run/secrets/x": "/run + secrets/x",
		"/lib/jvm":           "/usr/lib + jvm",
		"/etc/up/etc":        "/etc + ",
		"/usr/lib":           "/usr/lib + ",
		"/new":               "/ + new",
	} {
		existing, missing, err := r.resolve(p)
		if got := existing + " + " + strings.Join(missing, "/"); err != nil || got != want {
			t.Errorf("resolve(%s) = %q, %v; want %q", p, got, err, want)
		}
	}
}

func TestStartErrorWithoutRoot(t *testing.T) {
	err := startError(&os.SyscallError{Syscall: "fork/exec", Err: syscall.EPERM})
	if !errors.Is(err, errNoMountNamespace) || !strings.Contains(err.Error(), "needs root") || !strings.Contains(err.Error(), "--no-mount-namespaces") {
		t.Errorf("startError(EPERM) = %v", err)
	}
	if other := errors.New("exec: no such file"); startError(other) != other {
		t.Errorf("startError changed an unrelated error")
	}
}

func TestDedupEnv(t *testing.T) {
	got := strings.Join(dedupEnv([]string{"A=1", "B=2", "A=3", "C", "B=", "D=x=y"}), " ")
	if want := "A=3 C B= D=x=y"; got != want {
		t.Errorf("dedupEnv = %q, want %q", got, want)
	}
}
