package nativee2e

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/flinkops/flink-operator/e2e/framework"
	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
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
func (r *run) autoscalerInPlace() {
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
	t0 := time.Now()
	writeLoad(60, 25)
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
	for _, reason := range []string{reasons.ReasonScalingReport, reasons.ReasonSpecChanged, reasons.ReasonScaling} {
		r.waitEvent(name, reason)
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
