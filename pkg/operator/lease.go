package operator

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	coordinationv1client "github.com/flinkops/flink-operator/pkg/generated/kube/kubernetes/typed/coordination/v1"
)

// The operator's leader election is client-go's algorithm on a
// coordination.k8s.io Lease (the same record kube-controller-manager and
// controller-runtime write, so tools that show a lease's holder read it),
// written here because client-go's leaderelection package imports every
// Kubernetes API group through its lease-candidate code.

// jitterFactor spreads the retries of replicas that wait for the lease, as
// client-go's elector does (a retry waits retryPeriod × [1, 1+jitterFactor)).
const jitterFactor = 1.2

// leaseRecord is what a Lease says about its holder.
type leaseRecord struct {
	HolderIdentity    string
	LeaseDuration     time.Duration
	AcquireTime       time.Time
	RenewTime         time.Time
	LeaderTransitions int32
}

// same compares records as instants: a record read back has lost the
// monotonic clock reading and sub-microsecond digits of the one written.
func (r *leaseRecord) same(o *leaseRecord) bool {
	return r.HolderIdentity == o.HolderIdentity && r.LeaseDuration == o.LeaseDuration &&
		r.AcquireTime.Truncate(time.Microsecond).Equal(o.AcquireTime.Truncate(time.Microsecond)) &&
		r.RenewTime.Truncate(time.Microsecond).Equal(o.RenewTime.Truncate(time.Microsecond)) &&
		r.LeaderTransitions == o.LeaderTransitions
}

// leaseLock reads and writes the lease record.
type leaseLock interface {
	// Get returns the record; a NotFound error when there is no lease.
	Get(ctx context.Context) (*leaseRecord, error)
	Create(ctx context.Context, rec leaseRecord) error
	// Update writes over the lease last read or written (optimistic
	// concurrency: a conflict when someone else wrote in between).
	Update(ctx context.Context, rec leaseRecord) error
	Identity() string
}

// kubeLeaseLock is a leaseLock on a Lease object.
type kubeLeaseLock struct {
	client          coordinationv1client.LeasesGetter
	namespace, name string
	identity        string
	lease           *coordinationv1.Lease // last read or written
}

func (l *kubeLeaseLock) Identity() string { return l.identity }

func (l *kubeLeaseLock) Get(ctx context.Context) (*leaseRecord, error) {
	lease, err := l.client.Leases(l.namespace).Get(ctx, l.name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	l.lease = lease
	return recordOf(lease.Spec), nil
}

func (l *kubeLeaseLock) Create(ctx context.Context, rec leaseRecord) error {
	lease, err := l.client.Leases(l.namespace).Create(ctx, &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Namespace: l.namespace, Name: l.name},
		Spec:       specOf(rec),
	}, metav1.CreateOptions{})
	if err == nil {
		l.lease = lease
	}
	return err
}

func (l *kubeLeaseLock) Update(ctx context.Context, rec leaseRecord) error {
	if l.lease == nil {
		return errors.New("the lease must be read before it is updated")
	}
	next := l.lease.DeepCopy()
	next.Spec = specOf(rec)
	lease, err := l.client.Leases(l.namespace).Update(ctx, next, metav1.UpdateOptions{})
	if err == nil {
		l.lease = lease
	}
	return err
}

func recordOf(spec coordinationv1.LeaseSpec) *leaseRecord {
	r := &leaseRecord{}
	if spec.HolderIdentity != nil {
		r.HolderIdentity = *spec.HolderIdentity
	}
	if spec.LeaseDurationSeconds != nil {
		r.LeaseDuration = time.Duration(*spec.LeaseDurationSeconds) * time.Second
	}
	if spec.AcquireTime != nil {
		r.AcquireTime = spec.AcquireTime.Time
	}
	if spec.RenewTime != nil {
		r.RenewTime = spec.RenewTime.Time
	}
	if spec.LeaseTransitions != nil {
		r.LeaderTransitions = *spec.LeaseTransitions
	}
	return r
}

