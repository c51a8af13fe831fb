package nodeagent_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	flinkjvm "github.com/flinkops/flink-operator/e2e/flink"
	"github.com/flinkops/flink-operator/e2e/localcluster"
	"github.com/flinkops/flink-operator/e2e/nodeagent"
	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/cluster"
	"github.com/flinkops/flink-operator/pkg/config"
)

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

const fakeImage = "flinkops/fake-jobmanager:latest"

// TestFakeJobManagerPods runs the node agent in a local cluster and checks
// the fake-jobmanager flavour (a Deployment of 20 pods gets Ready quickly,
// each serving the fake REST API on its own pod IP), a fake Flink cluster
// built by pkg/cluster, unsupported images, restart policies, deletion, and
// that no process outlives the cluster.
func TestFakeJobManagerPods(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	c, err := localcluster.Start(ctx, localcluster.Options{NodeAgent: true, Out: testWriter{t}})
	if err != nil {
		t.Fatal(err)
	}
	stopped := false
	defer func() {
		if !stopped {
			if t.Failed() {
				dumpLog(t, c.NodeAgent.LogPath, 100)
			}
			c.Stop()
		}
	}()
	client := kubernetes.NewForConfigOrDie(c.RESTConfig())
	waitFor(t, ctx, time.Minute, "the default ServiceAccount", func() bool {
		_, err := client.CoreV1().ServiceAccounts("default").Get(ctx, "default", metav1.GetOptions{})
		return err == nil
	})
	node, err := client.CoreV1().Nodes().Get(ctx, localcluster.NodeAgentNode, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !nodeReady(node) {
		t.Fatalf("node %s not Ready: %+v", node.Name, node.Status.Conditions)
	}

	// NODEAGENT_FAKE_PODS=300 measures the scale-test flavour.
	n := 20
	if v, err := strconv.Atoi(os.Getenv("NODEAGENT_FAKE_PODS")); err == nil && v > 0 {
		n = v
	}
	t.Run(fmt.Sprintf("%d fake JobManagers", n), func(t *testing.T) {
		begin := time.Now()
		d := &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Name: "fakes"},
			Spec: appsv1.DeploymentSpec{
				Replicas: ptr.To(int32(n)),
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "fakes"}},
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "fakes"}},
					Spec: corev1.PodSpec{Containers: []corev1.Container{{
						Name: "jm", Image: fakeImage, Args: []string{"--jobs", "2", "--flink-version", "1.20"},
					}}},
				},
			},
		}
		if _, err := client.AppsV1().Deployments("default").Create(ctx, d, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		var pods []corev1.Pod
		waitFor(t, ctx, 5*time.Minute, fmt.Sprintf("%d ready pods", n), func() bool {
			pods = readyPods(t, ctx, client, "app=fakes")
			return len(pods) == n
		})
		t.Logf("%d fake JobManager pods Ready %s after the Deployment was created", n, time.Since(begin).Round(time.Millisecond))
		ips := map[string]bool{}
		for _, p := range pods {
			if ips[p.Status.PodIP] || !strings.HasPrefix(p.Status.PodIP, "127.") {
				t.Errorf("pod %s: IP %q duplicate or not loopback", p.Name, p.Status.PodIP)
			}
			ips[p.Status.PodIP] = true
			var ov struct {
				Jobs []struct {
					State string `json:"state"`
				} `json:"jobs"`
			}
			getJSON(t, ctx, "http://"+p.Status.PodIP+":8081/jobs/overview", &ov)
			if len(ov.Jobs) != 2 || ov.Jobs[0].State != "RUNNING" {
				t.Errorf("pod %s: /jobs/overview = %+v", p.Name, ov)
			}
			if p.Spec.NodeName != localcluster.NodeAgentNode || p.Status.Phase != corev1.PodRunning || p.Status.StartTime == nil {
				t.Errorf("pod %s: node %q phase %s", p.Name, p.Spec.NodeName, p.Status.Phase)
			}
		}
		dep, err := client.AppsV1().Deployments("default").Get(ctx, "fakes", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		waitFor(t, ctx, time.Minute, "Deployment fakes available", func() bool {
			dep, _ = client.AppsV1().Deployments("default").Get(ctx, "fakes", metav1.GetOptions{})
			return dep != nil && dep.Status.AvailableReplicas == int32(n)
		})
		pids := recordedPIDs(t, c, "default/fakes-")
		if len(pids) != n {
			t.Errorf("agent records %d fake processes, want %d", len(pids), n)
		}
		var total int64
		for _, p := range pids {
			rss, _ := flinkjvm.ProcessRSS(p.PID)
			total += rss
		}
		agentRSS, _ := flinkjvm.ProcessRSS(c.NodeAgent.PID())
		t.Logf("RSS: %d fake JobManagers %d MiB in all (%.1f MiB each), node agent %d MiB",
			n, total>>20, float64(total)/float64(n)/(1<<20), agentRSS>>20)

		// Scaling down deletes pods: their processes end, the objects go.
		if _, err := client.AppsV1().Deployments("default").Patch(ctx, "fakes", types.MergePatchType,
			[]byte(`{"spec":{"replicas":5}}`), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		begin = time.Now()
		waitFor(t, ctx, 3*time.Minute, "5 pods left", func() bool {
			l, err := client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "app=fakes"})
			return err == nil && len(l.Items) == 5
		})
		t.Logf("scaled %d -> 5 in %s", n, time.Since(begin).Round(time.Millisecond))
		alive := 0
		for _, p := range pids {
			if p.Alive() {
				alive++
			}
		}
		if alive != 5 {
			t.Errorf("%d of the %d fake processes alive after scaling to 5", alive, n)
		}
	})

	t.Run("fake Flink cluster from pkg/cluster", func(t *testing.T) {
		const jobID = "0123456789abcdef0123456789abcdef"
		fd := &v1beta1.FlinkDeployment{
			ObjectMeta: metav1.ObjectMeta{Name: "fake-app", Namespace: "default", UID: types.UID("fd-uid")},
			Spec: v1beta1.FlinkDeploymentSpec{
				Image:        fakeImage,
				FlinkVersion: v1beta1.FlinkVersion1_20,
				Mode:         v1beta1.DeploymentModeStandalone,
				Job: &v1beta1.JobSpec{
					JarURI:      "local:///opt/flink/usrlib/testjob.jar",
					Parallelism: ptr.To[int32](1),
					UpgradeMode: v1beta1.UpgradeModeSavepoint,
				},
			},
		}
		objs, err := cluster.Build(cluster.Input{Deployment: fd, Spec: fd.Spec, OperatorConfig: config.Defaults(), JobID: jobID})
		if err != nil {
			t.Fatal(err)
		}
		createCluster(t, ctx, client, objs)
		begin := time.Now()
		var jm []corev1.Pod
		waitFor(t, ctx, time.Minute, "a ready fake JobManager", func() bool {
			jm = readyPods(t, ctx, client, cluster.JobManagerSelector(cluster.Standalone, "fake-app"))
			return len(jm) == 1
		})
		waitFor(t, ctx, time.Minute, "a ready fake TaskManager", func() bool {
			return len(readyPods(t, ctx, client, cluster.TaskManagerSelector(cluster.Standalone, "fake-app"))) == 1
		})
		t.Logf("fake application cluster ready %s after creation", time.Since(begin).Round(time.Millisecond))
		var job struct {
			ID    string `json:"jid"`
			State string `json:"state"`
		}
		getJSON(t, ctx, fmt.Sprintf("http://%s:8081/jobs/%s", jm[0].Status.PodIP, jobID), &job)
		if job.State != "RUNNING" {
			t.Errorf("job %s: %+v", jobID, job)
		}
	})

	t.Run("unsupported image and restart policies", func(t *testing.T) {
		mk := func(name, image string, policy corev1.RestartPolicy, args ...string) {
			pod := &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: name},
				Spec: corev1.PodSpec{
					RestartPolicy: policy,
					Containers:    []corev1.Container{{Name: "main", Image: image, Args: args}},
				},
			}
			if _, err := client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		mk("nginx", "nginx:1.27", corev1.RestartPolicyAlways)
		mk("bad-flag-never", fakeImage, corev1.RestartPolicyNever, "--no-such-flag")
		mk("bad-flag-always", fakeImage, corev1.RestartPolicyAlways, "--no-such-flag")

		waitPod(t, ctx, client, "nginx", func(p *corev1.Pod) bool {
			cs := p.Status.ContainerStatuses
			return len(cs) == 1 && cs[0].State.Waiting != nil && cs[0].State.Waiting.Reason == nodeagent.ReasonImageNotSupported &&
				p.Status.Phase == corev1.PodPending && !podReady(p)
		})
		waitPod(t, ctx, client, "bad-flag-never", func(p *corev1.Pod) bool {
			cs := p.Status.ContainerStatuses
			return p.Status.Phase == corev1.PodFailed && len(cs) == 1 && cs[0].State.Terminated != nil &&
				cs[0].State.Terminated.ExitCode == 2 && cs[0].RestartCount == 0
		})
		waitPod(t, ctx, client, "bad-flag-always", func(p *corev1.Pod) bool {
			cs := p.Status.ContainerStatuses
			return p.Status.Phase == corev1.PodRunning && len(cs) == 1 && cs[0].RestartCount >= 2 &&
				cs[0].LastTerminationState.Terminated != nil && cs[0].LastTerminationState.Terminated.ExitCode == 2
		})
		p, _ := client.CoreV1().Pods("default").Get(ctx, "nginx", metav1.GetOptions{})
		t.Logf("nginx: %s", p.Status.ContainerStatuses[0].State.Waiting.Message)

		// Deleting pods (gracefully) removes them: the agent finishes the
		// deletion as a kubelet does.
		for _, name := range []string{"nginx", "bad-flag-never", "bad-flag-always"} {
			if err := client.CoreV1().Pods("default").Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		waitFor(t, ctx, time.Minute, "deleted pods gone", func() bool {
			for _, name := range []string{"nginx", "bad-flag-never", "bad-flag-always"} {
				if _, err := client.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
					return false
				}
			}
			return true
		})
	})

	// Stopping the cluster stops the agent, which stops every process.
	pids := recordedPIDs(t, c, "")
	if len(pids) == 0 {
		t.Fatal("the agent records no processes")
	}
	begin := time.Now()
	stopped = true
	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	t.Logf("cluster with %d agent processes stopped in %s", len(pids), time.Since(begin).Round(time.Millisecond))
	for _, p := range pids {
		if p.Alive() {
			t.Errorf("%s (pid %d) alive after Stop", p.Name, p.PID)
		}
	}
}

