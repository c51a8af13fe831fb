package flink

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
)

// Mode is the first container argument of the official image's entrypoint
// (standalone-job, jobmanager, taskmanager), or one of the native Kubernetes
// modes that Flink runs through it (see NativeInvocation).
type Mode string

// The modes of docker-entrypoint.sh that run Flink processes.
const (
	// StandaloneJob is an application cluster's JobManager
	// (bin/standalone-job.sh, StandaloneApplicationClusterEntryPoint).
	StandaloneJob Mode = "standalone-job"
	// JobManager is a session cluster's JobManager
	// (bin/jobmanager.sh, StandaloneSessionClusterEntrypoint).
	JobManager Mode = "jobmanager"
	// TaskManager is a TaskManager (bin/taskmanager.sh, TaskManagerRunner).
	TaskManager Mode = "taskmanager"

	// The native Kubernetes modes: not arguments of the entrypoint but the
	// scripts Flink's Kubernetes integration runs through it (see
	// NativeInvocation). KubernetesApplication and KubernetesSession are the
	// JobManager of an application or session cluster
	// (bin/kubernetes-jobmanager.sh with that deployment target),
	// KubernetesTaskManager a TaskManager pod created by Flink's resource
	// manager (bin/kubernetes-taskmanager.sh).
	KubernetesApplication Mode = "kubernetes-application"
	KubernetesSession     Mode = "kubernetes-session"
	KubernetesTaskManager Mode = "kubernetes-taskmanager"
)

// MainClass is the Java class the image's scripts run for m.
func (m Mode) MainClass() string {
	switch m {
	case StandaloneJob:
		return "org.apache.flink.container.entrypoint.StandaloneApplicationClusterEntryPoint"
	case JobManager:
		return "org.apache.flink.runtime.entrypoint.StandaloneSessionClusterEntrypoint"
	case TaskManager:
		return "org.apache.flink.runtime.taskexecutor.TaskManagerRunner"
	case KubernetesApplication:
		return "org.apache.flink.kubernetes.entrypoint.KubernetesApplicationClusterEntrypoint"
	case KubernetesSession:
		return "org.apache.flink.kubernetes.entrypoint.KubernetesSessionClusterEntrypoint"
	case KubernetesTaskManager:
		return "org.apache.flink.kubernetes.taskmanager.KubernetesTaskExecutorRunner"
	}
	return ""
}

// daemon is the name flink-console.sh uses for m (and in the log file's name).
func (m Mode) daemon() string {
	switch m {
	case StandaloneJob:
		return "standalonejob"
	case JobManager:
		return "standalonesession"
	case KubernetesApplication, KubernetesSession, KubernetesTaskManager:
		return string(m)
	}
	return "taskexecutor"
}

// IsJobManager reports whether m runs a JobManager.
func (m Mode) IsJobManager() bool {
	return m == StandaloneJob || m == JobManager || m == KubernetesApplication || m == KubernetesSession
}

// IsNative reports whether m is one of Flink's native Kubernetes modes.
func (m Mode) IsNative() bool {
	return m == KubernetesApplication || m == KubernetesSession || m == KubernetesTaskManager
}

// IsApplication reports whether m runs an application cluster's JobManager.
func (m Mode) IsApplication() bool { return m == StandaloneJob || m == KubernetesApplication }

