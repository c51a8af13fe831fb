package operator

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flinkops/flink-operator/pkg/config"
)

func TestLeaderElectionTimings(t *testing.T) {
	for _, tc := range []struct {
		name    string
		set     map[string]string
		want    leaseTimings
		wantErr string
	}{
		{name: "defaults", want: leaseTimings{15 * time.Second, 10 * time.Second, 2 * time.Second}},
		{name: "configured", set: map[string]string{
			config.KeyLeaderElectionLeaseDuration: "60 s",
			config.KeyLeaderElectionRenewDeadline: "40 s",
			config.KeyLeaderElectionRetryPeriod:   "5 s",
		}, want: leaseTimings{60 * time.Second, 40 * time.Second, 5 * time.Second}},
		{name: "lease not longer than renew", set: map[string]string{config.KeyLeaderElectionLeaseDuration: "10 s"},
			wantErr: "lease-duration (10s) must be greater than kubernetes.operator.leader-election.renew-deadline (10s)"},
		{name: "retry too long for renew", set: map[string]string{config.KeyLeaderElectionRetryPeriod: "9 s"},
			wantErr: "renew-deadline (10s) must be greater than 1.2 × kubernetes.operator.leader-election.retry-period (9s)"},
		{name: "unreadable", set: map[string]string{config.KeyLeaderElectionRetryPeriod: "soon"},
			wantErr: "retry-period"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := config.Defaults()
			for k, v := range tc.set {
				cfg[k] = v
			}
			got, err := leaderElectionTimings(cfg)
			switch {
			case tc.wantErr != "":
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Errorf("err %v, want one containing %q", err, tc.wantErr)
				}
			case err != nil:
				t.Errorf("unexpected error %v", err)
			case got != tc.want:
				t.Errorf("timings %+v, want %+v", got, tc.want)
			}
		})
	}
}

// fakeClock is a settable clock for the fence.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) step(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func newTestFence(renew time.Duration) (*leaseFence, *fakeClock) {
	clk := &fakeClock{t: time.Unix(1000, 0)}
	f := newLeaseFence(renew)
	f.now = clk.now
	return f, clk
}

func TestLeaseFence(t *testing.T) {
	f, clk := newTestFence(4 * time.Second)
	if f.valid() {
		t.Fatal("a fence never extended is open")
	}
	start := clk.now()
	clk.step(time.Second) // the renewal took a second
	f.extend(start)
	if !f.valid() || f.remaining() != 3*time.Second {
		t.Fatalf("after a renewal started 1 s ago: valid %v, remaining %v; want open for 3 s (counted from the request's start)", f.valid(), f.remaining())
	}
	f.extend(start.Add(-time.Second)) // a late answer to an older request
	if f.remaining() != 3*time.Second {
		t.Fatalf("an older renewal shortened the fence to %v", f.remaining())
	}
	clk.step(3 * time.Second)
	if f.valid() {
		t.Fatal("fence open at renewal start + renew deadline")
	}
	f.extend(clk.now())
	f.revoke()
	if f.valid() {
		t.Fatal("fence open after revoke")
	}
}

type countingTransport struct{ calls []string }

func (c *countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	c.calls = append(c.calls, req.Method)
	return &http.Response{StatusCode: http.StatusOK, Body: io.NopCloser(strings.NewReader("")), Request: req}, nil
}

type closeRecorder struct {
	io.Reader
	closed bool
}

func (c *closeRecorder) Close() error { c.closed = true; return nil }

func TestFencedTransport(t *testing.T) {
	f, clk := newTestFence(4 * time.Second)
	next := &countingTransport{}
	rt := f.wrap(next)
	do := func(method string) (error, *closeRecorder) {
		body := &closeRecorder{Reader: strings.NewReader("{}")}
		req, err := http.NewRequest(method, "https://api/apis/flink.apache.org/v1beta1/namespaces/a/flinkstatesnapshots/s", body)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := rt.RoundTrip(req)
		if resp != nil {
			resp.Body.Close()
		}
		return err, body
	}
	writes := []string{http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete}

	// Closed (never led, or lost): reads pass, every write is refused
	// before it reaches the wire, and its body is closed.
	for _, m := range []string{http.MethodGet, http.MethodHead} {
		if err, _ := do(m); err != nil {
			t.Errorf("%s with the fence closed: %v, want it sent", m, err)
		}
	}
	for _, m := range writes {
		err, body := do(m)
		if !errors.Is(err, errLeaseLost) {
			t.Errorf("%s with the fence closed: err %v, want errLeaseLost", m, err)
		}
		if !body.closed {
			t.Errorf("%s refused without closing the request body", m)
		}
	}
	if strings.Join(next.calls, ",") != "GET,HEAD" {
		t.Fatalf("sent %v with the fence closed, want only the reads", next.calls)
	}

	// Open: writes go through; closed again by time alone: refused.
	f.extend(clk.now())
	for _, m := range writes {
		if err, _ := do(m); err != nil {
			t.Errorf("%s with the fence open: %v", m, err)
		}
	}
	clk.step(4 * time.Second)
	if err, _ := do(http.MethodPut); !errors.Is(err, errLeaseLost) {
		t.Errorf("PUT after the renew deadline passed without renewal: %v, want errLeaseLost", err)
	}
	if got := len(next.calls); got != 2+len(writes) {
		t.Errorf("%d requests sent, want %d", got, 2+len(writes))
	}
}

