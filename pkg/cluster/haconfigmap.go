package cluster

import (
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// The ConfigMaps Flink's Kubernetes HA creates (high-availability.type:
// kubernetes) for cluster <name> (Flink's kubernetes.cluster-id):
// <name>-cluster-config-map (leader election and addresses, and in Flink 2
// the execution plans) and <name>-<job id>-config-map (a job's checkpoint
// pointers and counter). Both carry Flink's common labels, app=<name> and
// type=flink-native-kubernetes, which are also on the operator's own
// flink-config-<name> and pod-template-<name> of a native cluster. Flink
// 1.x adds configmap-type=high-availability; Flink 2's
// KubernetesUtils.getConfigMapLabels no longer does, so the HA ConfigMaps
// are told apart by that label or by their names (upstream's operator
// selects by the common labels and tells them apart by name too,
// FlinkUtils.isValidHaConfigMap).

// HAConfigMapListSelector selects every ConfigMap with Flink's common
// labels of cluster name: the HA ConfigMaps of every Flink version and, in
// native mode, the operator's own ConfigMaps, which IsHAConfigMap rejects.
func HAConfigMapListSelector(name string) string {
	return labels.SelectorFromSet(CommonLabels(Native, name)).String()
}

// IsHAConfigMap reports whether cm is an HA ConfigMap Flink's Kubernetes HA
// created for cluster name: Flink's common labels of name, and either Flink
// 1.x's configmap-type=high-availability or one of the names Flink gives
// them (HAClusterConfigMapName, HAJobConfigMapName).
func IsHAConfigMap(name string, cm metav1.Object) bool {
	l := cm.GetLabels()
	if name == "" || l[LabelApp] != name || l[LabelType] != TypeNative {
		return false
	}
	if l[LabelConfigMapType] == ConfigMapTypeHA {
		return true
	}
	n := cm.GetName()
	if n == HAClusterConfigMapName(name) {
		return true
	}
	id, ok := strings.CutPrefix(n, name+"-")
	if !ok {
		return false
	}
	id, ok = strings.CutSuffix(id, "-config-map")
	return ok && isJobID(id)
}

// IsAnyHAConfigMap is IsHAConfigMap for the cluster cm's app label names.
func IsAnyHAConfigMap(cm metav1.Object) bool {
	return IsHAConfigMap(cm.GetLabels()[LabelApp], cm)
}

// isJobID: a Flink JobID as JobID.toString writes it, 32 lowercase hex
// digits.
func isJobID(s string) bool {
	if len(s) != 32 {
		return false
	}
	for _, c := range s {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}