// java17Opts are the module flags of the distribution's env.java.opts.all (the
// same in 1.18 to 2.x), braces expanded. Flink needs them on Java 17.
var java17Opts = []string{
	"--add-exports=java.base/sun.net.util=ALL-UNNAMED",
	"--add-exports=java.rmi/sun.rmi.registry=ALL-UNNAMED",
	"--add-exports=jdk.compiler/com.sun.tools.javac.api=ALL-UNNAMED",
	"--add-exports=jdk.compiler/com.sun.tools.javac.file=ALL-UNNAMED",
	"--add-exports=jdk.compiler/com.sun.tools.javac.parser=ALL-UNNAMED",
	"--add-exports=jdk.compiler/com.sun.tools.javac.tree=ALL-UNNAMED",
	"--add-exports=jdk.compiler/com.sun.tools.javac.util=ALL-UNNAMED",
	"--add-exports=java.security.jgss/sun.security.krb5=ALL-UNNAMED",
	"--add-opens=java.base/java.lang=ALL-UNNAMED",
	"--add-opens=java.base/java.net=ALL-UNNAMED",
	"--add-opens=java.base/java.io=ALL-UNNAMED",
	"--add-opens=java.base/java.nio=ALL-UNNAMED",
	"--add-opens=java.base/sun.nio.ch=ALL-UNNAMED",
	"--add-opens=java.base/java.lang.reflect=ALL-UNNAMED",
	"--add-opens=java.base/java.text=ALL-UNNAMED",
	"--add-opens=java.base/java.time=ALL-UNNAMED",
	"--add-opens=java.base/java.util=ALL-UNNAMED",
	"--add-opens=java.base/java.util.concurrent=ALL-UNNAMED",
	"--add-opens=java.base/java.util.concurrent.atomic=ALL-UNNAMED",
	"--add-opens=java.base/java.util.concurrent.locks=ALL-UNNAMED",
}

// LaunchOptions describe one Flink container of a pod: what the official image
// would be started with, and where the pod lives on this machine.
type LaunchOptions struct {
	// FlinkVersion is a pinned version or anything VersionFor accepts ("v1_20").
	FlinkVersion string
	// Mode is the first container argument: standalone-job, jobmanager or
	// taskmanager; or a native mode (NativeInvocation).
	Mode Mode
	// Args are the container arguments after the mode, e.g. for standalone-job
	// "--job-classname X --fromSavepoint file:///p --allowNonRestoredState -D k=v
	// <job args>"; for a native mode the script's arguments after the
	// deployment target (kubernetes.jobmanager.entrypoint.args, or a native
	// TaskManager's -D options). Image paths in them are mapped (see PathMap).
	Args []string
	// ConfDir holds the configuration as the operator's ConfigMap mounts it at
	// /opt/flink/conf: config.yaml (or flink-conf.yaml) and log4j-console.properties.
	// It is only read; Prepare copies it into the process's private /opt/flink/conf,
	// mapping image paths in the configuration file.
	ConfDir string
	// Host is the pod's IP, a loopback address such as 127.0.5.3. Every server
	// socket binds to it (jobmanager.bind-host, rest.bind-address,
	// taskmanager.bind-host), and a TaskManager advertises it (taskmanager.host),
	// so many pods can use the same ports.
	Host string
	// RPCAddress, when set, overrides jobmanager.rpc.address (and, for a
	// JobManager, rest.address). Leave it empty when the configuration names the
	// JobManager's service and HostsFile resolves it; set it to Host for a
	// JobManager whose configuration has no jobmanager.rpc.address (the image
	// would use its hostname) or with HA (the operator then passes the pod IP).
	RPCAddress string
	// Hosts are extra name -> IP entries for the process's name resolution, e.g.
	// the JobManager service name -> the JobManager pod's IP (cluster DNS).
	// Prepare writes WorkDir/hosts with them plus "localhost" and the machine's
	// hostname mapped to Host, and points the JVM at it (-Djdk.net.hosts.file), so
	// the JVM resolves nothing else. Ignored when HostsFile is set.
	//
	// localhost must mean the pod itself: Flink 1.20's session JobManager uploads
	// /jars/:id/run jobs to its own blob server at "localhost", which listens only
	// on Host here.
	Hosts map[string]string
	// HostsFile, when set, is used instead of a generated one (same format as
	// /etc/hosts). It should map localhost and the machine's hostname to Host.
	HostsFile string
	// WorkDir is the container's private file system: WorkDir/opt/flink is the
	// image's /opt/flink and the working directory (usrlib/, conf/, plugins/),
	// WorkDir/tmp is java.io.tmpdir (io.tmp.dirs by default). Created if missing.
	WorkDir string
	// LogDir gets the log file (-Dlog.file, FLINK_LOG_DIR); default WorkDir/log.
	LogDir string
	// UsrLib are host jars to place in /opt/flink/usrlib (the user code of
	// application clusters). Nil means the pinned version's test job jar, unless
	// the configuration's pipeline.classpaths names one of the image's examples
	// (/opt/flink/examples/...): then usrlib/ is empty, as in the official image.
	UsrLib []string
	// PathMap maps further container paths (volume mount points, e.g.
	// "/flink-data") to host directories. /opt/flink is always mapped to the
	// private copy, whose examples/streaming holds Flink's example jars; a path
	// that does not exist there stays missing, as in the image.
	PathMap map[string]string
	// ContainerPaths keeps the container's paths in the configuration and
	// arguments (no PathMap, not even /opt/flink): for a process that runs
	// in a mount namespace where they resolve, so that Flink logs and
	// reports the paths of the pod spec, as on a kubelet.
	ContainerPaths bool
	// Env is added to the process environment (KEY=VALUE), after the FLINK_* ones.
	Env []string
	// DynamicProperties are extra -D options, placed before Args (so a -D in Args
	// still wins).
	DynamicProperties map[string]string
	// JavaOpts are extra JVM options, after those from env.java.opts.*.
	JavaOpts []string
	// Java is the java binary; default $JAVA_HOME/bin/java, else java on PATH.
	Java string
}

