package sessionjob

import (
	"maps"
	"strings"
	"testing"

	"k8s.io/utils/ptr"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/config"
	"github.com/flinkops/flink-operator/pkg/flink"
)

// TestSubmittedWithJobDefaults: a session job is submitted with upstream's
// job-level defaults (FlinkConfigBuilder.applyJobConfig), as an
// application's cluster gets them, where neither the job nor its session
// cluster sets them.
func TestSubmittedWithJobDefaults(t *testing.T) {
	retention := config.FlinkCheckpointRetention
	for _, tc := range []struct {
		name    string
		mode    v1beta1.UpgradeMode
		job     string            // the session job's flinkConfiguration
		cluster map[string]string // extra session cluster configuration
		want    map[string]string
	}{
		{name: "stateless", mode: v1beta1.UpgradeModeStateless,
			want: map[string]string{retention: config.FlinkRetainOnCancellation, "pipeline.name": "job"}},
		{name: "last-state adds a checkpoint interval", mode: v1beta1.UpgradeModeLastState,
			want: map[string]string{retention: config.FlinkRetainOnCancellation, "pipeline.name": "job", "execution.checkpointing.interval": "5 min"}},
		{name: "the job's own settings win", mode: v1beta1.UpgradeModeLastState,
			job:  `{"` + retention + `":"DELETE_ON_CANCELLATION","pipeline.name":"mine","execution.checkpointing.interval":"10 s"}`,
			want: map[string]string{retention: "DELETE_ON_CANCELLATION", "pipeline.name": "mine", "execution.checkpointing.interval": "10 s"}},
		{name: "the session cluster's settings are not overridden", mode: v1beta1.UpgradeModeStateless,
			cluster: map[string]string{retention: "DELETE_ON_CANCELLATION", "pipeline.name": "shared"},
			want:    map[string]string{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			var conf map[string]string
			if tc.cluster != nil {
				conf = map[string]string{"execution.checkpointing.dir": "file:///tmp/cp", "execution.checkpointing.savepoint-dir": "file:///tmp/sp"}
				maps.Copy(conf, tc.cluster)
			}
			f.sessionCluster("session", conf)
			j := f.sessionJob("job", tc.mode)
			if tc.job != "" {
				j.Spec.FlinkConfiguration = &v1beta1.Configuration{Raw: []byte(tc.job)}
			}
			f.Deploy(j)
			runs := f.runs()
			if len(runs) != 1 || !maps.Equal(runs[0].FlinkConfiguration, tc.want) && !(len(tc.want) == 0 && len(runs[0].FlinkConfiguration) == 0) {
				t.Errorf("submitted with %v, want %v", runs[len(runs)-1].FlinkConfiguration, tc.want)
			}
		})
	}
}

// TestSavepointFallbackKeepsTheCheckpoint is upstream's
// test_sessionjob_operations.sh on Flink 2.3: the savepoint upgrade's
// stop-with-savepoint fails, the operator falls back to the job's last
// checkpoint by cancelling it. The cancel must not delete that checkpoint
// (Flink's default retention does): the new job restores from it.
func TestSavepointFallbackKeepsTheCheckpoint(t *testing.T) {
	f := newFixture(t)
	f.sessionCluster("session", nil)
	before := f.Deploy(f.sessionJob("job", v1beta1.UpgradeModeSavepoint))
	oldID := before.Status.JobStatus.JobID
	_, cp, err := f.jm.CompleteCheckpoint(oldID)
	if err != nil {
		t.Fatal(err)
	}
	f.jm.FailSavepoints("", "org.apache.flink.util.FlinkException: FailoverRegion is restarting")
	f.edit("job", func(s *v1beta1.FlinkSessionJobSpec) { s.Job.Parallelism = ptr.To[int32](1) })
	after := f.Until("job", 30, "upgraded by the fallback", func(j *v1beta1.FlinkSessionJob) bool {
		return stable(j) && j.Status.JobStatus.JobID != oldID
	})
	if after.Status.JobStatus.UpgradeSavepointPath != cp {
		t.Errorf("upgraded from %q, want the checkpoint %s", after.Status.JobStatus.UpgradeSavepointPath, cp)
	}
	if st := f.jobState(oldID); st != flink.JobCanceled {
		t.Errorf("old job %s, want CANCELED", st)
	}
	if st := f.jobState(after.Status.JobStatus.JobID); st != flink.JobRunning {
		t.Errorf("new job %s, want RUNNING from %s", st, cp)
	}
}

// TestNoCancelThatDeletesTheRestorePoint: a running session job whose
// checkpoints are not retained on cancellation (its own configuration says
// so, as for a job submitted before the operator set the default) is never
// cancelled to fall back to its last checkpoint: in savepoint mode the
// failed savepoint is retried and the job keeps running; in last-state
// mode it is stopped with a savepoint instead of a cancel.
func TestNoCancelThatDeletesTheRestorePoint(t *testing.T) {
	for _, mode := range []v1beta1.UpgradeMode{v1beta1.UpgradeModeSavepoint, v1beta1.UpgradeModeLastState} {
		t.Run(string(mode), func(t *testing.T) {
			f := newFixture(t)
			f.sessionCluster("session", nil)
			j := f.sessionJob("job", mode)
			j.Spec.FlinkConfiguration = &v1beta1.Configuration{Raw: []byte(`{"` + config.FlinkCheckpointRetention + `":"NO_EXTERNALIZED_CHECKPOINTS"}`)}
			before := f.Deploy(j)
			oldID := before.Status.JobStatus.JobID
			if _, _, err := f.jm.CompleteCheckpoint(oldID); err != nil {
				t.Fatal(err)
			}
			if mode == v1beta1.UpgradeModeSavepoint {
				f.jm.FailSavepoints("", "org.apache.flink.util.FlinkException: FailoverRegion is restarting")
			}
			f.edit("job", func(s *v1beta1.FlinkSessionJobSpec) { s.Job.Parallelism = ptr.To[int32](1) })
			if mode == v1beta1.UpgradeModeSavepoint {
				for range 6 {
					f.Step("job")
				}
				if st := f.jobState(oldID); st != flink.JobRunning {
					t.Fatalf("old job %s after failed savepoints; a cancel would have deleted its checkpoints: %s", st, statusString(f.Get("job")))
				}
				if !hasEvent(f.Events(), "because the last-state fallback would lose the job's state: a cancel would delete its checkpoints") {
					t.Errorf("no SavepointError saying why there is no fallback: %v", f.Events())
				}
				f.jm.FailSavepoints("", "")
			}
			after := f.Until("job", 40, "upgraded with a savepoint", func(j *v1beta1.FlinkSessionJob) bool {
				return stable(j) && j.Status.JobStatus.JobID != oldID
			})
			if st := f.jobState(oldID); st != flink.JobFinished {
				t.Errorf("old job %s, want FINISHED by stop-with-savepoint", st)
			}
			if p := after.Status.JobStatus.UpgradeSavepointPath; !strings.Contains(p, "savepoint-") {
				t.Errorf("upgraded from %q, want a savepoint", p)
			}
			if st := f.jobState(after.Status.JobStatus.JobID); st != flink.JobRunning {
				t.Errorf("new job %s", st)
			}
		})
	}
}
