package realflink

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
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
	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/cluster"
	"github.com/flinkops/flink-operator/pkg/config"
)

// image and FlinkDeployment spelling of each pinned version.
var flavours = map[string]struct {
	image   string
	version v1beta1.FlinkVersion
}{
	"1.20.5": {"flink:1.20", v1beta1.FlinkVersion1_20},
	"2.3.0":  {"flink:2.3", v1beta1.FlinkVersion2_3},
}

// TestRealFlinkOnLocalCluster starts a local cluster with the node agent and,
// for every pinned Flink version, creates through the API what the operator
// would create for an application FlinkDeployment (pkg/cluster.Build:
// ConfigMap, JobManager and TaskManager Deployments, Services). It then
// checks over REST at the JobManager's pod IP that the test job runs, takes a
// savepoint, rolls the JobManager Deployment to --fromSavepoint, checks that
// the keyed state was restored, deletes everything and checks that every JVM
// is gone, and finally that the cluster leaves no process behind.
func TestRealFlinkOnLocalCluster(t *testing.T) {
	begin := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Minute)
	defer cancel()
	for _, v := range flinkjvm.Versions() {
		if _, ok := flavours[v]; !ok {
			t.Fatalf("pinned Flink %s has no image in this test", v)
		}
		if _, err := flinkjvm.Ensure(ctx, v); err != nil { // Maven, before the clock starts
			t.Fatal(err)
		}
	}
	c, err := localcluster.Start(ctx, localcluster.Options{NodeAgent: true, Out: testWriter{t}})
	if err != nil {
		t.Fatal(err)
	}
	stopped := false
	defer func() {
		if !stopped {
			dumpAgentLog(t, c)
			c.Stop()
		}
	}()
	client := kubernetes.NewForConfigOrDie(c.RESTConfig())
	t.Logf("local cluster with node agent up in %s", time.Since(begin).Round(time.Millisecond))

	for i, v := range flinkjvm.Versions() {
		t.Run(v, func(t *testing.T) {
			e := &env{t: t, ctx: ctx, c: c, client: client, version: v, namespace: fmt.Sprintf("flink-%d", i)}
			e.run()
		})
	}
	if t.Failed() {
		return
	}

	pids := agentProcesses(t, c, "")
	t0 := time.Now()
	stopped = true
	agent := c.NodeAgent
	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	t.Logf("cluster stopped in %s", time.Since(t0).Round(time.Millisecond))
	for _, p := range pids {
		if p.Alive() {
			t.Errorf("%s (pid %d) alive after the cluster stopped", p.Name, p.PID)
		}
	}
	if flinkjvm.GroupAlive(agent.PID()) {
		t.Errorf("node agent (pid %d) alive after the cluster stopped", agent.PID())
	}
	assertNoProcesses(t, c.NodeAgentDir)
	t.Logf("TestRealFlinkOnLocalCluster: %s", time.Since(begin).Round(time.Second))
}

// env is one version's run.
type env struct {
	t         *testing.T
	ctx       context.Context
	c         *localcluster.Cluster
	client    kubernetes.Interface
	version   string
	namespace string
}

