package operator

import (
	"context"
	"errors"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"

	kubefake "github.com/flinkops/flink-operator/pkg/generated/kube/kubernetes/fake"
)

// testElector is an elector for identity on the lease "ns/lead" of kube,
// on a clock the test moves.
func testElector(kube *kubefake.Clientset, identity string, clk *time.Time) *elector {
	e := newElector(&kubeLeaseLock{client: kube.CoordinationV1(), namespace: "ns", name: "lead", identity: identity},
		leaseTimings{lease: 15 * time.Second, renew: 10 * time.Second, retry: 2 * time.Second})
	e.now = func() time.Time { return *clk }
	return e
}

func getLease(t *testing.T, kube *kubefake.Clientset) *coordinationv1.Lease {
	t.Helper()
	l, err := kube.CoordinationV1().Leases("ns").Get(context.Background(), "lead", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func TestElectorAcquireRenewTakeOverRelease(t *testing.T) {
	ctx := context.Background()
	kube := kubefake.NewSimpleClientset()
	clk := time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC)
	a, b := testElector(kube, "a", &clk), testElector(kube, "b", &clk)

	// No lease yet: a creates it.
	if !a.tryAcquireOrRenew(ctx) {
		t.Fatal("a did not acquire a missing lease")
	}
	l := getLease(t, kube)
	if *l.Spec.HolderIdentity != "a" || *l.Spec.LeaseDurationSeconds != 15 || *l.Spec.LeaseTransitions != 0 || !l.Spec.AcquireTime.Time.Equal(clk) {
		t.Fatalf("created lease %+v, want held by a for 15 s, no transitions, acquired now", l.Spec)
	}
	acquired := clk

	// b sees it held and fresh: b waits, whatever b's view of a's times.
	clk = clk.Add(time.Second)
	if b.tryAcquireOrRenew(ctx) {
		t.Fatal("b took a lease a holds")
	}
	// a renews: the renew time moves, the acquire time and transitions stay.
	clk = clk.Add(time.Second)
	if !a.tryAcquireOrRenew(ctx) {
		t.Fatal("a did not renew its lease")
	}
	l = getLease(t, kube)
	if !l.Spec.RenewTime.Time.Equal(clk) || !l.Spec.AcquireTime.Time.Equal(acquired) || *l.Spec.LeaseTransitions != 0 {
		t.Fatalf("renewed lease %+v, want renewed now, acquired at %v, no transitions", l.Spec, acquired)
	}

	// a stops renewing. b measures expiry from when it saw the record
	// change (its own clock): 14 s later the lease is still a's, 15 s later
	// it is expired and b takes it over.
	clk = clk.Add(time.Second)
	if b.tryAcquireOrRenew(ctx) {
		t.Fatal("b took a lease a just renewed")
	}
	clk = clk.Add(14 * time.Second)
	if b.tryAcquireOrRenew(ctx) {
		t.Fatal("b took the lease 14 s after seeing it renewed (lease 15 s)")
	}
	clk = clk.Add(time.Second)
	if !b.tryAcquireOrRenew(ctx) {
		t.Fatal("b did not take over an expired lease")
	}
	l = getLease(t, kube)
	if *l.Spec.HolderIdentity != "b" || *l.Spec.LeaseTransitions != 1 || !l.Spec.AcquireTime.Time.Equal(clk) {
		t.Fatalf("taken over lease %+v, want held by b, one transition, acquired now", l.Spec)
	}
	// a, back, sees b's fresh lease and does not take it back.
	if a.tryAcquireOrRenew(ctx) || a.isLeader() {
		t.Fatal("a took back a lease b just acquired")
	}

	// a's release does nothing: a does not hold the lease.
	if err := a.release(ctx); err != nil || *getLease(t, kube).Spec.HolderIdentity != "b" {
		t.Fatalf("release by a non-holder: err %v, holder %q; want b's lease untouched", err, *getLease(t, kube).Spec.HolderIdentity)
	}
	// b releases: no holder, a one-second lease, and a takes it at once.
	if err := b.release(ctx); err != nil {
		t.Fatal(err)
	}
	l = getLease(t, kube)
	if *l.Spec.HolderIdentity != "" || *l.Spec.LeaseDurationSeconds != 1 || *l.Spec.LeaseTransitions != 1 {
		t.Fatalf("released lease %+v, want no holder, 1 s, transitions kept", l.Spec)
	}
	if !a.tryAcquireOrRenew(ctx) {
		t.Fatal("a did not take a released lease at once")
	}
	if l = getLease(t, kube); *l.Spec.HolderIdentity != "a" || *l.Spec.LeaseTransitions != 2 {
		t.Fatalf("lease after the release %+v, want held by a, two transitions", l.Spec)
	}
}

// A write that loses a race (the lease changed since it was read) does not
// make this replica the leader.
func TestElectorConflict(t *testing.T) {
	ctx := context.Background()
	kube := kubefake.NewSimpleClientset()
	clk := time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC)
	a := testElector(kube, "a", &clk)
	if !a.tryAcquireOrRenew(ctx) {
		t.Fatal("a did not acquire")
	}
	kube.PrependReactor("update", "leases", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewConflict(coordinationv1.Resource("leases"), "lead", errors.New("changed"))
	})
	clk = clk.Add(2 * time.Second)
	if a.tryAcquireOrRenew(ctx) {
		t.Fatal("a renewed although its update conflicted")
	}
}

// renew gives up after the renew deadline of failed attempts; the caller
// then reports the lease lost.
func TestElectorRenewDeadline(t *testing.T) {
	kube := kubefake.NewSimpleClientset()
	clk := time.Now()
	e := newElector(&kubeLeaseLock{client: kube.CoordinationV1(), namespace: "ns", name: "lead", identity: "a"},
		leaseTimings{lease: 600 * time.Millisecond, renew: 300 * time.Millisecond, retry: 50 * time.Millisecond})
	e.now = func() time.Time { return clk }
	if !e.tryAcquireOrRenew(context.Background()) {
		t.Fatal("did not acquire")
	}
	kube.PrependReactor("get", "leases", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("API server unreachable")
	})
	done := make(chan error, 1)
	go func() { done <- e.renew(context.Background()) }()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("renew returned no error although no renewal succeeded")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("renew did not give up 10 s after renewals started failing (renew deadline 300 ms)")
	}

	// Cancelling ends renew without an error.
	ctx, cancel := context.WithCancel(context.Background())
	go func() { done <- e.renew(ctx) }()
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("renew after cancel: %v, want nil", err)
	}
}
