package deployment

import (
	"testing"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/config"
	"github.com/flinkops/flink-operator/pkg/controller/jobengine"
	"github.com/flinkops/flink-operator/pkg/flink"
	"github.com/flinkops/flink-operator/pkg/lifecycle"
)

func TestClassify(t *testing.T) {
	base := v1beta1.FlinkDeploymentSpec{
		Image: "flink:1.20", FlinkVersion: v1beta1.FlinkVersion1_20,
		FlinkConfiguration: &v1beta1.Configuration{Raw: []byte(`{"a": "1", "b": "2"}`)},
		Job:                &v1beta1.JobSpec{JarURI: "local:///job.jar", State: v1beta1.JobStateRunning, UpgradeMode: v1beta1.UpgradeModeSavepoint},
	}
	for _, tc := range []struct {
		name   string
		change func(*v1beta1.FlinkDeploymentSpec)
		want   jobengine.Change
	}{
		{"nothing", func(*v1beta1.FlinkDeploymentSpec) {}, jobengine.ChangeNone},
		{"config key order and spacing", func(s *v1beta1.FlinkDeploymentSpec) {
			s.FlinkConfiguration = &v1beta1.Configuration{Raw: []byte(`{"b":"2","a":"1"}`)}
		}, jobengine.ChangeNone},
		{"savepoint nonce", func(s *v1beta1.FlinkDeploymentSpec) { s.Job.SavepointTriggerNonce = new(int64(1)) }, jobengine.ChangeNonces},
		{"checkpoint nonce", func(s *v1beta1.FlinkDeploymentSpec) { s.Job.CheckpointTriggerNonce = new(int64(1)) }, jobengine.ChangeNonces},
		{"autoscaler nonce", func(s *v1beta1.FlinkDeploymentSpec) { s.Job.AutoscalerResetNonce = new(int64(1)) }, jobengine.ChangeNonces},
		{"suspend", func(s *v1beta1.FlinkDeploymentSpec) { s.Job.State = v1beta1.JobStateSuspended }, jobengine.ChangeSuspend},
		{"redeploy nonce", func(s *v1beta1.FlinkDeploymentSpec) { s.Job.SavepointRedeployNonce = new(int64(1)) }, jobengine.ChangeRedeploy},
		{"restart nonce", func(s *v1beta1.FlinkDeploymentSpec) { s.RestartNonce = new(int64(1)) }, jobengine.ChangeUpgrade},
		{"image", func(s *v1beta1.FlinkDeploymentSpec) { s.Image = "flink:1.20.1" }, jobengine.ChangeUpgrade},
		{"config value", func(s *v1beta1.FlinkDeploymentSpec) {
			s.FlinkConfiguration = &v1beta1.Configuration{Raw: []byte(`{"a": "1", "b": "3"}`)}
		}, jobengine.ChangeUpgrade},
		// Upstream's spec diff ignores the operator's own keys.
		{"operator keys", func(s *v1beta1.FlinkDeploymentSpec) {
			s.FlinkConfiguration = &v1beta1.Configuration{Raw: []byte(`{"a": "1", "b": "2", "kubernetes.operator.savepoint.format.type": "NATIVE", "kubernetes": {"operator": {"periodic.savepoint.interval": "60s"}}}`)}
		}, jobengine.ChangeNonces},
		{"autoscaler keys", func(s *v1beta1.FlinkDeploymentSpec) {
			s.FlinkConfiguration = &v1beta1.Configuration{Raw: []byte(`{"a": "1", "b": "2", "job.autoscaler.enabled": "true"}`)}
		}, jobengine.ChangeNonces},
		{"operator keys and a Flink key", func(s *v1beta1.FlinkDeploymentSpec) {
			s.FlinkConfiguration = &v1beta1.Configuration{Raw: []byte(`{"a": "1", "b": "3", "kubernetes.operator.savepoint.format.type": "NATIVE"}`)}
		}, jobengine.ChangeUpgrade},
		{"a Flink key under kubernetes.", func(s *v1beta1.FlinkDeploymentSpec) {
			s.FlinkConfiguration = &v1beta1.Configuration{Raw: []byte(`{"a": "1", "b": "2", "kubernetes.jobmanager.cpu.amount": "2"}`)}
		}, jobengine.ChangeUpgrade},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := *base.DeepCopy()
			tc.change(&spec)
			if got := jobengine.Classify(base, spec); got != tc.want {
				t.Errorf("classify = %s, want %s", got, tc.want)
			}
		})
	}
	suspended := *base.DeepCopy()
	suspended.Job.State = v1beta1.JobStateSuspended
	changed := *suspended.DeepCopy()
	changed.Image = "flink:1.20.1"
	if got := jobengine.Classify(suspended, changed); got != jobengine.ChangeSuspended {
		t.Errorf("change while suspended = %s", got)
	}
	resumed := *changed.DeepCopy()
	resumed.Job.State = v1beta1.JobStateRunning
	if got := jobengine.Classify(suspended, resumed); got != jobengine.ChangeUpgrade {
		t.Errorf("resume = %s", got)
	}
}

