package operator

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/flinkops/flink-operator/pkg/config"
)

// Lease timings by default as kube-controller-manager uses them (also the
// defaults of the kubernetes.operator.leader-election.* keys).
const (
	leaseDuration = 15 * time.Second
	renewDeadline = 10 * time.Second
	retryPeriod   = 2 * time.Second
)

// leaseTimings are the leader election's timings.
type leaseTimings struct {
	lease, renew, retry time.Duration
}

// leaderElectionTimings reads kubernetes.operator.leader-election.{lease-
// duration,renew-deadline,retry-period} and checks what client-go would
// otherwise refuse at start with a less helpful message: the lease outlives
// the renew deadline, which outlives a jittered retry.
func leaderElectionTimings(cfg config.Config) (leaseTimings, error) {
	t := leaseTimings{lease: leaseDuration, renew: renewDeadline, retry: retryPeriod}
	for _, k := range []struct {
		key string
		dst *time.Duration
	}{
		{config.KeyLeaderElectionLeaseDuration, &t.lease},
		{config.KeyLeaderElectionRenewDeadline, &t.renew},
		{config.KeyLeaderElectionRetryPeriod, &t.retry},
	} {
		d, err := cfg.Duration(k.key)
		switch {
		case err != nil:
			return t, err
		case d < 0:
			return t, fmt.Errorf("%s: %v must be positive", k.key, d)
		case d > 0:
			*k.dst = d
		}
	}
	if t.lease <= t.renew {
		return t, fmt.Errorf("%s (%v) must be greater than %s (%v)", config.KeyLeaderElectionLeaseDuration, t.lease, config.KeyLeaderElectionRenewDeadline, t.renew)
	}
	if float64(t.renew) <= jitterFactor*float64(t.retry) {
		return t, fmt.Errorf("%s (%v) must be greater than %v × %s (%v)", config.KeyLeaderElectionRenewDeadline, t.renew, jitterFactor, config.KeyLeaderElectionRetryPeriod, t.retry)
	}
	return t, nil
}

// leaseFence is this replica's own, conservative view of whether it still
// holds the lease, kept on its monotonic clock. The elector (client-go's
// algorithm) is not enough for "a replica that loses its lease stops acting
// at once": after a pause (SIGSTOP, a VM freeze, a long GC stop) longer than
// the lease, its renew loop starts a fresh renew deadline and keeps the
// controllers running for up to that deadline while another replica already
// leads. The fence
// closes renewDeadline after the start of the last successful renewal: a
// standby can take over no earlier than leaseDuration after it saw that
// renewal, and it saw it after the request started, so the fence closes
// (leaseDuration - renewDeadline) before anyone else can lead.
type leaseFence struct {
	renew time.Duration
	now   func() time.Time

	mu         sync.Mutex
	validUntil time.Time
}

func newLeaseFence(renew time.Duration) *leaseFence {
	return &leaseFence{renew: renew, now: time.Now}
}

// extend records a successful acquisition or renewal whose request started
// at start.
func (f *leaseFence) extend(start time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if until := start.Add(f.renew); until.After(f.validUntil) {
		f.validUntil = until
	}
}

// revoke closes the fence until the next acquisition.
func (f *leaseFence) revoke() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.validUntil = time.Time{}
}

// valid reports whether this replica may still act.
func (f *leaseFence) valid() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now().Before(f.validUntil)
}

// remaining is how long the fence stays open without another renewal.
func (f *leaseFence) remaining() time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.validUntil.Sub(f.now())
}

// errLeaseLost is what a fenced write returns once the fence is closed.
var errLeaseLost = errors.New("refusing to write: this replica no longer holds the leader election lease")

// wrap fences a Kubernetes client's transport (rest.Config.Wrap): a request
// that changes something is refused, synchronously and before it is sent,
// unless the fence is open. Reads pass, so informers and caches stay warm.
// It is checked per request because goroutines that were mid-sync when the
// process was paused resume at the same instant as the elector and the
// watchdog: only a check in the write path itself is ordered before the
// write.
func (f *leaseFence) wrap(next http.RoundTripper) http.RoundTripper {
	return fencedTransport{fence: f, next: next}
}

type fencedTransport struct {
	fence *leaseFence
	next  http.RoundTripper
}

func (t fencedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	switch req.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
	default:
		if !t.fence.valid() {
			if req.Body != nil {
				_ = req.Body.Close() // RoundTrip must close it, errors included
			}
			return nil, fmt.Errorf("%s %s: %w", req.Method, req.URL.Path, errLeaseLost)
		}
	}
	return t.next.RoundTrip(req)
}

// fencedLock feeds the fence from the elector's own lease traffic: a
// successful create or update by this identity opens or extends it; handing
// the lease over (release) or seeing another holder closes it at once.
type fencedLock struct {
	leaseLock
	fence *leaseFence
}

func (l fencedLock) Get(ctx context.Context) (*leaseRecord, error) {
	rec, err := l.leaseLock.Get(ctx)
	if err == nil && rec.HolderIdentity != l.Identity() {
		// Someone else holds it (or nobody): whatever our clock says, we
		// are not the leader.
		l.fence.revoke()
	}
	return rec, err
}

func (l fencedLock) Create(ctx context.Context, rec leaseRecord) error {
	return l.write(ctx, rec, l.leaseLock.Create)
}

func (l fencedLock) Update(ctx context.Context, rec leaseRecord) error {
	return l.write(ctx, rec, l.leaseLock.Update)
}

func (l fencedLock) write(ctx context.Context, rec leaseRecord, do func(context.Context, leaseRecord) error) error {
	if rec.HolderIdentity != l.Identity() {
		// Releasing: stop acting before the lease says anyone may lead.
		l.fence.revoke()
		return do(ctx, rec)
	}
	start := l.fence.now()
	err := do(ctx, rec)
	if err == nil {
		l.fence.extend(start)
	}
	return err
}

// watchFence calls lost once the fence closes while ctx (the leader's
// context) is alive, waking when it would close: a renewal pushes the time
// further, a pause makes it past when the process resumes, and the timer
// fires at once then.
func watchFence(ctx context.Context, f *leaseFence, lost func()) {
	for {
		left := f.remaining()
		if left <= 0 {
			if ctx.Err() == nil {
				lost()
			}
			return
		}
		timer := time.NewTimer(left)
		select {
		case <-ctx.Done():
			timer.Stop()
			return
		case <-timer.C:
		}
	}
}
