package metrics

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	clocktesting "k8s.io/utils/clock/testing"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/config"
	"github.com/flinkops/flink-operator/pkg/generated/clientset/versioned/fake"
	flinkinformers "github.com/flinkops/flink-operator/pkg/generated/informers/externalversions"
	"github.com/flinkops/flink-operator/pkg/metrics/metricstest"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// lifecycleEnv is a tracker on its own registry with a fake clock.
type lifecycleEnv struct {
	tracker *LifecycleTracker
	reg     *prometheus.Registry
	clock   *clocktesting.FakePassiveClock
}

func newLifecycleEnv(t *testing.T, cfg config.Config) *lifecycleEnv {
	t.Helper()
	series := newLifecycleMetrics()
	reg := prometheus.NewRegistry()
	reg.MustRegister(series.collectors()...)
	clk := clocktesting.NewFakePassiveClock(t0)
	tr, err := newLifecycleTracker(cfg, clk, series)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tr.Unregister)
	return &lifecycleEnv{tracker: tr, reg: reg, clock: clk}
}

// samplesOf scrapes a test's registry (metricstest.Samples) or fails the test.
func samplesOf(t *testing.T, g prometheus.Gatherer) map[string]float64 {
	t.Helper()
	out, err := metricstest.Samples(g)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func deployment(uid, ns string, state v1beta1.ResourceLifecycleState) *v1beta1.FlinkDeployment {
	return &v1beta1.FlinkDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: "d-" + uid, Namespace: ns, UID: types.UID(uid),
			CreationTimestamp: metav1.NewTime(t0.Add(-10 * time.Second))},
		Status: v1beta1.FlinkDeploymentStatus{LifecycleState: state},
	}
}

func sessionJob(uid, ns string, state v1beta1.ResourceLifecycleState) *v1beta1.FlinkSessionJob {
	return &v1beta1.FlinkSessionJob{
		ObjectMeta: metav1.ObjectMeta{Name: "j-" + uid, Namespace: ns, UID: types.UID(uid),
			CreationTimestamp: metav1.NewTime(t0.Add(-10 * time.Second))},
		Status: v1beta1.FlinkSessionJobStatus{LifecycleState: state},
	}
}

// step: at (offset from t0) the informer shows the resource in state.
type step struct {
	at    time.Duration
	state v1beta1.ResourceLifecycleState
}

// histograms returns "state/STABLE" or "transition/Upgrade" → {count, sum}
// of every lifecycle histogram series of kind and namespace ns.
func histograms(samples map[string]float64, kind, ns string) map[string][2]float64 {
	out := map[string][2]float64{}
	for _, h := range []struct{ name, label string }{
		{"flink_operator_lifecycle_state_duration_seconds", "state"},
		{"flink_operator_lifecycle_transition_duration_seconds", "transition"},
	} {
		prefix := fmt.Sprintf(`%s_count{kind="%s",namespace="%s",%s="`, h.name, kind, ns, h.label)
		for series, count := range samples {
			if !strings.HasPrefix(series, prefix) {
				continue
			}
			value := strings.TrimSuffix(strings.TrimPrefix(series, prefix), `"}`)
			sum := samples[strings.Replace(series, "_count{", "_sum{", 1)]
			out[h.label+"/"+value] = [2]float64{count, sum}
		}
	}
	return out
}

