package metrics

import (
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/canary"
	"github.com/flinkops/flink-operator/pkg/config"
)

// Lifecycle metrics (kubernetes.operator.resource.lifecycle.metrics.enabled):
// how long FlinkDeployments and FlinkSessionJobs stay in each lifecycle
// state (status.lifecycleState) and how long upstream's tracked transitions
// take, with upstream's LifecycleMetrics rules:
//
//   - Each resource keeps, per state, when it last entered it and when it was
//     last seen in it. Entering a terminal state (SUSPENDED, STABLE,
//     ROLLED_BACK, FAILED, DELETED) forgets every other state, entering
//     UPGRADING every state but the one it came from; a forgotten state's
//     time is observed then. So a state's time is that of its last stretch
//     before such a clearing transition.
//   - Entering a state observes each tracked transition into it whose
//     "from" state is still kept, from the "from" state's last entry or its
//     last sighting (see lifecycleTransitions).
//
// Here the tracker is fed by the informers (every add and update of a
// resource is a sighting), not by the reconciler as upstream; a standby
// replica tracks the same changes, so a new leader has the history. Where
// upstream ends a state's time at its last sighting (its reconciler sees a
// resource at least every reconcile interval), here it ends when the first
// object in another state is seen: the informers show no periodic sightings.
//
// After an operator restart the tracker knows nothing of the past, as
// upstream: a resource's current state counts from the first sighting,
// except CREATED, which counts from metadata.creationTimestamp (as
// upstream); transitions from states left before the restart are not
// observed.
//
// Series: flink_operator_lifecycle_state_duration_seconds{kind,namespace,state},
// flink_operator_lifecycle_transition_duration_seconds{kind,namespace,transition}
// and the gauge flink_operator_lifecycle_resources{kind,namespace,state}. With
// kubernetes.operator.resource.lifecycle.namespace.histograms.enabled false
// the histograms' namespace is "" (no label, to Prometheus); otherwise it is
// the resource's namespace and the operator-wide histogram is their sum (a
// Prometheus histogram adds up exactly, unlike upstream's sampled ones, so
// upstream's separate operator-wide histograms are not exported as well:
// summing them with the namespace ones would count everything twice).

// Resource kinds, the kind label.
const (
	KindFlinkDeployment = "FlinkDeployment"
	KindFlinkSessionJob = "FlinkSessionJob"
)

// Transition names, the transition label (upstream's).
const (
	TransitionResume        = "Resume"
	TransitionUpgrade       = "Upgrade"
	TransitionSuspend       = "Suspend"
	TransitionSubmission    = "Submission"
	TransitionStabilization = "Stabilization"
	TransitionRollback      = "Rollback"
)

// lifecycleStates are the states in upstream's order; a state's index is
// its slot in a resource's times.
var lifecycleStates = [...]v1beta1.ResourceLifecycleState{
	v1beta1.LifecycleCreated,
	v1beta1.LifecycleSuspended,
	v1beta1.LifecycleUpgrading,
	v1beta1.LifecycleDeployed,
	v1beta1.LifecycleStable,
	v1beta1.LifecycleRollingBack,
	v1beta1.LifecycleRolledBack,
	v1beta1.LifecycleFailed,
	v1beta1.LifecycleDeleting,
	v1beta1.LifecycleDeleted,
}

type stateIndex uint8

const (
	stCreated stateIndex = iota
	stSuspended
	stUpgrading
	stDeployed
	stStable
	stRollingBack
	stRolledBack
	stFailed
	stDeleting
	stDeleted
	numStates
)

// terminal states clear every other state when entered (upstream's
// ResourceLifecycleState.terminal).
var terminal = [numStates]bool{stSuspended: true, stStable: true, stRolledBack: true, stFailed: true, stDeleted: true}

func stateOf(s v1beta1.ResourceLifecycleState) (stateIndex, bool) {
	if s == "" {
		// No status written yet: upstream computes CREATED for it.
		return stCreated, true
	}
	for i, v := range lifecycleStates {
		if v == s {
			return stateIndex(i), true
		}
	}
	return 0, false
}

// lifecycleTransition is one of upstream's tracked transitions: entering to
// while from is kept observes the time since from was last seen
// (fromLastSighting) or last entered.
type lifecycleTransition struct {
	from, to         stateIndex
	fromLastSighting bool
	name             string
}