func dumpLog(t *testing.T, path string, lines int) {
	data, err := os.ReadFile(path)
	if err != nil {
		return
	}
	all := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(all) > lines {
		all = all[len(all)-lines:]
	}
	t.Logf("--- last lines of %s\n%s", path, strings.Join(all, "\n"))
}

func readyPods(t *testing.T, ctx context.Context, client kubernetes.Interface, selector string) []corev1.Pod {
	l, err := client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		t.Fatal(err)
	}
	var out []corev1.Pod
	for _, p := range l.Items {
		if podReady(&p) && p.DeletionTimestamp == nil {
			out = append(out, p)
		}
	}
	return out
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func waitPod(t *testing.T, ctx context.Context, client kubernetes.Interface, name string, ok func(*corev1.Pod) bool) {
	t.Helper()
	var last *corev1.Pod
	waitForf(t, ctx, time.Minute, func() string { return fmt.Sprintf("pod %s: last status %+v", name, statusOf(last)) }, func() bool {
		p, err := client.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false
		}
		last = p
		return ok(p)
	})
}

func statusOf(p *corev1.Pod) any {
	if p == nil {
		return nil
	}
	b, _ := json.Marshal(p.Status)
	return string(b)
}

func recordedPIDs(t *testing.T, c *localcluster.Cluster, prefix string) []localcluster.RecordedProcess {
	t.Helper()
	_, procs, err := localcluster.ReadRecord(c.NodeAgentRecord)
	if err != nil {
		t.Fatal(err)
	}
	var out []localcluster.RecordedProcess
	for _, p := range procs {
		if strings.HasPrefix(p.Name, prefix) {
			out = append(out, p)
		}
	}
	return out
}

