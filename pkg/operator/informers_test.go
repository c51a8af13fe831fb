package operator

import (
	"context"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/cluster"
	flinkfake "github.com/flinkops/flink-operator/pkg/generated/clientset/versioned/fake"
)

// The caches hold no managedFields (never read, often most of an object);
// everything else, the last-applied annotation included, stays.
func TestInformersDropManagedFields(t *testing.T) {
	managed := []metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationApply, FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:spec":{}}`)}}}
	applied := map[string]string{"kubectl.kubernetes.io/last-applied-configuration": `{"spec":{}}`}
	snap := &v1beta1.FlinkStateSnapshot{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "s", ManagedFields: managed, Annotations: applied}}
	sel := labels.Set{cluster.LabelType: cluster.TypeStandalone}
	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "d", ManagedFields: managed, Labels: sel}}
	kube := kubefake.NewSimpleClientset(dep)
	flink := flinkfake.NewSimpleClientset(snap)
	inf := NewInformers(kube, flink, nil, 0)
	snaps := inf.Flink[""].Flink().V1beta1().FlinkStateSnapshots().Lister()
	deps := inf.Kube[""].Apps().V1().Deployments().Lister()
	ctx, cancel := context.WithCancel(context.Background())
	inf.Start(ctx.Done())
	defer func() {
		cancel() // the informers stop only once their stop channel closes
		inf.Shutdown()
	}()
	if err := inf.WaitForCacheSync(ctx); err != nil {
		t.Fatal(err)
	}
	gotSnap, err := snaps.FlinkStateSnapshots("ns").Get("s")
	if err != nil {
		t.Fatal(err)
	}
	if gotSnap.ManagedFields != nil || gotSnap.Annotations["kubectl.kubernetes.io/last-applied-configuration"] == "" {
		t.Errorf("cached snapshot: managedFields %v, annotations %v", gotSnap.ManagedFields, gotSnap.Annotations)
	}
	gotDep, err := deps.Deployments("ns").Get("d")
	if err != nil {
		t.Fatal(err)
	}
	if gotDep.ManagedFields != nil {
		t.Errorf("cached Deployment keeps managedFields %v", gotDep.ManagedFields)
	}
	// A tombstone passes through unchanged.
	tomb := cache.DeletedFinalStateUnknown{Key: "ns/s", Obj: snap}
	if got, err := dropManagedFields(tomb); err != nil || got.(cache.DeletedFinalStateUnknown).Key != "ns/s" {
		t.Errorf("tombstone: %v, %v", got, err)
	}
}

// Cached pods keep their metadata and status, not their spec (most of a
// Flink pod's size, read by nobody).
func TestInformersTrimPods(t *testing.T) {
	sel := labels.Set{cluster.LabelType: cluster.TypeStandalone}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", Labels: sel,
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubelet"}}},
		Spec:   corev1.PodSpec{NodeName: "n", Containers: []corev1.Container{{Name: "flink-main-container", Args: []string{"jobmanager"}}}},
		Status: corev1.PodStatus{PodIP: "10.0.0.1", ContainerStatuses: []corev1.ContainerStatus{{Name: "flink-main-container", RestartCount: 3}}},
	}
	inf := NewInformers(kubefake.NewSimpleClientset(pod), flinkfake.NewSimpleClientset(), nil, 0)
	pods := inf.Kube[""].Core().V1().Pods().Lister()
	startSynced(t, inf)
	got, err := pods.Pods("ns").Get("p")
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Spec.Containers) != 0 || got.Spec.NodeName != "n" || got.ManagedFields != nil {
		t.Errorf("cached pod spec %+v, managedFields %v", got.Spec, got.ManagedFields)
	}
	if got.Status.PodIP != "10.0.0.1" || got.Status.ContainerStatuses[0].RestartCount != 3 || got.Labels[cluster.LabelType] == "" {
		t.Errorf("cached pod lost its status or labels: %+v %v", got.Status, got.Labels)
	}
}

// The Kubernetes caches hold the objects of standalone and native Flink
// clusters (Flink labels its TaskManager pods and HA ConfigMaps
// flink-native-kubernetes), nothing else.
func TestOwnedSelector(t *testing.T) {
	sel, err := labels.Parse(OwnedSelector)
	if err != nil {
		t.Fatal(err)
	}
	for typ, want := range map[string]bool{cluster.TypeStandalone: true, cluster.TypeNative: true, "other": false, "": false} {
		set := labels.Set{"app": "x"}
		if typ != "" {
			set[cluster.LabelType] = typ
		}
		if got := sel.Matches(set); got != want {
			t.Errorf("type=%q: matches %v, want %v", typ, got, want)
		}
	}
}

