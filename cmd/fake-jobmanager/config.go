package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/flinkops/flink-operator/cmd/fake-jobmanager/synthload"
	"github.com/flinkops/flink-operator/pkg/flink"
	"github.com/flinkops/flink-operator/pkg/flink/fakejm"
)

// config is the parsed command line.
type config struct {
	listen    string
	readyFile string
	logReqs   bool
	jobCount  int      // --jobs N
	jobIDs    []string // --jobs id1,id2
	opts      fakejm.Options
	// load is the synthetic load of --load (or $FAKE_JOBMANAGER_LOAD);
	// nil: none.
	load     *synthload.Spec
	loadTick time.Duration
}

// parseFlags turns the command line into a config.
func parseFlags(args []string, stderr io.Writer) (config, error) {
	var (
		cfg      config
		version  string
		jobs     string
		load     string
		fs       = flag.NewFlagSet("fake-jobmanager", flag.ContinueOnError)
		defaults = fakejm.Options{}
	)
	fs.SetOutput(stderr)
	fs.StringVar(&cfg.listen, "listen", "127.0.0.1:8081", "address to serve on; port 0 picks a free port")
	fs.StringVar(&version, "flink-version", "1.20", `Flink version to emulate ("1.18", "v1_20", "2.0", ...)`)
	fs.StringVar(&jobs, "jobs", "", "jobs to pre-create as RUNNING: a count (\"3\") or comma-separated job ids")
	fs.DurationVar(&cfg.opts.StoreDuration, "store-duration", 5*time.Minute, "rest.async.store-duration: how long async results stay queryable")
	delay, err := envDuration(EnvSavepointDelay)
	if err != nil {
		return cfg, usageError{err}
	}
	fs.DurationVar(&cfg.opts.CompletionDelay, "savepoint-delay", delay, "time every async operation (savepoint, stop, checkpoint, disposal) takes; default $"+EnvSavepointDelay+" or 0")
	fs.IntVar(&cfg.opts.CompletionPolls, "savepoint-polls", 0, "status polls every async operation answers IN_PROGRESS to")
	fs.StringVar(&cfg.opts.SavepointDir, "savepoint-dir", "", "default savepoint directory (execution.checkpointing.savepoint-dir)")
	fs.StringVar(&cfg.opts.CheckpointDir, "checkpoint-dir", "", "write checkpoints under this directory")
	fs.DurationVar(&cfg.opts.JobStartDelay, "job-start-delay", 0, "time submitted jobs stay CREATED before RUNNING")
	fs.IntVar(&cfg.opts.TaskManagers, "taskmanagers", 1, "number of TaskManagers reported")
	fs.IntVar(&cfg.opts.SlotsPerTaskManager, "slots", 4, "slots per TaskManager")
	fs.BoolVar(&cfg.opts.DisableWebSubmit, "disable-web-submit", defaults.DisableWebSubmit, "serve no /jars endpoints (no flink-runtime-web)")
	fs.StringVar(&cfg.readyFile, "ready-file", "", "also write the startup JSON line to this file")
	fs.BoolVar(&cfg.logReqs, "log-requests", false, "log every request to stderr")
	fs.StringVar(&load, "load", os.Getenv(synthload.EnvVar), "steady synthetic load on every job, for the job autoscaler: \"rate=<records/s>;capacity=<per-subtask records/s of each vertex, source first>[;parallelism=N][;backlog=false]\" (a job graph of that chain; resource-requirements PUTs rescale it as Flink's adaptive scheduler would); default $"+synthload.EnvVar)
	fs.DurationVar(&cfg.loadTick, "load-tick", time.Second, "how often the synthetic load's metrics are updated")
	if err := fs.Parse(args); err != nil {
		return cfg, usageError{err}
	}
	if fs.NArg() > 0 {
		return cfg, usageError{fmt.Errorf("unexpected arguments: %v", fs.Args())}
	}
	v, err := flink.ParseVersion(version)
	if err != nil {
		return cfg, usageError{err}
	}
	if v.Before(flink.MinSupportedVersion) {
		return cfg, usageError{fmt.Errorf("--flink-version %s is older than %s", v, flink.MinSupportedVersion)}
	}
	cfg.opts.Version = v
	if err := cfg.parseJobs(jobs); err != nil {
		return cfg, usageError{err}
	}
	if strings.TrimSpace(load) != "" {
		sp, err := synthload.Parse(load)
		if err != nil {
			return cfg, usageError{err}
		}
		cfg.load = &sp
	}
	if cfg.loadTick <= 0 {
		return cfg, usageError{errors.New("--load-tick must be positive")}
	}
	return cfg, nil
}

// parseJobs accepts "", "N" or "id1,id2,...".
func (c *config) parseJobs(s string) error {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil
	}
	if n, err := strconv.Atoi(s); err == nil {
		if n < 0 || n > 100000 {
			return fmt.Errorf("--jobs %d out of range", n)
		}
		c.jobCount = n
		return nil
	}
	seen := map[string]bool{}
	for _, id := range strings.Split(s, ",") {
		id = strings.TrimSpace(id)
		if !flink.IsValidID(id) {
			return fmt.Errorf("--jobs: %q is neither a count nor a 32-character lowercase hex job id", id)
		}
		if seen[id] {
			return errors.New("--jobs: duplicate job id " + id)
		}
		seen[id] = true
		c.jobIDs = append(c.jobIDs, id)
	}
	return nil
}

// EnvSavepointDelay is the default of --savepoint-delay. A fake JobManager
// that the node agent starts as the Flink image would be (a FlinkDeployment's
// pod) gets no flags of its own; its pod template's env can set this, so an
// e2e test can keep a savepoint in flight for as long as it needs.
const EnvSavepointDelay = "FAKE_JOBMANAGER_SAVEPOINT_DELAY"

// envDuration reads a Go duration from the environment; unset or empty: 0.
func envDuration(name string) (time.Duration, error) {
	v := strings.TrimSpace(os.Getenv(name))
	if v == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return 0, fmt.Errorf("$%s: %w", name, err)
	}
	return d, nil
}
