package workers

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/util/workqueue"
)

// An error requeues with rate limiting, a requested delay requeues after it,
// and a zero delay forgets the key; Run returns once ctx ends.
func TestLoopRequeues(t *testing.T) {
	q := workqueue.NewTypedRateLimitingQueue(workqueue.NewTypedItemExponentialFailureRateLimiter[string](time.Millisecond, 10*time.Millisecond))
	var mu sync.Mutex
	calls := 0
	done := make(chan struct{})
	sync := func(_ context.Context, key string) (time.Duration, error) {
		mu.Lock()
		defer mu.Unlock()
		calls++
		switch calls {
		case 1:
			return 0, errors.New("boom") // rate-limited retry
		case 2:
			return 5 * time.Millisecond, nil // requeue after
		case 3:
			close(done)
		}
		return 0, nil // forgotten: no more calls
	}
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() {
		Loop{Name: "test", KeyName: "key", Queue: q, Sync: sync}.Run(ctx, 2)
		close(stopped)
	}()
	q.Add("ns/a")
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("key was not synced three times (error retry, then requeue-after)")
	}
	time.Sleep(50 * time.Millisecond)
	mu.Lock()
	if calls != 3 {
		t.Errorf("%d syncs, want 3 (a zero delay must not requeue)", calls)
	}
	mu.Unlock()
	cancel()
	select {
	case <-stopped:
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return after ctx ended")
	}
}

// At most workers syncs run at once, a burst uses all of them, and an idle
// loop holds no goroutine per worker (a large bound costs nothing idle).
func TestLoopBoundsConcurrentSyncs(t *testing.T) {
	const workers, keys = 3, 7
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]())
	var mu sync.Mutex
	running, peak, done := 0, 0, 0
	release := make(chan struct{})
	allDone := make(chan struct{})
	sync := func(_ context.Context, key string) (time.Duration, error) {
		mu.Lock()
		running++
		peak = max(peak, running)
		mu.Unlock()
		<-release
		mu.Lock()
		running--
		done++
		if done == keys {
			close(allDone)
		}
		mu.Unlock()
		return 0, nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	before := runtime.NumGoroutine()
	go Loop{Name: "test", KeyName: "key", Queue: q, Sync: sync}.Run(ctx, workers)
	for i := range keys {
		q.Add(fmt.Sprintf("ns/%d", i))
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		mu.Lock()
		r := running
		mu.Unlock()
		if r == workers || time.Now().After(deadline) {
			break
		}
		time.Sleep(time.Millisecond)
	}
	time.Sleep(20 * time.Millisecond) // a fourth sync, if the bound leaked, would start now
	close(release)
	select {
	case <-allDone:
	case <-time.After(5 * time.Second):
		t.Fatalf("%d of %d keys synced", done, keys)
	}
	mu.Lock()
	if peak != workers {
		t.Errorf("at most %d syncs ran at once, want exactly the bound %d", peak, workers)
	}
	mu.Unlock()

	idle := Loop{Name: "idle", KeyName: "key", Queue: workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]()),
		Sync: func(context.Context, string) (time.Duration, error) { return 0, nil }}
	go idle.Run(ctx, 1000)
	time.Sleep(50 * time.Millisecond)
	if extra := runtime.NumGoroutine() - before; extra > 10 {
		t.Errorf("two idle loops hold %d goroutines, want a few (none per worker)", extra)
	}
}
