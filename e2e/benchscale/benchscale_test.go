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

func run(t *testing.T, cfg Config) {
	cfg, err := cfg.FromEnv()
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range Run(t, context.Background(), cfg) {
		for _, p := range r.Phases {
			if !p.Settled {
				t.Errorf("%s: %s did not settle", r.Scenario, p.Name)
			}
		}
	}
}
