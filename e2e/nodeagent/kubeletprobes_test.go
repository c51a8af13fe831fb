package nodeagent_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/flinkops/flink-operator/e2e/nodeagent"
)

// probeServerEnv makes this test binary, run as a host command, the probe
// target of TestKubeletProbes: an HTTP server on the variable's address
// whose GET /<name> answers 200 while <probeDirEnv>/<name> exists and 503
// otherwise, so that the test decides each probe's outcome with files.
const (
	probeServerEnv = "NODEAGENT_TEST_PROBE_SERVER"
	probeDirEnv    = "NODEAGENT_TEST_PROBE_DIR"
)

func init() {
	if addr := os.Getenv(probeServerEnv); addr != "" {
		os.Exit(probeServer(addr, os.Getenv(probeDirEnv)))
	}
}

func probeServer(addr, dir string) int {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		fmt.Println("probe server:", err)
		return 1
	}
	fmt.Println("probe server: listening on", addr)
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM)
	go func() {
		<-term
		// Exit 0: the kubelet restarts a container killed by its liveness
		// probe whatever its exit code (here under OnFailure).
		fmt.Println("probe server: SIGTERM")
		os.Exit(0)
	}()
	err = http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := os.Stat(filepath.Join(dir, filepath.Base(r.URL.Path))); err != nil {
			http.Error(w, "no "+r.URL.Path, http.StatusServiceUnavailable)
		}
	}))
	fmt.Println("probe server:", err)
	return 1
}

