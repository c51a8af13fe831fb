package sessionjob

import (
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8stesting "k8s.io/client-go/testing"
	"sigs.k8s.io/yaml"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/controller/controllertest"
	"github.com/flinkops/flink-operator/pkg/controller/jobengine"
	"github.com/flinkops/flink-operator/pkg/flink/fakejm"
	"github.com/flinkops/flink-operator/pkg/reasons"
)

// recordedSessions are, by upstream release (1.15.0 and 1.10.0 at least),
// the session cluster and FlinkSessionJob upstream's operator left
// running, recorded from real runs (the deployment controller's
// testdata/upstream-<release>; SOURCES.md there says how).
func recordedSessions(t *testing.T) map[string]string {
	return controllertest.RecordedUpstream(t, "../deployment/testdata", "native-session-with-sessionjob")
}

// TestTakeOverRecordedSessionJob: the FlinkSessionJob upstream submitted,
// on its session cluster, taken over: the job upstream submitted (its job
// id, running on the cluster) is kept, no spec change starts an upgrade
// (upstream recorded upgradeMode stateless for the first deployment where
// the spec says savepoint), nothing is submitted, cancelled or stopped, no
// error is recorded, and the status reports what upstream reported; for
// every upstream release recorded (subtests by release).
func TestTakeOverRecordedSessionJob(t *testing.T) {
	recs := recordedSessions(t)
	for _, release := range slices.Sorted(maps.Keys(recs)) {
		t.Run(release, func(t *testing.T) { takeOverRecordedSessionJob(t, recs[release]) })
	}
}

func takeOverRecordedSessionJob(t *testing.T, recordedSession string) {
	f := newFixture(t)
	read := func(file string, into any) {
		t.Helper()
		raw, err := os.ReadFile(filepath.Join(recordedSession, file))
		if err != nil {
			t.Fatal(err)
		}
		if err := yaml.Unmarshal(raw, into); err != nil {
			t.Fatal(err)
		}
	}
	cluster := &v1beta1.FlinkDeployment{}
	read("flinkdeployment-session.yaml", cluster)
	job := &v1beta1.FlinkSessionJob{}
	read("flinksessionjob-session-job.yaml", job)
	for _, o := range []metav1.Object{cluster, job} {
		o.SetNamespace(ns)
		o.SetResourceVersion("")
	}
	if _, err := f.Client.FlinkV1beta1().FlinkDeployments(ns).Create(f.Ctx, cluster, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Client.FlinkV1beta1().FlinkSessionJobs(ns).Create(f.Ctx, job, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The session cluster runs the job upstream submitted.
	jobID := job.Status.JobStatus.JobID
	f.jm.MustAddJob(fakejm.JobSpec{ID: jobID, Name: job.Status.JobStatus.JobName})
	f.Restart()
	f.Events()
	up := job
	for i := range 6 {
		when := "sync " + strconv.Itoa(i+1)
		f.Client.ClearActions()
		f.jm.ResetRequests()
		f.Step(job.Name)
		for _, a := range f.Client.Actions() {
			if u, ok := a.(k8stesting.UpdateAction); ok && a.GetSubresource() == "" && a.GetResource().Resource == "flinksessionjobs" {
				t.Fatalf("%s: spec of %s written", when, u.GetObject().(metav1.Object).GetName())
			}
		}
		for _, r := range f.jm.Requests() {
			if r.Method != "GET" {
				t.Fatalf("%s: the takeover sent %s %s to the session cluster", when, r.Method, r.Path)
			}
		}
		for _, e := range f.Events() {
			for _, reason := range []string{reasons.ReasonSpecChanged, reasons.ReasonUpgradeFailed, reasons.ReasonSubmit} {
				if strings.Contains(e, " "+reason+" ") {
					t.Fatalf("%s: event %q", when, e)
				}
			}
		}
		got := f.Get(job.Name)
		if msg := jobengine.ErrorMessage(got.Status.Error); msg != "" {
			t.Fatalf("%s: status.error %q", when, msg)
		}
		rs, urs := got.Status.ReconciliationStatus, up.Status.ReconciliationStatus
		js, ujs := got.Status.JobStatus, up.Status.JobStatus
		if rs.State != urs.State || rs.LastReconciledSpec != urs.LastReconciledSpec || got.Status.LifecycleState != up.Status.LifecycleState ||
			js.JobID != ujs.JobID || js.State != ujs.State {
			t.Fatalf("%s: %s; upstream reported %s %s, job %s %s", when, statusString(got), up.Status.LifecycleState, urs.State, ujs.JobID, ujs.State)
		}
	}
	if ids := f.jm.JobIDs(); len(ids) != 1 || ids[0] != jobID {
		t.Errorf("jobs on the session cluster %v, want only upstream's %s", ids, jobID)
	}
}
