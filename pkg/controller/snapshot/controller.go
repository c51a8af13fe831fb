// Package snapshot is the FlinkStateSnapshot controller: it triggers,
// tracks, retries and disposes savepoints and checkpoints. A snapshot's life
// reads file by file, in the order of its phases: sync.go decides what one
// sync does, trigger.go starts an attempt, observe.go follows it
// (checkpointpath.go reads a checkpoint's path, recover.go finds a result
// Flink forgot), finish.go records how it ended and commit.go writes that;
// deletion.go and handover.go dispose of its data. This file holds the
// queue and the event handlers that feed it.
package snapshot

import (
	"context"
	"maps"
	"slices"
	"sync"

	corev1 "k8s.io/api/core/v1"

	"k8s.io/apimachinery/pkg/api/meta"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	flinkcache "github.com/flinkops/flink-operator/pkg/cache"
	"github.com/flinkops/flink-operator/pkg/config"
	"github.com/flinkops/flink-operator/pkg/controller/controllerctx"
	"github.com/flinkops/flink-operator/pkg/controller/jobmanager"
	"github.com/flinkops/flink-operator/pkg/metrics"
	"github.com/flinkops/flink-operator/pkg/reasons"
	"github.com/flinkops/flink-operator/pkg/snapshotrules"
)

// QueueName names the controller's workqueue (and its metrics).
const QueueName = "flinkstatesnapshot"

// Options are this controller's own settings; what all controllers share
// is a controllerctx.Context.
type Options struct {
	// AfterIntentWritten, when set, runs right after a trigger's intent
	// (IN_PROGRESS + trigger id) is written and before Flink is called. It
	// exists for crash tests.
	AfterIntentWritten func(snapshot string)
	// AdmissionGuard says whether this snapshot's cross-namespace reference
	// was reviewed by the operator's admission webhook (nil error): a
	// SubjectAccessReview found its creator may update the referenced job,
	// and the webhook stamped the snapshot (pkg/reviewstamp). Without it
	// (nil, or an error) no cross-namespace reference is acted on, even with
	// kubernetes.operator.snapshot.cross-namespace-references.enabled.
	AdmissionGuard func(ctx context.Context, s *v1beta1.FlinkStateSnapshot) error
}

// Controller reconciles FlinkStateSnapshots.
type Controller struct {
	controllerctx.Context // clients, caches, recorder, clock, configuration

	queue       workqueue.TypedRateLimitingInterface[string]
	dialer      jobmanager.Dialer
	afterIntent func(string)
	guard       func(ctx context.Context, s *v1beta1.FlinkStateSnapshot) error

	// mu guards reserved: the snapshots this process has moved to
	// IN_PROGRESS whose new state the cache may not show yet. Counting them
	// with the cache keeps concurrency caps exact across workers.
	mu       sync.Mutex
	reserved map[string]string // snapshot key -> job key

	// writtenOver are, per snapshot, the resource versions this process
	// replaced by its writes and the cache may still show (cachelag.go).
	writtenOver sync.Map // snapshot key -> *[]string

	// disposals remembers Flink's disposal trigger ids between syncs. Losing
	// them on a restart only means one more disposal request for the same
	// path, which Flink treats as a no-op or "already gone".
	disposals sync.Map // snapshot key -> disposal trigger id
}

// New creates the controller and registers its event handlers on the caches.
func New(cc controllerctx.Context, opts Options) (*Controller, error) {
	cc = cc.WithDefaults()
	caches := cc.Caches
	c := &Controller{
		Context:     cc,
		dialer:      cc.Dialer(),
		afterIntent: opts.AfterIntentWritten,
		guard:       opts.AdmissionGuard,
		reserved:    map[string]string{},
	}
	c.queue = cc.NewUrgentFirstQueue(QueueName, c.awaitsTrigger)
	err := caches.AddEventHandlers(flinkcache.Handlers{
		Snapshots: cache.ResourceEventHandlerFuncs{
			AddFunc:    c.snapshotAdded,
			UpdateFunc: c.snapshotUpdated,
			DeleteFunc: c.snapshotDeleted,
		},
		Deployments: c.jobHandler(v1beta1.JobReferenceKindDeployment),
		SessionJobs: c.jobHandler(v1beta1.JobReferenceKindSessionJob),
	})
	if err != nil {
		return nil, err
	}
	return c, nil
}

