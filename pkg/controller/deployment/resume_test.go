package deployment

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/config"
	"github.com/flinkops/flink-operator/pkg/controller/jobengine"
	"github.com/flinkops/flink-operator/pkg/lifecycle"
	"github.com/flinkops/flink-operator/pkg/reasons"
)

// suspendLegacy deploys a savepoint-mode job without snapshot resources (as
// upstream's e2e data does), suspends it and returns the suspend
// savepoint's path.
func (f *fixture) suspendLegacy(name string, edit func(*v1beta1.FlinkDeployment)) string {
	f.T.Helper()
	d := f.application(name, v1beta1.UpgradeModeSavepoint)
	setConf(&d.Spec, config.KeySnapshotResourceEnabled, "false")
	if edit != nil {
		edit(d)
	}
	f.Deploy(d)
	f.edit(name, func(s *v1beta1.FlinkDeploymentSpec) { s.Job.State = v1beta1.JobStateSuspended })
	suspended := f.Until(name, 30, "suspended", func(d *v1beta1.FlinkDeployment) bool {
		return d.Status.LifecycleState == v1beta1.LifecycleSuspended
	})
	path := suspended.Status.JobStatus.UpgradeSavepointPath
	if path == "" {
		f.T.Fatalf("suspended without a savepoint: %s", statusString(suspended))
	}
	return path
}

// editStatus changes the status as `kubectl patch --subresource status`
// would, then restarts the operator (upstream's e2e deletes its pod "to
// clear CR state cache").
func (f *fixture) editStatus(name string, change func(*v1beta1.FlinkDeploymentStatus)) {
	f.T.Helper()
	d := f.Get(name)
	change(&d.Status)
	if _, err := f.Client.FlinkV1beta1().FlinkDeployments(ns).UpdateStatus(f.Ctx, d, metav1.UpdateOptions{}); err != nil {
		f.T.Fatal(err)
	}
	f.Restart()
}

// TestResumeFromLegacyLastSavepoint is upstream's test_snapshot.sh "upgrade
// by setting legacy field": upgradeSavepointPath removed and the suspend
// savepoint set as savepointInfo.lastSavepoint (where upstream releases
// before upgradeSavepointPath kept it), then the job resumed. It must
// restore from that savepoint, never start empty.
func TestResumeFromLegacyLastSavepoint(t *testing.T) {
	f := newFixture(t)
	path := f.suspendLegacy("job", nil)
	f.editStatus("job", func(st *v1beta1.FlinkDeploymentStatus) {
		st.JobStatus.UpgradeSavepointPath = ""
		st.JobStatus.SavepointInfo.LastSavepoint = &v1beta1.Savepoint{Location: path, TimeStamp: 0, TriggerNonce: new(int64(0))}
	})
	f.edit("job", func(s *v1beta1.FlinkDeploymentSpec) { s.Job.State = v1beta1.JobStateRunning })
	resumed := f.Until("job", 30, "resumed", upgradedTo(3))
	if restored, meta := f.restoredFrom("job"); restored != path || !meta.Savepoint {
		t.Errorf("resumed from %q (%+v), want the legacy lastSavepoint %s", restored, meta, path)
	}
	if resumed.Status.JobStatus.UpgradeSavepointPath != path {
		t.Errorf("upgradeSavepointPath %q, want %s recorded with the resume", resumed.Status.JobStatus.UpgradeSavepointPath, path)
	}
}

// TestResumeWithoutRestorePoint: a job that had state (here its savepoint
// history says so) but whose status names no restore point stays
// suspended with a manual-restore error; the spec's initialSavepointPath
// or allowNonRestoredState then says where it starts.
func TestResumeWithoutRestorePoint(t *testing.T) {
	for _, tc := range []struct {
		name string
		// fix is the user's answer to the error; want the restore path.
		fix  func(*v1beta1.FlinkDeploymentSpec)
		want string
	}{
		{"initialSavepointPath", func(s *v1beta1.FlinkDeploymentSpec) {
			s.Job.InitialSavepointPath = "s3://bucket/savepoints/savepoint-chosen"
		}, "s3://bucket/savepoints/savepoint-chosen"},
		{"allowNonRestoredState", func(s *v1beta1.FlinkDeploymentSpec) {
			s.Job.AllowNonRestoredState = new(true)
		}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			f.suspendLegacy("job", nil)
			f.editStatus("job", func(st *v1beta1.FlinkDeploymentStatus) {
				st.JobStatus.UpgradeSavepointPath = ""
				st.JobStatus.SavepointInfo.LastSavepoint = nil
			})
			f.edit("job", func(s *v1beta1.FlinkDeploymentSpec) { s.Job.State = v1beta1.JobStateRunning })
			for range 5 {
				f.Step("job")
			}
			got := f.Get("job")
			msg := jobengine.ErrorMessage(got.Status.Error)
			if got.Status.JobStatus.State != v1beta1.JobStatusSuspended || f.jms["job"] != nil ||
				!strings.Contains(msg, lifecycle.ManualRestore) || !strings.Contains(msg, "savepointHistory") {
				t.Fatalf("resumed with no restore point: %s", statusString(got))
			}
			if !hasEvent(f.Events(), "Warning", reasons.ReasonUpgradeFailed) {
				t.Errorf("no UpgradeFailed event: %v", f.Events())
			}

			f.edit("job", tc.fix)
			resumed := f.Until("job", 30, "resumed", upgradedTo(4))
			if restored := f.jm("job").restore; restored != tc.want {
				t.Errorf("resumed from %q, want %q", restored, tc.want)
			}
			if resumed.Status.Error != "" {
				t.Errorf("error left: %q", resumed.Status.Error)
			}
		})
	}
}

// TestResumeOfJobWithoutStateStartsEmpty: a job stopped before it had any
// state (nothing recorded anywhere) resumes from empty state as before.
func TestResumeOfJobWithoutStateStartsEmpty(t *testing.T) {
	f := newFixture(t)
	f.suspendLegacy("job", nil)
	f.editStatus("job", func(st *v1beta1.FlinkDeploymentStatus) {
		st.JobStatus.UpgradeSavepointPath = ""
		st.JobStatus.SavepointInfo = nil
	})
	f.edit("job", func(s *v1beta1.FlinkDeploymentSpec) { s.Job.State = v1beta1.JobStateRunning })
	f.Until("job", 30, "resumed", upgradedTo(3))
	if restored, _ := f.restoredFrom("job"); restored != "" {
		t.Errorf("resumed from %q, want empty state", restored)
	}
}