func TestLifecycleTrackerObservesStateAndTransitionTimes(t *testing.T) {
	const (
		created = v1beta1.LifecycleCreated
		upg     = v1beta1.LifecycleUpgrading
		dep     = v1beta1.LifecycleDeployed
		stable  = v1beta1.LifecycleStable
		susp    = v1beta1.LifecycleSuspended
		rb      = v1beta1.LifecycleRollingBack
		rolled  = v1beta1.LifecycleRolledBack
		failed  = v1beta1.LifecycleFailed
	)
	s := time.Second
	for _, tc := range []struct {
		name  string
		steps []step
		want  map[string][2]float64 // {count, sum seconds}
	}{{
		name: "first deployment: CREATED counts from creationTimestamp, Stabilization from entering DEPLOYED",
		// No status yet ("") is CREATED, created 10 s before t0.
		steps: []step{{0, ""}, {3 * s, created}, {5 * s, dep}, {20 * s, dep}, {35 * s, stable}},
		want: map[string][2]float64{
			"transition/Stabilization": {1, 30},
			"state/CREATED":            {1, 15},
			"state/DEPLOYED":           {1, 30},
		},
	}, {
		name: "upgrade: Suspend and Upgrade from the last sighting of STABLE, Submission from the last of UPGRADING",
		steps: []step{
			{0, stable}, {100 * s, stable}, // the spec change is a sighting
			{110 * s, upg}, {112 * s, upg}, {115 * s, dep}, {175 * s, stable},
		},
		want: map[string][2]float64{
			"transition/Suspend":       {1, 10},
			"transition/Submission":    {1, 3},
			"transition/Upgrade":       {1, 75},
			"transition/Stabilization": {1, 60},
			"state/UPGRADING":          {1, 5},
			"state/DEPLOYED":           {1, 60},
		},
	}, {
		name: "suspend and resume: Resume from the last sighting of SUSPENDED",
		steps: []step{
			{0, stable}, {200 * s, stable}, {230 * s, susp},
			{300 * s, susp}, {305 * s, upg}, {306 * s, dep}, {336 * s, stable},
		},
		want: map[string][2]float64{
			"transition/Suspend":       {1, 30},
			"transition/Submission":    {1, 1},
			"transition/Resume":        {1, 36},
			"transition/Stabilization": {1, 30},
			// STABLE counts from the first sighting (an operator restart
			// forgets the past) to leaving it.
			"state/STABLE":    {1, 230},
			"state/SUSPENDED": {1, 75},
			"state/UPGRADING": {1, 1},
			"state/DEPLOYED":  {1, 30},
		},
	}, {
		name:  "rollback: Rollback from entering DEPLOYED, Submission from the last sighting of ROLLING_BACK",
		steps: []step{{0, dep}, {60 * s, rb}, {62 * s, rb}, {70 * s, rolled}},
		want: map[string][2]float64{
			"transition/Rollback":   {1, 70},
			"transition/Submission": {1, 8},
			"state/DEPLOYED":        {1, 60},
			"state/ROLLING_BACK":    {1, 10},
		},
	}, {
		name: "a second upgrade before stabilizing: Suspend from DEPLOYED and, as upstream, from the kept STABLE",
		steps: []step{
			{0, stable}, {10 * s, stable}, {20 * s, upg}, {25 * s, dep}, {40 * s, dep}, {50 * s, upg}, {52 * s, dep}, {82 * s, stable},
		},
		want: map[string][2]float64{
			"transition/Suspend":       {3, 10 + 10 + 40},
			"transition/Submission":    {2, 5 + 2},
			"transition/Stabilization": {1, 30},
			"transition/Upgrade":       {0, 0}, // STABLE was cleared entering UPGRADING from DEPLOYED
			"state/STABLE":             {1, 20},
			"state/UPGRADING":          {1, 2},
			"state/DEPLOYED":           {1, 30},
		},
	}, {
		name:  "a stable job fails: STABLE's time ends at the first sighting of FAILED",
		steps: []step{{0, stable}, {3600 * s, failed}},
		want:  map[string][2]float64{"state/STABLE": {1, 3600}},
	}, {
		name:  "no change: nothing observed",
		steps: []step{{0, stable}, {10 * s, stable}, {20 * s, stable}},
		want:  map[string][2]float64{},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			for _, kind := range []string{KindFlinkDeployment, KindFlinkSessionJob} {
				env := newLifecycleEnv(t, nil)
				for _, st := range tc.steps {
					env.clock.SetTime(t0.Add(st.at))
					if kind == KindFlinkDeployment {
						env.tracker.Observe(deployment("u1", "team-a", st.state))
					} else {
						env.tracker.Observe(sessionJob("u1", "team-a", st.state))
					}
				}
				got := histograms(samplesOf(t, env.reg), kind, "team-a")
				for k, w := range tc.want {
					if w[0] == 0 {
						if _, ok := got[k]; ok {
							t.Errorf("%s: %s observed %v, want nothing", kind, k, got[k])
						}
						delete(tc.want, k)
					}
				}
				if fmt.Sprint(got) != fmt.Sprint(tc.want) {
					t.Errorf("%s: {count, sum} by series:\n got %v\nwant %v", kind, got, tc.want)
				}
			}
		})
	}
}

