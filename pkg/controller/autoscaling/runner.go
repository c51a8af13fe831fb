// Package autoscaling runs the job autoscaler (pkg/autoscaler) in a sync of
// a job resource: it collects the job's metrics from its JobManager, makes
// the decision, records it in the resource's autoscaler ConfigMap
// (pkg/autoscaler/store) before anything applies it, and gives the
// overrides in force, which the job engine overlays on the spec
// (jobengine.State.OverlayParallelism) so that the ordinary spec-change path
// applies them: in place, or as an upgrade with the job's upgradeMode.
//
// The ConfigMap is the write-ahead log of the autoscaler as the status is
// the job engine's: a decision is acted on only once written, and a sync
// after a crash reads it back and finds the same overrides to apply (or
// already applied). The operator's caches hold ConfigMaps without their
// data, so the runner reads the ConfigMap once per job (after a start of
// the operator) and then keeps what it last wrote: it is the only writer
// (a conflict reads it again). The metric history (one collector per job)
// is stored there too, with every state write and at least every third of
// the metrics window, and restored by the next operator's first collector
// of the job.
package autoscaling

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	kubernetes "github.com/flinkops/flink-operator/pkg/clients/kubernetes"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/flinkops/flink-operator/pkg/autoscaler/collect"
	"github.com/flinkops/flink-operator/pkg/autoscaler/decide"
	"github.com/flinkops/flink-operator/pkg/autoscaler/feed"
	"github.com/flinkops/flink-operator/pkg/autoscaler/options"
	"github.com/flinkops/flink-operator/pkg/autoscaler/store"
	"github.com/flinkops/flink-operator/pkg/flink"
	"github.com/flinkops/flink-operator/pkg/metrics"
)

// Runner keeps one metric collector per job across syncs.
type Runner struct {
	Kube kubernetes.Interface
	jobs sync.Map // resource UID → *job
}

type job struct {
	mu sync.Mutex
	// cm is the ConfigMap as last read or written (nil: there is none),
	// once loaded.
	cm        *corev1.ConfigMap
	loaded    bool
	client    clientRef
	collector *collect.Collector
	opts      collect.Options
	// lastReport and reportedAt: a ScalingReport is emitted again only when
	// it changes or after scaling.event.interval (upstream's rule).
	lastReport string
	// lastProblem is the last collection error or decision logged: each
	// is logged when it changes, not at every sync.
	lastProblem string
	// metricsStored is when the metric history was last written.
	metricsStored time.Time
	reportedAt    time.Time
}

// Input is what one run reads of a sync.
type Input struct {
	// Owner is the resource (its UID, name and namespace) and OwnerRef the
	// reference the ConfigMap carries to it.
	Owner    metav1.Object
	OwnerRef metav1.OwnerReference
	// Conf is the job's effective configuration (the job.autoscaler.* keys).
	Conf map[string]string
	// Client reaches the JobManager (nil: it did not answer).
	Client *flink.Client
	JobID  string
	// Running: the job runs its recorded spec (deployed, RUNNING, nothing
	// in flight), so metrics may be collected and a decision made.
	Running    bool
	ResetNonce int64
	Now        time.Time
}

// Output is what the sync does with a run.
type Output struct {
	// Enabled: job.autoscaler.enabled.
	Enabled bool
	// Overrides are the autoscaler's parallelism overrides in force (to
	// overlay); Excluded the vertices where the user's overrides win.
	Overrides map[string]int
	Excluded  []string
	// Report is a ScalingReport event's message to emit ("" none).
	Report string
	// Scaled: this run recorded a rescale.
	Scaled bool
	// Next is when the autoscaler wants to look again (0: no wish): often
	// enough for a metrics window shorter than the reconcile interval to
	// hold samples to decide on.
	Next time.Duration
}

// minSamplesPerWindow is how many collections the sync cadence gives a
// metrics window at least: upstream collects once per reconcile.interval
// only, so a window of a few intervals never has enough samples to decide
// (its docs ask for a window well above the interval); here the job is
// looked at again within a tenth of the window, never more often than
// every minCadence.
const (
	minSamplesPerWindow = 10
	minCadence          = 10 * time.Second
)

