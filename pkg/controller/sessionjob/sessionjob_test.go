package sessionjob

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/config"
	"github.com/flinkops/flink-operator/pkg/controller/controllertest"
	"github.com/flinkops/flink-operator/pkg/controller/jobengine"
	"github.com/flinkops/flink-operator/pkg/flink"
	"github.com/flinkops/flink-operator/pkg/flink/fakejm"
	"github.com/flinkops/flink-operator/pkg/lifecycle"
)

// A new session job is recorded (job id first), then submitted: the jar is
// fetched, uploaded, run with the recorded id and every spec field, and
// deleted again; the job then runs and the spec is stable.
func TestSubmit(t *testing.T) {
	f := newFixture(t)
	f.sessionCluster("session", nil)
	j := f.sessionJob("job", v1beta1.UpgradeModeStateless)
	j.Spec.Job.AllowNonRestoredState = ptr.To(true)
	j.Spec.FlinkConfiguration = &v1beta1.Configuration{Raw: []byte(`{"pipeline.name":"counting","kubernetes.operator.periodic.savepoint.interval":""}`)}
	f.Create(j)

	f.MustSync("job")
	got := f.Get("job")
	if got.Status.JobStatus.JobID == "" || got.Status.JobStatus.State != v1beta1.JobStatusReconciling {
		t.Fatalf("first sync: want the job id recorded as RECONCILING before any submission, got %s", statusString(got))
	}
	if n := len(f.runs()); n != 0 {
		t.Fatalf("first sync submitted %d jobs; the submission must follow the record", n)
	}
	if len(got.Finalizers) != 1 || got.Finalizers[0] != Finalizer {
		t.Errorf("finalizers %v, want [%s]", got.Finalizers, Finalizer)
	}
	jobID := got.Status.JobStatus.JobID

	f.MustSync("job")
	runs := f.runs()
	if len(runs) != 1 {
		t.Fatalf("%d runs, want 1", len(runs))
	}
	want := runRequest{EntryClass: "org.example.Main", ProgramArgsList: []string{"--rate", "10"}, Parallelism: 2, JobID: jobID,
		AllowNonRestoredState: true, FlinkConfiguration: map[string]string{"pipeline.name": "counting", config.FlinkCheckpointRetention: config.FlinkRetainOnCancellation}}
	if r := runs[0]; r.EntryClass != want.EntryClass || strings.Join(r.ProgramArgsList, " ") != "--rate 10" || r.Parallelism != 2 ||
		r.JobID != jobID || !r.AllowNonRestoredState || r.SavepointPath != "" || !maps.Equal(r.FlinkConfiguration, want.FlinkConfiguration) {
		t.Errorf("run request %+v, want %+v", r, want)
	}
	if f.jarGets.Load() != 1 {
		t.Errorf("jar fetched %d times, want 1", f.jarGets.Load())
	}
	if jars := f.jm.Jars(); len(jars) != 0 {
		t.Errorf("uploaded jars left on the cluster: %+v", jars)
	}
	if f.jobState(jobID) != flink.JobRunning {
		t.Errorf("job %s is %s", jobID, f.jobState(jobID))
	}
	got = f.Until("job", 5, "stable", stable)
	if got.Status.JobStatus.JobID != jobID {
		t.Errorf("job id changed to %s", got.Status.JobStatus.JobID)
	}
	if !hasEvent(f.Events(), "Submitted job "+jobID) {
		t.Errorf("no Submit event")
	}
}

// FlinkSessionJobControllerTest.verifyUpgradeFromSavepoint: a job with
// initialSavepointPath starts from it and records it as
// upgradeSavepointPath.
func TestInitialSavepointPath(t *testing.T) {
	f := newFixture(t)
	f.sessionCluster("session", nil)
	j := f.sessionJob("job", v1beta1.UpgradeModeSavepoint)
	j.Spec.Job.InitialSavepointPath = "s3://bucket/savepoints/s0"
	got := f.Deploy(j)
	if p := got.Status.JobStatus.UpgradeSavepointPath; p != "s3://bucket/savepoints/s0" {
		t.Errorf("upgradeSavepointPath %q, want s0", p)
	}
	if runs := f.runs(); len(runs) != 1 || runs[0].SavepointPath != "s3://bucket/savepoints/s0" {
		t.Errorf("runs %+v, want one from s0", runs)
	}
}

// The operator crashes right after the job was run, before anything is
// recorded: the restarted operator finds the job by its recorded id and
// never submits it twice.
func TestCrashAfterSubmitNeverSubmitsTwice(t *testing.T) {
	f := newFixture(t)
	f.sessionCluster("session", nil)
	crashed := false
	f.Fault = func(_, point string) {
		if point == "submitted" && !crashed {
			crashed = true
			panic(controllertest.Crash{})
		}
	}
	f.Create(f.sessionJob("job", v1beta1.UpgradeModeSavepoint))
	for range 10 {
		f.StepCrashing("job")
		if stable(f.Get("job")) {
			break
		}
	}
	if !crashed {
		t.Fatal("the fault point was never reached")
	}
	if got := f.Get("job"); !stable(got) {
		t.Fatalf("not stable after the crash: %s", statusString(got))
	}
	if n := len(f.runs()); n != 1 {
		t.Errorf("%d submissions, want 1", n)
	}
	if ids := f.jm.JobIDs(); len(ids) != 1 {
		t.Errorf("session cluster runs %d jobs, want 1: %v", len(ids), ids)
	}
}

// A crash after a submission reached Flink but before the operator saw
// the answer leaves the status RECONCILING with the job id: the next sync
// finds the job by that id and adopts it instead of submitting again.
func TestRecordedJobFoundIsAdopted(t *testing.T) {
	f := newFixture(t)
	f.sessionCluster("session", nil)
	f.Create(f.sessionJob("job", v1beta1.UpgradeModeStateless))
	f.MustSync("job") // recorded
	jobID := f.Get("job").Status.JobStatus.JobID
	f.jm.MustAddJob(fakejm.JobSpec{ID: jobID}) // the lost submission
	f.Restart()
	got := f.Until("job", 5, "stable", stable)
	if n := len(f.runs()); n != 0 {
		t.Errorf("%d submissions, want 0", n)
	}
	if got.Status.JobStatus.JobID != jobID || got.Status.Error != "" {
		t.Errorf("after adoption: %s", statusString(got))
	}
}