// lifecycleTransitions is upstream's LifecycleMetrics.TRACKED_TRANSITIONS.
// Several may fire on one change (entering UPGRADING while both DEPLOYED
// and STABLE are kept observes Suspend twice), as upstream.
var lifecycleTransitions = []lifecycleTransition{
	{stSuspended, stStable, true, TransitionResume},
	{stStable, stStable, true, TransitionUpgrade},
	{stDeployed, stUpgrading, true, TransitionSuspend},
	{stStable, stUpgrading, true, TransitionSuspend},
	{stRolledBack, stUpgrading, true, TransitionSuspend},
	{stDeployed, stSuspended, true, TransitionSuspend},
	{stStable, stSuspended, true, TransitionSuspend},
	{stRolledBack, stSuspended, true, TransitionSuspend},
	{stDeployed, stStable, false, TransitionStabilization},
	{stDeployed, stRolledBack, false, TransitionRollback},
	{stUpgrading, stDeployed, true, TransitionSubmission},
	{stRollingBack, stRolledBack, true, TransitionSubmission},
}

// LifecycleBuckets are the lifecycle histograms' buckets, in seconds: 1 s to
// 7 days (a state's time can be that long).
var LifecycleBuckets = []float64{1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600, 3 * 3600, 12 * 3600, 24 * 3600, 7 * 24 * 3600}

// lifecycleMetrics are the series a tracker writes: the package's, on
// Registry, or a test's own.
type lifecycleMetrics struct {
	state, transition *prometheus.HistogramVec
	resources         *lifecycleGauge
}

func newLifecycleMetrics() *lifecycleMetrics {
	return &lifecycleMetrics{
		state: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "flink_operator", Name: "lifecycle_state_duration_seconds",
			Help:    "Time FlinkDeployments and FlinkSessionJobs spent in a lifecycle state, observed when the state is cleared (upstream's Lifecycle.State.<STATE>.TimeSeconds).",
			Buckets: LifecycleBuckets,
		}, []string{"kind", "namespace", "state"}),
		transition: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "flink_operator", Name: "lifecycle_transition_duration_seconds",
			Help:    "Time FlinkDeployments and FlinkSessionJobs took for a lifecycle transition (upstream's Lifecycle.Transition.<name>.TimeSeconds).",
			Buckets: LifecycleBuckets,
		}, []string{"kind", "namespace", "transition"}),
		resources: &lifecycleGauge{desc: prometheus.NewDesc("flink_operator_lifecycle_resources",
			"FlinkDeployments and FlinkSessionJobs by namespace and lifecycle state (upstream's Lifecycle.State.<STATE>.Count).",
			[]string{"kind", "namespace", "state"}, nil)},
	}
}

func (m *lifecycleMetrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{m.state, m.transition, m.resources}
}

var lifecycleSeries = newLifecycleMetrics()

func init() {
	Registry.MustRegister(lifecycleSeries.collectors()...)
}

// stateTimes are one state's times, in Unix nanoseconds; entered 0 means
// the state is not kept.
type stateTimes struct {
	entered, lastSeen, left int64
}

// trackedResource is what the tracker keeps of one resource: about 380
// bytes with its map entry and UID (TestLifecycleTrackerMemory measures it).
type trackedResource struct {
	namespace string // interned
	kind      uint8
	current   stateIndex
	times     [numStates]stateTimes
}

var kinds = [...]string{KindFlinkDeployment, KindFlinkSessionJob}

// LifecycleTracker follows the lifecycle state of every FlinkDeployment and
// FlinkSessionJob its informers show and writes the lifecycle metrics. It
// forgets a resource when the informer reports it deleted.
type LifecycleTracker struct {
	enabled, byNamespace bool
	clock                clock.PassiveClock
	series               *lifecycleMetrics

	mu        sync.Mutex
	resources map[types.UID]*trackedResource
	// peak is the largest len(resources) since the map was last rebuilt:
	// Go maps never shrink, so after mass deletions the map is copied.
	peak       int
	namespaces map[string]string
}

