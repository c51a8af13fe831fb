package snapshote2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	flinkjvm "github.com/flinkops/flink-operator/e2e/flink"
	"github.com/flinkops/flink-operator/e2e/localcluster"
	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/cluster"
	"github.com/flinkops/flink-operator/pkg/config"
	flinkclient "github.com/flinkops/flink-operator/pkg/generated/clientset/versioned"
)

var flavours = map[string]struct {
	image   string
	version v1beta1.FlinkVersion
}{
	"1.20.5": {"flink:1.20", v1beta1.FlinkVersion1_20},
	"2.3.0":  {"flink:2.3", v1beta1.FlinkVersion2_3},
}

type suite struct {
	t        *testing.T
	ctx      context.Context
	c        *localcluster.Cluster
	kube     kubernetes.Interface
	flink    flinkclient.Interface
	operator string // binary
}

func TestSnapshotsWithRealFlink(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Minute)
	defer cancel()
	for _, v := range flinkjvm.Versions() {
		if _, ok := flavours[v]; !ok {
			t.Fatalf("pinned Flink %s has no image here", v)
		}
		if _, err := flinkjvm.Ensure(ctx, v); err != nil {
			t.Fatal(err)
		}
	}
	bins, err := localcluster.BuildCommands(ctx, "./cmd/flink-operator")
	if err != nil {
		t.Fatal(err)
	}
	c, err := localcluster.Start(ctx, localcluster.Options{NodeAgent: true, Out: testWriter{t}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	root, _ := localcluster.ModuleRoot()
	if _, err := c.InstallCRDs(ctx, filepath.Join(root, "manifests", "crds")); err != nil {
		t.Fatal(err)
	}
	if err := c.GrantClusterAdmin(ctx, localcluster.OperatorUser); err != nil {
		t.Fatal(err)
	}
	s := &suite{t: t, ctx: ctx, c: c,
		kube:     kubernetes.NewForConfigOrDie(c.RESTConfig()),
		flink:    flinkclient.NewForConfigOrDie(c.RESTConfig()),
		operator: filepath.Join(bins, "flink-operator")}

	for i, v := range flinkjvm.Versions() {
		t.Run(v, func(t *testing.T) { s.run(t, v, fmt.Sprintf("snap-%d", i)) })
	}
}

func (s *suite) run(t *testing.T, version, ns string) {
	ctx := s.ctx
	job := s.deployJob(t, version, ns)
	op := s.startOperator(t, nil)

	// A savepoint reaches COMPLETED with a path whose _metadata exists.
	sp := s.createSnapshot(t, ns, "sp", true)
	done := s.waitState(t, ns, sp, v1beta1.SnapshotCompleted, 2*time.Minute)
	if _, err := os.Stat(filepath.Join(localPath(done.Status.Path), "_metadata")); err != nil {
		t.Fatalf("savepoint %s has no _metadata: %v", done.Status.Path, err)
	}
	t.Logf("%s: savepoint COMPLETED at %s", version, done.Status.Path)

	// A checkpoint reaches COMPLETED with a path.
	cp := s.createSnapshot(t, ns, "cp", false)
	cpDone := s.waitState(t, ns, cp, v1beta1.SnapshotCompleted, 2*time.Minute)
	if cpDone.Status.Path == "" {
		t.Fatalf("checkpoint completed without a path: %+v", cpDone.Status)
	}
	t.Logf("%s: checkpoint COMPLETED at %s", version, cpDone.Status.Path)

	// kubectl get flinksnp shows the columns people need.
	out, err := s.c.Kubectl("get", "flinksnp", "-n", ns)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if got := strings.Fields(lines[0]); strings.Join(got, " ") != "NAME TYPE JOB TRIGGER STATE PATH AGE" {
		t.Fatalf("kubectl get flinksnp header: %q", lines[0])
	}
	if !strings.Contains(out, "SAVEPOINT") || !strings.Contains(out, "CHECKPOINT") || !strings.Contains(out, "MANUAL") || !strings.Contains(out, done.Status.Path) {
		t.Fatalf("kubectl get flinksnp:\n%s", out)
	}
	t.Logf("%s: kubectl get flinksnp:\n%s", version, out)

	// Deleting a disposeOnDelete savepoint removes its files, then the resource.
	if err := s.flink.FlinkV1beta1().FlinkStateSnapshots(ns).Delete(ctx, sp, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	s.waitGone(t, ns, sp, 2*time.Minute)
	if _, err := os.Stat(localPath(done.Status.Path)); !os.IsNotExist(err) {
		t.Fatalf("savepoint files still at %s after deleting the snapshot (%v)", done.Status.Path, err)
	}

	// Crash test: kill -9 right after the IN_PROGRESS write; the restarted
	// operator completes it with exactly one savepoint directory.
	stopOperator(t, op)
	before := savepointDirs(t, job.savepointDir)
	crashing := s.startOperator(t, []string{"FLINKOP_TEST_FAULT=exit-after-snapshot-intent"})
	crash := s.createSnapshot(t, ns, "crash", false)
	select {
	case <-crashing.done:
	case <-time.After(2 * time.Minute):
		t.Fatal("operator did not hit the fault point")
	}
	mid, err := s.flink.FlinkV1beta1().FlinkStateSnapshots(ns).Get(ctx, crash, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if mid.Status.State != v1beta1.SnapshotInProgress || mid.Status.TriggerID == "" {
		t.Fatalf("after the crash: %+v, want IN_PROGRESS with a trigger id", mid.Status)
	}
	op = s.startOperator(t, nil)
	crashDone := s.waitState(t, ns, crash, v1beta1.SnapshotCompleted, 2*time.Minute)
	after := savepointDirs(t, job.savepointDir)
	if len(after) != len(before)+1 {
		t.Fatalf("savepoint directories before %v, after %v: want exactly one more", before, after)
	}
	if crashDone.Status.TriggerID != mid.Status.TriggerID {
		t.Errorf("trigger id changed across the crash: %s -> %s", mid.Status.TriggerID, crashDone.Status.TriggerID)
	}
	t.Logf("%s: crash after the intent write: completed with one savepoint %s", version, crashDone.Status.Path)

	// A snapshot of a job that is then stopped ends ABANDONED.
	stopOperator(t, op)
	abandoned := s.createSnapshot(t, ns, "abandon", true)
	s.cancelJob(t, job)
	op = s.startOperator(t, nil)
	a := s.waitState(t, ns, abandoned, v1beta1.SnapshotAbandoned, time.Minute)
	if !strings.Contains(a.Status.Error, "is not running") {
		t.Errorf("abandoned with %q", a.Status.Error)
	}
	stopOperator(t, op)

	// Tear the Flink cluster down.
	if err := s.kube.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
}

// deployedJob is a Flink application created by hand.
type deployedJob struct {
	ns, name, jobID, rest string
	savepointDir          string
}

func (s *suite) deployJob(t *testing.T, version, ns string) *deployedJob {
	ctx := s.ctx
	if _, err := s.kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	data := t.TempDir()
	fl := flavours[version]
	dep := &v1beta1.FlinkDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: "job", Namespace: ns},
		Spec: v1beta1.FlinkDeploymentSpec{
			Image:        fl.image,
			FlinkVersion: fl.version,
			Mode:         v1beta1.DeploymentModeStandalone,
			FlinkConfiguration: v1beta1.NewConfiguration(map[string]string{
				"jobmanager.memory.process.size":        "768m",
				"taskmanager.memory.process.size":       "1024m",
				"taskmanager.memory.managed.size":       "64m",
				"taskmanager.numberOfTaskSlots":         "2",
				"execution.checkpointing.interval":      "2 s",
				"execution.checkpointing.dir":           "file://" + filepath.Join(data, "checkpoints"),
				"execution.checkpointing.savepoint-dir": "file://" + filepath.Join(data, "savepoints"),
				"heartbeat.interval":                    "1000",
			}),
			JobManager:  &v1beta1.JobManagerSpec{Replicas: ptr.To[int32](1)},
			TaskManager: &v1beta1.TaskManagerSpec{Replicas: ptr.To[int32](1)},
			Job: &v1beta1.JobSpec{
				JarURI: "local:///opt/flink/usrlib/testjob.jar", EntryClass: flinkjvm.TestJobClass,
				Parallelism: ptr.To[int32](2), UpgradeMode: v1beta1.UpgradeModeSavepoint,
				Args: []string{"--rate", "10", "--keys", "10"},
			},
		},
	}
	created, err := s.flink.FlinkV1beta1().FlinkDeployments(ns).Create(ctx, dep, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	jobID := strings.Repeat("ab", 16)
	built, err := cluster.Build(cluster.Input{Deployment: created, Spec: created.Spec, OperatorConfig: config.Defaults(), JobID: jobID})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if _, err := s.kube.CoreV1().ConfigMaps(ns).Create(ctx, built.ConfigMap, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, svc := range built.Services() {
		if _, err := s.kube.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.kube.AppsV1().Deployments(ns).Create(ctx, built.JobManager, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.kube.AppsV1().Deployments(ns).Create(ctx, built.TaskManager, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	rest := s.waitJobManager(t, ns, "job")
	waitFor(t, 3*time.Minute, "job RUNNING", func() (bool, error) {
		// RUNNING with every task running: Flink refuses savepoints before.
		var overview struct {
			Jobs []struct {
				JID   string         `json:"jid"`
				State string         `json:"state"`
				Tasks map[string]int `json:"tasks"`
			} `json:"jobs"`
		}
		if err := getJSON(ctx, rest+"/jobs/overview", &overview); err != nil {
			return false, nil
		}
		for _, j := range overview.Jobs {
			if j.JID == jobID && j.State == "RUNNING" && j.Tasks["total"] > 0 && j.Tasks["running"] == j.Tasks["total"] {
				return true, nil
			}
		}
		return false, nil
	})
	t.Logf("%s: job RUNNING %s after its objects were created", version, time.Since(start).Round(time.Second))
	// No deployment controller runs here: record what it would observe.
	created.Status.JobStatus = v1beta1.JobStatus{JobID: jobID, State: v1beta1.JobStatusRunning, JobName: "counting"}
	created.Status.JobManagerDeploymentStatus = v1beta1.JobManagerReady
	if _, err := s.flink.FlinkV1beta1().FlinkDeployments(ns).UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	return &deployedJob{ns: ns, name: "job", jobID: jobID, rest: rest, savepointDir: filepath.Join(data, "savepoints")}
}

// waitJobManager waits for a Ready JobManager pod and returns its REST URL.
func (s *suite) waitJobManager(t *testing.T, ns, name string) string {
	var url string
	waitFor(t, 3*time.Minute, "JobManager pod Ready", func() (bool, error) {
		pods, err := s.kube.CoreV1().Pods(ns).List(s.ctx, metav1.ListOptions{LabelSelector: "app=" + name + ",component=jobmanager"})
		if err != nil {
			return false, err
		}
		for _, p := range pods.Items {
			for _, c := range p.Status.Conditions {
				if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue && p.Status.PodIP != "" {
					url = "http://" + p.Status.PodIP + ":8081"
					return true, nil
				}
			}
		}
		return false, nil
	})
	return url
}

func (s *suite) cancelJob(t *testing.T, j *deployedJob) {
	req, _ := http.NewRequestWithContext(s.ctx, http.MethodPatch, j.rest+"/jobs/"+j.jobID+"?mode=cancel", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	dep, err := s.flink.FlinkV1beta1().FlinkDeployments(j.ns).Get(s.ctx, j.name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	dep.Status.JobStatus.State = v1beta1.JobStatusCanceled
	if _, err := s.flink.FlinkV1beta1().FlinkDeployments(j.ns).UpdateStatus(s.ctx, dep, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func (s *suite) createSnapshot(t *testing.T, ns, name string, savepoint bool) string {
	snap := &v1beta1.FlinkStateSnapshot{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: v1beta1.FlinkStateSnapshotSpec{
			JobReference: &v1beta1.JobReference{Kind: v1beta1.JobReferenceKindDeployment, Name: "job"},
			BackoffLimit: ptr.To[int32](0),
		},
	}
	if savepoint {
		snap.Spec.Savepoint = &v1beta1.SavepointSpec{DisposeOnDelete: ptr.To(true)}
	} else {
		snap.Spec.Savepoint = &v1beta1.SavepointSpec{DisposeOnDelete: ptr.To(false)}
		if name == "cp" {
			snap.Spec.Savepoint, snap.Spec.Checkpoint = nil, &v1beta1.CheckpointSpec{}
		}
	}
	if _, err := s.flink.FlinkV1beta1().FlinkStateSnapshots(ns).Create(s.ctx, snap, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return name
}

func (s *suite) waitState(t *testing.T, ns, name string, want v1beta1.SnapshotState, timeout time.Duration) *v1beta1.FlinkStateSnapshot {
	var got *v1beta1.FlinkStateSnapshot
	waitFor(t, timeout, name+" "+string(want), func() (bool, error) {
		snap, err := s.flink.FlinkV1beta1().FlinkStateSnapshots(ns).Get(s.ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		got = snap
		if snap.Status.State.IsTerminal() && snap.Status.State != want {
			return false, fmt.Errorf("%s ended %s: %s", name, snap.Status.State, snap.Status.Error)
		}
		return snap.Status.State == want, nil
	})
	return got
}

func (s *suite) waitGone(t *testing.T, ns, name string, timeout time.Duration) {
	waitFor(t, timeout, name+" deleted", func() (bool, error) {
		_, err := s.flink.FlinkV1beta1().FlinkStateSnapshots(ns).Get(s.ctx, name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
}

// operatorProcess is the operator binary running outside the cluster.
type operatorProcess struct {
	cmd  *exec.Cmd
	done chan struct{}
}

func (s *suite) startOperator(t *testing.T, env []string) *operatorProcess {
	cmd := exec.Command(s.operator, "--kubeconfig", s.c.OperatorKubeconfig, "--flink-endpoint=pod-ip",
		"--controllers=flinkstatesnapshot", "--metrics-bind-address=0", "--health-probe-bind-address=0")
	cmd.Env = append(os.Environ(), env...)
	logFile, err := os.OpenFile(filepath.Join(s.c.Dir, "operator.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &operatorProcess{cmd: cmd, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); logFile.Close(); close(p.done) }()
	t.Cleanup(func() { stopOperator(t, p) })
	return p
}

func stopOperator(t *testing.T, p *operatorProcess) {
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

func savepointDirs(t *testing.T, dir string) []string {
	entries, err := os.ReadDir(dir)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "savepoint-") {
			out = append(out, e.Name())
		}
	}
	return out
}

func localPath(p string) string {
	p = strings.TrimPrefix(p, "file://")
	return strings.TrimPrefix(p, "file:")
}

func getJSON(ctx context.Context, url string, into any) error {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(resp.Body)
		return fmt.Errorf("GET %s: %s %s", url, resp.Status, body)
	}
	return json.NewDecoder(resp.Body).Decode(into)
}

func waitFor(t *testing.T, timeout time.Duration, what string, cond func() (bool, error)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ok, err := cond()
		if err != nil {
			t.Fatalf("waiting for %s: %v", what, err)
		}
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(300 * time.Millisecond)
	}
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
