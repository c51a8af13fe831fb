package benchscale

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// Config is one benchmark run.
type Config struct {
	// Name labels the run ("small", "full"); results go to
	// <ResultsDir>/<Name>-<scenario>/.
	Name string
	// Scenarios to run, each on a fresh control plane: ScenarioSuspended,
	// ScenarioRunning.
	Scenarios []string
	// Deployments and Snapshots are N and M of the suspended scenario.
	Deployments, Snapshots int
	// RunningDeployments and RunningSnapshots are N and M of the running
	// scenario (the savepoints spread round-robin over the jobs).
	RunningDeployments, RunningSnapshots int
	// Namespaces the load is spread over; the operator watches them all.
	Namespaces int
	// Quiet is how long without an operator write counts as settled.
	Quiet time.Duration
	// SettleTimeout bounds each phase (from its first create).
	SettleTimeout time.Duration
	// Idle is the window after settling in which writes are counted.
	Idle time.Duration
	// RestartWindow is the window after the operator's restart.
	RestartWindow time.Duration
	// CreateWorkers create the load concurrently.
	CreateWorkers int
	// OperatorBin is a prebuilt operator binary; empty builds
	// ./cmd/flink-operator from the working tree.
	OperatorBin string
	// OperatorRev builds the operator from this git revision (git archive
	// into a temporary directory: the working tree and the repository's
	// state are left alone) instead of the working tree; OperatorBin wins.
	OperatorRev string
	// OperatorArgs are extra operator flags.
	OperatorArgs []string
	// OperatorEnv are extra KEY=VALUE environment variables of the
	// operator process (GOMEMLIMIT=57MiB, say, as a 64 MiB container limit
	// gives it).
	OperatorEnv []string
	// NoWebhook runs the operator without its admission webhook. By
	// default the API server calls it (validating and mutating steps, as
	// manifests/base installs them) on the operator's local port.
	NoWebhook bool
	// ResultsDir receives results.json, the operator log and the audit log.
	ResultsDir string
}

// Scenarios.
const (
	ScenarioSuspended = "suspended"
	ScenarioRunning   = "running"
)

// SmallConfig is the small variant: about two minutes on 2 cores.
func SmallConfig() Config {
	return Config{
		Name:               "small",
		Scenarios:          []string{ScenarioSuspended, ScenarioRunning},
		Deployments:        20,
		Snapshots:          200,
		RunningDeployments: 20,
		RunningSnapshots:   20,
		Namespaces:         10,
		Quiet:              10 * time.Second,
		SettleTimeout:      5 * time.Minute,
		Idle:               30 * time.Second,
		RestartWindow:      20 * time.Second,
		CreateWorkers:      32,
	}
}

// FullConfig is issue 21's size.
func FullConfig() Config {
	c := SmallConfig()
	c.Name = "full"
	c.Deployments, c.Snapshots = 1000, 10000
	c.RunningDeployments, c.RunningSnapshots = 1000, 1000
	c.Quiet = 30 * time.Second
	c.SettleTimeout = 25 * time.Minute
	c.Idle = 10 * time.Minute
	c.RestartWindow = time.Minute
	c.CreateWorkers = 64
	return c
}

