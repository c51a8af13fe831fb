package deployment

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/cluster"
	"github.com/flinkops/flink-operator/pkg/controller/controllertest"
	"github.com/flinkops/flink-operator/pkg/controller/jobengine"
	"github.com/flinkops/flink-operator/pkg/flink"
	"github.com/flinkops/flink-operator/pkg/flink/fakejm"
)

// savepointUpgrade runs a savepoint upgrade and crashes the operator at the
// crashAt-th fault point after the spec change (-1: never). pause is how
// long the operator stays down. It checks that the job comes back from the
// savepoint its stop took, after exactly one stop-with-savepoint, and
// returns the fault points the upgrade passed.
func savepointUpgrade(t *testing.T, crashAt int, pause time.Duration) []string {
	f := newFixture(t)
	before := f.Deploy(f.application("job", v1beta1.UpgradeModeSavepoint))
	oldJob := before.Status.JobStatus.JobID
	older := f.checkpoint("job") // state the new job must not start from

	var points []string
	f.Fault = func(_, point string) {
		points = append(points, point)
		if len(points)-1 == crashAt {
			f.Clock.Step(pause)
			panic(controllertest.Crash{})
		}
	}
	f.edit("job", newArgs)
	crashes := 0
	var after *v1beta1.FlinkDeployment
	for range 60 {
		if f.StepCrashing("job") {
			crashes++
		}
		if d := f.Get("job"); upgradedTo(2)(d) {
			after = d
			break
		}
	}
	if after == nil {
		t.Fatalf("upgrade did not finish: %s", statusString(f.Get("job")))
	}
	if crashAt >= 0 && crashes != 1 {
		t.Fatalf("%d crashes, want 1", crashes)
	}
	path := after.Status.JobStatus.UpgradeSavepointPath
	restored, meta := f.restoredFrom("job")
	switch {
	case restored == "":
		t.Errorf("new job started from empty state")
	case restored == older:
		t.Errorf("new job started from the older checkpoint %s", older)
	case restored != path || !meta.Savepoint || meta.JobID != oldJob:
		t.Errorf("new job restored from %q (%+v), want the stop savepoint %s of job %s", restored, meta, path, oldJob)
	}
	if after.Status.JobStatus.JobID == oldJob {
		t.Errorf("savepoint upgrade kept the job id")
	}
	if n := f.stops(); n != 1 {
		t.Errorf("%d stop-with-savepoint operations started, want 1", n)
	}
	var upgrades int
	for _, s := range f.Snapshots() {
		if s.Labels[v1beta1.LabelSnapshotTriggerType] == "UPGRADE" {
			upgrades++
			if s.Spec.Savepoint.Path != path {
				t.Errorf("UPGRADE snapshot %s has path %s, want %s", s.Name, s.Spec.Savepoint.Path, path)
			}
		}
	}
	if upgrades != 1 {
		t.Errorf("%d UPGRADE snapshots, want 1", upgrades)
	}
	return points
}

// TestSavepointUpgradeSurvivesCrashAtEveryStep kills the operator at each
// point of a savepoint upgrade where its memory and the API state part ways
// (after the intent, after the POST, after the snapshot record, after each
// status write, after the teardown, after the deploy), once right away and
// once after a pause long enough for Flink to forget the trigger's result.
func TestSavepointUpgradeSurvivesCrashAtEveryStep(t *testing.T) {
	points := savepointUpgrade(t, -1, 0)
	t.Logf("fault points of a savepoint upgrade: %s", strings.Join(points, ", "))
	if len(points) < 5 {
		t.Fatalf("only %d fault points: %v", len(points), points)
	}
	for _, pause := range []time.Duration{0, 6 * time.Minute} {
		for i, p := range points {
			t.Run(fmt.Sprintf("pause %s crash %d at %s", pause, i, p), func(t *testing.T) {
				savepointUpgrade(t, i, pause)
			})
		}
	}
}