func specOf(r leaseRecord) coordinationv1.LeaseSpec {
	seconds := int32(r.LeaseDuration / time.Second)
	return coordinationv1.LeaseSpec{
		HolderIdentity:       &r.HolderIdentity,
		LeaseDurationSeconds: &seconds,
		AcquireTime:          &metav1.MicroTime{Time: r.AcquireTime},
		RenewTime:            &metav1.MicroTime{Time: r.RenewTime},
		LeaseTransitions:     &r.LeaderTransitions,
	}
}

// elector takes part in the election for one lease.
type elector struct {
	lock    leaseLock
	timings leaseTimings
	now     func() time.Time

	// observed is the record last seen and observedAt when it was first
	// seen on this replica's clock: another holder's lease is taken as
	// expired leaseDuration after its record last changed here, so clocks
	// of different machines are never compared.
	observed   *leaseRecord
	observedAt time.Time
}

func newElector(lock leaseLock, timings leaseTimings) *elector {
	return &elector{lock: lock, timings: timings, now: time.Now}
}

func (e *elector) isLeader() bool {
	return e.observed != nil && e.observed.HolderIdentity == e.lock.Identity()
}

// tryAcquireOrRenew makes one attempt to create, take over or renew the
// lease, and reports whether this replica holds it now.
func (e *elector) tryAcquireOrRenew(ctx context.Context) bool {
	now := e.now()
	rec := leaseRecord{
		HolderIdentity: e.lock.Identity(),
		LeaseDuration:  e.timings.lease,
		AcquireTime:    now,
		RenewTime:      now,
	}
	old, err := e.lock.Get(ctx)
	switch {
	case apierrors.IsNotFound(err):
		if err := e.lock.Create(ctx, rec); err != nil {
			return false
		}
		e.observe(&rec, now)
		return true
	case err != nil:
		return false
	}
	if e.observed == nil || !e.observed.same(old) {
		e.observe(old, now)
	}
	held := old.HolderIdentity != "" && old.HolderIdentity != e.lock.Identity()
	if held && e.observedAt.Add(old.LeaseDuration).After(now) {
		return false
	}
	if old.HolderIdentity == e.lock.Identity() {
		rec.AcquireTime = old.AcquireTime
		rec.LeaderTransitions = old.LeaderTransitions
	} else {
		rec.LeaderTransitions = old.LeaderTransitions + 1
	}
	if err := e.lock.Update(ctx, rec); err != nil {
		return false
	}
	e.observe(&rec, now)
	return true
}

func (e *elector) observe(rec *leaseRecord, at time.Time) {
	e.observed, e.observedAt = rec, at
}

// acquire retries until this replica holds the lease (true) or ctx ends.
func (e *elector) acquire(ctx context.Context) bool {
	for {
		if e.tryAcquireOrRenew(ctx) {
			return true
		}
		wait := e.timings.retry + time.Duration(rand.Float64()*jitterFactor*float64(e.timings.retry))
		select {
		case <-ctx.Done():
			return false
		case <-time.After(wait):
		}
	}
}

// renew keeps the lease, a renewal every retryPeriod, until ctx ends (nil)
// or a renewal does not succeed within the renew deadline (an error).
func (e *elector) renew(ctx context.Context) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(e.timings.retry):
		}
		if !e.renewOnce(ctx) {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("the lease was not renewed within %v", e.timings.renew)
		}
	}
}

// renewOnce retries a renewal every retryPeriod for up to the renew
// deadline.
func (e *elector) renewOnce(ctx context.Context) bool {
	deadline, cancel := context.WithTimeout(ctx, e.timings.renew)
	defer cancel()
	for {
		if e.tryAcquireOrRenew(deadline) {
			return true
		}
		select {
		case <-deadline.Done():
			return false
		case <-time.After(e.timings.retry):
		}
	}
}

// release hands the lease over at once (a holder-less record lasting one
// second), when this replica holds it.
func (e *elector) release(ctx context.Context) error {
	if !e.isLeader() {
		return nil
	}
	now := e.now()
	rec := leaseRecord{LeaseDuration: time.Second, AcquireTime: now, RenewTime: now, LeaderTransitions: e.observed.LeaderTransitions}
	if err := e.lock.Update(ctx, rec); err != nil {
		return err
	}
	e.observe(&rec, now)
	return nil
}