// Launch is a prepared Flink process.
type Launch struct {
	// Cmd is not started. It runs in its own process group (Setpgid), with the
	// private /opt/flink as working directory; Stdout and Stderr are unset.
	Cmd     *exec.Cmd
	Dist    *Dist
	Home    string // the private /opt/flink
	ConfDir string // Home/conf, the configuration Flink reads
	LogFile string // -Dlog.file
	// MemoryJVMArgs and MemoryDynamicArgs are what BashJavaUtils computed, e.g.
	// [-Xmx… -Xms… -XX:MaxMetaspaceSize=…] and [-D taskmanager.memory.… …].
	MemoryJVMArgs     []string
	MemoryDynamicArgs []string
}

// Command is Prepare returning only the command.
func Command(ctx context.Context, opts LaunchOptions) (*exec.Cmd, error) {
	l, err := Prepare(ctx, opts)
	if err != nil {
		return nil, err
	}
	return l.Cmd, nil
}

// Prepare builds (when needed) the artifacts of opts.FlinkVersion, lays out the
// process's private /opt/flink under opts.WorkDir, computes the memory settings
// with BashJavaUtils (one short JVM run, ~1.5 s) and returns the java command the
// image's scripts would exec for opts.Mode. ctx bounds only this preparation.
func Prepare(ctx context.Context, opts LaunchOptions) (*Launch, error) {
	if opts.Mode.MainClass() == "" {
		return nil, fmt.Errorf("unsupported mode %q (want standalone-job, jobmanager, taskmanager or a native mode: %s, %s, %s)",
			opts.Mode, KubernetesApplication, KubernetesSession, KubernetesTaskManager)
	}
	if net.ParseIP(opts.Host) == nil {
		return nil, fmt.Errorf("Host %q is not an IP address", opts.Host)
	}
	if opts.WorkDir == "" || opts.ConfDir == "" {
		return nil, errors.New("WorkDir and ConfDir are required")
	}
	dist, err := Ensure(ctx, opts.FlinkVersion)
	if err != nil {
		return nil, err
	}
	workDir, err := filepath.Abs(opts.WorkDir)
	if err != nil {
		return nil, err
	}
	l := &Launch{Dist: dist, Home: filepath.Join(workDir, "opt", "flink")}
	l.ConfDir = filepath.Join(l.Home, "conf")
	logDir := opts.LogDir
	if logDir == "" {
		logDir = filepath.Join(workDir, "log")
	}
	if logDir, err = filepath.Abs(logDir); err != nil {
		return nil, err
	}
	l.LogFile = filepath.Join(logDir, "flink-"+opts.Mode.daemon()+".log")
	tmpDir := filepath.Join(workDir, "tmp")

	paths := newPathMapper(l.Home, opts.PathMap)
	if opts.ContainerPaths {
		paths = &pathMapper{target: map[string]string{}}
	}
	if err := layoutHome(l.Home, opts.ConfDir, dist, paths); err != nil {
		return nil, err
	}
	for _, d := range []string{logDir, tmpDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, err
		}
	}
	conf, err := ReadConfig(l.ConfDir, dist.Version)
	if err != nil {
		return nil, err
	}
	usrLib := opts.UsrLib
	if usrLib == nil {
		usrLib = defaultUsrLib(dist, l.Home, conf)
	}
	if err := linkUsrLib(l.Home, usrLib); err != nil {
		return nil, err
	}

	// --configDir, then our -D options, then the container's arguments.
	flinkArgs := []string{"--configDir", l.ConfDir}
	for _, kv := range dynamicProperties(opts) {
		flinkArgs = append(flinkArgs, "-D", paths.Rewrite(kv))
	}
	for _, a := range opts.Args {
		flinkArgs = append(flinkArgs, paths.Rewrite(a))
	}
	if opts.Mode == KubernetesApplication || opts.Mode == KubernetesSession {
		// kubernetes-jobmanager.sh passes no --configDir: the native
		// entrypoints parse -D options only and read $FLINK_CONF_DIR.
		flinkArgs = flinkArgs[2:]
	}

	env := append(os.Environ(),
		"FLINK_HOME="+l.Home,
		"FLINK_CONF_DIR="+l.ConfDir,
		"FLINK_LIB_DIR="+filepath.Join(l.Home, "lib"), // makes Home/usrlib the user lib dir
		"FLINK_PLUGINS_DIR="+filepath.Join(l.Home, "plugins"),
		"FLINK_OPT_DIR="+filepath.Join(l.Home, "opt"),
		"FLINK_BIN_DIR="+filepath.Join(l.Home, "bin"),
		"FLINK_LOG_DIR="+logDir,
	)
	env = append(env, opts.Env...)
	java := javaBinary(opts.Java)
	classpath := strings.Join(dist.Classpath, string(os.PathListSeparator))

	if opts.Mode == KubernetesTaskManager {
		// kubernetes-taskmanager.sh runs no BashJavaUtils: Flink's resource
		// manager computed the memory, passing the JVM flags in the
		// environment and the -D options in the arguments.
		l.MemoryJVMArgs = strings.Fields(lookupEnv(env, TaskManagerJVMMemoryEnv))
	} else {
		utilsArgs := flinkArgs
		if opts.Mode.IsNative() {
			utilsArgs = append([]string{"--configDir", l.ConfDir}, flinkArgs...) // as runBashJavaUtilsCmd does
		}
		l.MemoryJVMArgs, l.MemoryDynamicArgs, err = resourceParams(ctx, java, classpath, l.Home, env, opts.Mode, utilsArgs)
		if err != nil {
			return nil, err
		}
	}

	var jvm []string
	jvm = append(jvm, l.MemoryJVMArgs...)
	configured := javaOptsFromConfig(conf, opts.Mode)
	if (opts.Mode == TaskManager || opts.Mode == KubernetesTaskManager) && len(configured) == 0 && len(opts.JavaOpts) == 0 {
		jvm = append(jvm, "-XX:+UseG1GC") // taskmanager.sh and kubernetes-taskmanager.sh do this when no java opts are set
	}
	jvm = append(jvm, java17Opts...)
	jvm = append(jvm, configured...)
	jvm = append(jvm, opts.JavaOpts...)
	jvm = append(jvm, "-Djava.io.tmpdir="+tmpDir)
	hosts := opts.HostsFile
	if hosts == "" {
		hosts = filepath.Join(workDir, "hosts")
		if err := writeHostsFile(hosts, opts.Host, opts.Hosts); err != nil {
			return nil, err
		}
	}
	if hosts, err = filepath.Abs(hosts); err != nil {
		return nil, err
	}
	jvm = append(jvm, "-Djdk.net.hosts.file="+hosts)
	jvm = append(jvm,
		"-Dlog.file="+l.LogFile,
		"-Dlog4j.configuration=file:"+filepath.Join(l.ConfDir, Log4jConsoleFile),
		"-Dlog4j.configurationFile=file:"+filepath.Join(l.ConfDir, Log4jConsoleFile),
		"-Dlogback.configurationFile=file:"+filepath.Join(l.ConfDir, "logback-console.xml"),
		"-classpath", classpath,
		opts.Mode.MainClass(),
	)
	// The memory -D options go right after --configDir, as the scripts put
	// them; kubernetes-jobmanager.sh puts them first.
	args := jvm
	if opts.Mode == KubernetesApplication || opts.Mode == KubernetesSession {
		args = append(args, l.MemoryDynamicArgs...)
		args = append(args, flinkArgs...)
	} else {
		args = append(args, flinkArgs[:2]...)
		args = append(args, l.MemoryDynamicArgs...)
		args = append(args, flinkArgs[2:]...)
	}

	l.Cmd = exec.Command(java, args...)
	l.Cmd.Dir = l.Home
	l.Cmd.Env = env
	l.Cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	return l, nil
}

