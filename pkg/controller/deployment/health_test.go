package deployment

import (
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/cluster"
	"github.com/flinkops/flink-operator/pkg/config"
	"github.com/flinkops/flink-operator/pkg/controller/controllertest"
	"github.com/flinkops/flink-operator/pkg/controller/jobengine"
	"github.com/flinkops/flink-operator/pkg/flink/fakejm"
)

// withConf sets Flink configuration keys of a FlinkDeployment before it is
// created.
func withConf(d *v1beta1.FlinkDeployment, kv ...string) *v1beta1.FlinkDeployment {
	setConf(&d.Spec, kv...)
	return d
}

// restartedFrom steps until the job runs again on a new JobManager (another
// incarnation of its Deployment than old) and returns its status.
func (f *fixture) restartedFrom(name string, old fmt.Stringer) *v1beta1.FlinkDeployment {
	f.T.Helper()
	return f.Until(name, 30, "restart", func(d *v1beta1.FlinkDeployment) bool {
		p := f.jms[name]
		return p != nil && string(p.deploy) != old.String() && running(d)
	})
}

type uid string

func (u uid) String() string { return string(u) }

func (f *fixture) jmUID(name string) uid { return uid(f.jmDeployment(name).UID) }

// countEventsWith counts events starting with prefix ("<type> <reason> ").
func countEventsWith(events []string, prefix string) int {
	n := 0
	for _, e := range events {
		if strings.HasPrefix(e, prefix) {
			n++
		}
	}
	return n
}

// job.restart.failed: off by default (a FAILED job stays FAILED); on, the
// FAILED job is redeployed with the same spec from its latest checkpoint,
// in every upgrade mode that keeps state, and never with a savepoint of
// the failed job.
func TestRestartFailedJob(t *testing.T) {
	t.Run("default off", func(t *testing.T) {
		f := newFixture(t)
		f.Deploy(f.application("job", v1beta1.UpgradeModeLastState))
		old := f.jmUID("job")
		f.checkpoint("job")
		if err := f.jm("job").FailJob(f.jm("job").jobID, "java.lang.RuntimeException", "boom"); err != nil {
			t.Fatal(err)
		}
		for range 5 {
			f.Step("job")
		}
		got := f.Get("job")
		if got.Status.JobStatus.State != v1beta1.JobStatusFailed || f.jmUID("job") != old {
			t.Errorf("FAILED job restarted without %s: %s", config.KeyJobRestartFailed, statusString(got))
		}
	})
	for _, mode := range []v1beta1.UpgradeMode{v1beta1.UpgradeModeLastState, v1beta1.UpgradeModeSavepoint, v1beta1.UpgradeModeStateless} {
		t.Run(string(mode), func(t *testing.T) {
			f := newFixture(t)
			f.Deploy(withConf(f.application("job", mode), config.KeyJobRestartFailed, "true"))
			old := f.jmUID("job")
			f.checkpoint("job")
			latest := f.checkpoint("job")
			f.Events()
			jm := f.jm("job")
			if err := jm.FailJob(jm.jobID, "java.lang.RuntimeException", "boom"); err != nil {
				t.Fatal(err)
			}
			got := f.restartedFrom("job", old)
			restored, _ := f.restoredFrom("job")
			want := latest
			if mode == v1beta1.UpgradeModeStateless {
				want = ""
			}
			if restored != want {
				t.Errorf("restarted from %q, want %q", restored, want)
			}
			if n := f.stops(); n != 0 {
				t.Errorf("%d stop-with-savepoint of the failed job", n)
			}
			ev := f.Events()
			if countEventsWith(ev, "Normal Submit Job "+jm.jobID+" FAILED; restarting it from ") != 1 {
				t.Errorf("events %q", ev)
			}
			if got.Status.Error != "" || got.Status.ReconciliationStatus.LastReconciledSpec != got.Status.ReconciliationStatus.LastStableSpec {
				t.Errorf("status after the restart %s", statusString(got))
			}
		})
	}
}

// healthApp is an application with the health check on: more than 2
// restarts in 2 min are unhealthy; checkpoints every 10 s with a 20 s
// timeout (progress window 40 s, raised from the 30 s configured).
func (f *fixture) healthApp(mode v1beta1.UpgradeMode, kv ...string) *v1beta1.FlinkDeployment {
	return withConf(f.application("job", mode), append([]string{
		config.KeyClusterHealthCheckEnabled, "true",
		config.KeyClusterHealthCheckRestartsThreshold, "2",
		config.KeyClusterHealthCheckCheckpointProgressWindow, "30 s",
		"execution.checkpointing.interval", "10 s",
		config.FlinkCheckpointTimeout, "20 s",
	}, kv...)...)
}

