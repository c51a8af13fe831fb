// Package canary is upstream's canary resources: a FlinkDeployment or
// FlinkSessionJob labelled `flink.apache.org/canary: "true"` is never
// deployed, validated or given a status; it exists so the operator's
// liveness probe can tell that the controllers still reconcile.
//
// As upstream's CanaryResourceManager: when a controller first syncs a
// canary, the Monitor bumps the canary's spec.restartNonce (a new
// generation) and, kubernetes.operator.health.canary.resource.timeout later,
// checks that a sync has since seen a generation newer than the one it
// bumped from; then it bumps again, and so on. A canary that failed its
// last check makes Healthy fail (so /healthz fails and the kubelet restarts
// the operator); it is healthy again once a later check passes. The
// controllers only call Sync at the start of their queue's sync and do
// nothing else with a canary: no objects, no Flink calls, no status write.
// A canary being deleted is forgotten and loses the controller's finalizer
// (the mutating webhook gives every new resource one).
//
// With kubernetes.operator.health.probe.enabled=false canaries are still
// never deployed (as upstream), but nothing bumps or checks them and
// Healthy always passes.
//
// Under leader election only the leader's controllers sync, so only the
// leader tracks canaries; the other replicas report healthy.
package canary

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/retry"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	clientset "github.com/flinkops/flink-operator/pkg/clients/flink"
	"github.com/flinkops/flink-operator/pkg/config"
)

// Label marks a canary resource (value "true", in any case, as upstream).
const Label = "flink.apache.org/canary"

// Is reports whether obj is a canary resource.
func Is(obj metav1.Object) bool {
	return strings.EqualFold(obj.GetLabels()[Label], "true")
}

// Object is a FlinkDeployment or a FlinkSessionJob.
type Object interface {
	metav1.Object
	runtime.Object
}

// ref names one canary.
type ref struct {
	kind, namespace, name string
}

func (r ref) String() string { return r.kind + " " + r.namespace + "/" + r.name }

// state is what the Monitor knows of one canary.
type state struct {
	// generation is that of the latest sync that saw the canary.
	generation int64
	// bumped: the Monitor changed the spec, from bumpedFrom (the
	// generation the latest sync had then seen).
	bumped     bool
	bumpedFrom int64
	// due is when the next check (and bump) is.
	due     time.Time
	healthy bool
}

// Monitor tracks the canary resources of both job controllers. Its
// methods are safe for concurrent use and on a nil Monitor (canaries are
// then skipped, not tracked).
type Monitor struct {
	enabled bool
	timeout time.Duration
	clock   clock.Clock
	wake    chan struct{}

	mu       sync.Mutex
	canaries map[ref]*state
}

// New reads kubernetes.operator.health.probe.enabled and
// kubernetes.operator.health.canary.resource.timeout from the operator's
// configuration; clk nil is the real clock.
func New(cfg config.Config, clk clock.Clock) (*Monitor, error) {
	enabled, err := cfg.Bool(config.KeyHealthProbeEnabled)
	if err != nil {
		return nil, err
	}
	timeout, err := cfg.Duration(config.KeyHealthCanaryResourceTimeout)
	if err != nil {
		return nil, err
	}
	if timeout <= 0 {
		return nil, fmt.Errorf("%s must be positive, got %v", config.KeyHealthCanaryResourceTimeout, timeout)
	}
	if clk == nil {
		clk = clock.RealClock{}
	}
	return &Monitor{enabled: enabled, timeout: timeout, clock: clk, wake: make(chan struct{}, 1), canaries: map[ref]*state{}}, nil
}

// Sync is a job controller's hook at the start of its queue's sync of key:
// get reads the object from the informer cache. It returns true when the
// object is a canary, which the controller must then leave alone; the
// error is that of removing the finalizer of a canary being deleted. An
// object that is gone or no longer a canary is forgotten.
func Sync[T Object](ctx context.Context, m *Monitor, client clientset.Interface, key string, get func(namespace, name string) (T, error)) (bool, error) {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return false, nil // the controller's own sync reports it
	}
	r := ref{kind: kindOf(*new(T)), namespace: ns, name: name}
	obj, err := get(ns, name)
	if err != nil {
		if apierrors.IsNotFound(err) {
			m.forget(r)
		}
		return false, nil
	}
	if !Is(obj) {
		m.forget(r)
		return false, nil
	}
	logger := klog.FromContext(ctx)
	if obj.GetDeletionTimestamp() != nil {
		m.forget(r)
		logger.V(2).Info("Deleting canary resource")
		return true, removeFinalizer(ctx, client, obj)
	}
	logger.V(2).Info("Reconciled canary resource", "generation", obj.GetGeneration())
	m.reconciled(r, obj.GetGeneration())
	return true, nil
}

// reconciled notes that a sync saw the canary at generation.
func (m *Monitor) reconciled(r ref, generation int64) {
	if m == nil || !m.enabled {
		return
	}
	m.mu.Lock()
	s, ok := m.canaries[r]
	if !ok {
		// First seen: bump at once, check a timeout later.
		s = &state{healthy: true, due: m.clock.Now()}
		m.canaries[r] = s
	}
	s.generation = generation
	m.mu.Unlock()
	if !ok {
		select {
		case m.wake <- struct{}{}:
		default:
		}
	}
}

func (m *Monitor) forget(r ref) {
	if m == nil {
		return
	}
	m.mu.Lock()
	delete(m.canaries, r)
	m.mu.Unlock()
}

// Len is the number of canaries tracked.
func (m *Monitor) Len() int {
	if m == nil {
		return 0
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.canaries)
}

