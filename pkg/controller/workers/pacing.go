package workers

import (
	"math"
	"sync"
	"time"

	"k8s.io/utils/clock"

	"github.com/flinkops/flink-operator/pkg/config"
)

// Pacing is how often a controller syncs one key, from upstream's options
// (docs/operations.md): kubernetes.operator.rate-limiter.* bounds the syncs
// of one resource per period that change something (changes.go),
// kubernetes.operator.retry.* spaces the retries of a failing one.
type Pacing struct {
	// Limit syncs of one key that change something per Period; once
	// reached, syncs wait for the next period. Limit <= 0: no limit.
	Limit  int
	Period time.Duration
	// MaxAttempts rate-limited retries of a failing key; then it is synced
	// again after GiveUpDelay (the reconcile interval) with fresh delays.
	// 0: retry forever.
	MaxAttempts int
	GiveUpDelay time.Duration
	Clock       clock.PassiveClock

	mu      *sync.Mutex
	windows map[string]window
	sweepAt int
	// swept is when the windows were last swept.
	swept time.Time
}

type window struct {
	start time.Time
	syncs int
}

// PacingFrom reads the pacing options of cfg.
func PacingFrom(cfg config.Config, clk clock.PassiveClock) Pacing {
	limit, _ := cfg.Int(config.KeyRateLimiterLimit)
	period, _ := cfg.Duration(config.KeyRateLimiterRefreshPeriod)
	attempts, _ := cfg.Int(config.KeyRetryMaxAttempts)
	giveUp, _ := cfg.Duration(config.KeyReconcileInterval)
	return Pacing{Limit: limit, Period: period, MaxAttempts: attempts, GiveUpDelay: giveUp, Clock: clk}
}

// start readies the limiter before workers share it.
func (p *Pacing) start() {
	if p.Clock == nil {
		p.Clock = clock.RealClock{}
	}
	p.mu, p.windows, p.sweepAt = &sync.Mutex{}, map[string]window{}, 1024
	p.swept = p.Clock.Now()
}

// wait says how long a sync of key must wait because key already changed
// something Limit times in this period (0: go ahead).
func (p *Pacing) wait(key string) time.Duration {
	if p.Limit <= 0 || p.Period <= 0 || p.mu == nil {
		return 0
	}
	now := p.Clock.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	w := p.windows[key]
	if now.Sub(w.start) >= p.Period || w.syncs < p.Limit {
		return 0
	}
	return w.start.Add(p.Period).Sub(now)
}

// count records a sync of key that changed something (changes.go).
func (p *Pacing) count(key string) {
	if p.Limit <= 0 || p.Period <= 0 || p.mu == nil {
		return
	}
	now := p.Clock.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	w := p.windows[key]
	if now.Sub(w.start) >= p.Period {
		w = window{start: now}
	}
	w.syncs++
	p.windows[key] = w
	if len(p.windows) >= p.sweepAt || (len(p.windows) > 1 && now.Sub(p.swept) >= 2*p.Period) {
		// Keys of deleted objects (and the burst of a start or of thousands
		// of new snapshots) leave with their expired windows: when the map
		// is full, and at least every other period. The survivors move to a
		// new map, as a Go map never gives back the room a burst made it
		// grow to.
		live := map[string]window{}
		for k, w := range p.windows {
			if now.Sub(w.start) < p.Period {
				live[k] = w
			}
		}
		p.windows, p.swept = live, now
		p.sweepAt = max(1024, 2*len(p.windows))
	}
}

// RetryLimiter spaces the retries of a failing key: initial, then
// multiplier times longer each time, capped at maxDelay (0: no cap).
type RetryLimiter struct {
	initial    time.Duration
	multiplier float64
	maxDelay   time.Duration

	mu       sync.Mutex
	failures map[string]int
}

// NewRetryLimiter reads kubernetes.operator.retry.* from cfg.
func NewRetryLimiter(cfg config.Config) *RetryLimiter {
	initial, _ := cfg.Duration(config.KeyRetryInitialInterval)
	mult, _ := cfg.Float(config.KeyRetryIntervalMultiplier)
	maxDelay, _ := cfg.Duration(config.KeyRetryMaxInterval)
	return &RetryLimiter{initial: initial, multiplier: max(mult, 1), maxDelay: maxDelay, failures: map[string]int{}}
}

// When is the delay before the next retry of key.
func (r *RetryLimiter) When(key string) time.Duration {
	r.mu.Lock()
	n := r.failures[key]
	r.failures[key] = n + 1
	r.mu.Unlock()
	d := float64(r.initial) * math.Pow(r.multiplier, float64(n))
	if limit := float64(24 * time.Hour); d > limit {
		d = limit // far beyond any sensible setting; keeps the conversion exact
	}
	out := time.Duration(d)
	if r.maxDelay > 0 && out > r.maxDelay {
		out = r.maxDelay
	}
	return out
}

// Forget clears the failures of key (a sync succeeded).
func (r *RetryLimiter) Forget(key string) {
	r.mu.Lock()
	delete(r.failures, key)
	r.mu.Unlock()
}

// NumRequeues is how many retries of key were scheduled since it last
// succeeded.
func (r *RetryLimiter) NumRequeues(key string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.failures[key]
}
