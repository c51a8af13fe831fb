package nodeagent

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	flinkjvm "github.com/flinkops/flink-operator/e2e/flink"
	"github.com/flinkops/flink-operator/e2e/localcluster"
)

const (
	// Restart backoff of exited containers, doubled per restart, reset after
	// a container ran for backoffReset.
	backoffMin   = time.Second
	backoffMax   = 30 * time.Second
	backoffReset = time.Minute
	// aliveReady is how long a Flink or fake container without a REST API
	// (a TaskManager) must run to be ready; the operator's image and host
	// commands follow their probes instead (probe.go).
	aliveReady = 2 * time.Second
	// restFailures consecutive failed REST checks make a ready JobManager
	// unready.
	restFailures = 3
)

// configError is a setup error that waits for the user (a missing key or
// mount), reported as CreateContainerConfigError.
type configError struct{ error }

// container runs one container of a pod: its process, restarts and
// readiness, and keeps its ContainerStatus.
type container struct {
	w     *podWorker
	spec  *corev1.Container
	class Classification
	// init: an init container of the pod (spec.initContainers), run to
	// completion before the next one and the containers.
	init bool
	// guard is the operator's ended-job guard of a native application
	// JobManager (nil without one): which entrypoint runs is decided at
	// every start, with the container's variables read again then, as a
	// kubelet does.
	guard *flinkjvm.EndedJobGuard
	// pod is what the container's variables are read from.
	pod podFields
	// waitReason/waitMessage keep an Unsupported container waiting.
	waitReason, waitMessage string
	// command prepares one run of the container (ctx bounds the
	// preparation: Flink's takes ~1.5 s, a first fake-jobmanager build more).
	command func(ctx context.Context) (*exec.Cmd, error)
	// restURL, if set, is GET for readiness (a JobManager's /config);
	// otherwise the container is ready once it ran aliveReady.
	restURL string
	// kubeletProbes: the container's startup, liveness and readiness
	// probes run as the kubelet runs them (probe.go) instead of restURL /
	// aliveReady: Operator and HostCommand containers, whose pod specs
	// are written for a kubelet; Flink's and the fake JobManager's keep
	// the agent's own readiness rule.
	kubeletProbes bool
	// ip is the pod's IP, where probes connect.
	ip string
	// logDir holds a log file per run, <n>.log (see runlog.go).
	logDir string
	// mounts are the container's volumes at their mount paths.
	mounts []mountSpec

	ctx       context.Context
	cancel    context.CancelFunc
	startOnce sync.Once
	done      chan struct{} // closed when no process runs or will

	mu       sync.Mutex
	state    corev1.ContainerState
	last     corev1.ContainerState
	restarts int32
	ready    bool
	started  bool
	// startupDone: the current run passed its startup probe (always, for
	// a run without one); the status's started.
	startupDone bool
	// probeKilled is the run a failed liveness or startup probe killed:
	// it restarts unless restartPolicy is Never, whatever its exit code,
	// as with the kubelet.
	probeKilled *proc
	id          string
	proc        *proc
	grace       time.Duration // for stop
	// curLog is the log of the latest run, lastLog that of the run in
	// last (what `kubectl logs --previous` reads).
	curLog, lastLog *runLog
}

// newContainer works out how to run spec (env, expanded command and args,
// mounts) without starting anything.
func (w *podWorker) newContainer(spec *corev1.Container, volumes map[string]volume, f podFields) (*container, error) {
	return w.makeContainer(spec, volumes, f, false)
}

// newInitContainer is newContainer for an init container (runs to
// completion, no probes, restarts only on failure; see initcontainers.go).
func (w *podWorker) newInitContainer(spec *corev1.Container, volumes map[string]volume, f podFields) (*container, error) {
	return w.makeContainer(spec, volumes, f, true)
}

