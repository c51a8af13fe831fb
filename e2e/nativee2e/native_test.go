package nativee2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"

	flinkjvm "github.com/flinkops/flink-operator/e2e/flink"
	"github.com/flinkops/flink-operator/e2e/framework"
	"github.com/flinkops/flink-operator/e2e/localcluster"
	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/cluster"
	"github.com/flinkops/flink-operator/pkg/controller/jobengine"
	"github.com/flinkops/flink-operator/pkg/flink"
	"github.com/flinkops/flink-operator/pkg/reasons"
)

const (
	// counting is the test job's FlinkDeployment.
	counting = "counting"
	// basic is upstream's examples/basic.yaml's FlinkDeployment.
	basic = "basic-example"
	// session is the native session cluster, sessionJobs its two
	// FlinkSessionJobs.
	session = "native-session"
	// noPods is the FlinkDeployment whose ServiceAccount may not create
	// pods.
	noPods = "no-pods"
	// testJar is the test job in the image (the node agent's private
	// /opt/flink/usrlib holds it).
	testJar = "local:///opt/flink/usrlib/testjob.jar"
	// keys is the test job's --keys.
	keys = 10
	// envVersions restricts the Flink lines.
	envVersions = "FLINKOP_NATIVE_E2E_VERSIONS"
	envSteps    = "FLINKOP_NATIVE_E2E_STEPS"
)

// TestNativeMode runs every scenario of the package (doc.go) with one local
// cluster and one operator, for every pinned Flink line (or those of
// FLINKOP_NATIVE_E2E_VERSIONS), in sequence.
func TestNativeMode(t *testing.T) {
	if framework.Kind() {
		t.Skip("the node agent's process records and the local operator are the local provider's")
	}
	if os.Geteuid() != 0 {
		t.Skip("the node agent's mount namespaces need root")
	}
	begin := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Minute)
	defer cancel()
	versions := flinkjvm.Versions()
	if only := os.Getenv(envVersions); only != "" {
		versions = strings.Split(only, ",")
	}
	for _, v := range versions {
		if _, ok := framework.Flavours[v]; !ok {
			t.Fatalf("Flink %s has no image in this test (pinned: %v)", v, flinkjvm.Versions())
		}
	}
	e := framework.Setup(t, ctx, framework.Options{Name: "nativee2e"})
	t.Logf("local cluster, CRDs and operator up %s after the start", time.Since(begin).Round(time.Millisecond))
	upstreamBasic := filepath.Join(e.Root, "pkg", "upstreamtest", "testdata", "examples", "basic.yaml")
	jars := serveJars(t, versions)
	for i, v := range versions {
		t.Run(v, func(t *testing.T) {
			r := &run{Env: e, t: t, version: v, ns: fmt.Sprintf("native-%d", i), jar: jars + "/" + v + "/testjob.jar"}
			r.data = filepath.Join(e.Base, r.ns)
			if err := os.MkdirAll(r.data, 0o755); err != nil {
				t.Fatal(err)
			}
			e.CreateNamespace(t, r.ns)
			t.Cleanup(func() {
				if t.Failed() {
					e.Dump(t, r.ns)
				}
				_, _ = e.Kubectl("delete", "namespace", r.ns, "--wait=false")
			})
			r.step("missing-serviceaccount", r.missingServiceAccount)
			e.ApplyFlinkServiceAccount(t, r.ns)
			r.step("basic-example", func() { r.basicExample(upstreamBasic) })
			r.step("counting-ha", r.countingHA)
			r.step("failed-job-redeployed", r.failedJobRedeployed)
			// The operator killed between a decision and its application:
			// on the last line only (the crash is the operator's).
			r.step("autoscaler-in-place", func() { r.autoscalerInPlace(i == len(versions)-1) })
			if i == len(versions)-1 { // the guard is the same on every line
				r.step("ended-job-not-rerun", r.endedJobNotRerun)
				// The blue/green controller only drives FlinkDeployments.
				r.step("blue-green", r.blueGreen)
			}
			if strings.HasPrefix(v, "1.") { // the line upstream's recording ran
				r.step("take-over-upstream-running", r.takeOverUpstreamRunning)
				r.step("take-over-upstream-suspended", r.takeOverUpstreamSuspended)
				r.step("take-over-upstream-standalone", r.takeOverUpstreamStandalone)
				r.step("take-over-upstream-session", r.takeOverUpstreamSession)
			}
			r.step("session-and-no-pods-serviceaccount", r.sessionAndUnderprivileged)
		})
	}
	t.Logf("TestNativeMode: %s in all", time.Since(begin).Round(time.Second))
}

type run struct {
	*framework.Env
	t       *testing.T
	version string
	ns      string
	data    string // this line's checkpoints, savepoints, HA storage
	jar     string // the test job's jar over HTTP, for the session jobs
}

// serveJars serves each version's test job jar at /<version>/testjob.jar,
// as a user would host a session job's jar (the operator fetches it and
// uploads it to the session cluster).
func serveJars(t *testing.T, versions []string) string {
	mux := http.NewServeMux()
	for _, v := range versions {
		d, err := flinkjvm.Ensure(context.Background(), v)
		if err != nil {
			t.Fatal(err)
		}
		jar := d.TestJobJar
		mux.HandleFunc("/"+v+"/testjob.jar", func(w http.ResponseWriter, r *http.Request) { http.ServeFile(w, r, jar) })
	}
	return framework.ServeHTTP(t, mux)
}

// step runs one scenario; a failed one stops the line (later ones build on
// a clean namespace).
// FLINKOP_NATIVE_E2E_STEPS (comma-separated step names) runs only those,
// for work on one scenario; make test runs them all.
func (r *run) step(name string, f func()) {
	if only := os.Getenv(envSteps); only != "" && !slices.Contains(strings.Split(only, ","), name) {
		r.t.Logf("%s: %s not selected by %s", r.version, name, envSteps)
		return
	}
	t0 := time.Now()
	f()
	r.t.Logf("%s: %s done in %s", r.version, name, time.Since(t0).Round(100*time.Millisecond))
}

// missingServiceAccount: a native FlinkDeployment whose ServiceAccount does
// not exist ends with status.error naming it and a Warning
// ServiceAccountError event within 30 s; nothing of the cluster is created.
func (r *run) missingServiceAccount() {
	t := r.t
	const bad = "no-sa"
	y := r.countingYAML(bad, 1, v1beta1.UpgradeModeSavepoint, v1beta1.JobStateRunning)
	y = replaceOnce(t, y, "serviceAccount: flink", "serviceAccount: nobody")
	t0 := time.Now()
	r.apply(y)
	d := r.waitDeployment(bad, 30*time.Second, "status.error about the ServiceAccount", func(d *v1beta1.FlinkDeployment) bool {
		return strings.Contains(jobengine.ErrorMessage(d.Status.Error), "nobody")
	})
	r.WaitFor(t, 30*time.Second-time.Since(t0), "a Warning ServiceAccountError event", func() (bool, string) {
		l, err := r.Kube.CoreV1().Events(r.ns).List(r.Ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + bad})
		if err != nil {
			return false, err.Error()
		}
		var seen []string
		for _, ev := range l.Items {
			if ev.Type == corev1.EventTypeWarning && ev.Reason == "ServiceAccountError" {
				return true, ""
			}
			seen = append(seen, ev.Type+" "+ev.Reason+": "+ev.Message)
		}
		return false, strings.Join(seen, "; ")
	})
	t.Logf("%s: missing ServiceAccount reported %s after the apply: %s", r.version, time.Since(t0).Round(100*time.Millisecond), d.Status.Error)
	if _, err := r.Kube.AppsV1().Deployments(r.ns).Get(r.Ctx, bad, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("JobManager Deployment %s exists without its ServiceAccount (%v)", bad, err)
	}
	r.kubectl("delete", "flinkdeployment", bad, "-n", r.ns, "--wait=false")
	r.waitGone(bad, time.Minute)
}