func (e *env) run() {
	t, ctx := e.t, e.ctx
	start := time.Now()
	fl := flavours[e.version]
	data := t.TempDir()
	name := "counting"
	jobName := "counting-" + e.version
	e.createNamespace()

	fd := &v1beta1.FlinkDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: e.namespace, UID: types.UID("not-in-the-api")},
		Spec: v1beta1.FlinkDeploymentSpec{
			Image:        fl.image,
			FlinkVersion: fl.version,
			Mode:         v1beta1.DeploymentModeStandalone,
			FlinkConfiguration: flinkConf(map[string]any{
				"jobmanager.memory.process.size":        "768m",
				"taskmanager.memory.process.size":       "1024m",
				"taskmanager.memory.managed.size":       "64m",
				"taskmanager.numberOfTaskSlots":         "2",
				"state.backend.type":                    "hashmap",
				"execution.checkpointing.interval":      "2 s",
				"execution.checkpointing.dir":           "file://" + filepath.Join(data, "checkpoints"),
				"execution.checkpointing.savepoint-dir": "file://" + filepath.Join(data, "savepoints"),
				"heartbeat.interval":                    "1000", // accumulators travel with heartbeats
				// The TaskManager kept across the JobManager's roll frees the
				// old job's slots when the old JobMaster's heartbeat times out.
				"heartbeat.timeout": "10000",
			}),
			Job: &v1beta1.JobSpec{
				JarURI:      "local:///opt/flink/usrlib/testjob.jar",
				EntryClass:  flinkjvm.TestJobClass,
				Args:        []string{"--rate", "10", "--keys", "10", "--job-name", jobName},
				Parallelism: ptr.To[int32](2),
				UpgradeMode: v1beta1.UpgradeModeSavepoint,
			},
		},
	}
	jobID := randomJobID()
	in := cluster.Input{Deployment: fd, Spec: fd.Spec, OperatorConfig: config.Defaults(), JobID: jobID}
	objs, err := cluster.Build(in)
	if err != nil {
		t.Fatal(err)
	}

	// 1. Create the cluster; the job runs.
	created := time.Now()
	e.create(objs)
	jm := e.waitReadyPod(cluster.JobManagerSelector(cluster.Standalone, name), "")
	jmReady := time.Since(created)
	rest := "http://" + jm.Status.PodIP + ":8081"
	e.waitJobRunning(rest, jobID)
	t.Logf("%s: pod creation -> JobManager pod Ready %s, -> job RUNNING %s (JM pod IP %s)",
		e.version, jmReady.Round(time.Millisecond), time.Since(created).Round(time.Millisecond), jm.Status.PodIP)
	tm := e.waitReadyPod(cluster.TaskManagerSelector(cluster.Standalone, name), "")
	e.checkPodStatus(jm)
	e.checkPodStatus(tm)
	var overview struct {
		JobName string `json:"name"`
	}
	getJSON(t, ctx, rest+"/jobs/"+jobID, &overview)
	if overview.JobName != jobName {
		t.Errorf("job name %q, want %q", overview.JobName, jobName)
	}

	acc := e.waitAccumulators(rest, jobID, func(a accumulators) bool { return a.MaxCount >= 5 })
	before := acc.MaxCount
	if acc.Mismatches != 0 {
		t.Errorf("mismatches before the savepoint: %+v", acc)
	}
	e.reportRSS("running", jm, tm)

	// 2. A savepoint into the configured directory on the host.
	location := e.triggerSavepoint(rest, jobID)
	spDir := localPath(t, location)
	if !strings.HasPrefix(spDir, filepath.Join(data, "savepoints")+"/") {
		t.Errorf("savepoint %s is not under %s", spDir, data)
	}
	if _, err := os.Stat(filepath.Join(spDir, "_metadata")); err != nil {
		t.Fatalf("savepoint metadata: %v", err)
	}
	t.Logf("%s: savepoint %s after max-count %d", e.version, location, before)

	// 3. Roll the JobManager to --fromSavepoint, as the operator does for a
	// savepoint upgrade: the Deployment's pod template changes, and with
	// the Recreate strategy the old JobManager stops before the new one
	// starts. The TaskManager stays and follows the JobManager's Service to
	// the new pod IP (its hosts file is rewritten).
	oldJMPID := e.containerPID(jm)
	in.RestorePath = location
	restored, err := cluster.Build(in)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(restored.JobManager.Spec.Template.Spec.Containers[0].Args, " "), "--fromSavepoint "+location) {
		t.Fatalf("JobManager args lack --fromSavepoint: %q", restored.JobManager.Spec.Template.Spec.Containers[0].Args)
	}
	rolled := time.Now()
	e.updateDeployment(restored.JobManager)
	e.waitPodGone(jm)
	if oldJMPID.Alive() {
		t.Errorf("old JobManager JVM (pid %d) alive after its pod was deleted", oldJMPID.PID)
	}
	t.Logf("%s: old JobManager pod and JVM gone %s after the Deployment update", e.version, time.Since(rolled).Round(time.Millisecond))
	jm2 := e.waitReadyPod(cluster.JobManagerSelector(cluster.Standalone, name), jm.Name)
	rest = "http://" + jm2.Status.PodIP + ":8081"
	e.waitJobRunning(rest, jobID)
	t.Logf("%s: restored job RUNNING %s after the Deployment update (new JM pod IP %s)",
		e.version, time.Since(rolled).Round(time.Millisecond), jm2.Status.PodIP)

	var cps struct {
		Latest struct {
			Restored *struct {
				IsSavepoint  bool   `json:"is_savepoint"`
				ExternalPath string `json:"external_path"`
			} `json:"restored"`
		} `json:"latest"`
	}
	getJSON(t, ctx, rest+"/jobs/"+jobID+"/checkpoints", &cps)
	if r := cps.Latest.Restored; r == nil || !r.IsSavepoint || localPath(t, r.ExternalPath) != spDir {
		t.Fatalf("latest.restored = %+v, want the savepoint %s", r, spDir)
	}
	// The counters continue from the savepoint: a fresh start could never
	// have a per-key count above ceil(records/keys), and none is below the
	// maximum sampled before the savepoint was taken. (Not above it: the
	// first records after the restore need not hit the key that held it.)
	acc = e.waitAccumulators(rest, jobID, func(a accumulators) bool { return a.Records > 0 })
	t.Logf("%s: after the restore %+v (max-count before the savepoint: %d)", e.version, acc, before)
	if acc.Mismatches != 0 {
		t.Errorf("state mismatches after the restore: %+v", acc)
	}
	if acc.MaxCount < before || acc.MaxCount <= (acc.Records+9)/10 {
		t.Errorf("state not restored: %+v, max-count before the savepoint %d", acc, before)
	}
	tm2 := e.waitReadyPod(cluster.TaskManagerSelector(cluster.Standalone, name), "")
	if tm2.UID != tm.UID {
		t.Errorf("TaskManager pod replaced (%s -> %s); the test expects it to follow the JobManager", tm.Name, tm2.Name)
	}
	e.checkHostsFile(tm2, objs.RPCService.Name+"."+e.namespace, jm2.Status.PodIP)
	e.reportRSS("restored", jm2, tm2)

	// 4. Deleting the Deployments stops the JVMs.
	pids := agentProcesses(t, e.c, e.namespace+"/")
	if len(pids) != 2 {
		t.Errorf("agent records %d processes in %s, want 2 (JM, TM): %+v", len(pids), e.namespace, pids)
	}
	deleted := time.Now()
	for _, d := range []string{objs.JobManager.Name, objs.TaskManager.Name} {
		if err := e.client.AppsV1().Deployments(e.namespace).Delete(ctx, d, metav1.DeleteOptions{
			PropagationPolicy: ptr.To(metav1.DeletePropagationForeground),
		}); err != nil {
			t.Fatal(err)
		}
	}
	e.waitFor(2*time.Minute, "every pod of "+e.namespace+" gone", func() bool {
		l, err := e.client.CoreV1().Pods(e.namespace).List(ctx, metav1.ListOptions{})
		return err == nil && len(l.Items) == 0
	})
	for _, p := range pids {
		if p.Alive() {
			t.Errorf("%s (pid %d) alive after its pod was deleted", p.Name, p.PID)
		}
	}
	t.Logf("%s: Deployments deleted, pods and JVMs gone in %s; %s in all", e.version,
		time.Since(deleted).Round(time.Millisecond), time.Since(start).Round(time.Second))
}

