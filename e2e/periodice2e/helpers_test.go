package periodice2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	flinkjvm "github.com/flinkops/flink-operator/e2e/flink"
	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/cluster"
)

func deploymentYAML(ns, image string, version v1beta1.FlinkVersion, data string, parallelism int, state v1beta1.JobState) string {
	return fmt.Sprintf(`apiVersion: flink.apache.org/v1beta1
kind: FlinkDeployment
metadata:
  name: %s
  namespace: %s
spec:
  image: %s
  flinkVersion: %s
  flinkConfiguration:
    jobmanager.memory.process.size: 768m
    taskmanager.memory.process.size: 1024m
    taskmanager.memory.managed.size: 64m
    taskmanager.numberOfTaskSlots: "2"
    state.backend.type: hashmap
    execution.checkpointing.interval: 2 s
    execution.checkpointing.dir: file://%s/checkpoints
    execution.checkpointing.savepoint-dir: file://%s/savepoints
    # Issue 8: a periodic savepoint every 20 s, two kept, the data of the
    # deleted ones disposed.
    kubernetes.operator.periodic.savepoint.interval: 20 s
    kubernetes.operator.savepoint.history.max.count: "2"
    kubernetes.operator.savepoint.dispose-on-delete: "true"
    # Accumulators travel with TaskManager heartbeats.
    heartbeat.interval: "1000"
    # A TaskManager that outlives its JobManager frees the old job's slots
    # when the old JobMaster's heartbeat times out (see e2e/realflink).
    heartbeat.timeout: "10000"
  jobManager:
    replicas: 1
  # No taskManager.replicas: with replicas set, the job runs with
  # replicas × slots and ignores job.parallelism (upstream's rule, kept by
  # pkg/cluster), so a parallelism change would not show in Flink. Without
  # it the operator runs ceil(parallelism / slots) = 1 TaskManager.
  job:
    jarURI: %s
    entryClass: %s
    args: ["--rate", "10", "--keys", "%d"]
    parallelism: %d
    upgradeMode: savepoint
    state: %s
`, name, ns, image, version, data, data, testJar, flinkjvm.TestJobClass, keys, parallelism, state)
}

func (r *run) record(what string, d time.Duration) {
	r.t.Logf("%s: %s: %s", r.version, what, d.Round(100*time.Millisecond))
	r.mu.Lock()
	defer r.mu.Unlock()
	r.timings = append(r.timings, timing{r.version, what, d})
}

func (r *run) createNamespace() {
	if _, err := r.kube.CoreV1().Namespaces().Create(r.ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: r.ns}}, metav1.CreateOptions{}); err != nil {
		r.t.Fatal(err)
	}
	// Pods are admitted once the namespace's default ServiceAccount exists.
	r.waitFor(time.Minute, "ServiceAccount default in "+r.ns, func() (bool, string) {
		_, err := r.kube.CoreV1().ServiceAccounts(r.ns).Get(r.ctx, "default", metav1.GetOptions{})
		return err == nil, fmt.Sprint(err)
	})
}

// cleanup dumps what explains a failure, then deletes the namespace (its
// JVMs stop; the cluster's Stop would stop them anyway).
func (r *run) cleanup() {
	if !r.t.Failed() {
		return
	}
	r.dump()
	if _, err := r.c.Kubectl("delete", "namespace", r.ns, "--wait=false"); err != nil {
		r.t.Logf("cleanup: %v", err)
	}
}