// TestStopSurvivesJobManagerRestart: the JobManager restarts while the stop
// is in flight, forgetting it; the job recovers and the same trigger id is
// sent again.
func TestStopSurvivesJobManagerRestart(t *testing.T) {
	f := newFixture(t)
	before := f.Deploy(f.application("job", v1beta1.UpgradeModeSavepoint))
	jm := f.jm("job")
	jm.SetCompletion(1000, 0) // the stop never completes on its own
	f.edit("job", newArgs)
	f.Step("job")
	trigger := f.Get("job").Status.JobStatus.SavepointInfo.TriggerID
	jm.Restart()
	jm.SetCompletion(1, 0)
	f.Until("job", 30, "upgrade", upgradedTo(2))
	ops := 0
	for _, op := range jm.Operations() {
		if op.Kind == fakejm.OpStopWithSavepoint {
			ops++
			if op.TriggerID != trigger {
				t.Errorf("stop with trigger id %s, want %s", op.TriggerID, trigger)
			}
		}
	}
	if ops != 2 {
		t.Errorf("%d stop operations (before and after the restart), want 2", ops)
	}
	if _, meta := f.restoredFrom("job"); !meta.Savepoint || meta.JobID != before.Status.JobStatus.JobID {
		t.Errorf("restored from %+v", meta)
	}
}

// TestFinishedStopWithLostSavepointNeedsManualRestore: the stop completed,
// then the operator crashed and the JobManager restarted: nobody knows the
// savepoint. The operator must not restart from older state.
func TestFinishedStopWithLostSavepointNeedsManualRestore(t *testing.T) {
	f := newFixture(t)
	before := f.Deploy(f.application("job", v1beta1.UpgradeModeSavepoint))
	jm := f.jm("job")
	jmUID := f.jmDeployment("job").UID
	f.checkpoint("job")
	f.edit("job", newArgs)
	f.MustSync("job") // intent + POST
	// The stop completes while the operator is down, then the JobManager
	// restarts (forgetting the operation and the statistics).
	trigger := f.Get("job").Status.JobStatus.SavepointInfo.TriggerID
	c, _ := flink.New(flink.Config{BaseURL: jm.URL(), Version: flink.V1_20})
	if res, err := c.SavepointStatus(f.Ctx, before.Status.JobStatus.JobID, trigger); err != nil || !res.Pending() {
		t.Fatalf("first poll: %+v %v", res, err)
	}
	if res, err := c.SavepointStatus(f.Ctx, before.Status.JobStatus.JobID, trigger); err != nil || !res.Succeeded() {
		t.Fatalf("second poll: %+v %v", res, err)
	}
	jm.Restart()
	f.Restart()
	for range 5 {
		f.Step("job")
	}
	got := f.Get("job")
	if !strings.Contains(jobengine.ErrorMessage(got.Status.Error), "Manual restore required") || f.jmDeployment("job").UID != jmUID {
		t.Fatalf("status %s", statusString(got))
	}
}

