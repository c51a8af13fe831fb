package jobengine

import (
	"context"
	"testing"
	"time"

	"k8s.io/utils/ptr"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/config"
	"github.com/flinkops/flink-operator/pkg/flink"
	"github.com/flinkops/flink-operator/pkg/lifecycle"
)

// canRun is a Driver whose job can run and be rolled back (as a
// FlinkDeployment's); nothing else is called.
type canRun[S Spec[S]] struct{ Driver[S] }

func (canRun[S]) CanRun() bool            { return true }
func (canRun[S]) RollbackSupported() bool { return true }

// noRollback is a Driver whose job can run but is never rolled back (as a
// FlinkSessionJob's).
type noRollback[S Spec[S]] struct{ canRun[S] }

func (noRollback[S]) RollbackSupported() bool { return false }

func encode[S Spec[S]](t *testing.T, spec S) string {
	t.Helper()
	s, err := lifecycle.Encode(spec, false)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func appSpec(image string) v1beta1.FlinkDeploymentSpec {
	return v1beta1.FlinkDeploymentSpec{Image: image, FlinkVersion: v1beta1.FlinkVersion1_20,
		Job: &v1beta1.JobSpec{JarURI: "local:///job.jar", UpgradeMode: v1beta1.UpgradeModeSavepoint, State: v1beta1.JobStateRunning}}
}

// deploymentState is a sync of a FlinkDeployment whose spec is current,
// with reconciliationStatus rs, at now.
func deploymentState(t *testing.T, current v1beta1.FlinkDeploymentSpec, rs v1beta1.ReconciliationStatus, cfg config.Config) *State[*v1beta1.FlinkDeployment, v1beta1.FlinkDeploymentSpec] {
	t.Helper()
	d := &v1beta1.FlinkDeployment{Spec: current}
	d.Name, d.Namespace, d.Generation = "job", "ns", 2
	d.Status.ReconciliationStatus = rs
	d.Status.JobStatus = v1beta1.JobStatus{JobID: "j1", State: v1beta1.JobStatusReconciling}
	e := &Engine[*v1beta1.FlinkDeployment, v1beta1.FlinkDeploymentSpec]{}
	s, err := e.NewState(context.Background(), "ns/job", d, now)
	if err != nil {
		t.Fatal(err)
	}
	s.Cfg = cfg
	return s
}

// TestRollbackDue covers upstream's shouldRollBack conditions.
func TestRollbackDue(t *testing.T) {
	good, bad := appSpec("flink:good"), appSpec("flink:bad")
	suspended := appSpec("flink:good")
	suspended.Job.State = v1beta1.JobStateSuspended
	otherVersion := appSpec("flink:good")
	otherVersion.FlinkVersion = v1beta1.FlinkVersion1_19
	on := config.Config{config.KeyDeploymentRollbackEnabled: "true", config.KeyDeploymentReadinessTimeout: "1 min"}
	off := config.Config{config.KeyDeploymentRollbackEnabled: "false", config.KeyDeploymentReadinessTimeout: "1 min"}
	late, early := now.Add(-2*time.Minute).UnixMilli(), now.Add(-30*time.Second).UnixMilli()
	rs := func(state v1beta1.ReconciliationState, stable v1beta1.FlinkDeploymentSpec, ts int64) v1beta1.ReconciliationStatus {
		return v1beta1.ReconciliationStatus{State: state, LastReconciledSpec: encode(t, bad), LastStableSpec: encode(t, stable), ReconciliationTimestamp: ts}
	}
	for _, tc := range []struct {
		name    string
		rs      v1beta1.ReconciliationStatus
		cfg     config.Config
		running bool
		want    bool
	}{
		{"due", rs(v1beta1.ReconciliationDeployed, good, late), on, false, true},
		{"off", rs(v1beta1.ReconciliationDeployed, good, late), off, false, false},
		{"off by default", rs(v1beta1.ReconciliationDeployed, good, late), config.Defaults(), false, false},
		{"before the timeout", rs(v1beta1.ReconciliationDeployed, good, early), on, false, false},
		{"running now", rs(v1beta1.ReconciliationDeployed, good, late), on, true, false},
		{"stable", v1beta1.ReconciliationStatus{State: v1beta1.ReconciliationDeployed, LastReconciledSpec: encode(t, bad), LastStableSpec: encode(t, bad), ReconciliationTimestamp: late}, on, false, false},
		{"nothing stable", v1beta1.ReconciliationStatus{State: v1beta1.ReconciliationDeployed, LastReconciledSpec: encode(t, bad), ReconciliationTimestamp: late}, on, false, false},
		{"to a suspended job", rs(v1beta1.ReconciliationDeployed, suspended, late), on, false, false},
		{"across a Flink version change", rs(v1beta1.ReconciliationDeployed, otherVersion, late), on, false, false},
		{"upgrading", rs(v1beta1.ReconciliationUpgrading, good, late), on, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := deploymentState(t, bad, tc.rs, tc.cfg)
			if tc.running {
				s.Client, _ = flink.New(flink.Config{BaseURL: "http://127.0.0.1:1", Version: flink.V1_20})
				s.JobStatus().State = v1beta1.JobStatusRunning
			}
			if got := s.rollbackDue(canRun[v1beta1.FlinkDeploymentSpec]{}); got != tc.want {
				t.Errorf("rollbackDue = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestRolledBackState: while ROLLED_BACK the stable spec is Recorded and
// the spec rolled back from is what the resource's spec is compared with;
// setting the spec back to the stable one accepts the rollback; a nonce
// recorded then goes into both specs.
func TestRolledBackState(t *testing.T) {
	good, bad := appSpec("flink:good"), appSpec("flink:bad")
	rs := v1beta1.ReconciliationStatus{State: v1beta1.ReconciliationRolledBack, LastReconciledSpec: encode(t, bad), LastStableSpec: encode(t, good)}

	s := deploymentState(t, bad, rs, nil)
	if s.recorded.Spec.Image != "flink:good" || s.rolledBackFrom == nil || s.rolledBackFrom.Spec.Image != "flink:bad" {
		t.Fatalf("Recorded %s, rolled back from %+v", s.recorded.Spec.Image, s.rolledBackFrom)
	}
	if c := s.classify(); c != ChangeNone {
		t.Errorf("the failed spec itself: %s, want none (not retried)", c)
	}
	if err := s.recordNonces(ptr.To[int64](3), nil); err != nil {
		t.Fatal(err)
	}
	st := s.Status().Reconciliation
	rec, _ := lifecycle.Decode[v1beta1.FlinkDeploymentSpec](st.LastReconciledSpec)
	stable, _ := lifecycle.Decode[v1beta1.FlinkDeploymentSpec](st.LastStableSpec)
	if rec.Spec.Image != "flink:bad" || stable.Spec.Image != "flink:good" || !lifecycle.EqualNonce(rec.Spec.Job.SavepointTriggerNonce, ptr.To[int64](3)) ||
		!lifecycle.EqualNonce(stable.Spec.Job.SavepointTriggerNonce, ptr.To[int64](3)) {
		t.Errorf("after a nonce: reconciled %s %v, stable %s %v", rec.Spec.Image, rec.Spec.Job.SavepointTriggerNonce, stable.Spec.Image, stable.Spec.Job.SavepointTriggerNonce)
	}

	s = deploymentState(t, appSpec("flink:other"), rs, nil)
	if c := s.classify(); c != ChangeUpgrade || s.Status().Reconciliation.State != v1beta1.ReconciliationRolledBack {
		t.Errorf("a new spec: %s, state %s", c, s.Status().Reconciliation.State)
	}

	s = deploymentState(t, good, rs, nil)
	if c := s.classify(); c != ChangeNone || s.Status().Reconciliation.State != v1beta1.ReconciliationDeployed ||
		s.Status().Reconciliation.LastReconciledSpec != rs.LastStableSpec || s.rolledBackFrom != nil {
		t.Errorf("spec set back to the stable one: %s, %+v", c, s.Status().Reconciliation)
	}

	rolling := rs
	rolling.State = v1beta1.ReconciliationRollingBack
	s = deploymentState(t, good, rolling, nil)
	if c := s.classify(); c != ChangeNone || s.Status().Reconciliation.State != v1beta1.ReconciliationRollingBack {
		t.Errorf("during ROLLING_BACK the rollback finishes first: %s, %s", c, s.Status().Reconciliation.State)
	}
}

// TestNoRollbackOfSessionJobs: upstream rolls back FlinkDeployments only.
func TestNoRollbackOfSessionJobs(t *testing.T) {
	spec := func(jar string) v1beta1.FlinkSessionJobSpec {
		return v1beta1.FlinkSessionJobSpec{DeploymentName: "session", Job: &v1beta1.JobSpec{JarURI: jar, State: v1beta1.JobStateRunning}}
	}
	sj := &v1beta1.FlinkSessionJob{Spec: spec("b")}
	sj.Name, sj.Namespace = "sj", "ns"
	sj.Status.ReconciliationStatus = v1beta1.ReconciliationStatus{State: v1beta1.ReconciliationDeployed, LastReconciledSpec: encode(t, spec("b")),
		LastStableSpec: encode(t, spec("a")), ReconciliationTimestamp: now.Add(-time.Hour).UnixMilli()}
	e := &Engine[*v1beta1.FlinkSessionJob, v1beta1.FlinkSessionJobSpec]{}
	s, err := e.NewState(context.Background(), "ns/sj", sj, now)
	if err != nil {
		t.Fatal(err)
	}
	s.Cfg = config.Config{config.KeyDeploymentRollbackEnabled: "true", config.KeyDeploymentReadinessTimeout: "1 min"}
	if s.rollbackDue(noRollback[v1beta1.FlinkSessionJobSpec]{}) {
		t.Error("a FlinkSessionJob would be rolled back")
	}
}
