package nativee2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/flinkops/flink-operator/e2e/framework"
	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/autoscaler/store"
	"github.com/flinkops/flink-operator/pkg/reasons"
)

// The test job's vertices with --load-file (e2e/flink/README.md): the
// source (parallelism 1, excluded) and the load stage the autoscaler
// scales.
const (
	sourceVertex = "e5a72f353fc1e6bbf3bd96a41384998c"
	loadVertex   = "66250f48866f30912ce75923ebd1ef85"
)

// autoscalerInPlace (both lines): the job autoscaler on real Flink. The
// test job runs with its load stage (--load-file) on the adaptive
// scheduler, job.autoscaler.enabled with a one-minute metrics window; its
// load is raised while it runs (the stage's per-record cost: busy time,
// no CPU), and the autoscaler raises the stage's parallelism in place
// (ScalingReport, SpecChanged and Scaling events; the same job id; Flink
// runs the new parallelism); the load is lowered and, after
// scale-down.interval, the parallelism comes down again, in place. The
// keyed counter goes on with no mismatch through both rescales (the
// adaptive scheduler restores from the latest checkpoint), and the job is
// never stopped with a savepoint.
//
// With crash (one line: the crash point is the operator's, not Flink's),
// the operator that makes the scale-up decision is the fault-injection
// build killed (SIGKILL) right after recording it in the autoscaler
// ConfigMap: the decision is there, Flink still runs the old parallelism,
// and the next operator applies it exactly once (one scaling in the
// ConfigMap's history, one Scaling event, one rescale of the same job).
func (r *run) autoscalerInPlace(crash bool) {
	t := r.t
	const name = "autoscaled"
	loadFile := filepath.Join(r.data, "load")
	writeLoad := func(rate, costMs int) {
		t.Helper()
		tmp := loadFile + ".tmp"
		if err := os.WriteFile(tmp, fmt.Appendf(nil, "rate=%d\ncost-ms=%d\n", rate, costMs), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, loadFile); err != nil {
			t.Fatal(err)
		}
	}
	// Low: 20 records/s at 5 ms is 10 % busy at parallelism 1. High: 60
	// records/s at 25 ms needs 1.5 subtasks at full load, 3 at the target
	// utilization (0.5). Each subtask's capacity is 1000/cost-ms records/s.
	writeLoad(20, 5)
	r.apply(r.testJobYAML(name, 2, fmt.Sprintf(`    state.backend.type: hashmap
    execution.checkpointing.interval: 2 s
    execution.checkpointing.dir: file://%[1]s/checkpoints
    execution.checkpointing.savepoint-dir: file://%[1]s/savepoints
    metrics.fetcher.update-interval: "1000"
    jobmanager.scheduler: adaptive
    jobmanager.adaptive-scheduler.executing.cooldown-after-rescaling: 1 s
    jobmanager.adaptive-scheduler.executing.resource-stabilization-timeout: 1 s
    jobmanager.adaptive-scheduler.scaling-interval.min: 1 s
    job.autoscaler.enabled: "true"
    job.autoscaler.metrics.window: 1 min
    job.autoscaler.stabilization.interval: 10 s
    job.autoscaler.utilization.target: "0.5"
    job.autoscaler.utilization.min: "0.2"
    job.autoscaler.utilization.max: "0.8"
    job.autoscaler.scale-down.interval: 1 min
    job.autoscaler.vertex.exclude.ids: %[2]s
`, r.data, sourceVertex), fmt.Sprintf(`    args: ["--rate", "20", "--keys", "100", "--load-file", "%s"]
    parallelism: 1
    upgradeMode: savepoint
    state: running
`, loadFile)))
	dep := r.waitDeployment(name, 4*time.Minute, "RUNNING, STABLE", func(d *v1beta1.FlinkDeployment) bool {
		return d.Status.JobStatus.State == v1beta1.JobStatusRunning && d.Status.LifecycleState == v1beta1.LifecycleStable
	})
	jobID := dep.Status.JobStatus.JobID
	rest := r.FlinkREST(t, r.ns, name)
	loadParallelism := func() (int, string) {
		var job struct {
			State    string `json:"state"`
			Vertices []struct {
				ID          string `json:"id"`
				Parallelism int    `json:"parallelism"`
				Status      string `json:"status"`
			} `json:"vertices"`
		}
		if err := rest.Get(r.Ctx, "/jobs/"+jobID, &job); err != nil {
			return 0, err.Error()
		}
		for _, v := range job.Vertices {
			if v.ID == loadVertex && v.Status == "RUNNING" && job.State == "RUNNING" {
				return v.Parallelism, ""
			}
		}
		return 0, fmt.Sprintf("job %s %+v", job.State, job.Vertices)
	}
	before := rest.WaitAccumulators(t, jobID, "records >= 20", func(a framework.Accumulators) bool { return a.Records >= 20 })

	// Load raised: scaled up in place.
	if crash {
		r.RestartOperatorWithFault(t, framework.FaultExitAfterAutoscalerDecision)
	}
	t0 := time.Now()
	writeLoad(60, 25)
	if crash {
		r.decisionRecordedThenKilled(name, jobID, loadParallelism)
	}
	var up int
	r.WaitFor(t, 5*time.Minute, "the load stage scaled up in place", func() (bool, string) {
		p, why := loadParallelism()
		up = p
		return p > 1, fmt.Sprintf("load parallelism %d %s", p, why)
	})
	d := r.getDeployment(name)
	if d.Status.JobStatus.JobID != jobID {
		t.Fatalf("scaled up as a new job %s (was %s): %s", d.Status.JobStatus.JobID, jobID, summary(d))
	}
	upReasons := []string{reasons.ReasonScalingReport, reasons.ReasonSpecChanged, reasons.ReasonScaling}
	if crash {
		// The killed operator's ScalingReport was to be emitted with its
		// status write: events are not state, the next operator has no
		// report of a decision it did not make (the scale-down gives one).
		upReasons = upReasons[1:]
	}
	for _, reason := range upReasons {
		r.waitEvent(name, reason)
	}
	if crash {
		if s := r.autoscalerStored(name); len(s.State.Scalings) != 1 || s.State.Overrides[loadVertex] != up {
			t.Errorf("after the crash: %d scalings recorded (want the one decision), overrides %v (want the load stage at %d)", len(s.State.Scalings), s.State.Overrides, up)
		}
		if n := r.countEvents(name, reasons.ReasonScaling); n != 1 {
			t.Errorf("%d Scaling events after the crash, want the decision applied once", n)
		}
	}
	t.Logf("%s: %s: load raised, the load stage scaled 1→%d in place (job %s kept) %s after the write", r.version, name, up, jobID, time.Since(t0).Round(time.Second))
	mid := rest.WaitAccumulators(t, jobID, "counting at the new parallelism", func(a framework.Accumulators) bool { return a.MaxCount > before.MaxCount })
	if mid.Mismatches != 0 {
		t.Errorf("keyed state lost in the scale-up: %+v, before %+v", mid, before)
	}

	// Load lowered: scaled down in place, after scale-down.interval.
	t0 = time.Now()
	writeLoad(20, 5)
	var down int
	r.WaitFor(t, 6*time.Minute, "the load stage scaled down in place", func() (bool, string) {
		p, why := loadParallelism()
		down = p
		return p > 0 && p < up, fmt.Sprintf("load parallelism %d (up %d) %s", p, up, why)
	})
	if d := r.getDeployment(name); d.Status.JobStatus.JobID != jobID || d.Status.Error != "" {
		t.Fatalf("after the scale-down: %s, error %q; want job %s kept", summary(d), d.Status.Error, jobID)
	}
	t.Logf("%s: %s: load lowered, the load stage scaled %d→%d in place %s after the write", r.version, name, up, down, time.Since(t0).Round(time.Second))
	after := rest.WaitAccumulators(t, jobID, "counting on", func(a framework.Accumulators) bool { return a.MaxCount > mid.MaxCount })
	if after.Mismatches != 0 {
		t.Errorf("keyed state lost in the scale-down: %+v", after)
	}
	if n := r.countEvents(name, reasons.ReasonScaling); n < 2 {
		t.Errorf("%d Scaling events, want one per rescale", n)
	}
	if crash {
		r.waitEvent(name, reasons.ReasonScalingReport)
	}
	l, err := r.Flink.FlinkV1beta1().FlinkStateSnapshots(r.ns).List(r.Ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range l.Items {
		if s.Spec.JobReference != nil && s.Spec.JobReference.Name == name {
			t.Errorf("snapshot %s of the autoscaled job: a rescale stopped it", s.Name)
		}
	}
	r.kubectl("delete", "flinkdeployment", name, "-n", r.ns, "--wait=false")
	r.waitGone(name, 2*time.Minute)
}

// decisionRecordedThenKilled waits for the fault-injection operator to kill
// itself at the autoscaler's fault point and checks what it left: the
// scale-up recorded in the ConfigMap, the job still at parallelism 1 and
// the deployment's reconciled spec without the new override. Then the
// ordinary operator starts again.
func (r *run) decisionRecordedThenKilled(name, jobID string, loadParallelism func() (int, string)) {
	t := r.t
	t.Helper()
	select {
	case <-r.Op.Done():
	case <-time.After(5 * time.Minute):
		t.Fatalf("the operator was not killed at its autoscaler fault point within 5 min")
	case <-r.Ctx.Done():
		t.Fatal(r.Ctx.Err())
	}
	if sig := r.Op.Signaled(); sig != syscall.SIGKILL {
		t.Fatalf("the fault-injection operator ended by %v, want SIGKILL at the fault point", sig)
	}
	log, err := os.ReadFile(r.OpLog)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(log), framework.FaultPointLog+" after recording the autoscaler decision") {
		t.Fatalf("the operator log has no autoscaler fault-point line")
	}
	s := r.autoscalerStored(name)
	if len(s.State.Scalings) != 1 || s.State.Overrides[loadVertex] < 2 {
		t.Fatalf("at the crash the ConfigMap holds %d scalings, overrides %v; want the scale-up recorded", len(s.State.Scalings), s.State.Overrides)
	}
	if p, why := loadParallelism(); p != 1 {
		t.Fatalf("at the crash Flink runs the load stage at %d (%s); want 1: the decision is recorded, not applied", p, why)
	}
	if d := r.getDeployment(name); d.Status.JobStatus.JobID != jobID || strings.Contains(d.Status.ReconciliationStatus.LastReconciledSpec, loadVertex) {
		t.Fatalf("at the crash: %s, reconciled spec %s; want the job as it was", summary(d), d.Status.ReconciliationStatus.LastReconciledSpec)
	}
	t.Logf("%s: %s: operator killed after recording the scale-up to %d; starting it again", r.version, name, s.State.Overrides[loadVertex])
	r.RestartOperator(t)
}