// dynamicProperties are the -D key=value options Prepare adds for opts.
func dynamicProperties(opts LaunchOptions) []string {
	var kv []string
	if opts.Mode.IsJobManager() {
		kv = append(kv, "jobmanager.bind-host="+opts.Host, "rest.bind-address="+opts.Host)
		if opts.RPCAddress != "" {
			kv = append(kv, "jobmanager.rpc.address="+opts.RPCAddress, "rest.address="+opts.RPCAddress)
		}
	} else {
		kv = append(kv, "taskmanager.bind-host="+opts.Host, "taskmanager.host="+opts.Host)
		if opts.RPCAddress != "" {
			kv = append(kv, "jobmanager.rpc.address="+opts.RPCAddress)
		}
	}
	keys := make([]string, 0, len(opts.DynamicProperties))
	for k := range opts.DynamicProperties {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		kv = append(kv, k+"="+opts.DynamicProperties[k])
	}
	return kv
}

// javaOptsFromConfig are the JVM options config.sh takes from the configuration
// for mode: env.java.default-opts.all, env.java.opts.all (or the legacy
// env.java.opts), and env.java.opts.jobmanager / env.java.opts.taskmanager.
func javaOptsFromConfig(conf map[string]string, mode Mode) []string {
	all := conf["env.java.opts.all"]
	if all == "" {
		all = conf["env.java.opts"]
	}
	role := "env.java.opts.taskmanager"
	if mode.IsJobManager() {
		role = "env.java.opts.jobmanager"
	}
	return strings.Fields(conf["env.java.default-opts.all"] + " " + all + " " + conf[role])
}