// SessionJobReconcilerTest.testSavepointUpgrade: a stateful upgrade stops
// the job with a savepoint (trigger id recorded first), records an UPGRADE
// snapshot whose path equals upgradeSavepointPath, and submits the new job
// from it under a new job id.
func TestSavepointUpgrade(t *testing.T) {
	f := newFixture(t)
	f.sessionCluster("session", nil)
	before := f.Deploy(f.sessionJob("job", v1beta1.UpgradeModeSavepoint))
	oldID := before.Status.JobStatus.JobID

	f.edit("job", func(s *v1beta1.FlinkSessionJobSpec) { s.Job.Parallelism = ptr.To[int32](1) })
	f.MustSync("job")
	mid := f.Get("job")
	if mid.Status.LifecycleState != v1beta1.LifecycleUpgrading || mid.Status.JobStatus.SavepointInfo == nil || mid.Status.JobStatus.SavepointInfo.TriggerID == "" {
		t.Fatalf("after the spec change: want UPGRADING with the stop's trigger id recorded, got %s", statusString(mid))
	}
	after := f.Until("job", 20, "upgraded", func(j *v1beta1.FlinkSessionJob) bool {
		return stable(j) && j.Status.JobStatus.JobID != oldID
	})
	path := after.Status.JobStatus.UpgradeSavepointPath
	if path == "" {
		t.Fatalf("no upgradeSavepointPath: %s", statusString(after))
	}
	if f.stops() != 1 {
		t.Errorf("%d stop-with-savepoint requests, want 1", f.stops())
	}
	if st := f.jobState(oldID); st != flink.JobFinished {
		t.Errorf("old job %s, want FINISHED", st)
	}
	runs := f.runs()
	if len(runs) != 2 || runs[1].SavepointPath != path || runs[1].Parallelism != 1 || runs[1].JobID != after.Status.JobStatus.JobID {
		t.Errorf("second run %+v, want parallelism 1 from %s", runs[len(runs)-1], path)
	}
	var upgrades []v1beta1.FlinkStateSnapshot
	for _, s := range f.Snapshots() {
		if s.Labels[v1beta1.LabelSnapshotTriggerType] == "UPGRADE" || strings.Contains(s.Name, "upgrade") {
			upgrades = append(upgrades, s)
		}
	}
	if len(upgrades) != 1 {
		t.Fatalf("%d UPGRADE snapshots, want 1", len(upgrades))
	}
	s := upgrades[0]
	if s.Spec.Savepoint == nil || s.Spec.Savepoint.Path != path || !ptr.Deref(s.Spec.Savepoint.AlreadyExists, false) ||
		s.Spec.JobReference == nil || s.Spec.JobReference.Kind != v1beta1.JobReferenceKindSessionJob || s.Spec.JobReference.Name != "job" {
		t.Errorf("UPGRADE snapshot %+v, want alreadyExists at %s referring to FlinkSessionJob job", s.Spec, path)
	}
	if after.Status.JobStatus.SavepointInfo != nil && after.Status.JobStatus.SavepointInfo.LastSavepoint != nil {
		t.Errorf("legacy lastSavepoint recorded with snapshot resources on")
	}
}

// The same upgrade without the FlinkStateSnapshot CRD (legacy mode)
// records the savepoint in savepointInfo instead.
func TestSavepointUpgradeLegacy(t *testing.T) {
	f := newFixture(t)
	f.crdMissing = true
	f.Restart()
	f.sessionCluster("session", nil)
	before := f.Deploy(f.sessionJob("job", v1beta1.UpgradeModeSavepoint))
	f.edit("job", func(s *v1beta1.FlinkSessionJobSpec) { s.Job.Parallelism = ptr.To[int32](1) })
	after := f.Until("job", 20, "upgraded", func(j *v1beta1.FlinkSessionJob) bool {
		return stable(j) && j.Status.JobStatus.JobID != before.Status.JobStatus.JobID
	})
	info := after.Status.JobStatus.SavepointInfo
	if info == nil || info.LastSavepoint == nil || info.LastSavepoint.Location != after.Status.JobStatus.UpgradeSavepointPath ||
		info.LastSavepoint.TriggerType != v1beta1.SnapshotTriggerUpgrade {
		t.Errorf("legacy savepointInfo %+v, want lastSavepoint UPGRADE at %s", info, after.Status.JobStatus.UpgradeSavepointPath)
	}
	if n := len(f.Snapshots()); n != 0 {
		t.Errorf("%d snapshot resources in legacy mode", n)
	}
}

// A savepoint upgrade survives an operator crash at every fault point:
// exactly one stop-with-savepoint, one UPGRADE snapshot, one new job, and
// the new job starts from the stop's savepoint.
// Once right away and once after a pause long enough for Flink to forget
// the trigger's result (rest.async.store-duration, 5 min).
func TestSavepointUpgradeSurvivesCrashAtEveryStep(t *testing.T) {
	var points []string
	for _, pause := range []time.Duration{0, 6 * time.Minute} {
		for crashAt := -1; crashAt == -1 || crashAt < len(points); crashAt++ {
			if pause > 0 && crashAt < 0 {
				continue
			}
			crashUpgrade(t, crashAt, pause, &points)
		}
	}
	if len(points) < 5 {
		t.Errorf("only %d fault points: %v", len(points), points)
	}
}

func crashUpgrade(t *testing.T, crashAt int, pause time.Duration, points *[]string) {
	t.Run(map[bool]string{true: "no crash", false: "crash at " + itoa(crashAt) + " pause " + pause.String()}[crashAt < 0], func(t *testing.T) {
		f := newFixture(t)
		f.sessionCluster("session", nil)
		before := f.Deploy(f.sessionJob("job", v1beta1.UpgradeModeSavepoint))
		var seen []string
		f.Fault = func(_, point string) {
			seen = append(seen, point)
			if len(seen)-1 == crashAt {
				f.Clock.Step(pause)
				panic(controllertest.Crash{})
			}
		}
		f.edit("job", func(s *v1beta1.FlinkSessionJobSpec) { s.Job.Args = []string{"--rate", "20"} })
		var after *v1beta1.FlinkSessionJob
		for range 40 {
			f.StepCrashing("job")
			if j := f.Get("job"); stable(j) && j.Status.JobStatus.JobID != before.Status.JobStatus.JobID {
				after = j
				break
			}
		}
		if after == nil {
			t.Fatalf("upgrade did not finish: %s", statusString(f.Get("job")))
		}
		if crashAt < 0 {
			*points = seen
		}
		path := after.Status.JobStatus.UpgradeSavepointPath
		runs := f.runs()
		if f.stops() != 1 || len(runs) != 2 || runs[1].SavepointPath != path || path == "" {
			t.Errorf("stops %d, runs %+v; want 1 stop and the new job from %q", f.stops(), runs, path)
		}
		if ids := f.jm.JobIDs(); len(ids) != 2 {
			t.Errorf("%d jobs on the cluster, want the old (finished) and the new one", len(ids))
		}
		n := 0
		for _, s := range f.Snapshots() {
			if strings.Contains(s.Name, "upgrade") {
				n++
			}
		}
		if n != 1 {
			t.Errorf("%d UPGRADE snapshots, want 1", n)
		}
	})
}

