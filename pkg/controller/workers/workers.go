// Package workers runs a controller's workqueue: the loop every controller of
// the operator shares (wait for caches, N workers, requeue on error with rate
// limiting, requeue after the delay a sync asks for). Controllers never import
// each other; this mechanism is what they have in common.
package workers

import (
	"context"
	"math"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
)

// SyncFunc reconciles one key and says when to look at it again (0: only on
// the next event).
type SyncFunc func(ctx context.Context, key string) (requeueAfter time.Duration, err error)

// Loop describes one controller's queue.
type Loop struct {
	// Name names the controller in logs (its queue name).
	Name string
	// KeyName is the log key of the object a key names ("snapshot", ...).
	KeyName string
	Queue   workqueue.TypedRateLimitingInterface[string]
	Sync    SyncFunc
	// Synced are waited for before any worker starts.
	Synced []cache.InformerSynced
	// Pacing limits syncs per key and retries; the zero value limits
	// nothing.
	Pacing Pacing
}

// Run syncs keys, at most workers at a time (workers < 1: no bound), until
// ctx ends; then it shuts the queue down and waits for the syncs in progress.
//
// A worker is a goroutine started for one sync, not one that waits on the
// queue for good: the operator's syncs mostly wait for the API server, so
// many may run at once when a burst arrives (a thousand savepoints created
// together), and an idle controller holds no goroutines for them. One
// goroutine takes keys from the queue, and only once a worker is free, so
// keys wait in the queue, where repeated events for one key merge.
func (l Loop) Run(ctx context.Context, workers int) {
	l.Pacing.start()
	defer utilruntime.HandleCrash()
	defer l.Queue.ShutDown()
	logger := klog.FromContext(ctx)
	logger.Info("Starting controller", "controller", l.Name, "workers", workers)
	if !cache.WaitForCacheSync(ctx.Done(), l.Synced...) {
		return
	}
	defer context.AfterFunc(ctx, func() {
		logger.Info("Stopping controller", "controller", l.Name)
		l.Queue.ShutDown()
	})()
	if workers < 1 {
		workers = math.MaxInt32 // a channel of empty structs holds no buffer
	}
	free := make(chan struct{}, workers)
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		select {
		case free <- struct{}{}:
		case <-ctx.Done():
			return
		}
		key, shutdown := l.Queue.Get()
		if shutdown {
			return
		}
		wg.Go(func() {
			defer func() { <-free }()
			defer utilruntime.HandleCrash()
			l.process(ctx, key)
		})
	}
}

// process syncs one key taken from the queue.
func (l *Loop) process(ctx context.Context, key string) {
	defer l.Queue.Done(key)

	logger := klog.FromContext(ctx).WithValues(l.KeyName, key)
	if wait := l.Pacing.wait(key); wait > 0 {
		logger.V(4).Info("Sync delayed by the per-resource rate limiter", "wait", wait)
		l.Queue.AddAfter(key, wait)
		return
	}
	syncCtx, mark := withChangeMark(klog.NewContext(ctx, logger))
	requeueAfter, err := l.Sync(syncCtx, key)
	if mark.changed.Load() {
		l.Pacing.count(key)
	}
	switch {
	case err != nil && l.Pacing.MaxAttempts > 0 && l.Queue.NumRequeues(key) >= l.Pacing.MaxAttempts:
		logger.Error(err, "Sync failed; retries exhausted, syncing again after the reconcile interval",
			"attempts", l.Queue.NumRequeues(key)+1, "after", l.Pacing.GiveUpDelay)
		l.Queue.Forget(key)
		l.Queue.AddAfter(key, l.Pacing.GiveUpDelay)
	case err != nil:
		if apierrors.IsConflict(err) {
			logger.V(2).Info("Conflict writing, retrying", "err", err)
		} else {
			logger.Error(err, "Sync failed")
		}
		l.Queue.AddRateLimited(key)
	default:
		l.Queue.Forget(key)
		if requeueAfter > 0 {
			l.Queue.AddAfter(key, requeueAfter)
		}
	}
}
