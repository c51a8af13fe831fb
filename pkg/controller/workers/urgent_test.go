package workers

import (
	"slices"
	"testing"
	"time"

	"k8s.io/client-go/util/workqueue"
	testingclock "k8s.io/utils/clock/testing"
)

// Urgent keys leave first, each class in the order it came, whether added
// directly, after a delay, or again once processed; a key queued twice
// keeps its first place.
func TestUrgentFirstQueue(t *testing.T) {
	urgent := map[string]bool{"new-1": true, "new-2": true, "new-3": true, "new-4": true}
	clk := testingclock.NewFakeClock(time.Unix(0, 0))
	q := NewUrgentFirstQueue("", clk, workqueue.NewTypedItemExponentialFailureRateLimiter[string](time.Millisecond, time.Second),
		func(k string) bool { return urgent[k] })
	defer q.ShutDown()

	get := func() string {
		t.Helper()
		k, shutdown := q.Get()
		if shutdown {
			t.Fatal("queue shut down")
		}
		q.Done(k)
		return k
	}
	for _, k := range []string{"done-1", "done-2", "new-1", "done-3", "new-2", "done-1"} {
		q.Add(k)
	}
	q.AddAfter("new-3", time.Second)
	clk.Step(time.Second)
	// The delaying queue adds new-3 from its own goroutine.
	for deadline := time.Now().Add(10 * time.Second); q.Len() < 6; {
		if time.Now().After(deadline) {
			t.Fatalf("new-3 never left the delay: %d queued", q.Len())
		}
		time.Sleep(time.Millisecond)
	}
	var order []string
	for range 3 {
		order = append(order, get())
	}
	// A key being processed and added again is stored once it is done: as
	// urgent if it is.
	k, _ := q.Get() // done-1
	order = append(order, k)
	q.Add("new-4")
	q.Add(k)
	q.Done(k)
	for q.Len() > 0 {
		order = append(order, get())
	}
	want := []string{"new-1", "new-2", "new-3", "done-1", "new-4", "done-2", "done-3", "done-1"}
	if !slices.Equal(order, want) {
		t.Errorf("keys handed out %v, want %v", order, want)
	}
}

// The storage alone: two FIFOs, the urgent one first, nothing left behind.
func TestUrgentFirstStorage(t *testing.T) {
	q := &urgentFirst{urgent: func(k string) bool { return k[0] == 'u' }}
	for _, k := range []string{"a", "u1", "b", "u2", "c"} {
		q.Push(k)
	}
	q.Touch("a")
	if q.Len() != 5 {
		t.Fatalf("Len %d, want 5", q.Len())
	}
	var got []string
	for q.Len() > 0 {
		got = append(got, q.Pop())
	}
	if want := []string{"u1", "u2", "a", "b", "c"}; !slices.Equal(got, want) {
		t.Errorf("popped %v, want %v", got, want)
	}
	// Without a classifier everything is one FIFO.
	plain := &urgentFirst{}
	plain.Push("u1")
	plain.Push("a")
	if got := plain.Pop(); got != "u1" {
		t.Errorf("without urgent: popped %q first, want u1", got)
	}
}