func TestLifecycleOptionsOffExportNothing(t *testing.T) {
	for _, cfg := range []config.Config{
		{config.KeyResourceLifecycleMetricsEnabled: "false"},
		{config.KeyResourceMetricsEnabled: "false"},
	} {
		env := newLifecycleEnv(t, cfg)
		if env.tracker.Enabled() || env.tracker.Handler() != nil {
			t.Errorf("%v: tracker enabled", cfg)
		}
		for i, st := range []v1beta1.ResourceLifecycleState{v1beta1.LifecycleDeployed, v1beta1.LifecycleStable, v1beta1.LifecycleSuspended} {
			env.clock.SetTime(t0.Add(time.Duration(i) * time.Minute))
			env.tracker.Observe(deployment("u1", "team-a", st))
		}
		for series := range samplesOf(t, env.reg) {
			if strings.HasPrefix(series, "flink_operator_lifecycle_") {
				t.Errorf("%v: %s exported", cfg, series)
			}
		}
		if n := env.tracker.Len(); n != 0 {
			t.Errorf("%v: %d resources tracked", cfg, n)
		}
	}
}

func TestLifecycleNamespaceLabel(t *testing.T) {
	for _, tc := range []struct {
		option, wantNS string
	}{{"true", "team-a"}, {"false", ""}} {
		env := newLifecycleEnv(t, config.Config{config.KeyResourceLifecycleNamespaceHistogramsEnabled: tc.option})
		env.tracker.Observe(deployment("u1", "team-a", v1beta1.LifecycleDeployed))
		env.clock.SetTime(t0.Add(time.Minute))
		env.tracker.Observe(deployment("u1", "team-a", v1beta1.LifecycleStable))
		samples := samplesOf(t, env.reg)
		for _, series := range []string{
			`flink_operator_lifecycle_transition_duration_seconds_count{kind="FlinkDeployment",namespace="` + tc.wantNS + `",transition="Stabilization"}`,
			`flink_operator_lifecycle_state_duration_seconds_count{kind="FlinkDeployment",namespace="` + tc.wantNS + `",state="DEPLOYED"}`,
			// The resource gauge is per namespace either way, as upstream.
			`flink_operator_lifecycle_resources{kind="FlinkDeployment",namespace="team-a",state="STABLE"}`,
		} {
			if samples[series] != 1 {
				t.Errorf("namespace histograms %s: %s = %v, want 1", tc.option, series, samples[series])
			}
		}
		n := 0
		for series := range samples {
			if strings.Contains(series, "_duration_seconds") {
				n++
				if !strings.Contains(series, `namespace="`+tc.wantNS+`"`) {
					t.Errorf("namespace histograms %s: %s", tc.option, series)
				}
			}
		}
		if n == 0 {
			t.Errorf("namespace histograms %s: no histogram series", tc.option)
		}
	}
}

func TestLifecycleResourceGaugeAndCanaries(t *testing.T) {
	env := newLifecycleEnv(t, nil)
	env.tracker.Observe(deployment("d1", "team-a", v1beta1.LifecycleStable))
	env.tracker.Observe(deployment("d2", "team-a", v1beta1.LifecycleDeployed))
	env.tracker.Observe(sessionJob("j1", "team-b", v1beta1.LifecycleStable))
	c := deployment("c1", "team-a", v1beta1.LifecycleStable)
	c.Labels = map[string]string{"flink.apache.org/canary": "TRUE"}
	env.tracker.Observe(c)
	samples := samplesOf(t, env.reg)
	gauge := func(kind, ns, state string) string {
		return fmt.Sprintf(`flink_operator_lifecycle_resources{kind="%s",namespace="%s",state="%s"}`, kind, ns, state)
	}
	for series, want := range map[string]float64{
		gauge("FlinkDeployment", "team-a", "STABLE"):   1, // the canary is not counted
		gauge("FlinkDeployment", "team-a", "DEPLOYED"): 1,
		gauge("FlinkDeployment", "team-a", "FAILED"):   0,
		gauge("FlinkSessionJob", "team-b", "STABLE"):   1,
	} {
		if got, ok := samples[series]; !ok || got != want {
			t.Errorf("%s = %v (present %v), want %v", series, got, ok, want)
		}
	}
	for _, absent := range []string{gauge("FlinkSessionJob", "team-a", "STABLE"), gauge("FlinkDeployment", "team-b", "STABLE")} {
		if _, ok := samples[absent]; ok {
			t.Errorf("%s exported", absent)
		}
	}
	env.tracker.Forget(cache.DeletedFinalStateUnknown{Key: "team-b/j-j1", Obj: sessionJob("j1", "team-b", v1beta1.LifecycleStable)})
	if _, ok := samplesOf(t, env.reg)[gauge("FlinkSessionJob", "team-b", "STABLE")]; ok {
		t.Error("a deleted resource's namespace is still counted")
	}
	env.tracker.Unregister()
	for series := range samplesOf(t, env.reg) {
		if strings.HasPrefix(series, "flink_operator_lifecycle_resources") {
			t.Errorf("%s exported after Unregister", series)
		}
	}
}