func TestReconciledSpecRoundTrip(t *testing.T) {
	spec := v1beta1.FlinkDeploymentSpec{Image: "flink:1.20", Job: &v1beta1.JobSpec{JarURI: "local:///job.jar"}}
	enc, err := lifecycle.Encode(spec, true)
	if err != nil {
		t.Fatal(err)
	}
	dec, err := lifecycle.Decode[v1beta1.FlinkDeploymentSpec](enc)
	if err != nil || !dec.Meta.FirstDeployment || dec.Meta.APIVersion != "flink.apache.org/v1beta1" || !lifecycle.SameSpec(dec.Spec, spec) {
		t.Fatalf("round trip of %s: %+v %v", enc, dec, err)
	}
	// Upstream's legacy form: the spec itself with apiVersion.
	legacy, err := lifecycle.Decode[v1beta1.FlinkDeploymentSpec](`{"apiVersion":"flink.apache.org/v1beta1","image":"flink:1.20","job":{"jarURI":"local:///job.jar"}}`)
	if err != nil || !lifecycle.SameSpec(legacy.Spec, spec) {
		t.Fatalf("legacy: %+v %v", legacy, err)
	}
	if none, err := lifecycle.Decode[v1beta1.FlinkDeploymentSpec](""); none != nil || err != nil {
		t.Errorf("empty: %v %v", none, err)
	}
}

func TestNewJobID(t *testing.T) {
	a := newJobID("uid", "", 1)
	if !flink.IsValidID(a) || newJobID("uid", "", 1) != a {
		t.Fatalf("not a stable Flink id: %s", a)
	}
	if b := newJobID("uid", a, 1); b == a || !flink.IsValidID(b) {
		t.Errorf("replacement id %s equals the replaced one", b)
	}
}

// TestOperatorKeysApplyWithoutRestart is upstream's test_snapshot.sh
// enabling snapshot resources on a running job through its
// flinkConfiguration: the job keeps running (no stop, same JobManager and
// job id, the recorded spec unchanged), and the operator acts on the new
// value at once: the next manual savepoint is a FlinkStateSnapshot.
func TestOperatorKeysApplyWithoutRestart(t *testing.T) {
	f := newFixture(t)
	d := f.application("job", v1beta1.UpgradeModeSavepoint)
	setConf(&d.Spec, config.KeySnapshotResourceEnabled, "false")
	f.Deploy(d)
	before := f.Get("job")
	jm := f.jm("job")
	f.edit("job", func(s *v1beta1.FlinkDeploymentSpec) {
		setConf(s, config.KeySnapshotResourceEnabled, "true")
		s.Job.SavepointTriggerNonce = new(int64(5))
	})
	f.Step("job")
	f.Step("job")
	got := f.Get("job")
	if n := f.stops(); n != 0 || f.jm("job") != jm || got.Status.JobStatus.JobID != before.Status.JobStatus.JobID {
		t.Fatalf("an operator key change restarted the job (%d stops): %s", n, statusString(got))
	}
	if got.Status.ReconciliationStatus.State != v1beta1.ReconciliationDeployed || got.Status.ObservedGeneration != got.Generation {
		t.Errorf("change not observed as applied: %s", statusString(got))
	}
	rec, err := lifecycle.Decode[v1beta1.FlinkDeploymentSpec](got.Status.ReconciliationStatus.LastReconciledSpec)
	if err != nil {
		t.Fatal(err)
	}
	if conf, _ := rec.Spec.FlinkConfiguration.Values(); conf[config.KeySnapshotResourceEnabled] != "false" {
		t.Errorf("recorded spec took the operator key: %v (the job runs the deployed one)", conf)
	}
	snaps := f.Snapshots()
	if len(snaps) != 1 || snaps[0].Spec.Savepoint == nil {
		t.Fatalf("%d snapshots, want the manual savepoint as a FlinkStateSnapshot (snapshot resources enabled by the current spec)", len(snaps))
	}
}

// TestUnrecordedJobFieldsApplyWithoutRedeploy: as upstream's spec diff
// ignores upgradeMode, allowNonRestoredState and initialSavepointPath, a
// change of them alone does not redeploy the running job, and the next
// upgrade goes by the current upgradeMode (here stateless: no savepoint).
func TestUnrecordedJobFieldsApplyWithoutRedeploy(t *testing.T) {
	f := newFixture(t)
	before := f.Deploy(f.application("job", v1beta1.UpgradeModeSavepoint))
	jm := f.jm("job")
	f.edit("job", func(s *v1beta1.FlinkDeploymentSpec) {
		s.Job.UpgradeMode = v1beta1.UpgradeModeStateless
		s.Job.AllowNonRestoredState = new(true)
		s.Job.InitialSavepointPath = "file:///elsewhere/savepoint-1"
	})
	for range 3 {
		f.Step("job")
	}
	got := f.Get("job")
	if f.stops() != 0 || f.jm("job") != jm || got.Status.JobStatus.JobID != before.Status.JobStatus.JobID ||
		got.Status.ReconciliationStatus.LastReconciledSpec != before.Status.ReconciliationStatus.LastReconciledSpec {
		t.Fatalf("a change of unrecorded fields redeployed (%d stops): %s", f.stops(), statusString(got))
	}
	f.edit("job", func(s *v1beta1.FlinkDeploymentSpec) { s.Job.Args = []string{"--changed"} })
	upgraded := f.Until("job", 20, "upgraded", func(d *v1beta1.FlinkDeployment) bool {
		return running(d) && d.Status.JobStatus.JobID != before.Status.JobStatus.JobID
	})
	if f.stops() != 0 || upgraded.Status.JobStatus.UpgradeSavepointPath != "" {
		t.Errorf("the upgrade after upgradeMode stateless took a savepoint (%d stops), restore %q", f.stops(), upgraded.Status.JobStatus.UpgradeSavepointPath)
	}
}
