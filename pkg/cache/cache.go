// Package cache gives the controllers one read-only view over the shared
// informers of the flink.apache.org types, whether the operator watches all
// namespaces (one informer per type) or a list of them (one per namespace and
// type). It also owns the snapshot indexes the controllers share: by job
// reference and by state. It does no API calls of its own.
package cache

import (
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	flinkinformers "github.com/flinkops/flink-operator/pkg/generated/informers/externalversions"
	"github.com/flinkops/flink-operator/pkg/pernamespace"
	"github.com/flinkops/flink-operator/pkg/snapshotrules"
)

// Index names on the FlinkStateSnapshot informers.
const (
	// IndexByJob keys snapshots by snapshotrules.JobKey of their job reference.
	IndexByJob = "byJob"
	// IndexByState keys the snapshots not yet terminal by status.state
	// ("" for new ones). Terminal snapshots are most of a cluster's and
	// nothing looks them up by state, so they are left out of it (an index
	// entry each, about 40 bytes, for nothing).
	IndexByState = "byState"
	// IndexBySessionCluster keys FlinkSessionJobs by "<namespace>/<spec.deploymentName>",
	// so a session cluster's change wakes exactly its jobs.
	IndexBySessionCluster = "bySessionCluster"
	// IndexBySnapshotRef keys FlinkDeployments and FlinkSessionJobs by the
	// "<namespace>/<name>" of their spec.job.initialStateSnapshotRef, so a
	// referenced snapshot is protected from cleanup and disposal.
	IndexBySnapshotRef = "bySnapshotRef"
)

// Caches is the controllers' view of the flink.apache.org informers.
type Caches struct {
	// informers are one set per watched namespace, or one set for all of
	// them (one informer per type).
	informers pernamespace.View[*nsInformers]
	// noSnapshots: the FlinkStateSnapshot informers were not requested (the
	// CRD is not installed); the cache then holds no snapshots.
	noSnapshots bool
}

type nsInformers struct {
	// snapshots is nil when the FlinkStateSnapshot CRD is not installed,
	// blueGreens unless Options.WithBlueGreen.
	snapshots, deployments, sessionJobs, blueGreens cache.SharedIndexInformer
	// muxes hold the handlers of each informer (AddEventHandlers).
	muxes map[cache.SharedIndexInformer]*handlerMux
}

// Options choose which informers New requests.
type Options struct {
	// WithoutSnapshots skips the FlinkStateSnapshot informers, for an API
	// server without that CRD (an informer on a missing resource would
	// never sync). Snapshot reads then find nothing.
	WithoutSnapshots bool
	// WithBlueGreen requests the FlinkBlueGreenDeployment informers (the
	// CRD is installed and the blue/green controller runs).
	WithBlueGreen bool
}

// New requests the informers (and registers the snapshot indexes) from the
// factories, keyed by namespace ("" = all namespaces). Call it before the
// factories are started.
func New(factories map[string]flinkinformers.SharedInformerFactory) (*Caches, error) {
	return NewWithOptions(factories, Options{})
}

// NewWithOptions is New with Options.
func NewWithOptions(factories map[string]flinkinformers.SharedInformerFactory, opts Options) (*Caches, error) {
	c := &Caches{noSnapshots: opts.WithoutSnapshots}
	for ns, f := range factories {
		v := f.Flink().V1beta1()
		inf := &nsInformers{
			deployments: v.FlinkDeployments().Informer(),
			sessionJobs: v.FlinkSessionJobs().Informer(),
		}
		if err := inf.sessionJobs.AddIndexers(cache.Indexers{IndexBySessionCluster: indexBySessionCluster, IndexBySnapshotRef: indexBySnapshotRef}); err != nil {
			return nil, fmt.Errorf("adding session job indexes: %w", err)
		}
		if err := inf.deployments.AddIndexers(cache.Indexers{IndexBySnapshotRef: indexBySnapshotRef}); err != nil {
			return nil, fmt.Errorf("adding deployment index: %w", err)
		}
		if !opts.WithoutSnapshots {
			inf.snapshots = v.FlinkStateSnapshots().Informer()
			if err := inf.snapshots.AddIndexers(cache.Indexers{
				IndexByJob:   indexByJob,
				IndexByState: indexByState,
			}); err != nil {
				return nil, fmt.Errorf("adding snapshot indexes: %w", err)
			}
		}
		if opts.WithBlueGreen {
			inf.blueGreens = v.FlinkBlueGreenDeployments().Informer()
			if err := inf.blueGreens.AddIndexers(cache.Indexers{IndexBySnapshotRef: indexBySnapshotRef}); err != nil {
				return nil, fmt.Errorf("adding blue/green index: %w", err)
			}
		}
		c.informers.Set(ns, inf)
	}
	return c, nil
}