// A stateless upgrade cancels the old job and submits the new one from
// empty state.
func TestStatelessUpgradeCancels(t *testing.T) {
	f := newFixture(t)
	f.sessionCluster("session", nil)
	before := f.Deploy(f.sessionJob("job", v1beta1.UpgradeModeStateless))
	f.edit("job", func(s *v1beta1.FlinkSessionJobSpec) { s.Job.Args = nil })
	after := f.Until("job", 20, "upgraded", func(j *v1beta1.FlinkSessionJob) bool {
		return stable(j) && j.Status.JobStatus.JobID != before.Status.JobStatus.JobID
	})
	if st := f.jobState(before.Status.JobStatus.JobID); st != flink.JobCanceled {
		t.Errorf("old job %s, want CANCELED", st)
	}
	if f.stops() != 0 {
		t.Errorf("stateless upgrade took a savepoint")
	}
	runs := f.runs()
	if len(runs) != 2 || runs[1].SavepointPath != "" || after.Status.JobStatus.UpgradeSavepointPath != "" {
		t.Errorf("new job from %q (recorded %q), want empty state", runs[len(runs)-1].SavepointPath, after.Status.JobStatus.UpgradeSavepointPath)
	}
}

// A last-state upgrade cancels the job and restarts from its newest
// checkpoint.
func TestLastStateUpgrade(t *testing.T) {
	f := newFixture(t)
	f.sessionCluster("session", nil)
	before := f.Deploy(f.sessionJob("job", v1beta1.UpgradeModeLastState))
	_, cp, err := f.jm.CompleteCheckpoint(before.Status.JobStatus.JobID)
	if err != nil {
		t.Fatal(err)
	}
	f.edit("job", func(s *v1beta1.FlinkSessionJobSpec) { s.Job.Args = nil })
	after := f.Until("job", 20, "upgraded", func(j *v1beta1.FlinkSessionJob) bool {
		return stable(j) && j.Status.JobStatus.JobID != before.Status.JobStatus.JobID
	})
	runs := f.runs()
	if runs[len(runs)-1].SavepointPath != cp || after.Status.JobStatus.UpgradeSavepointPath != cp {
		t.Errorf("new job from %q (recorded %q), want the checkpoint %s", runs[len(runs)-1].SavepointPath, after.Status.JobStatus.UpgradeSavepointPath, cp)
	}
	if st := f.jobState(before.Status.JobStatus.JobID); st != flink.JobCanceled {
		t.Errorf("old job %s, want CANCELED", st)
	}
}

// Suspend stops the job with a savepoint and submits nothing; resume
// submits a new job from that savepoint.
func TestSuspendResume(t *testing.T) {
	f := newFixture(t)
	f.sessionCluster("session", nil)
	before := f.Deploy(f.sessionJob("job", v1beta1.UpgradeModeSavepoint))
	f.edit("job", func(s *v1beta1.FlinkSessionJobSpec) { s.Job.State = v1beta1.JobStateSuspended })
	suspended := f.Until("job", 20, "suspended", func(j *v1beta1.FlinkSessionJob) bool {
		return j.Status.LifecycleState == v1beta1.LifecycleSuspended
	})
	path := suspended.Status.JobStatus.UpgradeSavepointPath
	if path == "" || suspended.Status.JobStatus.State != v1beta1.JobStatusSuspended {
		t.Fatalf("suspended: %s", statusString(suspended))
	}
	if st := f.jobState(before.Status.JobStatus.JobID); st != flink.JobFinished {
		t.Errorf("suspended job is %s, want FINISHED (stopped with a savepoint)", st)
	}
	for range 3 {
		f.Step("job")
	}
	if n := len(f.runs()); n != 1 {
		t.Fatalf("%d submissions while suspended", n)
	}
	f.edit("job", func(s *v1beta1.FlinkSessionJobSpec) { s.Job.State = v1beta1.JobStateRunning })
	resumed := f.Until("job", 20, "resumed", stable)
	runs := f.runs()
	if len(runs) != 2 || runs[1].SavepointPath != path || resumed.Status.JobStatus.JobID == before.Status.JobStatus.JobID {
		t.Errorf("resume: runs %+v, want a new job from %s", runs, path)
	}
}

// A savepointRedeployNonce change cancels the job (no savepoint) and
// submits it again from initialSavepointPath.
func TestSavepointRedeploy(t *testing.T) {
	f := newFixture(t)
	f.sessionCluster("session", nil)
	before := f.Deploy(f.sessionJob("job", v1beta1.UpgradeModeSavepoint))
	f.edit("job", func(s *v1beta1.FlinkSessionJobSpec) {
		s.Job.InitialSavepointPath = "s3://bucket/savepoints/savepoint-1"
		s.Job.SavepointRedeployNonce = ptr.To[int64](1)
	})
	after := f.Until("job", 20, "redeployed", func(j *v1beta1.FlinkSessionJob) bool {
		return stable(j) && j.Status.JobStatus.JobID != before.Status.JobStatus.JobID
	})
	if f.stops() != 0 {
		t.Errorf("redeploy took a savepoint")
	}
	if st := f.jobState(before.Status.JobStatus.JobID); st != flink.JobCanceled {
		t.Errorf("old job %s, want CANCELED", st)
	}
	runs := f.runs()
	if runs[len(runs)-1].SavepointPath != "s3://bucket/savepoints/savepoint-1" || after.Status.JobStatus.UpgradeSavepointPath != "s3://bucket/savepoints/savepoint-1" {
		t.Errorf("redeployed from %q", runs[len(runs)-1].SavepointPath)
	}
}