func (r *run) dump() {
	t := r.t
	for _, args := range [][]string{
		{"get", "flinkdeployment,flinkstatesnapshot,deployment,replicaset,pod,service,configmap", "-n", r.ns, "-o", "wide"},
		{"get", "flinkdeployment", "-n", r.ns, "-o", "yaml"},
		{"get", "events", "-n", r.ns, "--sort-by=.lastTimestamp"},
	} {
		out, err := r.c.Kubectl(args...)
		t.Logf("--- kubectl %s\n%s%v", strings.Join(args, " "), out, errOrEmpty(err))
	}
	pods := filepath.Join(r.c.NodeAgentDir, "pods", r.ns+"_*")
	logs, _ := filepath.Glob(filepath.Join(pods, "logs", "*.log"))
	flinkLogs, _ := filepath.Glob(filepath.Join(pods, "containers", "*", "log", "*.log"))
	for _, l := range logs {
		dumpTail(t, l, 60)
	}
	for _, l := range flinkLogs {
		dumpTail(t, l, 80)
	}
	if len(logs)+len(flinkLogs) == 0 {
		t.Logf("no pod logs left under %s", pods)
	}
	dumpTail(t, r.opLog, 200)
	r.dumped = true
}

func errOrEmpty(err error) any {
	if err == nil {
		return ""
	}
	return err
}

func (r *run) apply(manifest string) {
	r.kubectlInput(manifest, "apply", "-f", "-")
}

func (r *run) kubectlInput(stdin string, args ...string) {
	r.t.Helper()
	out, err := r.c.KubectlInput(strings.NewReader(stdin), args...)
	if err != nil {
		r.t.Fatal(err)
	}
	r.t.Logf("kubectl %s: %s", strings.Join(args, " "), strings.TrimSpace(out))
}

func (r *run) kubectl(args ...string) {
	r.t.Helper()
	out, err := r.c.Kubectl(args...)
	if err != nil {
		r.t.Fatal(err)
	}
	r.t.Logf("kubectl %s: %s", strings.Join(args, " "), strings.TrimSpace(out))
}

func (r *run) logKubectl(args ...string) {
	out, err := r.c.Kubectl(args...)
	if err != nil {
		r.t.Errorf("%v", err)
		return
	}
	r.t.Logf("%s: kubectl %s\n%s", r.version, strings.Join(args, " "), strings.TrimRight(out, "\n"))
}

