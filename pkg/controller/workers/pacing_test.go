package workers

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/util/workqueue"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/flinkops/flink-operator/pkg/config"
)

// Retries wait retry.initial.interval, then multiplier times longer each
// time, up to retry.max.interval; a success starts over.
func TestRetryLimiterFollowsUpstreamOptions(t *testing.T) {
	r := NewRetryLimiter(config.Defaults())
	want := []time.Duration{5 * time.Second, 7500 * time.Millisecond, 11250 * time.Millisecond, 16875 * time.Millisecond}
	for i, w := range want {
		if got := r.When("k"); got != w {
			t.Errorf("retry %d after %v, want %v", i+1, got, w)
		}
	}
	if n := r.NumRequeues("k"); n != len(want) {
		t.Errorf("NumRequeues %d, want %d", n, len(want))
	}
	if got := r.When("other"); got != 5*time.Second {
		t.Errorf("another key's first retry after %v", got)
	}
	r.Forget("k")
	if got := r.When("k"); got != 5*time.Second {
		t.Errorf("after a success the first retry waits %v", got)
	}

	capped := NewRetryLimiter(config.Config{config.KeyRetryInitialInterval: "1 s", config.KeyRetryIntervalMultiplier: "10", config.KeyRetryMaxInterval: "30 s"})
	var got []time.Duration
	for range 4 {
		got = append(got, capped.When("k"))
	}
	if want := []time.Duration{time.Second, 10 * time.Second, 30 * time.Second, 30 * time.Second}; !equal(got, want) {
		t.Errorf("capped delays %v, want %v", got, want)
	}
	for range 200 { // no overflow however many failures
		if d := capped.When("k"); d != 30*time.Second {
			t.Fatalf("delay %v after many failures", d)
		}
	}
}

func equal(a, b []time.Duration) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// At most rate-limiter.limit syncs of one key that change something per
// refresh period; the next waits for the period's end. Other keys are not
// affected; a limit of 0 disables it.
func TestPacingLimitsSyncsPerKey(t *testing.T) {
	clk := testingclock.NewFakePassiveClock(time.Unix(1000, 0))
	p := PacingFrom(config.Config{config.KeyRateLimiterLimit: "2", config.KeyRateLimiterRefreshPeriod: "10 s"}, clk)
	p.start()
	for range 2 {
		if d := p.wait("a"); d != 0 {
			t.Fatalf("sync %v delayed before the limit", d)
		}
		p.count("a")
	}
	clk.SetTime(clk.Now().Add(4 * time.Second))
	if d := p.wait("a"); d != 6*time.Second {
		t.Errorf("third sync waits %v, want the 6 s left of the period", d)
	}
	if d := p.wait("b"); d != 0 {
		t.Errorf("another key waits %v", d)
	}
	clk.SetTime(clk.Now().Add(6 * time.Second))
	if d := p.wait("a"); d != 0 {
		t.Errorf("a new period still waits %v", d)
	}

	off := PacingFrom(config.Config{config.KeyRateLimiterLimit: "0", config.KeyRateLimiterRefreshPeriod: "10 s"}, clk)
	off.start()
	for range 100 {
		off.count("a")
		if d := off.wait("a"); d != 0 {
			t.Fatalf("limit 0 delayed a sync by %v", d)
		}
	}
}

// Windows of keys that are gone do not pile up.
func TestPacingForgetsExpiredWindows(t *testing.T) {
	clk := testingclock.NewFakePassiveClock(time.Unix(1000, 0))
	p := Pacing{Limit: 5, Period: time.Second, Clock: clk}
	p.start()
	for i := range 5000 {
		clk.SetTime(clk.Now().Add(time.Millisecond))
		p.count(string(rune('a'+i%26)) + time.Duration(i).String())
	}
	if n := len(p.windows); n > 2048 {
		t.Errorf("%d windows kept for 5000 keys seen over 5 s with a 1 s period", n)
	}
}

// After a burst the windows of its keys are dropped within two periods,
// although far fewer keys than the map held are counted afterwards.
func TestPacingSweepsAfterABurst(t *testing.T) {
	clk := testingclock.NewFakePassiveClock(time.Unix(1000, 0))
	p := Pacing{Limit: 5, Period: 15 * time.Second, Clock: clk}
	p.start()
	for i := range 1000 {
		p.count("burst-" + strconv.Itoa(i))
	}
	for i := range 40 {
		clk.SetTime(clk.Now().Add(time.Second))
		p.count("steady-" + strconv.Itoa(i%3))
	}
	if n := len(p.windows); n > 3 {
		t.Errorf("%d windows kept 40 s after a burst of 1000 keys, with 3 keys counted since (period 15 s)", n)
	}
	if _, ok := p.windows["steady-0"]; !ok {
		t.Errorf("the sweep dropped the window of a key counted in this period")
	}
}

// A key failing retry.max.attempts times in a row is retried no more with
// growing delays but synced again after the reconcile interval; a key that
// changed something as often as its rate limit allows waits for the next
// period; one that changes nothing is not limited.
func TestLoopGivesUpAndLimits(t *testing.T) {
	q := workqueue.NewTypedRateLimitingQueue[string](NewRetryLimiter(config.Config{config.KeyRetryInitialInterval: "1 ms", config.KeyRetryIntervalMultiplier: "1"}))
	var mu sync.Mutex
	calls := map[string]int{}
	syncFn := func(ctx context.Context, key string) (time.Duration, error) {
		mu.Lock()
		defer mu.Unlock()
		calls[key]++
		switch key {
		case "failing":
			return 0, errors.New("boom")
		case "busy":
			MarkChange(ctx)
		}
		return time.Millisecond, nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go Loop{Name: "test", KeyName: "key", Queue: q, Sync: syncFn,
		Pacing: Pacing{Limit: 3, Period: time.Hour, MaxAttempts: 2, GiveUpDelay: time.Hour}}.Run(ctx, 2)
	q.Add("failing")
	q.Add("busy")
	q.Add("quiet")
	time.Sleep(300 * time.Millisecond)
	mu.Lock()
	defer mu.Unlock()
	if calls["failing"] != 3 {
		t.Errorf("failing key synced %d times, want 3 (first try and 2 retries)", calls["failing"])
	}
	if n := q.NumRequeues("failing"); n != 0 {
		t.Errorf("failing key still has %d retries counted after giving up", n)
	}
	if calls["busy"] != 3 {
		t.Errorf("key writing and asking for 1 ms requeues synced %d times in 300 ms, want the limit 3", calls["busy"])
	}
	// Syncs that change nothing (the echo of a resource's own write, a
	// poll) are not limited.
	if calls["quiet"] <= 3 {
		t.Errorf("key changing nothing synced %d times in 300 ms, want more than the limit 3", calls["quiet"])
	}
}
