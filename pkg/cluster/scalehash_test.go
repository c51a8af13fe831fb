package cluster

import (
	"testing"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/config"
)

// A change of only the parallelism overrides (applied in place) updates the
// ConfigMap but neither pod template: the TaskManager Deployment is not
// rolled. Any other configuration change still rolls it.
func TestParallelismOverridesDoNotRollPods(t *testing.T) {
	build := func(conf map[string]string) *Cluster {
		d := application()
		d.Spec.FlinkConfiguration = v1beta1.NewConfiguration(conf)
		return mustBuild(t, input(d))
	}
	base := build(map[string]string{"jobmanager.scheduler": "adaptive"})
	withOverrides := build(map[string]string{"jobmanager.scheduler": "adaptive", config.FlinkParallelismOverrides: "0a:2"})
	scaled := build(map[string]string{"jobmanager.scheduler": "adaptive", config.FlinkParallelismOverrides: "0a:3"})
	other := build(map[string]string{"jobmanager.scheduler": "adaptive", config.FlinkParallelismOverrides: "0a:3", "taskmanager.numberOfTaskSlots": "4"})

	if SpecHashChanged(scaled.ConfigMap, withOverrides.ConfigMap) == false {
		t.Error("the ConfigMap does not change with the overrides")
	}
	for _, pair := range [][2]*Cluster{{base, withOverrides}, {withOverrides, scaled}} {
		if SpecHashChanged(pair[1].TaskManager, pair[0].TaskManager) {
			t.Errorf("TaskManager Deployment rolled by an overrides change: %s -> %s",
				pair[0].TaskManager.Spec.Template.Annotations[AnnotationConfigHash], pair[1].TaskManager.Spec.Template.Annotations[AnnotationConfigHash])
		}
		if SpecHashChanged(pair[1].JobManager, pair[0].JobManager) {
			t.Error("JobManager Deployment changed by an overrides change")
		}
	}
	if base.TaskManager.Spec.Template.Annotations[AnnotationConfigHash] != ConfigHash(base.ConfigMap.Data) {
		t.Error("without overrides the config hash is not the ConfigMap's (clusters would roll on an operator upgrade)")
	}
	if !SpecHashChanged(other.TaskManager, scaled.TaskManager) {
		t.Error("another configuration change does not roll the TaskManagers")
	}
}
