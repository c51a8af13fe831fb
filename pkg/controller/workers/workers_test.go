package workers

import (
	"context"
	"errors"
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
