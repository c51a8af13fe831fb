package decide

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/flinkops/flink-operator/pkg/autoscaler/evaluate"
	"github.com/flinkops/flink-operator/pkg/autoscaler/options"
)

var t0 = time.Date(2026, 3, 2, 12, 0, 0, 0, time.UTC) // a Monday

// vertex describes a vertex of a test job at steady state: parallelism,
// records per second one subtask handles when fully busy, records per second
// it takes in (at most its capacity: a vertex held back takes less than
// arrives), and for a source its pending records at `now` and their growth
// per second (arrival = in + growth).
type vertex struct {
	id          string
	p, maxP     int
	perTask     float64
	in          float64
	lag, growth float64
	hash        bool
	partition   int
	input       string
}

// job builds the graph and a sample per minute from the (re)start at t0 to
// now. Busy time follows from in / capacity (capped at 1: back pressure);
// noise, when non-zero, alternates ±noise on every rate.
func job(now time.Time, noise float64, vs ...vertex) (evaluate.Graph, []evaluate.Sample) {
	var g evaluate.Graph
	for _, v := range vs {
		gv := evaluate.Vertex{ID: v.id, Parallelism: v.p, MaxParallelism: v.maxP, SourcePartitions: v.partition}
		if gv.MaxParallelism == 0 {
			gv.MaxParallelism = 720
		}
		if v.input != "" {
			gv.Inputs = []evaluate.Edge{{From: v.input, Hash: v.hash}}
		}
		g = append(g, gv)
	}
	var samples []evaluate.Sample
	for n, at := 0, t0; !at.After(now); n, at = n+1, at.Add(time.Minute) {
		f := 1 + noise
		if n%2 == 1 {
			f = 1 - noise
		}
		s := evaluate.Sample{Time: at, Vertices: map[string]evaluate.VertexSample{},
			Job: evaluate.JobSample{GCPressure: math.NaN(), HeapMaxUsageRatio: math.NaN()}}
		for _, v := range vs {
			busy := math.Min(1, v.in/(float64(v.p)*v.perTask))
			lag := math.NaN()
			if v.input == "" {
				lag = math.Max(0, v.lag+v.growth*at.Sub(now).Seconds())
			}
			vs := evaluate.VertexSample{BusyMsPerSecond: 1000 * busy, RecordsInPerSecond: v.in * f,
				RecordsOutPerSecond: v.in * f, PendingRecords: lag}
			if v.input == "" && v.growth > 0 {
				// A source whose backlog grows while it is not busy is held
				// back by its downstream: back-pressured the rest of the time.
				vs.BackPressuredMsPerSecond = 1000 * (1 - busy)
			}
			s.Vertices[v.id] = vs
		}
		samples = append(samples, s)
	}
	return g, samples
}

// overloadedSink: 1100/s arrive, the sink's 4 subtasks take 1000/s, 100/s
// pile up at the source (150000 pending after 25 min). The sink needs
// 1100/0.7 + 1100·5/30 (restart) + 150000/1800 (backlog) = 1838/s:
// 4 · 1.838 → 8 subtasks. The source (capacity 4000/s) would go down, but
// waits for scale-down.interval.
var overloadedSink = []vertex{
	{id: "src", p: 2, perTask: 2000, in: 1000, lag: 150000, growth: 100},
	{id: "sink", p: 4, perTask: 250, in: 1000, input: "src"},
}

func enabled(change func(o *options.Options)) options.Options {
	o := options.Defaults()
	o.Enabled = true
	if change != nil {
		change(&o)
	}
	return o
}

var ready = t0.Add(25 * time.Minute) // past stabilization (5 min) + window (15 min)

