package nodeagent_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/utils/ptr"

	"github.com/flinkops/flink-operator/e2e/localcluster"
	"github.com/flinkops/flink-operator/e2e/nodeagent"
)

// TestKubectlExec runs `kubectl exec` and `kubectl port-forward` (1.37)
// against one local cluster whose node agent runs host-command pods, a
// busybox pod and a fake JobManager: the API server proxies pods/exec and
// pods/portforward to the agent's kubelet API. exec: stdout and stderr
// apart and the exit code (kubectl exits with it), stdin, a terminal
// (client-go's WebSocket executor, as kubectl -t uses it) with its size,
// the container's mount namespace (a volume at its mountPath, the working
// directory), PID namespace and environment, a busybox container's root,
// `kubectl cp` both ways (tar through exec), a container between restarts
// refused as by a kubelet; `kubectl attach` follows a container's output
// until it ends; port-forward: the fake JobManager's REST API
// through a local port, and an error for a port nothing listens on; `kill
// 1` in a container ends its main process only, which restarts. Which
// protocols arrive at the agent is read from its log, what the API server
// got from kubectl from its metrics.
func TestKubectlExec(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mount namespaces and nsenter need root")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	c, err := localcluster.Start(ctx, localcluster.Options{NodeAgent: true, NodeAgentArgs: []string{"--host-commands"}, Out: testWriter{t}})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if t.Failed() {
			dumpLog(t, c.NodeAgent.LogPath, 150)
		}
		if err := c.Stop(); err != nil {
			t.Error(err)
		}
	}()
	client := kubernetes.NewForConfigOrDie(c.RESTConfig())
	waitFor(t, ctx, time.Minute, "the default ServiceAccount", func() bool {
		_, err := client.CoreV1().ServiceAccounts("default").Get(ctx, "default", metav1.GetOptions{})
		return err == nil
	})

	// PID 1 of its namespace gets SIGTERM only with a handler: the trap.
	const idle = `echo "from the container" > /exec-data/file; trap 'exit 0' TERM; sleep 600 & wait`
	shellPod := func(name string) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: corev1.PodSpec{
				TerminationGracePeriodSeconds: ptr.To[int64](2),
				Volumes:                       []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
				Containers: []corev1.Container{{
					Name: "main", Image: nodeagent.HostCommandImage, Command: []string{"sh", "-c", idle},
					WorkingDir:   "/exec-data",
					Env:          []corev1.EnvVar{{Name: "EXEC_TEST_VAR", Value: "from the pod spec"}},
					VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/exec-data"}},
				}},
			},
		}
	}
	pods := []*corev1.Pod{shellPod("shell"), shellPod("victim"), {
		ObjectMeta: metav1.ObjectMeta{Name: "jm"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "main", Image: fakeImage, Args: []string{"--jobs", "1"},
		}}},
	}, {
		ObjectMeta: metav1.ObjectMeta{Name: "bb"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "main", Image: "busybox:1.35.0", Command: []string{"sh", "-c", "trap 'exit 0' TERM; sleep 600 & wait"},
		}}},
	}, {
		ObjectMeta: metav1.ObjectMeta{Name: "talker"},
		Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			Volumes:       []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
			Containers: []corev1.Container{{
				Name: "main", Image: nodeagent.HostCommandImage, Command: []string{"sh", "-c",
					`i=0; while [ ! -e /exec-data/stop ]; do i=$((i+1)); echo "line $i"; sleep 0.1; done; echo bye >&2`},
				VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/exec-data"}},
			}},
		},
	}, {
		ObjectMeta: metav1.ObjectMeta{Name: "crashing"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "main", Image: nodeagent.HostCommandImage, Command: []string{"sh", "-c", "exit 1"},
		}}},
	}}
	for _, p := range pods {
		if _, err := client.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"shell", "victim", "jm", "bb", "talker"} {
		waitPod(t, ctx, client, name, podReady)
	}
	hostPID := func(pod string) int {
		t.Helper()
		procs := recordedPIDs(t, c, "default/"+pod+"/main")
		if len(procs) != 1 {
			t.Fatalf("agent records %d processes for default/%s/main", len(procs), pod)
		}
		return procs[0].PID
	}

	t.Run("stdout, stderr and exit code", func(t *testing.T) {
		out, errOut, code := kubectl(t, c, nil, "exec", "shell", "--", "sh", "-c", "echo out; echo err >&2; exit 3")
		if out != "out\n" || !strings.HasPrefix(errOut, "err\n") || code != 3 {
			t.Errorf("kubectl exec: stdout %q, stderr %q, exit code %d; want out, err, 3", out, errOut, code)
		}
		if !strings.Contains(errOut, "command terminated with exit code 3") {
			t.Errorf("kubectl exec: stderr %q does not say the exit code", errOut)
		}
		if out, errOut, code := kubectl(t, c, nil, "exec", "shell", "--", "true"); out != "" || errOut != "" || code != 0 {
			t.Errorf("kubectl exec true: %q %q %d", out, errOut, code)
		}
	})

	t.Run("stdin", func(t *testing.T) {
		if out, errOut, code := kubectl(t, c, strings.NewReader("hi\n"), "exec", "-i", "shell", "--", "cat"); out != "hi\n" || code != 0 {
			t.Errorf("echo hi | kubectl exec -i shell -- cat: %q, %q, %d", out, errOut, code)
		}
		in := bytes.Repeat([]byte("0123456789abcdef"), 64<<10)
		if out, errOut, code := kubectl(t, c, bytes.NewReader(in), "exec", "-i", "shell", "--", "wc", "-c"); strings.TrimSpace(out) != "1048576" || code != 0 {
			t.Errorf("1 MiB | kubectl exec -i shell -- wc -c: %q, %q, %d", out, errOut, code)
		}
	})

	t.Run("terminal", func(t *testing.T) {
		// As kubectl 1.37 runs `exec -t`: the WebSocket executor
		// (v5.channel.k8s.io to the API server).
		req := client.CoreV1().RESTClient().Post().Resource("pods").Namespace("default").Name("shell").SubResource("exec").
			VersionedParams(&corev1.PodExecOptions{Container: "main", Stdout: true, TTY: true, Command: []string{"sh", "-c",
				`while [ "$(stty size)" = "0 0" ]; do sleep 0.02; done; tty; stty size; [ -t 0 ] && [ -t 1 ] && echo terminal`}},
				scheme.ParameterCodec)
		e, err := remotecommand.NewWebSocketExecutor(c.RESTConfig(), http.MethodGet, req.URL().String())
		if err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		err = e.StreamWithContext(sctx, remotecommand.StreamOptions{Stdout: &out, Tty: true, TerminalSizeQueue: &sizeQueue{{Width: 120, Height: 33}}})
		lines := strings.Split(strings.TrimRight(strings.ReplaceAll(out.String(), "\r\n", "\n"), "\n"), "\n")
		if err != nil || len(lines) != 3 || !strings.HasPrefix(lines[0], "/dev/pts/") || lines[1] != "33 120" || lines[2] != "terminal" {
			t.Errorf("exec with a terminal: %q, %v; want the terminal's name, 33 120, terminal", out.String(), err)
		}
	})

	t.Run("the container's namespaces and environment", func(t *testing.T) {
		pid := hostPID("shell")
		out, errOut, code := kubectl(t, c, nil, "exec", "shell", "--", "sh", "-c",
			`cat /exec-data/file; pwd; echo "$EXEC_TEST_VAR"; echo "$KUBERNETES_SERVICE_HOST"; readlink /proc/self/ns/mnt; tr '\0' ' ' < /proc/1/cmdline`)
		mnt, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/mnt", pid))
		if err != nil {
			t.Fatal(err)
		}
		want := "from the container\n/exec-data\nfrom the pod spec\n127.0.0.1\n" + mnt + "\nsh -c " + idle + " "
		if out != want || code != 0 {
			t.Errorf("kubectl exec: %q (stderr %q, %d)\nwant %q", out, errOut, code, want)
		}
		if _, err := os.Stat("/exec-data"); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("/exec-data on the machine: %v", err)
		}
	})

	t.Run("busybox image", func(t *testing.T) {
		// The container's root is busybox's: the command is found there,
		// not on the machine.
		out, errOut, code := kubectl(t, c, nil, "exec", "bb", "--", "sh", "-c",
			`[ -e /usr/bin/apt-get ] || echo "no apt-get"; readlink /bin/ls; tr '\0' ' ' < /proc/1/cmdline; echo; exit 5`)
		want := "no apt-get\nbusybox\nsh -c trap 'exit 0' TERM; sleep 600 & wait \n"
		if out != want || code != 5 {
			t.Errorf("kubectl exec bb: %q (stderr %q, exit code %d), want %q and 5", out, errOut, code, want)
		}
	})

	t.Run("kubectl cp", func(t *testing.T) {
		// tar in the container, through exec with stdin and stdout.
		dir := t.TempDir()
		up := filepath.Join(dir, "up")
		if err := os.WriteFile(up, []byte("from the test\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, errOut, code := kubectl(t, c, nil, "cp", up, "shell:/exec-data/up"); code != 0 {
			t.Fatalf("kubectl cp to the pod: %d %s", code, errOut)
		}
		if _, errOut, code := kubectl(t, c, nil, "cp", "shell:/exec-data/file", filepath.Join(dir, "down")); code != 0 {
			t.Fatalf("kubectl cp from the pod: %d %s", code, errOut)
		}
		if b, err := os.ReadFile(filepath.Join(dir, "down")); err != nil || string(b) != "from the container\n" {
			t.Errorf("copied from the pod: %q, %v", b, err)
		}
		if out, _, code := kubectl(t, c, nil, "exec", "shell", "--", "cat", "/exec-data/up"); out != "from the test\n" || code != 0 {
			t.Errorf("copied to the pod: %q, %d", out, code)
		}
	})

	t.Run("attach", func(t *testing.T) {
		// The container's output from the attach on, until it ends.
		actx, stop := context.WithTimeout(ctx, time.Minute)
		defer stop()
		cmd := exec.CommandContext(actx, c.KubectlPath, "attach", "talker")
		cmd.Env = append(os.Environ(), "KUBECONFIG="+c.Kubeconfig, "KUBECACHEDIR="+filepath.Join(c.Dir, "kubectl-cache"))
		var errOut lockedBuffer
		cmd.Stderr = &errOut
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		lines := bufio.NewScanner(stdout)
		if !lines.Scan() || !strings.HasPrefix(lines.Text(), "line ") {
			t.Fatalf("kubectl attach: first line %q; stderr %s", lines.Text(), errOut.String())
		}
		if line, _ := strconv.Atoi(strings.TrimPrefix(lines.Text(), "line ")); line < 2 {
			t.Errorf("kubectl attach: first line %q, want output from the attach on, not the container's first", lines.Text())
		}
		if _, errOut, code := kubectl(t, c, nil, "exec", "talker", "--", "touch", "/exec-data/stop"); code != 0 {
			t.Fatalf("kubectl exec talker -- touch: %d %s", code, errOut)
		}
		last := ""
		for lines.Scan() {
			last = lines.Text()
		}
		if err := cmd.Wait(); err != nil || last != "bye" {
			t.Errorf("kubectl attach: last line %q, %v; stderr %s", last, err, errOut.String())
		}
	})

	t.Run("a container that does not run", func(t *testing.T) {
		// Between its restarts (back-off), as with a kubelet.
		var last string
		waitForf(t, ctx, 30*time.Second, func() string { return "an exec refused, last: " + last }, func() bool {
			_, errOut, code := kubectl(t, c, nil, "exec", "crashing", "--", "true")
			last = fmt.Sprintf("exit code %d, %q", code, errOut)
			return code != 0 && strings.Contains(errOut, `container not found ("main")`)
		})
		t.Log(last)
	})

	t.Run("port-forward", func(t *testing.T) {
		fctx, stop := context.WithCancel(ctx)
		defer stop()
		cmd := exec.CommandContext(fctx, c.KubectlPath, "port-forward", "pod/jm", ":8081", ":8099")
		cmd.Env = append(os.Environ(), "KUBECONFIG="+c.Kubeconfig, "KUBECACHEDIR="+filepath.Join(c.Dir, "kubectl-cache"))
		var errOut lockedBuffer
		cmd.Stderr = &errOut
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		ended := make(chan error, 1)
		defer func() {
			stop()
			<-ended
		}()
		forwarding := regexp.MustCompile(`^Forwarding from 127\.0\.0\.1:(\d+) -> (\d+)$`)
		local := map[string]string{}
		lines := bufio.NewScanner(stdout)
		for len(local) < 2 && lines.Scan() {
			if m := forwarding.FindStringSubmatch(lines.Text()); m != nil {
				local[m[2]] = m[1]
			}
		}
		go func() {
			_, _ = io.Copy(io.Discard, stdout)
			ended <- cmd.Wait()
		}()
		if len(local) < 2 {
			t.Fatalf("kubectl port-forward: ports %v; stderr %s", local, errOut.String())
		}
		for range 2 {
			var conf map[string]any
			getJSON(t, ctx, "http://127.0.0.1:"+local["8081"]+"/config", &conf)
			if conf["flink-version"] == nil {
				t.Errorf("GET /config through the forward: %v", conf)
			}
		}
		// Nothing listens on 8099 in the pod: the agent's error reaches
		// kubectl, which ends, as with a kubelet.
		resp, err := httpClient.Get("http://127.0.0.1:" + local["8099"] + "/")
		if err == nil {
			resp.Body.Close()
			t.Errorf("GET through the forward to a closed port: %s", resp.Status)
		}
		select {
		case err := <-ended:
			ended <- err
			if err == nil || !strings.Contains(errOut.String(), "failed to connect to port 8099 of pod jm") {
				t.Errorf("kubectl port-forward after the error: %v; stderr %s", err, errOut.String())
			}
		case <-time.After(20 * time.Second):
			t.Errorf("kubectl port-forward still running 20s after the error; stderr %s", errOut.String())
		}
	})

	t.Run("kill 1 ends the container's main process only", func(t *testing.T) {
		victim, shell := hostPID("victim"), hostPID("shell")
		// Never the machine's PID 1: only with a PID namespace of the
		// container's own, checked outside and, again, inside.
		ours, err := os.Readlink("/proc/self/ns/pid")
		if err != nil {
			t.Fatal(err)
		}
		theirs, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/pid", victim))
		if err != nil {
			t.Fatal(err)
		}
		if theirs == ours {
			t.Fatalf("the container (host pid %d) shares the machine's PID namespace %s: kill 1 would signal the machine's init", victim, ours)
		}
		out, errOut, code := kubectl(t, c, nil, "exec", "victim", "--", "sh", "-c",
			fmt.Sprintf(`[ "$(readlink /proc/self/ns/pid)" != %q ] && [ "$(readlink /proc/self/ns/pid)" = "$(readlink /proc/1/ns/pid)" ] && kill 1 && echo killed`, ours))
		// The exec's own process goes with the namespace's PID 1: kubectl
		// may see it end before its status.
		t.Logf("kubectl exec victim -- kill 1: %q, %q, exit code %d", out, errOut, code)
		waitFor(t, ctx, 10*time.Second, fmt.Sprintf("host pid %d gone", victim), func() bool {
			return syscall.Kill(victim, 0) != nil
		})
		waitPod(t, ctx, client, "victim", func(p *corev1.Pod) bool {
			cs := p.Status.ContainerStatuses
			return podReady(p) && len(cs) == 1 && cs[0].RestartCount == 1 && cs[0].LastTerminationState.Terminated != nil
		})
		if now := hostPID("victim"); now == victim {
			t.Errorf("victim restarted under the same host pid %d", now)
		}
		if err := syscall.Kill(shell, 0); err != nil {
			t.Errorf("the other pod's process %d: %v", shell, err)
		}
		p, err := client.CoreV1().Pods("default").Get(ctx, "shell", metav1.GetOptions{})
		if err != nil || !podReady(p) || p.Status.ContainerStatuses[0].RestartCount != 0 {
			t.Errorf("the other pod: %v %v", statusOf(p), err)
		}
		if err := syscall.Kill(c.NodeAgent.PID(), 0); err != nil {
			t.Errorf("the agent: %v", err)
		}
		if out, _, code := kubectl(t, c, nil, "exec", "victim", "--", "cat", "/exec-data/file"); out != "from the container\n" || code != 0 {
			t.Errorf("exec in the restarted container: %q, %d", out, code)
		}
	})

	// What the API server sent the agent: SPDY (it translates kubectl's
	// WebSocket, the node declaring no ExtendWebSocketsToKubelet), offering
	// v5 to v1 of channel.k8s.io (the agent's library takes v4).
	log, err := os.ReadFile(c.NodeAgent.LogPath)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"kubelet API: exec default/shell/main [\"cat\"] (stdin true, stdout true, stderr true, tty false; Upgrade: SPDY/3.1; X-Stream-Protocol-Version: v5.channel.k8s.io, v4.channel.k8s.io,",
		"kubelet API: port-forward default/jm (Upgrade: SPDY/3.1; X-Stream-Protocol-Version: portforward.k8s.io",
	} {
		if !strings.Contains(string(log), want) {
			t.Errorf("agent log: no %q", want)
		}
	}
	for _, l := range strings.Split(string(log), "\n") {
		if strings.Contains(l, "kubelet API: exec") || strings.Contains(l, "kubelet API: port-forward") {
			t.Log(l)
		}
	}
	// ... and what it received from kubectl: WebSocket (v5 for exec,
	// SPDY tunnelled in WebSocket for port-forward), which it translated.
	metrics, err := client.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"apiserver_stream_translator_requests_total", "apiserver_stream_tunnel_requests_total"} {
		total := 0.0
		for _, l := range strings.Split(string(metrics), "\n") {
			if strings.HasPrefix(l, name+"{") {
				t.Log(l)
				if v, err := strconv.ParseFloat(l[strings.LastIndexByte(l, ' ')+1:], 64); err == nil {
					total += v
				}
			}
		}
		if total == 0 {
			t.Errorf("API server metrics: no %s", name)
		}
	}
}

// kubectl runs kubectl on c with stdin, returning stdout, stderr and its
// exit code.
func kubectl(t *testing.T, c *localcluster.Cluster, stdin io.Reader, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, c.KubectlPath, args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+c.Kubeconfig, "KUBECACHEDIR="+filepath.Join(c.Dir, "kubectl-cache"))
	var out, errOut bytes.Buffer
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, &out, &errOut
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatalf("kubectl %s: %v", strings.Join(args, " "), err)
	}
	return out.String(), errOut.String(), cmd.ProcessState.ExitCode()
}

// sizeQueue is a TerminalSizeQueue that gives its sizes, then ends.
type sizeQueue []remotecommand.TerminalSize

func (s *sizeQueue) Next() *remotecommand.TerminalSize {
	if len(*s) == 0 {
		return nil
	}
	next := (*s)[0]
	*s = (*s)[1:]
	return &next
}

// lockedBuffer is a bytes.Buffer written by a command while the test reads.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
