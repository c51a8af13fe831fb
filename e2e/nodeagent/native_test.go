package nodeagent_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	flinkjvm "github.com/flinkops/flink-operator/e2e/flink"
	"github.com/flinkops/flink-operator/e2e/localcluster"
	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/cluster"
	"github.com/flinkops/flink-operator/pkg/config"
)

// TestNativeApplication runs, without the operator, what the operator
// creates for a native-mode application FlinkDeployment (pkg/cluster with
// Input.Native: the JobManager Deployment running kubernetes-jobmanager.sh
// kubernetes-application, its Services and ConfigMap), for every pinned
// Flink line, with a ServiceAccount "flink" bound to a Role granting what
// upstream's Helm chart grants it (pods, configmaps, deployments). Flink's
// own resource manager, through the API server as that ServiceAccount,
// creates the TaskManager pods (owned by the JobManager Deployment), which
// the agent runs as real KubernetesTaskExecutorRunner JVMs; the job reaches
// RUNNING on them. Deleting the JobManager Deployment then removes every pod
// (the garbage collector: the ReplicaSet and its JobManager pod, and the
// TaskManager pods through their owner reference) and the agent stops every
// JVM.
func TestNativeApplication(t *testing.T) {
	testNative(t, nativeApplication, flinkjvm.Versions())
}

// TestNativeHA is TestNativeApplication with Flink's Kubernetes HA
// (high-availability.type kubernetes), for every pinned line: the
// JobManager advertises its pod IP (_POD_IP_ADDRESS), leader information goes
// to ConfigMaps through the API server; after a checkpoint, the JobManager
// JVM is killed (SIGKILL), the agent restarts the container, and the new
// JobManager recovers the job from its latest checkpoint.
func TestNativeHA(t *testing.T) {
	testNative(t, nativeHA, flinkjvm.Versions())
}

type nativeKind int

const (
	nativeApplication nativeKind = iota
	nativeSession
	nativeHA
)

// TestNativeSession is TestNativeApplication for a session cluster
// (kubernetes-jobmanager.sh kubernetes-session): it starts without
// TaskManagers; the test job, uploaded and run over REST, makes Flink create
// its TaskManager pod; once the job is cancelled Flink deletes the idle
// TaskManager's pod itself (resourcemanager.taskmanager-timeout), and the
// agent stops its JVM.
func TestNativeSession(t *testing.T) {
	testNative(t, nativeSession, flinkjvm.Versions())
}