func TestDecide(t *testing.T) {
	tests := []struct {
		name    string
		o       options.Options
		now     time.Time
		state   State
		nonce   int64
		noise   float64
		vs      []vertex
		scale   bool
		want    map[string]int // overrides when scale
		reason  string         // substring of the reason
		reports map[string]string
	}{
		{
			name: "scale-up under back pressure sizes the bottleneck for the target utilization",
			o:    enabled(nil), now: ready,
			vs:    overloadedSink,
			scale: true, want: map[string]int{"src": 2, "sink": 8}, reason: "sink 4→8",
		},
		{
			name: "stabilizing after a start: no decision",
			o:    enabled(nil), now: t0.Add(3 * time.Minute),
			vs:     []vertex{{id: "src", p: 1, perTask: 100, in: 1000}},
			reason: "stabilizing",
		},
		{
			name: "metrics window not full yet: no decision",
			o:    enabled(nil), now: t0.Add(12 * time.Minute),
			vs:     []vertex{{id: "src", p: 1, perTask: 100, in: 1000}},
			reason: "metrics window not full",
		},
		{
			name: "within the utilization band: no change",
			o:    enabled(nil), now: ready,
			vs:     []vertex{{id: "src", p: 4, perTask: 500, in: 1200}}, // utilization 0.6
			reason: "no vertex needs",
		},
		{
			name: "scale-up max factor caps one step",
			o:    enabled(func(o *options.Options) { o.ScaleUpMaxFactor = 0.5 }), now: ready,
			vs:    overloadedSink,
			scale: true, want: map[string]int{"src": 2, "sink": 6}, // 4 · 1.5
		},
		{
			name: "vertex.max-parallelism caps, the vertex's max parallelism too",
			o:    enabled(func(o *options.Options) { o.VertexMaxParallelism = 5 }), now: ready,
			vs:    overloadedSink,
			scale: true, want: map[string]int{"src": 2, "sink": 5},
		},
		{
			name: "vertex.min-parallelism: a scale-down stops there",
			o: enabled(func(o *options.Options) {
				o.VertexMinParallelism = 3
				o.ScaleDownInterval = 0
				o.ScaleDownMaxFactor = 1
			}), now: ready,
			vs:    []vertex{{id: "src", p: 8, perTask: 1000, in: 100}},
			scale: true, want: map[string]int{"src": 3},
		},
		{
			name: "key groups: EVENLY_SPREAD moves to a divisor of max parallelism",
			o:    enabled(nil), now: ready,
			vs:    []vertex{overloadedSink[0], {id: "agg", p: 4, maxP: 100, perTask: 250, in: 1000, input: "src", hash: true}},
			scale: true, want: map[string]int{"src": 2, "agg": 10}, // 8 → 10 divides 100
		},
		{
			name: "key groups: MAXIMIZE_UTILISATION takes the first value that lowers the largest share",
			o:    enabled(func(o *options.Options) { o.KeyGroupAdjustMode = options.MaximizeUtilisation }), now: ready,
			vs: []vertex{overloadedSink[0], {id: "agg", p: 4, maxP: 100, perTask: 250, in: 1000, input: "src", hash: true}},
			// 8 subtasks hold 12 key groups at most (100/8), 9 hold 11: 9, where EVENLY_SPREAD gives 10.
			scale: true, want: map[string]int{"src": 2, "agg": 9},
		},
		{
			name: "source partitions align a source",
			o:    enabled(nil), now: ready,
			// 550/s arrive, 500/s read: 550/0.7 + 550/6 + 75000/1800 = 919 → 3.68 → 4 divides 12.
			vs:    []vertex{{id: "src", p: 2, perTask: 250, in: 500, partition: 12, lag: 75000, growth: 50}},
			scale: true, want: map[string]int{"src": 4},
		},
		{
			name: "vertex.exclude.ids: an excluded vertex keeps its parallelism",
			o:    enabled(func(o *options.Options) { o.VertexExcludeIDs = []string{"sink"} }), now: ready,
			vs:      overloadedSink,
			reason:  "no vertex needs",
			reports: map[string]string{"sink": "excluded by vertex.exclude.ids"},
		},
		{
			name: "excluded period: no rescale while in it",
			o:    enabled(func(o *options.Options) { o.ExcludedPeriods = []string{"12:00-13:00 && * * * ? * MON"} }), now: ready,
			vs:     overloadedSink,
			reason: "excluded period",
		},
		{
			name: "excluded period on another day: rescale",
			o:    enabled(func(o *options.Options) { o.ExcludedPeriods = []string{"12:00-13:00 && * * * ? * TUE"} }), now: ready,
			vs:    overloadedSink,
			scale: true, want: map[string]int{"src": 2, "sink": 8},
		},
		{
			name: "backlog: the catch-up rate adds capacity",
			o:    enabled(nil), now: ready,
			// Reading flat out at 1000/s as 1000/s arrive, 200 s of lag (below the
			// 5 min backlog threshold): 1000/0.7 + 1000/6 + 200000/1800 = 1706 → 3.41 → 4.
			vs:    []vertex{{id: "src", p: 2, perTask: 500, in: 1000, lag: 200000}},
			scale: true, want: map[string]int{"src": 4},
		},
		{
			name: "processing a backlog: no scale-down however idle",
			o:    enabled(func(o *options.Options) { o.ScaleDownInterval = 0 }), now: ready,
			// Reading flat out at 10000/s, 1000/s arriving, 6 min of input still pending.
			vs:     []vertex{{id: "src", p: 10, perTask: 1000, in: 10000, lag: 10000 * 360, growth: -9000}},
			reason: "within its utilization bounds",
		},
		{
			name: "scaling.enabled false: recommendation only",
			o:    enabled(func(o *options.Options) { o.ScalingEnabled = false }), now: ready,
			vs:      overloadedSink,
			reason:  "recommendation only",
			reports: map[string]string{"sink": "recommended 8"},
		},
		{
			name: "disabled: nothing",
			o:    options.Defaults(), now: ready,
			vs:     overloadedSink,
			reason: "disabled",
		},
		{
			name: "unknown GC pressure and heap usage never block",
			o: enabled(func(o *options.Options) {
				o.GCPressureThreshold = 0
				o.HeapUsageThreshold = 0
			}), now: ready,
			vs:    overloadedSink,
			scale: true, want: map[string]int{"src": 2, "sink": 8},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g, samples := job(tt.now, tt.noise, tt.vs...)
			d, err := Decide(Input{Graph: g, Samples: samples, RunningSince: t0, Now: tt.now, Options: tt.o, State: tt.state, ResetNonce: tt.nonce})
			if err != nil {
				t.Fatal(err)
			}
			if d.Scale != tt.scale {
				t.Fatalf("scale %v (%s), want %v; %s", d.Scale, d.Reason, tt.scale, reports(d))
			}
			if tt.scale && OverridesString(d.Overrides) != OverridesString(tt.want) {
				t.Errorf("overrides %s, want %s; %s", OverridesString(d.Overrides), OverridesString(tt.want), reports(d))
			}
			if !strings.Contains(d.Reason, tt.reason) {
				t.Errorf("reason %q, want it to contain %q", d.Reason, tt.reason)
			}
			for id, want := range tt.reports {
				if got := reportOf(d, id); !strings.Contains(got, want) {
					t.Errorf("report of %s: %q, want %q", id, got, want)
				}
			}
		})
	}
}

