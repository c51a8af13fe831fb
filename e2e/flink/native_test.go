package flink

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestSplitShellWords(t *testing.T) {
	for in, want := range map[string][]string{
		"kubernetes-jobmanager.sh kubernetes-application ": {"kubernetes-jobmanager.sh", "kubernetes-application"},
		"  a\tb\nc  ":                  {"a", "b", "c"},
		"-Dk='a b' -D x=1b":            {"-Dk=a b", "-D", "x=1b"},
		`-Dk='it'\''s'`:                {"-Dk=it's"},
		`-Dk="a \"b\" \$c \\ \n"`:      {`-Dk=a "b" $c \ \n`},
		`a\ b c\\d`:                    {"a b", `c\d`},
		"-Dk='[{\"a\":\"b\"}]' x*y[1]": {`-Dk=[{"a":"b"}]`, "x*y[1]"},
		"a#b ''":                       {"a#b", ""},
		"":                             nil,
	} {
		got, err := splitShellWords(in)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("splitShellWords(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"a $(id)", "a `id`", "a; b", "a | b", "a > f", "a 'b", `a "b`, `a "$HOME"`, "a #c", "~/x", "a && b"} {
		if got, err := splitShellWords(in); err == nil {
			t.Errorf("splitShellWords(%q) = %q, want an error", in, got)
		}
	}
}

func TestNativeInvocation(t *testing.T) {
	for _, tc := range []struct {
		args []string
		mode Mode
		rest []string
		ok   bool
		err  bool
	}{
		{args: []string{"bash", "-c", "kubernetes-jobmanager.sh kubernetes-application "}, mode: KubernetesApplication, rest: []string{}, ok: true},
		{args: []string{"bash", "-c", "kubernetes-jobmanager.sh kubernetes-session -Dk=v"}, mode: KubernetesSession, rest: []string{"-Dk=v"}, ok: true},
		{args: []string{"/bin/bash", "-c", "/opt/flink/bin/kubernetes-taskmanager.sh -Da='b c' -D m=1b"}, mode: KubernetesTaskManager,
			rest: []string{"-Da=b c", "-D", "m=1b"}, ok: true},
		{args: []string{"bash", "-c", "kubernetes-jobmanager.sh"}, ok: true, err: true},
		{args: []string{"bash", "-c", "kubernetes-jobmanager.sh standalone-job"}, ok: true, err: true},
		{args: []string{"bash", "-c", "kubernetes-taskmanager.sh -Dk=$(id)"}, ok: true, err: true},
		{args: []string{"bash", "-c", "/tmp/kubernetes-taskmanager.sh"}},
		{args: []string{"bash", "-c", "jobmanager.sh start"}},
		{args: []string{"sh", "-c", "kubernetes-taskmanager.sh"}},
		{args: []string{"bash", "-c", "kubernetes-taskmanager.sh", "extra"}},
		{args: []string{"taskmanager"}},
	} {
		mode, rest, ok, err := NativeInvocation(tc.args)
		if ok != tc.ok || (err != nil) != tc.err {
			t.Errorf("NativeInvocation(%q): ok %v, err %v; want ok %v, error %v", tc.args, ok, err, tc.ok, tc.err)
			continue
		}
		if ok && !tc.err && (mode != tc.mode || !reflect.DeepEqual(rest, tc.rest)) {
			t.Errorf("NativeInvocation(%q) = %q %q, want %q %q", tc.args, mode, rest, tc.mode, tc.rest)
		}
	}
}

// TestPrepareNative checks the java command lines of the native modes
// against bin/kubernetes-jobmanager.sh and bin/kubernetes-taskmanager.sh:
// the JobManager gets BashJavaUtils' memory options first and no
// --configDir (the native entrypoints parse -D options only and read
// $FLINK_CONF_DIR), the TaskManager the JVM flags Flink's resource manager
// put in FLINK_TM_JVM_MEM_OPTS and --configDir before its arguments, with no
// BashJavaUtils run; the classpath has flink-kubernetes.
func TestPrepareNative(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	version := Versions()[0]
	conf := t.TempDir()
	if err := os.WriteFile(filepath.Join(conf, ConfigFileName(version)), []byte("jobmanager.memory.process.size: 768m\ntaskmanager.memory.process.size: 1024m\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	base := LaunchOptions{FlinkVersion: version, ConfDir: conf, Host: "127.0.0.9", Hosts: map[string]string{}}

	jmOpts := base
	jmOpts.Mode, jmOpts.WorkDir, jmOpts.Args = KubernetesApplication, t.TempDir(), []string{"-Dx=y"}
	jm, err := Prepare(ctx, jmOpts)
	if err != nil {
		t.Fatal(err)
	}
	args := jm.Cmd.Args
	main := slices.Index(args, KubernetesApplication.MainClass())
	if main < 0 {
		t.Fatalf("no main class in %q", args)
	}
	after := args[main+1:]
	if slices.Contains(after, "--configDir") {
		t.Errorf("native JobManager with --configDir: %q", after)
	}
	if len(jm.MemoryDynamicArgs) == 0 || !reflect.DeepEqual(after[:len(jm.MemoryDynamicArgs)], jm.MemoryDynamicArgs) {
		t.Errorf("JobManager arguments %q, want the memory options %q first", after, jm.MemoryDynamicArgs)
	}
	if after[len(after)-1] != "-Dx=y" || !slices.Contains(after, "jobmanager.bind-host=127.0.0.9") {
		t.Errorf("JobManager arguments %q: want the bind host, then the script's arguments", after)
	}
	if !slices.ContainsFunc(jm.Dist.Classpath, func(j string) bool { return strings.Contains(filepath.Base(j), "flink-kubernetes-") }) {
		t.Errorf("no flink-kubernetes jar on the classpath of %s", version)
	}
	if !slices.Contains(jm.Cmd.Env, "FLINK_CONF_DIR="+jm.ConfDir) {
		t.Errorf("JobManager without FLINK_CONF_DIR=%s", jm.ConfDir)
	}

	tmOpts := base
	tmOpts.Mode, tmOpts.WorkDir = KubernetesTaskManager, t.TempDir()
	tmOpts.Args = []string{"-Dtaskmanager.resource-id=n-taskmanager-1-1", "-D", "taskmanager.memory.network.min=67108864b"}
	tmOpts.Env = []string{TaskManagerJVMMemoryEnv + "=-Xmx500m -Xms500m -XX:MaxDirectMemorySize=200m -XX:MaxMetaspaceSize=256m"}
	begin := time.Now()
	tm, err := Prepare(ctx, tmOpts)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("TaskManager prepared in %s (no BashJavaUtils)", time.Since(begin).Round(time.Millisecond))
	if want := []string{"-Xmx500m", "-Xms500m", "-XX:MaxDirectMemorySize=200m", "-XX:MaxMetaspaceSize=256m"}; !reflect.DeepEqual(tm.MemoryJVMArgs, want) ||
		!reflect.DeepEqual(tm.Cmd.Args[1:5], want) || len(tm.MemoryDynamicArgs) != 0 {
		t.Errorf("TaskManager memory: JVM %q (command %q), -D %q; want %q from %s and no -D", tm.MemoryJVMArgs, tm.Cmd.Args[1:5], tm.MemoryDynamicArgs, want, TaskManagerJVMMemoryEnv)
	}
	args = tm.Cmd.Args
	main = slices.Index(args, KubernetesTaskManager.MainClass())
	if main < 0 {
		t.Fatalf("no main class in %q", args)
	}
	after = args[main+1:]
	if after[0] != "--configDir" || after[1] != tm.ConfDir || !reflect.DeepEqual(after[len(after)-3:], tmOpts.Args) ||
		!slices.Contains(after, "taskmanager.host=127.0.0.9") {
		t.Errorf("TaskManager arguments %q: want --configDir, the pod's host, then the script's arguments", after)
	}
	if !slices.Contains(args, "-XX:+UseG1GC") {
		t.Errorf("TaskManager without -XX:+UseG1GC (kubernetes-taskmanager.sh's default)")
	}
}

// TestPrepareContainerPaths: with ContainerPaths the configuration Flink
// reads and its arguments keep the pod's paths (a process in a mount
// namespace resolves them), so Flink logs the restore path the operator
// wrote; by default they name the volumes' host paths.
func TestPrepareContainerPaths(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	version := Versions()[0]
	conf := t.TempDir()
	const restore = "execution.savepoint.path: file:/opt/flink/volume/sp-1\n"
	if err := os.WriteFile(filepath.Join(conf, ConfigFileName(version)), []byte("jobmanager.memory.process.size: 768m\n"+restore), 0o644); err != nil {
		t.Fatal(err)
	}
	volume := t.TempDir()
	for _, keep := range []bool{false, true} {
		opts := LaunchOptions{FlinkVersion: version, ConfDir: conf, Host: "127.0.0.9", Hosts: map[string]string{},
			Mode: KubernetesApplication, WorkDir: t.TempDir(), Args: []string{"-Dstate.checkpoints.dir=file:/opt/flink/volume/cp"},
			PathMap: map[string]string{"/opt/flink/volume": volume}, ContainerPaths: keep}
		l, err := Prepare(ctx, opts)
		if err != nil {
			t.Fatal(err)
		}
		written, err := os.ReadFile(filepath.Join(l.ConfDir, ConfigFileName(version)))
		if err != nil {
			t.Fatal(err)
		}
		arg := l.Cmd.Args[len(l.Cmd.Args)-1]
		if keep {
			if !strings.Contains(string(written), restore) || arg != opts.Args[0] {
				t.Errorf("ContainerPaths: configuration %q, last argument %q; want the pod's paths kept", written, arg)
			}
			continue
		}
		if !strings.Contains(string(written), "file:"+volume+"/sp-1") || arg != "-Dstate.checkpoints.dir=file:"+volume+"/cp" {
			t.Errorf("configuration %q, last argument %q; want the volume's host path", written, arg)
		}
	}
}
