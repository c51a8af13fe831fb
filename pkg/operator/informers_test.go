package operator

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	flinkcache "github.com/flinkops/flink-operator/pkg/cache"
	"github.com/flinkops/flink-operator/pkg/cluster"
	"github.com/flinkops/flink-operator/pkg/config"
	"github.com/flinkops/flink-operator/pkg/endpoints"
	flinkfake "github.com/flinkops/flink-operator/pkg/generated/clientset/versioned/fake"
	kubefake "github.com/flinkops/flink-operator/pkg/generated/kube/kubernetes/fake"
	"github.com/flinkops/flink-operator/pkg/webhook"
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

// The pod caches are indexed by Flink cluster, so a cluster's pods are found
// without a scan of the namespace.
func TestInformersIndexPodsByCluster(t *testing.T) {
	labelled := func(name, app string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name,
			Labels: map[string]string{cluster.LabelType: cluster.TypeStandalone, cluster.LabelApp: app}}}
	}
	inf := NewInformers(kubefake.NewSimpleClientset(labelled("a-jm", "a"), labelled("b-jm", "b")), flinkfake.NewSimpleClientset(), []string{"ns"}, 0)
	indexer := inf.Kube["ns"].Core().V1().Pods().Informer().GetIndexer()
	startSynced(t, inf)
	if _, ok := indexer.GetIndexers()[endpoints.PodsByCluster]; !ok {
		t.Fatal("the pod informer has no index by cluster")
	}
	got, err := indexer.ByIndex(endpoints.PodsByCluster, "ns/a")
	if err != nil || len(got) != 1 || got[0].(*corev1.Pod).Name != "a-jm" {
		t.Fatalf("pods of cluster ns/a from the index: %v, %v; want a-jm", got, err)
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
	haMap2 := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "y-" + jobID + "-config-map", Labels: cluster.CommonLabels(cluster.Native, "y")},
		Data: map[string]string{"checkpointID-0000000000000000008": "pointer"}}
	nativeConf := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "flink-config-y", Labels: cluster.CommonLabels(cluster.Native, "y")},
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