func javaBinary(java string) string {
	if java != "" {
		return java
	}
	if h := os.Getenv("JAVA_HOME"); h != "" {
		return filepath.Join(h, "bin", "java")
	}
	return "java"
}

// defaultUsrLib is usrlib/ when LaunchOptions.UsrLib is nil: the test job jar,
// as in the test image (the official image plus usrlib/testjob.jar), except in
// a pod whose job is one of the image's own examples, i.e. whose configured
// pipeline.classpaths (which the operator sets from jarURI) or pipeline.jars
// (native mode's jarURI) names a jar under /opt/flink/examples. That pod gets the official image's empty usrlib/, so
// that the example runs without --job-classname (entryClass) as on the official
// image: with the test job's jar beside it, the standalone entrypoint would find
// two jars with an entry class in their manifests and refuse to choose
// ("Multiple JAR archives with entry classes found on classpath").
//
// conf is the process's configuration, image paths already mapped onto home.
func defaultUsrLib(dist *Dist, home string, conf map[string]string) []string {
	examples := filepath.Join(home, "examples") + "/"
	if strings.Contains(conf["pipeline.classpaths"], examples) || strings.Contains(conf["pipeline.jars"], examples) {
		return []string{}
	}
	return []string{dist.TestJobJar}
}

// linkUsrLib fills the private /opt/flink/usrlib with links to jars.
func linkUsrLib(home string, jars []string) error {
	for _, jar := range jars {
		abs, err := filepath.Abs(jar)
		if err != nil {
			return err
		}
		if err := os.Symlink(abs, filepath.Join(home, "usrlib", filepath.Base(jar))); err != nil {
			return err
		}
	}
	return nil
}