func reportOf(d Decision, id string) string {
	for _, r := range d.Vertices {
		if r.ID == id {
			return fmt.Sprintf("current %d recommended %d: %s", r.Current, r.Recommended, r.Note)
		}
	}
	return ""
}

func reports(d Decision) string {
	var b strings.Builder
	for _, r := range d.Vertices {
		fmt.Fprintf(&b, "\n  %s %d→%d tpr %.0f target %.0f util %.2f outside %v: %s", r.ID, r.Current, r.Recommended,
			r.TrueProcessingRate, r.TargetRate, r.Utilization, r.OutsideBounds, r.Note)
	}
	return b.String()
}

// TestScaleDownWaitsForTheInterval runs decisions every minute over a long
// stretch of low load: nothing before scale-down.interval, then the scale-down.
func TestScaleDownWaitsForTheInterval(t *testing.T) {
	o := enabled(nil)                                            // interval 1 h, max scale-down factor 0.6
	low := []vertex{{id: "src", p: 10, perTask: 1000, in: 1500}} // utilization 0.15
	var state State
	firstPending := time.Time{}
	for now := ready; now.Before(ready.Add(2 * time.Hour)); now = now.Add(time.Minute) {
		g, samples := job(now, 0, low...)
		d, err := Decide(Input{Graph: g, Samples: samples, RunningSince: t0, Now: now, Options: o, State: state})
		if err != nil {
			t.Fatal(err)
		}
		state = d.State
		if firstPending.IsZero() && len(state.PendingScaleDowns) > 0 {
			firstPending = now
		}
		if d.Scale {
			if waited := now.Sub(firstPending); waited < o.ScaleDownInterval {
				t.Fatalf("scaled down after %s, before the interval", waited)
			}
			// 1500/0.7 + 1500/6 = 2393 → 2.4 → but at most 60 % down from 10: 4.
			if d.Overrides["src"] != 4 {
				t.Errorf("scaled to %d, want 4 (scale-down.max-factor 0.6)", d.Overrides["src"])
			}
			if len(d.State.PendingScaleDowns) != 0 {
				t.Errorf("pending scale-downs kept after the rescale: %v", d.State.PendingScaleDowns)
			}
			return
		}
	}
	t.Fatal("never scaled down")
}

