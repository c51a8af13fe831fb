package nodeagent

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"

	"github.com/flinkops/flink-operator/e2e/localcluster"
)

func TestClassifyBusybox(t *testing.T) {
	for _, tc := range []struct {
		image         string
		command, args []string
		want          []string
	}{
		{"busybox:1.35.0", []string{"wget", "http://x/a.jar", "-O", "/a/a.jar"}, nil, []string{"wget", "http://x/a.jar", "-O", "/a/a.jar"}},
		{"docker.io/library/busybox:latest", []string{"sh", "-c"}, []string{"echo hi"}, []string{"sh", "-c", "echo hi"}},
		{"busybox", nil, []string{"sleep", "1"}, []string{"sleep", "1"}},                  // no entrypoint: args are the command
		{"registry.example.com:5000/mirror/busybox@sha256:abc", nil, nil, []string{"sh"}}, // CMD ["sh"]
	} {
		c := &corev1.Container{Name: "c", Image: tc.image}
		got := Classify(c, tc.command, tc.args)
		if got.Kind != Busybox || !slices.Equal(got.Args, tc.want) {
			t.Errorf("%s %q %q: %v %q, want busybox %q", tc.image, tc.command, tc.args, got.Kind, got.Args, tc.want)
		}
	}
	for _, image := range []string{"busybox-like:1", "example.com/busyboxes:1", "alpine:3", "flink:1.20"} {
		if IsBusyboxImage(image) {
			t.Errorf("IsBusyboxImage(%q)", image)
		}
	}
}

// TestBusyboxUnsupported: without Config.Busybox (or without mount
// namespaces) a busybox container waits with ReasonImageNotSupported and a
// message that says what is missing.
func TestBusyboxUnsupported(t *testing.T) {
	for _, cfg := range []Config{{}, {NoMountNamespaces: true, Busybox: "/bin/true"}} {
		a := &Agent{cfg: cfg}
		msg := a.busyboxSupport("busybox:1.35.0")
		if msg == "" || !strings.Contains(msg, "busybox") {
			t.Errorf("%+v: %q", cfg, msg)
		}
	}
	if msg := (&Agent{cfg: Config{Busybox: "/x/busybox"}}).busyboxSupport("busybox"); msg != "" {
		t.Errorf("with a binary: %q", msg)
	}
}