func indexByJob(obj any) ([]string, error) {
	s, ok := obj.(*v1beta1.FlinkStateSnapshot)
	if !ok {
		return nil, nil
	}
	if key := snapshotrules.JobKey(s); key != "" {
		return []string{key}, nil
	}
	return nil, nil
}

func indexBySessionCluster(obj any) ([]string, error) {
	j, ok := obj.(*v1beta1.FlinkSessionJob)
	if !ok || j.Spec.DeploymentName == "" {
		return nil, nil
	}
	return []string{j.Namespace + "/" + j.Spec.DeploymentName}, nil
}

func indexBySnapshotRef(obj any) ([]string, error) {
	var job *v1beta1.JobSpec
	var ns string
	switch o := obj.(type) {
	case *v1beta1.FlinkDeployment:
		job, ns = o.Spec.Job, o.Namespace
	case *v1beta1.FlinkSessionJob:
		job, ns = o.Spec.Job, o.Namespace
	case *v1beta1.FlinkBlueGreenDeployment:
		// The transition savepoint is the new child's restore point while
		// the transition runs (its spec names the path, not the snapshot).
		if o.Status.TransitionSnapshot == "" {
			return nil, nil
		}
		return []string{o.Namespace + "/" + o.Status.TransitionSnapshot}, nil
	}
	if job == nil || job.InitialStateSnapshotRef == nil || job.InitialStateSnapshotRef.Name == "" {
		return nil, nil
	}
	return []string{snapshotrules.RefKey(job.InitialStateSnapshotRef, ns)}, nil
}

func indexByState(obj any) ([]string, error) {
	s, ok := obj.(*v1beta1.FlinkStateSnapshot)
	if !ok {
		return nil, nil
	}
	if s.Status.State.IsTerminal() {
		return nil, nil
	}
	return []string{string(s.Status.State)}, nil
}

// forNamespace returns the informers that hold objects of ns, or nil when
// the namespace is not watched.
func (c *Caches) forNamespace(ns string) *nsInformers {
	inf, _ := c.informers.For(ns)
	return inf
}

// HasSnapshots reports whether the FlinkStateSnapshot informers exist.
func (c *Caches) HasSnapshots() bool { return !c.noSnapshots }

// Watches reports whether objects in ns are visible to the operator.
func (c *Caches) Watches(ns string) bool { return c.forNamespace(ns) != nil }

func get[T any](inf cache.SharedIndexInformer, resource, ns, name string) (*T, error) {
	obj, exists, err := inf.GetIndexer().GetByKey(ns + "/" + name)
	if err != nil {
		return nil, err
	}
	if !exists {
		return nil, apierrors.NewNotFound(v1beta1.Resource(resource), name)
	}
	typed, ok := obj.(*T)
	if !ok {
		return nil, fmt.Errorf("unexpected %T in %s cache", obj, resource)
	}
	return typed, nil
}

// Snapshot returns a cached FlinkStateSnapshot (read-only: DeepCopy before
// changing it), or a NotFound error.
func (c *Caches) Snapshot(ns, name string) (*v1beta1.FlinkStateSnapshot, error) {
	inf := c.forNamespace(ns)
	if inf == nil || inf.snapshots == nil {
		return nil, apierrors.NewNotFound(v1beta1.Resource("flinkstatesnapshots"), name)
	}
	return get[v1beta1.FlinkStateSnapshot](inf.snapshots, "flinkstatesnapshots", ns, name)
}