func testNative(t *testing.T, kind nativeKind, versions []string) {
	if os.Geteuid() != 0 {
		t.Skip("mount namespaces need root")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	dists := map[string]*flinkjvm.Dist{}
	for _, v := range versions { // Maven, before the clocks start
		d, err := flinkjvm.Ensure(ctx, v)
		if err != nil {
			t.Fatal(err)
		}
		dists[v] = d
	}
	c, err := localcluster.Start(ctx, localcluster.Options{NodeAgent: true, Out: testWriter{t}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	client := kubernetes.NewForConfigOrDie(c.RESTConfig())
	createFlinkServiceAccount(t, ctx, client, "default")
	for i, v := range versions {
		t.Run(v, func(t *testing.T) { testNativeCluster(t, ctx, c, client, dists[v], kind, i) })
	}
}

// createFlinkServiceAccount creates the ServiceAccount "flink" with the Role
// upstream's chart gives it (jobRbacRules: pods, configmaps, deployments and
// deployments/finalizers, all verbs but deletecollection) in ns.
func createFlinkServiceAccount(t *testing.T, ctx context.Context, client kubernetes.Interface, ns string) {
	t.Helper()
	verbs := []string{"get", "list", "watch", "create", "update", "patch", "delete"}
	if _, err := client.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{
		ObjectMeta: metav1.ObjectMeta{Name: "flink", Namespace: ns},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.RbacV1().Roles(ns).Create(ctx, &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: "flink", Namespace: ns},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"pods", "configmaps"}, Verbs: verbs},
			{APIGroups: []string{"apps"}, Resources: []string{"deployments", "deployments/finalizers"}, Verbs: verbs},
		},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "flink-role-binding", Namespace: ns},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "flink"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "flink", Namespace: ns}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func testNativeCluster(t *testing.T, ctx context.Context, c *localcluster.Cluster, client kubernetes.Interface, dist *flinkjvm.Dist, nk nativeKind, index int) {
	session, ha := nk == nativeSession, nk == nativeHA
	begin := time.Now()
	version := dist.Version
	mm := strings.Join(strings.Split(version, ".")[:2], ".")
	name := "native-" + strings.ReplaceAll(mm, ".", "-")
	parallelism := 2 // one slot per TaskManager: Flink asks for two pods
	kind, entrypoint := "application", "org.apache.flink.kubernetes.entrypoint.KubernetesApplicationClusterEntrypoint"
	if session {
		name += "-session"
		parallelism = 1
		kind, entrypoint = "session", "org.apache.flink.kubernetes.entrypoint.KubernetesSessionClusterEntrypoint"
	}
	fd := &v1beta1.FlinkDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("not-in-the-api")},
		Spec: v1beta1.FlinkDeploymentSpec{
			Image:          "flink:" + mm,
			FlinkVersion:   v1beta1.FlinkVersion("v" + strings.ReplaceAll(mm, ".", "_")),
			Mode:           v1beta1.DeploymentModeNative,
			ServiceAccount: "flink",
			FlinkConfiguration: flinkConf(map[string]any{
				"jobmanager.memory.process.size":  "768m",
				"taskmanager.memory.process.size": "1024m",
				"taskmanager.memory.managed.size": "64m",
				"taskmanager.numberOfTaskSlots":   "1",
				"state.backend.type":              "hashmap",
			}),
			Job: &v1beta1.JobSpec{
				JarURI:      "local:///opt/flink/usrlib/testjob.jar",
				EntryClass:  flinkjvm.TestJobClass,
				Args:        []string{"--rate", "10", "--keys", "10"},
				Parallelism: ptr.To(int32(parallelism)),
				UpgradeMode: v1beta1.UpgradeModeSavepoint,
			},
		},
	}
	if session {
		fd.Spec.Job = nil
		fd.Spec.FlinkConfiguration = flinkConf(map[string]any{
			"jobmanager.memory.process.size":      "768m",
			"taskmanager.memory.process.size":     "1024m",
			"taskmanager.memory.managed.size":     "64m",
			"taskmanager.numberOfTaskSlots":       "1",
			"state.backend.type":                  "hashmap",
			"web.cancel.enable":                   "true",
			"resourcemanager.taskmanager-timeout": "2 s",
		})
	}
	if ha {
		name += "-ha"
		dir := t.TempDir()
		var conf map[string]any
		if err := json.Unmarshal(fd.Spec.FlinkConfiguration.Raw, &conf); err != nil {
			t.Fatal(err)
		}
		conf["high-availability.type"] = "kubernetes"
		conf["high-availability.storageDir"] = "file://" + dir + "/ha"
		conf["state.checkpoints.dir"] = "file://" + dir + "/checkpoints"
		conf["execution.checkpointing.interval"] = "2 s"
		fd.Spec.FlinkConfiguration = flinkConf(conf)
		fd.Name = name
	}
	jobID := strings.Repeat("a7"+strconv.Itoa(index), 11)[:32]
	objs, err := cluster.Build(cluster.Input{Deployment: fd, Spec: fd.Spec, OperatorConfig: config.Defaults(), JobID: jobID, Native: true})
	if err != nil {
		t.Fatal(err)
	}
	if !objs.Native || objs.TaskManager != nil {
		t.Fatalf("pkg/cluster built no native cluster (Native %v, TaskManager Deployment %v)", objs.Native, objs.TaskManager != nil)
	}
	createCluster(t, ctx, client, objs)
	dep, err := client.AppsV1().Deployments("default").Get(ctx, objs.JobManager.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	dumpOnFailure(t, c, name)

	var jm []corev1.Pod
	waitFor(t, ctx, 3*time.Minute, "a ready JobManager", func() bool {
		jm = readyPods(t, ctx, client, cluster.JobManagerSelector(cluster.Native, name))
		return len(jm) == 1
	})
	rest := "http://" + jm[0].Status.PodIP + ":8081"
	if session {
		// A native session cluster starts without TaskManagers.
		if tms, err := client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: cluster.TaskManagerSelector(cluster.Native, name)}); err != nil || len(tms.Items) != 0 {
			t.Fatalf("native session cluster with TaskManager pods before any job: %d, %v", len(tms.Items), err)
		}
		jobID = submitJar(t, ctx, rest, dist.TestJobJar, flinkjvm.TestJobClass, "--rate", "10", "--keys", "10")
	}
	waitFor(t, ctx, 4*time.Minute, "job RUNNING on Flink's TaskManager pods", func() bool {
		return jobRunning(ctx, rest, jobID)
	})
	t.Logf("Flink %s native %s: job RUNNING %s after the cluster's objects were created", version, kind, time.Since(begin).Round(time.Millisecond))

	// The JobManager: a native entrypoint JVM whose _POD_IP_ADDRESS
	// (downward API status.podIP) is the IP it serves on.
	jmProc := onlyProcess(t, c, "default/"+jm[0].Name+"/")
	assertCmdline(t, jmProc.PID, entrypoint)
	environ, err := os.ReadFile("/proc/" + strconv.Itoa(jmProc.PID) + "/environ")
	if err != nil {
		t.Fatal(err)
	}
	if want := "\x00_POD_IP_ADDRESS=" + jm[0].Status.PodIP + "\x00"; !strings.Contains(string(environ), want) {
		t.Errorf("JobManager JVM has no %q", strings.Trim(want, "\x00"))
	}

	// The TaskManagers: pods Flink created, owned by the JobManager
	// Deployment, each a running KubernetesTaskExecutorRunner JVM registered
	// under its pod name.
	tms, err := client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: cluster.TaskManagerSelector(cluster.Native, name)})
	if err != nil {
		t.Fatal(err)
	}
	if len(tms.Items) != parallelism {
		t.Fatalf("%d TaskManager pods, want %d", len(tms.Items), parallelism)
	}
	// Flink's REST endpoint reaches its ResourceManager through a gateway it
	// retrieves on its own; until it has, /taskmanagers answers 404 "Cannot
	// connect to ResourceManager right now. Please try to refresh." (seen
	// on a loaded machine with the job already RUNNING), so it is polled
	// until every TaskManager pod is registered, as a client would.
	ids := map[string]bool{}
	registeredAll := func() bool {
		var registered struct {
			TaskManagers []struct {
				ID string `json:"id"`
			} `json:"taskmanagers"`
		}
		if !tryGetJSON(ctx, rest+"/taskmanagers", &registered) {
			return false
		}
		clear(ids)
		for _, tm := range registered.TaskManagers {
			ids[tm.ID] = true
		}
		for _, p := range tms.Items {
			if !ids[p.Name] {
				return false
			}
		}
		return true
	}
	waitForf(t, ctx, time.Minute, func() string { return fmt.Sprintf("every TaskManager pod registered (registered: %v)", ids) }, registeredAll)
	for _, p := range tms.Items {
		if !strings.HasPrefix(p.Name, cluster.TaskManagerPodNamePrefix(name)) {
			t.Errorf("TaskManager pod %s: want a name beginning %s", p.Name, cluster.TaskManagerPodNamePrefix(name))
		}
		if len(p.OwnerReferences) != 1 || p.OwnerReferences[0].Kind != "Deployment" || p.OwnerReferences[0].Name != dep.Name ||
			p.OwnerReferences[0].UID != dep.UID || !ptr.Deref(p.OwnerReferences[0].Controller, false) {
			t.Errorf("TaskManager pod %s owner references %+v, want the JobManager Deployment %s (uid %s) as controller", p.Name, p.OwnerReferences, dep.Name, dep.UID)
		}
		if p.Spec.ServiceAccountName != "flink" || p.Spec.NodeName == "" || p.Status.Phase != corev1.PodRunning || !podReady(&p) {
			t.Errorf("TaskManager pod %s: service account %q, node %q, phase %s, ready %v", p.Name, p.Spec.ServiceAccountName, p.Spec.NodeName, p.Status.Phase, podReady(&p))
		}
		if !ids[p.Name] {
			t.Errorf("TaskManager pod %s is not a registered TaskManager (registered: %v)", p.Name, ids)
		}
		proc := onlyProcess(t, c, "default/"+p.Name+"/")
		assertCmdline(t, proc.PID, "org.apache.flink.kubernetes.taskmanager.KubernetesTaskExecutorRunner")
		if !proc.Alive() {
			t.Errorf("TaskManager pod %s: JVM %d is not running", p.Name, proc.PID)
		}
		t.Logf("TaskManager pod %s (IP %s, owners %v) created by Flink, JVM pid %d", p.Name, p.Status.PodIP, ownerNames(p.OwnerReferences), proc.PID)
	}

	if ha {
		testNativeFailover(t, ctx, c, client, name, jm[0], rest, jobID)
		// Flink's common labels: the HA ConfigMaps of either Flink line
		// (Flink 2 drops configmap-type=high-availability) and the
		// cluster's own ConfigMap, deleted at the end anyway.
		defer client.CoreV1().ConfigMaps("default").DeleteCollection(ctx, metav1.DeleteOptions{},
			metav1.ListOptions{LabelSelector: cluster.HAConfigMapListSelector(name)})
	}
	if session {
		// Cancelled, the job leaves its TaskManager idle: Flink deletes the
		// pod, and the agent stops the JVM.
		tm := tms.Items[0]
		tmProc := onlyProcess(t, c, "default/"+tm.Name+"/")
		req, _ := http.NewRequestWithContext(ctx, http.MethodPatch, rest+"/jobs/"+jobID+"?mode=cancel", nil)
		resp, err := httpClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusAccepted {
			t.Fatalf("cancel job %s: HTTP %d", jobID, resp.StatusCode)
		}
		cancelled := time.Now()
		waitFor(t, ctx, 2*time.Minute, "Flink to delete the idle TaskManager pod "+tm.Name, func() bool {
			_, err := client.CoreV1().Pods("default").Get(ctx, tm.Name, metav1.GetOptions{})
			return isNotFound(err)
		})
		if tmProc.Alive() {
			t.Errorf("TaskManager JVM %d still runs after Flink deleted its pod", tmProc.PID)
		}
		t.Logf("Flink deleted the idle TaskManager pod %s %s after the job's cancellation; its JVM is gone", tm.Name, time.Since(cancelled).Round(time.Millisecond))
		tms.Items = nil
	}

	// Deleting the JobManager Deployment removes every pod of the cluster,
	// and the agent stops their JVMs.
	var procs []localcluster.RecordedProcess
	for _, p := range append(jm, tms.Items...) {
		procs = append(procs, recordedPIDs(t, c, "default/"+p.Name+"/")...)
	}
	deleted := time.Now()
	if err := client.AppsV1().Deployments("default").Delete(ctx, dep.Name, metav1.DeleteOptions{
		PropagationPolicy: ptr.To(metav1.DeletePropagationBackground),
	}); err != nil {
		t.Fatal(err)
	}
	all := labels.SelectorFromSet(cluster.CommonLabels(cluster.Native, name)).String()
	var left []string
	waitForf(t, ctx, 2*time.Minute, func() string { return "no pods left, have " + strings.Join(left, ", ") }, func() bool {
		l, err := client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: all})
		if err != nil {
			t.Fatal(err)
		}
		left = left[:0]
		for _, p := range l.Items {
			left = append(left, p.Name)
		}
		return len(l.Items) == 0
	})
	for _, p := range procs {
		if p.Alive() {
			t.Errorf("%s (pid %d) still runs after its pod is gone", p.Name, p.PID)
		}
	}
	t.Logf("Flink %s: every pod and JVM gone %s after the Deployment's deletion; %s in all", version,
		time.Since(deleted).Round(time.Millisecond), time.Since(begin).Round(time.Millisecond))
	for _, s := range objs.Services() {
		client.CoreV1().Services("default").Delete(ctx, s.Name, metav1.DeleteOptions{})
	}
	client.CoreV1().ConfigMaps("default").Delete(ctx, objs.ConfigMap.Name, metav1.DeleteOptions{})
}

