package validation

import (
	"strings"
	"testing"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/config"
	"github.com/flinkops/flink-operator/pkg/flink"
)

// TestDeploymentSpec covers every FlinkDeployment rule; upstream's messages
// (DefaultValidator) are compared verbatim.
func TestDeploymentSpec(t *testing.T) {
	type mut = func(*v1beta1.FlinkDeploymentSpec)
	setConf := func(kv ...string) mut {
		return func(s *v1beta1.FlinkDeploymentSpec) { s.FlinkConfiguration = conf(kv...) }
	}
	for _, tc := range []struct {
		name   string
		change mut
		last   mut // nil: no last reconciled spec
		want   string
	}{
		{name: "valid application", change: func(*v1beta1.FlinkDeploymentSpec) {}},
		{name: "valid session", change: func(s *v1beta1.FlinkDeploymentSpec) { s.Job = nil }},
		{name: "native mode", change: func(s *v1beta1.FlinkDeploymentSpec) { s.Mode = v1beta1.DeploymentModeNative }},
		{name: "unknown mode", change: func(s *v1beta1.FlinkDeploymentSpec) { s.Mode = "yarn" }, want: `spec.mode "yarn": want native or standalone`},
		{name: "no image", change: func(s *v1beta1.FlinkDeploymentSpec) { s.Image = " " }, want: "spec.image is required"},
		{name: "no version", change: func(s *v1beta1.FlinkDeploymentSpec) { s.FlinkVersion = "" }, want: "spec.flinkVersion is required"},
		{name: "bad version", change: func(s *v1beta1.FlinkDeploymentSpec) { s.FlinkVersion = "latest" },
			want: `spec.flinkVersion: flink: invalid version "latest": want MAJOR.MINOR`},
		{name: "old version", change: func(s *v1beta1.FlinkDeploymentSpec) { s.FlinkVersion = v1beta1.FlinkVersion1_13 },
			want: "spec.flinkVersion v1_13 is not supported: the operator needs Flink 1.15 or newer"},
		{name: "config does not parse", change: setConf(config.FlinkRestPort, "http", config.FlinkSavepointDir, spDir, config.FlinkCheckpointDir, cpDir),
			want: `spec.flinkConfiguration: config key rest.port: invalid value "http": not an integer`},
		{name: "autoscaler option does not parse", change: setConf("job.autoscaler.utilization.target", "high", config.FlinkSavepointDir, spDir, config.FlinkCheckpointDir, cpDir),
			want: `spec.flinkConfiguration: config key job.autoscaler.utilization.target: invalid value "high": not a number`},
		{name: "autoscaler options parse", change: setConf("job.autoscaler.enabled", "true", "job.autoscaler.metrics.window", "5 min", config.FlinkSavepointDir, spDir, config.FlinkCheckpointDir, cpDir)},
		{name: "bad job state", change: func(s *v1beta1.FlinkDeploymentSpec) { s.Job.State = "paused" },
			want: `spec.job.state "paused": want running or suspended`},
		{name: "bad upgrade mode", change: func(s *v1beta1.FlinkDeploymentSpec) { s.Job.UpgradeMode = "fast" },
			want: `spec.job.upgradeMode "fast": want stateless, savepoint or last-state`},

		// Upstream's, verbatim.
		{name: "savepoint mode without checkpoint dir", change: setConf(config.FlinkSavepointDir, spDir),
			want: "Checkpoint directory[execution.checkpointing.dir] must be defined for last-state and savepoint upgrade modes"},
		{name: "last-state without checkpoint dir", change: func(s *v1beta1.FlinkDeploymentSpec) {
			s.Job.UpgradeMode = v1beta1.UpgradeModeLastState
			s.FlinkConfiguration = conf(config.FlinkSavepointDir, spDir)
		}, want: "Checkpoint directory[execution.checkpointing.dir] must be defined for last-state and savepoint upgrade modes"},
		{name: "legacy checkpoint dir key", change: setConf(config.FlinkSavepointDir, spDir, config.FlinkCheckpointDirDeprecated, cpDir)},
		{name: "stateless needs no dirs", change: func(s *v1beta1.FlinkDeploymentSpec) {
			s.Job.UpgradeMode = v1beta1.UpgradeModeStateless
			s.FlinkConfiguration = nil
		}},
		{name: "savepoint mode without savepoint dir", change: setConf(config.FlinkCheckpointDir, cpDir),
			want: "Job could not be upgraded with savepoint while config key[execution.checkpointing.savepoint-dir] is not set"},
		{name: "legacy savepoint dir key", change: setConf(config.FlinkSavepointDirDeprecated, spDir, config.FlinkCheckpointDir, cpDir)},
		{name: "savepoint nonce without dir", change: func(s *v1beta1.FlinkDeploymentSpec) {
			s.Job.UpgradeMode = v1beta1.UpgradeModeLastState
			s.Job.SavepointTriggerNonce = ptr(int64(1))
			s.FlinkConfiguration = conf(config.FlinkCheckpointDir, cpDir)
		}, want: "Savepoint could not be manually triggered for the running job while config key[execution.checkpointing.savepoint-dir] is not set"},
		{name: "reconciled savepoint nonce without dir", change: func(s *v1beta1.FlinkDeploymentSpec) {
			s.Job.UpgradeMode = v1beta1.UpgradeModeLastState
			s.Job.SavepointTriggerNonce = ptr(int64(1))
			s.FlinkConfiguration = conf(config.FlinkCheckpointDir, cpDir)
		}, last: func(s *v1beta1.FlinkDeploymentSpec) { s.Job.SavepointTriggerNonce = ptr(int64(1)) }},
		{name: "periodic savepoints without dir", change: func(s *v1beta1.FlinkDeploymentSpec) {
			s.Job.UpgradeMode = v1beta1.UpgradeModeStateless
			s.FlinkConfiguration = conf(config.KeyPeriodicSavepointInterval, "1h")
		}, want: "Periodic savepoints cannot be enabled when config key[execution.checkpointing.savepoint-dir] is not set"},
		{name: "periodic savepoints off", change: func(s *v1beta1.FlinkDeploymentSpec) {
			s.Job.UpgradeMode = v1beta1.UpgradeModeStateless
			s.FlinkConfiguration = conf(config.KeyPeriodicSavepointInterval, "0")
		}},
		{name: "max checkpoint age without dir", change: func(s *v1beta1.FlinkDeploymentSpec) {
			s.Job.UpgradeMode = v1beta1.UpgradeModeLastState
			s.FlinkConfiguration = conf(config.FlinkCheckpointDir, cpDir, config.KeyJobUpgradeLastStateMaxAllowedCheckpointAge, "10 min")
		}, want: "In order to use max-checkpoint age functionality config key[execution.checkpointing.savepoint-dir] must be set to allow triggering savepoint upgrades."},
		{name: "redeploy nonce without initialSavepointPath", change: func(s *v1beta1.FlinkDeploymentSpec) { s.Job.SavepointRedeployNonce = ptr(int64(2)) },
			last: func(*v1beta1.FlinkDeploymentSpec) {}, want: "InitialSavepointPath must not be empty for savepoint redeployment"},
		{name: "redeploy nonce with initialSavepointPath", change: func(s *v1beta1.FlinkDeploymentSpec) {
			s.Job.SavepointRedeployNonce = ptr(int64(2))
			s.Job.InitialSavepointPath = "file:///sp/1"
		}, last: func(*v1beta1.FlinkDeploymentSpec) {}},
		{name: "redeploy nonce unchanged", change: func(s *v1beta1.FlinkDeploymentSpec) { s.Job.SavepointRedeployNonce = ptr(int64(2)) },
			last: func(s *v1beta1.FlinkDeploymentSpec) { s.Job.SavepointRedeployNonce = ptr(int64(2)) }},
		{name: "redeploy nonce on first deployment", change: func(s *v1beta1.FlinkDeploymentSpec) { s.Job.SavepointRedeployNonce = ptr(int64(2)) }},
		{name: "version change after last-state suspend", change: func(s *v1beta1.FlinkDeploymentSpec) {
			s.Job.UpgradeMode = v1beta1.UpgradeModeLastState
			s.FlinkVersion = v1beta1.FlinkVersion2_0
		}, last: func(s *v1beta1.FlinkDeploymentSpec) {
			s.Job.UpgradeMode = v1beta1.UpgradeModeLastState
			s.Job.State = v1beta1.JobStateSuspended
		}, want: "Changing flinkVersion after last-state suspend is not allowed. Restore your cluster with the current flinkVersion and perform the version upgrade afterwards."},
		{name: "version change after last-state suspend, going stateless", change: func(s *v1beta1.FlinkDeploymentSpec) {
			s.Job.UpgradeMode = v1beta1.UpgradeModeStateless
			s.FlinkVersion = v1beta1.FlinkVersion2_0
		}, last: func(s *v1beta1.FlinkDeploymentSpec) {
			s.Job.UpgradeMode = v1beta1.UpgradeModeLastState
			s.Job.State = v1beta1.JobStateSuspended
		}},
		{name: "version change after savepoint suspend", change: func(s *v1beta1.FlinkDeploymentSpec) { s.FlinkVersion = v1beta1.FlinkVersion2_0 },
			last: func(s *v1beta1.FlinkDeploymentSpec) { s.Job.State = v1beta1.JobStateSuspended }},
		{name: "version change while running", change: func(s *v1beta1.FlinkDeploymentSpec) {
			s.Job.UpgradeMode = v1beta1.UpgradeModeLastState
			s.FlinkVersion = v1beta1.FlinkVersion2_0
		}, last: func(s *v1beta1.FlinkDeploymentSpec) { s.Job.UpgradeMode = v1beta1.UpgradeModeLastState }},
		{name: "session to job", change: func(*v1beta1.FlinkDeploymentSpec) {},
			last: func(s *v1beta1.FlinkDeploymentSpec) { s.Job = nil }, want: "Cannot switch from session to job cluster"},
		{name: "job to session", change: func(s *v1beta1.FlinkDeploymentSpec) { s.Job = nil },
			last: func(*v1beta1.FlinkDeploymentSpec) {}, want: "Cannot switch from job to session cluster"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := application("job").Spec
			tc.change(&spec)
			var last *v1beta1.FlinkDeploymentSpec
			if tc.last != nil {
				l := application("job").Spec
				tc.last(&l)
				last = &l
			}
			res, err := DeploymentSpec(&spec, last, config.Defaults())
			checkErr(t, err, tc.want)
			if err == nil && (res == nil || res.Config == nil || res.Version.IsZero()) {
				t.Errorf("result %+v, want the effective config and version", res)
			}
		})
	}
}