func (w *podWorker) makeContainer(spec *corev1.Container, volumes map[string]volume, f podFields, init bool) (*container, error) {
	c := w.baseContainer(spec)
	c.init = init
	env, err := containerEnv(spec, f, w.a)
	if err != nil {
		return nil, configError{fmt.Errorf("container %s: %w", spec.Name, err)}
	}
	values := map[string]string{}
	for _, e := range env {
		values[e.Name] = e.Value
	}
	lookup := func(n string) (string, bool) { v, ok := values[n]; return v, ok }
	command := expandAll(spec.Command, lookup)
	args := expandAll(spec.Args, lookup)
	if c.guard = flinkjvm.SplitEndedJobGuard(args); c.guard != nil {
		// The operator's ended-job guard, as bash would run it with the
		// container's variables; chosen again at every start (guardedRun).
		args, _ = c.guard.Choose(values)
		c.pod = f
	}
	c.class = Classify(spec, command, args)
	if w.a.cfg.HostCommands && spec.Image == HostCommandImage {
		c.class = Classification{Kind: HostCommand}
	}
	if c.class.Kind == Operator && w.a.cfg.OperatorBinary == "" {
		c.class = Classification{Kind: Unsupported, Message: fmt.Sprintf("image %q is the operator's: the local node agent "+
			"runs it as a locally built operator binary, and it has none (node-agent --operator-binary, Config.OperatorBinary; "+
			"e2e/localcluster passes its build)", spec.Image)}
	}
	if c.class.Kind == Busybox {
		if why := w.a.busyboxSupport(spec.Image); why != "" {
			c.class = Classification{Kind: Unsupported, Message: why}
		}
	}
	c.kubeletProbes = (c.class.Kind == Operator || c.class.Kind == HostCommand || c.class.Kind == Busybox) && !c.init
	c.ip = f.podIP
	c.mounts, err = containerMounts(spec, volumes)
	if err != nil {
		return nil, configError{fmt.Errorf("container %s: %w", spec.Name, err)}
	}
	mounts := mountPaths(c.mounts)
	switch c.class.Kind {
	case Unsupported:
		c.waitReason, c.waitMessage = ReasonImageNotSupported, c.class.Message
	case Flink:
		err = c.prepareFlink(env, values, mounts, f)
	case FakeJobManager:
		err = c.prepareFake(envList(env), values, mounts, f)
	case HostCommand:
		err = c.prepareHostCommand(envList(env), command, args)
	case Operator:
		err = c.prepareOperator(envList(env), f)
	case Busybox:
		err = c.prepareBusybox(envList(env), f)
	}
	if err != nil {
		return nil, err
	}
	if c.waitReason != "" {
		c.state = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: c.waitReason, Message: c.waitMessage}}
	}
	return c, nil
}

func envList(env []EnvVar) []string {
	out := make([]string, len(env))
	for i, e := range env {
		out[i] = e.Name + "=" + e.Value
	}
	return out
}

// inPod makes cmd run as the container: in its mount namespace with its
// volumes (and extra mounts, before them) at their paths, unless the agent
// runs without mount namespaces.
func (c *container) inPod(cmd *exec.Cmd, extra ...mountSpec) (*exec.Cmd, error) {
	return c.inPodAs(cmd, containerIdentity{}, extra...)
}

// inPodAs is inPod with the pod's identity (hostname, hosts file) too.
func (c *container) inPodAs(cmd *exec.Cmd, id containerIdentity, extra ...mountSpec) (*exec.Cmd, error) {
	if c.w.a.cfg.NoMountNamespaces {
		return cmd, nil
	}
	return inContainerNamespaces(cmd, filepath.Join(c.w.dir, "containers", c.spec.Name), append(extra, c.mounts...), id)
}

// operatorImageEnv is the environment the operator's image gives its
// process (distroless/static:nonroot, user 65532, whose home the runtime
// sets): the container's env comes on top. Not the agent's environment: a
// KUBECONFIG there, or the machine's ~/.kube/config, would win over the
// in-cluster configuration in the operator's client loading
// (clientcmd's default rules), which no real pod of it has.
var operatorImageEnv = []string{
	"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
	"HOME=/home/nonroot",
}

