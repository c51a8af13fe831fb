package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/flinkops/flink-operator/cmd/fake-jobmanager/synthload"
	"github.com/flinkops/flink-operator/pkg/flink/fakejm"
)

// shutdownGrace bounds how long in-flight requests may take at shutdown.
const shutdownGrace = 10 * time.Second

// readyLine is printed once the fake accepts connections.
type readyLine struct {
	URL          string   `json:"url"`
	FlinkVersion string   `json:"flinkVersion"`
	Jobs         []string `json:"jobs"`
}

// run serves until ctx ends, then shuts down gracefully.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cfg, err := parseFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return nil // usage was printed
	}
	if err != nil {
		return err
	}
	logger := log.New(stderr, "fake-jobmanager: ", log.LstdFlags|log.Lmicroseconds)
	if cfg.logReqs {
		cfg.opts.Logf = logger.Printf
	}
	jm := fakejm.NewUnstarted(cfg.opts)
	jobs, err := addJobs(jm, cfg)
	if err != nil {
		return err
	}

	if cfg.load != nil {
		// One step before the first request can read metrics.
		d := synthload.New(jm, *cfg.load)
		if err := d.Step(time.Now()); err != nil {
			logger.Printf("synthetic load: %v", err)
		}
		go d.Run(ctx, cfg.loadTick)
		logger.Printf("synthetic load %s", cfg.load)
	}

	ln, err := net.Listen("tcp", cfg.listen)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: jm, ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()

	ready := readyLine{URL: "http://" + ln.Addr().String(), FlinkVersion: cfg.opts.Version.String(), Jobs: jobs}
	line, _ := json.Marshal(ready)
	// The ready file first: whoever reads stdout may look for it next.
	if cfg.readyFile != "" {
		if err := os.WriteFile(cfg.readyFile, append(line, '\n'), 0o644); err != nil {
			_ = srv.Close()
			return err
		}
	}
	if _, err := fmt.Fprintf(stdout, "%s\n", line); err != nil {
		_ = srv.Close()
		return err
	}
	logger.Printf("serving Flink %s REST API on %s with %d jobs", ready.FlinkVersion, ready.URL, len(jobs))

	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	logger.Printf("shutting down")
	shutCtx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	if err := srv.Shutdown(shutCtx); err != nil {
		_ = srv.Close()
		return fmt.Errorf("shutdown: %w", err)
	}
	if err := <-served; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// addJobs pre-creates the RUNNING jobs asked for with --jobs.
func addJobs(jm *fakejm.Server, cfg config) ([]string, error) {
	jobs := []string{}
	for i := 0; i < cfg.jobCount; i++ {
		id, err := jm.AddJob(fakejm.JobSpec{Name: fmt.Sprintf("fake-job-%d", i+1)})
		if err != nil {
			return nil, err
		}
		jobs = append(jobs, id)
	}
	for _, want := range cfg.jobIDs {
		id, err := jm.AddJob(fakejm.JobSpec{ID: want})
		if err != nil {
			return nil, err
		}
		jobs = append(jobs, id)
	}
	return jobs, nil
}
