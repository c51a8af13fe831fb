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

// TestInPlaceRescale is issue 18's acceptance of
// kubernetes.operator.job.upgrade.inplace-scaling.enabled (default on) on
// real Flink: the test job runs on the adaptive scheduler (one TaskManager,
// two slots, parallelism 1); setting pipeline.jobvertex-parallelism-overrides
// for its counter vertex to 2 and then back to 1 rescales that vertex in
// Flink (GET /jobs/:id shows it) under the same job id, the same JobManager
// and TaskManager pods, without a stop-with-savepoint (no UPGRADE snapshot),
// the keyed counter going on; each change is recorded as deployed with a
// Scaling event. Newest pinned Flink only.
func TestInPlaceRescale(t *testing.T) {
	if framework.Kind() {
		t.Skip("local provider only, as TestFlinkDeploymentLifecycle")
	}
	begin := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	versions := flinkjvm.Versions()
	version := versions[len(versions)-1]
	s := &suite{Env: framework.Setup(t, ctx, framework.Options{Name: "inplacee2e"})}
	r := s.newRun(t, version, "inplace")
	fl := flavours[version]
	data := filepath.Join(r.Base, r.ns)
	if err := os.MkdirAll(data, 0o755); err != nil {
		t.Fatal(err)
	}
	// The adaptive scheduler rescales right after a change of the
	// requirements: no cooldown after the last rescale (Flink 2's name and
	// 1.20's).
	base := replaceOnce(t, deploymentYAML(r.ns, fl.image, fl.version, data, 1, v1beta1.JobStateRunning),
		"    execution.checkpointing.interval: 2 s\n", "    execution.checkpointing.interval: 2 s\n"+
			"    jobmanager.scheduler: adaptive\n"+
			"    jobmanager.adaptive-scheduler.executing.cooldown-after-rescaling: 1 s\n"+
			"    jobmanager.adaptive-scheduler.executing.resource-stabilization-timeout: 1 s\n"+
			"    jobmanager.adaptive-scheduler.scaling-interval.min: 1 s\n")
	withOverride := func(vertex string, n int) string {
		return replaceOnce(t, base, "    jobmanager.scheduler: adaptive\n",
			fmt.Sprintf("    jobmanager.scheduler: adaptive\n    pipeline.jobvertex-parallelism-overrides: \"%s:%d\"\n", vertex, n))
	}

	t0 := time.Now()
	r.apply(base)
	dep := r.waitDeployment(3*time.Minute, "job RUNNING, STABLE", func(d *v1beta1.FlinkDeployment) bool {
		return d.Status.JobStatus.State == v1beta1.JobStatusRunning && d.Status.LifecycleState == v1beta1.LifecycleStable
	})
	r.record("apply → RUNNING/STABLE", time.Since(t0))
	jobID := dep.Status.JobStatus.JobID
	rest := r.waitJobRunning(jobID)
	counter := r.vertex(rest, jobID, "counter")
	if counter.Parallelism != 1 {
		t.Fatalf("counter vertex %+v, want parallelism 1", counter)
	}
	jmUID, tmPods := r.jobManagerUID(), r.componentPods(cluster.ComponentTaskManager)
	acc := rest.WaitAccumulators(t, jobID, "records >= 20", func(a framework.Accumulators) bool { return a.Records >= 20 })
	t.Logf("job %s before the rescale: %+v; counter vertex %s", jobID, acc, counter.ID)

	for i, want := range []int{2, 1} {
		gen := dep.Generation
		t0 = time.Now()
		r.apply(withOverride(counter.ID, want))
		dep = r.waitDeployment(time.Minute, "the override recorded as deployed", func(d *v1beta1.FlinkDeployment) bool {
			return d.Status.ObservedGeneration > gen && d.Status.ReconciliationStatus.State == v1beta1.ReconciliationDeployed &&
				strings.Contains(d.Status.ReconciliationStatus.LastReconciledSpec, fmt.Sprintf("%s:%d", counter.ID, want))
		})
		r.record(fmt.Sprintf("override %d → recorded", want), time.Since(t0))
		if dep.Status.JobStatus.JobID != jobID {
			t.Fatalf("rescale to %d: new job %s, want %s kept: %s", want, dep.Status.JobStatus.JobID, jobID, summary(dep))
		}
		r.WaitFor(t, time.Minute, fmt.Sprintf("counter vertex parallelism %d, job RUNNING", want), func() (bool, string) {
			v, state, err := r.vertexNow(rest, jobID, "counter")
			if err != nil {
				return false, err.Error()
			}
			return v.Parallelism == want && v.Status == "RUNNING" && state == "RUNNING", fmt.Sprintf("job %s, vertex %+v", state, v)
		})
		r.record(fmt.Sprintf("override %d → Flink runs it", want), time.Since(t0))
		if n := r.scalingEvents(); n != i+1 {
			t.Errorf("%d Scaling events after rescale %d", n, i+1)
		}
	}

	// The same job, JobManager and TaskManagers; no stop, no savepoint; the
	// keyed counter went on (the adaptive scheduler restores the rescaled
	// job from its latest checkpoint).
	if uid := r.jobManagerUID(); uid != jmUID {
		t.Errorf("JobManager Deployment recreated: %s -> %s", jmUID, uid)
	}
	if now := r.componentPods(cluster.ComponentTaskManager); strings.Join(now, ",") != strings.Join(tmPods, ",") {
		t.Errorf("TaskManager pods changed: %v -> %v", tmPods, now)
	}
	if snaps := r.upgradeSnapshots(); len(snaps) != 0 {
		t.Errorf("UPGRADE snapshots %v, want none", snapshotNames(snaps))
	}
	after := rest.WaitAccumulators(t, jobID, "counting on", func(a framework.Accumulators) bool { return a.Records > acc.Records })
	if after.Mismatches != 0 || after.MaxCount < acc.MaxCount {
		t.Errorf("keyed state lost in the rescale: %+v, before %+v", after, acc)
	}
	if got, err := r.Flink.FlinkV1beta1().FlinkDeployments(r.ns).Get(r.Ctx, name, metav1.GetOptions{}); err != nil || got.Status.JobStatus.JobID != jobID {
		t.Errorf("after the rescales: %v %v", err, got)
	}
	r.logKubectl("get", "flinkdeployment", "-n", r.ns)
	t.Logf("TestInPlaceRescale: %s in all", time.Since(begin).Round(time.Second))
}

