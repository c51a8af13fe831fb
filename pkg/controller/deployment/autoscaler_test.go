package deployment

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/autoscaler/decide"
	"github.com/flinkops/flink-operator/pkg/autoscaler/store"
	"github.com/flinkops/flink-operator/pkg/config"
	"github.com/flinkops/flink-operator/pkg/controller/autoscaling"
	"github.com/flinkops/flink-operator/pkg/controller/controllertest"
	"github.com/flinkops/flink-operator/pkg/flink/fakejm"
	"github.com/flinkops/flink-operator/pkg/metrics"
	"github.com/flinkops/flink-operator/pkg/reasons"
)

// The job autoscaler on a FlinkDeployment: metrics collected from the
// JobManager at each steady sync, a decision recorded in the autoscaler
// ConfigMap before it is applied, the overrides overlaid on the spec and
// applied by the ordinary path (here in place: adaptive scheduler).

// autoscaled is an application on the adaptive scheduler with the
// autoscaler on and a short metrics window.
func (f *fixture) autoscaled(name string) *v1beta1.FlinkDeployment {
	d := f.application(name, v1beta1.UpgradeModeSavepoint)
	setConf(&d.Spec, "jobmanager.scheduler", "adaptive",
		"job.autoscaler.enabled", "true",
		"job.autoscaler.metrics.window", "2 min",
		"job.autoscaler.stabilization.interval", "0 s",
		"job.autoscaler.utilization.max", "0.8",
		"job.autoscaler.utilization.min", "0.5")
	return d
}

// overloadSink makes the sink busy 95 % of the time at 1000 records/s,
// the source idle: the sink needs a parallelism of 2 at utilization 0.7.
func overloadSink(t *testing.T, jm *jmProcess) {
	t.Helper()
	for vertex, l := range map[string]fakejm.VertexLoad{
		srcVertex:  {BusyTimeMsPerSecond: 50, RecordsInPerSecond: 1000, RecordsOutPerSecond: 1000, PendingRecords: -1},
		sinkVertex: {BusyTimeMsPerSecond: 950, RecordsInPerSecond: 1000, PendingRecords: -1},
	} {
		if err := jm.SetVertexLoad(jm.jobID, vertex, l); err != nil {
			t.Fatal(err)
		}
	}
}

func (f *fixture) autoscalerState(name string) (*corev1.ConfigMap, store.Stored) {
	f.T.Helper()
	cm, err := f.Kube.CoreV1().ConfigMaps(ns).Get(f.Ctx, store.Name(name), metav1.GetOptions{})
	if err != nil {
		return nil, store.Stored{}
	}
	s, err := store.Decode(cm)
	if err != nil {
		f.T.Fatal(err)
	}
	return cm, s
}

