package cluster

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

// A native application's JobManager runs its job's main() whenever it
// starts, and without HA nothing tells a restarted one that the job has
// already ended: a JobManager pod restarted before
// jm-deployment.shutdown-ttl (container restart, eviction, node drain)
// would run a FINISHED, FAILED or CANCELED job again, from the restore path
// in its configuration. (With Kubernetes HA, Flink's job result store says
// so itself.) So every JobManager Deployment of a native application
// carries a token of its own (Input.DeployToken) in a guard before its
// command; once the operator has seen the job end, the cluster's ConfigMap
// names that token (EndedJobKey, Input.EndedToken; the caller leaves it out
// with HA); the JobManager container reads it into EndedJobEnv (an
// optional key: unset until then, read again at every container start by
// a kubelet; the node agent reads it when the pod starts), and the guard
// starts a session JobManager instead of the application when it names its
// own token: the REST API answers, nothing runs, and the pod stays healthy
// until the shutdown-ttl removes the cluster. The next JobManager
// Deployment has a new token, even when it runs the same job id (a
// last-state upgrade without HA keeps it), so a record its kubelet has not
// seen go yet never stops it.
const (
	// EndedJobKey is the flink-config ConfigMap key holding the token of
	// the JobManager whose job has ended.
	EndedJobKey = "flinkops-ended-job"
	// EndedJobEnv is the JobManager container's variable for EndedJobKey.
	EndedJobEnv = "FLINKOP_ENDED_JOB"
	// AnnotationDeployToken on a guarded JobManager Deployment is its
	// token, as in its guard: the operator's cache keeps a Deployment's
	// metadata, not its pod template.
	AnnotationDeployToken = "flinkops.io/deploy-token"
)

// endedJobGuard wraps a native application JobManager's script line: when
// EndedJobEnv names token, the session entrypoint starts instead.
func endedJobGuard(token, entrypointArgs string) string {
	return fmt.Sprintf(`if [ "${%s:-}" = "%s" ]; then echo "The job of this JobManager (%s) has ended: it does not run again (flink-operator)"; exec %s %s %s; fi; exec %s %s %s`,
		EndedJobEnv, token, token, KubernetesJobManagerScript, TargetSession, entrypointArgs,
		KubernetesJobManagerScript, TargetApplication, entrypointArgs)
}

// DeployTokenOf is the token of a JobManager Deployment's guard ("" for
// one built without it: a session cluster, a standalone one, or one
// deployed before the guard existed).
func DeployTokenOf(jm *appsv1.Deployment) string {
	if jm == nil {
		return ""
	}
	return jm.Annotations[AnnotationDeployToken]
}

// endedJobEnvVar reads EndedJobKey of the cluster's ConfigMap.
func endedJobEnvVar(clusterName string) corev1.EnvVar {
	return corev1.EnvVar{Name: EndedJobEnv, ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
		LocalObjectReference: corev1.LocalObjectReference{Name: ConfigMapName(clusterName)},
		Key:                  EndedJobKey,
		Optional:             ptr.To(true),
	}}}
}

// guardsEndedJob: a native application's JobManager with a deploy token
// gets the guard.
func (p *plan) guardsEndedJob() bool {
	return p.conf[keyExecutionTarget] == TargetApplication && p.in.DeployToken != ""
}