// TestDipThatReturnsDoesNotScaleDown: load falls below the band for 40
// minutes and returns; the pending scale-down is dropped, nothing rescales.
func TestDipThatReturnsDoesNotScaleDown(t *testing.T) {
	o := enabled(nil)
	var state State
	for now := ready; now.Before(ready.Add(3 * time.Hour)); now = now.Add(time.Minute) {
		in := 6000.0 // utilization 0.6
		dipping := now.After(ready.Add(30*time.Minute)) && now.Before(ready.Add(70*time.Minute))
		if dipping {
			in = 1500
		}
		// The dip shows in the window as it happens: samples carry the rate of their minute.
		var samples []evaluate.Sample
		g, _ := job(now, 0, vertex{id: "src", p: 10, perTask: 1000, in: in})
		for at := t0; !at.After(now); at = at.Add(time.Minute) {
			x := 6000.0
			if at.After(ready.Add(30*time.Minute)) && at.Before(ready.Add(70*time.Minute)) {
				x = 1500
			}
			_, s := job(at, 0, vertex{id: "src", p: 10, perTask: 1000, in: x})
			samples = append(samples, s[len(s)-1])
		}
		d, err := Decide(Input{Graph: g, Samples: samples, RunningSince: t0, Now: now, Options: o, State: state})
		if err != nil {
			t.Fatal(err)
		}
		state = d.State
		if dipping && now.After(ready.Add(45*time.Minute)) && len(state.PendingScaleDowns) == 0 {
			t.Fatalf("%s into the dip: no pending scale-down", now.Sub(ready.Add(30*time.Minute)))
		}
		if d.Scale {
			t.Fatalf("rescaled at %s: %s", now.Sub(ready), d.Reason)
		}
	}
	if len(state.PendingScaleDowns) != 0 {
		t.Errorf("pending scale-down outlived the dip: %v", state.PendingScaleDowns)
	}
}