// layoutHome (re)creates the private /opt/flink: lib/, plugins/, opt/, bin/
// (empty), usrlib/ (empty; see linkUsrLib), examples/ (a link to the version's
// example jars, which are read only as in the image) and conf/ copied from
// confDir with image paths in the configuration file mapped.
func layoutHome(home, confDir string, dist *Dist, paths *pathMapper) error {
	for _, d := range []string{"usrlib", "conf", "examples"} {
		if err := os.RemoveAll(filepath.Join(home, d)); err != nil {
			return err
		}
	}
	for _, d := range []string{"lib", "plugins", "opt", "bin", "usrlib", "conf"} {
		if err := os.MkdirAll(filepath.Join(home, d), 0o755); err != nil {
			return err
		}
	}
	if err := os.Symlink(dist.ExamplesDir, filepath.Join(home, "examples")); err != nil {
		return err
	}

	entries, err := os.ReadDir(confDir)
	if err != nil {
		return fmt.Errorf("ConfDir: %w", err)
	}
	configFile := filepath.Base(configFileIn(confDir, dist.Version))
	for _, e := range entries {
		// Skip a ConfigMap volume's ..data and ..<timestamp> entries; follow the
		// symlinks of its files.
		if strings.HasPrefix(e.Name(), "..") {
			continue
		}
		src := filepath.Join(confDir, e.Name())
		st, err := os.Stat(src)
		if err != nil {
			return err
		}
		if !st.Mode().IsRegular() {
			continue
		}
		data, err := os.ReadFile(src)
		if err != nil {
			return err
		}
		if e.Name() == configFile {
			data = []byte(paths.Rewrite(string(data)))
		}
		if err := os.WriteFile(filepath.Join(home, "conf", e.Name()), data, 0o644); err != nil {
			return err
		}
	}
	log4j := filepath.Join(home, "conf", Log4jConsoleFile)
	if _, err := os.Stat(log4j); errors.Is(err, os.ErrNotExist) {
		if err := os.WriteFile(log4j, defaultLog4jConsole, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// writeHostsFile writes an /etc/hosts-style file mapping localhost and the
// machine's hostname to ip, then the extra entries.
func writeHostsFile(path, ip string, extra map[string]string) error {
	var b strings.Builder
	names := []string{"localhost"}
	if h, err := os.Hostname(); err == nil && h != "localhost" {
		names = append(names, h)
	}
	fmt.Fprintf(&b, "%s %s\n", ip, strings.Join(names, " "))
	keys := make([]string, 0, len(extra))
	for k := range extra {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, name := range keys {
		fmt.Fprintf(&b, "%s %s\n", extra[name], name)
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

// lookupEnv is the value of name in env (KEY=VALUE, the last one wins).
func lookupEnv(env []string, name string) string {
	v := ""
	for _, kv := range env {
		if k, val, ok := strings.Cut(kv, "="); ok && k == name {
			v = val
		}
	}
	return v
}

// resultPrefix marks BashJavaUtils' result lines.
const resultPrefix = "BASH_JAVA_UTILS_EXEC_RESULT:"

// resourceParams runs BashJavaUtils as the image's scripts do and returns its two
// result lines: the JVM memory flags and the memory -D options.
func resourceParams(ctx context.Context, java, classpath, dir string, env []string, mode Mode, flinkArgs []string) (jvm, dyn []string, err error) {
	command := "GET_TM_RESOURCE_PARAMS"
	if mode.IsJobManager() {
		command = "GET_JM_RESOURCE_PARAMS"
	}
	args := []string{"-Xmx128m", "-XX:TieredStopAtLevel=1", "-Dlog4j2.level=WARN", "-classpath", classpath,
		"org.apache.flink.runtime.util.bash.BashJavaUtils", command}
	args = append(args, flinkArgs...)
	cmd := exec.CommandContext(ctx, java, args...)
	cmd.Dir = dir
	cmd.Env = env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, nil, fmt.Errorf("BashJavaUtils %s: %w\n%s%s", command, err, stdout.String(), stderr.String())
	}
	var results []string
	for _, line := range strings.Split(stdout.String(), "\n") {
		if strings.HasPrefix(line, resultPrefix) {
			results = append(results, strings.TrimSpace(strings.TrimPrefix(line, resultPrefix)))
		}
	}
	if len(results) != 2 {
		return nil, nil, fmt.Errorf("BashJavaUtils %s: want 2 result lines, got %d:\n%s%s", command, len(results), stdout.String(), stderr.String())
	}
	return strings.Fields(results[0]), strings.Fields(results[1]), nil
}