func createCluster(t *testing.T, ctx context.Context, client kubernetes.Interface, objs *cluster.Cluster) {
	t.Helper()
	ns := objs.ConfigMap.Namespace
	// No FlinkDeployment exists: drop the owner references, or the garbage
	// collector would delete the objects of a missing owner.
	// A native cluster has no TaskManager Deployment, and a pod template
	// ConfigMap only with a TaskManager pod template.
	metas := []*metav1.ObjectMeta{&objs.ConfigMap.ObjectMeta, &objs.JobManager.ObjectMeta, &objs.RPCService.ObjectMeta, &objs.RESTService.ObjectMeta}
	configMaps := []*corev1.ConfigMap{objs.ConfigMap}
	deployments := []*appsv1.Deployment{objs.JobManager}
	if objs.TaskManager != nil {
		metas = append(metas, &objs.TaskManager.ObjectMeta)
		deployments = append(deployments, objs.TaskManager)
	}
	if objs.PodTemplateConfigMap != nil {
		metas = append(metas, &objs.PodTemplateConfigMap.ObjectMeta)
		configMaps = append(configMaps, objs.PodTemplateConfigMap)
	}
	for _, m := range metas {
		m.OwnerReferences = nil
	}
	for _, cm := range configMaps {
		if _, err := client.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, s := range objs.Services() {
		if _, err := client.CoreV1().Services(ns).Create(ctx, s, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range deployments {
		if _, err := client.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

var httpClient = &http.Client{Timeout: 5 * time.Second}

func getJSON(t *testing.T, ctx context.Context, url string, v any) {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	resp, err := httpClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: HTTP %d", url, resp.StatusCode)
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
}

// agentOnCluster starts a local control plane and an in-process node agent
// (host commands allowed) in a directory of its own, for the rest of the
// test: the agent stops before the cluster, and its error fails the test.
func agentOnCluster(t *testing.T, ctx context.Context) (client kubernetes.Interface, dir string) {
	t.Helper()
	c, err := localcluster.Start(ctx, localcluster.Options{Out: testWriter{t}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Stop() })
	dir = t.TempDir()
	agent, err := nodeagent.New(nodeagent.Config{RESTConfig: c.RESTConfig(), Dir: dir, Log: testWriter{t}, HostCommands: true})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- agent.Run(runCtx, nil) }()
	t.Cleanup(func() {
		stop()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	return kubernetes.NewForConfigOrDie(c.RESTConfig()), dir
}

func waitFor(t *testing.T, ctx context.Context, timeout time.Duration, what string, ok func() bool) {
	t.Helper()
	waitForf(t, ctx, timeout, func() string { return what }, ok)
}

func waitForf(t *testing.T, ctx context.Context, timeout time.Duration, what func() string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !ok() {
		if time.Now().After(deadline) || ctx.Err() != nil {
			t.Fatalf("timed out after %s waiting for %s", timeout, what())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestAgentInProcess runs the agent as a library (in this process, so that
// `go test -race` checks it) against a control plane without the agent
// child process: fake pods start, become Ready, get deleted; Run returns
// after stopping everything.
func TestAgentInProcess(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	c, err := localcluster.Start(ctx, localcluster.Options{Out: testWriter{t}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	client := kubernetes.NewForConfigOrDie(c.RESTConfig())
	agent, err := nodeagent.New(nodeagent.Config{RESTConfig: c.RESTConfig(), Dir: t.TempDir(), Log: testWriter{t}})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	ready := make(chan struct{})
	done := make(chan error, 1)
	go func() { done <- agent.Run(runCtx, func() { close(ready) }) }()
	select {
	case <-ready:
	case err := <-done:
		t.Fatalf("Run: %v", err)
	}
	waitFor(t, ctx, time.Minute, "the default ServiceAccount", func() bool {
		_, err := client.CoreV1().ServiceAccounts("default").Get(ctx, "default", metav1.GetOptions{})
		return err == nil
	})
	for i := range 5 {
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("fake-%d", i), Labels: map[string]string{"app": "fake"}},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "jm", Image: fakeImage}}},
		}
		if _, err := client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, ctx, 2*time.Minute, "5 ready pods", func() bool { return len(readyPods(t, ctx, client, "app=fake")) == 5 })
	if err := client.CoreV1().Pods("default").Delete(ctx, "fake-0", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, time.Minute, "fake-0 gone", func() bool {
		_, err := client.CoreV1().Pods("default").Get(ctx, "fake-0", metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	assertNoProcesses(t, "fake-jobmanager --listen "+"127.")
}

// assertNoProcesses fails if a process of this test's own children has
// pattern in its command line.
func assertNoProcesses(t *testing.T, pattern string) {
	t.Helper()
	entries, _ := os.ReadDir("/proc")
	self := strconv.Itoa(os.Getpid())
	for _, e := range entries {
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// Field 4 is the parent pid (the command name in field 2 has no spaces here).
		f := strings.Fields(string(stat))
		if len(f) < 4 || f[3] != self {
			continue
		}
		cmdline, _ := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if strings.Contains(strings.ReplaceAll(string(cmdline), "\x00", " "), pattern) {
			t.Errorf("process %s still running: %q", e.Name(), cmdline)
		}
	}
}
