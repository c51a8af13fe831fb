package deploymente2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	flinkjvm "github.com/flinkops/flink-operator/e2e/flink"
	"github.com/flinkops/flink-operator/e2e/framework"
	"github.com/flinkops/flink-operator/e2e/localcluster"
	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/cluster"
)

// flavours are the image and FlinkDeployment spelling of each pinned version.
var flavours = map[string]struct {
	image   string
	version v1beta1.FlinkVersion
}{
	"1.20.5": {"flink:1.20", v1beta1.FlinkVersion1_20},
	"2.3.0":  {"flink:2.3", v1beta1.FlinkVersion2_3},
}

const (
	// name is the test job's FlinkDeployment.
	name = "counting"
	// testJar is the test job in the image (the node agent's private
	// /opt/flink/usrlib holds it).
	testJar = "local:///opt/flink/usrlib/testjob.jar"
	// keys is the test job's --keys.
	keys = 10
)

type suite struct {
	*framework.Env
	mu      sync.Mutex
	timings []timing
}

type timing struct {
	version, what string
	d             time.Duration
}

// TestFlinkDeploymentLifecycle is issue 7's acceptance test: one local
// cluster and one operator process (all controllers) for the whole test;
// for every pinned Flink version, in its own namespace and driven by kubectl
// only, a FlinkDeployment of the test job is applied, upgraded with a
// savepoint (parallelism change), suspended, its savepoint moved to the
// legacy status field and the operator restarted (upstream's
// test_snapshot.sh), resumed and deleted, checking
// Flink itself at every step (the restore path and the keyed counter); then
// upstream's examples/basic.yaml runs with the test image and jar.
func TestFlinkDeploymentLifecycle(t *testing.T) {
	if framework.Kind() {
		t.Skip("the node agent's process records and the local operator are the local provider's; e2e/sessionjobe2e runs on kind")
	}
	begin := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 19*time.Minute)
	defer cancel()
	for _, v := range flinkjvm.Versions() {
		if _, ok := flavours[v]; !ok {
			t.Fatalf("pinned Flink %s has no image in this test", v)
		}
	}
	s := &suite{Env: framework.Setup(t, ctx, framework.Options{Name: "deploymente2e"})}
	t.Logf("local cluster, CRDs and operator up %s after the start", time.Since(begin).Round(time.Millisecond))

	upstreamBasic := filepath.Join(s.Root, "pkg", "upstreamtest", "testdata", "examples", "basic.yaml")
	for i, v := range flinkjvm.Versions() {
		t.Run(v, func(t *testing.T) {
			t.Run("lifecycle", func(t *testing.T) { s.newRun(t, v, fmt.Sprintf("deploy-%d", i)).lifecycle() })
			t.Run("basic-example", func(t *testing.T) { s.newRun(t, v, fmt.Sprintf("basic-%d", i)).basicExample(upstreamBasic) })
		})
	}

	var table strings.Builder
	for _, tm := range s.timings {
		fmt.Fprintf(&table, "\n  %-7s %-52s %s", tm.version, tm.what, tm.d.Round(100*time.Millisecond))
	}
	t.Logf("measured durations:%s", table.String())
	t.Logf("TestFlinkDeploymentLifecycle: %s in all", time.Since(begin).Round(time.Second))
}

// run is one version's scenario in one namespace.
type run struct {
	*suite
	t       *testing.T
	version string
	ns      string
}

func (s *suite) newRun(t *testing.T, version, ns string) *run {
	r := &run{suite: s, t: t, version: version, ns: ns}
	s.CreateNamespace(t, ns)
	t.Cleanup(r.cleanup)
	return r
}