// Deployment returns a cached FlinkDeployment, or a NotFound error (also when
// its namespace is not watched).
func (c *Caches) Deployment(ns, name string) (*v1beta1.FlinkDeployment, error) {
	inf := c.forNamespace(ns)
	if inf == nil {
		return nil, apierrors.NewNotFound(v1beta1.Resource("flinkdeployments"), name)
	}
	return get[v1beta1.FlinkDeployment](inf.deployments, "flinkdeployments", ns, name)
}

// BlueGreen returns the cached FlinkBlueGreenDeployment ns/name; NotFound
// without the blue/green informers.
func (c *Caches) BlueGreen(ns, name string) (*v1beta1.FlinkBlueGreenDeployment, error) {
	inf := c.forNamespace(ns)
	if inf == nil || inf.blueGreens == nil {
		return nil, apierrors.NewNotFound(v1beta1.Resource("flinkbluegreendeployments"), name)
	}
	return get[v1beta1.FlinkBlueGreenDeployment](inf.blueGreens, "flinkbluegreendeployments", ns, name)
}

// SessionJob returns a cached FlinkSessionJob, or a NotFound error.
func (c *Caches) SessionJob(ns, name string) (*v1beta1.FlinkSessionJob, error) {
	inf := c.forNamespace(ns)
	if inf == nil {
		return nil, apierrors.NewNotFound(v1beta1.Resource("flinksessionjobs"), name)
	}
	return get[v1beta1.FlinkSessionJob](inf.sessionJobs, "flinksessionjobs", ns, name)
}

// SnapshotsOfJob returns the cached snapshots referring to the job with the
// given snapshotrules.JobKey, from every watched namespace (references may cross
// namespaces).
func (c *Caches) SnapshotsOfJob(jobKey string) ([]*v1beta1.FlinkStateSnapshot, error) {
	return c.byIndex(IndexByJob, jobKey)
}

// SnapshotsInState returns the cached snapshots whose status.state is state,
// which must not be terminal (IndexByState leaves terminal snapshots out).
func (c *Caches) SnapshotsInState(state v1beta1.SnapshotState) ([]*v1beta1.FlinkStateSnapshot, error) {
	if state.IsTerminal() {
		return nil, fmt.Errorf("snapshots in terminal state %s are not indexed by state", state)
	}
	return c.byIndex(IndexByState, string(state))
}

// SessionJobsOfCluster returns the cached FlinkSessionJobs whose
// spec.deploymentName is the given session cluster.
func (c *Caches) SessionJobsOfCluster(ns, deploymentName string) ([]*v1beta1.FlinkSessionJob, error) {
	inf := c.forNamespace(ns)
	if inf == nil {
		return nil, nil
	}
	objs, err := inf.sessionJobs.GetIndexer().ByIndex(IndexBySessionCluster, ns+"/"+deploymentName)
	if err != nil {
		return nil, err
	}
	out := make([]*v1beta1.FlinkSessionJob, 0, len(objs))
	for _, obj := range objs {
		if j, ok := obj.(*v1beta1.FlinkSessionJob); ok {
			out = append(out, j)
		}
	}
	return out, nil
}

// SnapshotReferrers names the FlinkDeployments and FlinkSessionJobs (as
// "FlinkDeployment ns/name") whose spec.job.initialStateSnapshotRef is the
// snapshot ns/name, and the FlinkBlueGreenDeployments whose transition
// restores from it (status.transitionSnapshot), in every watched namespace.
func (c *Caches) SnapshotReferrers(ns, name string) ([]string, error) {
	return c.snapshotReferrers(ns, name, false)
}