func TestLookPath(t *testing.T) {
	dir := t.TempDir()
	exe := filepath.Join(dir, "tool")
	if err := os.WriteFile(exe, nil, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "data"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	env := []string{"A=1", "PATH=/nonexistent:" + dir}
	if got, err := lookPath("tool", env); err != nil || got != exe {
		t.Errorf("lookPath(tool) = %q, %v", got, err)
	}
	if _, err := lookPath("data", env); err == nil {
		t.Error("found a file that is not executable")
	}
	if got, err := lookPath("./rel/x", env); err != nil || got != "./rel/x" {
		t.Errorf("a path with a slash: %q, %v", got, err)
	}
}

// TestBusyboxRoot runs a container of the busybox image's root directly
// (no cluster): busybox's applets in /bin, /etc/hosts the pod's hosts file,
// device nodes, a sticky /tmp, a volume at its mount path, PID 1, the
// hostname, and none of the machine's files.
func TestBusyboxRoot(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("namespaces need root")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	bin, err := localcluster.Busybox(ctx)
	if err != nil {
		t.Fatal(err)
	}
	applets, err := busyboxApplets(bin)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	hostsDir := filepath.Join(dir, "dns")
	vol := filepath.Join(dir, "vol")
	for _, d := range []string{hostsDir, vol} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(hostsDir, "hosts"), []byte("127.100.0.7 bb-pod\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	script := `echo "pid $$"; hostname; cat /etc/hosts; readlink /bin/sh; ls /dev; ls -ld /tmp | cut -c1-10
echo written > /data/out; test -e /lib || echo "no /lib"; test -e /usr/bin/apt-get || echo "no apt-get"; echo "home $HOME"`
	cmd := &exec.Cmd{Path: "sh", Args: []string{"sh", "-c", script}, Env: busyboxImageEnv}
	h, err := inContainerNamespaces(cmd, filepath.Join(dir, "c"), []mountSpec{{Source: vol, Target: "/data"}},
		containerIdentity{Hostname: "bb-pod", HostsDir: hostsDir, Busybox: &busyboxRoot{Binary: bin, Applets: applets}})
	if err != nil {
		t.Fatal(err)
	}
	out, err := h.CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, want := range []string{"pid 1\n", "bb-pod\n127.100.0.7 bb-pod\n", "busybox\n", "null\n", "urandom\n", "drwxrwxrwt\n", "no /lib\n", "no apt-get\n", "home /root\n"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if b, err := os.ReadFile(filepath.Join(vol, "out")); err != nil || string(b) != "written\n" {
		t.Errorf("the volume: %q, %v", b, err)
	}
}

// TestInitStatus: the Initialized condition, the phase and the statuses of
// a pod whose init containers run, failed for good, or completed.
func TestInitStatus(t *testing.T) {
	a, err := New(Config{RESTConfig: &rest.Config{Host: "https://127.0.0.1:1"}, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name        string
		policy      corev1.RestartPolicy
		init        corev1.ContainerState
		initialized bool
		failed      bool
		phase       corev1.PodPhase
		initPolicy  corev1.RestartPolicy
	}{
		{"running", corev1.RestartPolicyAlways, corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}, false, false, corev1.PodPending, corev1.RestartPolicyOnFailure},
		{"back-off", corev1.RestartPolicyOnFailure, corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: ReasonCrashLoopBackOff}}, false, false, corev1.PodPending, corev1.RestartPolicyOnFailure},
		{"failed", corev1.RestartPolicyNever, corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 2, Reason: "Error"}}, false, true, corev1.PodFailed, corev1.RestartPolicyNever},
		{"completed", corev1.RestartPolicyNever, corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed"}}, true, false, corev1.PodPending, corev1.RestartPolicyNever},
	} {
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: tc.name, UID: types.UID("uid-" + tc.name)},
			Spec: corev1.PodSpec{RestartPolicy: tc.policy,
				InitContainers: []corev1.Container{{Name: "setup", Image: "busybox"}},
				Containers:     []corev1.Container{{Name: "main", Image: "busybox"}}},
		}
		w := newPodWorker(a, pod, 1)
		ic, mc := w.baseContainer(&pod.Spec.InitContainers[0]), w.baseContainer(&pod.Spec.Containers[0])
		ic.init, ic.state = true, tc.init
		mc.state = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: ReasonPodInitializing}}
		w.initContainers, w.containers = []*container{ic}, []*container{mc}
		w.initialized, w.initFailed = tc.initialized, tc.failed
		st := w.computeStatus()
		if st.Phase != tc.phase {
			t.Errorf("%s: phase %s, want %s", tc.name, st.Phase, tc.phase)
		}
		if got := ic.restartPolicy(); got != tc.initPolicy {
			t.Errorf("%s: init container's restart policy %s, want %s", tc.name, got, tc.initPolicy)
		}
		if len(st.InitContainerStatuses) != 1 || len(st.ContainerStatuses) != 1 {
			t.Fatalf("%s: statuses %+v", tc.name, st)
		}
		if ready := st.InitContainerStatuses[0].Ready; ready != tc.initialized {
			t.Errorf("%s: init container ready %v", tc.name, ready)
		}
		for _, cond := range st.Conditions {
			if cond.Type != corev1.PodInitialized {
				continue
			}
			if (cond.Status == corev1.ConditionTrue) != tc.initialized {
				t.Errorf("%s: Initialized %+v", tc.name, cond)
			}
			if !tc.initialized && (cond.Reason != "ContainersNotInitialized" || cond.Message != "containers with incomplete status: [setup]") {
				t.Errorf("%s: Initialized %+v", tc.name, cond)
			}
		}
	}
}

// TestSidecarNotRun: an init container with a restartPolicy of its own (a
// sidecar) is named as not supported.
func TestSidecarNotRun(t *testing.T) {
	always := corev1.ContainerRestartPolicyAlways
	if msg := sidecarMessage(&corev1.Container{Name: "proxy", RestartPolicy: &always}); !strings.Contains(msg, "sidecar") {
		t.Errorf("message %q", msg)
	}
	if msg := sidecarMessage(&corev1.Container{Name: "init"}); msg != "" {
		t.Errorf("plain init container: %q", msg)
	}
}
