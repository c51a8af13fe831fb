package benchscale

import (
	"context"
	"os"
	"testing"
)

// TestBenchScaleSmall is the small variant (`make bench-scale-small`): 20
// deployments and 200 snapshots suspended, 20 running jobs and 20
// savepoints, 30 s idle. It checks only that every phase settles; the
// figures are the point.
func TestBenchScaleSmall(t *testing.T) {
	if os.Getenv(EnvScale) == "1" {
		t.Skip("FLINKOP_BENCH_SCALE=1: TestBenchScale runs the configured size")
	}
	run(t, SmallConfig())
}

// TestBenchScale is `make bench-scale`: issue 21's size (1,000 + 10,000
// suspended; 1,000 running jobs + 1,000 savepoints), only with
// FLINKOP_BENCH_SCALE=1; FLINKOP_BENCH_* variables change it.
func TestBenchScale(t *testing.T) {
	if os.Getenv(EnvScale) != "1" {
		t.Skip("set FLINKOP_BENCH_SCALE=1 (make bench-scale)")
	}
	run(t, FullConfig())
}

func run(t *testing.T, cfg Config) { runConfig(t, cfg) }

func runConfig(t *testing.T, cfg Config) []*Result {
	cfg, err := cfg.FromEnv()
	if err != nil {
		t.Fatal(err)
	}
	res := Run(t, context.Background(), cfg)
	for _, r := range res {
		for _, p := range r.Phases {
			if !p.Settled {
				t.Errorf("%s: %s did not settle", r.Scenario, p.Name)
			}
		}
	}
	return res
}

// TestBenchAutoscalerSmall is the small autoscaler variant (`go test -run
// TestBenchAutoscalerSmall ./e2e/benchscale/`, under 3 minutes): 10 jobs
// with a synthetic load and the autoscaler on, a 75 s window. It checks
// that the jobs run and that the autoscaler rescaled some; the figures are
// the point.
func TestBenchAutoscalerSmall(t *testing.T) {
	if os.Getenv(EnvScale) == "1" || os.Getenv(EnvAutoscaler) == "1" {
		t.Skip("FLINKOP_BENCH_SCALE=1 or FLINKOP_BENCH_AUTOSCALER=1: the configured size runs")
	}
	for _, r := range runConfig(t, AutoscalerSmallConfig()) {
		if w := r.Autoscaler; w != nil && w.Enabled && w.Rescales == 0 {
			t.Errorf("%s: no rescale recorded by the autoscaler in the window", r.Scenario)
		}
	}
}

// TestBenchAutoscaler is issue 33's cost benchmark: 100 jobs with the
// autoscaler on, then off, 5 minutes measured each; only with
// FLINKOP_BENCH_AUTOSCALER=1. FLINKOP_BENCH_* variables change it
// (FLINKOP_BENCH_SCENARIOS=autoscaler for one side).
func TestBenchAutoscaler(t *testing.T) {
	if os.Getenv(EnvAutoscaler) != "1" {
		t.Skip("set FLINKOP_BENCH_AUTOSCALER=1")
	}
	run(t, AutoscalerConfig())
}
