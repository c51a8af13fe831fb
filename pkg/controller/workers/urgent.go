package workers

import (
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
)

// A controller's queue hands keys out in the order they came. Under a burst
// that is the wrong order for what a user waits on: with every worker busy
// (a thousand savepoints being completed and relabelled, each sync waiting
// for the API server), a savepoint a user just created waits until the keys
// queued before it are done. make bench-scale measured that wait at up to
// 0.7 s of the create→trigger time (docs/performance.md).

// NewUrgentFirstQueue is a rate-limited workqueue (as
// workqueue.NewTypedRateLimitingQueueWithConfig) whose waiting keys are
// handed out urgent ones first, each class in the order it was added.
// urgent is asked once per key when the key is queued (not again while it
// waits), under the queue's lock: it must be quick and must not touch the
// queue (an informer cache lookup).
func NewUrgentFirstQueue(name string, clk clock.WithTicker, limiter workqueue.TypedRateLimiter[string], urgent func(key string) bool) workqueue.TypedRateLimitingInterface[string] {
	storage := &urgentFirst{urgent: urgent}
	q := workqueue.NewTypedWithConfig(workqueue.TypedQueueConfig[string]{Name: name, Clock: clk, Queue: storage})
	delaying := workqueue.NewTypedDelayingQueueWithConfig(workqueue.TypedDelayingQueueConfig[string]{Name: name, Clock: clk, Queue: q})
	return workqueue.NewTypedRateLimitingQueueWithConfig(limiter,
		workqueue.TypedRateLimitingQueueConfig[string]{Name: name, Clock: clk, DelayingQueue: delaying})
}

// urgentFirst is workqueue storage (workqueue.Queue) of two FIFOs. The
// workqueue calls it under its own lock, so it needs none.
type urgentFirst struct {
	urgent    func(string) bool
	high, low fifo
}

// Touch is a key queued again while it waits: it keeps its place, as in
// the workqueue's default storage.
func (q *urgentFirst) Touch(string) {}

func (q *urgentFirst) Push(key string) {
	if q.urgent != nil && q.urgent(key) {
		q.high.push(key)
		return
	}
	q.low.push(key)
}

func (q *urgentFirst) Len() int { return len(q.high) + len(q.low) }

func (q *urgentFirst) Pop() string {
	if len(q.high) > 0 {
		return q.high.pop()
	}
	return q.low.pop()
}

type fifo []string

func (f *fifo) push(key string) { *f = append(*f, key) }

func (f *fifo) pop() string {
	key := (*f)[0]
	(*f)[0] = "" // the array outlives the slice: let the string go
	*f = (*f)[1:]
	return key
}
