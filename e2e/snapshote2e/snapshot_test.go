package snapshote2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	flinkjvm "github.com/flinkops/flink-operator/e2e/flink"
	"github.com/flinkops/flink-operator/e2e/framework"
	"github.com/flinkops/flink-operator/e2e/localcluster"
	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/cluster"
	"github.com/flinkops/flink-operator/pkg/config"
)

var flavours = map[string]struct {
	image   string
	version v1beta1.FlinkVersion
}{
	"1.20.5": {"flink:1.20", v1beta1.FlinkVersion1_20},
	"2.3.0":  {"flink:2.3", v1beta1.FlinkVersion2_3},
}

type suite struct {
	*framework.Env
	// faultBin is the operator built with its test fault points
	// (framework.Env.FaultInjectOperatorBinary).
	faultBin string
}

func TestSnapshotsWithRealFlink(t *testing.T) {
	if framework.Kind() {
		t.Skip("the test kills and restarts the operator process, which is the local provider's")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Minute)
	defer cancel()
	for _, v := range flinkjvm.Versions() {
		if _, ok := flavours[v]; !ok {
			t.Fatalf("pinned Flink %s has no image here", v)
		}
	}
	// The test runs the operator itself, with the snapshot controller only.
	e := framework.Setup(t, ctx, framework.Options{Name: "snapshote2e", NoOperator: true})
	if err := e.Local.GrantClusterAdmin(ctx, localcluster.OperatorUser); err != nil {
		t.Fatal(err)
	}
	// Built before any Flink JVM runs: the crash test needs it.
	s := &suite{Env: e, faultBin: e.FaultInjectOperatorBinary(t)}

	for i, v := range flinkjvm.Versions() {
		t.Run(v, func(t *testing.T) { s.run(t, v, fmt.Sprintf("snap-%d", i)) })
	}
}

