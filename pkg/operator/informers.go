package operator

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	clientset "github.com/flinkops/flink-operator/pkg/clients/flink"
	"github.com/flinkops/flink-operator/pkg/clients/kubernetes"
	"github.com/flinkops/flink-operator/pkg/cluster"
	"github.com/flinkops/flink-operator/pkg/config"
	"github.com/flinkops/flink-operator/pkg/endpoints"
	flinkinformers "github.com/flinkops/flink-operator/pkg/generated/informers/externalversions"
	flinkv1beta1informers "github.com/flinkops/flink-operator/pkg/generated/informers/externalversions/flink/v1beta1"
	kubeinformers "github.com/flinkops/flink-operator/pkg/generated/kube/informers"
)

// Informers holds the shared informer factories: one for the flink.apache.org
// types and one for Kubernetes types, per watched namespace (a single
// all-namespace pair when no namespaces are given). Per-namespace factories
// let the operator run with namespaced RBAC only.
//
// The Kubernetes factories only see objects labelled
// type=flink-standalone-kubernetes or flink-native-kubernetes: the
// ConfigMaps, Deployments, Services and pods of the Flink clusters. The operator never needs
// the rest, and caching every Deployment and ConfigMap of a busy cluster
// would cost memory for nothing.
//
// The flink.apache.org factories see every FlinkDeployment, FlinkSessionJob
// and FlinkStateSnapshot of the watched namespaces, or, with
// kubernetes.operator.label.selector (NewInformersWithSelector), only those
// matching it: as upstream, which sets it on all its controllers, an
// operator ignores the custom resources another operator (sharded by label)
// manages. The FlinkStateSnapshots the operator makes carry the labels of
// their job (pkg/snapshotrules), so they match the selector their job
// matches; a snapshot a user creates must be labelled to be seen. The
// Kubernetes factories are not affected: they select the clusters' objects
// by the operator's own type label, and only the objects of resources the
// controllers see are ever acted on.
type Informers struct {
	Flink map[string]flinkinformers.SharedInformerFactory
	Kube  map[string]kubeinformers.SharedInformerFactory
	// flinkTweak applies kubernetes.operator.label.selector (nil: none).
	flinkTweak func(*metav1.ListOptions)
}

// OwnedSelector selects the Kubernetes objects of the Flink clusters: the
// ones the operator builds (pkg/cluster labels every one of them) and, in
// native mode, the TaskManager pods and HA ConfigMaps Flink creates with
// the same type label.
var OwnedSelector = cluster.LabelType + " in (" + cluster.TypeStandalone + "," + cluster.TypeNative + ")"

// NewInformers creates the factories for the given namespaces, watching
// every custom resource in them.
func NewInformers(kube kubernetes.Interface, flink clientset.Interface, namespaces []string, resync time.Duration) *Informers {
	inf, _ := NewInformersWithSelector(kube, flink, namespaces, resync, "") // "" always parses
	return inf
}

// NewInformersWithSelector is NewInformers with the flink.apache.org
// factories listing and watching only the custom resources that match
// selector (kubernetes.operator.label.selector; "" or blanks: all). An
// invalid selector is an error that names the key, so the operator stops at
// start instead of watching nothing (the API server would refuse every list).
func NewInformersWithSelector(kube kubernetes.Interface, flink clientset.Interface, namespaces []string, resync time.Duration, selector string) (*Informers, error) {
	sel, err := ParseLabelSelector(selector)
	if err != nil {
		return nil, err
	}
	if len(namespaces) == 0 {
		namespaces = []string{metav1.NamespaceAll}
	}
	inf := &Informers{
		Flink: map[string]flinkinformers.SharedInformerFactory{},
		Kube:  map[string]kubeinformers.SharedInformerFactory{},
	}
	if sel != "" {
		inf.flinkTweak = func(o *metav1.ListOptions) { o.LabelSelector = sel }
	}
	for _, ns := range namespaces {
		flinkOpts := []flinkinformers.SharedInformerOption{flinkinformers.WithNamespace(ns), flinkinformers.WithTransform(trimFlinkObject)}
		if inf.flinkTweak != nil {
			flinkOpts = append(flinkOpts, flinkinformers.WithTweakListOptions(inf.flinkTweak))
		}
		inf.Flink[ns] = flinkinformers.NewSharedInformerFactoryWithOptions(flink, resync, flinkOpts...)
		if ns != metav1.NamespaceAll {
			withoutNamespaceIndex(inf.Flink[ns], ns, inf.flinkTweak)
		}
		inf.Kube[ns] = kubeinformers.NewSharedInformerFactoryWithOptions(kube, resync, kubeinformers.WithNamespace(ns),
			kubeinformers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = OwnedSelector }),
			kubeinformers.WithTransform(trimKubeObject))
		// A Flink cluster's pods by namespace and app label, for the
		// deployment controller and the pod-ip endpoints (before any
		// informer starts: indexes cannot be added to a running one).
		if err := inf.Kube[ns].Core().V1().Pods().Informer().AddIndexers(cache.Indexers{endpoints.PodsByCluster: endpoints.ClusterIndex}); err != nil {
			return nil, err
		}
	}
	return inf, nil
}