// The health check observes the job's restarts through its metrics into
// status.clusterInfo.ClusterHealthInfo; a job restarting too often is
// restarted (RestartUnhealthyJob) from its latest checkpoint, without a
// savepoint of the failing job, once; the new job starts a new record.
func TestHealthCheckRestartsUnhealthyJob(t *testing.T) {
	for _, mode := range []v1beta1.UpgradeMode{v1beta1.UpgradeModeLastState, v1beta1.UpgradeModeSavepoint} {
		t.Run(string(mode), func(t *testing.T) {
			f := newFixture(t)
			f.Deploy(f.healthApp(mode, config.KeyClusterHealthCheckCheckpointProgressEnabled, "false"))
			f.Step("job")
			h := jobengine.HealthInfo(f.Get("job").Status.ClusterInfo)
			if h == nil || !h.HealthResult.Healthy {
				t.Fatalf("no healthy record in clusterInfo: %v", f.Get("job").Status.ClusterInfo)
			}
			old := f.jmUID("job")
			jm := f.jm("job")
			f.checkpoint("job")
			latest := f.checkpoint("job")
			f.Events()
			if err := jm.AddRestarts(jm.jobID, 3); err != nil {
				t.Fatal(err)
			}
			f.restartedFrom("job", old)
			if restored, _ := f.restoredFrom("job"); restored != latest {
				t.Errorf("restarted from %q, want the latest checkpoint %s", restored, latest)
			}
			if n := f.stops(); n != 0 {
				t.Errorf("%d stop-with-savepoint of the unhealthy job", n)
			}
			ev := f.Events()
			if countEventsWith(ev, "Warning RestartUnhealthyJob Restart count hit threshold: 2") != 1 {
				t.Errorf("events %q", ev)
			}
			f.checkpoint("job")
			for range 3 {
				f.Step("job")
			}
			got := f.Get("job")
			if h := jobengine.HealthInfo(got.Status.ClusterInfo); h == nil || !h.HealthResult.Healthy || h.NumRestarts != 0 {
				t.Errorf("record after the restart: %+v", h)
			}
			if countEventsWith(f.Events(), "Warning RestartUnhealthyJob") != 0 || !running(got) {
				t.Errorf("restarted again: %s", statusString(got))
			}
		})
	}
}

// With the health check off (the default) nothing is observed or restarted.
func TestHealthCheckOffByDefault(t *testing.T) {
	f := newFixture(t)
	f.Deploy(f.application("job", v1beta1.UpgradeModeLastState))
	old := f.jmUID("job")
	jm := f.jm("job")
	if err := jm.AddRestarts(jm.jobID, 1000); err != nil {
		t.Fatal(err)
	}
	for range 5 {
		f.Step("job")
	}
	got := f.Get("job")
	if _, ok := got.Status.ClusterInfo[jobengine.ClusterHealthInfoKey]; ok || f.jmUID("job") != old {
		t.Errorf("health check without %s: %v %s", config.KeyClusterHealthCheckEnabled, got.Status.ClusterInfo, statusString(got))
	}
	if n := len(jm.RequestsTo(fakejm.RouteJobMetrics)); n != 0 {
		t.Errorf("%d metrics requests", n)
	}
}

// A job that completes no checkpoint within the progress window is
// unhealthy and restarted; one that does is left alone.
func TestHealthCheckCheckpointProgress(t *testing.T) {
	f := newFixture(t)
	f.Deploy(f.healthApp(v1beta1.UpgradeModeLastState))
	f.Step("job")
	old := f.jmUID("job")
	latest := ""
	// Checkpoints keep completing: 2 min without a restart.
	for start := f.Clock.Now(); f.Clock.Now().Sub(start) < 2*time.Minute; {
		latest = f.checkpoint("job")
		f.Step("job")
	}
	if f.jmUID("job") != old {
		t.Fatalf("restarted although checkpoints complete")
	}
	f.Events()
	got := f.restartedFrom("job", old)
	if restored, _ := f.restoredFrom("job"); restored != latest {
		t.Errorf("restarted from %q, want %s", restored, latest)
	}
	if ev := f.Events(); countEventsWith(ev, "Warning RestartUnhealthyJob Cluster is not able to complete checkpoints") != 1 {
		t.Errorf("events %q (status %s)", ev, statusString(got))
	}
}