// prepareOperator runs the operator's image as Config.OperatorBinary,
// bound at the image's entrypoint /flink-operator in the container's
// mount namespace, with the container's args (listen flags on the pod IP,
// podBindAddresses), the image's environment plus the container's, the
// pod's hostname (a UTS namespace of its own) and the pod's hosts file as
// /etc/hosts (the names of Services, as cluster DNS would answer them: the
// operator's --flink-endpoint=service reaches <name>-rest.<ns>.svc). The
// image's user and read-only root are not applied: the process runs as the
// agent.
func (c *container) prepareOperator(env []string, f podFields) error {
	bin := c.w.a.cfg.OperatorBinary
	args := podBindAddresses(c.class.Args, f.podIP)
	hostname := containerHostname(f.pod)
	id := containerIdentity{Hostname: hostname}
	if !slices.ContainsFunc(c.mounts, func(m mountSpec) bool { return path.Clean(m.Target) == "/etc/hosts" }) {
		// A volume at /etc/hosts wins, as with the kubelet.
		id.HostsDir = c.w.hostsDir()
	}
	c.w.setNeedsHosts()
	c.command = func(ctx context.Context) (*exec.Cmd, error) {
		if c.w.a.cfg.NoMountNamespaces {
			cmd := exec.Command(bin, args...)
			cmd.Env = append(slices.Clone(operatorImageEnv), env...)
			cmd.Dir = cmp.Or(c.spec.WorkingDir, "/")
			return cmd, nil
		}
		cmd := exec.Command(operatorEntrypoint, args...)
		// HOSTNAME as container runtimes set it (in the namespace that has
		// that hostname), before the container's env, which may override it.
		cmd.Env = append(append(slices.Clone(operatorImageEnv), "HOSTNAME="+hostname), env...)
		cmd.Dir = c.spec.WorkingDir
		return c.inPodAs(cmd, id, mountSpec{Source: bin, Target: operatorEntrypoint, ReadOnly: true})
	}
	c.w.logf("container %s: operator %s %s (image %s, hostname %s)", c.spec.Name, bin, strings.Join(args, " "), c.spec.Image, hostname)
	return nil
}

// podBindAddresses gives the operator's listen flags (every --*-bind-address:
// --webhook-, --metrics-, --health-probe-bind-address; --flag=:port and
// --flag :port) whose host is empty the pod's IP. In a real pod ":8081" is
// private to the pod's network namespace; here every pod shares the
// machine's ports and Flink JobManagers listen on <their pod IP>:8081, so a
// wildcard bind would take their port (or fail for a second operator pod).
// A disabled listener ("0") and an explicit host are left as they are; so
// is everything after "--".
func podBindAddresses(args []string, podIP string) []string {
	out := slices.Clone(args)
	onPodIP := func(addr string) string {
		if port, ok := strings.CutPrefix(addr, ":"); ok {
			return net.JoinHostPort(podIP, port)
		}
		return addr
	}
	for i := 0; i < len(out); i++ {
		if out[i] == "--" {
			break
		}
		name, value, inline := strings.Cut(out[i], "=")
		if !strings.HasPrefix(name, "--") || !strings.HasSuffix(name, "-bind-address") {
			continue
		}
		switch {
		case inline:
			out[i] = name + "=" + onPodIP(value)
		case i+1 < len(out):
			out[i+1] = onPodIP(out[i+1])
			i++
		}
	}
	return out
}

// prepareHostCommand runs the container's command and args (a test's
// `sh -c ...`) with the agent's environment and the container's, in
// workingDir or /.
func (c *container) prepareHostCommand(env, command, args []string) error {
	argv := append(append([]string{}, command...), args...)
	if len(argv) == 0 {
		return configError{fmt.Errorf("container %s: image %s needs a command", c.spec.Name, HostCommandImage)}
	}
	c.command = func(ctx context.Context) (*exec.Cmd, error) {
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Env = append(os.Environ(), env...)
		cmd.Dir = c.spec.WorkingDir
		if c.w.a.cfg.NoMountNamespaces && cmd.Dir == "" {
			cmd.Dir = "/"
		}
		return c.inPod(cmd)
	}
	return nil
}