// Environment variables that override a Config (FLINKOP_BENCH_SCALE=1 runs
// TestBenchScale at all).
const (
	EnvScale              = "FLINKOP_BENCH_SCALE"
	EnvName               = "FLINKOP_BENCH_NAME"
	EnvScenarios          = "FLINKOP_BENCH_SCENARIOS"           // suspended,running
	EnvDeployments        = "FLINKOP_BENCH_DEPLOYMENTS"         // N, suspended
	EnvSnapshots          = "FLINKOP_BENCH_SNAPSHOTS"           // M, suspended
	EnvRunningDeployments = "FLINKOP_BENCH_RUNNING_DEPLOYMENTS" // N, running
	EnvRunningSnapshots   = "FLINKOP_BENCH_RUNNING_SNAPSHOTS"   // M, running
	EnvNamespaces         = "FLINKOP_BENCH_NAMESPACES"
	EnvQuiet              = "FLINKOP_BENCH_QUIET"          // duration
	EnvSettleTimeout      = "FLINKOP_BENCH_SETTLE_TIMEOUT" // duration
	EnvIdle               = "FLINKOP_BENCH_IDLE"           // duration
	EnvRestartWindow      = "FLINKOP_BENCH_RESTART_WINDOW" // duration
	EnvWorkers            = "FLINKOP_BENCH_WORKERS"
	EnvOperatorBin        = "FLINKOP_BENCH_OPERATOR_BIN"
	EnvOperatorRev        = "FLINKOP_BENCH_OPERATOR_REV"
	EnvOperatorArgs       = "FLINKOP_BENCH_OPERATOR_ARGS" // space-separated
	EnvOperatorEnv        = "FLINKOP_BENCH_OPERATOR_ENV"  // space-separated KEY=VALUE
	EnvWebhook            = "FLINKOP_BENCH_WEBHOOK"       // 0: no admission webhook
	EnvResultsDir         = "FLINKOP_BENCH_RESULTS_DIR"
)

// FromEnv applies the FLINKOP_BENCH_* variables that are set.
func (c Config) FromEnv() (Config, error) {
	var errs []string
	str := func(env string, dst *string) {
		if v := strings.TrimSpace(os.Getenv(env)); v != "" {
			*dst = v
		}
	}
	num := func(env string, dst *int) {
		if v := os.Getenv(env); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 {
				errs = append(errs, fmt.Sprintf("%s=%q: want a count", env, v))
				return
			}
			*dst = n
		}
	}
	dur := func(env string, dst *time.Duration) {
		if v := os.Getenv(env); v != "" {
			d, err := time.ParseDuration(v)
			if err != nil || d < 0 {
				errs = append(errs, fmt.Sprintf("%s=%q: want a duration (30s, 10m)", env, v))
				return
			}
			*dst = d
		}
	}
	str(EnvName, &c.Name)
	if v := os.Getenv(EnvScenarios); v != "" {
		c.Scenarios = nil
		for _, s := range strings.Split(v, ",") {
			switch s = strings.TrimSpace(s); s {
			case ScenarioSuspended, ScenarioRunning:
				c.Scenarios = append(c.Scenarios, s)
			case "":
			default:
				errs = append(errs, fmt.Sprintf("%s: unknown scenario %q", EnvScenarios, s))
			}
		}
	}
	num(EnvDeployments, &c.Deployments)
	num(EnvSnapshots, &c.Snapshots)
	num(EnvRunningDeployments, &c.RunningDeployments)
	num(EnvRunningSnapshots, &c.RunningSnapshots)
	num(EnvNamespaces, &c.Namespaces)
	num(EnvWorkers, &c.CreateWorkers)
	dur(EnvQuiet, &c.Quiet)
	dur(EnvSettleTimeout, &c.SettleTimeout)
	dur(EnvIdle, &c.Idle)
	dur(EnvRestartWindow, &c.RestartWindow)
	str(EnvOperatorBin, &c.OperatorBin)
	str(EnvOperatorRev, &c.OperatorRev)
	switch os.Getenv(EnvWebhook) {
	case "":
	case "0", "false":
		c.NoWebhook = true
	case "1", "true":
		c.NoWebhook = false
	default:
		errs = append(errs, EnvWebhook+": want 0 or 1")
	}
	if v := os.Getenv(EnvOperatorArgs); v != "" {
		c.OperatorArgs = strings.Fields(v)
	}
	if v := os.Getenv(EnvOperatorEnv); v != "" {
		c.OperatorEnv = strings.Fields(v)
	}
	str(EnvResultsDir, &c.ResultsDir)
	if c.Namespaces < 1 {
		c.Namespaces = 1
	}
	if c.CreateWorkers < 1 {
		c.CreateWorkers = 1
	}
	if len(errs) > 0 {
		return c, fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return c, nil
}