// NewLifecycleTracker reads kubernetes.operator.resource.lifecycle.metrics.enabled
// (with kubernetes.operator.resource.metrics.enabled, both needed, as
// upstream) and ...lifecycle.namespace.histograms.enabled from cfg, once, as
// upstream builds its metrics at start. Disabled, the tracker registers no
// handler and exports nothing. The tracker feeds the package's series on
// Registry; call Unregister when its informers stop.
func NewLifecycleTracker(cfg config.Config, clk clock.PassiveClock) (*LifecycleTracker, error) {
	return newLifecycleTracker(cfg, clk, lifecycleSeries)
}

func newLifecycleTracker(cfg config.Config, clk clock.PassiveClock, series *lifecycleMetrics) (*LifecycleTracker, error) {
	t := &LifecycleTracker{clock: clk, series: series}
	var on [3]bool
	for i, key := range []string{
		config.KeyResourceMetricsEnabled,
		config.KeyResourceLifecycleMetricsEnabled,
		config.KeyResourceLifecycleNamespaceHistogramsEnabled,
	} {
		v, err := cfg.Bool(key)
		if err != nil {
			return nil, err
		}
		on[i] = v
	}
	t.enabled, t.byNamespace = on[0] && on[1], on[2]
	if t.enabled {
		t.resources = map[types.UID]*trackedResource{}
		t.namespaces = map[string]string{}
		series.resources.current.Store(t)
	}
	return t, nil
}

// Enabled reports whether the tracker tracks anything.
func (t *LifecycleTracker) Enabled() bool { return t.enabled }

// Handler is the event handler to register on the FlinkDeployment and
// FlinkSessionJob informers (of every watched namespace); nil when the
// tracker is disabled.
func (t *LifecycleTracker) Handler() cache.ResourceEventHandler {
	if !t.enabled {
		return nil
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { t.Observe(obj) },
		UpdateFunc: func(_, newObj any) { t.Observe(newObj) },
		DeleteFunc: t.Forget,
	}
}

// AddEventHandlers registers Handler on each informer (FlinkDeployment and
// FlinkSessionJob informers); nothing when the tracker is disabled.
func (t *LifecycleTracker) AddEventHandlers(informers ...cache.SharedInformer) error {
	if !t.enabled {
		return nil
	}
	h := t.Handler()
	for _, inf := range informers {
		if _, err := inf.AddEventHandler(h); err != nil {
			return err
		}
	}
	return nil
}

// Unregister stops the resource gauge reading this tracker (the histograms
// keep their counts, as Prometheus counters do) and drops what it tracked.
func (t *LifecycleTracker) Unregister() {
	if !t.enabled {
		return
	}
	t.series.resources.current.CompareAndSwap(t, nil)
	t.mu.Lock()
	t.resources, t.namespaces, t.peak = nil, nil, 0 // late events find nil and do nothing
	t.mu.Unlock()
}

// Len is the number of resources tracked.
func (t *LifecycleTracker) Len() int {
	if !t.enabled {
		return 0
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.resources)
}

// resourceOf returns the metadata, kind and lifecycle state of a
// FlinkDeployment or FlinkSessionJob (or its tombstone).
func resourceOf(obj any) (metav1.Object, uint8, v1beta1.ResourceLifecycleState, bool) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	switch o := obj.(type) {
	case *v1beta1.FlinkDeployment:
		return o, 0, o.Status.LifecycleState, true
	case *v1beta1.FlinkSessionJob:
		return o, 1, o.Status.LifecycleState, true
	}
	return nil, 0, "", false
}

// Observe records a sighting of a FlinkDeployment or FlinkSessionJob: its
// state now is the one in its status. Canary resources are left out, as
// upstream (they never reach its metrics).
func (t *LifecycleTracker) Observe(obj any) {
	if !t.enabled {
		return
	}
	meta, kind, s, ok := resourceOf(obj)
	if !ok || canary.Is(meta) {
		return
	}
	state, ok := stateOf(s)
	if !ok {
		return
	}
	now := t.clock.Now().UnixNano()
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.resources == nil {
		return // unregistered
	}
	r := t.resources[meta.GetUID()]
	if r == nil {
		r = &trackedResource{namespace: t.intern(meta.GetNamespace()), kind: kind, current: state}
		entered := now
		if created := meta.GetCreationTimestamp(); state == stCreated && !created.IsZero() {
			entered = created.UnixNano()
		}
		r.times[state] = stateTimes{entered: entered, lastSeen: now}
		t.resources[types.UID(strings.Clone(string(meta.GetUID())))] = r
		t.peak = max(t.peak, len(t.resources))
		return
	}
	t.update(r, state, now)
}

