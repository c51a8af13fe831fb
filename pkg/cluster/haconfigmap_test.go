package cluster

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// Flink 1.x's HA ConfigMaps (configmap-type label) and Flink 2's (common
// labels only, recognised by name) are HA ConfigMaps; the operator's own
// ConfigMaps with the same common labels, other clusters' and look-alike
// names are not.
func TestIsHAConfigMap(t *testing.T) {
	const job = "0123456789abcdef0123456789abcdef"
	flink2 := CommonLabels(Native, "demo")
	for _, c := range []struct {
		name   string
		labels map[string]string
		want   bool
	}{
		{"demo-cluster-config-map", HAConfigMapLabels("demo"), true},
		{"demo-" + job + "-config-map", HAConfigMapLabels("demo"), true},
		{"demo-cluster-config-map", flink2, true},
		{"demo-" + job + "-config-map", flink2, true},
		// Flink 1.x's label decides whatever the name.
		{"demo-something-else", HAConfigMapLabels("demo"), true},
		// The operator's own ConfigMaps of a native cluster.
		{ConfigMapName("demo"), flink2, false},
		{PodTemplateConfigMapName("demo"), flink2, false},
		// Not a job id, another cluster's labels, standalone labels, no labels.
		{"demo-" + job[:31] + "-config-map", flink2, false},
		{"demo-0123456789ABCDEF0123456789ABCDEF-config-map", flink2, false},
		{"demo-x-cluster-config-map", flink2, false},
		{"demo-cluster-config-map", CommonLabels(Native, "other"), false},
		{"demo-cluster-config-map", CommonLabels(Standalone, "demo"), false},
		{"demo-cluster-config-map", nil, false},
	} {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: c.name, Labels: c.labels}}
		if got := IsHAConfigMap("demo", cm); got != c.want {
			t.Errorf("IsHAConfigMap(demo, %s %v) = %v, want %v", c.name, c.labels, got, c.want)
		}
		if got := IsAnyHAConfigMap(cm); got != (c.want && c.labels[LabelApp] == "demo") {
			t.Errorf("IsAnyHAConfigMap(%s %v) = %v", c.name, c.labels, got)
		}
		if c.want {
			sel, err := labels.Parse(HAConfigMapListSelector("demo"))
			if err != nil {
				t.Fatal(err)
			}
			if !sel.Matches(labels.Set(c.labels)) {
				t.Errorf("HAConfigMapListSelector(demo) does not select %s %v", c.name, c.labels)
			}
		}
	}
}