// With kubernetes.operator.label.selector the flink.apache.org informers
// list and watch only the custom resources that match it (the fake
// clientset filters lists by label, not watches: the recorded watches are
// checked for the selector instead); the Kubernetes informers keep the
// operator's own selector. The webhook's lookup still finds a resource the
// selector hides, through its live fallback, so it validates alike.
func TestInformersLabelSelector(t *testing.T) {
	team := func(v string) map[string]string {
		if v == "" {
			return nil
		}
		return map[string]string{"team": v, "env": "prod"}
	}
	var objs []runtime.Object
	for _, v := range []string{"a", "b", ""} {
		name := "job-" + v
		if v == "" {
			name = "unlabelled"
		}
		meta := metav1.ObjectMeta{Namespace: "ns", Name: name, Labels: team(v)}
		objs = append(objs, &v1beta1.FlinkDeployment{ObjectMeta: meta}, &v1beta1.FlinkSessionJob{ObjectMeta: meta},
			&v1beta1.FlinkStateSnapshot{ObjectMeta: meta})
	}
	for _, tc := range []struct {
		name, selector string
		namespaces     []string
		want           []string
		wantSelector   string
	}{
		{"no selector", "", nil, []string{"job-a", "job-b", "unlabelled"}, ""},
		{"blank selector", "  ", nil, []string{"job-a", "job-b", "unlabelled"}, ""},
		{"equality", "team=a", nil, []string{"job-a"}, "team=a"},
		{"set, per namespace", "team in (a),env in (prod)", []string{"ns"}, []string{"job-a"}, "env in (prod),team in (a)"},
		{"not in", "team notin (a)", nil, []string{"job-b", "unlabelled"}, "team notin (a)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			flink := flinkfake.NewSimpleClientset(objs...)
			kube := kubefake.NewSimpleClientset()
			inf, err := NewInformersWithSelector(kube, flink, tc.namespaces, 0, tc.selector)
			if err != nil {
				t.Fatal(err)
			}
			ns := metav1.NamespaceAll
			if len(tc.namespaces) > 0 {
				ns = tc.namespaces[0]
			}
			v := inf.Flink[ns].Flink().V1beta1()
			deps, jobs, snaps := v.FlinkDeployments().Lister(), v.FlinkSessionJobs().Lister(), v.FlinkStateSnapshots().Lister()
			inf.Kube[ns].Apps().V1().Deployments().Lister()
			lookup := webhook.NewListerLookup(inf.Flink).WithLiveFallback(flink, 5*time.Second)
			startSynced(t, inf)

			names := func(list []metav1.Object) []string {
				var out []string
				for _, o := range list {
					out = append(out, o.GetName())
				}
				slices.Sort(out)
				return out
			}
			d, _ := deps.List(labels.Everything())
			j, _ := jobs.List(labels.Everything())
			s, _ := snaps.List(labels.Everything())
			for kind, got := range map[string][]string{
				"FlinkDeployments":    names(asObjects(d)),
				"FlinkSessionJobs":    names(asObjects(j)),
				"FlinkStateSnapshots": names(asObjects(s)),
			} {
				if !slices.Equal(got, tc.want) {
					t.Errorf("cached %s %v, want %v", kind, got, tc.want)
				}
			}
			for _, a := range flink.Actions() {
				if a.GetVerb() != "list" && a.GetVerb() != "watch" {
					continue
				}
				var got string
				switch a := a.(type) {
				case k8stesting.ListActionImpl:
					got = a.ListOptions.LabelSelector
				case k8stesting.WatchActionImpl:
					got = a.ListOptions.LabelSelector
				}
				if got != tc.wantSelector {
					t.Errorf("%s %s with label selector %q, want %q", a.GetVerb(), a.GetResource().Resource, got, tc.wantSelector)
				}
			}
			for _, a := range kube.Actions() {
				if w, ok := a.(k8stesting.WatchActionImpl); ok && w.ListOptions.LabelSelector != OwnedSelector {
					t.Errorf("watch %s with label selector %q, want the operator's own %q", a.GetResource().Resource, w.ListOptions.LabelSelector, OwnedSelector)
				}
			}
			// Any operator's webhook finds every resource, matching or not.
			for _, name := range []string{"job-a", "job-b", "unlabelled"} {
				if _, err := lookup.Deployment("ns", name); err != nil {
					t.Errorf("webhook lookup of FlinkDeployment %s: %v", name, err)
				}
				if _, err := lookup.SessionJob("ns", name); err != nil {
					t.Errorf("webhook lookup of FlinkSessionJob %s: %v", name, err)
				}
			}
		})
	}
}

func asObjects[T metav1.Object](list []T) []metav1.Object {
	out := make([]metav1.Object, len(list))
	for i, o := range list {
		out[i] = o
	}
	return out
}

// An invalid selector is refused, naming the key, before anything starts.
func TestInformersInvalidLabelSelector(t *testing.T) {
	for _, sel := range []string{"team in (a", "!", "team=a b", "Team/x=1"} {
		inf, err := NewInformersWithSelector(kubefake.NewSimpleClientset(), flinkfake.NewSimpleClientset(), nil, 0, sel)
		if err == nil || inf != nil || !strings.Contains(err.Error(), config.KeyLabelSelector) || !strings.Contains(err.Error(), strconv.Quote(sel)) {
			t.Errorf("selector %q: informers %v, error %v; want an error naming %s and the value", sel, inf, err, config.KeyLabelSelector)
		}
	}
}