// ErrStore is wrapped by errors reading the ConfigMap: what runs cannot be
// known, and the caller keeps what the job runs now.
var ErrStore = errors.New("autoscaler ConfigMap")

// Run makes one evaluation of the job: reads the stored state, collects,
// decides, writes the ConfigMap when the state changed. An error that is
// not ErrStore leaves Output valid (the stored overrides stay in force).
func (r *Runner) Run(ctx context.Context, in Input) (Output, error) {
	log := klog.FromContext(ctx)
	opts, err := options.Parse(in.Conf)
	if err != nil {
		return Output{}, fmt.Errorf("%w: %w", ErrStore, err)
	}
	j := r.jobOf(in.Owner.GetUID())
	j.mu.Lock()
	defer j.mu.Unlock()
	if !opts.Enabled {
		// Upstream clears the state of a job whose autoscaler is off, and
		// its overrides stop applying. Only a ConfigMap this process knows
		// is cleared: reading every job's would cost a GET per job at each
		// start of the operator.
		err := r.clear(ctx, j)
		r.Forget(in.Owner.GetUID())
		return Output{}, err
	}
	if err := r.load(ctx, j, in.Owner); err != nil {
		return Output{}, fmt.Errorf("%w: %w", ErrStore, err)
	}
	stored, err := store.Decode(j.cm)
	if err != nil {
		return Output{}, fmt.Errorf("%w: %w", ErrStore, err)
	}
	out := Output{Enabled: true, Overrides: stored.State.Overrides, Excluded: opts.VertexExcludeIDs}
	if !in.Running || in.Client == nil || in.JobID == "" {
		return out, nil
	}
	out.Next = max(minCadence, opts.MetricsWindow/minSamplesPerWindow)
	j.client.set(in.Client)
	// The collector keeps half a window more than the metrics window: it
	// drops what is older than its window, and evaluate needs a sample at
	// (or before) the window's start to count it as covered; with a sample
	// per sync (reconcile.interval apart) a history of exactly the window
	// would never reach back that far.
	want := collect.Options{Window: opts.MetricsWindow * 3 / 2, BusyTimeAggregator: collect.Aggregator(opts.BusyTimeAggregator)}
	if j.collector == nil || j.opts != want {
		if j.collector, err = collect.New(&j.client, want); err != nil {
			return out, err
		}
		j.opts = want
		// The history an earlier operator stored: kept by the next
		// collection if the job still runs as it did (collect's rules).
		if m, err := store.DecodeMetrics(j.cm); err != nil {
			log.Info("Stored autoscaler metrics dropped", "err", err) // expendable: the window fills again
		} else if len(m.Samples) > 0 {
			if err := j.collector.Restore(m.Graph, m.Samples); err != nil {
				log.V(1).Info("Stored autoscaler metrics not restored", "err", err)
			}
			j.metricsStored = in.Now
		}
	}
	cctx, cancel := context.WithTimeout(ctx, opts.RestClientTimeout)
	_, err = j.collector.Collect(cctx, in.JobID, in.Now)
	cancel()
	if err != nil {
		// Once per distinct cause: a job whose metrics cannot be read
		// is never scaled, and the log should say why.
		if msg := err.Error(); msg != j.lastProblem {
			log.Info("Autoscaler metrics not collected", "err", err)
			j.lastProblem = msg
		}
		return out, nil
	}
	graph, ok := j.collector.Graph()
	if !ok {
		return out, nil
	}
	if v, ok := pending(graph, stored.State.Overrides, opts.VertexExcludeIDs); ok {
		// The last decision is recorded but the job does not run it yet
		// (an upgrade, or Flink's adaptive scheduler still rescaling):
		// metrics of the old parallelism must not decide again.
		log.V(1).Info("Autoscaler waits for the last rescale to take effect", "vertex", v)
		return out, nil
	}
	g := feed.Graph(graph)
	// The last rescale's restart time, once the job runs it (restart.time
	// tracking): in the state the decision starts from, so it is stored
	// with the decision.
	state := decide.RecordRestart(stored.State, g, graph.RunningSince)
	dec, err := decide.Decide(decide.Input{
		Graph: g, Samples: feed.Samples(graph, j.collector.Samples()),
		RunningSince: graph.RunningSince, Now: in.Now, Options: opts, ResetNonce: in.ResetNonce, State: state,
	})
	if err != nil {
		return out, err
	}
	next := dec.State
	if dec.Reset {
		next.Overrides = nil
	}
	changed := !cmp.Equal(next, stored.State, cmpopts.EquateNaNs(), cmpopts.EquateEmpty())
	// The metric history goes with every state write, and on its own once
	// a third of the metrics window has passed since it was last stored:
	// an operator restart then loses at most that much of the window
	// (upstream writes it at every reconcile).
	if changed || in.Now.Sub(j.metricsStored) >= opts.MetricsWindow/3 {
		toStore := store.Stored{State: next}
		if g, samples, ok := j.collector.History(); ok {
			toStore.Metrics = &store.Metrics{Graph: g, Samples: samples}
		}
		// Recorded before anything applies it.
		if err := r.write(ctx, j, in, toStore); err != nil {
			return out, err
		}
		j.metricsStored = in.Now
	}
	vertices := make([]metrics.AutoscalerVertex, len(dec.Vertices))
	for i, v := range dec.Vertices {
		vertices[i] = metrics.AutoscalerVertex{ID: v.ID, Parallelism: v.Current, RecommendedParallelism: v.Recommended,
			TrueProcessingRate: v.TrueProcessingRate, TargetDataRate: v.TargetRate, Utilization: v.Utilization}
	}
	metrics.SetAutoscalerVertices(in.Owner.GetUID(), in.Owner.GetNamespace(), in.OwnerRef.Kind, in.Owner.GetName(), vertices)
	if dec.Reason != j.lastProblem {
		log.Info("Autoscaler evaluated", "decision", dec.Reason, "scale", dec.Scale)
		j.lastProblem = dec.Reason
	}
	log.V(1).Info("Autoscaler evaluated", "decision", dec.Reason, "scale", dec.Scale, "samples", len(j.collector.Samples()), "runningSince", graph.RunningSince)
	out.Overrides, out.Scaled = next.Overrides, dec.Scale
	if dec.ScalingReport != "" && (dec.ScalingReport != j.lastReport || in.Now.Sub(j.reportedAt) >= opts.ScalingEventInterval) {
		out.Report, j.lastReport, j.reportedAt = dec.ScalingReport, dec.ScalingReport, in.Now
	}
	return out, nil
}