// autoscalerStored is what the autoscaler ConfigMap of name holds.
func (r *run) autoscalerStored(name string) store.Stored {
	r.t.Helper()
	cm, err := r.Kube.CoreV1().ConfigMaps(r.ns).Get(r.Ctx, store.Name(name), metav1.GetOptions{})
	if err != nil {
		r.t.Fatal(err)
	}
	s, err := store.Decode(cm)
	if err != nil {
		r.t.Fatal(err)
	}
	return s
}

// waitEvent waits for an event of reason about object name.
func (r *run) waitEvent(name, reason string) {
	r.t.Helper()
	r.WaitFor(r.t, time.Minute, "a "+reason+" event of "+name, func() (bool, string) {
		n := r.countEvents(name, reason)
		return n > 0, fmt.Sprintf("%d", n)
	})
}

// countEvents counts the events of reason about object name.
func (r *run) countEvents(name, reason string) int {
	r.t.Helper()
	l, err := r.Kube.CoreV1().Events(r.ns).List(r.Ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + name})
	if err != nil {
		r.t.Fatal(err)
	}
	n := 0
	for _, ev := range l.Items {
		if ev.Reason == reason && ev.Type == corev1.EventTypeNormal {
			n += max(1, int(ev.Count))
		}
	}
	return n
}
