package endpoints

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
)

func TestService(t *testing.T) {
	d := &v1beta1.FlinkDeployment{ObjectMeta: metav1.ObjectMeta{Name: "job", Namespace: "ns"}}
	if url, _ := Service(d, 8081); url != "http://job-rest.ns.svc:8081" {
		t.Errorf("url %s", url)
	}
}

func TestPodIP(t *testing.T) {
	d := &v1beta1.FlinkDeployment{ObjectMeta: metav1.ObjectMeta{Name: "job", Namespace: "ns"}}
	now := metav1.Now()
	ready := corev1.PodStatus{PodIP: "10.0.0.2", Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}
	pods := []*corev1.Pod{
		{ObjectMeta: metav1.ObjectMeta{Name: "old", DeletionTimestamp: &now}, Status: corev1.PodStatus{PodIP: "10.0.0.1", Conditions: ready.Conditions}},
		{ObjectMeta: metav1.ObjectMeta{Name: "starting"}, Status: corev1.PodStatus{PodIP: "10.0.0.3"}},
		{ObjectMeta: metav1.ObjectMeta{Name: "ready"}, Status: ready},
	}
	var gotSelector, gotApp string
	r := PodIP(func(ns, app string, sel labels.Selector) ([]*corev1.Pod, error) {
		gotSelector, gotApp = sel.String(), app
		return pods, nil
	})
	if url, err := r(d, 8081); err != nil || url != "http://10.0.0.2:8081" {
		t.Errorf("url %s, %v", url, err)
	}
	if gotSelector != "app=job,component=jobmanager" || gotApp != "job" {
		t.Errorf("selector %s, cluster %s", gotSelector, gotApp)
	}
	pods = pods[:2]
	if _, err := r(d, 8081); err == nil {
		t.Errorf("no ready pod: want an error")
	}
}

// ClusterPods finds a cluster's pods through the index when the informer has
// it and by a scan of the namespace when not, with the same answer.
func TestClusterPods(t *testing.T) {
	pod := func(ns, name, app, component string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"app": app, "component": component}}}
	}
	pods := []*corev1.Pod{
		pod("a", "job-jm", "job", "jobmanager"), pod("a", "job-tm", "job", "taskmanager"),
		pod("a", "other-jm", "other", "jobmanager"), pod("b", "job-jm", "job", "jobmanager"),
		{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "unlabelled"}},
	}
	indexed := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc, PodsByCluster: ClusterIndex})
	scanned := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	for _, p := range pods {
		_ = indexed.Add(p)
		_ = scanned.Add(p)
	}
	names := func(ps []*corev1.Pod) []string {
		var out []string
		for _, p := range ps {
			out = append(out, p.Namespace+"/"+p.Name)
		}
		slices.Sort(out)
		return out
	}
	for _, tc := range []struct {
		ns, app string
		sel     labels.Selector
		want    []string
	}{
		{"a", "job", nil, []string{"a/job-jm", "a/job-tm"}},
		{"a", "job", labels.SelectorFromSet(labels.Set{"component": "jobmanager"}), []string{"a/job-jm"}},
		{"b", "job", nil, []string{"b/job-jm"}},
		{"b", "other", nil, nil},
	} {
		for name, idx := range map[string]cache.Indexer{"index": indexed, "scan": scanned} {
			got, err := ClusterPods(idx, tc.ns, tc.app, tc.sel)
			if err != nil || !slices.Equal(names(got), tc.want) {
				t.Errorf("%s: ClusterPods(%s, %s, %v) = %v, %v; want %v", name, tc.ns, tc.app, tc.sel, names(got), err, tc.want)
			}
		}
	}
}