// nativeCrashRun deploys a native application with Kubernetes HA and
// upgrades it in mode, crashing the operator at the crashAt-th fault point
// counted from the creation (-1: never), pause being how long it stays
// down. A checkpoint completes while the upgrade is under way (before the
// old JobManager is gone). It checks that the cluster is native
// throughout (one JobManager Deployment, no TaskManager Deployment, no
// TaskManager pod of an old JobManager), that the new job comes back from
// the right state (savepoint: the stop's savepoint, after exactly one
// stop; last-state: the newest checkpoint, through the HA metadata,
// without a cancel), and returns the fault points passed.
func nativeCrashRun(t *testing.T, mode v1beta1.UpgradeMode, crashAt int, pause time.Duration) []string {
	f := newNativeFixture(t)
	var points []string
	f.Fault = func(_, point string) {
		points = append(points, point)
		if len(points)-1 == crashAt {
			f.Clock.Step(pause)
			panic(controllertest.Crash{})
		}
	}
	crashes := 0
	step := func(what string, done func(*v1beta1.FlinkDeployment) bool) *v1beta1.FlinkDeployment {
		for range 60 {
			if f.StepCrashing("job") {
				crashes++
			}
			if d := f.Get("job"); done(d) {
				return d
			}
		}
		t.Fatalf("%s did not finish: %s", what, statusString(f.Get("job")))
		return nil
	}
	f.Create(withHA(native(f.application("job", mode))))
	before := step("deploy", running)
	if d := f.jmDeployment("job"); d.Labels[cluster.LabelType] != cluster.TypeNative {
		t.Fatalf("JobManager Deployment %v", d.Labels)
	}
	oldJob, oldJM := before.Status.JobStatus.JobID, f.jm("job")
	oldUID := f.jmDeployment("job").UID
	older := f.haCheckpoint("job")
	// With last-state, the old job's graph in the HA metadata, which the
	// new JobManager must not find: however the operator crashed, the
	// upgrade's deploy removes it (DEPLOYING recorded with the job's state
	// reset is the deploy's own repeat, not a lost JobManager's recovery).
	haCM := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: cluster.HAClusterConfigMapName("job"), Namespace: ns,
		Labels: cluster.HAConfigMapLabels("job")}, Data: map[string]string{"jobGraph-" + oldJob: "old graph", "counter": "3"}}
	if mode == v1beta1.UpgradeModeLastState {
		if _, err := f.Kube.CoreV1().ConfigMaps(ns).Create(f.Ctx, haCM, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	f.edit("job", newArgs)
	latest := ""
	after := step("upgrade", func(d *v1beta1.FlinkDeployment) bool {
		if p := f.jms["job"]; latest == "" && p != nil && p.deploy == oldUID {
			if st, ok := p.JobState(oldJob); ok && st == "RUNNING" {
				latest = f.haCheckpoint("job")
			}
		}
		return upgradedTo(2)(d)
	})
	if crashAt >= 0 && crashes != 1 {
		t.Fatalf("%d crashes, want 1", crashes)
	}
	if mode == v1beta1.UpgradeModeLastState {
		if cm, err := f.Kube.CoreV1().ConfigMaps(ns).Get(f.Ctx, haCM.Name, metav1.GetOptions{}); err != nil || !maps.Equal(cm.Data, map[string]string{"counter": "3"}) {
			t.Errorf("HA ConfigMap after the upgrade: %v (%v), want the job graph removed, the rest kept", cm, err)
		}
	}
	if deps := f.deploymentNames(); !slices.Equal(deps, []string{cluster.JobManagerDeploymentName("job")}) {
		t.Errorf("Deployments %v", deps)
	}
	for _, p := range f.tmPodsOf("job") {
		if p.OwnerReferences[0].UID == oldUID {
			t.Errorf("TaskManager pod %s of the old JobManager left", p.Name)
		}
	}
	restored, meta := f.restoredFrom("job")
	switch mode {
	case v1beta1.UpgradeModeSavepoint:
		path := after.Status.JobStatus.UpgradeSavepointPath
		if restored == "" || restored != path || !meta.Savepoint || meta.JobID != oldJob {
			t.Errorf("new job restored from %q (%+v), want the stop savepoint %s of job %s", restored, meta, path, oldJob)
		}
		if n := f.stops(); n != 1 {
			t.Errorf("%d stop-with-savepoint operations, want 1", n)
		}
	case v1beta1.UpgradeModeLastState:
		want := latest
		if want == "" {
			want = older
		}
		if restored != want {
			t.Errorf("new job restored from %q, want the newest checkpoint %s (older: %s)", restored, want, older)
		}
		if after.Status.JobStatus.JobID != oldJob {
			t.Errorf("last-state upgrade changed the job id")
		}
		if st, _ := oldJM.JobState(oldJob); st == "CANCELED" {
			t.Errorf("the job was cancelled (its HA data deleted)")
		}
	}
	return points
}

// TestNativeSurvivesCrashAtEveryStep: the native deploy and its savepoint
// and last-state (Kubernetes HA) upgrades survive the operator being
// killed at each of their fault points, right away and after a pause.
func TestNativeSurvivesCrashAtEveryStep(t *testing.T) {
	for _, mode := range []v1beta1.UpgradeMode{v1beta1.UpgradeModeSavepoint, v1beta1.UpgradeModeLastState} {
		points := nativeCrashRun(t, mode, -1, 0)
		t.Logf("fault points of a native deploy and %s upgrade: %s", mode, strings.Join(points, ", "))
		if len(points) < 5 {
			t.Fatalf("only %d fault points: %v", len(points), points)
		}
		for _, pause := range []time.Duration{0, 6 * time.Minute} {
			for i, p := range points {
				t.Run(fmt.Sprintf("%s pause %s crash %d at %s", mode, pause, i, p), func(t *testing.T) {
					nativeCrashRun(t, mode, i, pause)
				})
			}
		}
	}
}
