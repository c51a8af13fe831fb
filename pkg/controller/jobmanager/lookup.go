package jobmanager

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/cluster"
	kubeinformers "github.com/flinkops/flink-operator/pkg/generated/kube/informers"
	"github.com/flinkops/flink-operator/pkg/pernamespace"
)

// Objects are the live objects of a cluster's JobManager (nil = absent).
type Objects struct {
	JobManager  *appsv1.Deployment
	RESTService *corev1.Service
}

// Lookup reads a cluster's JobManager Deployment and REST Service from
// informer caches.
type Lookup interface {
	// Objects returns the objects named after dep, whoever controls them
	// (Resolve ignores the ones dep does not control).
	Objects(dep *v1beta1.FlinkDeployment) (Objects, error)
	// HasSynced reports whether the caches have synced.
	HasSynced() bool
}

// NoObjects is a Lookup that never finds anything: the version then comes
// from the FlinkDeployment's recorded spec and the port from its
// configuration. For tests and callers without Kubernetes informers.
var NoObjects Lookup = noObjects{}

type noObjects struct{}

func (noObjects) Objects(*v1beta1.FlinkDeployment) (Objects, error) { return Objects{}, nil }
func (noObjects) HasSynced() bool                                   { return true }

// NewLookup reads Deployments and Services from the Kubernetes informer
// factories, keyed by watched namespace ("" = all), which the operator
// filters to the objects it builds (type=flink-standalone-kubernetes). The
// informers are the ones the FlinkDeployment controller uses (a factory
// shares one informer per type); call NewLookup before the factories start.
// A namespace no factory watches has no objects.
func NewLookup(factories map[string]kubeinformers.SharedInformerFactory) Lookup {
	l := &listerLookup{}
	for ns, f := range factories {
		d, s := f.Apps().V1().Deployments(), f.Core().V1().Services()
		l.perNamespace.Set(ns, listers{deployments: d.Lister(), services: s.Lister()})
		l.synced = append(l.synced, d.Informer().HasSynced, s.Informer().HasSynced)
	}
	return l
}

type listers struct {
	deployments appslisters.DeploymentLister
	services    corelisters.ServiceLister
}

type listerLookup struct {
	perNamespace pernamespace.View[listers]
	// synced are the informers of every factory.
	synced []cache.InformerSynced
}

func (l *listerLookup) Objects(dep *v1beta1.FlinkDeployment) (Objects, error) {
	var o Objects
	ls, ok := l.perNamespace.For(dep.Namespace)
	if !ok {
		return o, nil
	}
	var err error
	if o.JobManager, err = absentIsNil(ls.deployments.Deployments(dep.Namespace).Get(cluster.JobManagerDeploymentName(dep.Name))); err != nil {
		return o, fmt.Errorf("JobManager Deployment of FlinkDeployment %s/%s: %w", dep.Namespace, dep.Name, err)
	}
	if o.RESTService, err = absentIsNil(ls.services.Services(dep.Namespace).Get(cluster.RESTServiceName(dep.Name))); err != nil {
		return o, fmt.Errorf("REST Service of FlinkDeployment %s/%s: %w", dep.Namespace, dep.Name, err)
	}
	return o, nil
}

func (l *listerLookup) HasSynced() bool {
	for _, synced := range l.synced {
		if !synced() {
			return false
		}
	}
	return true
}

func absentIsNil[T any](obj *T, err error) (*T, error) {
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	return obj, err
}