type jobVertex struct {
	ID          string `json:"id"`
	Name        string `json:"name"`
	Status      string `json:"status"`
	Parallelism int    `json:"parallelism"`
}

// vertexNow is the job's vertex whose name contains part, and the job's
// state, as Flink reports them.
func (r *run) vertexNow(rest *framework.Flink, jobID, part string) (jobVertex, string, error) {
	var job struct {
		State    string      `json:"state"`
		Vertices []jobVertex `json:"vertices"`
	}
	if err := rest.Get(r.Ctx, "/jobs/"+jobID, &job); err != nil {
		return jobVertex{}, "", err
	}
	for _, v := range job.Vertices {
		if strings.Contains(v.Name, part) {
			return v, job.State, nil
		}
	}
	return jobVertex{}, job.State, fmt.Errorf("no vertex %q in %+v", part, job.Vertices)
}

func (r *run) vertex(rest *framework.Flink, jobID, part string) jobVertex {
	r.t.Helper()
	v, _, err := r.vertexNow(rest, jobID, part)
	if err != nil {
		r.t.Fatal(err)
	}
	return v
}

// scalingEvents counts the Normal Scaling events of the FlinkDeployment.
func (r *run) scalingEvents() int {
	r.t.Helper()
	evs, err := r.Kube.CoreV1().Events(r.ns).List(r.Ctx, metav1.ListOptions{FieldSelector: "involvedObject.kind=FlinkDeployment,involvedObject.name=" + name})
	if err != nil {
		r.t.Fatal(err)
	}
	n := 0
	for _, e := range evs.Items {
		if e.Type == corev1.EventTypeNormal && e.Reason == "Scaling" {
			n += int(max(e.Count, 1))
		}
	}
	return n
}