func TestAutoscalerScalesBusyVertexInPlace(t *testing.T) {
	f := newFixture(t)
	before := f.Deploy(f.autoscaled("job"))
	jm := f.jm("job")
	overloadSink(t, jm)
	// A 2 min window gets a collection every 12 s (a tenth of it), well
	// within the reconcile interval.
	if d, err := f.Sync("job"); err != nil || d != 12*time.Second {
		t.Fatalf("steady autoscaled job looked at again in %v (%v), want 12s", d, err)
	}

	var scaled *v1beta1.FlinkDeployment
	var events []string
	for range 20 {
		f.Step("job")
		f.Clock.Step(15 * time.Second)
		events = append(events, f.Events()...)
		if d := f.Get("job"); strings.Contains(d.Status.ReconciliationStatus.LastReconciledSpec, sinkVertex+":2") {
			scaled = d
			break
		}
	}
	if scaled == nil {
		_, s := f.autoscalerState("job")
		t.Fatalf("the sink was not scaled within 20 syncs: %s; autoscaler state %+v; events %v", statusString(f.Get("job")), s.State, events)
	}
	cm, s := f.autoscalerState("job")
	if cm == nil || s.State.Overrides[sinkVertex] != 2 || len(s.State.Scalings) != 1 {
		t.Fatalf("the decision is not recorded in the autoscaler ConfigMap: %+v", s.State)
	}
	if cm.Labels["app"] != "job" || cm.Labels["component"] != "autoscaler" || len(cm.OwnerReferences) != 1 || cm.OwnerReferences[0].UID != before.UID {
		t.Errorf("ConfigMap %s: labels %v, owners %v; want upstream's labels and the FlinkDeployment as owner", cm.Name, cm.Labels, cm.OwnerReferences)
	}
	if got := cm.Data[store.KeyParallelismOverrides]; !strings.Contains(got, sinkVertex+":2") {
		t.Errorf("parallelismOverrides = %q", got)
	}
	// In place: the same job, one PUT, no stop-with-savepoint.
	if scaled.Status.JobStatus.JobID != before.Status.JobStatus.JobID || f.jm("job") != jm || f.stops() != 0 {
		t.Errorf("the job was redeployed: %s", statusString(scaled))
	}
	rr, err := jm.ResourceRequirements(jm.jobID)
	if err != nil {
		t.Fatal(err)
	}
	if got := rr[sinkVertex].Parallelism.UpperBound; got != 2 {
		t.Errorf("sink upper bound %d, want 2", got)
	}
	if n := countEvents(events, "Normal "+reasons.ReasonScalingReport+" Scaling execution enabled"); n != 1 {
		t.Errorf("%d ScalingReport events: %v", n, events)
	}
	if n := countEvents(events, "Normal "+reasons.ReasonScaling+" "); n != 1 {
		t.Errorf("%d Scaling events: %v", n, events)
	}
	// As upstream (its test_autoscaler.sh waits for both): SpecChanged, then Scaling.
	if n := countEvents(events, "Normal "+reasons.ReasonSpecChanged+" Spec changed, scaling in place"); n != 1 {
		t.Errorf("%d SpecChanged events: %v", n, events)
	}
	// The vertex figures are exported (flink_operator_autoscaler_*).
	if got := autoscalerMetric(t, "flink_operator_autoscaler_recommended_parallelism", string(before.UID), sinkVertex); got != 2 {
		t.Errorf("recommended parallelism metric of the sink = %v, want 2", got)
	}
	// The user's spec is never written: the overrides live in the
	// ConfigMap and in lastReconciledSpec only.
	if got := f.Get("job"); strings.Contains(string(got.Spec.FlinkConfiguration.Raw), config.FlinkParallelismOverrides) {
		t.Errorf("the spec was written: %s", got.Spec.FlinkConfiguration.Raw)
	}
	// Steady afterwards: no second decision while Flink has not rescaled
	// (the adaptive scheduler takes its time), nor once it has and the
	// sink, now two subtasks, is busy 50 % of the time.
	for range 5 {
		f.Step("job")
	}
	if err := jm.SetVertexParallelism(jm.jobID, sinkVertex, 2); err != nil {
		t.Fatal(err)
	}
	if err := jm.SetVertexLoad(jm.jobID, sinkVertex, fakejm.VertexLoad{BusyTimeMsPerSecond: 500, RecordsInPerSecond: 1000, PendingRecords: -1}); err != nil {
		t.Fatal(err)
	}
	for range 20 {
		f.Step("job")
		f.Clock.Step(15 * time.Second)
	}
	if _, s := f.autoscalerState("job"); len(s.State.Scalings) != 1 {
		t.Errorf("%d scalings recorded after the rescale took effect, want 1: %+v", len(s.State.Scalings), s.State.Scalings)
	}
	if n := len(jm.RequestsTo(fakejm.RouteResourceRequirementsUpdate)); n != 1 {
		t.Errorf("%d resource-requirements PUTs, want 1", n)
	}
	if d := f.Get("job"); d.Status.JobStatus.JobID != before.Status.JobStatus.JobID || d.Status.ReconciliationStatus.State != v1beta1.ReconciliationDeployed {
		t.Errorf("after the rescale: %s", statusString(d))
	}
}

// A decision recorded in the ConfigMap whose application a crash cut off
// is applied by the next operator, once: the ConfigMap is the autoscaler's
// write-ahead log. The crash is at the fault point right after the write
// (autoscaling.FaultDecisionRecorded), where the faultinject build's
// exit-after-autoscaler-decision kills the operator in e2e.
func TestAutoscalerDecisionRecordedBeforeCrashAppliedOnce(t *testing.T) {
	f := newFixture(t)
	d := f.Deploy(f.autoscaled("job"))
	jm := f.jm("job")
	overloadSink(t, jm)
	crashes, putsAtCrash := 0, -1
	var recordedAtCrash store.Stored
	f.Fault = func(_, point string) {
		if point == autoscaling.FaultDecisionRecorded && crashes == 0 {
			crashes++
			putsAtCrash = len(jm.RequestsTo(fakejm.RouteResourceRequirementsUpdate))
			_, recordedAtCrash = f.autoscalerState("job")
			panic(controllertest.Crash{})
		}
	}
	var got *v1beta1.FlinkDeployment
	for range 30 {
		f.StepCrashing("job")
		f.Clock.Step(15 * time.Second)
		if g := f.Get("job"); strings.Contains(g.Status.ReconciliationStatus.LastReconciledSpec, sinkVertex+":2") {
			got = g
			break
		}
	}
	if crashes != 1 {
		t.Fatalf("the fault point after the decision was reached %d times, want 1: %s", crashes, statusString(f.Get("job")))
	}
	if putsAtCrash != 0 || recordedAtCrash.State.Overrides[sinkVertex] != 2 {
		t.Fatalf("at the crash: %d resource-requirements PUTs (want 0: not applied yet), recorded overrides %v (want the sink at 2)",
			putsAtCrash, recordedAtCrash.State.Overrides)
	}
	if got == nil || got.Status.JobStatus.JobID != d.Status.JobStatus.JobID {
		t.Fatalf("the recorded decision was not applied in place by the next operator: %s", statusString(f.Get("job")))
	}
	for range 5 {
		f.Step("job")
		f.Clock.Step(15 * time.Second)
	}
	if n := len(jm.RequestsTo(fakejm.RouteResourceRequirementsUpdate)); n != 1 {
		t.Errorf("%d resource-requirements PUTs, want exactly 1", n)
	}
	if _, s := f.autoscalerState("job"); len(s.State.Scalings) != 1 {
		t.Errorf("%d scalings recorded, want the one decision", len(s.State.Scalings))
	}
}

