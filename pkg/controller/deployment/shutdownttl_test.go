package deployment

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/cluster"
	"github.com/flinkops/flink-operator/pkg/config"
	"github.com/flinkops/flink-operator/pkg/controller/controllertest"
	"github.com/flinkops/flink-operator/pkg/flink"
)

// deploymentExists reports whether the named Deployment is in the API.
func (f *fixture) deploymentExists(name string) bool {
	f.T.Helper()
	_, err := f.Kube.AppsV1().Deployments(ns).Get(f.Ctx, name, metav1.GetOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		f.T.Fatal(err)
	}
	return err == nil
}

// endJob makes the running job reach state and waits for the status to
// record it; it returns the latest checkpoint taken before.
func (f *fixture) endJob(name string, state flink.JobStatus) (latest string, d *v1beta1.FlinkDeployment) {
	f.T.Helper()
	latest = f.checkpoint(name)
	jm := f.jm(name)
	if err := jm.SetJobState(jm.jobID, state); err != nil {
		f.T.Fatal(err)
	}
	d = f.Until(name, 5, "job "+string(state), func(d *v1beta1.FlinkDeployment) bool {
		return string(d.Status.JobStatus.State) == string(state)
	})
	if d.Status.JobStatus.UpgradeSavepointPath != latest {
		f.T.Fatalf("ended job: %s, want its latest checkpoint %s recorded", statusString(d), latest)
	}
	return latest, d
}

// kubernetes.operator.jm-deployment.shutdown-ttl (default 1 d, as
// upstream): the cluster of an application whose job is FINISHED, FAILED
// or CANCELED is shut down once the TTL has passed since the job ended,
// and not before; a running job's never is. The job's status stays as it
// was (terminal, with its last state), jobManagerDeploymentStatus becomes
// MISSING, nothing is recreated, and an upgrade afterwards restarts the
// job from the last state recorded when it ended.
func TestShutdownTTL(t *testing.T) {
	for _, tc := range []struct {
		name  string
		ttl   string // "" = the default
		end   flink.JobStatus
		after time.Duration // of the TTL counted from the job's end
		mode  v1beta1.UpgradeMode
	}{
		{name: "default, FINISHED", end: flink.JobFinished, after: 24 * time.Hour, mode: v1beta1.UpgradeModeSavepoint},
		{name: "10 min, FAILED", ttl: "10 min", end: flink.JobFailed, after: 10 * time.Minute, mode: v1beta1.UpgradeModeLastState},
		{name: "1 h, CANCELED", ttl: "1 h", end: flink.JobCanceled, after: time.Hour, mode: v1beta1.UpgradeModeSavepoint},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			d := f.application("job", tc.mode)
			if tc.ttl != "" {
				setConf(&d.Spec, config.KeyJMDeploymentShutdownTTL, tc.ttl)
			}
			before := f.Deploy(d)
			latest, ended := f.endJob("job", tc.end)
			endedAt := f.Clock.Now()
			jmName, tmName := cluster.JobManagerDeploymentName("job"), cluster.TaskManagerDeploymentName("job")

			// Just before the TTL: kept.
			f.Clock.Step(tc.after - time.Minute - (f.Clock.Now().Sub(endedAt)))
			f.Step("job")
			if !f.deploymentExists(jmName) || !f.deploymentExists(tmName) {
				t.Fatalf("cluster shut down before the TTL (%v after the end)", f.Clock.Now().Sub(endedAt))
			}
			if got := f.Get("job"); got.Status.JobManagerDeploymentStatus != v1beta1.JobManagerReady {
				t.Fatalf("before the TTL: %s", statusString(got))
			}
			// The TTL passes: the sync right after it (the requeue) shuts it down.
			f.Events()
			for range 8 {
				f.Step("job")
			}
			if f.deploymentExists(jmName) || f.deploymentExists(tmName) {
				t.Fatalf("cluster still there %v after the job ended", f.Clock.Now().Sub(endedAt))
			}
			got := f.Get("job")
			if got.Status.JobManagerDeploymentStatus != v1beta1.JobManagerMissing || got.Status.JobStatus.State != ended.Status.JobStatus.State ||
				got.Status.JobStatus.JobID != before.Status.JobStatus.JobID || got.Status.JobStatus.UpgradeSavepointPath != latest ||
				got.Status.JobStatus.UpdateTime != ended.Status.JobStatus.UpdateTime {
				t.Errorf("after the shutdown: %s, want the ended job's status kept and jm MISSING", statusString(got))
			}
			if ev := f.Events(); !hasEvent(ev, "Normal", "Cleanup") {
				t.Errorf("events %v, want a Cleanup event", ev)
			}
			// Nothing is recreated (not even the TaskManagers).
			f.Clock.Step(2 * time.Hour)
			for range 3 {
				f.Step("job")
			}
			if f.deploymentExists(jmName) || f.deploymentExists(tmName) {
				t.Fatalf("cluster recreated after the shutdown")
			}
			if _, err := f.Kube.CoreV1().ConfigMaps(ns).Get(f.Ctx, cluster.ConfigMapName("job"), metav1.GetOptions{}); err != nil {
				t.Errorf("the cluster's ConfigMap went: %v", err)
			}
			// An upgrade restarts the job from its last state.
			f.edit("job", newArgs)
			f.Until("job", 30, "upgrade after the shutdown", upgradedTo(2))
			if restored, _ := f.restoredFrom("job"); restored != latest {
				t.Errorf("restored from %q, want the ended job's latest checkpoint %s", restored, latest)
			}
		})
	}
}

