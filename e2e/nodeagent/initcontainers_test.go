package nodeagent_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/flinkops/flink-operator/e2e/localcluster"
)

// The scripts below write $$$$ for the shell's $$: the kubelet's expansion
// of command and args turns $$ into $.

// idleScript ends on SIGTERM (a trap: the shell is PID 1 of its namespace,
// which gets only the signals it handles) and otherwise waits.
const idleScript = `trap 'echo TERM received; exit 7' TERM; while :; do sleep 1 & wait $!; done`

// TestInitContainersBusyboxPIDNamespace runs pods of the busybox image on
// the agent localcluster starts (with the busybox it fetches), sharing one
// cluster:
//   - init containers run in order before the container, upstream's
//     artifacts-fetcher (busybox wget from a local HTTP server into an
//     emptyDir) first; the container reads the file at its own mount path,
//     is PID 1 of its namespace and sees busybox's root, not the machine's;
//     `kubectl logs -c` reads an init container;
//   - a failing init container under restartPolicy Never fails the pod
//     (kubectl: Init:Error), under Always it restarts with back-off
//     (Init:CrashLoopBackOff); the container never starts;
//   - `kill 1` from a second process in a container's PID namespace
//     (nsenter) ends that container's main process only: its host pid is
//     gone, the container restarts, another pod's process and the agent
//     live on.
func TestInitContainersBusyboxPIDNamespace(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("namespaces need root")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	c, err := localcluster.Start(ctx, localcluster.Options{NodeAgent: true, Out: testWriter{t}})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if t.Failed() {
			dumpLog(t, c.NodeAgent.LogPath, 120)
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
	f := &podFixture{ctx: ctx, c: c, client: client}
	// Parallel subtests of a group: they end before the cluster stops.
	t.Run("pods", f.run)
}

// podFixture is the cluster TestInitContainersBusyboxPIDNamespace's pods
// share.
type podFixture struct {
	ctx    context.Context
	c      *localcluster.Cluster
	client kubernetes.Interface
}

func (f *podFixture) create(t *testing.T, p *corev1.Pod) {
	t.Helper()
	p.Spec.TerminationGracePeriodSeconds = ptr.To[int64](2)
	if _, err := f.client.CoreV1().Pods("default").Create(f.ctx, p, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func busybox(name string, script string, mounts ...corev1.VolumeMount) corev1.Container {
	return corev1.Container{Name: name, Image: "busybox:1.35.0", Command: []string{"sh", "-c", script}, VolumeMounts: mounts}
}

// logs is kubectl logs pod -c container (through the agent's kubelet API).
func (f *podFixture) logs(t *testing.T, pod, container string) string {
	t.Helper()
	out, err := f.c.Kubectl("logs", pod, "-c", container)
	if err != nil {
		t.Fatalf("kubectl logs %s -c %s: %v", pod, container, err)
	}
	return out
}

// kubectlStatus is the STATUS column of kubectl get pod.
func (f *podFixture) kubectlStatus(pod string) string {
	out, _ := f.c.Kubectl("get", "pod", pod, "--no-headers")
	if fields := strings.Fields(out); len(fields) >= 3 {
		return fields[2]
	}
	return out
}

// neverStarted checks that pod's only container never ran.
func neverStarted(t *testing.T, p *corev1.Pod) {
	t.Helper()
	if len(p.Status.ContainerStatuses) != 1 {
		t.Fatalf("container statuses: %v", statusOf(p))
	}
	cs := p.Status.ContainerStatuses[0]
	if cs.State.Waiting == nil || cs.State.Waiting.Reason != "PodInitializing" || cs.RestartCount != 0 || cs.ContainerID != "" {
		t.Errorf("the container ran or waits for something else: %v", statusOf(p))
	}
}

func (f *podFixture) run(t *testing.T) {
	ctx, c, client := f.ctx, f.c, f.client
	t.Run("init containers in order", func(t *testing.T) {
		t.Parallel()
		jar := fmt.Sprintf("PK fake jar %d", time.Now().UnixNano())
		var requests atomic.Int32
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != "/some.jar" {
				http.NotFound(w, r)
				return
			}
			requests.Add(1)
			fmt.Fprint(w, jar)
		}))
		defer srv.Close()
		artifacts := func(path string) corev1.VolumeMount {
			return corev1.VolumeMount{Name: "flink-artifact", MountPath: path}
		}
		f.create(t, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "init-order"},
			Spec: corev1.PodSpec{
				Volumes: []corev1.Volume{{Name: "flink-artifact", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
				InitContainers: []corev1.Container{{
					// As in upstream's e2e data.
					Name:            "artifacts-fetcher",
					Image:           "busybox:1.35.0",
					ImagePullPolicy: corev1.PullIfNotPresent,
					Command:         []string{"wget", srv.URL + "/some.jar", "-O", "/flink-artifact/myjob.jar"},
					VolumeMounts:    []corev1.VolumeMount{artifacts("/flink-artifact")},
				}, {
					// Runs after the fetcher: fails without its file.
					Name:         "second",
					Image:        "docker.io/library/busybox:latest",
					Command:      []string{"sh", "-c", "test -s /in/myjob.jar && echo second > /in/order && echo second done"},
					VolumeMounts: []corev1.VolumeMount{artifacts("/in")},
				}},
				Containers: []corev1.Container{busybox("main", `cat /artifacts/myjob.jar; echo; cat /artifacts/order
echo "pid $$$$"; tr '\0' ' ' < /proc/1/cmdline; echo
echo "wget is $(readlink /bin/wget)"; ls /; ls /usr/bin | wc -l
`+idleScript, artifacts("/artifacts"))},
			},
		})
		var pod *corev1.Pod
		waitPod(t, ctx, client, "init-order", func(p *corev1.Pod) bool {
			pod = p
			return p.Status.Phase == corev1.PodRunning && len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].State.Running != nil
		})
		inits := pod.Status.InitContainerStatuses
		if len(inits) != 2 {
			t.Fatalf("init container statuses: %v", statusOf(pod))
		}
		for _, cs := range inits {
			if term := cs.State.Terminated; term == nil || term.ExitCode != 0 || term.Reason != "Completed" || !cs.Ready || cs.RestartCount != 0 {
				t.Errorf("init container %s: %+v", cs.Name, cs)
			}
		}
		main := pod.Status.ContainerStatuses[0]
		if f1, s2 := inits[0].State.Terminated.FinishedAt, inits[1].State.Terminated.StartedAt; s2.Before(&f1) {
			t.Errorf("second init container started %s, before the first finished %s", s2, f1)
		}
		if f2, s := inits[1].State.Terminated.FinishedAt, main.State.Running.StartedAt; s.Before(&f2) {
			t.Errorf("the container started %s, before the init containers finished %s", s, f2)
		}
		initialized := false
		for _, cond := range pod.Status.Conditions {
			if cond.Type == corev1.PodInitialized {
				initialized = cond.Status == corev1.ConditionTrue
			}
		}
		if !initialized {
			t.Errorf("not Initialized: %v", statusOf(pod))
		}
		if n := requests.Load(); n != 1 {
			t.Errorf("the jar was fetched %d times", n)
		}
		if out := f.logs(t, "init-order", "artifacts-fetcher"); !strings.Contains(out, "Connecting to 127.0.0.1") {
			t.Errorf("kubectl logs -c artifacts-fetcher:\n%s", out)
		}
		if out := f.logs(t, "init-order", "second"); !strings.Contains(out, "second done") {
			t.Errorf("kubectl logs -c second:\n%s", out)
		}
		var out string
		waitFor(t, ctx, 10*time.Second, "the container's output", func() bool {
			out = f.logs(t, "init-order", "main")
			return strings.Contains(out, "wget is ")
		})
		for _, want := range []string{jar + "\nsecond\n", "pid 1\n", "sh -c cat /artifacts/myjob.jar", "wget is busybox\n", "\nartifacts\n", "\nbin\n"} {
			if !strings.Contains(out, want) {
				t.Errorf("the container's output lacks %q:\n%s", want, out)
			}
		}
		// busybox's root, not the machine's (which has /lib, /usr/bin/apt-get).
		for _, machine := range []string{"\nlib\n", "\nopt\n", "\nsys\n"} {
			if strings.Contains(out, machine) {
				t.Errorf("the container sees the machine's %q:\n%s", strings.TrimSpace(machine), out)
			}
		}
	})

	t.Run("init fails with restartPolicy Never", func(t *testing.T) {
		t.Parallel()
		f.create(t, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "init-never"},
			Spec: corev1.PodSpec{
				RestartPolicy:  corev1.RestartPolicyNever,
				InitContainers: []corev1.Container{busybox("setup", "echo setting up; exit 3")},
				Containers:     []corev1.Container{busybox("main", "echo main ran")},
			},
		})
		var pod *corev1.Pod
		waitPod(t, ctx, client, "init-never", func(p *corev1.Pod) bool { pod = p; return p.Status.Phase == corev1.PodFailed })
		if len(pod.Status.InitContainerStatuses) != 1 {
			t.Fatalf("init container statuses: %v", statusOf(pod))
		}
		if cs := pod.Status.InitContainerStatuses[0]; cs.State.Terminated == nil || cs.State.Terminated.ExitCode != 3 ||
			cs.State.Terminated.Reason != "Error" || cs.RestartCount != 0 {
			t.Errorf("init container: %+v", cs)
		}
		neverStarted(t, pod)
		if got := f.kubectlStatus("init-never"); got != "Init:Error" {
			t.Errorf("kubectl get pod: status %q, want Init:Error", got)
		}
		if out := f.logs(t, "init-never", "setup"); !strings.Contains(out, "setting up") {
			t.Errorf("kubectl logs -c setup:\n%s", out)
		}
		time.Sleep(2 * time.Second) // nothing more happens
		pod, _ = client.CoreV1().Pods("default").Get(ctx, "init-never", metav1.GetOptions{})
		neverStarted(t, pod)
		if cs := pod.Status.InitContainerStatuses[0]; cs.RestartCount != 0 || pod.Status.Phase != corev1.PodFailed {
			t.Errorf("after failing: %v", statusOf(pod))
		}
	})

	t.Run("init fails with restartPolicy Always", func(t *testing.T) {
		t.Parallel()
		f.create(t, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "init-always"},
			Spec: corev1.PodSpec{
				InitContainers: []corev1.Container{busybox("setup", "echo attempt; exit 1")},
				Containers:     []corev1.Container{busybox("main", idleScript)},
			},
		})
		seen := map[string]bool{}
		var pod *corev1.Pod
		waitPod(t, ctx, client, "init-always", func(p *corev1.Pod) bool {
			pod = p
			seen[f.kubectlStatus("init-always")] = true
			return len(p.Status.InitContainerStatuses) == 1 && p.Status.InitContainerStatuses[0].RestartCount >= 2 &&
				seen["Init:CrashLoopBackOff"]
		})
		cs := pod.Status.InitContainerStatuses[0]
		if last := cs.LastTerminationState.Terminated; last == nil || last.ExitCode != 1 {
			t.Errorf("init container's last state: %+v", cs)
		}
		if pod.Status.Phase != corev1.PodPending {
			t.Errorf("phase %s, want Pending", pod.Status.Phase)
		}
		neverStarted(t, pod)
	})

	t.Run("kill 1 inside ends the container only", func(t *testing.T) {
		t.Parallel()
		for _, name := range []string{"pid1", "bystander"} {
			f.create(t, &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: name},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{busybox("main", `echo "pid $$$$"; `+idleScript)}},
			})
		}
		hostPID := func(name string) int {
			t.Helper()
			var pid int
			waitPod(t, ctx, client, name, func(p *corev1.Pod) bool {
				if len(p.Status.ContainerStatuses) != 1 || p.Status.ContainerStatuses[0].State.Running == nil {
					return false
				}
				procs := recordedPIDs(t, c, "default/"+name+"/main")
				if len(procs) != 1 {
					return false
				}
				pid = procs[0].PID
				// The status names the same process.
				return p.Status.ContainerStatuses[0].ContainerID == "local://"+strconv.Itoa(pid)
			})
			return pid
		}
		pid, other := hostPID("pid1"), hostPID("bystander")
		// From the machine: the container's process is PID 1 of its namespace.
		status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(status), fmt.Sprintf("NSpid:\t%d\t1\n", pid)) {
			t.Errorf("host pid %d is not PID 1 of a namespace of its own:\n%s", pid, status)
		}
		// A second process in the container's namespaces, as kubectl exec
		// runs one: it is not PID 1, sees the container's command as PID 1,
		// and kill 1 ends that.
		cmd := exec.CommandContext(ctx, "nsenter", "--target", strconv.Itoa(pid), "--pid", "--mount", "--root", "--wd=/",
			"/bin/sh", "-c", `echo "inner $$"; tr '\0' ' ' < /proc/1/cmdline; echo; kill 1; sleep 5`)
		out, err := cmd.CombinedOutput()
		t.Logf("nsenter: %v\n%s", err, out)
		if !strings.Contains(string(out), "sh -c echo \"pid $$\"; trap") || strings.Contains(string(out), "inner 1\n") || !strings.Contains(string(out), "inner ") {
			t.Errorf("the process in the namespace saw:\n%s", out)
		}
		var pod *corev1.Pod
		waitPod(t, ctx, client, "pid1", func(p *corev1.Pod) bool {
			pod = p
			return len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].RestartCount == 1 &&
				p.Status.ContainerStatuses[0].State.Running != nil
		})
		if last := pod.Status.ContainerStatuses[0].LastTerminationState.Terminated; last == nil || last.ExitCode != 7 {
			t.Errorf("last state: %v", statusOf(pod))
		}
		if err := syscall.Kill(pid, 0); err == nil {
			t.Errorf("host pid %d still exists", pid)
		}
		if newPID := hostPID("pid1"); newPID == pid {
			t.Errorf("restarted with the same host pid %d", pid)
		}
		if err := syscall.Kill(other, 0); err != nil || hostPID("bystander") != other {
			t.Errorf("the other pod's process %d: %v", other, err)
		}
		select {
		case <-c.NodeAgent.Done():
			t.Errorf("the node agent exited: %v", c.NodeAgent.Err())
		default:
		}
		p, _ := client.CoreV1().Pods("default").Get(ctx, "bystander", metav1.GetOptions{})
		if cs := p.Status.ContainerStatuses[0]; cs.RestartCount != 0 {
			t.Errorf("the other pod restarted: %v", statusOf(p))
		}
	})
}
