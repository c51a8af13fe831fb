package periodice2e

import (
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	flinkjvm "github.com/flinkops/flink-operator/e2e/flink"
	"github.com/flinkops/flink-operator/e2e/framework"
	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
)

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
	var got *v1beta1.FlinkDeployment
	var steps []string // lifecycleState/jobStatus.state as they changed
	stableEarly := ""
	r.WaitFor(r.t, timeout, "FlinkDeployment "+r.ns+"/"+name+": "+what, func() (bool, string) {
		d, err := r.Flink.FlinkV1beta1().FlinkDeployments(r.ns).Get(r.Ctx, name, metav1.GetOptions{})
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
	rest := r.FlinkREST(r.t, r.ns, name)
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

func snapshotNames(s []v1beta1.FlinkStateSnapshot) []string {
	var out []string
	for _, x := range s {
		out = append(out, x.Name)
	}
	return out
}