// TestKubeletProbes runs host-command pods with the kubelet's probes on an
// agent of a local cluster: a startupProbe holds the container not started
// and the readinessProbe back until it succeeds; the readinessProbe (on a
// named port) makes the pod Ready, unready and Ready again; a failing
// livenessProbe kills the container (SIGTERM first) and it restarts under
// restartPolicy OnFailure although it exits 0; a startupProbe that never
// succeeds kills and restarts its container; a container without probes is
// Ready once started.
func TestKubeletProbes(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mount namespaces need root")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	client, dir := agentOnCluster(t, ctx)
	waitFor(t, ctx, time.Minute, "the default ServiceAccount", func() bool {
		_, err := client.CoreV1().ServiceAccounts("default").Get(ctx, "default", metav1.GetOptions{})
		return err == nil
	})
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	control := t.TempDir()
	file := func(name string, present bool) {
		t.Helper()
		p := filepath.Join(control, name)
		if !present {
			if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
				t.Fatal(err)
			}
			return
		}
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	httpProbe := func(path string, port intstr.IntOrString, failures int32) *corev1.Probe {
		return &corev1.Probe{
			ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: path, Port: port}},
			PeriodSeconds: 1, TimeoutSeconds: 1, SuccessThreshold: 1, FailureThreshold: failures,
		}
	}
	pods := []*corev1.Pod{{
		ObjectMeta: metav1.ObjectMeta{Name: "probed"},
		Spec: corev1.PodSpec{
			RestartPolicy:                 corev1.RestartPolicyOnFailure,
			TerminationGracePeriodSeconds: ptr.To[int64](5),
			Containers: []corev1.Container{{
				Name: "main", Image: nodeagent.HostCommandImage, Command: []string{self},
				Env: []corev1.EnvVar{
					{Name: "POD_IP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.podIP"}}},
					{Name: probeServerEnv, Value: "$(POD_IP):8080"},
					{Name: probeDirEnv, Value: control},
				},
				Ports:          []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}},
				StartupProbe:   httpProbe("/started", intstr.FromString("http"), 60),
				ReadinessProbe: httpProbe("/ready", intstr.FromString("http"), 1),
				LivenessProbe:  httpProbe("/alive", intstr.FromInt32(8080), 2),
			}},
		},
	}, {
		ObjectMeta: metav1.ObjectMeta{Name: "never-started"},
		Spec: corev1.PodSpec{
			TerminationGracePeriodSeconds: ptr.To[int64](1),
			Containers: []corev1.Container{{
				Name: "main", Image: nodeagent.HostCommandImage, Command: []string{"sleep", "600"},
				StartupProbe: &corev1.Probe{
					ProbeHandler:  corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(9)}},
					PeriodSeconds: 1, FailureThreshold: 2,
				},
			}},
		},
	}, {
		ObjectMeta: metav1.ObjectMeta{Name: "no-probes"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			// PID 1 of its namespace: ends on the agent's SIGTERM only
			// through a handler (a bare sleep would hold the agent's stop
			// for the grace period, as on a kubelet).
			Name: "main", Image: nodeagent.HostCommandImage, Command: []string{"sh", "-c", "trap 'exit 0' TERM; sleep 600 & wait"},
		}}},
	}}
	for _, p := range pods {
		if _, err := client.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	main := func(p *corev1.Pod) corev1.ContainerStatus {
		if len(p.Status.ContainerStatuses) != 1 {
			return corev1.ContainerStatus{}
		}
		return p.Status.ContainerStatuses[0]
	}
	started := func(cs corev1.ContainerStatus) bool { return cs.Started != nil && *cs.Started }
	running := func(cs corev1.ContainerStatus) bool { return cs.State.Running != nil }
	defer func() {
		if t.Failed() {
			for _, p := range pods {
				if got, err := client.CoreV1().Pods("default").Get(ctx, p.Name, metav1.GetOptions{}); err == nil {
					dumpLog(t, filepath.Join(dir, "pods", "default_"+p.Name+"_"+string(got.UID), "logs", "main.log"), 20)
				}
			}
		}
	}()

	waitPod(t, ctx, client, "no-probes", func(p *corev1.Pod) bool { return podReady(p) && started(main(p)) })

	// The server answers, but /started does not yet: running, not
	// started, not ready (the readiness probe is held back, /ready would
	// succeed), for a few periods.
	file("ready", true)
	waitPod(t, ctx, client, "probed", func(p *corev1.Pod) bool { return running(main(p)) })
	time.Sleep(3 * time.Second)
	p, err := client.CoreV1().Pods("default").Get(ctx, "probed", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if cs := main(p); started(cs) || cs.Ready || podReady(p) || cs.RestartCount != 0 {
		t.Fatalf("before its startup probe succeeded: %v", statusOf(p))
	}
	file("alive", true)
	file("started", true)
	waitPod(t, ctx, client, "probed", func(p *corev1.Pod) bool { return started(main(p)) && podReady(p) })

	// Readiness follows /ready (failureThreshold 1, period 1 s).
	file("ready", false)
	waitPod(t, ctx, client, "probed", func(p *corev1.Pod) bool { return !podReady(p) && !main(p).Ready && running(main(p)) })
	file("ready", true)
	waitPod(t, ctx, client, "probed", func(p *corev1.Pod) bool { return podReady(p) })
	if p, _ := client.CoreV1().Pods("default").Get(ctx, "probed", metav1.GetOptions{}); main(p).RestartCount != 0 {
		t.Fatalf("readiness changes restarted the container: %v", statusOf(p))
	}

	// Liveness: two failures in a row kill it; it exits 0 on SIGTERM and
	// still restarts (OnFailure). It is alive again once restarted.
	file("alive", false)
	// Alive again as soon as the kill is seen (within the 1 s back-off
	// before the restart), so that the next run is not killed as well.
	waitPod(t, ctx, client, "probed", func(p *corev1.Pod) bool {
		cs := main(p)
		return cs.LastTerminationState.Terminated != nil || cs.State.Terminated != nil || cs.RestartCount >= 1
	})
	file("alive", true)
	waitPod(t, ctx, client, "probed", func(p *corev1.Pod) bool { return podReady(p) && running(main(p)) })
	p, _ = client.CoreV1().Pods("default").Get(ctx, "probed", metav1.GetOptions{})
	if last := main(p).LastTerminationState.Terminated; last == nil || last.ExitCode != 0 || main(p).RestartCount != 1 {
		t.Errorf("after the liveness probe's kill: %v", statusOf(p))
	}
	b, err := os.ReadFile(filepath.Join(dir, "pods", "default_probed_"+string(p.UID), "logs", "main", "0.log"))
	if err != nil || !strings.Contains(string(b), "probe server: SIGTERM") {
		t.Errorf("run 0 did not get SIGTERM (%v):\n%s", err, b)
	}

	// A startup probe that never succeeds: killed after two failures,
	// restarted (Always), never started nor ready.
	waitPod(t, ctx, client, "never-started", func(p *corev1.Pod) bool { return main(p).RestartCount >= 1 })
	p, _ = client.CoreV1().Pods("default").Get(ctx, "never-started", metav1.GetOptions{})
	if cs := main(p); started(cs) || cs.Ready || podReady(p) || cs.LastTerminationState.Terminated == nil {
		t.Errorf("startup probe failing: %v", statusOf(p))
	}
}
