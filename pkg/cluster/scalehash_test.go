package cluster

import (
	"maps"
	"strings"
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

// The result stores the operator sets for Flink 2.3 with HA
// (applyResultStores) are left out of the pod templates' config hash: a
// cluster deployed before the operator set them keeps its hash, and an
// operator upgrade does not roll its TaskManagers. The ConfigMap carries
// them. One the user sets counts like any other key.
func TestResultStoresDoNotRollPods(t *testing.T) {
	c := mustBuild(t, input(flink23HA(application(), nil)))
	rendered := c.ConfigMap.Data[ConfigYAMLFile]
	before := maps.Clone(c.ConfigMap.Data)
	for _, line := range []string{
		keyJobResults + ": s3://bucket/ha/job-result-store/demo/" + testJobID + "\n",
		keyApplicationResults + ": s3://bucket/ha/application-result-store/demo/" + testJobID + "\n",
	} {
		if !strings.Contains(rendered, "\n"+line) {
			t.Fatalf("no line %q in the ConfigMap's %s:\n%s", line, ConfigYAMLFile, rendered)
		}
		before[ConfigYAMLFile] = strings.Replace(before[ConfigYAMLFile], line, "", 1)
	}
	if got, want := c.TaskManager.Spec.Template.Annotations[AnnotationConfigHash], ConfigHash(before); got != want {
		t.Errorf("TaskManager config hash %s, want %s (that of the same ConfigMap without the result stores)", got, want)
	}

	a := mustBuild(t, input(flink23HA(application(), map[string]any{keyApplicationResults: "file:///a"})))
	b := mustBuild(t, input(flink23HA(application(), map[string]any{keyApplicationResults: "file:///b"})))
	if !SpecHashChanged(b.TaskManager, a.TaskManager) {
		t.Error("a change of the user's application result store does not roll the TaskManagers")
	}
}