// TestLifecycleTrackerMemory measures what a tracked resource costs and
// that deleting resources gives it back.
func TestLifecycleTrackerMemory(t *testing.T) {
	const n = 20000
	objs := make([]*v1beta1.FlinkDeployment, n)
	for i := range objs {
		objs[i] = deployment(fmt.Sprintf("0e6b1d6c-5f0a-4c1b-9d3e-%012d", i), fmt.Sprintf("ns-%d", i%50), v1beta1.LifecycleStable)
	}
	env := newLifecycleEnv(t, nil)
	heap := func() uint64 {
		runtime.GC()
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	base := heap()
	for _, o := range objs {
		env.tracker.Observe(o)
	}
	full := heap()
	perResource := float64(int64(full)-int64(base)) / n
	t.Logf("%d resources tracked: %.0f bytes each", n, perResource)
	if perResource > 512 {
		t.Errorf("%.0f bytes per tracked resource, want at most 512", perResource)
	}
	for i, o := range objs {
		if i%2 == 0 {
			env.tracker.Forget(o)
		} else {
			env.tracker.Forget(cache.DeletedFinalStateUnknown{Key: o.Namespace + "/" + o.Name, Obj: o})
		}
	}
	if got := env.tracker.Len(); got != 0 {
		t.Fatalf("%d resources tracked after deleting all", got)
	}
	after := heap()
	t.Logf("after deleting all: %d bytes above the start (%d at the peak)", int64(after)-int64(base), full-base)
	if grown := int64(after) - int64(base); grown > int64(full-base)/10 {
		t.Errorf("%d bytes still held after deleting every resource (peak %d)", grown, full-base)
	}
	runtime.KeepAlive(objs)
}

// TestLifecycleTrackerFollowsInformers runs the handlers on a real shared
// informer over a fake clientset: add, status updates, delete.
func TestLifecycleTrackerFollowsInformers(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	client := fake.NewSimpleClientset()
	factory := flinkinformers.NewSharedInformerFactory(client, 0)
	deployments := factory.Flink().V1beta1().FlinkDeployments().Informer()
	sessionJobs := factory.Flink().V1beta1().FlinkSessionJobs().Informer()
	env := newLifecycleEnv(t, nil)
	if err := env.tracker.AddEventHandlers(deployments, sessionJobs); err != nil {
		t.Fatal(err)
	}
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())

	d := deployment("u1", "team-a", v1beta1.LifecycleDeployed)
	if _, err := client.FlinkV1beta1().FlinkDeployments("team-a").Create(ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return env.tracker.Len() == 1 })
	env.clock.SetTime(t0.Add(45 * time.Second))
	d.Status.LifecycleState = v1beta1.LifecycleStable
	if _, err := client.FlinkV1beta1().FlinkDeployments("team-a").UpdateStatus(ctx, d, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	series := `flink_operator_lifecycle_transition_duration_seconds_sum{kind="FlinkDeployment",namespace="team-a",transition="Stabilization"}`
	waitFor(t, func() bool { return samplesOf(t, env.reg)[series] == 45 })
	if err := client.FlinkV1beta1().FlinkDeployments("team-a").Delete(ctx, d.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return env.tracker.Len() == 0 })
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatal("condition not met within 10 s")
}

// TestLifecycleTrackerOnRegistry: NewLifecycleTracker feeds the operator's
// Registry, and Unregister stops its gauge.
func TestLifecycleTrackerOnRegistry(t *testing.T) {
	tr, err := NewLifecycleTracker(nil, clocktesting.NewFakePassiveClock(t0))
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Unregister()
	tr.Observe(deployment("u1", "registry-test", v1beta1.LifecycleStable))
	series := `flink_operator_lifecycle_resources{kind="FlinkDeployment",namespace="registry-test",state="STABLE"}`
	if got := scrape(t)[series]; got != 1 {
		t.Fatalf("%s = %v, want 1", series, got)
	}
	tr.Unregister()
	if _, ok := scrape(t)[series]; ok {
		t.Error("the gauge is still exposed after Unregister")
	}
}
