package benchscale

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/flinkops/flink-operator/cmd/fake-jobmanager/synthload"
)

// isAutoscaler: the scenario runs jobs with a synthetic load for the job
// autoscaler.
func isAutoscaler(scenario string) bool {
	return scenario == ScenarioAutoscaler || scenario == ScenarioAutoscalerOff
}

// runsJobs: the scenario's jobs run on the fake node.
func runsJobs(scenario string) bool { return scenario == ScenarioRunning || isAutoscaler(scenario) }

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
	// AutoscalerDeployments is N of the autoscaler scenarios: jobs on fake
	// JobManagers serving AutoscalerLoad, the job autoscaler on
	// (ScenarioAutoscaler) or off (ScenarioAutoscalerOff).
	AutoscalerDeployments int
	// AutoscalerWindow is the measured window of the autoscaler scenarios,
	// from when every job runs.
	AutoscalerWindow time.Duration
	// AutoscalerLoad is the synthetic load of every job
	// (cmd/fake-jobmanager/synthload.Parse).
	AutoscalerLoad string
	// AutoscalerMetricsWindow is job.autoscaler.metrics.window (Flink
	// duration syntax).
	AutoscalerMetricsWindow string
	// ReconcileInterval is kubernetes.operator.reconcile.interval of the
	// autoscaler scenarios (the operator's --config): one collection and
	// decision per job per interval while steady.
	ReconcileInterval string
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
	ScenarioSuspended     = "suspended"
	ScenarioRunning       = "running"
	ScenarioAutoscaler    = "autoscaler"
	ScenarioAutoscalerOff = "autoscaler-off"
)

// DefaultAutoscalerLoad is the jobs' synthetic load: 1,000 records/s
// offered to a chain source → map → sink whose subtasks process 2,000,
// 1,500 and 600 records/s. At parallelism 1 the sink holds the chain to
// 600/s (the source falls behind, its backlog reported), the map is busy
// 40 % of the time, the source 30 %: the autoscaler raises the sink to 3
// (busy 56 %) and leaves the rest.
const DefaultAutoscalerLoad = "rate=1000;capacity=2000,1500,600"

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

		AutoscalerDeployments:   10,
		AutoscalerWindow:        75 * time.Second,
		AutoscalerLoad:          DefaultAutoscalerLoad,
		AutoscalerMetricsWindow: "1 min",
		ReconcileInterval:       "15 s",
	}
}

// AutoscalerSmallConfig is the small autoscaler variant: 10 jobs with the
// autoscaler on, a 75 s window (under 3 minutes in all).
func AutoscalerSmallConfig() Config {
	c := SmallConfig()
	c.Name = "small"
	c.Scenarios = []string{ScenarioAutoscaler}
	return c
}

// AutoscalerConfig is issue 33's size: 100 jobs, the autoscaler on then
// off, 5 minutes measured each.
func AutoscalerConfig() Config {
	c := FullConfig()
	c.Scenarios = []string{ScenarioAutoscaler, ScenarioAutoscalerOff}
	return c
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
	c.AutoscalerDeployments = 100
	c.AutoscalerWindow = 5 * time.Minute
	c.AutoscalerMetricsWindow = "2 min"
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

// Environment variables of the autoscaler scenarios.
const (
	// FLINKOP_BENCH_AUTOSCALER=1 runs TestBenchAutoscaler (issue 33's
	// size) at all.
	EnvAutoscaler              = "FLINKOP_BENCH_AUTOSCALER"
	EnvAutoscalerDeployments   = "FLINKOP_BENCH_AUTOSCALER_DEPLOYMENTS" // N, autoscaler scenarios
	EnvAutoscalerWindow        = "FLINKOP_BENCH_AUTOSCALER_WINDOW"      // duration
	EnvAutoscalerLoad          = "FLINKOP_BENCH_AUTOSCALER_LOAD"        // synthload.Parse
	EnvAutoscalerMetricsWindow = "FLINKOP_BENCH_AUTOSCALER_METRICS_WINDOW"
	EnvReconcileInterval       = "FLINKOP_BENCH_RECONCILE_INTERVAL"
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
			case ScenarioSuspended, ScenarioRunning, ScenarioAutoscaler, ScenarioAutoscalerOff:
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
	num(EnvAutoscalerDeployments, &c.AutoscalerDeployments)
	dur(EnvAutoscalerWindow, &c.AutoscalerWindow)
	str(EnvAutoscalerLoad, &c.AutoscalerLoad)
	str(EnvAutoscalerMetricsWindow, &c.AutoscalerMetricsWindow)
	str(EnvReconcileInterval, &c.ReconcileInterval)
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
	if _, err := synthload.Parse(c.AutoscalerLoad); err != nil && slices.ContainsFunc(c.Scenarios, isAutoscaler) {
		errs = append(errs, EnvAutoscalerLoad+": "+err.Error())
	}
	if len(errs) > 0 {
		return c, fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return c, nil
}