// fakeLock is a leaseLock whose calls take a step of the fake
// clock and can fail; it records whether the fence was open during each
// write.
type fakeLock struct {
	id       string
	clk      *fakeClock
	fence    *leaseFence
	holder   string
	fail     error
	openSeen []bool
}

func (l *fakeLock) Get(context.Context) (*leaseRecord, error) {
	return &leaseRecord{HolderIdentity: l.holder}, l.fail
}

func (l *fakeLock) Create(ctx context.Context, rec leaseRecord) error {
	return l.Update(ctx, rec)
}

func (l *fakeLock) Update(_ context.Context, rec leaseRecord) error {
	l.openSeen = append(l.openSeen, l.fence.valid())
	l.clk.step(500 * time.Millisecond) // the request's round trip
	if l.fail != nil {
		return l.fail
	}
	l.holder = rec.HolderIdentity
	return nil
}

func (l *fakeLock) Identity() string            { return l.id }
func (l *fakeLock) setFail(err error) *fakeLock { l.fail = err; return l }
func (l *fakeLock) record(holder string) leaseRecord {
	return leaseRecord{HolderIdentity: holder}
}

func TestFencedLock(t *testing.T) {
	ctx := context.Background()
	f, clk := newTestFence(4 * time.Second)
	inner := &fakeLock{id: "me", clk: clk, fence: f}
	lock := fencedLock{leaseLock: inner, fence: f}

	// Acquiring opens the fence for the renew deadline from the request's
	// start, not its answer.
	if err := lock.Create(ctx, inner.record("me")); err != nil {
		t.Fatal(err)
	}
	if got := f.remaining(); got != 3500*time.Millisecond {
		t.Fatalf("after acquiring: fence open for %v, want 3.5 s (4 s from the request's start)", got)
	}
	// A failed renewal does not extend it.
	clk.step(time.Second)
	inner.setFail(errors.New("timeout"))
	if err := lock.Update(ctx, inner.record("me")); err == nil {
		t.Fatal("want the renewal's error")
	}
	if got := f.remaining(); got != 2*time.Second {
		t.Fatalf("after a failed renewal: fence open for %v, want 2 s", got)
	}
	inner.setFail(nil)
	if err := lock.Update(ctx, inner.record("me")); err != nil {
		t.Fatal(err)
	}
	if got := f.remaining(); got != 3500*time.Millisecond {
		t.Fatalf("after a renewal: fence open for %v, want 3.5 s", got)
	}
	// Seeing another holder closes it whatever the clock says.
	inner.holder = "other"
	if _, err := lock.Get(ctx); err != nil {
		t.Fatal(err)
	}
	if f.valid() {
		t.Fatal("fence open after Get saw another holder")
	}
	// Our own record seen by Get leaves it as it is.
	inner.holder = "me"
	f.extend(clk.now())
	if _, err := lock.Get(ctx); err != nil || !f.valid() {
		t.Fatalf("Get of our own record: err %v, fence open %v; want it open", err, f.valid())
	}
	// Releasing (an update naming nobody) closes it before the write.
	inner.openSeen = nil
	if err := lock.Update(ctx, inner.record("")); err != nil {
		t.Fatal(err)
	}
	if len(inner.openSeen) != 1 || inner.openSeen[0] || f.valid() {
		t.Fatalf("release: fence open during the write %v, after it %v; want closed before", inner.openSeen, f.valid())
	}
}

func TestWatchFence(t *testing.T) {
	f := newLeaseFence(300 * time.Millisecond)
	lost := make(chan time.Time, 1)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	begin := time.Now()
	f.extend(begin)
	go watchFence(ctx, f, func() { lost <- time.Now() })
	// Renewals every 50 ms keep it quiet well past one renew deadline.
	for i := 0; i < 10; i++ {
		time.Sleep(50 * time.Millisecond)
		f.extend(time.Now())
	}
	select {
	case at := <-lost:
		t.Fatalf("lost after %v although renewed every 50 ms", at.Sub(begin))
	default:
	}
	last := time.Now()
	select {
	case at := <-lost:
		if d := at.Sub(last); d < 250*time.Millisecond || d > 2*time.Second {
			t.Errorf("lost %v after the last renewal, want about the 300 ms renew deadline", d)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no lost call 5 s after renewals stopped")
	}

	// A leader that stops leading (context cancelled) is not reported lost.
	f2 := newLeaseFence(50 * time.Millisecond)
	f2.extend(time.Now())
	ctx2, cancel2 := context.WithCancel(context.Background())
	done := make(chan struct{})
	called := false
	go func() { watchFence(ctx2, f2, func() { called = true }); close(done) }()
	cancel2()
	<-done
	if called {
		t.Error("lost called after the leader's context ended")
	}
}

// The Lease holder is the pod's name in a pod (as upstream: its e2e
// scripts delete the holder's pod), a unique name on a shared machine.
func TestLeaderIdentity(t *testing.T) {
	env := func(kv map[string]string) func(string) string { return func(k string) string { return kv[k] } }
	inPod := env(map[string]string{"KUBERNETES_SERVICE_HOST": "10.0.0.1", "POD_NAMESPACE": "flink-operator"})
	if got := leaderIdentity("flink-kubernetes-operator-5cf9-x", inPod); got != "flink-kubernetes-operator-5cf9-x" {
		t.Errorf("in a pod: %q, want the pod name", got)
	}
	a, b := leaderIdentity("host", env(nil)), leaderIdentity("host", env(nil))
	if a == b || !strings.HasPrefix(a, "host_") {
		t.Errorf("outside a pod: %q and %q, want distinct host_<uuid>", a, b)
	}
}
