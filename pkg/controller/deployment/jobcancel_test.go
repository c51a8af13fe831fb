package deployment

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/cluster"
	"github.com/flinkops/flink-operator/pkg/config"
	"github.com/flinkops/flink-operator/pkg/controller/controllertest"
	"github.com/flinkops/flink-operator/pkg/flink"
	"github.com/flinkops/flink-operator/pkg/flink/fakejm"
)

// kubernetes.operator.job.upgrade.last-state.job-cancel.enabled: a
// last-state upgrade of a native cluster whose HA metadata holds the job's
// checkpoints keeps the job running until its cluster goes, and the new
// JobManager recovers through HA (default false, as upstream); with it
// true, the job is cancelled first (upstream's allowLastStateCancel) and
// the new one restores from the latest checkpoint the REST API reports,
// under a new job id (upstream's setJobIdIfNecessary): Flink recorded the
// cancelled job's result under its id in the job result store, which
// outlives the cluster, and a JobManager started with that id would not
// run it. Either way the operator keeps the HA ConfigMaps (Flink itself
// drops a cancelled job's).
func TestLastStateJobCancel(t *testing.T) {
	for _, tc := range []struct {
		value      string // "" = unset
		wantCancel bool
	}{
		{value: "", wantCancel: false},
		{value: "false", wantCancel: false},
		{value: "true", wantCancel: true},
	} {
		t.Run("job-cancel="+tc.value, func(t *testing.T) {
			f := newNativeFixture(t)
			d := withHA(native(f.application("job", v1beta1.UpgradeModeLastState)))
			if tc.value != "" {
				setConf(&d.Spec, config.KeyJobUpgradeLastStateJobCancelEnabled, tc.value)
			}
			before := f.Deploy(d)
			jobID := before.Status.JobStatus.JobID
			f.haConfigMaps("job", jobID)
			oldJM := f.jm("job")
			latest := f.haCheckpoint("job")
			f.edit("job", newArgs)
			after := f.Until("job", 30, "last-state upgrade", upgradedTo(2))
			if kept := after.Status.JobStatus.JobID == jobID; kept == tc.wantCancel {
				t.Errorf("job id %s after the upgrade (was %s): kept %v, want kept only when the new JobManager recovers it through HA", after.Status.JobStatus.JobID, jobID, kept)
			}
			st, _ := oldJM.JobState(jobID)
			if cancelled := st == flink.JobCanceled; cancelled != tc.wantCancel {
				t.Errorf("old job %s; cancelled %v, want %v", st, cancelled, tc.wantCancel)
			}
			if restored, _ := f.restoredFrom("job"); restored != latest {
				t.Errorf("restored from %q, want the latest checkpoint %s", restored, latest)
			}
			if names := f.haConfigMapNames("job"); !slices.Contains(names, cluster.HAClusterConfigMapName("job")) {
				t.Errorf("HA ConfigMaps %v: the cluster's was deleted by a last-state upgrade", names)
			}
		})
	}
}

// lastStateCancelUpgrade runs a last-state upgrade with job-cancel on and
// crashes the operator at the crashAt-th fault point after the spec change
// (-1: never); loseWrite makes the first status write after the cancel
// request reached Flink fail, as if the operator died before it. The new
// job must restore from the latest checkpoint, never from empty or older
// state, under a new job id (the cancelled one's result is in Flink's job
// result store).
func lastStateCancelUpgrade(t *testing.T, crashAt int, loseWrite bool) []string {
	f := newNativeFixture(t)
	d := withHA(native(f.application("job", v1beta1.UpgradeModeLastState)))
	setConf(&d.Spec, config.KeyJobUpgradeLastStateJobCancelEnabled, "true")
	before := f.Deploy(d)
	jobID := before.Status.JobStatus.JobID
	oldJM := f.jm("job")
	older := f.haCheckpoint("job")
	latest := f.haCheckpoint("job")

	lost := false
	if loseWrite {
		f.Client.PrependReactor("update", "flinkdeployments", func(a k8stesting.Action) (bool, runtime.Object, error) {
			if a.GetSubresource() != "status" || lost || len(oldJM.RequestsTo(fakejm.RouteJobCancel)) == 0 {
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
	f.edit("job", newArgs)
	var after *v1beta1.FlinkDeployment
	crashes := 0
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
		t.Errorf("%d crashes, want 1", crashes)
	}
	if loseWrite && !lost {
		t.Errorf("no status write was lost")
	}
	if st, _ := oldJM.JobState(jobID); st != flink.JobCanceled {
		t.Errorf("old job %s, want CANCELED", st)
	}
	switch restored, _ := f.restoredFrom("job"); restored {
	case latest:
	case "":
		t.Errorf("new job started from empty state")
	case older:
		t.Errorf("new job started from the older checkpoint %s", older)
	default:
		t.Errorf("restored from %q, want %s", restored, latest)
	}
	if after.Status.JobStatus.JobID == jobID {
		t.Errorf("last-state upgrade with job-cancel kept the cancelled job's id %s", jobID)
	}
	return points
}

// TestLastStateJobCancelSurvivesCrashes kills the operator at every fault
// point of a last-state upgrade with job-cancel on (after the intent, after
// the cancel request, after each status write and teardown step), and loses
// the status write that follows the cancel.
func TestLastStateJobCancelSurvivesCrashes(t *testing.T) {
	points := lastStateCancelUpgrade(t, -1, false)
	if len(points) < 4 {
		t.Fatalf("only %d fault points: %v", len(points), points)
	}
	for i, p := range points {
		t.Run(fmt.Sprintf("crash %d at %s", i, p), func(t *testing.T) {
			lastStateCancelUpgrade(t, i, false)
		})
	}
	t.Run("status write after the cancel lost", func(t *testing.T) {
		lastStateCancelUpgrade(t, -1, true)
	})
}