// onlyProcess is the one recorded process whose name begins with prefix.
func onlyProcess(t *testing.T, c *localcluster.Cluster, prefix string) localcluster.RecordedProcess {
	t.Helper()
	procs := recordedPIDs(t, c, prefix)
	if len(procs) != 1 {
		t.Fatalf("%d recorded processes %s*, want 1", len(procs), prefix)
	}
	return procs[0]
}

func assertCmdline(t *testing.T, pid int, want string) {
	t.Helper()
	cmdline, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil {
		t.Errorf("pid %d: %v", pid, err)
		return
	}
	if !strings.Contains(string(cmdline), "\x00"+want+"\x00") {
		t.Errorf("pid %d does not run %s: %.300s...", pid, want, strings.ReplaceAll(string(cmdline), "\x00", " "))
	}
}

// dumpOnFailure logs the end of every container log of the cluster's pods
// if the test fails.
func dumpOnFailure(t *testing.T, c *localcluster.Cluster, name string) {
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		logs, _ := os.ReadDir(c.NodeAgentDir + "/pods")
		for _, d := range logs {
			if strings.HasPrefix(d.Name(), "default_"+name) {
				dumpLog(t, c.NodeAgentDir+"/pods/"+d.Name()+"/logs/flink-main-container.log", 60)
			}
		}
	})
}