// SessionJobReconcilerTest.testSubmitAndCleanUpWithSavepoint: with
// job.savepoint-on-deletion, deleting the session job stops it with a
// savepoint recorded as an UPGRADE snapshot and in upgradeSavepointPath,
// then the finalizer goes. OnResource: the option set on the job.
func TestDeletionWithSavepoint(t *testing.T) {
	for _, onResource := range []bool{false, true} {
		t.Run(map[bool]string{false: "operator config", true: "on resource"}[onResource], func(t *testing.T) {
			f := newFixture(t)
			j := f.sessionJob("job", v1beta1.UpgradeModeSavepoint)
			if onResource {
				j.Spec.FlinkConfiguration = &v1beta1.Configuration{Raw: []byte(`{"` + config.KeyJobSavepointOnDeletion + `":"true"}`)}
			} else {
				f.Config[config.KeyJobSavepointOnDeletion] = "true"
				f.Restart()
			}
			f.sessionCluster("session", nil)
			before := f.Deploy(j)
			f.delete("job")
			got := f.Until("job", 20, "finalizer removed", finalized)
			path := got.Status.JobStatus.UpgradeSavepointPath
			if f.stops() != 1 {
				t.Errorf("%d stops, want 1", f.stops())
			}
			if st := f.jobState(before.Status.JobStatus.JobID); st != flink.JobFinished {
				t.Errorf("job %s, want FINISHED", st)
			}
			snaps := f.Snapshots()
			if len(snaps) != 1 || snaps[0].Spec.Savepoint.Path == "" || (path != "" && snaps[0].Spec.Savepoint.Path != path) {
				t.Errorf("snapshots %+v (upgradeSavepointPath %q), want one UPGRADE savepoint", snaps, path)
			}
		})
	}
}

// Without savepoint-on-deletion, a deleted session job's job is
// cancelled before the finalizer goes.
func TestDeletionCancels(t *testing.T) {
	f := newFixture(t)
	f.sessionCluster("session", nil)
	before := f.Deploy(f.sessionJob("job", v1beta1.UpgradeModeSavepoint))
	f.delete("job")
	f.Until("job", 10, "finalizer removed", finalized)
	if st := f.jobState(before.Status.JobStatus.JobID); st != flink.JobCanceled {
		t.Errorf("job %s, want CANCELED", st)
	}
	if f.stops() != 0 || len(f.Snapshots()) != 0 {
		t.Errorf("deletion took a savepoint")
	}
}