// baseContainer is a container of w with nothing to run yet (command nil).
func (w *podWorker) baseContainer(spec *corev1.Container) *container {
	c := &container{
		w:      w,
		spec:   spec,
		logDir: filepath.Join(w.dir, "logs", spec.Name),
		done:   make(chan struct{}),
		state:  corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: ReasonContainerCreating}},
	}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	return c
}

func expandAll(in []string, lookup func(string) (string, bool)) []string {
	if in == nil {
		return nil
	}
	out := make([]string, len(in))
	for i, s := range in {
		out[i] = Expand(s, lookup)
	}
	return out
}

// flinkEnvPaths are variables of the image that hold container paths; the
// agent sets its own (host) values, so the container's are dropped.
var flinkEnvPaths = map[string]bool{
	"FLINK_HOME": true, "FLINK_CONF_DIR": true, "FLINK_LOG_DIR": true, "FLINK_LIB_DIR": true,
	"FLINK_PLUGINS_DIR": true, "FLINK_OPT_DIR": true, "FLINK_BIN_DIR": true, "JAVA_HOME": true,
}

// confMount is where the container's Flink configuration is mounted:
// $FLINK_CONF_DIR (set by the operator when kubernetes.flink.conf.dir is
// not the default), else /opt/flink/conf.
func confMount(values map[string]string) string {
	if d := values["FLINK_CONF_DIR"]; d != "" {
		return path.Clean(d)
	}
	return flinkjvm.ImageFlinkHome + "/conf"
}

// prepareFlink sets up a real Flink JVM through e2e/flink.
func (c *container) prepareFlink(env []EnvVar, values, mounts map[string]string, f podFields) error {
	version, err := PinnedFlinkVersion(f.pod, c.spec.Image)
	if err != nil {
		c.waitReason, c.waitMessage = ReasonFlinkVersionNotPinned, err.Error()
		return nil
	}
	confPath := confMount(values)
	confDir, ok := mounts[confPath]
	if !ok {
		return configError{fmt.Errorf("container %s: no volume mounted at %s (the Flink configuration)", c.spec.Name, confPath)}
	}
	pathMap := map[string]string{}
	for mount, host := range mounts {
		if mount != confPath {
			pathMap[mount] = host
		}
	}
	work := filepath.Join(c.w.dir, "containers", c.spec.Name)
	logDir := filepath.Join(work, "log")
	if d := values["FLINK_LOG_DIR"]; d != "" {
		if host, ok := mapPath(d, mounts); ok {
			logDir = host
		}
	}
	// Flink's Kubernetes client (fabric8) would prefer a kubeconfig of the
	// machine ($KUBECONFIG, ~/.kube/config: the JVM inherits the agent's
	// environment and sees the machine's files) to the pod's service
	// account, bypassing its RBAC; in a pod there is none. The container's
	// own env may still set it.
	envList := []string{"KUBERNETES_AUTH_TRYKUBECONFIG=false"}
	for _, e := range env {
		if !flinkEnvPaths[e.Name] {
			envList = append(envList, e.Name+"="+e.Value)
		}
	}
	opts := flinkjvm.LaunchOptions{
		FlinkVersion:   version,
		Mode:           c.class.Mode,
		Args:           c.class.Args,
		ConfDir:        confDir,
		Host:           f.podIP,
		HostsFile:      c.w.hostsPath(),
		WorkDir:        work,
		LogDir:         logDir,
		PathMap:        pathMap,
		ContainerPaths: c.w.a.cfg.ContainerPaths,
		Env:            envList,
		JavaOpts:       c.w.a.cfg.JavaOpts,
	}
	c.w.setNeedsHosts()
	if c.class.Mode.IsJobManager() {
		conf, err := flinkjvm.ReadConfig(confDir, version)
		if err != nil {
			return configError{fmt.Errorf("container %s: %w", c.spec.Name, err)}
		}
		c.restURL = fmt.Sprintf("http://%s:%d/config", f.podIP, restBindPort(conf))
	}
	c.command = func(ctx context.Context) (*exec.Cmd, error) {
		opts := opts
		if c.guard != nil {
			opts.Mode, opts.Args = c.guardedRun(opts.Mode, opts.Args)
		}
		l, err := flinkjvm.Prepare(ctx, opts)
		if err != nil {
			return nil, err
		}
		// The private /opt/flink at the image's path too, under the
		// volumes mounted there (the configuration, pod templates):
		// paths that reach Flink at run time (REST requests, its
		// Kubernetes client's pod templates) mean what they mean in a pod.
		return c.inPod(l.Cmd, mountSpec{Source: l.Home, Target: flinkjvm.ImageFlinkHome})
	}
	c.w.logf("container %s: Flink %s %s (image %s)", c.spec.Name, version, c.class.Mode, c.spec.Image)
	return nil
}