func TestIneffectiveScaleUp(t *testing.T) {
	// The sink went 4→8 expecting 2000/s from 1000/s; it reached only
	// 1050/s (per-subtask capacity halved: contention).
	last := State{Scalings: []Scaling{{Time: t0.Add(-time.Hour), RestartDuration: time.Minute,
		Vertices: map[string]VertexChange{"sink": {From: 4, To: 8, TrueProcessingRate: 1000, ExpectedProcessingRate: 2000}}}}}
	// 1500/s arrive; the sink takes its 1050/s, the rest piles up at the source.
	vs := []vertex{{id: "src", p: 2, perTask: 5000, in: 1050, lag: 1e5, growth: 450},
		{id: "sink", p: 8, perTask: 131.25, in: 1050, input: "src"}}
	tests := []struct {
		name    string
		enabled bool
		noise   float64
		blocked bool
	}{
		{"detection enabled: blocked", true, 0, true},
		{"detection disabled: reported, scaled", false, 0, false},
		// ±30 % noise on the rates: the shortfall is within the measurement's noise.
		{"noisy measurement: not judged", true, 0.3, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := enabled(func(o *options.Options) { o.EffectivenessDetectionEnabled = tt.enabled })
			g, samples := job(ready, tt.noise, vs...)
			d, err := Decide(Input{Graph: g, Samples: samples, RunningSince: t0, Now: ready, Options: o, State: last})
			if err != nil {
				t.Fatal(err)
			}
			if d.Scale == tt.blocked {
				t.Errorf("scale %v, want %v; %s", d.Scale, !tt.blocked, reports(d))
			}
			if note := reportOf(d, "sink"); tt.noise == 0 && !strings.Contains(note, "ineffective") {
				t.Errorf("report %q does not mention the ineffective scale-up", note)
			}
		})
	}
}

func TestResetNonce(t *testing.T) {
	state := State{ResetNonce: 1, Overrides: map[string]int{"src": 9},
		Scalings: []Scaling{{Time: t0, Vertices: map[string]VertexChange{"src": {From: 2, To: 9}}}}}
	g, samples := job(ready, 0, vertex{id: "src", p: 9, perTask: 100, in: 500})
	d, err := Decide(Input{Graph: g, Samples: samples, RunningSince: t0, Now: ready, Options: enabled(nil), State: state, ResetNonce: 2})
	if err != nil {
		t.Fatal(err)
	}
	if !d.Reset || d.Scale || len(d.State.Scalings) != 0 || d.State.Overrides != nil || d.State.ResetNonce != 2 {
		t.Errorf("decision %+v, want a reset with an empty state under nonce 2", d)
	}
	// A new job with a nonce already set is not reset.
	d, err = Decide(Input{Graph: g, Samples: samples, RunningSince: t0, Now: ready, Options: enabled(nil), State: NewState(7), ResetNonce: 7})
	if err != nil || d.Reset {
		t.Errorf("fresh state reset: %+v %v", d, err)
	}
	// Same nonce: the history stays.
	d, err = Decide(Input{Graph: g, Samples: samples, RunningSince: t0, Now: ready, Options: enabled(nil), State: state, ResetNonce: 1})
	if err != nil {
		t.Fatal(err)
	}
	if d.Reset || len(d.State.Scalings) != 1 {
		t.Errorf("same nonce reset the state: %+v", d)
	}
}

func TestRestartTime(t *testing.T) {
	g := evaluate.Graph{{ID: "a", Parallelism: 4}, {ID: "b", Parallelism: 2}}
	scaled := State{Scalings: []Scaling{
		{Time: t0, Vertices: map[string]VertexChange{"a": {From: 2, To: 4}}, RestartDuration: 3 * time.Minute},
		{Time: t0.Add(time.Hour), Vertices: map[string]VertexChange{"a": {From: 4, To: 4}, "b": {From: 1, To: 2}}},
	}}
	tests := []struct {
		name     string
		running  time.Time
		graph    evaluate.Graph
		tracking bool
		limit    time.Duration
		want     time.Duration
	}{
		{"tracking off: configured", t0.Add(time.Hour + 7*time.Minute), g, false, 15 * time.Minute, 5 * time.Minute},
		{"tracking: longest observed", t0.Add(time.Hour + 7*time.Minute), g, true, 15 * time.Minute, 7 * time.Minute},
		{"tracking: capped by the limit", t0.Add(time.Hour + 40*time.Minute), g, true, 15 * time.Minute, 15 * time.Minute},
		{"parallelism not reached: not recorded", t0.Add(time.Hour + 9*time.Minute),
			evaluate.Graph{{ID: "a", Parallelism: 4}, {ID: "b", Parallelism: 1}}, true, 15 * time.Minute, 3 * time.Minute},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := enabled(func(o *options.Options) {
				o.RestartTimeTrackingEnabled = tt.tracking
				o.RestartTimeTrackingLimit = tt.limit
			})
			s := RecordRestart(scaled, tt.graph, tt.running)
			if got := RestartTime(s, o); got != tt.want {
				t.Errorf("restart time %s, want %s", got, tt.want)
			}
			if scaled.Scalings[1].RestartDuration != 0 {
				t.Error("RecordRestart changed its input")
			}
		})
	}
}

