package deployment

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	networkinglisters "k8s.io/client-go/listers/networking/v1"
	"k8s.io/client-go/tools/cache"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/cluster"
	"github.com/flinkops/flink-operator/pkg/endpoints"
	kubeinformers "github.com/flinkops/flink-operator/pkg/generated/kube/informers"
	"github.com/flinkops/flink-operator/pkg/pernamespace"
)

// ownedCache is the controller's read-only view of the Kubernetes objects
// of its Flink clusters, per watched namespace ("" = all), like pkg/cache
// for the flink.apache.org types.
type ownedCache struct {
	informers pernamespace.View[*ownedInformers]
}

type ownedInformers struct {
	deployments appslisters.DeploymentLister
	services    corelisters.ServiceLister
	configMaps  corelisters.ConfigMapLister
	informers   []cache.SharedIndexInformer
	// podInformer has the Flink clusters' pods (pods.go), with their own
	// handler, indexed by cluster (endpoints.PodsByCluster).
	podInformer cache.SharedIndexInformer
	// ingresses is nil unless the operator manages Ingresses (ingress.go).
	ingresses networkinglisters.IngressLister
}

// newOwnedCache requests the Deployment, Service, ConfigMap and Pod (and,
// with manageIngress, Ingress) informers from the factories; call it before
// they are started.
func newOwnedCache(factories map[string]kubeinformers.SharedInformerFactory, manageIngress bool) *ownedCache {
	c := &ownedCache{}
	for ns, f := range factories {
		d, s, m, p := f.Apps().V1().Deployments(), f.Core().V1().Services(), f.Core().V1().ConfigMaps(), f.Core().V1().Pods()
		inf := &ownedInformers{
			deployments: d.Lister(), services: s.Lister(), configMaps: m.Lister(),
			informers:   []cache.SharedIndexInformer{d.Informer(), s.Informer(), m.Informer()},
			podInformer: p.Informer(),
		}
		if manageIngress {
			i := f.Networking().V1().Ingresses()
			inf.ingresses, inf.informers = i.Lister(), append(inf.informers, i.Informer())
		}
		c.informers.Set(ns, inf)
	}
	return c
}

func (c *ownedCache) addEventHandler(h cache.ResourceEventHandler) error {
	for inf := range c.informers.Each() {
		for _, i := range inf.informers {
			if _, err := i.AddEventHandler(h); err != nil {
				return err
			}
		}
	}
	return nil
}

// addPodEventHandler registers h on the pod informers.
func (c *ownedCache) addPodEventHandler(h cache.ResourceEventHandler) error {
	for inf := range c.informers.Each() {
		if _, err := inf.podInformer.AddEventHandler(h); err != nil {
			return err
		}
	}
	return nil
}

func (c *ownedCache) hasSynced() bool {
	for inf := range c.informers.Each() {
		for _, i := range append([]cache.SharedIndexInformer{inf.podInformer}, inf.informers...) {
			if !i.HasSynced() {
				return false
			}
		}
	}
	return true
}

func (c *ownedCache) forNamespace(ns string) *ownedInformers {
	inf, _ := c.informers.For(ns)
	return inf
}

// ownedObjects are the live objects of one Flink cluster (nil = absent).
type ownedObjects struct {
	configMap *corev1.ConfigMap
	// podTemplate is pod-template-<name>, the TaskManager pod template of
	// a native cluster.
	podTemplate *corev1.ConfigMap
	jobManager  *appsv1.Deployment
	taskManager *appsv1.Deployment
	rpcService  *corev1.Service
	restService *corev1.Service
	ingress     *networkingv1.Ingress
}

// liveStandalone: the live cluster is a standalone one (only standalone
// clusters have a TaskManager Deployment; the JobManager's type label says
// which mode built it).
func (o ownedObjects) liveStandalone() bool {
	return o.taskManager != nil || (o.jobManager != nil && o.jobManager.Labels[cluster.LabelType] == cluster.TypeStandalone)
}

// objectsOf reads a FlinkDeployment's cluster objects from the caches. An
// object of the right name that another controller owns is returned too:
// the caller refuses to touch it.
func (c *ownedCache) objectsOf(dep *v1beta1.FlinkDeployment) (ownedObjects, error) {
	var o ownedObjects
	inf := c.forNamespace(dep.Namespace)
	if inf == nil {
		return o, nil
	}
	ns, name := dep.Namespace, dep.Name
	var err error
	if o.configMap, err = absentIsNil(inf.configMaps.ConfigMaps(ns).Get(cluster.ConfigMapName(name))); err != nil {
		return o, err
	}
	if o.podTemplate, err = absentIsNil(inf.configMaps.ConfigMaps(ns).Get(cluster.PodTemplateConfigMapName(name))); err != nil {
		return o, err
	}
	if o.jobManager, err = absentIsNil(inf.deployments.Deployments(ns).Get(cluster.JobManagerDeploymentName(name))); err != nil {
		return o, err
	}
	if o.taskManager, err = absentIsNil(inf.deployments.Deployments(ns).Get(cluster.TaskManagerDeploymentName(name))); err != nil {
		return o, err
	}
	if o.rpcService, err = absentIsNil(inf.services.Services(ns).Get(cluster.RPCServiceName(name))); err != nil {
		return o, err
	}
	if o.restService, err = absentIsNil(inf.services.Services(ns).Get(cluster.RESTServiceName(name))); err != nil {
		return o, err
	}
	if inf.ingresses != nil {
		if o.ingress, err = absentIsNil(inf.ingresses.Ingresses(ns).Get(cluster.IngressName(name))); err != nil {
			return o, err
		}
	}
	return o, nil
}