func (e *env) createNamespace() {
	_, err := e.client.CoreV1().Namespaces().Create(e.ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: e.namespace}}, metav1.CreateOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	// Pods are admitted once the namespace's default ServiceAccount exists.
	e.waitFor(time.Minute, "ServiceAccount default in "+e.namespace, func() bool {
		_, err := e.client.CoreV1().ServiceAccounts(e.namespace).Get(e.ctx, "default", metav1.GetOptions{})
		return err == nil
	})
}

// create creates the cluster's objects as the FlinkDeployment controller
// would. The FlinkDeployment itself is not in the API, so the owner
// references are dropped (the garbage collector would delete the objects of
// a missing owner).
func (e *env) create(objs *cluster.Cluster) {
	t, ctx, ns := e.t, e.ctx, e.namespace
	for _, m := range []*metav1.ObjectMeta{&objs.ConfigMap.ObjectMeta, &objs.JobManager.ObjectMeta,
		&objs.TaskManager.ObjectMeta, &objs.RPCService.ObjectMeta, &objs.RESTService.ObjectMeta} {
		m.OwnerReferences = nil
	}
	if _, err := e.client.CoreV1().ConfigMaps(ns).Create(ctx, objs.ConfigMap, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, s := range objs.Services() {
		if _, err := e.client.CoreV1().Services(ns).Create(ctx, s, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range []*appsv1.Deployment{objs.JobManager, objs.TaskManager} {
		if _, err := e.client.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

func (e *env) updateDeployment(d *appsv1.Deployment) {
	live, err := e.client.AppsV1().Deployments(e.namespace).Get(e.ctx, d.Name, metav1.GetOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	live.Spec = d.Spec
	live.Annotations = d.Annotations
	if _, err := e.client.AppsV1().Deployments(e.namespace).Update(e.ctx, live, metav1.UpdateOptions{}); err != nil {
		e.t.Fatal(err)
	}
}

// waitReadyPod waits for exactly one Ready, not terminating pod matching
// selector (other than pod notName) and returns it.
func (e *env) waitReadyPod(selector, notName string) corev1.Pod {
	var found corev1.Pod
	e.waitFor(3*time.Minute, "a Ready pod "+selector, func() bool {
		l, err := e.client.CoreV1().Pods(e.namespace).List(e.ctx, metav1.ListOptions{LabelSelector: selector})
		if err != nil {
			return false
		}
		n := 0
		for _, p := range l.Items {
			if p.Name != notName && p.DeletionTimestamp == nil && podReady(&p) {
				found, n = p, n+1
			}
		}
		return n == 1
	})
	return found
}

func (e *env) waitPodGone(p corev1.Pod) {
	e.waitFor(time.Minute, "pod "+p.Name+" gone", func() bool {
		live, err := e.client.CoreV1().Pods(e.namespace).Get(e.ctx, p.Name, metav1.GetOptions{})
		return apierrors.IsNotFound(err) || (err == nil && live.UID != p.UID)
	})
}

// checkPodStatus checks what the operator and kubectl read from a pod.
func (e *env) checkPodStatus(p corev1.Pod) {
	t := e.t
	st := p.Status
	if st.Phase != corev1.PodRunning || st.PodIP == "" || len(st.PodIPs) != 1 || st.HostIP == "" || st.StartTime == nil {
		t.Errorf("pod %s: phase %s podIP %q podIPs %v hostIP %q startTime %v", p.Name, st.Phase, st.PodIP, st.PodIPs, st.HostIP, st.StartTime)
	}
	for _, ct := range []corev1.PodConditionType{corev1.PodScheduled, corev1.PodInitialized, corev1.ContainersReady, corev1.PodReady} {
		ok := false
		for _, c := range st.Conditions {
			ok = ok || (c.Type == ct && c.Status == corev1.ConditionTrue)
		}
		if !ok {
			t.Errorf("pod %s: condition %s not True: %+v", p.Name, ct, st.Conditions)
		}
	}
	if len(st.ContainerStatuses) != 1 {
		t.Fatalf("pod %s: %d container statuses", p.Name, len(st.ContainerStatuses))
	}
	cs := st.ContainerStatuses[0]
	if cs.Name != cluster.MainContainerName || !cs.Ready || cs.RestartCount != 0 || cs.State.Running == nil {
		t.Errorf("pod %s: container status %+v", p.Name, cs)
	}
}

// containerPID is the agent's record of pod p's Flink JVM.
func (e *env) containerPID(p corev1.Pod) localcluster.RecordedProcess {
	procs := agentProcesses(e.t, e.c, e.namespace+"/"+p.Name+"/")
	if len(procs) != 1 {
		e.t.Fatalf("agent records %d processes for pod %s: %+v", len(procs), p.Name, procs)
	}
	return procs[0]
}

// checkHostsFile checks that pod p's JVMs resolve name to ip (the agent's
// per-pod hosts file, its stand-in for cluster DNS).
func (e *env) checkHostsFile(p corev1.Pod, name, ip string) {
	path := filepath.Join(e.c.NodeAgentDir, "pods", fmt.Sprintf("%s_%s_%s", p.Namespace, p.Name, p.UID), "hosts")
	data, err := os.ReadFile(path)
	if err != nil {
		e.t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		for _, n := range f[min(1, len(f)):] {
			if n == name {
				if f[0] != ip {
					e.t.Errorf("%s: %s -> %s, want %s", path, name, f[0], ip)
				}
				return
			}
		}
	}
	e.t.Errorf("%s has no entry for %s:\n%s", path, name, data)
}

func (e *env) reportRSS(phase string, pods ...corev1.Pod) {
	for _, p := range pods {
		proc := e.containerPID(p)
		if !proc.Alive() { // else the checks that processes are gone prove nothing
			e.t.Errorf("recorded process %s (pid %d) of a running pod is not alive", proc.Name, proc.PID)
		}
		rss, err := flinkjvm.ProcessRSS(proc.PID)
		if err != nil {
			e.t.Errorf("RSS of %s: %v", p.Name, err)
			continue
		}
		e.t.Logf("%s: %s: RSS of %s (%s, pid %d): %d MiB", e.version, phase, p.Name, p.Labels[cluster.LabelComponent], proc.PID, rss>>20)
	}
}

func (e *env) waitFor(timeout time.Duration, what string, ok func() bool) {
	e.t.Helper()
	deadline := time.Now().Add(timeout)
	for !ok() {
		if time.Now().After(deadline) || e.ctx.Err() != nil {
			e.t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// waitJobRunning waits until the job is RUNNING with all its tasks running.
func (e *env) waitJobRunning(rest, jobID string) {
	e.waitFor(3*time.Minute, "job "+jobID+" RUNNING at "+rest, func() bool {
		var job struct {
			State    string `json:"state"`
			Vertices []struct {
				Status string `json:"status"`
			} `json:"vertices"`
		}
		if !tryGetJSON(e.ctx, rest+"/jobs/"+jobID, &job) || job.State != "RUNNING" || len(job.Vertices) == 0 {
			return false
		}
		for _, v := range job.Vertices {
			if v.Status != "RUNNING" {
				return false
			}
		}
		return true
	})
}

// accumulators are the test job's user accumulators (see e2e/flink).
type accumulators struct {
	Records, MaxCount, Mismatches int64
}

func (e *env) waitAccumulators(rest, job string, ok func(accumulators) bool) accumulators {
	var a accumulators
	e.waitFor(2*time.Minute, "accumulators of "+job, func() bool {
		var resp struct {
			User []struct {
				Name  string `json:"name"`
				Value string `json:"value"`
			} `json:"user-task-accumulators"`
		}
		if !tryGetJSON(e.ctx, rest+"/jobs/"+job+"/accumulators", &resp) {
			return false
		}
		seen := 0
		for _, u := range resp.User {
			n, err := strconv.ParseInt(u.Value, 10, 64)
			if err != nil {
				continue
			}
			switch u.Name {
			case "records":
				a.Records, seen = n, seen+1
			case "max-count":
				a.MaxCount, seen = n, seen+1
			case "mismatches":
				a.Mismatches, seen = n, seen+1
			}
		}
		return seen == 3 && ok(a)
	})
	return a
}

// triggerSavepoint takes a savepoint into the configured directory and
// returns its location.
func (e *env) triggerSavepoint(rest, job string) string {
	t := e.t
	body, _ := json.Marshal(map[string]any{"cancel-job": false})
	req, _ := http.NewRequestWithContext(e.ctx, http.MethodPost, rest+"/jobs/"+job+"/savepoints", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	resp, err := httpClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var trig struct {
		RequestID string `json:"request-id"`
	}
	if resp.StatusCode != http.StatusAccepted || json.Unmarshal(data, &trig) != nil || trig.RequestID == "" {
		t.Fatalf("trigger savepoint: HTTP %d: %s", resp.StatusCode, data)
	}
	var location string
	e.waitFor(2*time.Minute, "savepoint "+trig.RequestID, func() bool {
		var st struct {
			Status struct {
				ID string `json:"id"`
			} `json:"status"`
			Operation struct {
				Location     string          `json:"location"`
				FailureCause json.RawMessage `json:"failure-cause"`
			} `json:"operation"`
		}
		if !tryGetJSON(e.ctx, rest+"/jobs/"+job+"/savepoints/"+trig.RequestID, &st) || st.Status.ID != "COMPLETED" {
			return false
		}
		if st.Operation.Location == "" {
			t.Fatalf("savepoint failed: %s", st.Operation.FailureCause)
		}
		location = st.Operation.Location
		return true
	})
	return location
}

func randomJobID() string {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b)
}

func flinkConf(values map[string]any) *v1beta1.Configuration {
	raw, err := json.Marshal(values)
	if err != nil {
		panic(err)
	}
	return &v1beta1.Configuration{Raw: raw}
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// agentProcesses are the live entries of the node agent's process record
// whose name (namespace/pod/container) starts with prefix.
func agentProcesses(t *testing.T, c *localcluster.Cluster, prefix string) []localcluster.RecordedProcess {
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

// assertNoProcesses fails if any process has dir in its command line (every
// JVM the agent starts has its pod directory there).
func assertNoProcesses(t *testing.T, dir string) {
	t.Helper()
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && bytes.Contains(cmdline, []byte(dir)) {
			t.Errorf("process %d still running: %.200s", pid, bytes.ReplaceAll(cmdline, []byte{0}, []byte{' '}))
		}
	}
}

func dumpAgentLog(t *testing.T, c *localcluster.Cluster) {
	if !t.Failed() || c.NodeAgent == nil {
		return
	}
	data, err := os.ReadFile(c.NodeAgent.LogPath)
	if err != nil {
		return
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > 150 {
		lines = lines[len(lines)-150:]
	}
	t.Logf("--- last lines of %s\n%s", c.NodeAgent.LogPath, strings.Join(lines, "\n"))
	logs, _ := filepath.Glob(filepath.Join(c.NodeAgentDir, "pods", "*", "logs", "*", "*.log"))
	for _, l := range logs {
		data, err := os.ReadFile(l)
		if err != nil {
			continue
		}
		lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
		if len(lines) > 40 {
			lines = lines[len(lines)-40:]
		}
		t.Logf("--- last lines of %s\n%s", l, strings.Join(lines, "\n"))
	}
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

var httpClient = &http.Client{Timeout: 5 * time.Second}

func tryGetJSON(ctx context.Context, url string, v any) bool {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return false
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	return resp.StatusCode == http.StatusOK && json.NewDecoder(resp.Body).Decode(v) == nil
}

func getJSON(t *testing.T, ctx context.Context, url string, v any) {
	t.Helper()
	if !tryGetJSON(ctx, url, v) {
		t.Fatalf("GET %s failed", url)
	}
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
