package deploymente2e

import (
	"context"
	"fmt"
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
	"github.com/flinkops/flink-operator/pkg/cluster"
)

// TestHealthRestarts is issue 18 item 2's acceptance test on real Flink,
// with the test job failing after N records in every attempt
// (--fail-after), in one cluster (newest pinned Flink only):
//
//   - restart-failed: no restart strategy, so each attempt ends FAILED; with
//     kubernetes.operator.job.restart.failed the operator redeploys the job,
//     with the same spec, from its latest checkpoint (a Submit event says
//     so), twice in a row;
//   - health-check: Flink restarts the job itself every few seconds; with
//     the health check on (more than 2 restarts in 2 min is unhealthy) the
//     operator reads numRestarts from Flink's metrics, finds the job
//     unhealthy and restarts it (RestartUnhealthyJob) from its latest
//     checkpoint.
//
// Each time the new JobManager's job restored from the checkpoint the
// status records (Flink's latest.restored) and the keyed counter continued
// from it: it never goes back. The operator looks at running jobs every 5 s
// (reconcile.interval) instead of every minute, and at starting ones every
// 2 s (observer.progress-check.interval), to keep the test short.
func TestHealthRestarts(t *testing.T) {
	if framework.Kind() {
		t.Skip("local provider only, as TestFlinkDeploymentLifecycle")
	}
	begin := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	versions := flinkjvm.Versions()
	version := versions[len(versions)-1]
	opConfig := filepath.Join(t.TempDir(), "operator.yaml")
	if err := os.WriteFile(opConfig, []byte("kubernetes.operator.reconcile.interval: 5 s\nkubernetes.operator.observer.progress-check.interval: 2 s\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s := &suite{Env: framework.Setup(t, ctx, framework.Options{Name: "healthe2e", OperatorArgs: []string{"--config=" + opConfig}})}
	t.Run("restart-failed", func(t *testing.T) {
		s.newRun(t, version, "restart-failed").restarts(150, 2, false, corev1.EventTypeNormal, "Submit", "FAILED; restarting it from ",
			"restart-strategy.type: none",
			`kubernetes.operator.job.restart.failed: "true"`)
	})
	t.Run("health-check", func(t *testing.T) {
		s.newRun(t, version, "health-check").restarts(50, 1, true, corev1.EventTypeWarning, "RestartUnhealthyJob", "Restart count hit threshold: 2",
			"restart-strategy.type: fixed-delay",
			`restart-strategy.fixed-delay.attempts: "1000"`,
			"restart-strategy.fixed-delay.delay: 1 s",
			`kubernetes.operator.cluster.health-check.enabled: "true"`,
			`kubernetes.operator.cluster.health-check.restarts.threshold: "2"`)
	})
	var table strings.Builder
	for _, tm := range s.timings {
		fmt.Fprintf(&table, "\n  %-7s %-52s %s", tm.version, tm.what, tm.d.Round(100*time.Millisecond))
	}
	t.Logf("measured durations:%s", table.String())
	t.Logf("TestHealthRestarts: %s in all", time.Since(begin).Round(time.Second))
}

// restarts runs the test job (last-state) failing after failAfter records
// per attempt, with conf added to its flinkConfiguration (flinkRestarts:
// a restart strategy restarts it in Flink too), and checks rounds restarts
// by the operator, each announced by an event (type, reason, a
// message containing part): the job runs again on a new JobManager,
// restored from the latest checkpoint, with its counter continued.
func (r *run) restarts(failAfter, rounds int, flinkRestarts bool, typ, reason, part string, conf ...string) {
	t := r.t
	fl := flavours[r.version]
	data := filepath.Join(r.Base, r.ns)
	if err := os.MkdirAll(data, 0o755); err != nil {
		t.Fatal(err)
	}
	manifest := deploymentYAML(r.ns, fl.image, fl.version, data, 1, v1beta1.JobStateRunning)
	manifest = replaceOnce(t, manifest, "upgradeMode: savepoint", "upgradeMode: last-state")
	manifest = replaceOnce(t, manifest, `args: ["--rate", "10", "--keys", "10"]`,
		fmt.Sprintf(`args: ["--rate", "10", "--keys", "10", "--fail-after", "%d"]`, failAfter))
	extra := "    execution.checkpointing.interval: 1 s\n"
	for _, c := range conf {
		extra += "    " + c + "\n"
	}
	manifest = replaceOnce(t, manifest, "    execution.checkpointing.interval: 2 s\n", extra)

	t0 := time.Now()
	r.apply(manifest)
	dep := r.waitDeployment(3*time.Minute, "job RUNNING", func(d *v1beta1.FlinkDeployment) bool {
		return d.Status.JobStatus.State == v1beta1.JobStatusRunning
	})
	r.record(r.ns+": apply → RUNNING", time.Since(t0))
	jobID := dep.Status.JobStatus.JobID
	acc := r.waitJobRunning(jobID).WaitAccumulators(t, jobID, "records >= 5", func(a framework.Accumulators) bool { return a.Records >= 5 })
	before := acc.MaxCount
	t.Logf("first attempt: %+v", acc)

	for i := 1; i <= rounds; i++ {
		jm := r.jobManagerUID()
		t0 = time.Now()
		msg := r.waitEvent(90*time.Second, typ, reason, part, i)
		r.record(fmt.Sprintf("%s: restart %d: event", r.ns, i), time.Since(t0))
		t.Logf("event: %s %s: %s", typ, reason, msg)
		// Not waitDeployment: the restarted spec is the stable one, so the
		// lifecycle is STABLE while the new job starts (as upstream's).
		r.WaitFor(t, 2*time.Minute, "the job RUNNING again on a new JobManager", func() (bool, string) {
			d, err := r.Flink.FlinkV1beta1().FlinkDeployments(r.ns).Get(r.Ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			dep = d
			return d.Status.JobStatus.State == v1beta1.JobStatusRunning && r.jobManagerUID() != jm, summary(d)
		})
		r.record(fmt.Sprintf("%s: restart %d: event → RUNNING", r.ns, i), time.Since(t0))
		path := dep.Status.JobStatus.UpgradeSavepointPath
		// The newest event is of this restart (unless the job failed again
		// meanwhile); a restart of a FAILED job names the checkpoint.
		msg = r.waitEvent(time.Second, typ, reason, part, i)
		if !strings.Contains(path, "/chk-") || (strings.Contains(msg, "restarting it from") && !strings.Contains(msg, path)) {
			t.Fatalf("restart %d: restored from %q (event %q), want the latest checkpoint", i, path, msg)
		}
		rest := r.waitJobRunning(dep.Status.JobStatus.JobID)
		// Flink reports a checkpoint restored through
		// execution.savepoint.path as a savepoint (is_savepoint true). A
		// job that Flink restarts itself shows its own later restores.
		restored := rest.WaitRestored(t, dep.Status.JobStatus.JobID)
		if !framework.SameLocation(t, restored.ExternalPath, path) && (!flinkRestarts || checkpointID(t, restored.ExternalPath) < checkpointID(t, path) ||
			!framework.SameLocation(t, filepath.Dir(restored.ExternalPath), filepath.Dir(path))) {
			t.Fatalf("restart %d: latest.restored = %+v, want the checkpoint %s", i, restored, path)
		}
		acc = r.checkCounterContinued(rest, dep.Status.JobStatus.JobID, before)
		t.Logf("restart %d: restored from %s, accumulators %+v", i, path, acc)
		before = acc.MaxCount
	}
	r.logKubectl("get", "flinkdeployment", "-n", r.ns)
}

// checkpointID is N of a .../chk-N path.
func checkpointID(t *testing.T, path string) int {
	t.Helper()
	var n int
	if _, err := fmt.Sscanf(filepath.Base(path), "chk-%d", &n); err != nil {
		t.Fatalf("not a checkpoint path: %s", path)
	}
	return n
}

// jobManagerUID is the JobManager Deployment's UID ("" when absent).
func (r *run) jobManagerUID() string { return r.deploymentUID(cluster.JobManagerDeploymentName(name)) }

// deploymentUID is the UID of the Deployment dep ("" when absent): a
// recreated Deployment has a new one.
func (r *run) deploymentUID(dep string) string {
	d, err := r.Kube.AppsV1().Deployments(r.ns).Get(r.Ctx, dep, metav1.GetOptions{})
	if err != nil {
		return ""
	}
	return string(d.UID)
}

// waitEvent waits for the n-th event of the FlinkDeployment with type,
// reason and a message containing part (events of the same message are
// counted by their count), and returns the newest one's message.
func (r *run) waitEvent(timeout time.Duration, typ, reason, part string, n int) string {
	r.t.Helper()
	msg := ""
	r.WaitFor(r.t, timeout, fmt.Sprintf("event %d: %s %s %q", n, typ, reason, part), func() (bool, string) {
		evs, err := r.Kube.CoreV1().Events(r.ns).List(r.Ctx, metav1.ListOptions{FieldSelector: "involvedObject.kind=FlinkDeployment,involvedObject.name=" + name})
		if err != nil {
			return false, err.Error()
		}
		var seen []string
		count := 0
		var newest time.Time
		for _, e := range evs.Items {
			seen = append(seen, fmt.Sprintf("%s %s ×%d: %s", e.Type, e.Reason, max(e.Count, 1), e.Message))
			if e.Type == typ && e.Reason == reason && strings.Contains(e.Message, part) {
				count += int(max(e.Count, 1))
				if at := e.LastTimestamp.Time; msg == "" || at.After(newest) {
					msg, newest = e.Message, at
				}
			}
		}
		return count >= n, strings.Join(seen, "; ")
	})
	return msg
}