// basicExample: upstream's examples/basic.yaml (mode unset: native) with the
// test job's image and jar; its TaskManager pods are Flink's; a savepoint
// FlinkStateSnapshot of it completes with files on disk.
func (r *run) basicExample(path string) {
	t := r.t
	fl := framework.Flavours[r.version]
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	y := string(raw)
	// The edits: the image (the node agent runs images it knows) and Flink
	// version, the jar (StateMachineExample.jar is not in the test's Flink)
	// and its entry class. The mode (unset), memory (2048m JobManager and TaskManager) and the
	// ServiceAccount flink stay as upstream wrote them.
	y = replaceOnce(t, y, "image: flink:2.2", "image: "+fl.Image)
	y = replaceOnce(t, y, "flinkVersion: v2_2", "flinkVersion: "+string(fl.Version))
	y = replaceOnce(t, y, "    jarURI: local:///opt/flink/examples/streaming/StateMachineExample.jar\n",
		"    jarURI: "+testJar+"\n    entryClass: "+flinkjvm.TestJobClass+"\n")
	t0 := time.Now()
	r.kubectlInput(y, "apply", "-n", r.ns, "-f", "-")
	dep := r.waitDeployment(basic, 4*time.Minute, "job RUNNING, lifecycle STABLE", func(d *v1beta1.FlinkDeployment) bool {
		return d.Status.JobStatus.JobID != "" && d.Status.JobStatus.State == v1beta1.JobStatusRunning &&
			d.Status.LifecycleState == v1beta1.LifecycleStable
	})
	jobID := dep.Status.JobStatus.JobID
	rest := r.FlinkREST(t, r.ns, basic)
	if j := rest.WaitJobRunning(t, jobID); j.MaxParallelism() != 2 {
		t.Errorf("basic-example runs with parallelism %d, want 2", j.MaxParallelism())
	}
	t.Logf("%s: upstream basic.yaml (mode unset: native) RUNNING as job %s %s after the apply", r.version, jobID, time.Since(t0).Round(100*time.Millisecond))
	if _, err := r.Kube.AppsV1().Deployments(r.ns).Get(r.Ctx, cluster.TaskManagerDeploymentName(basic), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("native mode: TaskManager Deployment %s exists (%v)", cluster.TaskManagerDeploymentName(basic), err)
	}
	r.checkFlinkTaskManagers(basic, 1) // 2 / 2 slots
	if got := dep.Status.ClusterInfo["flink-version"]; got != r.version && !strings.HasPrefix(got, strings.Join(strings.Split(r.version, ".")[:2], ".")+".") {
		t.Errorf("status.clusterInfo.flink-version = %q, want %s", got, r.version)
	}

	// A savepoint FlinkStateSnapshot (the example has no savepoint
	// directory: the snapshot names one).
	spDir := filepath.Join(r.data, "basic-savepoints")
	t0 = time.Now()
	r.kubectlInput(fmt.Sprintf(`apiVersion: flink.apache.org/v1beta1
kind: FlinkStateSnapshot
metadata:
  name: basic-savepoint
spec:
  backoffLimit: 0
  jobReference:
    kind: FlinkDeployment
    name: %s
  savepoint:
    path: file://%s
`, basic, spDir), "apply", "-n", r.ns, "-f", "-")
	var snap *v1beta1.FlinkStateSnapshot
	r.WaitFor(t, 2*time.Minute, "FlinkStateSnapshot basic-savepoint COMPLETED", func() (bool, string) {
		s, err := r.Flink.FlinkV1beta1().FlinkStateSnapshots(r.ns).Get(r.Ctx, "basic-savepoint", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		snap = s
		if s.Status.State.IsTerminal() && s.Status.State != v1beta1.SnapshotCompleted {
			t.Fatalf("snapshot basic-savepoint ended %s: %s", s.Status.State, s.Status.Error)
		}
		return s.Status.State == v1beta1.SnapshotCompleted, fmt.Sprintf("%+v", s.Status)
	})
	dir := framework.LocalPath(t, snap.Status.Path)
	if !strings.HasPrefix(dir, spDir+"/") {
		t.Errorf("savepoint %s is not under the requested %s", dir, spDir)
	}
	if _, err := os.Stat(filepath.Join(dir, "_metadata")); err != nil {
		t.Fatalf("savepoint %s has no _metadata: %v", dir, err)
	}
	t.Logf("%s: FlinkStateSnapshot of basic-example COMPLETED at %s in %s", r.version, snap.Status.Path, time.Since(t0).Round(100*time.Millisecond))

	// Deleting the snapshot (disposeOnDelete defaults to true, as upstream)
	// disposes of its files through the running cluster; after the
	// cluster's deletion it could not (upstream's rule: it then waits).
	t0 = time.Now()
	r.kubectl("delete", "flinkstatesnapshot", "basic-savepoint", "-n", r.ns, "--wait=false")
	r.WaitFor(t, time.Minute, "FlinkStateSnapshot basic-savepoint deleted, its files disposed of", func() (bool, string) {
		_, err := r.Flink.FlinkV1beta1().FlinkStateSnapshots(r.ns).Get(r.Ctx, "basic-savepoint", metav1.GetOptions{})
		if !apierrors.IsNotFound(err) {
			return false, fmt.Sprintf("snapshot: %v", err)
		}
		_, err = os.Stat(dir)
		return os.IsNotExist(err), fmt.Sprintf("savepoint directory: %v", err)
	})
	t.Logf("%s: FlinkStateSnapshot deleted and savepoint disposed of in %s", r.version, time.Since(t0).Round(100*time.Millisecond))

	// Delete it: every pod and JVM of the cluster goes (frees its memory).
	pids := r.agentProcesses()
	t0 = time.Now()
	r.kubectl("delete", "flinkdeployment", basic, "-n", r.ns, "--wait=false")
	r.waitGone(basic, 2*time.Minute)
	r.waitClusterGone(basic, 2*time.Minute)
	r.waitProcessesGone(pids)
	t.Logf("%s: basic-example deleted, every pod and JVM gone %s after kubectl delete", r.version, time.Since(t0).Round(100*time.Millisecond))
}

// failedJobRedeployed: a job that failed for good (restart strategy none)
// in a cluster with Kubernetes HA, then a fixed spec (a stateless upgrade)
// runs as a new job in a new cluster with the same cluster id.
//
// Before the redeploy the failed job's result, and on Flink 2.3 its
// application's, are left dirty in Flink's result stores (dirtyResults),
// as when the JobManager is stopped during the job's cleanup: the operator
// deletes the cluster right after a stop-with-savepoint, and CI once saw
// the savepoint upgrade's new job FAILED at once so. The stores under the
// HA storage directory outlive the cluster, and Flink 2.3 derives the
// application id from the cluster id: its new JobManager took the old
// job's dirty result for its own application's ("Base job ID ... is not
// found in the recovered jobs"), or with the application's result dirty
// never ran the job. The operator gives each job its own stores
// (pkg/cluster applyResultStores), so the fixed job runs.
func (r *run) failedJobRedeployed() {
	t := r.t
	const name = "redeployed"
	manifest := func(args string) string {
		return r.testJobYAML(name, 1, `    restart-strategy.type: none
    # Keep the clean results for the test to make them dirty.
    job-result-store.delete-on-commit: "false"
    application-result-store.delete-on-commit: "false"
`, fmt.Sprintf(`    args: [%s]
    parallelism: 1
    upgradeMode: stateless
`, args))
	}
	t0 := time.Now()
	r.apply(manifest(`"--rate", "20", "--keys", "2", "--fail-after", "20"`))
	failed := r.waitDeployment(name, 3*time.Minute, "job FAILED (--fail-after, no restarts)", func(d *v1beta1.FlinkDeployment) bool {
		return d.Status.JobStatus.JobID != "" && d.Status.JobStatus.State == v1beta1.JobStatusFailed
	})
	t.Logf("%s: %s: job %s FAILED %s after the apply", r.version, name, failed.Status.JobStatus.JobID, time.Since(t0).Round(100*time.Millisecond))
	r.dirtyResults(name)

	t0 = time.Now()
	r.apply(manifest(`"--rate", "20", "--keys", "2"`))
	fixed := r.waitDeployment(name, 3*time.Minute, "fixed job RUNNING, lifecycle STABLE", func(d *v1beta1.FlinkDeployment) bool {
		return d.Status.JobStatus.JobID != "" && d.Status.JobStatus.JobID != failed.Status.JobStatus.JobID &&
			d.Status.JobStatus.State == v1beta1.JobStatusRunning && d.Status.LifecycleState == v1beta1.LifecycleStable
	})
	r.FlinkREST(t, r.ns, name).WaitJobRunning(t, fixed.Status.JobStatus.JobID)
	t.Logf("%s: %s: fixed spec RUNNING as job %s %s after the apply", r.version, name, fixed.Status.JobStatus.JobID, time.Since(t0).Round(100*time.Millisecond))

	t0 = time.Now()
	r.kubectl("delete", "flinkdeployment", name, "-n", r.ns, "--wait=false")
	r.waitGone(name, 2*time.Minute)
	r.waitClusterGone(name, 2*time.Minute)
	t.Logf("%s: %s deleted, its cluster gone %s after kubectl delete", r.version, name, time.Since(t0).Round(100*time.Millisecond))
}

// dirtyResults waits for the clean results of the failed job and (Flink
// 2.3) its application in Flink's result stores under the HA storage
// directory (FileSystemJobResultStore, FileSystemApplicationResultStore:
// <id>.json, wherever below <store>/<cluster id> the operator put them)
// and renames them <id>_DIRTY.json: what a JobManager stopped during the
// job's cleanup leaves.
func (r *run) dirtyResults(clusterID string) {
	stores := []string{filepath.Join(r.data, "ha", "job-result-store", clusterID)}
	if flink.MustParseVersion(r.version).AtLeast(flink.MustParseVersion("2.3")) {
		stores = append(stores, filepath.Join(r.data, "ha", "application-result-store", clusterID))
	}
	for _, dir := range stores {
		var found []string
		r.WaitFor(r.t, time.Minute, "the failed job's result under "+dir, func() (bool, string) {
			found = found[:0]
			err := filepath.WalkDir(dir, func(path string, e os.DirEntry, err error) error {
				if err == nil && !e.IsDir() && strings.HasSuffix(path, ".json") && !strings.HasSuffix(path, "_DIRTY.json") {
					found = append(found, path)
				}
				return err
			})
			return len(found) > 0, fmt.Sprintf("%v (%v)", found, err)
		})
		for _, f := range found {
			if err := os.Rename(f, strings.TrimSuffix(f, ".json")+"_DIRTY.json"); err != nil {
				r.t.Fatal(err)
			}
			r.t.Logf("%s: %s marked dirty", r.version, f)
		}
	}
}

// countingHA is the counting job with Kubernetes HA through a savepoint
// upgrade, a last-state upgrade, a JobManager crash, suspend and resume,
// and deletion.
func (r *run) countingHA() {
	t := r.t
	savepointDir := filepath.Join(r.data, "savepoints")

	// 1. Apply: RUNNING on Flink's TaskManager pods, HA ConfigMaps there.
	t0 := time.Now()
	r.apply(r.countingYAML(counting, 2, v1beta1.UpgradeModeSavepoint, v1beta1.JobStateRunning))
	dep := r.waitCounting(4*time.Minute, "job RUNNING, lifecycle STABLE", 2, v1beta1.JobStateRunning)
	jobID := dep.Status.JobStatus.JobID
	rest := r.FlinkREST(t, r.ns, counting)
	rest.WaitJobRunning(t, jobID)
	t.Logf("%s: counting RUNNING as job %s %s after the apply", r.version, jobID, time.Since(t0).Round(100*time.Millisecond))
	r.checkFlinkTaskManagers(counting, 1)
	r.checkOneJob(rest, jobID)
	acc := rest.WaitAccumulators(t, jobID, "max-count >= 5", func(a framework.Accumulators) bool { return a.MaxCount >= 5 })
	if acc.Mismatches != 0 {
		t.Errorf("mismatches: %+v", acc)
	}
	r.waitHAConfigMaps(jobID)

	// 2. Savepoint upgrade (parallelism 2 → 1).
	before := r.counterAtCheckpoint(rest, jobID)
	jm := r.jobManagerPods(counting)
	t0 = time.Now()
	r.apply(r.countingYAML(counting, 1, v1beta1.UpgradeModeSavepoint, v1beta1.JobStateRunning))
	dep = r.waitCounting(4*time.Minute, "savepoint upgrade: RUNNING, STABLE", 1, v1beta1.JobStateRunning)
	r.waitPodsGone(jm)
	jobID = dep.Status.JobStatus.JobID
	rest = r.FlinkREST(t, r.ns, counting)
	if j := rest.WaitJobRunning(t, jobID); j.MaxParallelism() != 1 {
		t.Errorf("upgraded job runs with parallelism %d, want 1", j.MaxParallelism())
	}
	t.Logf("%s: savepoint upgrade: job %s RUNNING %s after the apply", r.version, jobID, time.Since(t0).Round(100*time.Millisecond))
	upgradePath := dep.Status.JobStatus.UpgradeSavepointPath
	if upgradePath == "" {
		t.Fatal("savepoint upgrade without status.jobStatus.upgradeSavepointPath")
	}
	if !strings.HasPrefix(framework.LocalPath(t, upgradePath), savepointDir+"/") {
		t.Errorf("upgrade savepoint %s not under %s", upgradePath, savepointDir)
	}
	if _, err := os.Stat(filepath.Join(framework.LocalPath(t, upgradePath), "_metadata")); err != nil {
		t.Errorf("upgrade savepoint: %v", err)
	}
	if got := rest.WaitRestored(t, jobID); !got.IsSavepoint || !framework.SameLocation(t, got.ExternalPath, upgradePath) {
		t.Errorf("job %s restored from %+v, want the savepoint %s", jobID, got, upgradePath)
	}
	r.checkCounterContinued(rest, jobID, before)
	r.checkOneJob(rest, jobID)
	r.checkFlinkTaskManagers(counting, 1)

	// 3. Last-state upgrade (parallelism 1 → 2): recovered from the HA
	// metadata, no cancel.
	before = r.counterAtCheckpoint(rest, jobID)
	jm = r.jobManagerPods(counting)
	t0 = time.Now()
	r.apply(r.countingYAML(counting, 2, v1beta1.UpgradeModeLastState, v1beta1.JobStateRunning))
	dep = r.waitCounting(4*time.Minute, "last-state upgrade: RUNNING, STABLE", 2, v1beta1.JobStateRunning)
	r.waitPodsGone(jm)
	if dep.Status.JobStatus.JobID != jobID {
		t.Logf("%s: last-state upgrade changed the job id %s → %s", r.version, jobID, dep.Status.JobStatus.JobID)
	}
	jobID = dep.Status.JobStatus.JobID
	rest = r.FlinkREST(t, r.ns, counting)
	if j := rest.WaitJobRunning(t, jobID); j.MaxParallelism() != 2 {
		t.Errorf("upgraded job runs with parallelism %d, want 2", j.MaxParallelism())
	}
	t.Logf("%s: last-state upgrade: job %s RUNNING %s after the apply", r.version, jobID, time.Since(t0).Round(100*time.Millisecond))
	if got := rest.WaitRestored(t, jobID); got.IsSavepoint || !strings.HasPrefix(framework.LocalPath(t, got.ExternalPath), filepath.Join(r.data, "checkpoints")+"/") {
		t.Errorf("last-state: job %s restored from %+v, want a checkpoint under %s/checkpoints", jobID, got, r.data)
	} else {
		t.Logf("%s: last-state upgrade restored from checkpoint %s", r.version, got.ExternalPath)
	}
	r.checkCounterContinued(rest, jobID, before)
	r.checkOneJob(rest, jobID)
	r.checkFlinkTaskManagers(counting, 1)

	// 4. The JobManager JVM killed: the job comes back from a checkpoint.
	before = r.counterAtCheckpoint(rest, jobID)
	jm = r.jobManagerPods(counting)
	if len(jm) != 1 {
		t.Fatalf("%d JobManager pods, want 1", len(jm))
	}
	proc := r.onlyProcess(r.ns + "/" + jm[0].Name + "/")
	if err := syscall.Kill(proc.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	t0 = time.Now()
	r.WaitFor(t, 3*time.Minute, "the job RUNNING again after the JobManager's kill, restored from a checkpoint", func() (bool, string) {
		var cps struct {
			Latest struct {
				Restored *framework.Restored `json:"restored"`
			} `json:"latest"`
		}
		st, err := rest.JobState(jobID)
		if err != nil || st != "RUNNING" {
			return false, fmt.Sprintf("state %q %v", st, err)
		}
		if err := rest.Get(r.Ctx, "/jobs/"+jobID+"/checkpoints", &cps); err != nil || cps.Latest.Restored == nil {
			return false, fmt.Sprintf("not restored yet (%v)", err)
		}
		return !cps.Latest.Restored.IsSavepoint, fmt.Sprintf("restored %+v", *cps.Latest.Restored)
	})
	rest.WaitJobRunning(t, jobID)
	t.Logf("%s: JobManager JVM (pid %d) killed; job %s RUNNING again %s later", r.version, proc.PID, jobID, time.Since(t0).Round(100*time.Millisecond))
	r.checkCounterContinued(rest, jobID, before)
	r.checkOneJob(rest, jobID)
	r.waitCounting(2*time.Minute, "RUNNING, STABLE after the JobManager's restart", 2, v1beta1.JobStateRunning)

	// 5. Suspend (last-state): every pod gone, HA ConfigMaps kept.
	before = r.counterAtCheckpoint(rest, jobID)
	pids := r.agentProcesses()
	t0 = time.Now()
	r.apply(r.countingYAML(counting, 2, v1beta1.UpgradeModeLastState, v1beta1.JobStateSuspended))
	r.waitDeployment(counting, 3*time.Minute, "SUSPENDED", func(d *v1beta1.FlinkDeployment) bool {
		return d.Status.LifecycleState == v1beta1.LifecycleSuspended && d.Status.JobStatus.State == v1beta1.JobStatusSuspended
	})
	r.waitPodsOf(counting, 2*time.Minute)
	r.waitProcessesGone(pids)
	t.Logf("%s: suspended, every pod and JVM gone %s after the apply", r.version, time.Since(t0).Round(100*time.Millisecond))
	if cms := r.haConfigMaps(counting); len(cms) == 0 {
		t.Errorf("last-state suspend deleted the HA ConfigMaps (docs/deployments.md: kept)")
	}

	// 6. Resume.
	t0 = time.Now()
	r.apply(r.countingYAML(counting, 2, v1beta1.UpgradeModeLastState, v1beta1.JobStateRunning))
	dep = r.waitCounting(4*time.Minute, "resumed: RUNNING, STABLE", 2, v1beta1.JobStateRunning)
	jobID = dep.Status.JobStatus.JobID
	rest = r.FlinkREST(t, r.ns, counting)
	rest.WaitJobRunning(t, jobID)
	t.Logf("%s: resumed as job %s %s after the apply", r.version, jobID, time.Since(t0).Round(100*time.Millisecond))
	r.checkCounterContinued(rest, jobID, before)
	r.checkOneJob(rest, jobID)
	r.checkFlinkTaskManagers(counting, 1)

	// 7. Delete: the FlinkDeployment, its objects, every pod, the HA
	// ConfigMaps.
	pids = r.agentProcesses()
	t0 = time.Now()
	r.kubectl("delete", "flinkdeployment", counting, "-n", r.ns, "--wait=false")
	r.waitGone(counting, 2*time.Minute)
	r.waitClusterGone(counting, 2*time.Minute)
	r.waitProcessesGone(pids)
	t.Logf("%s: counting deleted; objects, pods, JVMs and HA ConfigMaps gone %s after kubectl delete", r.version, time.Since(t0).Round(100*time.Millisecond))
}

// sessionAndUnderprivileged: a native session cluster (no job) runs two
// FlinkSessionJobs of the test job on TaskManager pods Flink creates.
// Meanwhile a FlinkDeployment whose ServiceAccount exists but may not
// create pods (its Role grants everything else Flink needs) ends with
// status.error and a Warning ServiceAccountError event naming the missing
// permission within 30 s, creating nothing, while the operator keeps
// serving the session cluster (the second session job is applied with it
// and reaches RUNNING). Deleting the session jobs cancels their jobs;
// deleting the session cluster (Kubernetes HA) removes every pod and JVM;
// on Flink 2 it is created again with the same name and HA storage and
// runs a job (issue 36 item 12).
func (r *run) sessionAndUnderprivileged() {
	t := r.t
	fl := framework.Flavours[r.version]
	sessionJob := func(name string) string {
		return fmt.Sprintf(`apiVersion: flink.apache.org/v1beta1
kind: FlinkSessionJob
metadata:
  name: %s
  namespace: %s
spec:
  deploymentName: %s
  job:
    jarURI: %s
    entryClass: %s
    args: ["--rate", "10", "--keys", "%d"]
    parallelism: 1
    upgradeMode: stateless
`, name, r.ns, session, r.jar, flinkjvm.TestJobClass, keys)
	}
	job1, job2 := session+"-job-1", session+"-job-2"

	// 1. The session cluster (with Kubernetes HA) and the first job.
	t0 := time.Now()
	sessionCluster := fmt.Sprintf(`apiVersion: flink.apache.org/v1beta1
kind: FlinkDeployment
metadata:
  name: %[1]s
  namespace: %[2]s
spec:
  mode: native
  serviceAccount: flink
  image: %[3]s
  flinkVersion: %[4]s
  flinkConfiguration:
    jobmanager.memory.process.size: 768m
    taskmanager.memory.process.size: 1024m
    taskmanager.memory.managed.size: 64m
    taskmanager.numberOfTaskSlots: "2"
    state.backend.type: hashmap
    execution.checkpointing.interval: 2 s
    execution.checkpointing.dir: file://%[5]s/session-checkpoints
    high-availability.type: kubernetes
    high-availability.storageDir: file://%[5]s/session-ha
    heartbeat.interval: "1000"
    heartbeat.timeout: "10000"
  jobManager:
    replicas: 1
`, session, r.ns, fl.Image, fl.Version, r.data)
	r.apply(sessionCluster + "---\n" + sessionJob(job1))
	r.waitDeployment(session, 3*time.Minute, "session cluster STABLE", func(d *v1beta1.FlinkDeployment) bool {
		return d.Status.LifecycleState == v1beta1.LifecycleStable && d.Status.JobManagerDeploymentStatus == v1beta1.JobManagerReady
	})
	one := r.waitSessionJob(job1, 3*time.Minute, "RUNNING, STABLE", stableSessionJob)
	t.Logf("%s: native session cluster with %s RUNNING (job %s) %s after the apply", r.version, job1, one.Status.JobStatus.JobID, time.Since(t0).Round(100*time.Millisecond))

	// 2. The under-privileged ServiceAccount, and the second session job
	// at the same time.
	r.apply(fmt.Sprintf(`apiVersion: v1
kind: ServiceAccount
metadata:
  name: %[1]s
  namespace: %[2]s
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata:
  name: %[1]s
  namespace: %[2]s
rules:
  # manifests/flink-serviceaccount's rules without pods create.
  - apiGroups: [""]
    resources: ["pods"]
    verbs: ["get", "list", "watch", "update", "patch", "delete"]
  - apiGroups: [""]
    resources: ["configmaps"]
    verbs: ["get", "list", "watch", "create", "update", "patch", "delete"]
  - apiGroups: ["apps"]
    resources: ["deployments", "deployments/finalizers"]
    verbs: ["get", "list", "watch", "create", "update", "patch", "delete"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: %[1]s
  namespace: %[2]s
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: Role
  name: %[1]s
subjects:
  - kind: ServiceAccount
    name: %[1]s
    namespace: %[2]s
`, noPods, r.ns))
	bad := r.countingYAML(noPods, 1, v1beta1.UpgradeModeSavepoint, v1beta1.JobStateRunning)
	bad = replaceOnce(t, bad, "serviceAccount: flink", "serviceAccount: "+noPods)
	t0 = time.Now()
	r.apply(bad + "---\n" + sessionJob(job2))
	want := fmt.Sprintf("ServiceAccount %s/%s may not create pods", r.ns, noPods)
	d := r.waitDeployment(noPods, 30*time.Second, "status.error: may not create pods", func(d *v1beta1.FlinkDeployment) bool {
		return strings.Contains(jobengine.ErrorMessage(d.Status.Error), want)
	})
	r.waitWarning(noPods, "ServiceAccountError", "create pods", 30*time.Second-time.Since(t0))
	t.Logf("%s: under-privileged ServiceAccount reported %s after the apply: %s", r.version, time.Since(t0).Round(100*time.Millisecond), d.Status.Error)
	two := r.waitSessionJob(job2, 2*time.Minute, "RUNNING, STABLE (served beside the failing FlinkDeployment)", stableSessionJob)
	t.Logf("%s: %s RUNNING (job %s) %s after the apply", r.version, job2, two.Status.JobStatus.JobID, time.Since(t0).Round(100*time.Millisecond))
	if _, err := r.Kube.AppsV1().Deployments(r.ns).Get(r.Ctx, noPods, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("JobManager Deployment %s exists although its ServiceAccount may not create pods (%v)", noPods, err)
	}
	if d := r.getDeployment(noPods); !strings.Contains(jobengine.ErrorMessage(d.Status.Error), want) {
		t.Errorf("%s: status.error now %q, want it to keep naming the missing permission", noPods, d.Status.Error)
	}

	// 3. Both jobs on the session cluster, on Flink's TaskManager pod (two
	// slots).
	rest := r.FlinkREST(t, r.ns, session)
	ids := []string{one.Status.JobStatus.JobID, two.Status.JobStatus.JobID}
	for _, id := range ids {
		rest.WaitJobRunning(t, id)
	}
	slices.Sort(ids)
	if live := r.liveJobs(rest); !slices.Equal(live, ids) {
		t.Errorf("live jobs on the session cluster %v, want %v", live, ids)
	}
	r.checkFlinkTaskManagers(session, 1)

	// 4. Deleting the session jobs cancels their jobs.
	t0 = time.Now()
	r.kubectl("delete", "flinksessionjob", job1, job2, "-n", r.ns, "--wait=false")
	for _, name := range []string{job1, job2} {
		r.WaitFor(t, 2*time.Minute, "FlinkSessionJob "+name+" deleted", func() (bool, string) {
			j, err := r.Flink.FlinkV1beta1().FlinkSessionJobs(r.ns).Get(r.Ctx, name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return true, ""
			}
			if err != nil {
				return false, err.Error()
			}
			return false, sessionJobSummary(j)
		})
	}
	r.WaitFor(t, 30*time.Second, "no live job on the session cluster", func() (bool, string) {
		live := r.liveJobs(rest)
		return len(live) == 0, fmt.Sprint(live)
	})
	t.Logf("%s: session jobs deleted, their jobs cancelled, %s after kubectl delete", r.version, time.Since(t0).Round(100*time.Millisecond))

	// 5. Deleting the session cluster and the failed FlinkDeployment:
	// every pod and JVM goes.
	pids := r.agentProcesses()
	t0 = time.Now()
	r.kubectl("delete", "flinkdeployment", session, noPods, "-n", r.ns, "--wait=false")
	r.waitGone(noPods, time.Minute)
	r.waitGone(session, 2*time.Minute)
	r.waitClusterGone(session, 2*time.Minute)
	r.waitProcessesGone(pids)
	t.Logf("%s: session cluster deleted, every pod and JVM gone %s after kubectl delete", r.version, time.Since(t0).Round(100*time.Millisecond))

	// 6. Flink 2: the session cluster created again with the same name and
	// HA storage runs a job; its JobManager must not recover an earlier
	// incarnation's job results (Flink 2.3 crash-looped on "Application
	// ID is missing in the recovered job result"). Each incarnation is
	// deleted together with its session job, as upstream's e2e cleans up
	// (kubectl delete -f of both): the job is cancelled and its cluster
	// torn down right after, possibly while Flink still cleans the job up.
	if !strings.HasPrefix(r.version, "2.") {
		return
	}
	for incarnation := 2; incarnation <= 3; incarnation++ {
		t0 = time.Now()
		r.apply(sessionCluster + "---\n" + sessionJob(job1))
		r.waitDeployment(session, 3*time.Minute, fmt.Sprintf("session cluster, incarnation %d, STABLE", incarnation), func(d *v1beta1.FlinkDeployment) bool {
			return d.Status.LifecycleState == v1beta1.LifecycleStable && d.Status.JobManagerDeploymentStatus == v1beta1.JobManagerReady
		})
		again := r.waitSessionJob(job1, 3*time.Minute, fmt.Sprintf("RUNNING, STABLE on incarnation %d", incarnation), stableSessionJob)
		r.FlinkREST(t, r.ns, session).WaitJobRunning(t, again.Status.JobStatus.JobID)
		pods, err := r.Kube.CoreV1().Pods(r.ns).List(r.Ctx, metav1.ListOptions{LabelSelector: "app=" + session + ",component=jobmanager"})
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range pods.Items {
			for _, c := range p.Status.ContainerStatuses {
				if c.RestartCount != 0 {
					t.Errorf("JobManager %s of session cluster incarnation %d restarted %d times (last: %+v)", p.Name, incarnation, c.RestartCount, c.LastTerminationState)
				}
			}
		}
		t.Logf("%s: session cluster incarnation %d (same name and HA storage) runs job %s, %s after the apply", r.version, incarnation, again.Status.JobStatus.JobID, time.Since(t0).Round(100*time.Millisecond))
		pids = r.agentProcesses()
		r.kubectl("delete", "flinksessionjob", job1, "-n", r.ns, "--wait=false")
		r.kubectl("delete", "flinkdeployment", session, "-n", r.ns, "--wait=false")
		r.WaitFor(t, 2*time.Minute, "FlinkSessionJob "+job1+" deleted", func() (bool, string) {
			_, err := r.Flink.FlinkV1beta1().FlinkSessionJobs(r.ns).Get(r.Ctx, job1, metav1.GetOptions{})
			return apierrors.IsNotFound(err), fmt.Sprint(err)
		})
		r.waitGone(session, 2*time.Minute)
		r.waitClusterGone(session, 2*time.Minute)
		r.waitProcessesGone(pids)
	}
}

func stableSessionJob(j *v1beta1.FlinkSessionJob) bool {
	return j.Status.JobStatus.JobID != "" && j.Status.JobStatus.State == v1beta1.JobStatusRunning &&
		j.Status.LifecycleState == v1beta1.LifecycleStable
}

func sessionJobSummary(j *v1beta1.FlinkSessionJob) string {
	st := j.Status
	return fmt.Sprintf("lifecycleState=%s reconciliation=%s job=%s state=%s error=%q",
		st.LifecycleState, st.ReconciliationStatus.State, st.JobStatus.JobID, st.JobStatus.State, st.Error)
}

func (r *run) waitSessionJob(name string, timeout time.Duration, what string, ok func(*v1beta1.FlinkSessionJob) bool) *v1beta1.FlinkSessionJob {
	r.t.Helper()
	var got *v1beta1.FlinkSessionJob
	r.WaitFor(r.t, timeout, "FlinkSessionJob "+r.ns+"/"+name+": "+what, func() (bool, string) {
		j, err := r.Flink.FlinkV1beta1().FlinkSessionJobs(r.ns).Get(r.Ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		got = j
		return ok(j), sessionJobSummary(j)
	})
	return got
}

func (r *run) getDeployment(name string) *v1beta1.FlinkDeployment {
	r.t.Helper()
	d, err := r.Flink.FlinkV1beta1().FlinkDeployments(r.ns).Get(r.Ctx, name, metav1.GetOptions{})
	if err != nil {
		r.t.Fatal(err)
	}
	return d
}

// waitWarning waits for a Warning event of reason about object name whose
// message contains text.
func (r *run) waitWarning(name, reason, text string, timeout time.Duration) {
	r.t.Helper()
	r.WaitFor(r.t, timeout, fmt.Sprintf("a Warning %s event of %s naming %q", reason, name, text), func() (bool, string) {
		l, err := r.Kube.CoreV1().Events(r.ns).List(r.Ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + name})
		if err != nil {
			return false, err.Error()
		}
		var seen []string
		for _, ev := range l.Items {
			if ev.Type == corev1.EventTypeWarning && ev.Reason == reason && strings.Contains(ev.Message, text) {
				return true, ""
			}
			seen = append(seen, ev.Type+" "+ev.Reason+": "+ev.Message)
		}
		return false, strings.Join(seen, "; ")
	})
}

// countingYAML is the test job's native FlinkDeployment with Kubernetes HA.
func (r *run) countingYAML(name string, parallelism int, mode v1beta1.UpgradeMode, state v1beta1.JobState) string {
	return r.testJobYAML(name, 2, fmt.Sprintf(`    state.backend.type: hashmap
    execution.checkpointing.interval: 2 s
    execution.checkpointing.dir: file://%[1]s/checkpoints
    execution.checkpointing.savepoint-dir: file://%[1]s/savepoints
    heartbeat.interval: "1000"
    heartbeat.timeout: "10000"
`, r.data), fmt.Sprintf(`    args: ["--rate", "10", "--keys", "%d"]
    parallelism: %d
    upgradeMode: %s
    state: %s
`, keys, parallelism, mode, state))
}

// testJobYAML is a native FlinkDeployment of the test job with Kubernetes
// HA storing under this line's data directory and slots task slots per
// TaskManager; conf adds flinkConfiguration lines and job lines to
// spec.job (both indented by four spaces, newline-terminated).
func (r *run) testJobYAML(name string, slots int, conf, job string) string {
	fl := framework.Flavours[r.version]
	return fmt.Sprintf(`apiVersion: flink.apache.org/v1beta1
kind: FlinkDeployment
metadata:
  name: %[1]s
  namespace: %[2]s
spec:
  mode: native
  serviceAccount: flink
  image: %[3]s
  flinkVersion: %[4]s
  flinkConfiguration:
    jobmanager.memory.process.size: 768m
    taskmanager.memory.process.size: 1024m
    taskmanager.memory.managed.size: 64m
    taskmanager.numberOfTaskSlots: "%[5]d"
    high-availability.type: kubernetes
    high-availability.storageDir: file://%[6]s/ha
%[7]s  jobManager:
    replicas: 1
  job:
    jarURI: %[8]s
    entryClass: %[9]s
%[10]s`, name, r.ns, fl.Image, fl.Version, slots, r.data, conf, testJar, flinkjvm.TestJobClass, job)
}

// waitCounting waits for the counting FlinkDeployment to have acted on the
// spec with parallelism and state, and to be STABLE with the job RUNNING.
func (r *run) waitCounting(timeout time.Duration, what string, parallelism int32, state v1beta1.JobState) *v1beta1.FlinkDeployment {
	r.t.Helper()
	return r.waitDeployment(counting, timeout, what, func(d *v1beta1.FlinkDeployment) bool {
		var last struct {
			Spec v1beta1.FlinkDeploymentSpec `json:"spec"`
		}
		err := json.Unmarshal([]byte(d.Status.ReconciliationStatus.LastReconciledSpec), &last)
		if spec := last.Spec; err != nil || spec.Job == nil ||
			spec.Job.Parallelism == nil || *spec.Job.Parallelism != parallelism || spec.Job.State != state {
			return false
		}
		return d.Status.JobStatus.JobID != "" && d.Status.JobStatus.State == v1beta1.JobStatusRunning &&
			d.Status.LifecycleState == v1beta1.LifecycleStable
	})
}

func (r *run) waitDeployment(name string, timeout time.Duration, what string, ok func(*v1beta1.FlinkDeployment) bool) *v1beta1.FlinkDeployment {
	r.t.Helper()
	var got *v1beta1.FlinkDeployment
	var steps []string
	var failedJob, failure string
	r.WaitFor(r.t, timeout, "FlinkDeployment "+r.ns+"/"+name+": "+what, func() (bool, string) {
		d, err := r.Flink.FlinkV1beta1().FlinkDeployments(r.ns).Get(r.Ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		got = d
		if step := fmt.Sprintf("%s/%s", d.Status.LifecycleState, d.Status.JobStatus.State); len(steps) == 0 || steps[len(steps)-1] != step {
			steps = append(steps, step)
		}
		seen := summary(d)
		if js := d.Status.JobStatus; js.State == v1beta1.JobStatusFailed {
			if failedJob != js.JobID { // one list per failed job once its event is there, not one per poll
				failure = r.jobException(d)
				if strings.HasPrefix(failure, newestJobException) {
					failedJob = js.JobID
				}
			}
			seen += "; " + failure
		}
		return ok(d), seen
	})
	r.t.Logf("%s: %s: %s: seen %s", r.version, name, what, strings.Join(steps, " → "))
	return got
}

// jobException is the newest JobException event of d, cut short: why
// Flink failed the job, in the failure message itself (CI prints a
// failure's first and last lines; the dumped logs fall in between).
func (r *run) jobException(d *v1beta1.FlinkDeployment) string {
	l, err := r.Kube.CoreV1().Events(r.ns).List(r.Ctx, metav1.ListOptions{FieldSelector: fields.Set{
		"involvedObject.uid": string(d.UID), "reason": reasons.ReasonJobException,
	}.String()})
	if err != nil {
		return "job exception: " + err.Error()
	}
	var newest *corev1.Event
	for i := range l.Items {
		if e := &l.Items[i]; newest == nil || e.CreationTimestamp.After(newest.CreationTimestamp.Time) {
			newest = e
		}
	}
	if newest == nil {
		return "no JobException event"
	}
	msg := newest.Message
	if len(msg) > 1500 {
		msg = msg[:1500] + "…"
	}
	return newestJobException + msg
}

const newestJobException = "newest JobException event: "

func summary(d *v1beta1.FlinkDeployment) string {
	st := d.Status
	return fmt.Sprintf("lifecycleState=%s reconciliation=%s jm=%s job=%s state=%s upgradeSavepointPath=%q error=%q",
		st.LifecycleState, st.ReconciliationStatus.State, st.JobManagerDeploymentStatus, st.JobStatus.JobID,
		st.JobStatus.State, st.JobStatus.UpgradeSavepointPath, st.Error)
}

// checkFlinkTaskManagers checks that the TaskManager pods are Flink's: want
// of them, named and labelled by Flink, owned by the JobManager Deployment
// as controller, running as the ServiceAccount flink; and that the
// operator's status counts them.
func (r *run) checkFlinkTaskManagers(name string, want int) {
	t := r.t
	t.Helper()
	dep, err := r.Kube.AppsV1().Deployments(r.ns).Get(r.Ctx, cluster.JobManagerDeploymentName(name), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var tms []corev1.Pod
	r.WaitFor(t, time.Minute, fmt.Sprintf("%d running TaskManager pods of %s", want, name), func() (bool, string) {
		l, err := r.Kube.CoreV1().Pods(r.ns).List(r.Ctx, metav1.ListOptions{LabelSelector: cluster.TaskManagerSelector(cluster.Native, name)})
		if err != nil {
			return false, err.Error()
		}
		tms = tms[:0]
		for _, p := range l.Items {
			if p.DeletionTimestamp == nil {
				tms = append(tms, p)
			}
		}
		return len(tms) == want, framework.PodNames(l.Items)
	})
	for _, p := range tms {
		if !strings.HasPrefix(p.Name, cluster.TaskManagerPodNamePrefix(name)) {
			t.Errorf("TaskManager pod %s: want a name beginning %s (Flink's)", p.Name, cluster.TaskManagerPodNamePrefix(name))
		}
		if len(p.OwnerReferences) != 1 || p.OwnerReferences[0].Kind != "Deployment" || p.OwnerReferences[0].UID != dep.UID ||
			p.OwnerReferences[0].Controller == nil || !*p.OwnerReferences[0].Controller {
			t.Errorf("TaskManager pod %s owners %+v, want the JobManager Deployment %s (uid %s) as controller", p.Name, p.OwnerReferences, dep.Name, dep.UID)
		}
		if p.Spec.ServiceAccountName != "flink" {
			t.Errorf("TaskManager pod %s runs as ServiceAccount %q, want flink", p.Name, p.Spec.ServiceAccountName)
		}
		proc := r.onlyProcess(r.ns + "/" + p.Name + "/")
		if !proc.Alive() {
			t.Errorf("TaskManager pod %s: JVM %d not running", p.Name, proc.PID)
		}
	}
	r.WaitFor(t, 30*time.Second, "status.taskManager counting Flink's TaskManager pods", func() (bool, string) {
		d, err := r.Flink.FlinkV1beta1().FlinkDeployments(r.ns).Get(r.Ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		tm := d.Status.TaskManager
		return tm != nil && tm.Replicas == int32(want) && tm.LabelSelector == cluster.TaskManagerSelector(cluster.Native, name), fmt.Sprintf("%+v", tm)
	})
	t.Logf("%s: %s: %d TaskManager pod(s) created by Flink, owned by Deployment %s: %s", r.version, name, want, dep.Name, framework.PodNames(tms))
}

// checkOneJob checks that the JobManager runs exactly one job that is not
// finished, jobID.
func (r *run) checkOneJob(rest *framework.Flink, jobID string) {
	if live := r.liveJobs(rest); len(live) != 1 || live[0] != jobID {
		r.t.Errorf("jobs on the JobManager: %v, want only %s", live, jobID)
	}
}

// liveJobs are the ids of the JobManager's jobs that are not finished
// (FINISHED, CANCELED, FAILED), sorted.
func (r *run) liveJobs(rest *framework.Flink) []string {
	r.t.Helper()
	var ov struct {
		Jobs []struct {
			ID    string `json:"jid"`
			State string `json:"state"`
		} `json:"jobs"`
	}
	if err := rest.Get(r.Ctx, "/jobs/overview", &ov); err != nil {
		r.t.Fatal(err)
	}
	var live []string
	for _, j := range ov.Jobs {
		switch j.State {
		case "FINISHED", "CANCELED", "FAILED":
		default:
			live = append(live, j.ID)
		}
	}
	slices.Sort(live)
	return live
}

// counterAtCheckpoint reads the counter, then waits for two more completed
// checkpoints, so that any restore from now on starts at or above it.
func (r *run) counterAtCheckpoint(rest *framework.Flink, jobID string) int64 {
	acc := rest.WaitAccumulators(r.t, jobID, "max-count >= 3", func(a framework.Accumulators) bool { return a.MaxCount >= 3 })
	completed := func() (int, error) {
		var cps struct {
			Counts struct {
				Completed int `json:"completed"`
			} `json:"counts"`
		}
		err := rest.Get(r.Ctx, "/jobs/"+jobID+"/checkpoints", &cps)
		return cps.Counts.Completed, err
	}
	c0, err := completed()
	if err != nil {
		r.t.Fatal(err)
	}
	r.WaitFor(r.t, time.Minute, "two more completed checkpoints", func() (bool, string) {
		c, err := completed()
		return err == nil && c >= c0+2, fmt.Sprintf("completed %d (was %d) %v", c, c0, err)
	})
	return acc.MaxCount
}

// checkCounterContinued checks that the keyed counter continued: never
// below what it had counted before (a fresh start could not count above
// ceil(records/keys)), and no mismatch.
func (r *run) checkCounterContinued(rest *framework.Flink, jobID string, before int64) {
	r.t.Helper()
	acc := rest.WaitAccumulators(r.t, jobID, "records >= 5", func(a framework.Accumulators) bool { return a.Records >= 5 })
	if acc.Mismatches != 0 {
		r.t.Errorf("job %s: state mismatches after the restore: %+v", jobID, acc)
	}
	if acc.MaxCount < before || acc.MaxCount <= (acc.Records+keys-1)/keys {
		r.t.Errorf("job %s: keyed state not restored: %+v, max-count before %d", jobID, acc, before)
	}
	r.t.Logf("%s: job %s continued the counter: %+v (before %d)", r.version, jobID, acc, before)
}

// haConfigMaps are the names of Flink's HA ConfigMaps of cluster name
// (Flink 1.x labels them configmap-type=high-availability, Flink 2 does
// not: cluster.IsHAConfigMap).
func (r *run) haConfigMaps(name string) []string {
	l, err := r.Kube.CoreV1().ConfigMaps(r.ns).List(r.Ctx, metav1.ListOptions{LabelSelector: cluster.HAConfigMapListSelector(name)})
	if err != nil {
		r.t.Fatal(err)
	}
	var out []string
	for _, c := range l.Items {
		if cluster.IsHAConfigMap(name, &c) {
			out = append(out, c.Name)
		}
	}
	sort.Strings(out)
	return out
}

// waitHAConfigMaps waits for Flink's HA ConfigMaps of the counting job.
func (r *run) waitHAConfigMaps(jobID string) {
	want := []string{cluster.HAClusterConfigMapName(counting), cluster.HAJobConfigMapName(counting, jobID)}
	r.WaitFor(r.t, time.Minute, "HA ConfigMaps "+strings.Join(want, ", "), func() (bool, string) {
		have := r.haConfigMaps(counting)
		for _, w := range want {
			if !contains(have, w) {
				return false, fmt.Sprint(have)
			}
		}
		return true, ""
	})
}

func contains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

func (r *run) jobManagerPods(name string) []corev1.Pod {
	l, err := r.Kube.CoreV1().Pods(r.ns).List(r.Ctx, metav1.ListOptions{LabelSelector: cluster.JobManagerSelector(cluster.Native, name)})
	if err != nil {
		r.t.Fatal(err)
	}
	return l.Items
}

// waitPodsGone waits until the given pods no longer exist (an upgrade
// replaces the JobManager).
func (r *run) waitPodsGone(pods []corev1.Pod) {
	r.t.Helper()
	r.WaitFor(r.t, 2*time.Minute, "the old JobManager pods gone", func() (bool, string) {
		var left []string
		for _, p := range pods {
			if _, err := r.Kube.CoreV1().Pods(r.ns).Get(r.Ctx, p.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				left = append(left, p.Name)
			}
		}
		return len(left) == 0, fmt.Sprint(left)
	})
}

// waitPodsOf waits until no pod of cluster name is left.
func (r *run) waitPodsOf(name string, timeout time.Duration) {
	r.t.Helper()
	sel := labels.SelectorFromSet(map[string]string{cluster.LabelApp: name}).String()
	r.WaitFor(r.t, timeout, "no pod of "+name, func() (bool, string) {
		l, err := r.Kube.CoreV1().Pods(r.ns).List(r.Ctx, metav1.ListOptions{LabelSelector: sel})
		if err != nil {
			return false, err.Error()
		}
		return len(l.Items) == 0, framework.PodNames(l.Items)
	})
}

func (r *run) waitGone(name string, timeout time.Duration) {
	r.t.Helper()
	r.WaitFor(r.t, timeout, "FlinkDeployment "+name+" deleted", func() (bool, string) {
		d, err := r.Flink.FlinkV1beta1().FlinkDeployments(r.ns).Get(r.Ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, ""
		}
		if err != nil {
			return false, err.Error()
		}
		return false, fmt.Sprintf("finalizers %v, %s", d.Finalizers, summary(d))
	})
}

// waitClusterGone waits until the JobManager Deployment, ReplicaSets,
// Services, ConfigMaps (the operator's and Flink's HA ones) and every pod
// of the cluster (Flink's TaskManagers included) are gone.
func (r *run) waitClusterGone(name string, timeout time.Duration) {
	ctx, ns := r.Ctx, r.ns
	r.WaitFor(r.t, timeout, "every object and pod of "+name+" gone", func() (bool, string) {
		var left []string
		if _, err := r.Kube.AppsV1().Deployments(ns).Get(ctx, cluster.JobManagerDeploymentName(name), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			left = append(left, "deployment")
		}
		sel := metav1.ListOptions{LabelSelector: cluster.LabelApp + "=" + name}
		if rs, err := r.Kube.AppsV1().ReplicaSets(ns).List(ctx, sel); err != nil || len(rs.Items) > 0 {
			left = append(left, "replicasets")
		}
		if pods, err := r.Kube.CoreV1().Pods(ns).List(ctx, sel); err != nil || len(pods.Items) > 0 {
			left = append(left, "pods "+framework.PodNamesOrErr(pods, err))
		}
		if svcs, err := r.Kube.CoreV1().Services(ns).List(ctx, sel); err != nil || len(svcs.Items) > 0 {
			left = append(left, "services")
		}
		for _, s := range []string{cluster.RPCServiceName(name), cluster.RESTServiceName(name)} {
			if _, err := r.Kube.CoreV1().Services(ns).Get(ctx, s, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				left = append(left, "service/"+s)
			}
		}
		if cms, err := r.Kube.CoreV1().ConfigMaps(ns).List(ctx, sel); err != nil || len(cms.Items) > 0 {
			var names []string
			if cms != nil {
				for _, c := range cms.Items {
					names = append(names, c.Name)
				}
			}
			left = append(left, fmt.Sprintf("configmaps %v %v", names, errText(err)))
		}
		for _, c := range []string{cluster.ConfigMapName(name), cluster.HAClusterConfigMapName(name)} {
			if _, err := r.Kube.CoreV1().ConfigMaps(ns).Get(ctx, c, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				left = append(left, "configmap/"+c)
			}
		}
		return len(left) == 0, "still there: " + strings.Join(left, ", ")
	})
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// agentProcesses are the live processes the node agent records for the
// run's namespace (names namespace/pod/container).
func (r *run) agentProcesses() []localcluster.RecordedProcess {
	r.t.Helper()
	return framework.AgentProcesses(r.t, r.Local.NodeAgentRecord, r.ns)
}

// onlyProcess is the one live recorded process whose name begins with
// prefix (namespace/pod/).
func (r *run) onlyProcess(prefix string) localcluster.RecordedProcess {
	r.t.Helper()
	var found []localcluster.RecordedProcess
	for _, p := range r.agentProcesses() {
		if strings.HasPrefix(p.Name, prefix) {
			found = append(found, p)
		}
	}
	if len(found) != 1 {
		r.t.Fatalf("%d live recorded processes %s*, want 1", len(found), prefix)
	}
	return found[0]
}

// waitProcessesGone: framework.Env.WaitProcessesGone for the run's namespace.
func (r *run) waitProcessesGone(pids []localcluster.RecordedProcess) {
	r.t.Helper()
	r.WaitProcessesGone(r.t, r.Local.NodeAgentRecord, r.ns, pids)
}

func (r *run) apply(manifest string) { r.kubectlInput(manifest, "apply", "-f", "-") }

func (r *run) kubectlInput(stdin string, args ...string) {
	r.t.Helper()
	r.MustKubectl(r.t, stdin, args...)
}

func (r *run) kubectl(args ...string) {
	r.t.Helper()
	r.MustKubectl(r.t, "", args...)
}

// replaceOnce replaces old, which must occur exactly once in s.
func replaceOnce(t *testing.T, s, old, repl string) string {
	t.Helper()
	if n := strings.Count(s, old); n != 1 {
		t.Fatalf("%q occurs %d times, want once", old, n)
	}
	return strings.Replace(s, old, repl, 1)
}
