package nodeagent_test

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/flinkops/flink-operator/e2e/localcluster"
)

// TestKubectlLogs runs `kubectl logs` against a local cluster: the API
// server proxies pods/log to the node agent's kubelet API (both sides
// authenticated by the cluster CA). A fake JobManager logging its requests
// is the container: its output, --tail, --limit-bytes, -f with a line
// written after the call began (ending when the run ends), and after a
// restart --previous.
func TestKubectlLogs(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	c, err := localcluster.Start(ctx, localcluster.Options{NodeAgent: true, Out: testWriter{t}})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if t.Failed() {
			dumpLog(t, c.NodeAgent.LogPath, 100)
		}
		if err := c.Stop(); err != nil {
			t.Error(err)
		}
	}()
	client := kubernetes.NewForConfigOrDie(c.RESTConfig())

	node, err := client.CoreV1().Nodes().Get(ctx, localcluster.NodeAgentNode, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	port := node.Status.DaemonEndpoints.KubeletEndpoint.Port
	if port <= 0 {
		t.Fatalf("node %s publishes kubelet port %d", node.Name, port)
	}
	// Without the apiserver's client certificate the agent answers 401.
	caPEM, err := os.ReadFile(c.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	anonymous := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	resp, err := anonymous.Get(fmt.Sprintf("https://127.0.0.1:%d/containerLogs/default/logs/main", port))
	if err != nil {
		t.Fatalf("kubelet API with the cluster CA as root: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("kubelet API without a client certificate: HTTP %d, want 401", resp.StatusCode)
	}

	waitFor(t, ctx, time.Minute, "the default ServiceAccount", func() bool {
		_, err := client.CoreV1().ServiceAccounts("default").Get(ctx, "default", metav1.GetOptions{})
		return err == nil
	})
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "logs"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "main", Image: fakeImage, Args: []string{"--jobs", "1", "--log-requests"},
		}}},
	}
	if pod, err = client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitPod(t, ctx, client, "logs", podReady)
	pod, _ = client.CoreV1().Pods("default").Get(ctx, "logs", metav1.GetOptions{})
	ip := pod.Status.PodIP

	// Run 0's output: the startup line (with the random id of its job) on
	// stdout, then request lines on stderr.
	out, err := c.Kubectl("logs", "logs", "-c", "main")
	if err != nil {
		t.Fatal(err)
	}
	job0 := startupJob(t, out, ip)
	if !strings.Contains(out, "fake-jobmanager: ") || !strings.Contains(out, "GET /config -> 200") {
		t.Errorf("kubectl logs: no request lines in\n%s", out)
	}
	if strings.Contains(out, "=== ") {
		t.Errorf("kubectl logs shows the agent's header line:\n%s", out)
	}
	if tail, err := c.Kubectl("logs", "logs", "--tail=1"); err != nil || strings.Count(tail, "\n") != 1 || !strings.HasSuffix(tail, "\n") {
		t.Errorf("kubectl logs --tail=1 = %q, %v; want one line", tail, err)
	}
	if head, err := c.Kubectl("logs", "logs", "--limit-bytes=12"); err != nil || head != `{"url":"http` {
		t.Errorf("kubectl logs --limit-bytes=12 = %q, %v", head, err)
	}
	if _, err := c.Kubectl("logs", "logs", "--previous"); err == nil ||
		!strings.Contains(err.Error(), `previous terminated container "main" in pod "logs" not found`) {
		t.Errorf("kubectl logs --previous before a restart: %v", err)
	}

	// -f streams what the container writes after the call began, and ends
	// when the run does.
	marker := "/follow-marker-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	follow(t, ctx, c, func(lines <-chan string) {
		waitLine(t, lines, job0)
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+ip+":8081"+marker, nil)
		if resp, err := httpClient.Do(req); err == nil {
			resp.Body.Close()
		}
		waitLine(t, lines, "GET "+marker)
		procs := recordedPIDs(t, c, "default/logs/main")
		if len(procs) != 1 {
			t.Fatalf("agent records %d processes for default/logs/main", len(procs))
		}
		if err := syscall.Kill(procs[0].PID, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
	})

	waitPod(t, ctx, client, "logs", func(p *corev1.Pod) bool {
		cs := p.Status.ContainerStatuses
		return podReady(p) && len(cs) == 1 && cs[0].RestartCount == 1
	})
	prev, err := c.Kubectl("logs", "logs", "--previous")
	if err != nil {
		t.Fatal(err)
	}
	if startupJob(t, prev, ip) != job0 || !strings.Contains(prev, "GET "+marker) {
		t.Errorf("kubectl logs --previous: not run 0's output:\n%s", prev)
	}
	cur, err := c.Kubectl("logs", "logs")
	if err != nil {
		t.Fatal(err)
	}
	if job1 := startupJob(t, cur, ip); job1 == job0 || strings.Contains(cur, marker) {
		t.Errorf("kubectl logs after the restart: not run 1's output (run 0's job %s):\n%s", job0, cur)
	}

	// The files behind it: one per run, <container>.log the current one.
	logs := filepath.Join(c.NodeAgentDir, "pods", fmt.Sprintf("default_logs_%s", pod.UID), "logs")
	for file, want := range map[string]string{"main/0.log": job0, "main/1.log": "fake-jobmanager", "main.log": "fake-jobmanager"} {
		data, err := os.ReadFile(filepath.Join(logs, file))
		if err != nil || !strings.HasPrefix(string(data), "=== ") || !strings.Contains(string(data), want) ||
			(file != "main/0.log" && strings.Contains(string(data), job0)) {
			t.Errorf("%s: %v\n%s", file, err, data)
		}
	}
}

// startupJob returns the job id of the fake JobManager's startup line in
// out, checking it serves on the pod IP.
func startupJob(t *testing.T, out, ip string) string {
	t.Helper()
	for line := range strings.SplitSeq(out, "\n") {
		var ready struct {
			URL  string   `json:"url"`
			Jobs []string `json:"jobs"`
		}
		if json.Unmarshal([]byte(line), &ready) != nil {
			continue
		}
		if ready.URL != "http://"+ip+":8081" || len(ready.Jobs) != 1 {
			t.Fatalf("startup line %q: want url http://%s:8081 and one job", line, ip)
		}
		return ready.Jobs[0]
	}
	t.Fatalf("no startup line in\n%s", out)
	return ""
}

// follow runs `kubectl logs -f logs`, hands its lines to during and then
// expects kubectl to finish (the run ended) within 20 s.
func follow(t *testing.T, ctx context.Context, c *localcluster.Cluster, during func(lines <-chan string)) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, c.KubectlPath, "logs", "-f", "logs")
	cmd.Env = append(os.Environ(), "KUBECONFIG="+c.Kubeconfig, "KUBECACHEDIR="+filepath.Join(c.Dir, "kubectl-cache"))
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 1000)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	during(lines)
	ended := time.After(20 * time.Second)
	for open := true; open; {
		select {
		case _, open = <-lines:
		case <-ended:
			t.Fatal("kubectl logs -f still streaming 20s after the run ended")
		}
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("kubectl logs -f: %v: %s", err, stderr.String())
	}
}

// waitLine reads lines until one contains want (30 s at most).
func waitLine(t *testing.T, lines <-chan string, want string) {
	t.Helper()
	timeout := time.After(30 * time.Second)
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("kubectl logs -f ended before a line with %q", want)
			}
			if strings.Contains(l, want) {
				return
			}
		case <-timeout:
			t.Fatalf("kubectl logs -f: no line with %q within 30s", want)
		}
	}
}
