package deploymente2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	flinkjvm "github.com/flinkops/flink-operator/e2e/flink"
	"github.com/flinkops/flink-operator/e2e/framework"
	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/lifecycle"
)

// TestRollbackToStableSpec is issue 18 item 3's acceptance test on real
// Flink: the running test job, with kubernetes.operator.deployment.rollback.enabled
// and a 30 s readiness timeout in its flinkConfiguration, is upgraded
// (savepoint mode) to a spec whose entry class is not in its jar, so its
// JobManager crash-loops and the new spec never becomes stable. 30 s after
// that deploy the operator rolls back (Rollback events, ROLLING_BACK →
// ROLLED_BACK) to the last stable spec, from the upgrade's savepoint: Flink
// reports the job restored from it and the keyed counter continued. The
// failed spec is not retried (lastReconciledSpec still names it, the
// JobManager stays the same). Newest pinned Flink only.
func TestRollbackToStableSpec(t *testing.T) {
	if framework.Kind() {
		t.Skip("local provider only, as TestFlinkDeploymentLifecycle")
	}
	begin := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	versions := flinkjvm.Versions()
	version := versions[len(versions)-1]
	s := &suite{Env: framework.Setup(t, ctx, framework.Options{Name: "rollbacke2e"})}
	r := s.newRun(t, version, "rollback")
	fl := flavours[version]
	data := filepath.Join(r.Base, r.ns)
	if err := os.MkdirAll(data, 0o755); err != nil {
		t.Fatal(err)
	}
	stable := deploymentYAML(r.ns, fl.image, fl.version, data, 1, v1beta1.JobStateRunning)
	stable = replaceOnce(t, stable, "    execution.checkpointing.interval: 2 s\n", "    execution.checkpointing.interval: 2 s\n"+
		"    kubernetes.operator.deployment.rollback.enabled: \"true\"\n"+
		"    kubernetes.operator.deployment.readiness.timeout: 30 s\n")
	const missing = "org.flinkops.e2e.NoSuchJob"
	broken := replaceOnce(t, stable, "entryClass: "+flinkjvm.TestJobClass, "entryClass: "+missing)

	t0 := time.Now()
	r.apply(stable)
	dep := r.waitDeployment(3*time.Minute, "job RUNNING, STABLE", func(d *v1beta1.FlinkDeployment) bool {
		return d.Status.JobStatus.State == v1beta1.JobStatusRunning && d.Status.LifecycleState == v1beta1.LifecycleStable
	})
	r.record("apply → RUNNING/STABLE", time.Since(t0))
	oldJob := dep.Status.JobStatus.JobID
	acc := r.waitJobRunning(oldJob).WaitAccumulators(t, oldJob, "records >= 20", func(a framework.Accumulators) bool { return a.Records >= 20 })
	before := acc.MaxCount
	t.Logf("stable job %s: %+v", oldJob, acc)

	t0 = time.Now()
	r.apply(broken)
	dep = r.waitDeployment(2*time.Minute, "the broken spec deployed", func(d *v1beta1.FlinkDeployment) bool {
		return d.Status.ReconciliationStatus.State == v1beta1.ReconciliationDeployed && recordedEntryClass(t, d) == missing
	})
	deployed := time.Now()
	r.record("apply (missing entry class) → deployed", time.Since(t0))
	savepoint := dep.Status.JobStatus.UpgradeSavepointPath
	if savepoint == "" {
		t.Fatalf("broken spec deployed without an upgrade savepoint: %s", summary(dep))
	}
	msg := r.waitEvent(90*time.Second, corev1.EventTypeNormal, "Rollback", "Rolling back failed deployment", 1)
	if since := time.Since(deployed); since < 25*time.Second {
		t.Errorf("rolled back %s after the broken spec was deployed, before the 30 s readiness timeout", since.Round(time.Second))
	}
	r.record("broken spec deployed → Rollback event", time.Since(deployed))
	t.Logf("event: %s", msg)
	dep = r.waitDeployment(3*time.Minute, "ROLLED_BACK, job RUNNING", func(d *v1beta1.FlinkDeployment) bool {
		return d.Status.ReconciliationStatus.State == v1beta1.ReconciliationRolledBack &&
			d.Status.LifecycleState == v1beta1.LifecycleRolledBack && d.Status.JobStatus.State == v1beta1.JobStatusRunning
	})
	r.record("apply (missing entry class) → ROLLED_BACK/RUNNING", time.Since(t0))
	msg = r.waitEvent(10*time.Second, corev1.EventTypeNormal, "Rollback", "Rolled back to the last stable spec", 1)
	t.Logf("event: %s", msg)

	// The stable spec runs again from the upgrade savepoint, counter kept.
	jobID := dep.Status.JobStatus.JobID
	if p := dep.Status.JobStatus.UpgradeSavepointPath; p != savepoint {
		t.Errorf("rolled back from %q, want the upgrade savepoint %s", p, savepoint)
	}
	if snaps := r.upgradeSnapshots(); len(snaps) != 1 || snaps[0].Spec.Savepoint == nil || snaps[0].Spec.Savepoint.Path != savepoint {
		t.Errorf("UPGRADE snapshots %v, want one of %s", snapshotNames(snaps), savepoint)
	}
	rest := r.waitJobRunning(jobID)
	r.checkRestored(rest, jobID, savepoint)
	acc = r.checkCounterContinued(rest, jobID, before)
	t.Logf("rolled-back job %s: %+v (max-count before the upgrade %d)", jobID, acc, before)
	if c := recordedEntryClass(t, dep); c != missing {
		t.Errorf("lastReconciledSpec names entry class %s, want the failed spec's %s (as upstream)", c, missing)
	}

	// Not retried: the same JobManager, still ROLLED_BACK, a while later.
	jm := r.jobManagerUID()
	time.Sleep(15 * time.Second)
	got, err := r.Flink.FlinkV1beta1().FlinkDeployments(r.ns).Get(r.Ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Status.ReconciliationStatus.State != v1beta1.ReconciliationRolledBack || r.jobManagerUID() != jm || got.Status.JobStatus.JobID != jobID {
		t.Errorf("the failed spec was retried: %s", summary(got))
	}
	r.logKubectl("get", "flinkdeployment", "-n", r.ns)
	t.Logf("TestRollbackToStableSpec: %s in all", time.Since(begin).Round(time.Second))
}

// recordedEntryClass is the entry class of lastReconciledSpec.
func recordedEntryClass(t *testing.T, d *v1beta1.FlinkDeployment) string {
	t.Helper()
	rec, err := lifecycle.Decode[v1beta1.FlinkDeploymentSpec](d.Status.ReconciliationStatus.LastReconciledSpec)
	if err != nil {
		t.Fatal(err)
	}
	if rec == nil || rec.Spec.Job == nil {
		return ""
	}
	return strings.TrimSpace(rec.Spec.Job.EntryClass)
}