// snapshotReferrers is SnapshotReferrers, without those being deleted when
// live is set.
func (c *Caches) snapshotReferrers(ns, name string, live bool) ([]string, error) {
	var out []string
	for inf := range c.informers.Each() {
		for _, pair := range []struct {
			kind string
			inf  cache.SharedIndexInformer
		}{{"FlinkDeployment", inf.deployments}, {"FlinkSessionJob", inf.sessionJobs}, {"FlinkBlueGreenDeployment", inf.blueGreens}} {
			if pair.inf == nil {
				continue
			}
			objs, err := pair.inf.GetIndexer().ByIndex(IndexBySnapshotRef, ns+"/"+name)
			if err != nil {
				return nil, err
			}
			for _, obj := range objs {
				if m, ok := obj.(metav1.Object); ok && (!live || m.GetDeletionTimestamp() == nil) {
					out = append(out, pair.kind+" "+m.GetNamespace()+"/"+m.GetName())
				}
			}
		}
	}
	return out, nil
}

// ReferencedPaths are the paths of those of snaps that some job starts from
// by reference (SnapshotReferrers non-empty): history cleanup keeps them.
func (c *Caches) ReferencedPaths(snaps []*v1beta1.FlinkStateSnapshot) ([]string, error) {
	var out []string
	for _, s := range snaps {
		if s.Status.Path == "" {
			continue
		}
		referrers, err := c.SnapshotReferrers(s.Namespace, s.Name)
		if err != nil {
			return nil, err
		}
		if len(referrers) > 0 {
			out = append(out, s.Status.Path)
		}
	}
	return out, nil
}

// AllSnapshots returns every cached snapshot.
func (c *Caches) AllSnapshots() []*v1beta1.FlinkStateSnapshot {
	var out []*v1beta1.FlinkStateSnapshot
	for inf := range c.informers.Each() {
		if inf.snapshots == nil {
			continue
		}
		for _, obj := range inf.snapshots.GetStore().List() {
			if s, ok := obj.(*v1beta1.FlinkStateSnapshot); ok {
				out = append(out, s)
			}
		}
	}
	return out
}

func (c *Caches) byIndex(index, key string) ([]*v1beta1.FlinkStateSnapshot, error) {
	var out []*v1beta1.FlinkStateSnapshot
	for inf := range c.informers.Each() {
		if inf.snapshots == nil {
			continue
		}
		objs, err := inf.snapshots.GetIndexer().ByIndex(index, key)
		if err != nil {
			return nil, err
		}
		for _, obj := range objs {
			if s, ok := obj.(*v1beta1.FlinkStateSnapshot); ok {
				out = append(out, s)
			}
		}
	}
	return out, nil
}

// Handlers are the event handlers a controller registers on each type.
type Handlers struct {
	Snapshots, Deployments, SessionJobs, BlueGreens cache.ResourceEventHandler
}

// AddEventHandlers registers the non-nil handlers on every namespace's
// informers. Handlers added before the informers start share one listener
// per informer (handlerMux); one added once an informer has synced gets a
// listener of its own, so that it too is told of every cached object.
func (c *Caches) AddEventHandlers(h Handlers) error {
	for inf := range c.informers.Each() {
		for _, pair := range []struct {
			inf cache.SharedIndexInformer
			h   cache.ResourceEventHandler
		}{{inf.snapshots, h.Snapshots}, {inf.deployments, h.Deployments}, {inf.sessionJobs, h.SessionJobs}, {inf.blueGreens, h.BlueGreens}} {
			if pair.h == nil || pair.inf == nil {
				continue
			}
			if pair.inf.HasSynced() {
				if _, err := pair.inf.AddEventHandler(pair.h); err != nil {
					return err
				}
				continue
			}
			mux := inf.muxes[pair.inf]
			if mux == nil {
				mux = &handlerMux{}
				if _, err := pair.inf.AddEventHandler(mux); err != nil {
					return err
				}
				if inf.muxes == nil {
					inf.muxes = map[cache.SharedIndexInformer]*handlerMux{}
				}
				inf.muxes[pair.inf] = mux
			}
			mux.add(pair.h)
		}
	}
	return nil
}

// HasSynced reports whether every informer has synced.
func (c *Caches) HasSynced() bool {
	for inf := range c.informers.Each() {
		if (inf.snapshots != nil && !inf.snapshots.HasSynced()) || !inf.deployments.HasSynced() || !inf.sessionJobs.HasSynced() ||
			(inf.blueGreens != nil && !inf.blueGreens.HasSynced()) {
			return false
		}
	}
	return true
}