// update is upstream's ResourceLifecycleMetricTracker.onUpdate.
func (t *LifecycleTracker) update(r *trackedResource, state stateIndex, now int64) {
	if state == r.current {
		r.times[state].lastSeen = now
		return
	}
	for _, tr := range lifecycleTransitions {
		from := r.times[tr.from]
		if tr.to != state || from.entered == 0 {
			continue
		}
		start := from.entered
		if tr.fromLastSighting {
			start = from.lastSeen
		}
		t.observe(t.series.transition, r, tr.name, now-start)
	}
	r.times[r.current].left = now
	// (Re-)entering a state starts its time again, as upstream.
	r.times[state] = stateTimes{entered: now, lastSeen: now}
	if terminal[state] || state == stUpgrading {
		for i := range numStates {
			if i == state || (state == stUpgrading && i == r.current) || r.times[i].entered == 0 {
				continue
			}
			st := r.times[i]
			end := st.left
			if end == 0 {
				end = st.lastSeen
			}
			t.observe(t.series.state, r, string(lifecycleStates[i]), end-st.entered)
			r.times[i] = stateTimes{}
		}
	}
	r.current = state
}

func (t *LifecycleTracker) observe(h *prometheus.HistogramVec, r *trackedResource, label string, nanos int64) {
	ns := ""
	if t.byNamespace {
		ns = r.namespace
	}
	h.WithLabelValues(kinds[r.kind], ns, label).Observe(max(time.Duration(nanos), 0).Seconds())
}

// Forget drops a deleted resource (its object or tombstone).
func (t *LifecycleTracker) Forget(obj any) {
	if !t.enabled {
		return
	}
	meta, _, _, ok := resourceOf(obj)
	if !ok {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, ok := t.resources[meta.GetUID()]; !ok { // also when unregistered (nil)
		return
	}
	delete(t.resources, meta.GetUID())
	if len(t.resources) == 0 || (t.peak >= 1024 && len(t.resources) < t.peak/4) {
		t.rebuild()
	}
}

// rebuild copies the map into one sized for what is left, and the
// namespace table likewise, so memory follows the number of resources down
// (a Go map never shrinks; maps.Clone keeps the size too). Amortized: the
// copy happens after at least 3/4 of the peak was deleted.
func (t *LifecycleTracker) rebuild() {
	resources := make(map[types.UID]*trackedResource, len(t.resources))
	t.namespaces = map[string]string{}
	for uid, r := range t.resources {
		r.namespace = t.intern(r.namespace)
		resources[uid] = r
	}
	t.resources, t.peak = resources, len(resources)
}

func (t *LifecycleTracker) intern(ns string) string {
	if s, ok := t.namespaces[ns]; ok {
		return s
	}
	s := strings.Clone(ns)
	t.namespaces[s] = s
	return s
}

// lifecycleGauge is flink_operator_lifecycle_resources, counted from the
// current tracker at scrape time.
type lifecycleGauge struct {
	desc    *prometheus.Desc
	current atomic.Pointer[LifecycleTracker]
}

func (g *lifecycleGauge) Describe(ch chan<- *prometheus.Desc) { ch <- g.desc }

func (g *lifecycleGauge) Collect(ch chan<- prometheus.Metric) {
	t := g.current.Load()
	if t == nil {
		return
	}
	type key struct {
		kind      uint8
		namespace string
	}
	counts := map[key]*[numStates]int{}
	t.mu.Lock()
	for _, r := range t.resources {
		k := key{r.kind, r.namespace}
		c := counts[k]
		if c == nil {
			c = &[numStates]int{}
			counts[k] = c
		}
		c[r.current]++
	}
	t.mu.Unlock()
	// Every state of a namespace with resources of the kind, zeros
	// included, as upstream.
	for k, c := range counts {
		for i, n := range c {
			ch <- prometheus.MustNewConstMetric(g.desc, prometheus.GaugeValue, float64(n), kinds[k.kind], k.namespace, string(lifecycleStates[i]))
		}
	}
}