func (r *run) lifecycle() {
	t := r.t
	fl := flavours[r.version]
	data := filepath.Join(r.Base, r.ns)
	if err := os.MkdirAll(data, 0o755); err != nil {
		t.Fatal(err)
	}
	savepointDir := filepath.Join(data, "savepoints")
	manifest := func(parallelism int, state v1beta1.JobState) string {
		return deploymentYAML(r.ns, fl.image, fl.version, data, parallelism, state)
	}
	start := time.Now()

	// 1. kubectl apply: the job runs.
	t0 := time.Now()
	r.apply(manifest(2, v1beta1.JobStateRunning))
	dep := r.waitDeployment(4*time.Minute, "job RUNNING, lifecycle STABLE", func(d *v1beta1.FlinkDeployment) bool {
		return d.Status.JobStatus.JobID != "" && d.Status.JobStatus.State == v1beta1.JobStatusRunning &&
			d.Status.LifecycleState == v1beta1.LifecycleStable
	})
	jobID := dep.Status.JobStatus.JobID
	rest := r.waitJobRunning(jobID)
	r.record("apply → RUNNING/STABLE", time.Since(t0))
	if got := dep.Status.ClusterInfo["flink-version"]; got != r.version {
		t.Errorf("status.clusterInfo.flink-version = %q, want %s", got, r.version)
	}
	if dep.Status.JobStatus.UpgradeSavepointPath != "" {
		t.Errorf("first deploy: upgradeSavepointPath = %q, want empty state", dep.Status.JobStatus.UpgradeSavepointPath)
	}
	r.checkParallelism(rest, jobID, 2)
	r.checkTaskManagers(1) // ceil(2 / 2 slots)
	acc := rest.WaitAccumulators(t, jobID, "max-count >= 5", func(a framework.Accumulators) bool { return a.MaxCount >= 5 })
	if acc.Mismatches != 0 {
		t.Errorf("mismatches before the upgrade: %+v", acc)
	}
	t.Logf("%s: job %s RUNNING at %s: %+v", r.version, jobID, rest.URL(), acc)
	r.logKubectl("get", "flinkdeployment", "-n", r.ns)

	// 2. parallelism 2 → 1: stop-with-savepoint, UPGRADE snapshot, restore.
	before := acc.MaxCount
	t0 = time.Now()
	r.apply(manifest(1, v1beta1.JobStateRunning))
	dep = r.waitDeployment(5*time.Minute, "upgraded job RUNNING, lifecycle STABLE", func(d *v1beta1.FlinkDeployment) bool {
		js := d.Status.JobStatus
		return js.JobID != "" && js.JobID != jobID && js.State == v1beta1.JobStatusRunning &&
			d.Status.LifecycleState == v1beta1.LifecycleStable
	})
	upgradedID := dep.Status.JobStatus.JobID
	rest = r.waitJobRunning(upgradedID)
	r.record("upgrade parallelism 2→1 (apply → RUNNING/STABLE)", time.Since(t0))
	upgradePath := dep.Status.JobStatus.UpgradeSavepointPath
	if upgradePath == "" {
		t.Fatalf("upgraded job runs without status.jobStatus.upgradeSavepointPath: %s", summary(dep))
	}
	snaps := r.upgradeSnapshots()
	if len(snaps) != 1 {
		t.Fatalf("%d UPGRADE FlinkStateSnapshots after the upgrade, want 1: %v", len(snaps), snapshotNames(snaps))
	}
	snap := r.checkUpgradeSnapshot(snaps[0].Name, upgradePath, savepointDir)
	r.checkRestored(rest, upgradedID, upgradePath)
	r.checkParallelism(rest, upgradedID, 1)
	r.checkTaskManagers(1) // ceil(1 / 2 slots)
	acc = r.checkCounterContinued(rest, upgradedID, before)
	t.Logf("%s: upgraded to job %s restored from %s (snapshot %s): %+v (max-count before %d)",
		r.version, upgradedID, upgradePath, snap.Name, acc, before)

	// 3. Suspend: a savepoint, the pods and their JVMs gone.
	acc = rest.WaitAccumulators(t, upgradedID, "max-count above the restored value", func(a framework.Accumulators) bool { return a.MaxCount > acc.MaxCount })
	before = acc.MaxCount
	pids := r.agentProcesses()
	if len(pids) != 2 {
		t.Errorf("agent records %d processes in %s before the suspend, want 2 (JM, TM): %v", len(pids), r.ns, pids)
	}
	t0 = time.Now()
	r.apply(manifest(1, v1beta1.JobStateSuspended))
	dep = r.waitDeployment(3*time.Minute, "lifecycle SUSPENDED, job SUSPENDED", func(d *v1beta1.FlinkDeployment) bool {
		return d.Status.LifecycleState == v1beta1.LifecycleSuspended && d.Status.JobStatus.State == v1beta1.JobStatusSuspended
	})
	r.waitClusterGone(2*time.Minute, false)
	r.record("suspend (apply → SUSPENDED, pods gone)", time.Since(t0))
	r.waitProcessesGone(pids)
	suspendPath := dep.Status.JobStatus.UpgradeSavepointPath
	if suspendPath == "" || framework.SameLocation(t, suspendPath, upgradePath) {
		t.Fatalf("suspended: upgradeSavepointPath %q, want a new savepoint (the upgrade's was %s)", suspendPath, upgradePath)
	}
	snaps = r.upgradeSnapshots()
	if len(snaps) != 2 {
		t.Fatalf("%d UPGRADE FlinkStateSnapshots after the suspend, want 2: %v", len(snaps), snapshotNames(snaps))
	}
	snap = r.checkUpgradeSnapshot(snaps[1].Name, suspendPath, savepointDir)
	t.Logf("%s: suspended with savepoint %s (snapshot %s), JobManager and TaskManager pods and JVMs gone", r.version, suspendPath, snap.Name)
	r.logKubectl("get", "flinkdeployment,flinkstatesnapshot", "-n", r.ns)

	// Upstream's test_snapshot.sh, "upgrade by setting legacy field": the
	// suspend savepoint moved from upgradeSavepointPath to the legacy
	// savepointInfo.lastSavepoint (where upstream releases before
	// upgradeSavepointPath kept it) and the operator restarted; the resume
	// must restore from it (issue 36: it started from empty state).
	patch := fmt.Sprintf(`{"status":{"jobStatus":{"upgradeSavepointPath":null,"savepointInfo":{"lastSavepoint":{"timeStamp":0,"location":%q,"triggerNonce":0}}}}}`, suspendPath)
	r.kubectl("patch", "flinkdeployment", name, "-n", r.ns, "--type=merge", "--subresource=status", "--patch", patch)
	r.RestartOperator(t)

	// 4. Resume: restored from the suspend savepoint.
	t0 = time.Now()
	r.apply(manifest(1, v1beta1.JobStateRunning))
	dep = r.waitDeployment(4*time.Minute, "resumed job RUNNING, lifecycle STABLE", func(d *v1beta1.FlinkDeployment) bool {
		return d.Status.JobStatus.JobID != "" && d.Status.JobStatus.State == v1beta1.JobStatusRunning &&
			d.Status.LifecycleState == v1beta1.LifecycleStable
	})
	resumedID := dep.Status.JobStatus.JobID
	rest = r.waitJobRunning(resumedID)
	r.record("resume (apply → RUNNING/STABLE)", time.Since(t0))
	if got := dep.Status.JobStatus.UpgradeSavepointPath; !framework.SameLocation(t, got, suspendPath) {
		t.Errorf("resumed: upgradeSavepointPath %q, want the suspend savepoint %s", got, suspendPath)
	}
	r.checkRestored(rest, resumedID, dep.Status.JobStatus.UpgradeSavepointPath)
	acc = r.checkCounterContinued(rest, resumedID, before)
	t.Logf("%s: resumed as job %s restored from %s: %+v (max-count before the suspend %d)", r.version, resumedID, suspendPath, acc, before)

	// 5. kubectl delete: the FlinkDeployment, its objects, pods and JVMs gone.
	pids = r.agentProcesses()
	if len(pids) != 2 {
		t.Errorf("agent records %d processes in %s before the delete, want 2 (JM, TM): %v", len(pids), r.ns, pids)
	}
	t0 = time.Now()
	r.kubectl("delete", "flinkdeployment", name, "-n", r.ns, "--wait=false")
	r.WaitFor(t, 2*time.Minute, "FlinkDeployment "+name+" deleted", func() (bool, string) {
		d, err := r.Flink.FlinkV1beta1().FlinkDeployments(r.ns).Get(r.Ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, ""
		}
		if err != nil {
			return false, err.Error()
		}
		return false, fmt.Sprintf("finalizers %v, %s", d.Finalizers, summary(d))
	})
	r.waitClusterGone(2*time.Minute, true)
	r.record("delete (kubectl delete → objects, pods gone)", time.Since(t0))
	r.waitProcessesGone(pids)
	t.Logf("%s: FlinkDeployment, Deployments, ReplicaSets, Services, ConfigMap, pods and JVMs gone %s after kubectl delete",
		r.version, time.Since(t0).Round(time.Millisecond))
	r.logKubectl("get", "all,configmap,flinkstatesnapshot", "-n", r.ns)
	r.record("whole lifecycle", time.Since(start))
}