// Turned off, the autoscaler's overrides stop applying (upstream clears its
// state): the job goes back to the parallelism its spec says.
func TestAutoscalerDisabledDropsOverrides(t *testing.T) {
	f := newFixture(t)
	f.Deploy(f.autoscaled("job"))
	overloadSink(t, f.jm("job"))
	f.Until("job", 30, "scaled by the autoscaler", func(d *v1beta1.FlinkDeployment) bool {
		f.Clock.Step(15 * time.Second)
		return strings.Contains(d.Status.ReconciliationStatus.LastReconciledSpec, sinkVertex+":2")
	})
	f.edit("job", func(spec *v1beta1.FlinkDeploymentSpec) { setConf(spec, "job.autoscaler.enabled", "false") })
	got := f.Until("job", 10, "overrides gone", func(d *v1beta1.FlinkDeployment) bool {
		return d.Status.ReconciliationStatus.State == v1beta1.ReconciliationDeployed &&
			!strings.Contains(d.Status.ReconciliationStatus.LastReconciledSpec, config.FlinkParallelismOverrides) && running(d)
	})
	if cm, s := f.autoscalerState("job"); cm == nil || len(s.State.Overrides) != 0 || cm.Data[store.KeyState] != "" {
		t.Errorf("state not cleared: %+v", cm)
	}
	_ = got
}

// autoscalerMetric reads one vertex's series of the operator's registry
// (the resource is identified by its name "job" and namespace; uid only
// names the test's resource in messages).
func autoscalerMetric(t *testing.T, family, uid, vertex string) float64 {
	t.Helper()
	families, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != family {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["namespace"] == ns && labels["name"] == "job" && labels["kind"] == "FlinkDeployment" && labels["vertex"] == vertex {
				return m.GetGauge().GetValue()
			}
		}
	}
	t.Fatalf("no %s series for vertex %s of %s", family, vertex, uid)
	return 0
}

// The metric history is in the ConfigMap: a new operator restores it and
// decides without waiting for a whole metrics window again.
func TestAutoscalerHistorySurvivesRestart(t *testing.T) {
	f := newFixture(t)
	f.Deploy(f.autoscaled("job"))
	overloadSink(t, f.jm("job"))
	step := func() {
		f.Step("job")
		f.Clock.Step(15 * time.Second)
	}
	// Two of the four samples a decision needs here (TestAutoscalerScalesBusyVertexInPlace).
	step()
	step()
	if cm, _ := f.autoscalerState("job"); cm == nil || cm.Data[store.KeyMetrics] == "" {
		t.Fatalf("no metric history stored: %+v", cm)
	}
	f.Restart()
	for n := 1; n <= 3; n++ {
		step()
		if d := f.Get("job"); strings.Contains(d.Status.ReconciliationStatus.LastReconciledSpec, sinkVertex+":2") {
			t.Logf("scaled %d syncs after the restart", n)
			return
		}
	}
	t.Fatalf("not scaled within 3 syncs of the restart: the stored history was not used (%s)", statusString(f.Get("job")))
}

// An autoscaler ConfigMap an earlier FlinkDeployment of the same name left
// (its owner reference names the old UID; the garbage collector has not
// removed it yet) gives the new one nothing: its overrides never apply.
func TestAutoscalerIgnoresConfigMapOfEarlierResource(t *testing.T) {
	f := newFixture(t)
	data, err := store.Encode(store.Stored{State: decide.State{Overrides: map[string]int{srcVertex: 1, sinkVertex: 7}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	stale := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: store.Name("job"),
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "flink.apache.org/v1beta1", Kind: "FlinkDeployment", Name: "job", UID: "uid-of-an-earlier-job"}}},
		Data: data}
	if _, err := f.Kube.CoreV1().ConfigMaps(ns).Create(f.Ctx, stale, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	d := f.Deploy(f.autoscaled("job"))
	for range 3 {
		f.Step("job")
	}
	if got := f.Get("job"); strings.Contains(got.Status.ReconciliationStatus.LastReconciledSpec, config.FlinkParallelismOverrides) {
		t.Errorf("the earlier resource's overrides were applied: %s", got.Status.ReconciliationStatus.LastReconciledSpec)
	}
	overloadSink(t, f.jm("job"))
	for range 10 {
		f.Step("job")
		f.Clock.Step(15 * time.Second)
	}
	cm, s := f.autoscalerState("job")
	if cm == nil || len(cm.OwnerReferences) != 1 || cm.OwnerReferences[0].UID != d.UID || s.State.Overrides[sinkVertex] == 7 {
		t.Errorf("after the first decision: owners %v, overrides %v; want the ConfigMap taken over by the new resource", cm.OwnerReferences, s.State.Overrides)
	}
}
