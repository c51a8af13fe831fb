package cluster

import (
	"math"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/flinkops/flink-operator/pkg/config"
)

// StartupProbePath is what the JobManager's startup probe GETs: Flink's
// dashboard configuration endpoint, which answers as soon as the REST
// server is up (upstream's FlinkUtils.addStartupProbe).
const StartupProbePath = "/config"

// addStartupProbe gives the JobManager's main container upstream's startup
// probe when kubernetes.operator.jm-deployment.startup.probe.enabled is on
// (the default) and the pod templates did not set a startup probe on it
// (the user's wins, as upstream). The probe never gives up
// (failureThreshold MaxInt32, period 1 s, both upstream's): it only holds
// back readiness, and with it the JobManager Deployment's availability,
// until Flink's REST API answers. It targets the port Flink binds REST to
// by number rather than upstream's port name "rest", so a template that
// redefines that port keeps the probe working.
func (p *plan) addStartupProbe(pod *corev1.PodTemplateSpec) error {
	on, err := p.options.Bool(config.KeyJMDeploymentStartupProbeEnabled)
	if err != nil || !on {
		return err
	}
	i := slices.IndexFunc(pod.Spec.Containers, func(c corev1.Container) bool { return c.Name == MainContainerName })
	c := &pod.Spec.Containers[i] // p.pod keeps the operator's main container
	if c.StartupProbe != nil {
		return nil
	}
	c.StartupProbe = &corev1.Probe{
		ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
			Path: StartupProbePath,
			Port: intstr.FromInt32(p.restBindPort),
		}},
		PeriodSeconds:    1,
		FailureThreshold: math.MaxInt32,
	}
	return nil
}