func (s *suite) run(t *testing.T, version, ns string) {
	ctx := s.Ctx
	t.Cleanup(func() {
		if t.Failed() {
			s.Dump(t, ns)
		}
	})
	job := s.deployJob(t, version, ns)
	op := s.startOperator(t, nil)

	// A savepoint reaches COMPLETED with a path whose _metadata exists.
	sp := s.createSnapshot(t, ns, "sp", true)
	done := s.waitState(t, ns, sp, v1beta1.SnapshotCompleted, 2*time.Minute)
	if _, err := os.Stat(filepath.Join(framework.LocalPath(t, done.Status.Path), "_metadata")); err != nil {
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
	out, err := s.Kubectl("get", "flinksnp", "-n", ns)
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
	if err := s.Flink.FlinkV1beta1().FlinkStateSnapshots(ns).Delete(ctx, sp, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	s.waitGone(t, ns, sp, 2*time.Minute)
	if _, err := os.Stat(framework.LocalPath(t, done.Status.Path)); !os.IsNotExist(err) {
		t.Fatalf("savepoint files still at %s after deleting the snapshot (%v)", done.Status.Path, err)
	}

	// Crash test: kill -9 right after the IN_PROGRESS write (the
	// fault-injection build kills itself there); the restarted operator
	// completes it with exactly one savepoint directory.
	op.Stop()
	before := savepointDirs(t, job.savepointDir)
	logStart := fileSize(t, s.OpLog)
	crashing := s.startFaultInjectOperator(t, framework.FaultExitAfterSnapshotIntent)
	crash := s.createSnapshot(t, ns, "crash", false)
	s.WaitFor(t, 2*time.Minute, "the operator to hit the fault point", func() (bool, string) {
		return crashing.Exited() != nil, "the operator is running"
	})
	// It died at the fault point, by its own SIGKILL after logging it for
	// this snapshot, not of something else.
	if sig := crashing.Signaled(); sig != syscall.SIGKILL {
		t.Fatalf("the fault-injection operator ended with signal %d (%v), want SIGKILL from the fault point", sig, crashing.Exited())
	}
	faultLine := ""
	for _, l := range strings.Split(readFrom(t, s.OpLog, logStart), "\n") {
		if strings.Contains(l, framework.FaultPointLog) {
			faultLine = l
		}
	}
	if !strings.Contains(faultLine, ns+"/"+crash) {
		t.Fatalf("the operator log has no fault-point line for %s/%s (last one: %q)", ns, crash, faultLine)
	}
	t.Logf("%s: the operator was SIGKILLed at the fault point: %s", version, faultLine)
	mid, err := s.Flink.FlinkV1beta1().FlinkStateSnapshots(ns).Get(ctx, crash, metav1.GetOptions{})
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
	op.Stop()
	abandoned := s.createSnapshot(t, ns, "abandon", true)
	s.cancelJob(t, job)
	op = s.startOperator(t, nil)
	a := s.waitState(t, ns, abandoned, v1beta1.SnapshotAbandoned, time.Minute)
	if !strings.Contains(a.Status.Error, "is not running") {
		t.Errorf("abandoned with %q", a.Status.Error)
	}
	op.Stop()

	// Tear the Flink cluster down.
	if err := s.Kube.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
}

// deployedJob is a Flink application created by hand.
type deployedJob struct {
	ns, name, jobID string
	rest            *framework.Flink
	savepointDir    string
}

func (s *suite) deployJob(t *testing.T, version, ns string) *deployedJob {
	ctx := s.Ctx
	s.CreateNamespace(t, ns)
	data := filepath.Join(s.Base, ns)
	if err := os.MkdirAll(data, 0o755); err != nil {
		t.Fatal(err)
	}
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
	created, err := s.Flink.FlinkV1beta1().FlinkDeployments(ns).Create(ctx, dep, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	jobID := strings.Repeat("ab", 16)
	built, err := cluster.Build(cluster.Input{Deployment: created, Spec: created.Spec, OperatorConfig: config.Defaults(), JobID: jobID})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if _, err := s.Kube.CoreV1().ConfigMaps(ns).Create(ctx, built.ConfigMap, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, svc := range built.Services() {
		if _, err := s.Kube.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Kube.AppsV1().Deployments(ns).Create(ctx, built.JobManager, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Kube.AppsV1().Deployments(ns).Create(ctx, built.TaskManager, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	rest := s.FlinkREST(t, ns, "job")
	s.WaitFor(t, 3*time.Minute, "job RUNNING", func() (bool, string) {
		// RUNNING with every task running: Flink refuses savepoints before.
		var overview struct {
			Jobs []struct {
				JID   string         `json:"jid"`
				State string         `json:"state"`
				Tasks map[string]int `json:"tasks"`
			} `json:"jobs"`
		}
		if err := rest.Get(ctx, "/jobs/overview", &overview); err != nil {
			return false, err.Error()
		}
		for _, j := range overview.Jobs {
			if j.JID == jobID && j.State == "RUNNING" && j.Tasks["total"] > 0 && j.Tasks["running"] == j.Tasks["total"] {
				return true, ""
			}
		}
		return false, fmt.Sprintf("%+v", overview.Jobs)
	})
	t.Logf("%s: job RUNNING %s after its objects were created", version, time.Since(start).Round(time.Second))
	// No deployment controller runs here: record what it would observe.
	created.Status.JobStatus = v1beta1.JobStatus{JobID: jobID, State: v1beta1.JobStatusRunning, JobName: "counting"}
	created.Status.JobManagerDeploymentStatus = v1beta1.JobManagerReady
	if _, err := s.Flink.FlinkV1beta1().FlinkDeployments(ns).UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	return &deployedJob{ns: ns, name: "job", jobID: jobID, rest: rest, savepointDir: filepath.Join(data, "savepoints")}
}

func (s *suite) cancelJob(t *testing.T, j *deployedJob) {
	if err := j.rest.Cancel(s.Ctx, j.jobID); err != nil {
		t.Fatal(err)
	}
	dep, err := s.Flink.FlinkV1beta1().FlinkDeployments(j.ns).Get(s.Ctx, j.name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	dep.Status.JobStatus.State = v1beta1.JobStatusCanceled
	if _, err := s.Flink.FlinkV1beta1().FlinkDeployments(j.ns).UpdateStatus(s.Ctx, dep, metav1.UpdateOptions{}); err != nil {
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
	if _, err := s.Flink.FlinkV1beta1().FlinkStateSnapshots(ns).Create(s.Ctx, snap, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return name
}

func (s *suite) waitState(t *testing.T, ns, name string, want v1beta1.SnapshotState, timeout time.Duration) *v1beta1.FlinkStateSnapshot {
	t.Helper()
	var got *v1beta1.FlinkStateSnapshot
	s.WaitFor(t, timeout, name+" "+string(want), func() (bool, string) {
		snap, err := s.Flink.FlinkV1beta1().FlinkStateSnapshots(ns).Get(s.Ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		got = snap
		if snap.Status.State.IsTerminal() && snap.Status.State != want {
			t.Fatalf("waiting for %s %s: %s ended %s: %s", name, want, name, snap.Status.State, snap.Status.Error)
		}
		return snap.Status.State == want, fmt.Sprintf("%+v", snap.Status)
	})
	return got
}

func (s *suite) waitGone(t *testing.T, ns, name string, timeout time.Duration) {
	t.Helper()
	s.WaitFor(t, timeout, name+" deleted", func() (bool, string) {
		_, err := s.Flink.FlinkV1beta1().FlinkStateSnapshots(ns).Get(s.Ctx, name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})
}

// startOperator runs the operator with the snapshot controller only, the
// environment variables env added; it is stopped at the end of the test.
func (s *suite) startOperator(t *testing.T, env []string) *framework.Operator {
	return s.startBinary(t, s.OperatorBinary(), env)
}

// startFaultInjectOperator is startOperator with the fault-injection build
// and its fault point fault armed (framework.FaultEnv).
func (s *suite) startFaultInjectOperator(t *testing.T, fault string) *framework.Operator {
	return s.startBinary(t, s.faultBin, []string{framework.FaultEnv + "=" + fault})
}

func (s *suite) startBinary(t *testing.T, bin string, env []string) *framework.Operator {
	p := framework.StartOperatorWithEnv(t, env, bin, s.Local.OperatorKubeconfig, s.OpLog, "--controllers=flinkstatesnapshot")
	t.Cleanup(p.Stop)
	return p
}

func fileSize(t *testing.T, path string) int64 {
	fi, err := os.Stat(path)
	if os.IsNotExist(err) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

// readFrom reads path from byte offset on.
func readFrom(t *testing.T, path string, offset int64) string {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if offset > int64(len(b)) {
		offset = 0
	}
	return string(b[offset:])
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