// submitJar uploads jar to a session cluster (/jars/upload) and runs it
// (/jars/:id/run) with entryClass and args; it returns the job id.
func submitJar(t *testing.T, ctx context.Context, rest, jar, entryClass string, args ...string) string {
	t.Helper()
	data, err := os.ReadFile(jar)
	if err != nil {
		t.Fatal(err)
	}
	var body bytes.Buffer
	w := multipart.NewWriter(&body)
	part, err := w.CreatePart(textproto.MIMEHeader{
		"Content-Disposition": {`form-data; name="jarfile"; filename="testjob.jar"`},
		"Content-Type":        {"application/x-java-archive"},
	})
	if err != nil {
		t.Fatal(err)
	}
	part.Write(data)
	w.Close()
	var up struct {
		Filename string `json:"filename"`
	}
	post(t, ctx, rest+"/jars/upload", w.FormDataContentType(), &body, &up)
	run, _ := json.Marshal(map[string]any{"entryClass": entryClass, "programArgsList": args})
	var job struct {
		JobID string `json:"jobid"`
	}
	post(t, ctx, rest+"/jars/"+filepath.Base(up.Filename)+"/run", "application/json", bytes.NewReader(run), &job)
	if job.JobID == "" {
		t.Fatal("run: no job id")
	}
	return job.JobID
}

