package lifecycle

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
)

// TestSameSpec pins that specs are compared as the API server stores them:
// through JSON, so the key order of flinkConfiguration or a nil versus an
// empty (omitted) list is no change, while any real difference is one.
func TestSameSpec(t *testing.T) {
	dep := func(mod func(*v1beta1.FlinkDeploymentSpec)) v1beta1.FlinkDeploymentSpec {
		s := v1beta1.FlinkDeploymentSpec{
			Image:              "flink:1.20",
			FlinkConfiguration: &v1beta1.Configuration{Raw: []byte(`{"a":"1","b":"2"}`)},
			Job:                &v1beta1.JobSpec{JarURI: "local:///job.jar"},
		}
		if mod != nil {
			mod(&s)
		}
		return s
	}
	for _, tc := range []struct {
		name string
		b    v1beta1.FlinkDeploymentSpec
		want bool
	}{
		{"identical", dep(nil), true},
		{"configuration keys in another order", dep(func(s *v1beta1.FlinkDeploymentSpec) {
			s.FlinkConfiguration = &v1beta1.Configuration{Raw: []byte(`{"b":"2","a":"1"}`)}
		}), true},
		{"empty instead of nil args", dep(func(s *v1beta1.FlinkDeploymentSpec) { s.Job.Args = []string{} }), true},
		{"another jar", dep(func(s *v1beta1.FlinkDeploymentSpec) { s.Job.JarURI = "local:///other.jar" }), false},
		{"another configuration value", dep(func(s *v1beta1.FlinkDeploymentSpec) {
			s.FlinkConfiguration = &v1beta1.Configuration{Raw: []byte(`{"a":"1","b":"3"}`)}
		}), false},
		{"no job", dep(func(s *v1beta1.FlinkDeploymentSpec) { s.Job = nil }), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := SameSpec(dep(nil), tc.b); got != tc.want {
				t.Errorf("SameSpec = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestEqualNonce pins the comparison of optional nonces: by value, and an
// unset nonce equals only an unset one.
func TestEqualNonce(t *testing.T) {
	n := func(v int64) *int64 { return &v }
	for _, tc := range []struct {
		name string
		a, b *int64
		want bool
	}{
		{"both unset", nil, nil, true},
		{"first unset", nil, n(1), false},
		{"second unset", n(1), nil, false},
		{"same value, distinct pointers", n(1), n(1), true},
		{"different values", n(1), n(2), false},
	} {
		if got := EqualNonce(tc.a, tc.b); got != tc.want {
			t.Errorf("%s: EqualNonce = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestWithoutNonces pins that the nonces that never need a redeploy
// (savepoint, checkpoint and autoscaler reset) are dropped from a copy of the
// job, everything else is kept, and the job itself is not changed.
func TestWithoutNonces(t *testing.T) {
	if got := WithoutNonces(nil); got != nil {
		t.Fatalf("WithoutNonces(nil) = %+v, want nil", got)
	}
	n := func(v int64) *int64 { return &v }
	job := &v1beta1.JobSpec{
		JarURI: "local:///job.jar", UpgradeMode: v1beta1.UpgradeModeSavepoint,
		SavepointTriggerNonce: n(1), CheckpointTriggerNonce: n(2), AutoscalerResetNonce: n(3), SavepointRedeployNonce: n(4),
	}
	before := job.DeepCopy()
	got := WithoutNonces(job)
	want := &v1beta1.JobSpec{JarURI: "local:///job.jar", UpgradeMode: v1beta1.UpgradeModeSavepoint, SavepointRedeployNonce: n(4)}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("WithoutNonces (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(before, job); diff != "" {
		t.Errorf("WithoutNonces changed its input:\n%s", diff)
	}
}