// Cached Deployments keep metadata, replicas and status, not their pod
// template; cached ConfigMaps keep no data unless they are Flink's HA
// ConfigMaps (checkpoint pointers, read on last-state upgrades): Flink
// 1.x's, labelled configmap-type=high-availability, and Flink 2's, with
// Flink's common labels only.
func TestInformersTrimDeploymentsAndConfigMaps(t *testing.T) {
	std := labels.Set{cluster.LabelType: cluster.TypeStandalone}
	ha := labels.Set(cluster.HAConfigMapLabels("x"))
	replicas := int32(2)
	dep := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "d", Labels: std, Annotations: map[string]string{"hash": "h1"}},
		Spec: appsv1.DeploymentSpec{Replicas: &replicas, Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "flink-main-container", Args: []string{"taskmanager"}}}}}},
		Status: appsv1.DeploymentStatus{ReadyReplicas: 2},
	}
	conf := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "flink-config-x", Labels: std, Annotations: map[string]string{"hash": "h2"}},
		Data: map[string]string{"config.yaml": "a: b"}}
	haMap := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "x-cluster-config-map", Labels: ha},
		Data: map[string]string{"checkpointID-0000000000000000007": "pointer"}}
	const jobID = "0123456789abcdef0123456789abcdef"
	haMap2 := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "y-" + jobID + "-config-map", Labels: cluster.NativeCommonLabels("y")},
		Data: map[string]string{"checkpointID-0000000000000000008": "pointer"}}
	nativeConf := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "flink-config-y", Labels: cluster.NativeCommonLabels("y")},
		Data: map[string]string{"config.yaml": "a: b"}}
	inf := NewInformers(kubefake.NewSimpleClientset(dep, conf, haMap, haMap2, nativeConf), flinkfake.NewSimpleClientset(), nil, 0)
	deps := inf.Kube[""].Apps().V1().Deployments().Lister()
	cms := inf.Kube[""].Core().V1().ConfigMaps().Lister()
	startSynced(t, inf)
	gotDep, err := deps.Deployments("ns").Get("d")
	if err != nil {
		t.Fatal(err)
	}
	if len(gotDep.Spec.Template.Spec.Containers) != 0 || *gotDep.Spec.Replicas != 2 || gotDep.Status.ReadyReplicas != 2 || gotDep.Annotations["hash"] != "h1" {
		t.Errorf("cached Deployment: spec %+v, status %+v, annotations %v", gotDep.Spec, gotDep.Status, gotDep.Annotations)
	}
	gotConf, err := cms.ConfigMaps("ns").Get("flink-config-x")
	if err != nil {
		t.Fatal(err)
	}
	if gotConf.Data != nil || gotConf.Annotations["hash"] != "h2" {
		t.Errorf("cached ConfigMap: data %v, annotations %v", gotConf.Data, gotConf.Annotations)
	}
	gotHA, err := cms.ConfigMaps("ns").Get("x-cluster-config-map")
	if err != nil {
		t.Fatal(err)
	}
	if gotHA.Data["checkpointID-0000000000000000007"] != "pointer" {
		t.Errorf("cached HA ConfigMap lost its data: %v", gotHA.Data)
	}
	gotHA2, err := cms.ConfigMaps("ns").Get(haMap2.Name)
	if err != nil {
		t.Fatal(err)
	}
	if gotHA2.Data["checkpointID-0000000000000000008"] != "pointer" {
		t.Errorf("cached Flink 2 HA ConfigMap lost its data: %v", gotHA2.Data)
	}
	gotNative, err := cms.ConfigMaps("ns").Get("flink-config-y")
	if err != nil {
		t.Fatal(err)
	}
	if gotNative.Data != nil {
		t.Errorf("cached native flink-config ConfigMap kept its data: %v", gotNative.Data)
	}
}

// startSynced starts inf's informers until the test ends and waits for
// their caches.
func startSynced(t *testing.T, inf *Informers) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	inf.Start(ctx.Done())
	t.Cleanup(func() {
		cancel() // the informers stop only once their stop channel closes
		inf.Shutdown()
	})
	if err := inf.WaitForCacheSync(ctx); err != nil {
		t.Fatal(err)
	}
}