// healthRestart runs an unhealthy job's restart and crashes the operator at
// the crashAt-th fault point after the job turned unhealthy (-1: never),
// for pause. The job must come back from its latest checkpoint (not the
// older one), restarted once, without a savepoint.
func healthRestart(t *testing.T, mode v1beta1.UpgradeMode, crashAt int, pause time.Duration) []string {
	f := newFixture(t)
	f.Deploy(f.healthApp(mode, config.KeyClusterHealthCheckCheckpointProgressEnabled, "false"))
	f.Step("job")
	old := f.jmUID("job")
	jm := f.jm("job")
	older := f.checkpoint("job")
	latest := f.checkpoint("job")
	var points []string
	f.Fault = func(_, point string) {
		points = append(points, point)
		if len(points)-1 == crashAt {
			f.Clock.Step(pause)
			panic(controllertest.Crash{})
		}
	}
	if err := jm.AddRestarts(jm.jobID, 3); err != nil {
		t.Fatal(err)
	}
	crashes := 0
	var after *v1beta1.FlinkDeployment
	for range 40 {
		if f.StepCrashing("job") {
			crashes++
		}
		if p := f.jms["job"]; p != nil && uid(p.deploy) != old && running(f.Get("job")) {
			after = f.Get("job")
			break
		}
	}
	f.Fault = nil
	if after == nil {
		t.Fatalf("restart did not finish: %s", statusString(f.Get("job")))
	}
	if crashAt >= 0 && crashes != 1 {
		t.Fatalf("%d crashes, want 1", crashes)
	}
	switch restored, _ := f.restoredFrom("job"); restored {
	case latest:
	case older:
		t.Errorf("restarted from the older checkpoint %s", older)
	default:
		t.Errorf("restarted from %q, want %s", restored, latest)
	}
	if n := f.stops(); n != 0 {
		t.Errorf("%d stop-with-savepoint", n)
	}
	if n := len(f.JobManagers); n != 2 {
		t.Errorf("%d JobManagers started, want 2 (one restart)", n)
	}
	for range 3 {
		f.Step("job")
	}
	if n := len(f.JobManagers); n != 2 || !running(f.Get("job")) {
		t.Errorf("after the restart: %d JobManagers, %s", n, statusString(f.Get("job")))
	}
	return points
}

// TestHealthRestartSurvivesCrashAtEveryStep kills the operator at each
// fault point of an unhealthy job's restart (the record, the cancel, each
// status write, the teardown, the deploy), right away and after a pause.
func TestHealthRestartSurvivesCrashAtEveryStep(t *testing.T) {
	for _, mode := range []v1beta1.UpgradeMode{v1beta1.UpgradeModeLastState, v1beta1.UpgradeModeSavepoint} {
		points := healthRestart(t, mode, -1, 0)
		t.Logf("fault points of a %s restart: %s", mode, strings.Join(points, ", "))
		if len(points) < 4 {
			t.Fatalf("only %d fault points: %v", len(points), points)
		}
		for _, pause := range []time.Duration{0, 6 * time.Minute} {
			for i, p := range points {
				t.Run(fmt.Sprintf("%s pause %s crash %d at %s", mode, pause, i, p), func(t *testing.T) {
					healthRestart(t, mode, i, pause)
				})
			}
		}
	}
}