// awaitsTrigger is the snapshot controller's urgent work: a snapshot
// someone is waiting on to start (new, or TRIGGER_PENDING), synced before
// the ones already running or settled, whatever their number.
func (c *Controller) awaitsTrigger(key string) bool {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return false
	}
	s, err := c.Caches.Snapshot(ns, name)
	return err == nil && s.DeletionTimestamp == nil &&
		(s.Status.State == "" || s.Status.State == v1beta1.SnapshotTriggerPending)
}

func (c *Controller) enqueue(obj any) {
	key, err := cache.MetaNamespaceKeyFunc(obj)
	if err != nil {
		utilruntime.HandleError(err)
		return
	}
	c.queue.Add(key)
}

// snapshotAdded queues a snapshot unless it is settled: at a start (the
// informer's first list) thousands of terminal snapshots would otherwise
// be synced, for nothing, ahead of a new one a user waits for.
func (c *Controller) snapshotAdded(obj any) {
	if s, ok := obj.(*v1beta1.FlinkStateSnapshot); !ok || !settled(s) {
		c.enqueue(obj)
	}
}

// snapshotUpdated wakes the snapshot unless it is settled, and when one
// leaves IN_PROGRESS, the snapshots of the same job waiting for a
// concurrency slot.
func (c *Controller) snapshotUpdated(oldObj, newObj any) {
	newSnap, ok2 := newObj.(*v1beta1.FlinkStateSnapshot)
	if !ok2 || !settled(newSnap) {
		c.enqueue(newObj)
	}
	oldSnap, ok1 := oldObj.(*v1beta1.FlinkStateSnapshot)
	if ok1 && ok2 && oldSnap.Status.State == v1beta1.SnapshotInProgress && newSnap.Status.State != v1beta1.SnapshotInProgress {
		c.enqueueJob(snapshotrules.JobKey(newSnap))
	}
}

// snapshotDeleted says so when a savepoint disappears while Flink may still
// be writing it: without a finalizer there is nobody left to dispose it.
func (c *Controller) snapshotDeleted(obj any) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	s, ok := obj.(*v1beta1.FlinkStateSnapshot)
	if !ok {
		return
	}
	key := s.Namespace + "/" + s.Name
	c.release(key)
	c.disposals.Delete(key)
	if s.Status.State == v1beta1.SnapshotInProgress && snapshotrules.DisposeOnDelete(s) {
		c.Recorder.Eventf(s, corev1.EventTypeWarning, reasons.ReasonDisposeSkipped,
			"Snapshot deleted while in progress (trigger id %s); if Flink completes it, its files stay in the savepoint directory", s.Status.TriggerID)
	}
	c.enqueueJob(snapshotrules.JobKey(s))
}

// jobHandler wakes the snapshots of a job when the job changes: a job that
// leaves RUNNING abandons its in-flight snapshots at once. It also wakes the
// disposals handed to the job (handover.go) when it appears, goes, begins
// its deletion or changes them.
func (c *Controller) jobHandler(kind v1beta1.JobReferenceKind) cache.ResourceEventHandler {
	jobKey := func(obj any) (string, bool) {
		if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = tomb.Obj
		}
		m, err := meta.Accessor(obj)
		if err != nil {
			return "", false
		}
		return snapshotrules.JobKeyFor(kind, m.GetNamespace(), m.GetName()), handedOver(m)
	}
	wake := func(obj any) {
		key, handed := jobKey(obj)
		if key == "" {
			return
		}
		c.enqueueJob(key)
		if handed {
			c.queue.Add(disposalsKeyPrefix + key)
		}
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    wake,
		DeleteFunc: wake,
		UpdateFunc: func(oldObj, newObj any) {
			o, err1 := meta.Accessor(oldObj)
			n, err2 := meta.Accessor(newObj)
			switch {
			case err1 != nil || err2 != nil:
			case jobStatusOf(oldObj) != jobStatusOf(newObj), !o.GetDeletionTimestamp().Equal(n.GetDeletionTimestamp()):
				wake(newObj)
			case handedOver(n) && o.GetAnnotations()[flinkcache.AnnotationPendingDisposals] != n.GetAnnotations()[flinkcache.AnnotationPendingDisposals]:
				key, _ := jobKey(n)
				c.queue.Add(disposalsKeyPrefix + key)
			}
		},
	}
}

