package sessionjob

import (
	"testing"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/config"
)

// kubernetes.operator.job.restart.failed applies to session jobs too
// (upstream's AbstractJobReconciler): a FAILED job is submitted again, with
// the same spec, from its latest checkpoint; off by default.
func TestRestartFailedSessionJob(t *testing.T) {
	for _, on := range []bool{false, true} {
		t.Run(map[bool]string{false: "default off", true: "on"}[on], func(t *testing.T) {
			f := newFixture(t)
			f.sessionCluster("session", nil)
			j := f.sessionJob("job", v1beta1.UpgradeModeSavepoint)
			if on {
				j.Spec.FlinkConfiguration = &v1beta1.Configuration{Raw: []byte(`{"` + config.KeyJobRestartFailed + `":"true"}`)}
			}
			before := f.Deploy(j)
			old := before.Status.JobStatus.JobID
			if _, _, err := f.jm.CompleteCheckpoint(old); err != nil {
				t.Fatal(err)
			}
			_, latest, err := f.jm.CompleteCheckpoint(old)
			if err != nil {
				t.Fatal(err)
			}
			f.Events()
			if err := f.jm.FailJob(old, "java.lang.RuntimeException", "boom"); err != nil {
				t.Fatal(err)
			}
			if !on {
				for range 5 {
					f.Step("job")
				}
				if got := f.Get("job"); got.Status.JobStatus.State != v1beta1.JobStatusFailed || len(f.runs()) != 1 {
					t.Errorf("FAILED job restarted without the option: %s, %d runs", statusString(got), len(f.runs()))
				}
				return
			}
			after := f.Until("job", 20, "restarted", func(j *v1beta1.FlinkSessionJob) bool {
				return stable(j) && j.Status.JobStatus.JobID != old
			})
			runs := f.runs()
			if len(runs) != 2 || runs[1].SavepointPath != latest || after.Status.JobStatus.UpgradeSavepointPath != latest {
				t.Errorf("runs %+v, status %s; want a second run from %s", runs, statusString(after), latest)
			}
			if f.stops() != 0 {
				t.Errorf("a stop-with-savepoint of the failed job")
			}
			if ev := f.Events(); !hasEvent(ev, "Normal Submit Job "+old+" FAILED; restarting it from "+latest) {
				t.Errorf("events %q", ev)
			}
		})
	}
}