func TestOverridesString(t *testing.T) {
	got := OverridesString(map[string]int{"bc764cd8ddf7a0cff126f51c16239658": 4, "0a448493b4782967b150582570326227": 12})
	want := "0a448493b4782967b150582570326227:12,bc764cd8ddf7a0cff126f51c16239658:4"
	if got != want {
		t.Errorf("%s, want %s", got, want)
	}
}

func TestHistoryTrim(t *testing.T) {
	o := enabled(func(o *options.Options) { o.HistoryMaxCount = 2; o.HistoryMaxAge = 24 * time.Hour })
	change := VertexChange{From: 1, To: 2}
	at := func(h int) time.Time { return t0.Add(time.Duration(h) * time.Hour) }
	s := State{Scalings: []Scaling{
		{Time: at(-48), Vertices: map[string]VertexChange{"a": change}},            // too old
		{Time: at(0), Vertices: map[string]VertexChange{"a": change, "b": change}}, // a: third newest
		{Time: at(1), Vertices: map[string]VertexChange{"a": change}},
		{Time: at(2), Vertices: map[string]VertexChange{"a": change}},
	}}
	got := s.trim(at(3), o)
	var desc []string
	for _, sc := range got.Scalings {
		desc = append(desc, fmt.Sprintf("%s:%s", sc.Time.Sub(t0), strings.Join(slicesSorted(sc.Vertices), "+")))
	}
	// a keeps its two latest changes, b its only one; nothing before the age limit.
	if want := "0s:b 1h0m0s:a 2h0m0s:a"; strings.Join(desc, " ") != want {
		t.Errorf("kept %v, want %s", desc, want)
	}
	if len(s.Scalings[1].Vertices) != 2 {
		t.Error("trim changed its input")
	}
	// The latest scaling stays however old.
	old := State{Scalings: []Scaling{{Time: at(-72), Vertices: map[string]VertexChange{"a": change}}}}
	if got := old.trim(at(3), o); len(got.Scalings) != 1 {
		t.Errorf("latest scaling dropped: %v", got.Scalings)
	}
}

