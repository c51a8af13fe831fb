package jobengine

import (
	"maps"
	"testing"

	"k8s.io/utils/ptr"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/config"
)

func TestParallelismOverrides(t *testing.T) {
	for _, tc := range []struct {
		flat map[string]string
		want map[string]string
		err  bool
	}{
		{flat: map[string]string{}, want: map[string]string{}},
		{flat: map[string]string{config.FlinkParallelismOverrides: "aa:2, bb : 3,"}, want: map[string]string{"aa": "2", "bb": "3"}},
		{flat: map[string]string{config.FlinkParallelismOverrides + ".aa": "4"}, want: map[string]string{"aa": "4"}},
		{flat: map[string]string{config.FlinkParallelismOverrides: "aa"}, err: true},
		{flat: map[string]string{config.FlinkParallelismOverrides: "aa:0"}, err: true},
		{flat: map[string]string{config.FlinkParallelismOverrides: "aa:x"}, err: true},
	} {
		got, err := parallelismOverrides(tc.flat)
		if (err != nil) != tc.err || err == nil && !maps.Equal(got, tc.want) {
			t.Errorf("%v: got %v, %v; want %v (error %v)", tc.flat, got, err, tc.want, tc.err)
		}
	}
}

func TestScaleOnly(t *testing.T) {
	spec := func(conf map[string]string, change ...func(*v1beta1.FlinkDeploymentSpec)) v1beta1.FlinkDeploymentSpec {
		s := v1beta1.FlinkDeploymentSpec{
			FlinkConfiguration: v1beta1.NewConfiguration(conf),
			Job:                &v1beta1.JobSpec{JarURI: "local:///job.jar", Parallelism: ptr.To[int32](2), State: v1beta1.JobStateRunning},
		}
		for _, c := range change {
			c(&s)
		}
		return s
	}
	base := map[string]string{"jobmanager.scheduler": "adaptive", config.FlinkParallelismOverrides: "aa:1"}
	with := func(kv ...string) map[string]string {
		m := maps.Clone(base)
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	recorded := spec(base)
	for _, tc := range []struct {
		name    string
		current v1beta1.FlinkDeploymentSpec
		want    bool
	}{
		{"same", spec(base), false},
		{"overrides changed", spec(with(config.FlinkParallelismOverrides, "aa:3")), true},
		{"overrides respelled", spec(with(config.FlinkParallelismOverrides, " aa : 1 ")), false},
		{"overrides added", spec(with(config.FlinkParallelismOverrides, "aa:1,bb:2")), true},
		{"with a nonce", spec(with(config.FlinkParallelismOverrides, "aa:3"), func(s *v1beta1.FlinkDeploymentSpec) { s.Job.SavepointTriggerNonce = ptr.To[int64](4) }), true},
		{"and another key", spec(with(config.FlinkParallelismOverrides, "aa:3", "taskmanager.numberOfTaskSlots", "4")), false},
		{"and the parallelism", spec(with(config.FlinkParallelismOverrides, "aa:3"), func(s *v1beta1.FlinkDeploymentSpec) { s.Job.Parallelism = ptr.To[int32](3) }), false},
		{"and suspended", spec(with(config.FlinkParallelismOverrides, "aa:3"), func(s *v1beta1.FlinkDeploymentSpec) { s.Job.State = v1beta1.JobStateSuspended }), false},
		{"invalid", spec(with(config.FlinkParallelismOverrides, "aa")), false},
	} {
		if got := scaleOnly(recorded, tc.current); got != tc.want {
			t.Errorf("%s: scaleOnly = %v, want %v", tc.name, got, tc.want)
		}
	}
	if recorded.FlinkConfiguration == nil {
		t.Error("scaleOnly changed its argument's configuration")
	}
}
