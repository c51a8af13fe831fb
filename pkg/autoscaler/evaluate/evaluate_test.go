package evaluate

import (
	"math"
	"math/rand"
	"strings"
	"testing"
	"time"

	"github.com/flinkops/flink-operator/pkg/autoscaler/options"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// series repeats one observation every minute over [from, to].
func series(from, to time.Time, f func(at time.Time) map[string]VertexSample) []Sample {
	var out []Sample
	for at := from; !at.After(to); at = at.Add(time.Minute) {
		out = append(out, Sample{Time: at, Vertices: f(at), Job: JobSample{GCPressure: math.NaN(), HeapMaxUsageRatio: math.NaN()}})
	}
	return out
}

func constant(vs map[string]VertexSample) func(time.Time) map[string]VertexSample {
	return func(time.Time) map[string]VertexSample { return vs }
}

func nan() float64 { return math.NaN() }

func TestWindow(t *testing.T) {
	o := options.Defaults() // stabilization 5 min, window 15 min
	running := t0
	all := series(t0, t0.Add(40*time.Minute), constant(map[string]VertexSample{}))
	tests := []struct {
		name        string
		now         time.Time
		ready       bool
		stabilizing bool
		until       time.Time
		first       time.Time // first sample kept, when ready
	}{
		// 90 % of the 15 min window: 13.5 min of usable samples.
		{"stabilizing", t0.Add(4 * time.Minute), false, true, t0.Add(18*time.Minute + 30*time.Second), time.Time{}},
		{"window filling", t0.Add(12 * time.Minute), false, false, t0.Add(18*time.Minute + 30*time.Second), time.Time{}},
		{"nearly full", t0.Add(18 * time.Minute), false, false, t0.Add(18*time.Minute + 30*time.Second), time.Time{}},
		{"full enough", t0.Add(19 * time.Minute), true, false, time.Time{}, t0.Add(5 * time.Minute)},
		{"full", t0.Add(20 * time.Minute), true, false, time.Time{}, t0.Add(5 * time.Minute)},
		{"sliding", t0.Add(40 * time.Minute), true, false, time.Time{}, t0.Add(25 * time.Minute)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var upToNow []Sample
			for _, s := range all {
				if !s.Time.After(tt.now) {
					upToNow = append(upToNow, s)
				}
			}
			w, r := Window(upToNow, running, tt.now, o, Ours)
			if r.Ready != tt.ready || r.Stabilizing != tt.stabilizing || !r.Until.Equal(tt.until) {
				t.Fatalf("readiness %+v, want ready %v stabilizing %v until %s", r, tt.ready, tt.stabilizing, tt.until)
			}
			if tt.ready && !w[0].Time.Equal(tt.first) {
				t.Errorf("window starts at %s, want %s", w[0].Time, tt.first)
			}
		})
	}
}

// TestWindowTrimmedHistory: a history trimmed to the window by the
// collector, with collections 61 s apart, still becomes ready.
func TestWindowTrimmedHistory(t *testing.T) {
	o := options.Defaults()
	var samples []Sample
	for at := t0; at.Before(t0.Add(time.Hour)); at = at.Add(61 * time.Second) {
		samples = append(samples, Sample{Time: at})
		for len(samples) > 0 && samples[0].Time.Before(at.Add(-o.MetricsWindow)) {
			samples = samples[1:]
		}
		if _, r := Window(samples, t0, at, o, Ours); r.Ready {
			if at.Before(t0.Add(o.StabilizationInterval + o.MetricsWindow*9/10)) {
				t.Fatalf("ready at %s, before 90 %% of a window after stabilization", at.Sub(t0))
			}
			return
		}
	}
	t.Fatal("never ready")
}