func slicesSorted(m map[string]VertexChange) []string {
	var ids []string
	for id := range m {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

func ptr(x float64) *float64 { return &x }

func TestMemoryPressureBlocks(t *testing.T) {
	vs := overloadedSink
	for _, tt := range []struct {
		name     string
		gc, heap float64
		reason   string
	}{
		{"GC pressure", 0.5, math.NaN(), "GC pressure"},
		{"heap usage", math.NaN(), 0.95, "heap usage"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			o := enabled(func(o *options.Options) { o.GCPressureThreshold = 0.3; o.HeapUsageThreshold = 0.9 })
			g, samples := job(ready, 0, vs...)
			for n := range samples {
				samples[n].Job = evaluate.JobSample{GCPressure: tt.gc, HeapMaxUsageRatio: tt.heap}
			}
			d, err := Decide(Input{Graph: g, Samples: samples, RunningSince: t0, Now: ready, Options: o})
			if err != nil {
				t.Fatal(err)
			}
			if d.Scale || !strings.Contains(d.Reason, tt.reason) {
				t.Errorf("scale %v, reason %q, want blocked by %s", d.Scale, d.Reason, tt.reason)
			}
		})
	}
}

func TestScalingReport(t *testing.T) {
	tests := []struct {
		name   string
		change func(o *options.Options)
		want   string
	}{
		{"applied", nil, "Scaling execution enabled, begin scaling vertices:" +
			"{ Vertex ID sink | Parallelism 4 -> 8 | Processing capacity 1000.00 -> 1838.00 | Target data rate 1100.00}"},
		{"scaling disabled", func(o *options.Options) { o.ScalingEnabled = false },
			"Scaling execution disabled by config job.autoscaler.scaling.enabled:false, recommended parallelism change:" +
				"{ Vertex ID sink | Parallelism 4 -> 8 | Processing capacity 1000.00 -> 1838.00 | Target data rate 1100.00}"},
		{"excluded period", func(o *options.Options) { o.ExcludedPeriods = []string{"* * * ? * MON"} },
			"Scaling execution disabled by config job.autoscaler.excluded.periods:[* * * ? * MON], recommended parallelism change:" +
				"{ Vertex ID sink | Parallelism 4 -> 8 | Processing capacity 1000.00 -> 1838.00 | Target data rate 1100.00}"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g, samples := job(ready, 0, overloadedSink...)
			d, err := Decide(Input{Graph: g, Samples: samples, RunningSince: t0, Now: ready, Options: enabled(tt.change)})
			if err != nil {
				t.Fatal(err)
			}
			if d.ScalingReport != tt.want {
				t.Errorf("report\n%s\nwant\n%s", d.ScalingReport, tt.want)
			}
		})
	}
	// Nothing to change: no report.
	g, samples := job(ready, 0, vertex{id: "src", p: 4, perTask: 500, in: 1200})
	if d, _ := Decide(Input{Graph: g, Samples: samples, RunningSince: t0, Now: ready, Options: enabled(nil)}); d.ScalingReport != "" {
		t.Errorf("report %q without a change", d.ScalingReport)
	}
}

func TestObservedScalability(t *testing.T) {
	// Three past scalings of the sink show capacity growing at half the
	// linear rate: 250/s per subtask at 1, then 2 subtasks gave 375/s and
	// 4 gave 625/s. With observed scalability on, the scale factor is divided
	// by the fitted coefficient, so the recommendation is higher.
	history := State{Scalings: []Scaling{
		{Time: t0.Add(-3 * time.Hour), Vertices: map[string]VertexChange{"sink": {From: 1, To: 2, TrueProcessingRate: 250}}},
		{Time: t0.Add(-2 * time.Hour), Vertices: map[string]VertexChange{"sink": {From: 2, To: 4, TrueProcessingRate: 375}}},
		{Time: t0.Add(-1 * time.Hour), Vertices: map[string]VertexChange{"sink": {From: 4, To: 4, TrueProcessingRate: 625}}},
	}}
	o := enabled(func(o *options.Options) { o.HistoryMaxCount = 5; o.ObservedScalabilityEnabled = true })
	// least squares: (1·250 + 2·375 + 4·625)/((1+4+16)·250) = 3500/5250 = 0.667 → 0.67
	if got := observedScalingCoefficient(history.changes("sink"), o); got != 0.67 {
		t.Errorf("coefficient %v, want 0.67", got)
	}
	g, samples := job(ready, 0, overloadedSink...)
	linear, err := Decide(Input{Graph: g, Samples: samples, RunningSince: t0, Now: ready, Options: enabled(nil), State: history})
	if err != nil {
		t.Fatal(err)
	}
	observed, err := Decide(Input{Graph: g, Samples: samples, RunningSince: t0, Now: ready, Options: o, State: history})
	if err != nil {
		t.Fatal(err)
	}
	// linear: 4 · 1.838 → 8; observed: 4 · 1.838 / 0.67 = 10.97 → 11.
	if linear.Overrides["sink"] != 8 || observed.Overrides["sink"] != 11 {
		t.Errorf("sink %d (linear) and %d (observed), want 8 and 11", linear.Overrides["sink"], observed.Overrides["sink"])
	}
	// Too few observations: linear.
	o.ObservedScalabilityMinObs = 4
	if got := observedScalingCoefficient(history.changes("sink"), o); got != 1 {
		t.Errorf("coefficient %v with too few observations, want 1", got)
	}
}