// pending returns a vertex whose parallelism is not yet the one the
// recorded overrides give it (excluded vertices aside: the user's override
// may win there).
func pending(g collect.JobGraph, overrides map[string]int, excluded []string) (string, bool) {
	for _, v := range g.Vertices {
		if want, set := overrides[v.ID]; set && want != v.Parallelism && !slices.Contains(excluded, v.ID) {
			return v.ID, true
		}
	}
	return "", false
}

// Forget drops the job's collector and metrics (the resource is gone, or
// its autoscaler off).
func (r *Runner) Forget(uid types.UID) {
	r.jobs.Delete(uid)
	metrics.ForgetAutoscaler(uid)
}

func (r *Runner) jobOf(uid types.UID) *job {
	v, _ := r.jobs.LoadOrStore(uid, &job{})
	return v.(*job)
}

// load reads the job's ConfigMap unless it is known.
func (r *Runner) load(ctx context.Context, j *job, owner metav1.Object) error {
	if j.loaded {
		return nil
	}
	ns, name := owner.GetNamespace(), store.Name(owner.GetName())
	cm, err := r.Kube.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		j.cm = nil
	case err != nil:
		return fmt.Errorf("reading ConfigMap %s/%s: %w", ns, name, err)
	case ownedByOther(cm, owner):
		// Left by an earlier resource of this name (the garbage collector
		// has not removed it yet): none of its state is this job's. It is
		// taken over by the first write.
		cm = cm.DeepCopy()
		delete(cm.Data, store.KeyState)
		delete(cm.Data, store.KeyParallelismOverrides)
		delete(cm.Data, store.KeyMetrics)
		j.cm = cm
	default:
		j.cm = cm
	}
	j.loaded = true
	return nil
}