// A session job whose cluster does not exist reports it (status.error and a
// Warning event), retries with a growing delay, and deploys once the
// cluster appears; one on an application cluster is refused.
func TestMissingSessionCluster(t *testing.T) {
	f := newFixture(t)
	f.Create(f.sessionJob("job", v1beta1.UpgradeModeStateless))
	var delays []time.Duration
	for range 4 {
		delays = append(delays, f.MustSync("job"))
	}
	got := f.Get("job")
	if !strings.Contains(jobengine.ErrorMessage(got.Status.Error), "Session cluster FlinkDeployment default/session not found") || got.Status.LifecycleState != v1beta1.LifecycleFailed {
		t.Errorf("status %s, want the missing cluster reported", statusString(got))
	}
	if ev := f.Events(); len(ev) != 1 || !strings.Contains(ev[0], "Warning SessionClusterNotReady") {
		t.Errorf("events %v, want one SessionClusterNotReady Warning", ev)
	}
	for i := 1; i < len(delays); i++ {
		if delays[i] <= delays[i-1] {
			t.Errorf("retry delays %v do not grow", delays)
		}
	}
	if n := len(f.jm.Requests()); n != 0 {
		t.Errorf("%d REST calls without a cluster", n)
	}
	f.sessionCluster("session", nil)
	got = f.Until("job", 10, "running", stable)
	if got.Status.Error != "" {
		t.Errorf("error kept: %q", got.Status.Error)
	}

	app := f.sessionCluster("app", nil)
	app.Spec.Job = &v1beta1.JobSpec{JarURI: "local:///opt/flink/usrlib/x.jar"}
	if _, err := f.Client.FlinkV1beta1().FlinkDeployments(ns).Update(f.Ctx, app, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	onApp := f.sessionJob("on-app", v1beta1.UpgradeModeStateless)
	onApp.Spec.DeploymentName = "app"
	f.Create(onApp)
	f.MustSync("on-app")
	if got := f.Get("on-app"); !strings.Contains(jobengine.ErrorMessage(got.Status.Error), "application cluster") || got.Status.JobStatus.JobID != "" {
		t.Errorf("session job on an application cluster: %s", statusString(got))
	}
}

// local:// names a file inside the cluster's image, which the REST API
// cannot run: refused with a message that says so, nothing submitted.
func TestLocalJarRefused(t *testing.T) {
	f := newFixture(t)
	f.sessionCluster("session", nil)
	j := f.sessionJob("job", v1beta1.UpgradeModeStateless)
	j.Spec.Job.JarURI = "local:///opt/flink/usrlib/job.jar"
	f.Create(j)
	for range 3 {
		f.Step("job")
	}
	got := f.Get("job")
	if !strings.Contains(jobengine.ErrorMessage(got.Status.Error), "local://") || got.Status.JobStatus.JobID != "" || len(f.runs()) != 0 {
		t.Errorf("status %s, runs %d: want a clear refusal and nothing submitted", statusString(got), len(f.runs()))
	}
}

// A failing submission (the jar's main() throws) is reported in status
// and retried later, not in a hot loop.
func TestSubmitFailureReported(t *testing.T) {
	f := newFixture(t)
	f.sessionCluster("session", nil)
	j := f.sessionJob("job", v1beta1.UpgradeModeStateless)
	j.Spec.Job.JarURI = f.jars.URL + "/missing.jar"
	f.Create(j)
	f.MustSync("job")
	d := f.MustSync("job")
	got := f.Get("job")
	if !strings.Contains(jobengine.ErrorMessage(got.Status.Error), "fetching the jar") || !strings.Contains(jobengine.ErrorMessage(got.Status.Error), "404") {
		t.Errorf("status error %q, want the failed download", got.Status.Error)
	}
	if d < 30*time.Second {
		t.Errorf("retry after %s, want a pause", d)
	}
}

// spec.deploymentName cannot change once deployed: reported, and the job
// keeps running on its cluster.
func TestDeploymentNameImmutable(t *testing.T) {
	f := newFixture(t)
	f.sessionCluster("session", nil)
	f.sessionCluster("other", nil)
	before := f.Deploy(f.sessionJob("job", v1beta1.UpgradeModeSavepoint))
	f.edit("job", func(s *v1beta1.FlinkSessionJobSpec) { s.DeploymentName = "other" })
	f.Step("job")
	got := f.Get("job")
	if !strings.Contains(jobengine.ErrorMessage(got.Status.Error), "deploymentName can't be changed") || got.Status.JobStatus.JobID != before.Status.JobStatus.JobID ||
		f.stops() != 0 {
		t.Errorf("status %s, stops %d: want the change refused and the job untouched", statusString(got), f.stops())
	}
}

// A manual savepoint nonce creates one MANUAL snapshot of the session job
// (named by the nonce) and records the nonce; nothing restarts.
func TestManualSavepointNonce(t *testing.T) {
	f := newFixture(t)
	f.sessionCluster("session", nil)
	before := f.Deploy(f.sessionJob("job", v1beta1.UpgradeModeSavepoint))
	f.edit("job", func(s *v1beta1.FlinkSessionJobSpec) { s.Job.SavepointTriggerNonce = ptr.To[int64](7) })
	f.Step("job")
	f.Step("job")
	snaps := f.Snapshots()
	if len(snaps) != 1 {
		t.Fatalf("%d snapshots, want 1", len(snaps))
	}
	s := snaps[0]
	if s.Spec.Savepoint == nil || ptr.Deref(s.Spec.Savepoint.AlreadyExists, false) || s.Spec.JobReference.Kind != v1beta1.JobReferenceKindSessionJob ||
		s.Labels[v1beta1.LabelSnapshotTriggerType] != "MANUAL" {
		t.Errorf("snapshot %s %+v labels %v, want a MANUAL savepoint of the session job", s.Name, s.Spec, s.Labels)
	}
	got := f.Get("job")
	var rec reconciledSpec
	if err := json.Unmarshal([]byte(got.Status.ReconciliationStatus.LastReconciledSpec), &rec); err != nil {
		t.Fatal(err)
	}
	if rec.Spec.Job.SavepointTriggerNonce == nil || *rec.Spec.Job.SavepointTriggerNonce != 7 {
		t.Errorf("nonce not recorded: %s", got.Status.ReconciliationStatus.LastReconciledSpec)
	}
	if got.Status.JobStatus.JobID != before.Status.JobStatus.JobID || len(f.runs()) != 1 {
		t.Errorf("a nonce restarted the job")
	}
}

// A session cluster restart loses its jobs (no HA): a stateless job is
// submitted again, a stateful one waits for a manual restore rather than
// starting from empty state.
func TestJobLostByCluster(t *testing.T) {
	for _, mode := range []v1beta1.UpgradeMode{v1beta1.UpgradeModeStateless, v1beta1.UpgradeModeLastState} {
		t.Run(string(mode), func(t *testing.T) {
			f := newFixture(t)
			f.sessionCluster("session", nil)
			before := f.Deploy(f.sessionJob("job", mode))
			f.jm.RemoveJob(before.Status.JobStatus.JobID)
			for range 5 {
				f.Step("job")
			}
			got := f.Get("job")
			if mode == v1beta1.UpgradeModeStateless {
				if !stable(got) || got.Status.JobStatus.JobID == before.Status.JobStatus.JobID || len(f.runs()) != 2 {
					t.Errorf("stateless job not resubmitted: %s", statusString(got))
				}
				return
			}
			if !strings.Contains(jobengine.ErrorMessage(got.Status.Error), manualRestore) || got.Status.LifecycleState != v1beta1.LifecycleFailed || len(f.runs()) != 1 {
				t.Errorf("stateful lost job: %s, %d runs; want manual restore and no submission", statusString(got), len(f.runs()))
			}
		})
	}
}

// finalized: the operator let go of a deleted session job (the fake
// clientset does not remove objects whose finalizers are gone).
func finalized(j *v1beta1.FlinkSessionJob) bool { return len(j.Finalizers) == 0 }

func (f *fixture) delete(name string) {
	f.T.Helper()
	j := f.Get(name)
	now := metav1.NewTime(f.Clock.Now())
	j.DeletionTimestamp = &now
	if _, err := f.Client.FlinkV1beta1().FlinkSessionJobs(ns).Update(f.Ctx, j, metav1.UpdateOptions{}); err != nil {
		f.T.Fatal(err)
	}
}

func itoa(i int) string { return strconv.Itoa(i) }

// A session cluster whose JobManager becomes ready wakes its session jobs
// (and only those); status noise does not.
func TestClusterChangeWakesItsJobs(t *testing.T) {
	f := newFixture(t)
	cluster := f.sessionCluster("session", nil)
	f.sessionCluster("other", nil)
	f.Create(f.sessionJob("a", v1beta1.UpgradeModeStateless))
	f.Create(f.sessionJob("b", v1beta1.UpgradeModeStateless))
	elsewhere := f.sessionJob("c", v1beta1.UpgradeModeStateless)
	elsewhere.Spec.DeploymentName = "other"
	f.Create(elsewhere)
	f.Refresh()

	noise := cluster.DeepCopy()
	noise.ResourceVersion = "2"
	noise.Status.ClusterInfo = map[string]string{"flink-version": "1.20.5"}
	f.ctrl.clusterChanged(cluster, noise)
	if n := f.ctrl.queue.Len(); n != 0 {
		t.Errorf("status noise queued %d keys", n)
	}
	notReady := cluster.DeepCopy()
	notReady.ResourceVersion = "3"
	notReady.Status.JobManagerDeploymentStatus = v1beta1.JobManagerDeploying
	f.ctrl.clusterChanged(cluster, notReady)
	var keys []string
	for f.ctrl.queue.Len() > 0 {
		k, _ := f.ctrl.queue.Get()
		keys = append(keys, k)
		f.ctrl.queue.Done(k)
	}
	if strings.Join(keys, ",") != "default/a,default/b" && strings.Join(keys, ",") != "default/b,default/a" {
		t.Errorf("woke %v, want default/a and default/b", keys)
	}
}

// SessionJobReconcilerTest.testSubmitAndCleanUpWithSavepoint(legacy):
// without the snapshot CRD the deletion savepoint is recorded in
// savepointInfo and upgradeSavepointPath.
func TestDeletionWithSavepointLegacy(t *testing.T) {
	f := newFixture(t)
	f.crdMissing = true
	f.Config[config.KeyJobSavepointOnDeletion] = "true"
	f.Restart()
	f.sessionCluster("session", nil)
	f.Deploy(f.sessionJob("job", v1beta1.UpgradeModeSavepoint))
	f.delete("job")
	got := f.Until("job", 20, "finalizer removed", finalized)
	info := got.Status.JobStatus.SavepointInfo
	if f.stops() != 1 || info == nil || info.LastSavepoint == nil || info.LastSavepoint.Location == "" ||
		info.LastSavepoint.Location != got.Status.JobStatus.UpgradeSavepointPath {
		t.Errorf("stops %d, savepointInfo %+v, upgradeSavepointPath %q: want the deletion savepoint recorded", f.stops(), info, got.Status.JobStatus.UpgradeSavepointPath)
	}
}

// SessionJobReconcilerTest.testTriggerCheckpoint: a checkpoint nonce
// creates one MANUAL checkpoint snapshot of the session job.
func TestManualCheckpointNonce(t *testing.T) {
	f := newFixture(t)
	f.sessionCluster("session", nil)
	f.Deploy(f.sessionJob("job", v1beta1.UpgradeModeSavepoint))
	f.edit("job", func(s *v1beta1.FlinkSessionJobSpec) { s.Job.CheckpointTriggerNonce = ptr.To[int64](3) })
	f.Step("job")
	f.Step("job")
	snaps := f.Snapshots()
	if len(snaps) != 1 || snaps[0].Spec.Checkpoint == nil || snaps[0].Spec.JobReference.Kind != v1beta1.JobReferenceKindSessionJob {
		t.Fatalf("snapshots %+v, want one checkpoint of the session job", snaps)
	}
}

// Periodic savepoints of a session job: one per interval, named by its
// slot, never while one is in flight.
func TestPeriodicSavepoints(t *testing.T) {
	f := newFixture(t)
	f.sessionCluster("session", nil)
	j := f.sessionJob("job", v1beta1.UpgradeModeSavepoint)
	j.Spec.FlinkConfiguration = &v1beta1.Configuration{Raw: []byte(`{"` + config.KeyPeriodicSavepointInterval + `":"1 min"}`)}
	f.Deploy(j)
	for range 12 {
		f.Step("job")
	}
	snaps := f.Snapshots()
	if len(snaps) != 1 || !strings.Contains(snaps[0].Name, "-savepoint-periodic-") {
		t.Fatalf("%d snapshots %v; want one periodic savepoint in flight (none completes without the snapshot controller)", len(snaps), names(snaps))
	}
}

func legacyFixture(t *testing.T) *fixture {
	f := newFixture(t)
	f.crdMissing = true
	f.Restart()
	f.sessionCluster("session", nil)
	f.Deploy(f.sessionJob("job", v1beta1.UpgradeModeSavepoint))
	return f
}

// SessionJobReconcilerTest.testTriggerSavepointLegacyLegacy (and its
// checkpoint twin): without snapshot resources a nonce triggers a legacy
// savepoint or checkpoint whose trigger id is in the status before Flink is
// asked; its completion is recorded in savepointInfo/checkpointInfo with
// the nonce, and the nonce in lastReconciledSpec. Nothing else is stopped.
func TestTriggerSavepointLegacy(t *testing.T) {
	f := legacyFixture(t)
	jobID := f.Get("job").Status.JobStatus.JobID
	f.edit("job", func(s *v1beta1.FlinkSessionJobSpec) {
		s.Job.SavepointTriggerNonce = ptr.To[int64](4)
		s.Job.CheckpointTriggerNonce = ptr.To[int64](5)
	})
	f.MustSync("job")
	js := f.Get("job").Status.JobStatus
	if js.SavepointInfo == nil || js.SavepointInfo.TriggerID == "" || js.SavepointInfo.TriggerType != v1beta1.SnapshotTriggerManual ||
		js.CheckpointInfo == nil || js.CheckpointInfo.TriggerID == "" || js.CheckpointInfo.TriggerType != v1beta1.SnapshotTriggerManual {
		t.Fatalf("after the nonce changes: savepointInfo %+v checkpointInfo %+v; want both manual triggers recorded", js.SavepointInfo, js.CheckpointInfo)
	}
	// The POSTs carried the recorded ids (a repeat after a crash is the
	// same operation to Flink).
	if got := f.jm.RequestsTo(fakejm.RouteSavepointTrigger); len(got) != 1 || !strings.Contains(string(got[0].Body), js.SavepointInfo.TriggerID) {
		t.Fatalf("savepoint triggers %+v, want one carrying %s", got, js.SavepointInfo.TriggerID)
	}
	got := f.Until("job", 10, "legacy snapshots completed", func(j *v1beta1.FlinkSessionJob) bool {
		sp, cp := j.Status.JobStatus.SavepointInfo, j.Status.JobStatus.CheckpointInfo
		return sp.TriggerID == "" && sp.LastSavepoint != nil && cp.TriggerID == "" && cp.LastCheckpoint != nil
	})
	sp, cp := got.Status.JobStatus.SavepointInfo, got.Status.JobStatus.CheckpointInfo
	if sp.LastSavepoint.Location == "" || sp.LastSavepoint.TriggerType != v1beta1.SnapshotTriggerManual || derefInt64(sp.LastSavepoint.TriggerNonce) != 4 || len(sp.SavepointHistory) != 1 {
		t.Errorf("lastSavepoint %+v, history %d; want the manual savepoint of nonce 4", sp.LastSavepoint, len(sp.SavepointHistory))
	}
	if cp.LastCheckpoint.TriggerType != v1beta1.SnapshotTriggerManual || derefInt64(cp.LastCheckpoint.TriggerNonce) != 5 {
		t.Errorf("lastCheckpoint %+v, want the manual checkpoint of nonce 5", cp.LastCheckpoint)
	}
	rec, err := lifecycle.Decode[v1beta1.FlinkSessionJobSpec](got.Status.ReconciliationStatus.LastReconciledSpec)
	if err != nil {
		t.Fatal(err)
	}
	if derefInt64(rec.Spec.Job.SavepointTriggerNonce) != 4 || derefInt64(rec.Spec.Job.CheckpointTriggerNonce) != 5 {
		t.Errorf("recorded nonces %v/%v, want 4/5", rec.Spec.Job.SavepointTriggerNonce, rec.Spec.Job.CheckpointTriggerNonce)
	}
	if len(f.Snapshots()) != 0 || f.stops() != 0 || got.Status.JobStatus.JobID != jobID || got.Status.Error != "" {
		t.Errorf("snapshots %d, stops %d, job %s (was %s), error %q; want legacy snapshots only, the job untouched",
			len(f.Snapshots()), f.stops(), got.Status.JobStatus.JobID, jobID, got.Status.Error)
	}
	for range 3 {
		f.Step("job")
	}
	if n := len(f.jm.RequestsTo(fakejm.RouteSavepointTrigger)); n != 1 {
		t.Errorf("%d savepoint triggers, want 1 (the nonce is handled once)", n)
	}
	warned := 0
	for _, e := range f.Events() {
		if strings.HasPrefix(e, "Warning SnapshotResourcesDisabled ") {
			warned++
		}
	}
	if warned != 1 {
		t.Errorf("%d SnapshotResourcesDisabled events, want 1 however many syncs", warned)
	}
}

// Legacy periodic savepoints of a session job go to its own savepoint
// directory and record lastPeriodicSavepointTimestamp.
func TestPeriodicSavepointsLegacy(t *testing.T) {
	f := newFixture(t)
	f.crdMissing = true
	f.Restart()
	f.sessionCluster("session", nil)
	own := "file:" + filepath.Join(f.Dir, "own-savepoints")
	j := f.sessionJob("job", v1beta1.UpgradeModeSavepoint)
	j.Spec.FlinkConfiguration = &v1beta1.Configuration{Raw: []byte(`{"` + config.KeyPeriodicSavepointInterval + `":"1 min","` +
		config.FlinkSavepointDir + `":"` + own + `"}`)}
	f.Deploy(j)
	got := f.Until("job", 40, "periodic legacy savepoint", func(j *v1beta1.FlinkSessionJob) bool {
		sp := j.Status.JobStatus.SavepointInfo
		return sp != nil && sp.LastSavepoint != nil && sp.LastPeriodicSavepointTimestamp > 0
	})
	if sp := got.Status.JobStatus.SavepointInfo; sp.LastSavepoint.TriggerType != v1beta1.SnapshotTriggerPeriodic || !strings.HasPrefix(sp.LastSavepoint.Location, own) {
		t.Errorf("lastSavepoint %+v, want a periodic one under %s", sp.LastSavepoint, own)
	}
	if len(f.Snapshots()) != 0 {
		t.Errorf("%d snapshot resources in legacy mode", len(f.Snapshots()))
	}
}

// SessionJobReconcilerTest.testJobUpgradeIgnorePendingSavepoint: a spec
// change waits while a legacy savepoint is in flight and goes ahead once it
// completed; with kubernetes.operator.job.upgrade.ignore-pending-savepoint
// in the changed spec it goes ahead at once, dropping the pending one with
// its failure event.
func TestJobUpgradeIgnorePendingSavepoint(t *testing.T) {
	for _, ignore := range []bool{false, true} {
		t.Run(fmt.Sprintf("ignore=%v", ignore), func(t *testing.T) {
			f := legacyFixture(t)
			oldID := f.Get("job").Status.JobStatus.JobID
			f.jm.SetCompletion(1000, 0) // the manual savepoint does not complete yet
			f.edit("job", func(s *v1beta1.FlinkSessionJobSpec) { s.Job.SavepointTriggerNonce = ptr.To[int64](6) })
			f.Step("job")
			f.Step("job")
			manual := f.Get("job").Status.JobStatus.SavepointInfo
			if manual == nil || manual.TriggerType != v1beta1.SnapshotTriggerManual || manual.TriggerID == "" {
				t.Fatalf("no manual savepoint in flight: %+v", manual)
			}
			f.Events()
			f.edit("job", func(s *v1beta1.FlinkSessionJobSpec) {
				s.Job.Parallelism = ptr.To[int32](1)
				if ignore {
					s.FlinkConfiguration = &v1beta1.Configuration{Raw: []byte(`{"` + config.KeyJobUpgradeIgnorePendingSavepoint + `":"true"}`)}
				}
			})
			if !ignore {
				for range 5 {
					f.Step("job")
				}
				j := f.Get("job")
				if j.Status.LifecycleState == v1beta1.LifecycleUpgrading || f.stops() != 0 || j.Status.JobStatus.SavepointInfo.TriggerID != manual.TriggerID {
					t.Fatalf("the upgrade did not wait for the pending savepoint: stops %d, status %s", f.stops(), statusString(j))
				}
			}
			f.jm.SetCompletion(1, 0)
			after := f.Until("job", 30, "upgraded", func(j *v1beta1.FlinkSessionJob) bool {
				return stable(j) && j.Status.JobStatus.JobID != oldID
			})
			info := after.Status.JobStatus.SavepointInfo
			if info == nil || info.LastSavepoint == nil || info.LastSavepoint.TriggerType != v1beta1.SnapshotTriggerUpgrade || info.TriggerID != "" {
				t.Fatalf("savepointInfo %+v, want the upgrade savepoint last", info)
			}
			manualKept := false
			for _, sp := range info.SavepointHistory {
				manualKept = manualKept || sp.TriggerType == v1beta1.SnapshotTriggerManual
			}
			failed := 0
			for _, e := range f.Events() {
				if strings.Contains(e, "Savepoint failed for savepointTriggerNonce: 6") {
					failed++
				}
			}
			switch {
			case ignore && (failed != 1 || manualKept):
				t.Errorf("ignore-pending-savepoint: %d failure events, manual savepoint in history %v; want it dropped with one event", failed, manualKept)
			case !ignore && (failed != 0 || !manualKept):
				t.Errorf("waited: %d failure events, manual savepoint in history %v; want it completed and kept", failed, manualKept)
			}
			if f.stops() != 1 {
				t.Errorf("%d stop-with-savepoint requests, want 1", f.stops())
			}
		})
	}
}

func names(snaps []v1beta1.FlinkStateSnapshot) []string {
	var out []string
	for _, s := range snaps {
		out = append(out, s.Name)
	}
	return out
}

// initialStateSnapshotRef [ours]: a FAILED snapshot submits nothing and
// says why; once it is a COMPLETED savepoint the job is submitted from its
// path, which is recorded as upgradeSavepointPath.
func TestSubmitFromSnapshotRef(t *testing.T) {
	f := newFixture(t)
	f.sessionCluster("session", nil)
	snap := &v1beta1.FlinkStateSnapshot{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "golden"},
		Spec:       v1beta1.FlinkStateSnapshotSpec{Savepoint: &v1beta1.SavepointSpec{}},
		Status:     v1beta1.FlinkStateSnapshotStatus{State: v1beta1.SnapshotFailed, Error: "disk full"},
	}
	if _, err := f.Client.FlinkV1beta1().FlinkStateSnapshots(ns).Create(f.Ctx, snap, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	j := f.sessionJob("job", v1beta1.UpgradeModeSavepoint)
	j.Spec.Job.InitialStateSnapshotRef = &v1beta1.SnapshotReference{Name: "golden"}
	f.Create(j)
	for range 3 {
		f.Step("job")
	}
	got := f.Get("job")
	if !strings.Contains(jobengine.ErrorMessage(got.Status.Error), "FlinkStateSnapshot default/golden is FAILED") || got.Status.JobStatus.JobID != "" || len(f.runs()) != 0 {
		t.Fatalf("FAILED reference: %s, %d runs", statusString(got), len(f.runs()))
	}
	snap, _ = f.Client.FlinkV1beta1().FlinkStateSnapshots(ns).Get(f.Ctx, "golden", metav1.GetOptions{})
	snap.Status = v1beta1.FlinkStateSnapshotStatus{State: v1beta1.SnapshotCompleted, Path: "s3://bucket/savepoints/golden"}
	if _, err := f.Client.FlinkV1beta1().FlinkStateSnapshots(ns).UpdateStatus(f.Ctx, snap, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	got = f.Until("job", 10, "running", stable)
	if runs := f.runs(); len(runs) != 1 || runs[0].SavepointPath != "s3://bucket/savepoints/golden" ||
		got.Status.JobStatus.UpgradeSavepointPath != "s3://bucket/savepoints/golden" {
		t.Errorf("runs %+v, status %s: want one submission from the snapshot", runs, statusString(got))
	}
}

// A session job deleted while its session cluster is being deleted (a
// namespace deletion) still cancels its job through the cluster, which the
// FlinkDeployment controller keeps until its session jobs are gone; nothing
// new is submitted to a cluster on its way out.
func TestDeletionWhileClusterIsDeleted(t *testing.T) {
	f := newFixture(t)
	cluster := f.sessionCluster("session", nil)
	before := f.Deploy(f.sessionJob("job", v1beta1.UpgradeModeStateless))
	now := metav1.NewTime(f.Clock.Now())
	cluster, _ = f.Client.FlinkV1beta1().FlinkDeployments(ns).Get(f.Ctx, cluster.Name, metav1.GetOptions{})
	cluster.DeletionTimestamp = &now
	if _, err := f.Client.FlinkV1beta1().FlinkDeployments(ns).Update(f.Ctx, cluster, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.Step("job")
	if got := f.Get("job"); !strings.Contains(jobengine.ErrorMessage(got.Status.Error), "is being deleted") {
		t.Errorf("status %s, want the cluster's deletion reported", statusString(got))
	}
	f.delete("job")
	f.Until("job", 10, "finalizer removed", finalized)
	if st := f.jobState(before.Status.JobStatus.JobID); st != flink.JobCanceled {
		t.Errorf("job %s, want CANCELED through the cluster being deleted", st)
	}
}

func derefInt64(p *int64) int64 {
	if p == nil {
		return 0
	}
	return *p
}

// TestLastStateUpgradeRecordsCancelling: the cancel of a last-state
// upgrade is recorded as jobStatus.state CANCELLING in the status write
// that queues it, as upstream does (its test_sessionjob_operations.sh waits
// for it), and the record stays while Flink still reports the job running
// (here its cancel fails): it is never overwritten with RUNNING. Once the
// job has ended, the new one is submitted from its checkpoint.
func TestLastStateUpgradeRecordsCancelling(t *testing.T) {
	f := newFixture(t)
	f.sessionCluster("session", nil)
	before := f.Deploy(f.sessionJob("job", v1beta1.UpgradeModeLastState))
	oldID := before.Status.JobStatus.JobID
	_, cp, err := f.jm.CompleteCheckpoint(oldID)
	if err != nil {
		t.Fatal(err)
	}
	f.Events()
	remove := f.jm.InjectFault(fakejm.Fault{Route: fakejm.RouteJobCancel, Status: http.StatusServiceUnavailable})
	f.edit("job", func(s *v1beta1.FlinkSessionJobSpec) { s.Job.Args = nil })
	f.Until("job", 10, "cancelling", func(j *v1beta1.FlinkSessionJob) bool {
		return j.Status.JobStatus.State == v1beta1.JobStatusCancelling
	})
	for range 3 {
		f.Step("job")
		if got := f.Get("job"); got.Status.JobStatus.State != v1beta1.JobStatusCancelling || got.Status.JobStatus.JobID != oldID {
			t.Fatalf("while the cancel is pending: %s, want CANCELLING of %s", statusString(got), oldID)
		}
	}
	if st := f.jobState(oldID); st != flink.JobRunning {
		t.Fatalf("old job %s, want RUNNING (its cancel fails)", st)
	}
	remove()
	after := f.Until("job", 20, "upgraded", func(j *v1beta1.FlinkSessionJob) bool {
		return stable(j) && j.Status.JobStatus.JobID != oldID
	})
	if runs := f.runs(); runs[len(runs)-1].SavepointPath != cp {
		t.Errorf("new job from %q, want the checkpoint %s", runs[len(runs)-1].SavepointPath, cp)
	}
	events := f.Events()
	for _, want := range []string{"Job status changed from RUNNING to CANCELLING", "Job status changed from CANCELLING to CANCELED"} {
		if !hasEvent(events, want) {
			t.Errorf("no event %q in %q", want, events)
		}
	}
	if after.Status.JobStatus.State != v1beta1.JobStatusRunning {
		t.Errorf("after the upgrade: %s", statusString(after))
	}
}