// TestWaitsWhileTheLoadSteps: two minutes after a step in load the decision
// waits; once the step fills the window's latest third, it sizes for the new
// load in one go.
func TestWaitsWhileTheLoadSteps(t *testing.T) {
	o := enabled(nil)
	step := ready.Add(-2 * time.Minute)
	run := func(now time.Time) Decision {
		// Before the step 1000/s arrive and are read at half capacity;
		// after it 3000/s arrive, the source reads 2000/s flat out and
		// the rest piles up.
		g, _ := job(now, 0, vertex{id: "src", p: 2, perTask: 1000, in: 1000})
		var samples []evaluate.Sample
		for at := t0; !at.After(now); at = at.Add(time.Minute) {
			v := vertex{id: "src", p: 2, perTask: 1000, in: 1000}
			if !at.Before(step) {
				v.in, v.growth, v.lag = 2000, 1000, 1000*at.Sub(step).Seconds()
			}
			_, s := job(at, 0, v)
			samples = append(samples, s[len(s)-1])
		}
		d, err := Decide(Input{Graph: g, Samples: samples, RunningSince: t0, Now: now, Options: o})
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	if d := run(ready); d.Scale || !strings.Contains(d.Reason, "still changing") {
		t.Errorf("2 min after the step: scale %v, reason %q, want a wait; %s", d.Scale, d.Reason, reports(d))
	}
	// 8 min after: 3000/0.7 + 3000/6 + 480000/1800 = 5053 → 2 · 5053/2000 = 5.05 → 6.
	if d := run(ready.Add(6 * time.Minute)); !d.Scale || d.Overrides["src"] != 6 {
		t.Errorf("8 min after the step: %v (%s), want src at 6; %s", d.Overrides, d.Reason, reports(d))
	}
}

func TestResourceQuota(t *testing.T) {
	// overloadedSink goes from 4 to 8 subtasks: with 2 slots per
	// TaskManager (one default slot sharing group) from 2 to 4 TaskManagers.
	tm := TaskManager{CPU: 2, MemoryBytes: 4 << 30, Slots: 2}
	cpu := func(x float64) func(o *options.Options) { return func(o *options.Options) { o.QuotaCPU = &x } }
	mem := func(x int64) func(o *options.Options) { return func(o *options.Options) { o.QuotaMemoryBytes = &x } }
	tests := []struct {
		name   string
		change func(o *options.Options)
		tm     TaskManager
		scale  bool
	}{
		{"no quota", nil, tm, true},
		{"CPU quota fits 4 TaskManagers", cpu(8), tm, true},
		{"CPU quota below 4 TaskManagers", cpu(7.5), tm, false},
		{"memory quota fits", mem(16 << 30), tm, true},
		{"memory quota below", mem(15 << 30), tm, false},
		{"TaskManager size unknown: no check", cpu(1), TaskManager{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g, samples := job(ready, 0, overloadedSink...)
			d, err := Decide(Input{Graph: g, Samples: samples, RunningSince: t0, Now: ready, Options: enabled(tt.change), TaskManager: tt.tm})
			if err != nil {
				t.Fatal(err)
			}
			if d.Scale != tt.scale {
				t.Errorf("scale %v (%s), want %v", d.Scale, d.Reason, tt.scale)
			}
			if !tt.scale && !strings.Contains(d.Reason, "quota") {
				t.Errorf("reason %q does not name the quota", d.Reason)
			}
		})
	}
}