// settled: a terminal snapshot, not being deleted, whose labels (job
// labels included) and finalizer are what its sync would write: that sync
// would neither write nor call Flink. One whose job labels are missing is
// not settled (the job may have appeared since).
func settled(s *v1beta1.FlinkStateSnapshot) bool {
	state := s.Status.State
	return state.IsTerminal() && s.DeletionTimestamp == nil &&
		maps.Equal(snapshotrules.DesiredLabels(s, state, true), s.Labels) &&
		snapshotrules.NeedsFinalizer(s, state) == slices.Contains(s.Finalizers, v1beta1.SnapshotFinalizer)
}

// enqueueJob queues the snapshots of a job that can still change: in flight,
// or being deleted.
func (c *Controller) enqueueJob(jobKey string) {
	if jobKey == "" {
		return
	}
	snaps, err := c.Caches.SnapshotsOfJob(jobKey)
	if err != nil {
		utilruntime.HandleError(err)
		return
	}
	for _, s := range snaps {
		if snapshotrules.InFlight(s) || s.DeletionTimestamp != nil {
			c.queue.Add(s.Namespace + "/" + s.Name)
		}
	}
}

// Run starts workers and blocks until ctx ends.
func (c *Controller) Run(ctx context.Context, n int) {
	c.Loop(QueueName, "snapshot", c.queue, c.Sync, c.Caches.HasSynced, c.JobManagers.HasSynced).Run(ctx, n)
}

// reserve records that key (a snapshot of jobKey) is being triggered if the
// per-job and operator-wide caps allow it.
func (c *Controller) reserve(key, jobKey string, perJob, total int) (bool, error) {
	inProgress, err := c.Caches.SnapshotsInState(v1beta1.SnapshotInProgress)
	if err != nil {
		return false, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	busy := map[string]string{} // snapshot key -> job key
	for _, s := range inProgress {
		busy[s.Namespace+"/"+s.Name] = snapshotrules.JobKey(s)
	}
	for k, j := range c.reserved {
		busy[k] = j
	}
	delete(busy, key)
	sameJob := 0
	for _, j := range busy {
		if j == jobKey {
			sameJob++
		}
	}
	if (perJob > 0 && sameJob >= perJob) || (total > 0 && len(busy) >= total) {
		return false, nil
	}
	c.reserved[key] = jobKey
	return true, nil
}

func (c *Controller) release(key string) {
	c.mu.Lock()
	delete(c.reserved, key)
	c.mu.Unlock()
}

// CountSnapshots feeds the flink_operator_snapshots gauge from the cache;
// nothing when kubernetes.operator.resource.metrics.enabled is false.
func (c *Controller) CountSnapshots() []metrics.SnapshotCount {
	if on, err := c.CurrentConfig().Bool(config.KeyResourceMetricsEnabled); err != nil || !on {
		return nil
	}
	counts := map[metrics.SnapshotCount]int{}
	for _, s := range c.Caches.AllSnapshots() {
		state := s.Status.State
		if state == "" {
			state = v1beta1.SnapshotTriggerPending
		}
		counts[metrics.SnapshotCount{Namespace: s.Namespace, Type: string(kindOf(s)), State: string(state)}]++
	}
	out := make([]metrics.SnapshotCount, 0, len(counts))
	for k, n := range counts {
		k.Count = n
		out = append(out, k)
	}
	return out
}