// Healthy fails when a canary failed its latest check: its spec was
// changed and no sync saw the change within the timeout. It is the
// liveness probe's check; with the probe disabled it always passes.
func (m *Monitor) Healthy() error {
	if m == nil || !m.enabled {
		return nil
	}
	m.mu.Lock()
	var bad []string
	for r, s := range m.canaries {
		if !s.healthy {
			bad = append(bad, r.String())
		}
	}
	m.mu.Unlock()
	if len(bad) == 0 {
		return nil
	}
	sort.Strings(bad)
	return fmt.Errorf("canary resources not reconciled within %v of their last change: %s", m.timeout, strings.Join(bad, ", "))
}

// Run checks and bumps the canaries until ctx ends, writing through
// client (the controllers' client). It returns at once when the health
// probe is disabled.
func (m *Monitor) Run(ctx context.Context, client clientset.Interface) {
	if m == nil || !m.enabled {
		return
	}
	for {
		next := m.check(ctx, client)
		t := m.clock.NewTimer(next)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-m.wake:
			t.Stop()
		case <-t.C():
		}
	}
}

// check judges and bumps every canary whose check is due, and returns the
// time to the next one (the timeout when none is tracked).
func (m *Monitor) check(ctx context.Context, client clientset.Interface) time.Duration {
	logger := klog.FromContext(ctx)
	now := m.clock.Now()
	next := m.timeout
	var bumps []ref
	m.mu.Lock()
	for r, s := range m.canaries {
		if s.due.After(now) {
			next = min(next, s.due.Sub(now))
			continue
		}
		if s.bumped {
			was := s.healthy
			s.healthy = s.generation > s.bumpedFrom
			switch {
			case !s.healthy:
				logger.Error(nil, "Canary resource's latest spec not reconciled in time", "kind", r.kind,
					"object", klog.KRef(r.namespace, r.name), "expectedGenerationAbove", s.bumpedFrom,
					"generation", s.generation, "timeout", m.timeout)
			case !was:
				logger.Info("Canary resource reconciled again", "kind", r.kind, "object", klog.KRef(r.namespace, r.name))
			}
		}
		s.bumped, s.bumpedFrom, s.due = true, s.generation, now.Add(m.timeout)
		bumps = append(bumps, r)
	}
	m.mu.Unlock()
	for _, r := range bumps {
		err := bump(ctx, client, r)
		if apierrors.IsNotFound(err) {
			m.forget(r) // deleted: nothing to judge
			continue
		}
		if err != nil {
			logger.Error(err, "Could not bump canary resource", "kind", r.kind, "object", klog.KRef(r.namespace, r.name))
		}
	}
	return next
}

// bump changes the canary's spec (restartNonce+1), so the API server gives
// it a new generation for the controller to see. It writes with update, as
// upstream (and as the controllers' RBAC allows), on a fresh read.
func bump(ctx context.Context, client clientset.Interface, r ref) error {
	next := func(n *int64) *int64 {
		v := int64(1)
		if n != nil {
			v = *n + 1
		}
		return &v
	}
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		switch r.kind {
		case kindDeployment:
			c := client.FlinkV1beta1().FlinkDeployments(r.namespace)
			d, err := c.Get(ctx, r.name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			d.Spec.RestartNonce = next(d.Spec.RestartNonce)
			_, err = c.Update(ctx, d, metav1.UpdateOptions{})
			return err
		case kindSessionJob:
			c := client.FlinkV1beta1().FlinkSessionJobs(r.namespace)
			j, err := c.Get(ctx, r.name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			j.Spec.RestartNonce = next(j.Spec.RestartNonce)
			_, err = c.Update(ctx, j, metav1.UpdateOptions{})
			return err
		}
		return nil
	})
}

const (
	kindDeployment = "FlinkDeployment"
	kindSessionJob = "FlinkSessionJob"
)

func kindOf(obj any) string {
	switch obj.(type) {
	case *v1beta1.FlinkDeployment:
		return kindDeployment
	case *v1beta1.FlinkSessionJob:
		return kindSessionJob
	}
	return fmt.Sprintf("%T", obj)
}

// removeFinalizer lets a canary being deleted go: the controller's
// finalizer (the mutating webhook adds it to every new resource) guards
// nothing here.
func removeFinalizer(ctx context.Context, client clientset.Interface, obj Object) error {
	var err error
	switch o := obj.(type) {
	case *v1beta1.FlinkDeployment:
		if !slices.Contains(o.Finalizers, v1beta1.DeploymentFinalizer) {
			return nil
		}
		w := o.DeepCopy()
		w.Finalizers = slices.DeleteFunc(w.Finalizers, func(f string) bool { return f == v1beta1.DeploymentFinalizer })
		_, err = client.FlinkV1beta1().FlinkDeployments(w.Namespace).Update(ctx, w, metav1.UpdateOptions{})
	case *v1beta1.FlinkSessionJob:
		if !slices.Contains(o.Finalizers, v1beta1.SessionJobFinalizer) {
			return nil
		}
		w := o.DeepCopy()
		w.Finalizers = slices.DeleteFunc(w.Finalizers, func(f string) bool { return f == v1beta1.SessionJobFinalizer })
		_, err = client.FlinkV1beta1().FlinkSessionJobs(w.Namespace).Update(ctx, w, metav1.UpdateOptions{})
	}
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("removing finalizer of canary %s %s/%s: %w", kindOf(obj), obj.GetNamespace(), obj.GetName(), err)
	}
	return nil
}

// IsJSON reports whether raw, an object as JSON (an admission request's),
// is a canary resource: the webhook does not validate those, as upstream.
func IsJSON(raw []byte) bool {
	var obj metav1.PartialObjectMetadata
	return json.Unmarshal(raw, &obj) == nil && Is(&obj)
}