// waitFor polls cond until it holds; it fails with the last observation on
// timeout, or at once if the operator exits (unless it is stopped on purpose
// or expected to exit: opMayExit).
func (r *run) waitFor(timeout time.Duration, what string, cond func() (bool, string)) {
	r.t.Helper()
	deadline := time.Now().Add(timeout)
	last := ""
	for {
		ok, seen := cond()
		if seen != "" {
			last = seen
		}
		if ok {
			return
		}
		if err := r.op.exited(); err != nil && !r.opMayExit {
			r.t.Fatalf("%s: waiting for %s: %v (last seen: %s)", r.version, what, err, last)
		}
		if time.Now().After(deadline) || r.ctx.Err() != nil {
			r.t.Fatalf("%s: timed out after %s waiting for %s; last seen: %s", r.version, timeout, what, last)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

func (r *run) waitDeployment(timeout time.Duration, what string, ok func(*v1beta1.FlinkDeployment) bool) *v1beta1.FlinkDeployment {
	r.t.Helper()
	return r.waitDeploymentNamed(name, timeout, what, ok)
}

func (r *run) waitDeploymentNamed(dep string, timeout time.Duration, what string, ok func(*v1beta1.FlinkDeployment) bool) *v1beta1.FlinkDeployment {
	r.t.Helper()
	var got *v1beta1.FlinkDeployment
	var steps []string // lifecycleState/jobStatus.state as they changed
	stableEarly := ""
	r.waitFor(timeout, "FlinkDeployment "+r.ns+"/"+dep+": "+what, func() (bool, string) {
		d, err := r.flink.FlinkV1beta1().FlinkDeployments(r.ns).Get(r.ctx, dep, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		got = d
		st := d.Status
		if step := fmt.Sprintf("%s/%s", st.LifecycleState, st.JobStatus.State); len(steps) == 0 || steps[len(steps)-1] != step {
			steps = append(steps, step)
		}
		if st.LifecycleState == v1beta1.LifecycleStable && st.JobStatus.State != v1beta1.JobStatusRunning && stableEarly == "" {
			stableEarly = summary(d)
		}
		return ok(d), summary(d)
	})
	r.t.Logf("%s: %s: lifecycleState/jobStatus.state seen: %s", r.version, what, strings.Join(steps, " → "))
	if stableEarly != "" {
		// pkg/controller/deployment/doc.go: "DEPLOYED → STABLE once the job
		// runs"; upstream reports DEPLOYED until the job is RUNNING (it marks
		// a user-suspended spec stable, so a resume is never "already stable").
		r.t.Errorf("%s: %s: lifecycleState STABLE while the job is not RUNNING (want DEPLOYED until it runs): %s", r.version, what, stableEarly)
	}
	return got
}

// checkTaskManagers checks the TaskManager Deployment's replicas.
func summary(d *v1beta1.FlinkDeployment) string {
	st := d.Status
	return fmt.Sprintf("lifecycleState=%s reconciliation=%s jobManagerDeploymentStatus=%s job=%s state=%s upgradeSavepointPath=%q savepointInfo=%+v error=%q",
		st.LifecycleState, st.ReconciliationStatus.State, st.JobManagerDeploymentStatus, st.JobStatus.JobID,
		st.JobStatus.State, st.JobStatus.UpgradeSavepointPath, st.JobStatus.SavepointInfo, st.Error)
}

// restURL is the REST endpoint of the one Ready, not terminating JobManager
// pod of deployment dep, as the operator finds it with --flink-endpoint=pod-ip.
func (r *run) restURL(dep string) (string, string) {
	l, err := r.kube.CoreV1().Pods(r.ns).List(r.ctx, metav1.ListOptions{LabelSelector: cluster.JobManagerSelector(dep)})
	if err != nil {
		return "", err.Error()
	}
	var urls []string
	for _, p := range l.Items {
		if p.DeletionTimestamp == nil && podReady(&p) && p.Status.PodIP != "" {
			urls = append(urls, "http://"+p.Status.PodIP+":8081")
		}
	}
	if len(urls) != 1 {
		return "", fmt.Sprintf("%d Ready JobManager pods (%s)", len(urls), podNames(l.Items))
	}
	return urls[0], ""
}

// waitJobRunning waits until Flink itself reports the job RUNNING with every
// task running, and returns the JobManager's REST URL.
func (r *run) waitJobRunning(jobID string) string {
	r.t.Helper()
	return r.waitJobRunningNamed(name, jobID)
}

func (r *run) waitJobRunningNamed(dep, jobID string) string {
	r.t.Helper()
	var rest string
	r.waitFor(2*time.Minute, "Flink job "+jobID+" RUNNING with all tasks running", func() (bool, string) {
		u, why := r.restURL(dep)
		if u == "" {
			return false, why
		}
		var job struct {
			State    string `json:"state"`
			Vertices []struct {
				Name   string `json:"name"`
				Status string `json:"status"`
			} `json:"vertices"`
		}
		if err := getJSON(r.ctx, u+"/jobs/"+jobID, &job); err != nil {
			return false, err.Error()
		}
		seen := fmt.Sprintf("%s: job %s, vertices %+v", u, job.State, job.Vertices)
		if job.State != "RUNNING" || len(job.Vertices) == 0 {
			return false, seen
		}
		for _, v := range job.Vertices {
			if v.Status != "RUNNING" {
				return false, seen
			}
		}
		rest = u
		return true, ""
	})
	return rest
}

// checkParallelism checks the job's highest vertex parallelism (the source
// always has 1).
func (r *run) checkParallelism(rest, jobID string, want int) {
	var job struct {
		Vertices []struct {
			Name        string `json:"name"`
			Parallelism int    `json:"parallelism"`
		} `json:"vertices"`
	}
	if err := getJSON(r.ctx, rest+"/jobs/"+jobID, &job); err != nil {
		r.t.Fatal(err)
	}
	got := 0
	for _, v := range job.Vertices {
		got = max(got, v.Parallelism)
	}
	if got != want {
		r.t.Errorf("job %s runs with parallelism %d, want %d: %+v", jobID, got, want, job.Vertices)
	}
}

// checkRestored checks Flink's own record of where the job restored from.
func (r *run) checkRestored(rest, jobID, want string) {
	t := r.t
	t.Helper()
	type restored struct {
		IsSavepoint  bool   `json:"is_savepoint"`
		ExternalPath string `json:"external_path"`
	}
	var got *restored
	r.waitFor(30*time.Second, "latest.restored of job "+jobID, func() (bool, string) {
		var cps struct {
			Latest struct {
				Restored *restored `json:"restored"`
			} `json:"latest"`
		}
		if err := getJSON(r.ctx, rest+"/jobs/"+jobID+"/checkpoints", &cps); err != nil {
			return false, err.Error()
		}
		got = cps.Latest.Restored
		return got != nil, "no latest.restored"
	})
	if !got.IsSavepoint || localPath(t, got.ExternalPath) != localPath(t, want) {
		t.Fatalf("job %s: latest.restored = %+v, want the savepoint %s", jobID, *got, want)
	}
	t.Logf("%s: job %s latest.restored: %s (savepoint)", r.version, jobID, got.ExternalPath)
}

// checkCounterContinued checks that the keyed counter continued from the
// savepoint: a fresh start could never count above ceil(records/keys), and
// the savepoint was taken after max-count was before.
func snapshotNames(s []v1beta1.FlinkStateSnapshot) []string {
	var out []string
	for _, x := range s {
		out = append(out, x.Name)
	}
	return out
}

// checkUpgradeSnapshot checks an UPGRADE snapshot: COMPLETED, the path the
// status records, files on disk under the configured savepoint directory.
func podNames(pods []corev1.Pod) string {
	var out []string
	for _, p := range pods {
		s := p.Name + " " + string(p.Status.Phase)
		if p.DeletionTimestamp != nil {
			s += " terminating"
		}
		out = append(out, s)
	}
	return "[" + strings.Join(out, ", ") + "]"
}

// agentProcesses are the processes the node agent records for the run's
// namespace (names namespace/pod/container).
func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// replaceOnce replaces old, which must occur exactly once in s (else the
// upstream example changed and the test must be looked at).
type operatorProcess struct {
	cmd  *exec.Cmd
	done chan struct{}
	err  error
}

func startOperator(t *testing.T, bin, kubeconfig, logPath string) *operatorProcess {
	cmd := exec.Command(bin, "--kubeconfig", kubeconfig, "--flink-endpoint=pod-ip",
		"--metrics-bind-address=0", "--health-probe-bind-address=0")
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &operatorProcess{cmd: cmd, done: make(chan struct{})}
	go func() { p.err = cmd.Wait(); logFile.Close(); close(p.done) }()
	return p
}

// exited returns an error once the operator has exited.
func (p *operatorProcess) exited() error {
	select {
	case <-p.done:
		return fmt.Errorf("the operator exited: %v", p.err)
	default:
		return nil
	}
}

func (p *operatorProcess) stop() {
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(15 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

var httpClient = &http.Client{Timeout: 5 * time.Second}

func getJSON(ctx context.Context, url string, into any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return json.NewDecoder(resp.Body).Decode(into)
}

// localPath turns a file: URI (file:/a, file:///a) or a path into a clean path.
func localPath(t *testing.T, s string) string {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	if u.Scheme != "" && u.Scheme != "file" {
		t.Fatalf("%s is not a local path", s)
	}
	return filepath.Clean(u.Path)
}

func dumpTail(t *testing.T, path string, n int) {
	data, err := os.ReadFile(path)
	if err != nil {
		t.Logf("--- %s: %v", path, err)
		return
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	t.Logf("--- last %d lines of %s\n%s", len(lines), path, strings.Join(lines, "\n"))
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