// A running job's cluster is never shut down, nor that of a job ended for
// less than the TTL.
func TestShutdownTTLRunningJobKept(t *testing.T) {
	f := newFixture(t)
	d := f.application("job", v1beta1.UpgradeModeSavepoint)
	setConf(&d.Spec, config.KeyJMDeploymentShutdownTTL, "1 min")
	f.Deploy(d)
	f.Clock.Step(48 * time.Hour)
	for range 5 {
		f.Step("job")
	}
	if !f.deploymentExists(cluster.JobManagerDeploymentName("job")) || !running(f.Get("job")) {
		t.Fatalf("running job's cluster shut down: %s", statusString(f.Get("job")))
	}
}

// A native cluster with Kubernetes HA: the shutdown deletes the JobManager
// Deployment (the TaskManager pods go with it) and keeps the HA
// ConfigMaps (upstream's deleteHaData false).
func TestShutdownTTLNativeKeepsHA(t *testing.T) {
	f := newNativeFixture(t)
	d := withHA(native(f.application("job", v1beta1.UpgradeModeLastState)))
	setConf(&d.Spec, config.KeyJMDeploymentShutdownTTL, "5 min")
	before := f.Deploy(d)
	f.haConfigMaps("job", before.Status.JobStatus.JobID)
	f.endJob("job", flink.JobFinished)
	// In native mode the restore path is in the ConfigMap, which Steady
	// updates to the last state recorded at the end; the fixture plays
	// that as a new JobManager process. Keep its job ended too.
	if p := f.jm("job"); p.jobID != "" {
		if err := p.SetJobState(p.jobID, flink.JobFinished); err != nil {
			t.Fatal(err)
		}
	}
	ha := f.haConfigMapNames("job")
	f.Clock.Step(6 * time.Minute)
	for range 8 {
		f.Step("job")
	}
	if f.deploymentExists(cluster.JobManagerDeploymentName("job")) || len(f.tmPodsOf("job")) != 0 {
		t.Fatalf("JobManager Deployment or TaskManager pods left: %v, %d pods", f.deploymentNames(), len(f.tmPodsOf("job")))
	}
	if got := f.haConfigMapNames("job"); !slices.Contains(got, cluster.HAClusterConfigMapName("job")) || len(ha) == 0 {
		t.Errorf("HA ConfigMaps %v, had %v: the shutdown deleted them", got, ha)
	}
	if got := f.Get("job"); got.Status.JobManagerDeploymentStatus != v1beta1.JobManagerMissing || got.Status.JobStatus.State != v1beta1.JobStatusFinished {
		t.Errorf("status %s", statusString(got))
	}
}

// shutdownTTLCrash ends a job, lets the TTL pass, and crashes the operator
// at the crashAt-th fault point from then on (-1: never); loseWrite fails
// the status write that records the shutdown. The cluster ends shut down,
// the job's status intact.
func shutdownTTLCrash(t *testing.T, crashAt int, loseWrite bool) []string {
	f := newFixture(t)
	d := f.application("job", v1beta1.UpgradeModeSavepoint)
	setConf(&d.Spec, config.KeyJMDeploymentShutdownTTL, "5 min")
	f.Deploy(d)
	latest, ended := f.endJob("job", flink.JobFailed)
	f.Clock.Step(6 * time.Minute)
	lost := false
	if loseWrite {
		f.Client.PrependReactor("update", "flinkdeployments", func(a k8stesting.Action) (bool, runtime.Object, error) {
			u, ok := a.(k8stesting.UpdateAction)
			if !ok || a.GetSubresource() != "status" || lost ||
				u.GetObject().(*v1beta1.FlinkDeployment).Status.JobManagerDeploymentStatus != v1beta1.JobManagerMissing {
				return false, nil, nil
			}
			lost = true
			return true, nil, errors.New("connection reset (status write lost)")
		})
	}
	var points []string
	f.Fault = func(_, point string) {
		points = append(points, point)
		if len(points)-1 == crashAt {
			panic(controllertest.Crash{})
		}
	}
	crashes := 0
	for range 10 {
		if f.StepCrashing("job") {
			crashes++
		}
	}
	if crashAt >= 0 && crashes != 1 {
		t.Errorf("%d crashes, want 1", crashes)
	}
	if loseWrite && !lost {
		t.Errorf("no status write lost")
	}
	if f.deploymentExists(cluster.JobManagerDeploymentName("job")) || f.deploymentExists(cluster.TaskManagerDeploymentName("job")) {
		t.Errorf("cluster not shut down")
	}
	got := f.Get("job")
	if got.Status.JobManagerDeploymentStatus != v1beta1.JobManagerMissing || got.Status.JobStatus.State != v1beta1.JobStatusFailed ||
		got.Status.JobStatus.UpgradeSavepointPath != latest || got.Status.JobStatus.JobID != ended.Status.JobStatus.JobID {
		t.Errorf("status %s, want the FAILED job with its last state %s", statusString(got), latest)
	}
	return points
}

func TestShutdownTTLSurvivesCrashes(t *testing.T) {
	points := shutdownTTLCrash(t, -1, false)
	if len(points) < 2 || !slices.ContainsFunc(points, func(p string) bool { return strings.HasPrefix(p, "action:delete Deployment") }) {
		t.Fatalf("fault points %v", points)
	}
	for i, p := range points {
		t.Run(fmt.Sprintf("crash %d at %s", i, p), func(t *testing.T) {
			shutdownTTLCrash(t, i, false)
		})
	}
	t.Run("status write lost", func(t *testing.T) {
		shutdownTTLCrash(t, -1, true)
	})
}