// restBindPort is the port a JobManager's REST endpoint listens on:
// rest.bind-port if it is one port, else rest.port, else 8081.
func restBindPort(conf map[string]string) int {
	for _, k := range []string{"rest.bind-port", "rest.port"} {
		if p, err := strconv.Atoi(strings.TrimSpace(conf[k])); err == nil && p > 0 {
			return p
		}
	}
	return 8081
}

// mapPath maps a container path (or file: URI) into a mounted host path.
func mapPath(p string, mounts map[string]string) (string, bool) {
	p = strings.TrimPrefix(strings.TrimPrefix(p, "file://"), "file:")
	p = path.Clean(p)
	best := ""
	for mount := range mounts {
		if (p == mount || strings.HasPrefix(p, mount+"/")) && len(mount) > len(best) {
			best = mount
		}
	}
	if best == "" {
		return "", false
	}
	return mounts[best] + strings.TrimPrefix(p, best), true
}

// prepareFake sets up the fake JobManager (cmd/fake-jobmanager) on
// <podIP>:<port>. Started as the Flink image would be, a JobManager pod
// serves rest.port from its mounted configuration, pre-creates the
// application's job ($internal.pipeline.job-id) for standalone-job and
// kubernetes-application, and uses
// the configured savepoint and checkpoint directories; a TaskManager pod is
// an idle process. Otherwise the args are fake-jobmanager flags, with
// --listen forced to the pod IP (a --listen in them only picks the port).
func (c *container) prepareFake(env []string, values, mounts map[string]string, f podFields) error {
	var args []string
	port := 8081
	switch {
	case c.class.Mode == flinkjvm.TaskManager || c.class.Mode == flinkjvm.KubernetesTaskManager:
		c.command = func(ctx context.Context) (*exec.Cmd, error) {
			// PID 1 of its namespace: the kernel delivers the agent's
			// SIGTERM only to a handler (a bare sleep would wait for the
			// grace period's SIGKILL); the trap ends it as a TaskManager
			// JVM ends.
			cmd := exec.Command("sh", "-c", "trap 'exit 143' TERM; sleep infinity & wait")
			cmd.Env = append(os.Environ(), env...)
			return c.inPod(cmd)
		}
		return nil
	case c.class.Mode != "":
		confDir, ok := mounts[confMount(values)]
		if !ok {
			return configError{fmt.Errorf("container %s: no volume mounted at %s (the Flink configuration)", c.spec.Name, confMount(values))}
		}
		conf, err := readAnyFlinkConfig(confDir)
		if err != nil {
			return configError{fmt.Errorf("container %s: %w", c.spec.Name, err)}
		}
		port = restBindPort(conf)
		args = append(args, "--flink-version", fakeFlinkVersion(f.pod, c.spec.Image))
		if id := conf["$internal.pipeline.job-id"]; id != "" && c.class.Mode.IsApplication() {
			args = append(args, "--jobs", id)
		}
		for _, opt := range []struct {
			flag string
			keys []string // new name first, as Flink reads them
		}{
			{"--savepoint-dir", []string{"execution.checkpointing.savepoint-dir", "state.savepoints.dir"}},
			{"--checkpoint-dir", []string{"execution.checkpointing.dir", "state.checkpoints.dir"}},
		} {
			flag := opt.flag
			for _, k := range opt.keys {
				if v := conf[k]; v != "" {
					if host, ok := mapPath(v, mounts); ok {
						args = append(args, flag, host)
					} else if strings.HasPrefix(v, "file:") || strings.HasPrefix(v, "/") {
						args = append(args, flag, strings.TrimPrefix(strings.TrimPrefix(v, "file://"), "file:"))
					}
					break
				}
			}
		}
	default:
		for i := 0; i < len(c.class.Args); i++ {
			a := c.class.Args[i]
			var listen string
			switch {
			case a == "--listen" || a == "-listen":
				if i+1 < len(c.class.Args) {
					listen = c.class.Args[i+1]
					i++
				}
			case strings.HasPrefix(a, "--listen=") || strings.HasPrefix(a, "-listen="):
				listen = a[strings.IndexByte(a, '=')+1:]
			default:
				args = append(args, a)
				continue
			}
			if _, p, ok := strings.Cut(listen, ":"); ok {
				if n, err := strconv.Atoi(p); err == nil && n > 0 {
					port = n
				}
			}
		}
	}
	args = append([]string{"--listen", fmt.Sprintf("%s:%d", f.podIP, port)}, args...)
	c.restURL = fmt.Sprintf("http://%s:%d/config", f.podIP, port)
	c.command = func(ctx context.Context) (*exec.Cmd, error) {
		bin, err := c.w.a.fakeJobManager()
		if err != nil {
			return nil, err
		}
		cmd := exec.Command(bin, args...)
		cmd.Env = append(os.Environ(), env...)
		return c.inPod(cmd)
	}
	return nil
}

