package deploymente2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	flinkjvm "github.com/flinkops/flink-operator/e2e/flink"
	"github.com/flinkops/flink-operator/e2e/framework"
	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/cluster"
)

// TestJobManagerDeploymentRecovered is issue 18's "a deleted JobManager
// Deployment is recovered (HA on) with the job's state" on real Flink
// (newest pinned Flink only): the test job (upgradeMode last-state,
// checkpoints every 2 s) runs in a standalone cluster with Flink's
// Kubernetes HA (as ServiceAccount flink of manifests/flink-serviceaccount,
// whose ConfigMap rules the JobManager and TaskManager need for leader
// election and retrieval). Once it has counted and its HA ConfigMap points
// at a completed checkpoint, someone else deletes the JobManager
// Deployment with `kubectl delete deployment` (kubectl's default background
// cascade: the Deployment is gone at once, its ReplicaSet and pod follow
// through garbage collection, so the operator finds it missing while the
// old JobManager JVM may still be shutting down — the harder case; a
// foreground delete would keep the Deployment, with a deletion timestamp,
// until its pod is gone). With kubernetes.operator.jm-deployment-recovery.enabled
// at its default (true) the operator recreates it (a Warning
// RecoverDeployment event), the TaskManager Deployment untouched. The new
// JobManager runs the same job id (the operator pins it through
// $internal.pipeline.job-id) and Flink recovers it from its HA ConfigMaps,
// which keep the job graph, and restores it from the latest checkpoint
// they point to (a checkpoint, not a savepoint: no savepoint is taken, no
// UPGRADE snapshot made); the keyed counter continues, never going back.
func TestJobManagerDeploymentRecovered(t *testing.T) {
	if framework.Kind() {
		t.Skip("local provider only, as TestFlinkDeploymentLifecycle")
	}
	begin := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 12*time.Minute)
	defer cancel()
	versions := flinkjvm.Versions()
	version := versions[len(versions)-1]
	// A starting job is polled every 2 s instead of upstream's 10 s. The
	// reconcile interval stays at its default: the Deployment's deletion
	// itself must wake the operator (its informer enqueues the owner).
	opConfig := filepath.Join(t.TempDir(), "operator.yaml")
	if err := os.WriteFile(opConfig, []byte("kubernetes.operator.observer.progress-check.interval: 2 s\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s := &suite{Env: framework.Setup(t, ctx, framework.Options{Name: "recoverye2e", OperatorArgs: []string{"--config=" + opConfig}})}
	r := s.newRun(t, version, "jm-recovery")
	s.ApplyFlinkServiceAccount(t, r.ns)
	fl := flavours[version]
	data := filepath.Join(r.Base, r.ns)
	if err := os.MkdirAll(data, 0o755); err != nil {
		t.Fatal(err)
	}
	manifest := deploymentYAML(r.ns, fl.image, fl.version, data, 1, v1beta1.JobStateRunning)
	manifest = replaceOnce(t, manifest, "upgradeMode: savepoint", "upgradeMode: last-state")
	manifest = replaceOnce(t, manifest, "  mode: standalone\n", "  mode: standalone\n  serviceAccount: flink\n")
	manifest = replaceOnce(t, manifest, "    execution.checkpointing.interval: 2 s\n", "    execution.checkpointing.interval: 2 s\n"+
		"    high-availability.type: kubernetes\n"+
		"    high-availability.storageDir: file://"+data+"/ha\n")

	// 1. The job runs and checkpoints through HA.
	t0 := time.Now()
	r.apply(manifest)
	dep := r.waitDeployment(4*time.Minute, "job RUNNING, STABLE", func(d *v1beta1.FlinkDeployment) bool {
		return d.Status.JobStatus.JobID != "" && d.Status.JobStatus.State == v1beta1.JobStatusRunning &&
			d.Status.LifecycleState == v1beta1.LifecycleStable
	})
	r.record("apply → RUNNING/STABLE", time.Since(t0))
	jobID := dep.Status.JobStatus.JobID
	rest := r.waitJobRunning(jobID)
	rest.WaitAccumulators(t, jobID, "records >= 20", func(a framework.Accumulators) bool { return a.Records >= 20 })
	r.waitHACheckpoint(jobID, 0)
	// The counter now; the second checkpoint to complete after this read
	// was triggered after it (one checkpoint at a time), so it holds at
	// least this max-count, and so does whatever HA recovers from.
	acc := rest.WaitAccumulators(t, jobID, "readable", func(framework.Accumulators) bool { return true })
	if acc.Mismatches != 0 {
		t.Errorf("mismatches before the delete: %+v", acc)
	}
	before := acc.MaxCount
	done0 := r.completedCheckpoints(rest, jobID)
	r.WaitFor(t, time.Minute, "two more completed checkpoints", func() (bool, string) {
		n := r.completedCheckpoints(rest, jobID)
		return done0 >= 0 && n >= done0+2, fmt.Sprintf("completed %d (was %d)", n, done0)
	})
	haBefore := r.waitHACheckpoint(jobID, 0)
	t.Logf("job %s RUNNING: %+v; HA ConfigMap %s points at checkpoint %d",
		jobID, acc, cluster.HAJobConfigMapName(name, jobID), haBefore)

	jmUID := r.jobManagerUID()
	tmUID := r.deploymentUID(cluster.TaskManagerDeploymentName(name))
	oldJM := r.componentPods(cluster.ComponentJobManager)
	oldTM := r.componentPods(cluster.ComponentTaskManager)
	if jmUID == "" || tmUID == "" || len(oldJM) != 1 || len(oldTM) != 1 {
		t.Fatalf("before the delete: JobManager Deployment %q, TaskManager Deployment %q, JobManager pods %v, TaskManager pods %v",
			jmUID, tmUID, oldJM, oldTM)
	}

	// 2. Someone else deletes the JobManager Deployment.
	t0 = time.Now()
	r.kubectl("delete", "deployment", cluster.JobManagerDeploymentName(name), "-n", r.ns, "--cascade=background", "--wait=false")
	msg := r.waitEvent(90*time.Second, corev1.EventTypeWarning, "RecoverDeployment", "Recovering lost deployment", 1)
	evAt := time.Since(t0)
	r.record("kubectl delete → RecoverDeployment event", evAt)
	t.Logf("event: Warning RecoverDeployment: %s", msg)
	if evAt > 30*time.Second {
		t.Errorf("RecoverDeployment %s after the delete: the deletion did not wake the operator", evAt.Round(time.Second))
	}
	r.WaitFor(t, time.Minute, "a new JobManager Deployment", func() (bool, string) {
		uid := r.jobManagerUID()
		return uid != "" && uid != jmUID, "uid " + uid
	})
	r.record("kubectl delete → new JobManager Deployment", time.Since(t0))

	// 3. The same job RUNNING again on the new JobManager, from HA.
	var steps []string // jobManagerDeploymentStatus/lifecycleState/jobStatus.state as they changed
	r.WaitFor(t, 4*time.Minute, "FlinkDeployment: JobManager READY, job RUNNING, STABLE on the new JobManager", func() (bool, string) {
		d, err := r.Flink.FlinkV1beta1().FlinkDeployments(r.ns).Get(r.Ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		dep = d
		st := d.Status
		if step := fmt.Sprintf("%s/%s/%s", st.JobManagerDeploymentStatus, st.LifecycleState, st.JobStatus.State); len(steps) == 0 || steps[len(steps)-1] != step {
			steps = append(steps, step)
		}
		return st.JobManagerDeploymentStatus == v1beta1.JobManagerReady && st.JobStatus.State == v1beta1.JobStatusRunning &&
			st.LifecycleState == v1beta1.LifecycleStable && len(r.componentPods(cluster.ComponentJobManager)) == 1 &&
			!slices.Contains(oldJM, r.componentPods(cluster.ComponentJobManager)[0]), summary(d)
	})
	t.Logf("after the delete, jobManagerDeploymentStatus/lifecycleState/jobStatus.state seen: %s", strings.Join(steps, " → "))
	if id := dep.Status.JobStatus.JobID; id != jobID {
		t.Errorf("status.jobStatus.jobId %s after the recovery, want the same job %s", id, jobID)
	}
	rest = r.waitJobRunning(jobID)
	r.record("kubectl delete → job RUNNING (Flink, new JobManager)", time.Since(t0))
	restored := rest.WaitRestored(t, jobID)
	if restored.IsSavepoint || !strings.HasPrefix(framework.LocalPath(t, restored.ExternalPath), filepath.Join(data, "checkpoints")+"/") ||
		checkpointID(t, restored.ExternalPath) < haBefore {
		t.Errorf("job %s: latest.restored = %+v, want a checkpoint under %s/checkpoints, chk-%d or later (HA's before the delete)",
			jobID, restored, data, haBefore)
	}
	acc = r.checkCounterContinued(rest, jobID, before)
	t.Logf("job %s recovered from %s: %+v (max-count before the delete %d)", jobID, restored.ExternalPath, acc, before)
	if live := r.liveFlinkJobs(rest); len(live) != 1 || live[0] != jobID {
		t.Errorf("jobs on the new JobManager: %v, want only %s", live, jobID)
	}
	if p := dep.Status.JobStatus.UpgradeSavepointPath; p != "" {
		t.Errorf("status.jobStatus.upgradeSavepointPath %q after the recovery, want none (recovered through HA)", p)
	}
	if snaps := r.upgradeSnapshots(); len(snaps) != 0 {
		t.Errorf("UPGRADE snapshots %v after the recovery, want none", snapshotNames(snaps))
	}
	if dep.Status.ReconciliationStatus.State != v1beta1.ReconciliationDeployed {
		t.Errorf("reconciliation state %s after the recovery, want DEPLOYED: %s", dep.Status.ReconciliationStatus.State, summary(dep))
	}
	// The graph stays in the HA metadata: the new JobManager recovers the
	// job with its own library BLOBs, which the TaskManager that outlived
	// the lost JobManager (still holding the job's slots and library
	// registration) accepts; a resubmitted job's new BLOB keys it refused
	// ("different set of library BLOBs"), the job restarting without end.
	if removed := r.operatorLogLines("Removed the job graph"); len(removed) != 0 {
		t.Errorf("the recovery removed the job graph from the HA metadata:\n%s", strings.Join(removed, "\n"))
	}
	if uid := r.deploymentUID(cluster.TaskManagerDeploymentName(name)); uid != tmUID {
		t.Errorf("TaskManager Deployment replaced (uid %s → %s); only the JobManager was lost", tmUID, uid)
	}
	if tm := r.componentPods(cluster.ComponentTaskManager); !slices.Equal(tm, oldTM) {
		t.Logf("TaskManager pods %v → %v", oldTM, tm)
	}
	r.WaitFor(t, 2*time.Minute, "the old JobManager pod gone", func() (bool, string) {
		left := slices.DeleteFunc(r.componentPods(cluster.ComponentJobManager), func(p string) bool { return !slices.Contains(oldJM, p) })
		return len(left) == 0, fmt.Sprint(left)
	})
	r.record("kubectl delete → old JobManager pod gone", time.Since(t0))

	// 4. It keeps counting and checkpointing.
	acc = rest.WaitAccumulators(t, jobID, "max-count above the recovered one", func(a framework.Accumulators) bool { return a.MaxCount > acc.MaxCount })
	if acc.Mismatches != 0 {
		t.Errorf("mismatches after the recovery: %+v", acc)
	}
	haAfter := r.waitHACheckpoint(jobID, haBefore)
	t.Logf("HA ConfigMap points at checkpoint %d after the recovery (%d before the delete)", haAfter, haBefore)
	r.logKubectl("get", "flinkdeployment,deployment,pod", "-n", r.ns)
	t.Logf("operator log on the recovery:\n%s", strings.Join(r.operatorLogLines("Recovering the lost JobManager"), "\n"))
	var table strings.Builder
	for _, tm := range s.timings {
		fmt.Fprintf(&table, "\n  %-7s %-52s %s", tm.version, tm.what, tm.d.Round(100*time.Millisecond))
	}
	t.Logf("measured durations:%s", table.String())
	t.Logf("TestJobManagerDeploymentRecovered: %s in all", time.Since(begin).Round(time.Second))
}

// componentPods are the names of the cluster's pods of one component
// (jobmanager, taskmanager) that are not being deleted, sorted.
func (r *run) componentPods(component string) []string {
	r.t.Helper()
	return r.ComponentPods(r.t, r.ns, name, component)
}

// completedCheckpoints is Flink's count of the job's completed checkpoints
// (-1 when unreadable).
func (r *run) completedCheckpoints(rest *framework.Flink, jobID string) int {
	var cps struct {
		Counts struct {
			Completed int `json:"completed"`
		} `json:"counts"`
	}
	if err := rest.Get(r.Ctx, "/jobs/"+jobID+"/checkpoints", &cps); err != nil {
		return -1
	}
	return cps.Counts.Completed
}

// waitHACheckpoint waits for the job's HA ConfigMap to point at a
// completed checkpoint (Flink's checkpointID-<n> keys) above above and
// returns the highest n.
func (r *run) waitHACheckpoint(jobID string, above int) int {
	r.t.Helper()
	cmName := cluster.HAJobConfigMapName(name, jobID)
	highest := -1
	r.WaitFor(r.t, time.Minute, fmt.Sprintf("a checkpoint above %d in HA ConfigMap %s", above, cmName), func() (bool, string) {
		cm, err := r.Kube.CoreV1().ConfigMaps(r.ns).Get(r.Ctx, cmName, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		var keys []string
		for k := range cm.Data {
			keys = append(keys, k)
			var n int
			if _, err := fmt.Sscanf(k, "checkpointID-%d", &n); err == nil && n > highest {
				highest = n
			}
		}
		slices.Sort(keys)
		return highest > above, "keys " + strings.Join(keys, ", ")
	})
	return highest
}

// liveFlinkJobs are the ids of the JobManager's jobs that are not
// globally terminal, sorted.
func (r *run) liveFlinkJobs(rest *framework.Flink) []string {
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
		if j.State != "FINISHED" && j.State != "CANCELED" && j.State != "FAILED" {
			live = append(live, j.ID)
		}
	}
	slices.Sort(live)
	return live
}

// operatorLogLines are the operator log's lines about the run's namespace
// that contain one of parts.
func (r *run) operatorLogLines(parts ...string) []string {
	raw, err := os.ReadFile(r.OpLog)
	if err != nil {
		return []string{err.Error()}
	}
	var out []string
	for _, l := range strings.Split(string(raw), "\n") {
		if strings.Contains(l, r.ns) && slices.ContainsFunc(parts, func(p string) bool { return strings.Contains(l, p) }) {
			out = append(out, l)
		}
	}
	return out
}