// withoutNamespaceIndex makes f's FlinkDeployment and FlinkSessionJob
// informers, which watch the one namespace ns, without client-go's default
// namespace index: in a one-namespace informer that index is a second set
// of every key (about 40 bytes per cached object), and the operator reads
// these caches by key and by its own indexes (pkg/cache), never through a
// lister's List by namespace, which would fall back to a scan with a
// warning. The transform and resync are the factory's own (InformerFor
// applies them); an all-namespace factory keeps the index. The
// FlinkStateSnapshot informers are made so by SnapshotsWithoutNamespaceIndex,
// only when that CRD is served.
func withoutNamespaceIndex(f flinkinformers.SharedInformerFactory, ns string, tweak func(*metav1.ListOptions)) {
	// A map each: an informer keeps the one it is given and AddIndexers
	// (pkg/cache) adds to it.
	f.InformerFor(&v1beta1.FlinkDeployment{}, func(c clientset.Interface, resync time.Duration) cache.SharedIndexInformer {
		return flinkv1beta1informers.NewFilteredFlinkDeploymentInformer(c, ns, resync, cache.Indexers{}, tweak)
	})
	f.InformerFor(&v1beta1.FlinkSessionJob{}, func(c clientset.Interface, resync time.Duration) cache.SharedIndexInformer {
		return flinkv1beta1informers.NewFilteredFlinkSessionJobInformer(c, ns, resync, cache.Indexers{}, tweak)
	})
}

// SnapshotsWithoutNamespaceIndex requests the FlinkStateSnapshot informers
// of the one-namespace factories without the namespace index (the
// snapshots are most of the cached objects: 10,000 keys fewer at make
// bench-scale's size); the all-namespace factory's keeps it. Call it before
// pkg/cache requests them, and only when the FlinkStateSnapshot CRD is
// served: a requested informer is started and waited for, and would never
// sync without it (legacy mode).
func (i *Informers) SnapshotsWithoutNamespaceIndex() {
	for ns, f := range i.Flink {
		if ns == metav1.NamespaceAll {
			continue
		}
		f.InformerFor(&v1beta1.FlinkStateSnapshot{}, func(c clientset.Interface, resync time.Duration) cache.SharedIndexInformer {
			return flinkv1beta1informers.NewFilteredFlinkStateSnapshotInformer(c, ns, resync, cache.Indexers{}, i.flinkTweak)
		})
	}
}

// ParseLabelSelector checks a kubernetes.operator.label.selector value
// (Kubernetes label-selector syntax, e.g. `team=a,env in (prod)`) and
// returns it in the canonical form the API server is sent; "" (or blanks)
// selects everything and is returned as "".
func ParseLabelSelector(selector string) (string, error) {
	sel, err := labels.Parse(selector)
	if err != nil {
		return "", fmt.Errorf("%s: invalid label selector %q: %w", config.KeyLabelSelector, selector, err)
	}
	return sel.String(), nil
}

// Start starts every informer requested so far.
func (i *Informers) Start(stop <-chan struct{}) {
	for _, f := range i.Flink {
		f.Start(stop)
	}
	for _, f := range i.Kube {
		f.Start(stop)
	}
}

// WaitForCacheSync blocks until every started informer has synced, or ctx ends.
func (i *Informers) WaitForCacheSync(ctx context.Context) error {
	for ns, f := range i.Flink {
		for typ, ok := range f.WaitForCacheSync(ctx.Done()) {
			if !ok {
				return fmt.Errorf("informer cache for %v in namespace %q did not sync", typ, ns)
			}
		}
	}
	for ns, f := range i.Kube {
		for typ, ok := range f.WaitForCacheSync(ctx.Done()) {
			if !ok {
				return fmt.Errorf("informer cache for %v in namespace %q did not sync", typ, ns)
			}
		}
	}
	return nil
}

// Shutdown stops the factories' goroutines after the stop channel closed.
func (i *Informers) Shutdown() {
	for _, f := range i.Flink {
		f.Shutdown()
	}
	for _, f := range i.Kube {
		f.Shutdown()
	}
}

// trimKubeObject is dropManagedFields, and drops what the operator never
// reads of the Flink clusters' objects, most of their size, once per
// cluster or TaskManager:
//   - a pod's spec (containers, env, volumes, arguments): pods are read for
//     their metadata and status only (the failure classification of
//     pkg/controller/deployment/pods.go, the pod-ip endpoint resolver);
//   - a Deployment's pod template: Deployments are read for their metadata
//     (the spec-hash and Flink-version annotations), replicas and status;
//   - a ConfigMap's data, except the HA ConfigMaps Flink writes
//     (cluster.IsAnyHAConfigMap; their checkpoint pointers and job graphs
//     are read): the operator's own ConfigMaps are
//     compared by their spec-hash annotation.
//
// An update built from a cached copy must therefore set the whole spec or
// data it writes (pkg/controller/deployment/reconcile.go does), never patch
// a field of a trimmed copy.
func trimKubeObject(obj any) (any, error) {
	switch o := obj.(type) {
	case *corev1.Pod:
		o.Spec = corev1.PodSpec{NodeName: o.Spec.NodeName}
	case *appsv1.Deployment:
		o.Spec.Template = corev1.PodTemplateSpec{}
	case *corev1.ConfigMap:
		if !cluster.IsAnyHAConfigMap(o) {
			o.Data, o.BinaryData = nil, nil
		}
	}
	return dropManagedFields(obj)
}

// trimFlinkObject is dropManagedFields, and shares the repeated strings of
// the flink.apache.org objects (internFlinkObject): the caches hold them by
// the thousand (terminal snapshots), so their size is the operator's memory.
func trimFlinkObject(obj any) (any, error) {
	internFlinkObject(obj)
	return dropManagedFields(obj)
}

// dropManagedFields strips metadata.managedFields from every cached object:
// the operator never reads them, and they are often the largest part of a
// small object. An update sent from a cached copy leaves them nil, which the
// API server takes as "unchanged". (The last-applied annotation stays: an
// Update from the cache without it would delete it on the server and break
// kubectl apply's three-way merge.)
func dropManagedFields(obj any) (any, error) {
	if m, err := meta.Accessor(obj); err == nil {
		m.SetManagedFields(nil)
	}
	return obj, nil
}