// readAnyFlinkConfig reads config.yaml, or flink-conf.yaml when that is the
// only one.
func readAnyFlinkConfig(dir string) (map[string]string, error) {
	versions := flinkjvm.Versions()
	v := versions[len(versions)-1]
	if _, err := os.Stat(filepath.Join(dir, "config.yaml")); err != nil {
		v = "1.18.0" // reads flink-conf.yaml
	}
	return flinkjvm.ReadConfig(dir, v)
}

// start starts the container's goroutine (nothing for an unsupported one).
func (c *container) start() {
	c.startOnce.Do(func() {
		if c.command == nil {
			close(c.done)
			return
		}
		go c.run()
	})
}

// stop ends the container: SIGTERM to its process group, SIGKILL after
// grace; it returns once the processes are gone. Safe to call repeatedly,
// and before start (which then starts nothing).
func (c *container) stop(grace time.Duration) {
	c.mu.Lock()
	if c.ctx.Err() == nil {
		c.grace = grace
	}
	c.mu.Unlock()
	c.cancel()
	c.startOnce.Do(func() { close(c.done) })
	<-c.done
}

func (c *container) isReady() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ready
}

func (c *container) logf(format string, args ...any) {
	c.w.logf("container %s: %s", c.spec.Name, fmt.Sprintf(format, args...))
}

// setState updates the status under the lock and tells the worker.
func (c *container) setState(f func()) {
	c.mu.Lock()
	f()
	c.mu.Unlock()
	c.w.statusChanged()
}

// run starts the process, waits for it and restarts it per the pod's
// restartPolicy, until stopped.
func (c *container) run() {
	defer close(c.done)
	backoff := backoffMin
	for {
		p, err := c.launch()
		if err != nil {
			if c.ctx.Err() != nil {
				return
			}
			c.logf("start failed: %v", err)
			c.setState(func() {
				c.state = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: ReasonStartError, Message: err.Error()}}
			})
		} else {
			exit, stopped := c.wait(p)
			if stopped {
				return
			}
			policy := c.restartPolicy()
			if !restarts(policy, exit) && !(c.killedByProbe(p) && policy != corev1.RestartPolicyNever) {
				return
			}
			if time.Since(p.started) > backoffReset {
				backoff = backoffMin
			}
			c.setState(func() {
				c.last, c.lastLog = c.state, c.curLog // terminated
				c.state = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: ReasonCrashLoopBackOff,
					Message: fmt.Sprintf("back-off %s restarting failed container %s", backoff, c.spec.Name)}}
			})
		}
		select {
		case <-c.ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, backoffMax)
	}
}