// basicExample applies upstream's examples/basic.yaml with the test image
// and jar and waits for its job to run, then deletes it.
func (r *run) basicExample(path string) {
	t := r.t
	fl := flavours[r.version]
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("upstream example: %v", err)
	}
	y := string(raw)
	// The only edits: the mode, the image (the node agent runs images it knows), the
	// jar (StateMachineExample.jar is not in the test's Flink) and its entry
	// class. Memory (2048m per JobManager and TaskManager: fits) and
	// everything else stay as upstream wrote them.
	y = replaceOnce(t, y, "image: flink:2.2", "image: "+fl.image)
	// Standalone mode: the sample's unset mode is native, which
	// e2e/nativee2e runs; this package is about standalone clusters.
	y = replaceOnce(t, y, "spec:\n", "spec:\n  mode: standalone\n")
	// The entry class is needed: Flink's standalone application entrypoint
	// finds the jar twice (its usrlib/ scan and pipeline.classpaths, which
	// the operator sets from jarURI as upstream does) and refuses to pick a
	// main class from two manifests ("Multiple JAR archives with entry
	// classes found on classpath"). StateMachineExample.jar, in examples/,
	// is found once.
	y = replaceOnce(t, y, "    jarURI: local:///opt/flink/examples/streaming/StateMachineExample.jar\n",
		"    jarURI: "+testJar+"\n    entryClass: "+flinkjvm.TestJobClass+"\n")
	if !strings.HasPrefix(r.version, "2.") {
		// Also necessary for Flink 1.x: flinkVersion tells the operator how
		// to write the configuration (config.yaml vs flink-conf.yaml) and
		// which REST dialect to speak; v2_2 for a 1.20 image would be a
		// wrong resource. (For 2.3, upstream's v2_2 stays: same major.)
		y = replaceOnce(t, y, "flinkVersion: v2_2", "flinkVersion: "+string(fl.version))
	}
	// The example runs as serviceAccount flink, which upstream's Helm chart
	// creates in every watched namespace; create it the same way.
	if _, err := r.Kube.CoreV1().ServiceAccounts(r.ns).Create(r.Ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "flink"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	const basic = "basic-example"
	t0 := time.Now()
	r.kubectlInput(y, "apply", "-n", r.ns, "-f", "-")
	dep := r.waitDeploymentNamed(basic, 4*time.Minute, "basic-example job RUNNING, lifecycle STABLE", func(d *v1beta1.FlinkDeployment) bool {
		return d.Status.JobStatus.JobID != "" && d.Status.JobStatus.State == v1beta1.JobStatusRunning &&
			d.Status.LifecycleState == v1beta1.LifecycleStable
	})
	rest := r.waitJobRunningNamed(basic, dep.Status.JobStatus.JobID)
	r.record("basic.yaml apply → RUNNING/STABLE", time.Since(t0))
	if got := dep.Status.ClusterInfo["flink-version"]; got != r.version {
		t.Errorf("basic-example: status.clusterInfo.flink-version = %q, want %s", got, r.version)
	}
	r.checkParallelism(rest, dep.Status.JobStatus.JobID, 2)
	t.Logf("%s: upstream basic.yaml (image %s, test job jar) RUNNING as job %s at %s", r.version, fl.image, dep.Status.JobStatus.JobID, rest.URL())
	r.logKubectl("get", "flinkdeployment", "-n", r.ns)

	// Free its memory before the next version.
	pids := r.agentProcesses()
	t0 = time.Now()
	r.kubectl("delete", "flinkdeployment", basic, "-n", r.ns, "--wait=false")
	r.WaitFor(t, 2*time.Minute, "every pod of "+r.ns+" gone", func() (bool, string) {
		l, err := r.Kube.CoreV1().Pods(r.ns).List(r.Ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		return len(l.Items) == 0, framework.PodNames(l.Items)
	})
	r.waitProcessesGone(pids)
	r.record("basic.yaml delete → pods gone", time.Since(t0))
}

// deploymentYAML is the test job's FlinkDeployment.
func deploymentYAML(ns, image string, version v1beta1.FlinkVersion, data string, parallelism int, state v1beta1.JobState) string {
	return fmt.Sprintf(`apiVersion: flink.apache.org/v1beta1
kind: FlinkDeployment
metadata:
  name: %s
  namespace: %s
spec:
  mode: standalone
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

// cleanup dumps what explains a failure, then deletes the namespace (its
// JVMs stop; the cluster's Stop would stop them anyway).
func (r *run) cleanup() {
	if !r.t.Failed() {
		return
	}
	r.Dump(r.t, r.ns)
	if _, err := r.Kubectl("delete", "namespace", r.ns, "--wait=false"); err != nil {
		r.t.Logf("cleanup: %v", err)
	}
}

func (r *run) apply(manifest string) {
	r.kubectlInput(manifest, "apply", "-f", "-")
}

func (r *run) kubectlInput(stdin string, args ...string) {
	r.t.Helper()
	out, err := r.KubectlInput(strings.NewReader(stdin), args...)
	if err != nil {
		r.t.Fatal(err)
	}
	r.t.Logf("kubectl %s: %s", strings.Join(args, " "), strings.TrimSpace(out))
}

func (r *run) kubectl(args ...string) {
	r.t.Helper()
	out, err := r.Kubectl(args...)
	if err != nil {
		r.t.Fatal(err)
	}
	r.t.Logf("kubectl %s: %s", strings.Join(args, " "), strings.TrimSpace(out))
}

func (r *run) logKubectl(args ...string) {
	out, err := r.Kubectl(args...)
	if err != nil {
		r.t.Errorf("%v", err)
		return
	}
	r.t.Logf("%s: kubectl %s\n%s", r.version, strings.Join(args, " "), strings.TrimRight(out, "\n"))
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
	r.WaitFor(r.t, timeout, "FlinkDeployment "+r.ns+"/"+dep+": "+what, func() (bool, string) {
		d, err := r.Flink.FlinkV1beta1().FlinkDeployments(r.ns).Get(r.Ctx, dep, metav1.GetOptions{})
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
func (r *run) checkTaskManagers(want int32) {
	d, err := r.Kube.AppsV1().Deployments(r.ns).Get(r.Ctx, cluster.TaskManagerDeploymentName(name), metav1.GetOptions{})
	if err != nil {
		r.t.Fatal(err)
	}
	if d.Spec.Replicas == nil || *d.Spec.Replicas != want {
		r.t.Errorf("TaskManager Deployment replicas %v, want %d", d.Spec.Replicas, want)
	}
}

func summary(d *v1beta1.FlinkDeployment) string {
	st := d.Status
	return fmt.Sprintf("lifecycleState=%s reconciliation=%s jobManagerDeploymentStatus=%s job=%s state=%s upgradeSavepointPath=%q savepointInfo=%+v error=%q",
		st.LifecycleState, st.ReconciliationStatus.State, st.JobManagerDeploymentStatus, st.JobStatus.JobID,
		st.JobStatus.State, st.JobStatus.UpgradeSavepointPath, st.JobStatus.SavepointInfo, st.Error)
}

// waitJobRunning waits until Flink itself reports the job RUNNING with every
// task running, and returns the JobManager's REST API.
func (r *run) waitJobRunning(jobID string) *framework.Flink {
	r.t.Helper()
	return r.waitJobRunningNamed(name, jobID)
}

func (r *run) waitJobRunningNamed(dep, jobID string) *framework.Flink {
	r.t.Helper()
	rest := r.FlinkREST(r.t, r.ns, dep)
	rest.WaitJobRunning(r.t, jobID)
	return rest
}

// checkParallelism checks the job's highest vertex parallelism (the source
// always has 1).
func (r *run) checkParallelism(rest *framework.Flink, jobID string, want int) {
	var job framework.JobDetails
	if err := rest.Get(r.Ctx, "/jobs/"+jobID, &job); err != nil {
		r.t.Fatal(err)
	}
	if got := job.MaxParallelism(); got != want {
		r.t.Errorf("job %s runs with parallelism %d, want %d: %+v", jobID, got, want, job.Vertices)
	}
}

// checkRestored checks Flink's own record of where the job restored from.
func (r *run) checkRestored(rest *framework.Flink, jobID, want string) {
	t := r.t
	t.Helper()
	got := rest.WaitRestored(t, jobID)
	if !got.IsSavepoint || !framework.SameLocation(t, got.ExternalPath, want) {
		t.Fatalf("job %s: latest.restored = %+v, want the savepoint %s", jobID, got, want)
	}
	t.Logf("%s: job %s latest.restored: %s (savepoint)", r.version, jobID, got.ExternalPath)
}

// checkCounterContinued checks that the keyed counter continued from the
// savepoint: a fresh start could never count above ceil(records/keys), and
// the savepoint was taken after max-count was before.
func (r *run) checkCounterContinued(rest *framework.Flink, jobID string, before int64) framework.Accumulators {
	acc := rest.WaitAccumulators(r.t, jobID, "records >= 5", func(a framework.Accumulators) bool { return a.Records >= 5 })
	if acc.Mismatches != 0 {
		r.t.Errorf("job %s: state mismatches after the restore: %+v", jobID, acc)
	}
	if acc.MaxCount < before || acc.MaxCount <= (acc.Records+keys-1)/keys {
		r.t.Errorf("job %s: keyed state not restored: %+v, max-count before the stop %d", jobID, acc, before)
	}
	return acc
}

// upgradeSnapshots are the UPGRADE FlinkStateSnapshots of the job, oldest
// first (their names end in the trigger time in milliseconds).
func (r *run) upgradeSnapshots() []v1beta1.FlinkStateSnapshot {
	l, err := r.Flink.FlinkV1beta1().FlinkStateSnapshots(r.ns).List(r.Ctx, metav1.ListOptions{
		LabelSelector: v1beta1.LabelSnapshotTriggerType + "=" + string(v1beta1.SnapshotTriggerUpgrade) + "," + v1beta1.LabelJobReferenceName + "=" + name,
	})
	if err != nil {
		r.t.Fatal(err)
	}
	sort.Slice(l.Items, func(i, j int) bool { return l.Items[i].Name < l.Items[j].Name })
	return l.Items
}

func snapshotNames(s []v1beta1.FlinkStateSnapshot) []string {
	var out []string
	for _, x := range s {
		out = append(out, x.Name)
	}
	return out
}

// checkUpgradeSnapshot checks an UPGRADE snapshot: COMPLETED, the path the
// status records, files on disk under the configured savepoint directory.
func (r *run) checkUpgradeSnapshot(snapName, statusPath, savepointDir string) *v1beta1.FlinkStateSnapshot {
	t := r.t
	t.Helper()
	if !strings.HasPrefix(snapName, name+"-savepoint-upgrade-") {
		t.Errorf("UPGRADE snapshot named %s, want %s-savepoint-upgrade-<millis>", snapName, name)
	}
	var snap *v1beta1.FlinkStateSnapshot
	r.WaitFor(t, time.Minute, "FlinkStateSnapshot "+snapName+" COMPLETED", func() (bool, string) {
		s, err := r.Flink.FlinkV1beta1().FlinkStateSnapshots(r.ns).Get(r.Ctx, snapName, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		snap = s
		if s.Status.State.IsTerminal() && s.Status.State != v1beta1.SnapshotCompleted {
			t.Fatalf("snapshot %s ended %s: %s", snapName, s.Status.State, s.Status.Error)
		}
		return s.Status.State == v1beta1.SnapshotCompleted, fmt.Sprintf("%+v", s.Status)
	})
	if snap.Spec.Savepoint == nil || snap.Spec.Savepoint.Path == "" {
		t.Fatalf("snapshot %s: spec.savepoint %+v has no path", snapName, snap.Spec.Savepoint)
	}
	dir := framework.LocalPath(t, snap.Status.Path)
	if framework.LocalPath(t, snap.Spec.Savepoint.Path) != dir {
		t.Errorf("snapshot %s: spec.savepoint.path %s, status.path %s", snapName, snap.Spec.Savepoint.Path, snap.Status.Path)
	}
	if dir != framework.LocalPath(t, statusPath) {
		t.Errorf("snapshot %s has path %s, status.jobStatus.upgradeSavepointPath is %s", snapName, snap.Status.Path, statusPath)
	}
	if !strings.HasPrefix(dir, savepointDir+"/") {
		t.Errorf("snapshot %s: %s is not under the configured savepoint directory %s", snapName, dir, savepointDir)
	}
	if _, err := os.Stat(filepath.Join(dir, "_metadata")); err != nil {
		t.Fatalf("snapshot %s: savepoint has no _metadata: %v", snapName, err)
	}
	return snap
}

// waitClusterGone waits until the JobManager and TaskManager Deployments,
// their ReplicaSets and pods are gone, and with all also the Services and the
// ConfigMap.
func (r *run) waitClusterGone(timeout time.Duration, all bool) {
	ctx, ns := r.Ctx, r.ns
	what := "JobManager and TaskManager Deployments and pods gone"
	if all {
		what = "Deployments, ReplicaSets, Services, ConfigMap and pods gone"
	}
	r.WaitFor(r.t, timeout, what, func() (bool, string) {
		var left []string
		for _, d := range []string{cluster.JobManagerDeploymentName(name), cluster.TaskManagerDeploymentName(name)} {
			if _, err := r.Kube.AppsV1().Deployments(ns).Get(ctx, d, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				left = append(left, "deployment/"+d)
			}
		}
		sel := metav1.ListOptions{LabelSelector: cluster.LabelApp + "=" + name}
		if rs, err := r.Kube.AppsV1().ReplicaSets(ns).List(ctx, sel); err != nil || len(rs.Items) > 0 {
			left = append(left, "replicasets")
		}
		pods, err := r.Kube.CoreV1().Pods(ns).List(ctx, sel)
		if err != nil || len(pods.Items) > 0 {
			left = append(left, "pods "+framework.PodNamesOrErr(pods, err))
		}
		if all {
			for _, s := range []string{cluster.RPCServiceName(name), cluster.RESTServiceName(name)} {
				if _, err := r.Kube.CoreV1().Services(ns).Get(ctx, s, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
					left = append(left, "service/"+s)
				}
			}
			if _, err := r.Kube.CoreV1().ConfigMaps(ns).Get(ctx, cluster.ConfigMapName(name), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				left = append(left, "configmap/"+cluster.ConfigMapName(name))
			}
			if l, err := r.Kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{}); err != nil || len(l.Items) > 0 {
				left = append(left, "pods of the namespace "+framework.PodNamesOrErr(l, err))
			}
		}
		return len(left) == 0, "still there: " + strings.Join(left, ", ")
	})
}

// agentProcesses are the live processes the node agent records for the
// run's namespace (names namespace/pod/container).
func (r *run) agentProcesses() []localcluster.RecordedProcess {
	r.t.Helper()
	return framework.AgentProcesses(r.t, r.Local.NodeAgentRecord, r.ns)
}

// waitProcessesGone: framework.Env.WaitProcessesGone for the run's namespace.
func (r *run) waitProcessesGone(pids []localcluster.RecordedProcess) {
	r.t.Helper()
	r.WaitProcessesGone(r.t, r.Local.NodeAgentRecord, r.ns, pids)
}

// replaceOnce replaces old, which must occur exactly once in s (else the
// upstream example changed and the test must be looked at).
func replaceOnce(t *testing.T, s, old, repl string) string {
	t.Helper()
	if n := strings.Count(s, old); n != 1 {
		t.Fatalf("upstream basic.yaml has %q %d times, want once", old, n)
	}
	return strings.Replace(s, old, repl, 1)
}