func post(t *testing.T, ctx context.Context, url, contentType string, body io.Reader, out any) {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, body)
	req.Header.Set("Content-Type", contentType)
	resp, err := (&http.Client{Timeout: time.Minute}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || json.Unmarshal(data, out) != nil {
		t.Fatalf("POST %s: HTTP %d: %s", url, resp.StatusCode, data)
	}
}

func ownerNames(refs []metav1.OwnerReference) []string {
	var out []string
	for _, r := range refs {
		out = append(out, r.Kind+"/"+r.Name)
	}
	return out
}

func isNotFound(err error) bool { return apierrors.IsNotFound(err) }

// testNativeFailover kills the JobManager JVM of an HA cluster once the job
// has a completed checkpoint, and waits until the restarted JobManager (same
// pod, same IP) runs the job again, restored from a checkpoint.
func testNativeFailover(t *testing.T, ctx context.Context, c *localcluster.Cluster, client kubernetes.Interface, name string, jm corev1.Pod, rest, jobID string) {
	t.Helper()
	if cm, err := client.CoreV1().ConfigMaps("default").Get(ctx, cluster.HAClusterConfigMapName(name), metav1.GetOptions{}); err != nil {
		t.Errorf("HA ConfigMap %s: %v", cluster.HAClusterConfigMapName(name), err)
	} else {
		t.Logf("HA ConfigMap %s (owners %v)", cm.Name, ownerNames(cm.OwnerReferences))
	}
	type checkpoints struct {
		Counts struct {
			Completed int `json:"completed"`
		} `json:"counts"`
		Latest struct {
			Restored *struct {
				ID int `json:"id"`
			} `json:"restored"`
		} `json:"latest"`
	}
	var cp checkpoints
	waitFor(t, ctx, 2*time.Minute, "a completed checkpoint", func() bool {
		return tryGetJSON(ctx, rest+"/jobs/"+jobID+"/checkpoints", &cp) && cp.Counts.Completed > 0
	})
	proc := onlyProcess(t, c, "default/"+jm.Name+"/")
	if err := syscall.Kill(proc.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	waitFor(t, ctx, 3*time.Minute, "the job RUNNING again, restored from a checkpoint", func() bool {
		var job struct {
			State string `json:"state"`
		}
		cp = checkpoints{}
		return tryGetJSON(ctx, rest+"/jobs/"+jobID, &job) && job.State == "RUNNING" &&
			tryGetJSON(ctx, rest+"/jobs/"+jobID+"/checkpoints", &cp) && cp.Latest.Restored != nil
	})
	p, err := client.CoreV1().Pods("default").Get(ctx, jm.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Status.ContainerStatuses) == 0 || p.Status.ContainerStatuses[0].RestartCount < 1 || p.Status.PodIP != jm.Status.PodIP {
		t.Errorf("JobManager pod after the kill: %+v, IP %s (was %s)", p.Status.ContainerStatuses, p.Status.PodIP, jm.Status.PodIP)
	}
	t.Logf("JobManager JVM killed; job RUNNING again %s later, restored from checkpoint %d", time.Since(killed).Round(time.Millisecond), cp.Latest.Restored.ID)
}