func restarts(policy corev1.RestartPolicy, exit int32) bool {
	switch policy {
	case corev1.RestartPolicyNever:
		return false
	case corev1.RestartPolicyOnFailure:
		return exit != 0
	}
	return true
}

// launch prepares and starts one run of the container.
func (c *container) launch() (*proc, error) {
	cmd, err := c.command(c.ctx)
	if err != nil {
		return nil, err
	}
	if c.ctx.Err() != nil {
		return nil, c.ctx.Err()
	}
	c.mu.Lock()
	run := c.restarts // the run's number is its restartCount
	if c.started {
		run++
	}
	c.mu.Unlock()
	out, rl, err := c.createRunLog(run, cmd.Args)
	if err != nil {
		return nil, err
	}
	p, err := startProc(cmd, out)
	if err != nil {
		err = startError(err)
		out.Close()
		os.Remove(rl.path) // the next attempt is this run again
		return nil, err
	}
	if err := c.linkCurrentLog(rl); err != nil {
		c.logf("%v", err)
	}
	if rec := c.w.a.cfg.Recorder; rec != nil {
		if err := rec.Add(c.w.key()+"/"+c.spec.Name, p.pid(), cmd.Args); err != nil {
			c.logf("record: %v", err)
		}
	}
	c.setState(func() {
		if c.started {
			c.restarts++
		}
		c.proc, c.started, c.ready, c.curLog = p, true, false, rl
		c.startupDone = !c.kubeletProbes || c.spec.StartupProbe == nil
		c.id = fmt.Sprintf("local://%d", p.pid())
		c.state = corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(p.started)}}
	})
	c.logf("started (pid %d)", p.pid())
	return p, nil
}

// wait follows a running process until it exits (returns its exit code) or
// the container is stopped (stopped is true once the process is gone).
func (c *container) wait(p *proc) (exit int32, stopped bool) {
	probeCtx, stopProbe := context.WithCancel(c.ctx)
	defer stopProbe()
	switch {
	case c.init: // no probes, never ready while it runs
	case c.kubeletProbes:
		go c.runProbes(probeCtx, p)
	default:
		go c.probe(probeCtx, p)
	}
	select {
	case <-p.done:
	case <-c.ctx.Done():
		c.mu.Lock()
		grace := c.grace
		c.mu.Unlock()
		if err := p.stop(grace); err != nil {
			c.logf("%v", err)
		}
		stopped = true
	}
	// The leader is gone; end whatever it left in its group.
	_ = p.stop(0)
	p.out.Close()
	if rec := c.w.a.cfg.Recorder; rec != nil {
		_ = rec.Remove(p.pid())
	}
	exit = p.exitCode()
	reason := "Completed"
	if exit != 0 {
		reason = "Error"
	}
	c.logf("exited with code %d after %s", exit, time.Since(p.started).Round(time.Millisecond))
	c.setState(func() {
		close(c.curLog.ended) // the output is complete: a following reader stops
		c.ready, c.proc = false, nil
		c.state = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
			ExitCode: exit, Reason: reason, StartedAt: metav1.NewTime(p.started), FinishedAt: metav1.Now(), ContainerID: c.id,
		}}
	})
	c.w.a.markDNS()
	return exit, stopped
}

var probeClient = &http.Client{
	Timeout:   2 * time.Second,
	Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true},
}