func absentIsNil[T any](obj *T, err error) (*T, error) {
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	return obj, err
}

// ownedBy reports whether obj is dep's: one of its owner references names
// dep (kind FlinkDeployment of flink.apache.org, dep's name and UID; any
// UID when dep has none, as in tests), whatever its controller flag, and
// no other object controls it. The operator makes dep the controller of
// what it creates; the JobManager Deployment of a cluster upstream's
// operator deployed carries the reference upstream's setOwnerReference
// hands Flink (kubernetes.jobmanager.owner.reference: controller false,
// blockOwnerDeletion true), as do both Deployments of its standalone
// clusters. An object owned by nobody, or controlled by something else, is
// never touched.
func ownedBy(obj metav1.Object, dep *v1beta1.FlinkDeployment) bool {
	if ref := metav1.GetControllerOf(obj); ref != nil {
		return refersTo(*ref, dep)
	}
	for _, ref := range obj.GetOwnerReferences() {
		if refersTo(ref, dep) {
			return true
		}
	}
	return false
}

func refersTo(ref metav1.OwnerReference, dep *v1beta1.FlinkDeployment) bool {
	return ref.Kind == "FlinkDeployment" && ref.Name == dep.Name && isFlinkGroup(ref.APIVersion) &&
		(dep.UID == "" || ref.UID == dep.UID)
}

// ownedThroughJobManager reports whether obj, a Service or ConfigMap of
// dep's cluster, is controlled by jm, the live JobManager Deployment, while
// jm is dep's (ownedBy): how Flink's native client
// (Fabric8FlinkKubeClient.createJobManagerComponent) owns the Services and
// ConfigMaps it creates with the JobManager of a cluster upstream's
// operator deployed. They go with that Deployment (the garbage collector),
// so they are dep's only while it is there.
func ownedThroughJobManager(obj metav1.Object, dep *v1beta1.FlinkDeployment, jm *appsv1.Deployment) bool {
	switch obj.(type) {
	case *corev1.Service, *corev1.ConfigMap:
	default:
		return false
	}
	if jm == nil || jm.UID == "" || !ownedBy(jm, dep) {
		return false
	}
	ref := metav1.GetControllerOf(obj)
	return ref != nil && ref.Kind == "Deployment" && ref.Name == jm.Name && ref.UID == jm.UID &&
		ref.APIVersion == appsv1.SchemeGroupVersion.String()
}

// owns reports whether the operator may act on obj as a part of this
// sync's cluster (ownedBy, or ownedThroughJobManager).
func (sc *syncState) owns(obj metav1.Object) bool {
	return ownedBy(obj, sc.Obj()) || ownedThroughJobManager(obj, sc.Obj(), sc.owned.jobManager)
}

// nativeTaskManagerPods are the TaskManager pods Flink created for dep's
// native cluster (type=flink-native-kubernetes, component=taskmanager),
// from the pod informer.
func (c *ownedCache) nativeTaskManagerPods(dep *v1beta1.FlinkDeployment) ([]*corev1.Pod, error) {
	inf := c.forNamespace(dep.Namespace)
	if inf == nil || inf.podInformer == nil {
		return nil, nil
	}
	return endpoints.ClusterPods(inf.podInformer.GetIndexer(), dep.Namespace, dep.Name, labels.SelectorFromSet(cluster.Labels(cluster.Native, dep.Name, cluster.ComponentTaskManager)))
}

// haConfigMaps are the HA ConfigMaps Flink's Kubernetes HA created for
// dep's cluster (app=<name>, type=flink-native-kubernetes, in both modes;
// cluster.IsHAConfigMap: Flink 1.x's configmap-type=high-availability
// label, or Flink 2's names), from the informer.
func (c *ownedCache) haConfigMaps(dep *v1beta1.FlinkDeployment) ([]*corev1.ConfigMap, error) {
	inf := c.forNamespace(dep.Namespace)
	if inf == nil {
		return nil, nil
	}
	all, err := inf.configMaps.ConfigMaps(dep.Namespace).List(labels.SelectorFromSet(cluster.CommonLabels(cluster.Native, dep.Name)))
	if err != nil {
		return nil, err
	}
	var ha []*corev1.ConfigMap
	for _, cm := range all {
		if cluster.IsHAConfigMap(dep.Name, cm) {
			ha = append(ha, cm)
		}
	}
	return ha, nil
}
