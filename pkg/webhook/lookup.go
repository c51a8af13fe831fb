package webhook

import (
	"context"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	versioned "github.com/flinkops/flink-operator/pkg/clients/flink"
	flinkinformers "github.com/flinkops/flink-operator/pkg/generated/informers/externalversions"
	listers "github.com/flinkops/flink-operator/pkg/generated/listers/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/pernamespace"
)

// Lookup finds the objects a validation reads besides the object itself: a
// snapshot's target and a session job's cluster. A missing object is an
// error for which apierrors.IsNotFound is true.
type Lookup interface {
	Deployment(namespace, name string) (*v1beta1.FlinkDeployment, error)
	SessionJob(namespace, name string) (*v1beta1.FlinkSessionJob, error)
}

// syncer is implemented by a Lookup whose content arrives asynchronously;
// until it has synced, "not found" means nothing, and the webhook asks the
// API server to retry instead of refusing.
type syncer interface {
	HasSynced() bool
}

// ListerLookup is a Lookup over the operator's shared informers: the
// webhook reads the same caches as the controllers and costs the API server
// no extra watch. Objects in namespaces the operator does not watch are not
// found, as for the controllers, which would never act on them.
//
// With a live client (WithLiveFallback), an object the cache does not hold
// yet in a watched namespace is read from the API server: a manifest that
// creates a FlinkDeployment and, right after it, its FlinkStateSnapshot
// (one kubectl apply) must not be refused because the watch event of the
// first has not reached the cache when the second is admitted.
type ListerLookup struct {
	perNamespace pernamespace.View[*namespaceListers]
	synced       []cache.InformerSynced
	live         versioned.Interface
	liveTimeout  time.Duration
}

type namespaceListers struct {
	deployments listers.FlinkDeploymentLister
	sessionJobs listers.FlinkSessionJobLister
}

// NewListerLookup requests the FlinkDeployment and FlinkSessionJob
// informers from the factories (keyed by namespace, "" = all namespaces),
// which must not have been started yet, or must be started again after.
func NewListerLookup(factories map[string]flinkinformers.SharedInformerFactory) *ListerLookup {
	l := &ListerLookup{}
	for ns, f := range factories {
		v := f.Flink().V1beta1()
		deployments, sessionJobs := v.FlinkDeployments(), v.FlinkSessionJobs()
		nl := &namespaceListers{deployments: deployments.Lister(), sessionJobs: sessionJobs.Lister()}
		l.synced = append(l.synced, deployments.Informer().HasSynced, sessionJobs.Informer().HasSynced)
		l.perNamespace.Set(ns, nl)
	}
	return l
}

// WithLiveFallback makes cache misses in watched namespaces a GET from the
// API server, bounded by timeout (the webhook's own deadline is short).
func (l *ListerLookup) WithLiveFallback(client versioned.Interface, timeout time.Duration) *ListerLookup {
	l.live, l.liveTimeout = client, timeout
	return l
}

func (l *ListerLookup) forNamespace(ns string) *namespaceListers {
	nl, _ := l.perNamespace.For(ns)
	return nl
}

// Deployment returns the cached FlinkDeployment (read-only).
func (l *ListerLookup) Deployment(namespace, name string) (*v1beta1.FlinkDeployment, error) {
	nl := l.forNamespace(namespace)
	if nl == nil {
		return nil, apierrors.NewNotFound(v1beta1.Resource("flinkdeployments"), name)
	}
	dep, err := nl.deployments.FlinkDeployments(namespace).Get(name)
	if apierrors.IsNotFound(err) && l.live != nil {
		return liveGet(l, func(ctx context.Context) (*v1beta1.FlinkDeployment, error) {
			return l.live.FlinkV1beta1().FlinkDeployments(namespace).Get(ctx, name, metav1.GetOptions{})
		})
	}
	return dep, err
}

// SessionJob returns the cached FlinkSessionJob (read-only).
func (l *ListerLookup) SessionJob(namespace, name string) (*v1beta1.FlinkSessionJob, error) {
	nl := l.forNamespace(namespace)
	if nl == nil {
		return nil, apierrors.NewNotFound(v1beta1.Resource("flinksessionjobs"), name)
	}
	job, err := nl.sessionJobs.FlinkSessionJobs(namespace).Get(name)
	if apierrors.IsNotFound(err) && l.live != nil {
		return liveGet(l, func(ctx context.Context) (*v1beta1.FlinkSessionJob, error) {
			return l.live.FlinkV1beta1().FlinkSessionJobs(namespace).Get(ctx, name, metav1.GetOptions{})
		})
	}
	return job, err
}

// liveGet reads an object the cache does not hold from the API server,
// within the lookup's timeout.
func liveGet[T any](l *ListerLookup, get func(ctx context.Context) (*T, error)) (*T, error) {
	ctx, cancel := context.WithTimeout(context.Background(), l.liveTimeout)
	defer cancel()
	obj, err := get(ctx)
	if err != nil {
		return nil, err // the typed client returns an empty object with its error
	}
	return obj, nil
}

// HasSynced reports whether every informer has synced.
func (l *ListerLookup) HasSynced() bool {
	for _, synced := range l.synced {
		if !synced() {
			return false
		}
	}
	return true
}