func TestEvaluate(t *testing.T) {
	o := options.Defaults()
	chain := Graph{
		{ID: "src", Parallelism: 2, MaxParallelism: 128, SourcePartitions: 12},
		{ID: "flat", Parallelism: 4, MaxParallelism: 128, Inputs: []Edge{{From: "src"}}},
		{ID: "agg", Parallelism: 4, MaxParallelism: 128, Inputs: []Edge{{From: "flat", Hash: true}}},
	}
	window := t0.Add(15 * time.Minute)
	tests := []struct {
		name    string
		graph   Graph
		samples []Sample
		check   func(t *testing.T, ev Evaluation)
	}{
		{
			name:  "true processing rate, target rate along edges, alignment",
			graph: chain,
			samples: series(t0, window, constant(map[string]VertexSample{
				"src":  {BusyMsPerSecond: 250, RecordsInPerSecond: 1000, RecordsOutPerSecond: 1000, PendingRecords: 0},
				"flat": {BusyMsPerSecond: 500, RecordsInPerSecond: 1000, RecordsOutPerSecond: 3000, PendingRecords: nan()},
				"agg":  {BusyMsPerSecond: 900, RecordsInPerSecond: 3000, RecordsOutPerSecond: 10, PendingRecords: nan()},
			})),
			check: func(t *testing.T, ev Evaluation) {
				want := map[string][3]float64{ // true processing rate, target rate, utilization
					"src": {4000, 1000, 0.25}, "flat": {2000, 1000, 0.5}, "agg": {3000 / 0.9, 3000, 0.9},
				}
				for id, w := range want {
					m := ev.Vertices[id]
					if !near(m.TrueProcessingRate, w[0]) || !near(m.TargetRate, w[1]) || !near(m.Utilization(), w[2]) {
						t.Errorf("%s: tpr %.1f target %.1f utilization %.2f, want %v", id, m.TrueProcessingRate, m.TargetRate, m.Utilization(), w)
					}
				}
				if ev.Vertices["src"].AlignTo != 12 || ev.Vertices["flat"].AlignTo != 0 || ev.Vertices["agg"].AlignTo != 128 {
					t.Errorf("alignment %d %d %d, want 12 (partitions) 0 (forward edge) 128 (key groups)",
						ev.Vertices["src"].AlignTo, ev.Vertices["flat"].AlignTo, ev.Vertices["agg"].AlignTo)
				}
				if strings.Join(ev.Order, ",") != "src,flat,agg" {
					t.Errorf("order %v", ev.Order)
				}
			},
		},
		{
			name:  "backlog: growing lag adds to the target rate, the latest lag to catch up",
			graph: chain[:2],
			samples: series(t0, window, func(at time.Time) map[string]VertexSample {
				lag := at.Sub(t0).Seconds() * 200 // grows 200/s
				return map[string]VertexSample{
					"src":  {BusyMsPerSecond: 1000, RecordsInPerSecond: 1000, RecordsOutPerSecond: 1000, PendingRecords: lag},
					"flat": {BusyMsPerSecond: 500, RecordsInPerSecond: 1000, RecordsOutPerSecond: 1000, PendingRecords: nan()},
				}
			}),
			check: func(t *testing.T, ev Evaluation) {
				src := ev.Vertices["src"]
				if !near(src.TargetRate, 1200) {
					t.Errorf("target rate %.1f, want 1200 (read 1000 + lag growing 200)", src.TargetRate)
				}
				lag := 15 * 60 * 200.0
				if !near(src.CatchUpRate, lag/1800) || !near(ev.Vertices["flat"].CatchUpRate, lag/1800) {
					t.Errorf("catch-up %.1f / %.1f, want %.1f (lag over 30 min)", src.CatchUpRate, ev.Vertices["flat"].CatchUpRate, lag/1800)
				}
				if ev.ProcessingBacklog {
					t.Errorf("lag of %.0f s of input flagged as backlog processing (threshold 5 min)", lag/1000)
				}
			},
		},
		{
			name:  "a backlog beyond the lag threshold means catching up: no scale-down threshold",
			graph: chain[:1],
			samples: series(t0, window, constant(map[string]VertexSample{
				"src": {BusyMsPerSecond: 100, RecordsInPerSecond: 1000, PendingRecords: 400 * 1000},
			})),
			check: func(t *testing.T, ev Evaluation) {
				if !ev.ProcessingBacklog || !math.IsInf(ev.Vertices["src"].ScaleDownThreshold, 1) {
					t.Errorf("backlog %v, scale-down threshold %v, want true and +Inf", ev.ProcessingBacklog, ev.Vertices["src"].ScaleDownThreshold)
				}
			},
		},
		{
			name:  "thresholds are target rate over the band's ends, plus restart catch-up on the low end",
			graph: chain[:1],
			samples: series(t0, window, constant(map[string]VertexSample{
				"src": {BusyMsPerSecond: 500, RecordsInPerSecond: 700, PendingRecords: 0},
			})),
			check: func(t *testing.T, ev Evaluation) {
				m := ev.Vertices["src"]
				// band [0.4, 1.0]; restart 5 min / catch-up 30 min = 1/6.
				if !near(m.ScaleUpThreshold, 700) || !near(m.ScaleDownThreshold, math.Round(700/0.4+700.0/6)) {
					t.Errorf("thresholds %.1f / %.1f", m.ScaleUpThreshold, m.ScaleDownThreshold)
				}
				if m.OutsideBounds() {
					t.Errorf("capacity 1400 for 700/s is inside the band")
				}
			},
		},
		{
			name:  "nothing flowing: infinite capacity, utilization 0",
			graph: chain[:1],
			samples: series(t0, window, constant(map[string]VertexSample{
				"src": {BusyMsPerSecond: 0, RecordsInPerSecond: 0, PendingRecords: nan()},
			})),
			check: func(t *testing.T, ev Evaluation) {
				if m := ev.Vertices["src"]; !math.IsInf(m.TrueProcessingRate, 1) || m.Utilization() != 0 {
					t.Errorf("tpr %v utilization %v", m.TrueProcessingRate, m.Utilization())
				}
			},
		},
		{
			name:  "observed processing rate replaces a busy-time rate that is too high",
			graph: chain[:1],
			samples: series(t0, window, constant(map[string]VertexSample{
				// busy time says 2000/s; with 60 s of lag the source runs flat out at 1000/s.
				"src": {BusyMsPerSecond: 500, RecordsInPerSecond: 1000, PendingRecords: 60 * 1000},
			})),
			check: func(t *testing.T, ev Evaluation) {
				if m := ev.Vertices["src"]; !near(m.TrueProcessingRate, 1000) {
					t.Errorf("tpr %.1f, want the observed 1000", m.TrueProcessingRate)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ev, err := Evaluate(tt.graph, tt.samples, o, o.RestartTime, Ours)
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, ev)
		})
	}
}

