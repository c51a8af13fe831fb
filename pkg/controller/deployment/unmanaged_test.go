package deployment

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/config"
	"github.com/flinkops/flink-operator/pkg/controller/jobengine"
	"github.com/flinkops/flink-operator/pkg/flink"
	"github.com/flinkops/flink-operator/pkg/flink/fakejm"
)

// sessionCluster deploys a session cluster (conf: extra Flink
// configuration) and waits for its JobManager to answer.
func (f *fixture) sessionCluster(name string, conf ...string) {
	f.T.Helper()
	session := f.application(name, v1beta1.UpgradeModeStateless)
	session.Spec.Job = nil
	setConf(&session.Spec, conf...)
	f.Create(session)
	f.Until(name, 10, "ready", func(d *v1beta1.FlinkDeployment) bool {
		return d.Status.JobManagerDeploymentStatus == v1beta1.JobManagerReady
	})
}

// kubernetes.operator.session.deletion.block-on-unmanaged-jobs (default
// true, as upstream): a deleted session cluster is kept while it runs jobs
// no FlinkSessionJob manages (submitted with the CLI, say), with the reason
// in status.error and one Cleanup Warning, looked at again after the
// reconcile interval; it goes once they have ended. With the option false,
// or when the JobManager cannot be asked (upstream), it goes at once.
func TestSessionClusterDeletionUnmanagedJobs(t *testing.T) {
	for _, tc := range []struct {
		name        string
		conf        []string
		jobs        []flink.JobStatus // jobs submitted to the cluster by other means
		unreachable bool
		wantKept    bool
	}{
		{name: "default, a running job", jobs: []flink.JobStatus{flink.JobRunning}, wantKept: true},
		{name: "default, a restarting and a finished job", jobs: []flink.JobStatus{flink.JobRestarting, flink.JobFinished}, wantKept: true},
		{name: "default, only ended jobs", jobs: []flink.JobStatus{flink.JobFinished, flink.JobCanceled, flink.JobFailed}},
		{name: "default, no jobs"},
		{name: "option false, a running job", conf: []string{config.KeySessionDeletionBlockOnUnmanagedJobs, "false"}, jobs: []flink.JobStatus{flink.JobRunning}},
		{name: "JobManager not answering", jobs: []flink.JobStatus{flink.JobRunning}, unreachable: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			f.sessionCluster("session", tc.conf...)
			jm := f.jm("session")
			var running []string
			for _, st := range tc.jobs {
				id := jm.MustAddJob(fakejm.JobSpec{})
				if st != flink.JobRunning {
					if err := jm.SetJobState(id, st); err != nil {
						t.Fatal(err)
					}
				}
				if !st.IsGloballyTerminal() {
					running = append(running, id)
				}
			}
			if tc.unreachable {
				jm.InjectFault(fakejm.Fault{Status: 503})
			}
			f.Events()
			f.markDeleted("session")
			var requeue time.Duration
			for range 3 {
				requeue = f.MustSync("session")
			}
			got := f.Get("session")
			if kept := !finalized(got); kept != tc.wantKept {
				t.Fatalf("kept %v, want %v: %s", kept, tc.wantKept, statusString(got))
			}
			if !tc.wantKept {
				return
			}
			for _, id := range running {
				if !strings.Contains(jobengine.ErrorMessage(got.Status.Error), id) || !strings.Contains(jobengine.ErrorMessage(got.Status.Error), "no FlinkSessionJob manages") {
					t.Errorf("status.error %q does not name job %s", got.Status.Error, id)
				}
			}
			if requeue != time.Minute {
				t.Errorf("requeue after %v, want the reconcile interval", requeue)
			}
			if ev := f.Events(); len(ev) != 1 || !strings.HasPrefix(ev[0], "Warning Cleanup ") {
				t.Errorf("events %v, want one Cleanup Warning", ev)
			}
			if d := f.jmDeployment("session"); d.DeletionTimestamp != nil {
				t.Errorf("JobManager Deployment deleted while held")
			}
			// The jobs end (cancelled through the CLI): the cluster goes.
			for _, id := range running {
				if err := jm.SetJobState(id, flink.JobCanceled); err != nil {
					t.Fatal(err)
				}
			}
			f.Step("session")
			if got := f.Get("session"); !finalized(got) {
				t.Errorf("kept after its jobs ended: %s", statusString(got))
			}
		})
	}
}

// FlinkSessionJobs hold the cluster first (their deletion stops their
// jobs); once they are gone, the jobs left are the unmanaged ones.
func TestSessionClusterDeletionSessionJobsThenUnmanaged(t *testing.T) {
	f := newFixture(t)
	f.sessionCluster("session")
	cli := f.jm("session").MustAddJob(fakejm.JobSpec{})
	sj := &v1beta1.FlinkSessionJob{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "etl"},
		Spec: v1beta1.FlinkSessionJobSpec{DeploymentName: "session", Job: &v1beta1.JobSpec{JarURI: "https://x/etl.jar"}}}
	if _, err := f.Client.FlinkV1beta1().FlinkSessionJobs(ns).Create(f.Ctx, sj, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.markDeleted("session")
	f.Step("session")
	if got := f.Get("session"); finalized(got) || !strings.Contains(jobengine.ErrorMessage(got.Status.Error), "FlinkSessionJobs run on it: etl") {
		t.Fatalf("%s: want it held by the session job", statusString(got))
	}
	if err := f.Client.FlinkV1beta1().FlinkSessionJobs(ns).Delete(f.Ctx, "etl", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	f.Step("session")
	if got := f.Get("session"); finalized(got) || !strings.Contains(jobengine.ErrorMessage(got.Status.Error), cli) {
		t.Fatalf("%s: want it held by the unmanaged job %s", statusString(got), cli)
	}
}
