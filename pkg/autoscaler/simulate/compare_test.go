package simulate

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/flinkops/flink-operator/pkg/autoscaler/options"
)

// scenario is a load run for 24 h with ±10 % noise over five seeds, once
// with our rules and once with upstream's (Job.Upstream).
type scenario struct {
	name    string
	load    func(time.Duration) float64
	restart time.Duration
	change  func(o *options.Options)
}

func scenarios() []scenario {
	step := func(from, to float64) func(time.Duration) float64 {
		return steps([]time.Duration{2 * time.Hour}, []float64{from, to})
	}
	square := func(t time.Duration) float64 {
		if int(t/(80*time.Minute))%2 == 0 {
			return 3000
		}
		return 1200
	}
	sine := func(t time.Duration) float64 { return 2000 + 1500*math.Sin(2*math.Pi*t.Hours()/6) }
	var out []scenario
	for _, restart := range []time.Duration{3 * time.Minute, 10 * time.Minute} {
		out = append(out,
			scenario{"constant 2500/s", func(time.Duration) float64 { return 2500 }, restart, nil},
			scenario{"step 1000→3000/s", step(1000, 3000), restart, nil},
			scenario{"step 1000→10000/s", step(1000, 10000), restart, nil},
			scenario{"drop 3000→600/s", steps([]time.Duration{4 * time.Hour}, []float64{3000, 600}), restart, nil},
			scenario{"square 3000/1200/s, 80 min each", square, restart, nil},
			scenario{"sine 500..3500/s, 6 h period", sine, restart, nil},
		)
	}
	return out
}

// outcome is the totals over the seeds: rescales and the mean pending
// records (the backlog users see as lag).
type outcome struct {
	rescales    float64
	meanBacklog float64
}

func (s scenario) run(upstream bool, seeds int) (outcome, error) {
	var out outcome
	for seed := int64(1); seed <= int64(seeds); seed++ {
		o := enabled()
		o.RestartTime = s.restart // the configured restart time matches the job's
		if s.change != nil {
			s.change(&o)
		}
		job := Job{Vertices: pipeline(), RestartDelay: s.restart, Noise: 0.1, Seed: seed, Options: o, Load: s.load, Upstream: upstream}
		res, err := Run(job, 24*time.Hour)
		if err != nil {
			return outcome{}, err
		}
		out.rescales += float64(len(res.Rescales))
		backlog := 0.0
		for _, p := range res.Trace {
			backlog += p.Backlog
		}
		out.meanBacklog += backlog / float64(len(res.Trace))
	}
	out.rescales /= float64(seeds)
	out.meanBacklog /= float64(seeds)
	return out, nil
}

// TestOursAgainstUpstream: in no scenario do our rules rescale more often
// or leave more backlog than upstream's; the figures are logged (go test -v)
// and quoted in docs/autoscaler.md.
func TestOursAgainstUpstream(t *testing.T) {
	better := 0
	for _, s := range scenarios() {
		t.Run(fmt.Sprintf("%s, restart %s", s.name, s.restart), func(t *testing.T) {
			ours, err := s.run(false, 5)
			if err != nil {
				t.Fatal(err)
			}
			theirs, err := s.run(true, 5)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("rescales per day %.1f (upstream %.1f), mean backlog %.0f records (upstream %.0f)",
				ours.rescales, theirs.rescales, ours.meanBacklog, theirs.meanBacklog)
			if ours.rescales > theirs.rescales || ours.meanBacklog > theirs.meanBacklog*1.01 {
				t.Errorf("worse than upstream: %+v against %+v", ours, theirs)
			}
			if ours.rescales < theirs.rescales || ours.meanBacklog < theirs.meanBacklog*0.95 {
				better++
			}
		})
	}
	if better == 0 {
		t.Error("our rules did better than upstream's in no scenario")
	}
}