func TestEvaluateRejectsBadGraphs(t *testing.T) {
	s := series(t0, t0.Add(time.Minute), constant(map[string]VertexSample{}))
	for name, g := range map[string]Graph{
		"cycle":         {{ID: "a", Inputs: []Edge{{From: "b"}}}, {ID: "b", Inputs: []Edge{{From: "a"}}}},
		"unknown input": {{ID: "a", Inputs: []Edge{{From: "x"}}}},
		"duplicate":     {{ID: "a"}, {ID: "a"}},
	} {
		if _, err := Evaluate(g, s, options.Defaults(), 0, Ours); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func near(a, b float64) bool {
	if math.IsInf(a, 0) || math.IsInf(b, 0) {
		return a == b
	}
	return math.Abs(a-b) <= 1e-6*math.Max(1, math.Abs(b))
}

func TestLoadChanging(t *testing.T) {
	o := options.Defaults()
	g := Graph{{ID: "src", Parallelism: 10, MaxParallelism: 128}}
	rng := rand.New(rand.NewSource(3))
	tests := []struct {
		name string
		rate func(n int) float64 // read rate of the n-th sample (of 16)
		want bool
	}{
		{"steady", func(int) float64 { return 1000 }, false},
		{"±10 % alternating noise", func(n int) float64 { return 1000 * (1 + 0.1*float64(1-2*(n%2))) }, false},
		{"±30 % random noise", func(int) float64 { return 1000 * (1 + 0.3*(2*rng.Float64()-1)) }, false},
		{"a step two minutes ago", func(n int) float64 {
			if n >= 14 {
				return 3000
			}
			return 1000
		}, true},
		{"a step ten minutes ago (settled)", func(n int) float64 {
			if n >= 6 {
				return 3000
			}
			return 1000
		}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var samples []Sample
			for n := 0; n <= 15; n++ {
				samples = append(samples, Sample{Time: t0.Add(time.Duration(n) * time.Minute), Vertices: map[string]VertexSample{
					"src": {BusyMsPerSecond: 500, RecordsInPerSecond: tt.rate(n), PendingRecords: 0}}})
			}
			ev, err := Evaluate(g, samples, o, o.RestartTime, Ours)
			if err != nil {
				t.Fatal(err)
			}
			if got := ev.LoadChanging != ""; got != tt.want {
				t.Errorf("load changing %v, want %v", got, tt.want)
			}
			if ev, _ := Evaluate(g, samples, o, o.RestartTime, Upstream); ev.LoadChanging != "" {
				t.Error("upstream's rules flag a changing load")
			}
		})
	}
}
