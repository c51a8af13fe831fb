package cluster

import (
	"math"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/config"
)

// TestJobManagerStartupProbe: kubernetes.operator.jm-deployment.startup.probe.enabled
// (default true) gives the JobManager's main container upstream's startup
// probe in both modes, never the TaskManager's; a startup probe from a pod
// template is kept as the user wrote it, whatever the option says.
func TestJobManagerStartupProbe(t *testing.T) {
	operatorProbe := func(port int32) *corev1.Probe {
		return &corev1.Probe{
			ProbeHandler:     corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/config", Port: intstr.FromInt32(port)}},
			PeriodSeconds:    1,
			FailureThreshold: math.MaxInt32,
		}
	}
	userProbe := &corev1.Probe{
		ProbeHandler:     corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}},
		PeriodSeconds:    7,
		FailureThreshold: 30,
	}
	templateWithProbe := func() *corev1.Pod {
		return &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{
			{Name: MainContainerName, StartupProbe: userProbe.DeepCopy()},
		}}}
	}
	operatorOff := func(in *Input) {
		in.OperatorConfig = config.Defaults()
		in.OperatorConfig[config.KeyJMDeploymentStartupProbeEnabled] = "false"
	}
	tests := []struct {
		name   string
		change func(*Input)
		want   *corev1.Probe
	}{
		{name: "default: on, REST port 8081", want: operatorProbe(8081)},
		{name: "rest.port", change: func(in *Input) {
			in.Spec.FlinkConfiguration = flinkConf(map[string]any{"rest.port": "9091"})
		}, want: operatorProbe(9091)},
		{name: "rest.bind-port: the port Flink listens on", change: func(in *Input) {
			in.Spec.FlinkConfiguration = flinkConf(map[string]any{"rest.port": "9091", "rest.bind-port": "9092"})
		}, want: operatorProbe(9092)},
		{name: "operator config off", change: operatorOff},
		{name: "resource off, operator on", change: func(in *Input) {
			in.Spec.FlinkConfiguration = flinkConf(map[string]any{config.KeyJMDeploymentStartupProbeEnabled: "false"})
		}},
		{name: "resource on, operator off", change: func(in *Input) {
			operatorOff(in)
			in.Spec.FlinkConfiguration = flinkConf(map[string]any{config.KeyJMDeploymentStartupProbeEnabled: "TRUE"})
		}, want: operatorProbe(8081)},
		{name: "user probe in spec.podTemplate wins", change: func(in *Input) {
			in.Spec.PodTemplate = templateWithProbe()
		}, want: userProbe},
		{name: "user probe in spec.jobManager.podTemplate wins", change: func(in *Input) {
			in.Spec.JobManager = &v1beta1.JobManagerSpec{PodTemplate: templateWithProbe()}
		}, want: userProbe},
		{name: "user probe kept with the option off", change: func(in *Input) {
			operatorOff(in)
			in.Spec.JobManager = &v1beta1.JobManagerSpec{PodTemplate: templateWithProbe()}
		}, want: userProbe},
		{name: "a template without a startup probe gets the operator's", change: func(in *Input) {
			in.Spec.PodTemplate = &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{
				{Name: MainContainerName, Env: []corev1.EnvVar{{Name: "A", Value: "1"}}},
				{Name: "sidecar", Image: "busybox", StartupProbe: userProbe.DeepCopy()},
			}}}
		}, want: operatorProbe(8081)},
	}
	for _, mode := range []string{"standalone", "native"} {
		for _, tt := range tests {
			t.Run(mode+"/"+tt.name, func(t *testing.T) {
				changes := []func(*Input){}
				if mode == "native" {
					changes = append(changes, native)
				}
				if tt.change != nil {
					changes = append(changes, tt.change)
				}
				c := mustBuild(t, input(application(), changes...))
				got := mainContainer(t, c.JobManager.Spec.Template.Spec).StartupProbe
				if diff := cmp.Diff(tt.want, got); diff != "" {
					t.Errorf("JobManager startup probe (-want +got):\n%s", diff)
				}
				if c.TaskManager != nil {
					if p := mainContainer(t, c.TaskManager.Spec.Template.Spec).StartupProbe; p != nil && !cmp.Equal(p, userProbe) {
						t.Errorf("TaskManager startup probe %+v: only a template's may be there", p)
					}
				}
				if c.PodTemplateConfigMap != nil && strings.Contains(c.PodTemplateConfigMap.Data[TaskManagerPodTemplateFile], "/config") {
					t.Errorf("native TaskManager pod template got the startup probe:\n%s", c.PodTemplateConfigMap.Data[TaskManagerPodTemplateFile])
				}
				// The readiness probe stays as it was.
				if p := mainContainer(t, c.JobManager.Spec.Template.Spec).ReadinessProbe; p == nil || p.TCPSocket == nil {
					t.Errorf("readiness probe %+v", p)
				}
			})
		}
	}
}

func TestJobManagerStartupProbeInvalidValue(t *testing.T) {
	for _, mode := range []func(*Input){func(*Input) {}, native} {
		_, err := Build(input(application(), mode, func(in *Input) {
			in.Spec.FlinkConfiguration = flinkConf(map[string]any{config.KeyJMDeploymentStartupProbeEnabled: "yes"})
		}))
		if err == nil || !strings.Contains(err.Error(), config.KeyJMDeploymentStartupProbeEnabled) {
			t.Errorf("Build: %v, want an error naming the key", err)
		}
	}
}

// TestStartupProbeOnlyChangesTheJobManager: turning the probe on or off
// changes the JobManager Deployment (which the controller never updates in
// place) and nothing else: not the ConfigMap, not the pods' config hash,
// not the TaskManager Deployment, not the Services. So an operator upgrade
// that brings the probe rolls no running cluster's pods.
func TestStartupProbeOnlyChangesTheJobManager(t *testing.T) {
	for _, mode := range []func(*Input){func(*Input) {}, native} {
		on := mustBuild(t, input(application(), mode))
		off := mustBuild(t, input(application(), mode, func(in *Input) {
			in.OperatorConfig = config.Defaults()
			in.OperatorConfig[config.KeyJMDeploymentStartupProbeEnabled] = "false"
		}))
		if SpecHashChanged(on.ConfigMap, off.ConfigMap) || SpecHashChanged(on.RPCService, off.RPCService) || SpecHashChanged(on.RESTService, off.RESTService) {
			t.Error("ConfigMap or Services changed with the startup probe")
		}
		if on.TaskManager != nil && SpecHashChanged(on.TaskManager, off.TaskManager) {
			t.Error("TaskManager Deployment changed with the startup probe")
		}
		if a, b := on.JobManager.Spec.Template.Annotations[AnnotationConfigHash], off.JobManager.Spec.Template.Annotations[AnnotationConfigHash]; a != b {
			t.Errorf("config hash %s vs %s", a, b)
		}
		if !SpecHashChanged(on.JobManager, off.JobManager) {
			t.Error("JobManager spec hash ignores the startup probe")
		}
	}
}