// ownedByOther: cm has owner references and none is to owner.
func ownedByOther(cm *corev1.ConfigMap, owner metav1.Object) bool {
	refs := cm.GetOwnerReferences()
	return len(refs) > 0 && !slices.ContainsFunc(refs, func(r metav1.OwnerReference) bool { return r.UID == owner.GetUID() })
}

// write creates or updates the ConfigMap with s.
func (r *Runner) write(ctx context.Context, j *job, in Input, s store.Stored) error {
	ns, name := in.Owner.GetNamespace(), store.Name(in.Owner.GetName())
	var old map[string]string
	if j.cm != nil {
		old = j.cm.Data
	}
	data, err := store.Encode(s, old)
	if err != nil {
		return err
	}
	var written *corev1.ConfigMap
	if j.cm == nil {
		cm := &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name,
				Labels:          map[string]string{"app": in.Owner.GetName(), "component": store.LabelComponent},
				OwnerReferences: []metav1.OwnerReference{in.OwnerRef}},
			Data: data,
		}
		written, err = r.Kube.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{})
	} else {
		cm := j.cm.DeepCopy()
		cm.Data = data
		if ownedByOther(cm, in.Owner) {
			cm.OwnerReferences = []metav1.OwnerReference{in.OwnerRef}
		}
		written, err = r.Kube.CoreV1().ConfigMaps(ns).Update(ctx, cm, metav1.UpdateOptions{})
	}
	if err != nil {
		// Someone else wrote it (or it went): read it again next time.
		j.loaded = false
		return fmt.Errorf("recording the autoscaler's state in ConfigMap %s/%s: %w", ns, name, err)
	}
	j.cm = written
	return nil
}

// clear removes the state and the overrides of a job whose autoscaler is
// off (upstream's clearAll); other keys stay.
func (r *Runner) clear(ctx context.Context, j *job) error {
	cm := j.cm
	if cm == nil {
		return nil
	}
	_, state := cm.Data[store.KeyState]
	_, overrides := cm.Data[store.KeyParallelismOverrides]
	_, metrics := cm.Data[store.KeyMetrics]
	if !state && !overrides && !metrics {
		return nil
	}
	cm = cm.DeepCopy()
	delete(cm.Data, store.KeyState)
	delete(cm.Data, store.KeyParallelismOverrides)
	delete(cm.Data, store.KeyMetrics)
	if _, err := r.Kube.CoreV1().ConfigMaps(cm.Namespace).Update(ctx, cm, metav1.UpdateOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("clearing the autoscaler's state in ConfigMap %s/%s: %w", cm.Namespace, cm.Name, err)
	}
	return nil
}

// clientRef lets a job's collector, made once, reach the JobManager
// through the client of the sync at hand.
type clientRef struct {
	mu sync.Mutex
	c  *flink.Client
}

func (r *clientRef) set(c *flink.Client) { r.mu.Lock(); r.c = c; r.mu.Unlock() }
func (r *clientRef) get() *flink.Client  { r.mu.Lock(); defer r.mu.Unlock(); return r.c }

func (r *clientRef) Job(ctx context.Context, jobID string) (*flink.JobDetails, error) {
	return r.get().Job(ctx, jobID)
}

func (r *clientRef) JobGraphFrom(ctx context.Context, d *flink.JobDetails) (*flink.JobGraph, error) {
	return r.get().JobGraphFrom(ctx, d)
}

func (r *clientRef) VertexMetricNames(ctx context.Context, jobID, vertexID string) ([]string, error) {
	return r.get().VertexMetricNames(ctx, jobID, vertexID)
}

func (r *clientRef) VertexMetrics(ctx context.Context, jobID, vertexID string, names []string, aggs ...flink.Aggregation) ([]flink.AggregatedMetric, error) {
	return r.get().VertexMetrics(ctx, jobID, vertexID, names, aggs...)
}
