package cluster

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/config"
)

// TestPodTemplateArraysMergedByName: spec.podTemplate and
// spec.jobManager.podTemplate both setting the same arrays are merged by
// name (natural key) whatever kubernetes.operator.pod-template.merge-arrays-by-name
// says. Upstream's default (false) merges them by position, which here
// would give one volume named "b" with both an emptyDir and a ConfigMap
// source (rejected by the API server), the env of the main container
// without A, and the sidecar's fields merged into the first container.
func TestPodTemplateArraysMergedByName(t *testing.T) {
	common := &corev1.Pod{Spec: corev1.PodSpec{
		Containers: []corev1.Container{
			{Name: "sidecar", Image: "busybox", Env: []corev1.EnvVar{{Name: "S", Value: "1"}}},
			{Name: MainContainerName, Env: []corev1.EnvVar{{Name: "A", Value: "common"}}},
		},
		Volumes: []corev1.Volume{{Name: "a", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
	}}
	jm := &corev1.Pod{Spec: corev1.PodSpec{
		Containers: []corev1.Container{
			{Name: MainContainerName, Env: []corev1.EnvVar{{Name: "B", Value: "jm"}}},
		},
		Volumes: []corev1.Volume{{Name: "b", VolumeSource: corev1.VolumeSource{
			ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cm"}}}}},
	}}
	templates := func(in *Input) {
		in.Spec.PodTemplate = common
		in.Spec.JobManager = &v1beta1.JobManagerSpec{PodTemplate: jm}
	}
	tests := []struct {
		name   string
		change func(*Input)
	}{
		{name: "default (false)"},
		{name: "operator config true", change: func(in *Input) {
			in.OperatorConfig = config.Defaults()
			in.OperatorConfig[keyMergeArraysByName] = "true"
		}},
		{name: "operator config false", change: func(in *Input) {
			in.OperatorConfig = config.Defaults()
			in.OperatorConfig[keyMergeArraysByName] = "false"
		}},
		{name: "resource true", change: func(in *Input) {
			in.Spec.FlinkConfiguration = flinkConf(map[string]any{keyMergeArraysByName: "true"})
		}},
	}
	for _, mode := range []struct {
		name   string
		change func(*Input)
		extra  []string // volumes the mode adds
	}{
		{name: "standalone", change: func(*Input) {}},
		{name: "native", change: native, extra: []string{PodTemplateVolumeName}},
	} {
		var first *corev1.PodTemplateSpec
		for _, tt := range tests {
			t.Run(mode.name+"/"+tt.name, func(t *testing.T) {
				changes := []func(*Input){mode.change, templates}
				if tt.change != nil {
					changes = append(changes, tt.change)
				}
				c := mustBuild(t, input(application(), changes...))
				pod := c.JobManager.Spec.Template
				var containers, volumes, env []string
				for _, c := range pod.Spec.Containers {
					containers = append(containers, c.Name)
				}
				for _, v := range pod.Spec.Volumes {
					volumes = append(volumes, v.Name)
					if (v.Name == "a" && (v.EmptyDir == nil || v.ConfigMap != nil)) || (v.Name == "b" && (v.ConfigMap == nil || v.EmptyDir != nil)) {
						t.Errorf("volume %s mixed: %+v", v.Name, v.VolumeSource)
					}
				}
				for _, e := range mainContainer(t, pod.Spec).Env {
					env = append(env, e.Name)
				}
				if diff := cmp.Diff([]string{MainContainerName, "sidecar"}, containers); diff != "" {
					t.Errorf("containers (-want +got):\n%s", diff)
				}
				if diff := cmp.Diff(append([]string{ConfigVolumeName, "a", "b"}, mode.extra...), volumes); diff != "" {
					t.Errorf("volumes (-want +got):\n%s", diff)
				}
				if diff := cmp.Diff([]string{"_POD_IP_ADDRESS", "A", "B"}, env); diff != "" {
					t.Errorf("main container env (-want +got):\n%s", diff)
				}
				if pod.Spec.Containers[1].Image != "busybox" || len(pod.Spec.Containers[1].Env) != 1 {
					t.Errorf("sidecar %+v", pod.Spec.Containers[1])
				}
				// Same pod whatever the option (the resource variant's config
				// hash differs only because the option is a config key).
				if tt.change == nil {
					first = pod.DeepCopy()
				} else if first != nil {
					delete(pod.Annotations, AnnotationConfigHash)
					want := first.DeepCopy()
					delete(want.Annotations, AnnotationConfigHash)
					if diff := cmp.Diff(want, &pod); diff != "" {
						t.Errorf("pod differs from the default's (-default +got):\n%s", diff)
					}
				}
			})
		}
	}
}

// keyMergeArraysByName is upstream's option, accepted and without effect
// here (arrays are always merged by name).
const keyMergeArraysByName = "kubernetes.operator.pod-template.merge-arrays-by-name"