// probe maintains readiness while p runs: GET restURL answering 200 (every
// 500ms until ready, then every 5s; restFailures failures in a row make it
// unready), or, without a REST API, alive for aliveReady.
func (c *container) probe(ctx context.Context, p *proc) {
	setReady := func(ready bool) { c.setReady(p, ready) }
	if c.restURL == "" {
		select {
		case <-time.After(aliveReady):
			setReady(true)
		case <-ctx.Done():
		case <-p.done:
		}
		return
	}
	ready, failures := false, 0
	for {
		interval := 500 * time.Millisecond
		if ready {
			interval = 5 * time.Second
		}
		select {
		case <-time.After(interval):
		case <-ctx.Done():
			return
		case <-p.done:
			return
		}
		if restOK(ctx, c.restURL) {
			ready, failures = true, 0
			setReady(true)
		} else if ready {
			if failures++; failures >= restFailures {
				ready = false
				setReady(false)
			}
		}
	}
}

// setReady sets the readiness of run p (nothing once another run is
// current) and, when it changed, tells the status and the hosts files.
func (c *container) setReady(p *proc, ready bool) {
	c.mu.Lock()
	changed := c.ready != ready && c.proc == p
	if changed {
		c.ready = ready
	}
	c.mu.Unlock()
	if changed {
		c.logf("ready=%v after %s", ready, time.Since(p.started).Round(time.Millisecond))
		c.w.statusChanged()
		c.w.a.markDNS()
	}
}

func restOK(ctx context.Context, url string) bool {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return false
	}
	resp, err := probeClient.Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// status is the container's ContainerStatus.
func (c *container) status() corev1.ContainerStatus {
	c.mu.Lock()
	defer c.mu.Unlock()
	running := c.state.Running != nil
	started := running && c.startupDone
	ready := c.ready && running
	if c.init {
		// As the kubelet reports init containers: ready once completed.
		ready = c.state.Terminated != nil && c.state.Terminated.ExitCode == 0
	}
	return corev1.ContainerStatus{
		Name:                 c.spec.Name,
		Image:                c.spec.Image,
		ImageID:              "local://" + c.spec.Image,
		ContainerID:          c.id,
		State:                c.state,
		LastTerminationState: c.last,
		Ready:                ready,
		RestartCount:         c.restarts,
		Started:              &started,
	}
}

// fakeJobManager returns the fake-jobmanager binary, building it the first
// time (go build ./cmd/fake-jobmanager in the operator module, into the
// cache's bin directory).
func (a *Agent) fakeJobManager() (string, error) {
	a.fakeOnce.Do(func() {
		if a.fakeBin != "" {
			return
		}
		// Not ctx: the build must not fail for the pod that happened to
		// trigger it being deleted.
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		a.logf("building ./cmd/fake-jobmanager")
		var dir string
		dir, a.fakeErr = localcluster.BuildCommands(ctx, "./cmd/fake-jobmanager")
		a.fakeBin = filepath.Join(dir, "fake-jobmanager")
	})
	if a.fakeErr != nil {
		return "", a.fakeErr
	}
	if a.fakeBin == "" {
		return "", errors.New("no fake-jobmanager binary")
	}
	return a.fakeBin, nil
}

// guardedRun is the entrypoint the ended-job guard starts now: the
// container's variables are read again (a ConfigMap key the operator wrote
// since the pod started counts), as a kubelet reads them at every
// container start. On any error it keeps what the pod started with.
func (c *container) guardedRun(mode flinkjvm.Mode, args []string) (flinkjvm.Mode, []string) {
	env, err := containerEnv(c.spec, c.pod, c.w.a)
	if err != nil {
		c.w.logf("container %s: reading its variables again: %v", c.spec.Name, err)
		return mode, args
	}
	values := map[string]string{}
	for _, e := range env {
		values[e.Name] = e.Value
	}
	chosen, ended := c.guard.Choose(values)
	cl := Classify(c.spec, c.spec.Command, chosen)
	if cl.Kind != Flink {
		return mode, args
	}
	if ended {
		c.w.logf("container %s: %s", c.spec.Name, c.guard.Message)
	}
	return cl.Mode, cl.Args
}