// A one-namespace factory's flink.apache.org informers carry no namespace
// index (a second set of every key there), and are otherwise the factory's:
// its transform and label selector apply and reads by key work. An
// all-namespace factory keeps the index.
func TestPerNamespaceInformersHaveNoNamespaceIndex(t *testing.T) {
	managed := []metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationApply, FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:spec":{}}`)}}}
	meta := metav1.ObjectMeta{Namespace: "ns", Name: "s", ManagedFields: managed, Labels: map[string]string{"team": "a"}}
	flink := flinkfake.NewSimpleClientset(&v1beta1.FlinkStateSnapshot{ObjectMeta: meta}, &v1beta1.FlinkDeployment{ObjectMeta: meta},
		&v1beta1.FlinkSessionJob{ObjectMeta: meta})
	inf, err := NewInformersWithSelector(kubefake.NewSimpleClientset(), flink, []string{"ns"}, 0, "team=a")
	if err != nil {
		t.Fatal(err)
	}
	inf.SnapshotsWithoutNamespaceIndex()
	v := inf.Flink["ns"].Flink().V1beta1()
	informers := map[string]cache.SharedIndexInformer{
		"FlinkDeployment": v.FlinkDeployments().Informer(), "FlinkSessionJob": v.FlinkSessionJobs().Informer(),
		"FlinkStateSnapshot": v.FlinkStateSnapshots().Informer(),
	}
	snaps := v.FlinkStateSnapshots().Lister()
	if _, err := flinkcache.New(inf.Flink); err != nil { // the controllers' own indexes, per informer
		t.Fatal(err)
	}
	startSynced(t, inf)
	for kind, i := range informers {
		if _, ok := i.GetIndexer().GetIndexers()[cache.NamespaceIndex]; ok {
			t.Errorf("%s informer of one namespace has the namespace index", kind)
		}
		if got := len(i.GetStore().ListKeys()); got != 1 {
			t.Errorf("%s informer caches %d objects, want 1", kind, got)
		}
	}
	got, err := snaps.FlinkStateSnapshots("ns").Get("s")
	if err != nil {
		t.Fatal(err)
	}
	if got.ManagedFields != nil {
		t.Errorf("the factory's transform did not run: managedFields %v", got.ManagedFields)
	}
	for _, a := range flink.Actions() {
		if l, ok := a.(k8stesting.ListActionImpl); ok && l.ListOptions.LabelSelector != "team=a" {
			t.Errorf("list %s with label selector %q, want team=a", a.GetResource().Resource, l.ListOptions.LabelSelector)
		}
	}

	all := NewInformers(kubefake.NewSimpleClientset(), flinkfake.NewSimpleClientset(), nil, 0)
	if _, ok := all.Flink[""].Flink().V1beta1().FlinkStateSnapshots().Informer().GetIndexer().GetIndexers()[cache.NamespaceIndex]; !ok {
		t.Error("the all-namespace snapshot informer lost its namespace index")
	}
}

// The controllers' wiring: with the FlinkStateSnapshot CRD served, the
// one-namespace snapshot informers come without the namespace index; in
// legacy mode (the CRD missing) no snapshot informer is requested at all,
// as one would be started and never sync.
func TestControllersRequestSnapshotInformersOnlyWithTheCRD(t *testing.T) {
	for _, missing := range []bool{false, true} {
		t.Run(fmt.Sprintf("CRD missing %v", missing), func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			kube, flink := kubefake.NewSimpleClientset(), flinkfake.NewSimpleClientset()
			inf := NewInformers(kube, flink, []string{"a", "b"}, 0)
			opts := &runState{Options: Options{Config: config.Defaults()}, snapshotCRDMissing: missing}
			c, err := newControllers(ctx, clients{kube: kube, flink: flink, events: kube.CoreV1()}, inf, opts)
			if err != nil {
				t.Fatal(err)
			}
			defer c.shutdown()
			for ns, f := range inf.Flink {
				f.Start(ctx.Done())
				var started []string
				for typ, ok := range f.WaitForCacheSync(ctx.Done()) {
					if !ok {
						t.Fatalf("%s: %v did not sync", ns, typ)
					}
					started = append(started, typ.Elem().Name())
				}
				if got := slices.Contains(started, "FlinkStateSnapshot"); got == missing {
					t.Errorf("namespace %s: informers started %v; a FlinkStateSnapshot one: %v, want %v", ns, started, got, !missing)
				}
				if !missing {
					indexers := f.Flink().V1beta1().FlinkStateSnapshots().Informer().GetIndexer().GetIndexers()
					if _, ok := indexers[cache.NamespaceIndex]; ok {
						t.Errorf("namespace %s: the snapshot informer has the namespace index", ns)
					}
				}
			}
		})
	}
}