func TestDeploymentSpecResult(t *testing.T) {
	spec := application("job").Spec
	spec.FlinkConfiguration = conf(config.FlinkSavepointDir, spDir, config.FlinkCheckpointDir, cpDir,
		config.KeyReconcileInterval, "5 s", "kubernetes.operator.savepoint.histroy.max.count", "3")
	res, err := DeploymentSpec(&spec, nil, config.Config{"parallelism.default": "4"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Version != flink.V1_20 || res.Config["parallelism.default"] != "4" || res.Config[config.FlinkSavepointDir] != spDir {
		t.Errorf("result %+v", res)
	}
	if len(res.Warnings) != 2 || res.Warnings[0].Key != config.KeyReconcileInterval || res.Warnings[1].Key != "kubernetes.operator.savepoint.histroy.max.count" {
		t.Errorf("warnings %v, want the typo and the operator-wide key", res.Warnings)
	}
}

// TestDeploymentReadsLastReconciledSpec checks that Deployment compares
// with status.reconciliationStatus.lastReconciledSpec, in both shapes.
func TestDeploymentReadsLastReconciledSpec(t *testing.T) {
	const msg = "Changing flinkVersion after last-state suspend is not allowed. Restore your cluster with the current flinkVersion and perform the version upgrade afterwards."
	suspendedLastState := `"job":{"upgradeMode":"last-state","state":"suspended"},"flinkVersion":"v1_20"`
	for _, tc := range []struct {
		name, recorded, want string
	}{
		{"none", "", ""},
		{"upstream shape", `{"spec":{` + suspendedLastState + `},"resource_metadata":{"apiVersion":"flink.apache.org/v1beta1","firstDeployment":false}}`, msg},
		{"legacy shape", `{` + suspendedLastState + `,"apiVersion":"flink.apache.org/v1beta1"}`, msg},
		{"garbage is ignored", `{not json`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dep := application("job")
			dep.Spec.Job.UpgradeMode = v1beta1.UpgradeModeLastState
			dep.Spec.FlinkVersion = v1beta1.FlinkVersion2_0
			dep.Status.ReconciliationStatus.LastReconciledSpec = tc.recorded
			_, err := Deployment(dep, config.Defaults())
			checkErr(t, err, tc.want)
		})
	}
}

func TestDeploymentName(t *testing.T) {
	for name, valid := range map[string]bool{
		"a": true, "basic-example": true, "abc-123": true, strings.Repeat("a", 45): true,
		strings.Repeat("a", 46): false, "1abc": false, "abc-": false, "Abc": false, "a_b": false, "a.b": false, "": false,
	} {
		err := DeploymentName(name)
		if valid && err != nil {
			t.Errorf("%q: %v", name, err)
		}
		if !valid {
			checkErr(t, err, "The FlinkDeployment name: "+name+" is invalid, must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123'), and the length must be no more than 45 characters.")
		}
	}
	dep := application("My_Job")
	if _, err := Deployment(dep, config.Defaults()); err == nil || !strings.HasPrefix(err.Error(), "The FlinkDeployment name: My_Job is invalid") {
		t.Errorf("Deployment with a bad name: %v", err)
	}
}

func TestCrossNamespaceSnapshotRef(t *testing.T) {
	for _, tc := range []struct {
		job   *v1beta1.JobSpec
		cross bool
	}{
		{nil, false},
		{&v1beta1.JobSpec{}, false},
		{&v1beta1.JobSpec{InitialStateSnapshotRef: &v1beta1.SnapshotReference{Name: "sp"}}, false},
		{&v1beta1.JobSpec{InitialStateSnapshotRef: &v1beta1.SnapshotReference{Name: "sp", Namespace: "ns"}}, false},
		{&v1beta1.JobSpec{InitialStateSnapshotRef: &v1beta1.SnapshotReference{Name: "sp", Namespace: "other"}}, true},
	} {
		ref, cross := CrossNamespaceSnapshotRef("ns", tc.job)
		if cross != tc.cross || (cross && (ref.Name != "sp" || ref.Namespace != "other")) {
			t.Errorf("%+v: %+v, %v", tc.job, ref, cross)
		}
	}
}