// A JobManager Deployment lost after its deploy is recreated with the job
// graph left in the HA metadata, so the new JobManager recovers the job as
// after a JobManager crash, under its own library BLOB keys (a resubmitted
// job gets new ones, which TaskManagers that outlived the lost JobManager
// refuse); so is the recovery's own Deployment when it is missing again
// while DEPLOYING is recorded (the cache behind, or a crash after the
// status write), without a second event. A deploy's JobManager still comes
// after the graph's removal (TestNativeLastStateUpgradeDropsHAJobGraph).
func TestJobManagerRecoveryKeepsHAJobGraph(t *testing.T) {
	f := newFixture(t)
	before := f.Deploy(withHA(f.application("job", v1beta1.UpgradeModeLastState)))
	jobID := before.Status.JobStatus.JobID
	cms := f.Kube.CoreV1().ConfigMaps(ns)
	data := map[string]string{"jobGraph-" + jobID: "graph", "executionPlan-" + jobID: "plan", "counter": "3"}
	haCM := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: cluster.HAClusterConfigMapName("job"), Namespace: ns,
		Labels: cluster.HAConfigMapLabels("job")}, Data: data}
	if _, err := cms.Create(f.Ctx, haCM, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	jms := f.Kube.AppsV1().Deployments(ns)
	for round, what := range []string{"lost after its deploy", "the recovery's own, missing while DEPLOYING is recorded"} {
		if err := jms.Delete(f.Ctx, cluster.JobManagerDeploymentName("job"), metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		f.kubeTick()
		if round == 1 {
			if st := f.Get("job").Status; st.JobManagerDeploymentStatus != v1beta1.JobManagerDeploying || st.JobStatus.State != v1beta1.JobStatusRunning {
				t.Fatalf("before round %d: %s, want DEPLOYING with the job RUNNING", round, statusString(f.Get("job")))
			}
		}
		f.MustSync("job")
		if _, err := jms.Get(f.Ctx, cluster.JobManagerDeploymentName("job"), metav1.GetOptions{}); err != nil {
			t.Fatalf("%s: JobManager not recreated: %v", what, err)
		}
		got, err := cms.Get(f.Ctx, haCM.Name, metav1.GetOptions{})
		if err != nil || !maps.Equal(got.Data, data) {
			t.Fatalf("%s: HA ConfigMap %v (%v), want its data kept: %v", what, got, err, data)
		}
	}
	if ev := f.Events(); countEventsWith(ev, "Warning RecoverDeployment Recovering lost deployment") != 1 {
		t.Errorf("events %q, want one RecoverDeployment", ev)
	}
	if got := f.Until("job", 10, "recovered", running); got.Status.JobStatus.JobID != jobID {
		t.Errorf("job id %s after the recovery, want %s", got.Status.JobStatus.JobID, jobID)
	}
}

// jm-deployment-recovery.enabled: a JobManager Deployment deleted by
// someone else is recreated when that cannot lose state (a stateless job,
// a job with HA), with a RecoverDeployment Warning; with the key false it
// is reported (Missing) and not recreated.
func TestJobManagerDeploymentRecovery(t *testing.T) {
	deleteJM := func(f *fixture) {
		f.T.Helper()
		if err := f.Kube.AppsV1().Deployments(ns).Delete(f.Ctx, cluster.JobManagerDeploymentName("job"), metav1.DeleteOptions{}); err != nil {
			f.T.Fatal(err)
		}
		f.kubeTick()
		f.Events()
	}
	for _, c := range []struct {
		name string
		app  func(f *fixture) *v1beta1.FlinkDeployment
	}{
		{"stateless", func(f *fixture) *v1beta1.FlinkDeployment { return f.application("job", v1beta1.UpgradeModeStateless) }},
		{"HA", func(f *fixture) *v1beta1.FlinkDeployment {
			return withConf(f.application("job", v1beta1.UpgradeModeLastState), "high-availability.type", "kubernetes", "high-availability.storageDir", "file:///tmp/ha")
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t)
			before := f.Deploy(c.app(f))
			deleteJM(f)
			f.Step("job")
			if _, err := f.Kube.AppsV1().Deployments(ns).Get(f.Ctx, cluster.JobManagerDeploymentName("job"), metav1.GetOptions{}); err != nil {
				t.Fatalf("JobManager not recreated: %v", err)
			}
			got := f.Until("job", 10, "recovered", running)
			if got.Status.JobStatus.JobID != before.Status.JobStatus.JobID {
				t.Errorf("job id %s, want %s", got.Status.JobStatus.JobID, before.Status.JobStatus.JobID)
			}
			if ev := f.Events(); countEventsWith(ev, "Warning RecoverDeployment Recovering lost deployment") != 1 {
				t.Errorf("events %q", ev)
			}
		})
		t.Run(c.name+" recovery disabled", func(t *testing.T) {
			f := newFixture(t)
			f.Deploy(withConf(c.app(f), config.KeyJMDeploymentRecoveryEnabled, "false"))
			deleteJM(f)
			for range 3 {
				f.Step("job")
			}
			if _, err := f.Kube.AppsV1().Deployments(ns).Get(f.Ctx, cluster.JobManagerDeploymentName("job"), metav1.GetOptions{}); err == nil {
				t.Fatalf("JobManager recreated with %s false", config.KeyJMDeploymentRecoveryEnabled)
			}
			got := f.Get("job")
			if !strings.Contains(jobengine.ErrorMessage(got.Status.Error), "Missing JobManager deployment") || got.Status.JobManagerDeploymentStatus != v1beta1.JobManagerMissing {
				t.Errorf("status %s", statusString(got))
			}
			if ev := f.Events(); countEventsWith(ev, "Warning Missing ") != 1 || countEventsWith(ev, "Warning RecoverDeployment") != 0 {
				t.Errorf("events %q", ev)
			}
		})
	}
}
