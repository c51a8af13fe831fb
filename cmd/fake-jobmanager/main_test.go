package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/flinkops/flink-operator/pkg/flink"
)

// TestMain lets the test binary act as the real command, so the SIGTERM
// test exercises main() itself in a child process.
func TestMain(m *testing.M) {
	if os.Getenv("FAKE_JOBMANAGER_RUN_MAIN") == "1" {
		os.Args = append([]string{"fake-jobmanager"}, strings.Fields(os.Getenv("FAKE_JOBMANAGER_ARGS"))...)
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func readReady(t *testing.T, r io.Reader) readyLine {
	t.Helper()
	line, err := bufio.NewReader(r).ReadString('\n')
	if err != nil {
		t.Fatalf("no ready line: %v", err)
	}
	var rl readyLine
	if err := json.Unmarshal([]byte(line), &rl); err != nil {
		t.Fatalf("ready line %q: %v", line, err)
	}
	return rl
}

func TestRunServesUntilContextEnds(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pr, pw := io.Pipe()
	readyFile := filepath.Join(t.TempDir(), "ready.json")
	spDir := t.TempDir()
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"--listen", "127.0.0.1:0", "--flink-version", "v1_18", "--jobs", "3",
			"--savepoint-dir", spDir, "--savepoint-polls", "1", "--ready-file", readyFile}, pw, io.Discard)
		pw.Close()
	}()
	rl := readReady(t, pr)
	go func() { _, _ = io.Copy(io.Discard, pr) }()
	if rl.FlinkVersion != "1.18" || len(rl.Jobs) != 3 || !strings.HasPrefix(rl.URL, "http://127.0.0.1:") {
		t.Fatalf("ready line %+v", rl)
	}
	if b, err := os.ReadFile(readyFile); err != nil || !strings.Contains(string(b), rl.URL) {
		t.Errorf("ready file: %q %v", b, err)
	}

	c, err := flink.New(flink.Config{BaseURL: rl.URL, Version: flink.V1_18})
	if err != nil {
		t.Fatal(err)
	}
	jobs, err := c.JobsOverview(ctx)
	if err != nil || len(jobs) != 3 || jobs[0].State != flink.JobRunning {
		t.Fatalf("jobs = %+v, %v", jobs, err)
	}
	trig, err := c.TriggerSavepoint(ctx, rl.Jobs[0], flink.SavepointRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if r, err := c.SavepointStatus(ctx, rl.Jobs[0], trig); err != nil || !r.Pending() {
		t.Fatalf("first poll %+v %v, want pending (--savepoint-polls 1)", r, err)
	}
	if r, err := c.SavepointStatus(ctx, rl.Jobs[0], trig); err != nil || !r.Succeeded() || !strings.HasPrefix(r.Value, "file:"+spDir) {
		t.Fatalf("second poll %+v %v", r, err)
	}

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("run: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("run did not return after the context ended")
	}
	if _, err := c.Config(context.Background()); !flink.IsRetryable(err) {
		t.Errorf("server still answering after shutdown: %v", err)
	}
}

func TestParseFlags(t *testing.T) {
	ids := "0123456789abcdef0123456789abcdef,fedcba9876543210fedcba9876543210"
	cfg, err := parseFlags([]string{"--jobs", ids, "--flink-version", "2.0", "--store-duration", "1m", "--savepoint-delay", "2s"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.jobIDs) != 2 || cfg.jobCount != 0 || cfg.opts.Version != flink.V2_0 ||
		cfg.opts.StoreDuration != time.Minute || cfg.opts.CompletionDelay != 2*time.Second || cfg.listen != "127.0.0.1:8081" {
		t.Errorf("cfg = %+v", cfg)
	}
	for _, bad := range [][]string{
		{"--flink-version", "banana"},
		{"--flink-version", "1.14"},
		{"--jobs", "job-1"},
		{"--jobs", "-1"},
		{"--jobs", "0123456789abcdef0123456789abcdef,0123456789abcdef0123456789abcdef"},
		{"--no-such-flag"},
		{"extra"},
	} {
		_, err := parseFlags(bad, io.Discard)
		if _, ok := err.(usageError); !ok {
			t.Errorf("%v: err = %v, want a usage error", bad, err)
		}
	}
	if err := run(context.Background(), []string{"-h"}, io.Discard, io.Discard); err != nil {
		t.Errorf("-h: %v", err)
	}
}

func TestSIGTERMShutsDownGracefully(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "FAKE_JOBMANAGER_RUN_MAIN=1",
		"FAKE_JOBMANAGER_ARGS=--listen 127.0.0.1:0 --jobs 1 --flink-version 1.20")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill() }()
	rl := readReady(t, stdout)
	c, _ := flink.New(flink.Config{BaseURL: rl.URL, Version: flink.V1_20})
	if _, err := c.Overview(context.Background()); err != nil {
		t.Fatalf("child not serving: %v", err)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	select {
	case err := <-waited:
		if err != nil {
			t.Fatalf("exit after SIGTERM: %v; stderr: %s", err, stderr.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no exit within 10s of SIGTERM")
	}
	if !strings.Contains(stderr.String(), "shutting down") {
		t.Errorf("stderr %q lacks the shutdown log", stderr.String())
	}
}

// --load (or $FAKE_JOBMANAGER_LOAD) serves a synthetic load: the jobs'
// graph is the load's chain, with metrics.
func TestLoadFlag(t *testing.T) {
	t.Setenv("FAKE_JOBMANAGER_LOAD", "rate=1000;capacity=2000,600")
	cfg, err := parseFlags(nil, io.Discard)
	if err != nil || cfg.load == nil || cfg.load.String() != "rate=1000;capacity=2000,600" {
		t.Fatalf("from the environment: %+v, %v", cfg.load, err)
	}
	if _, err := parseFlags([]string{"--load", "rate=x"}, io.Discard); err == nil {
		t.Error("a bad --load was accepted")
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"--listen", "127.0.0.1:0", "--jobs", "1", "--load", "rate=1000;capacity=2000,1500,600", "--load-tick", "100ms"}, pw, io.Discard)
		pw.Close()
	}()
	rl := readReady(t, pr)
	go func() { _, _ = io.Copy(io.Discard, pr) }()
	c, _ := flink.New(flink.Config{BaseURL: rl.URL, Version: flink.V1_20})
	d, err := c.Job(ctx, rl.Jobs[0])
	if err != nil || len(d.Vertices) != 3 || d.Vertices[2].Name != "Sink: synthetic" {
		t.Fatalf("job %+v, %v", d, err)
	}
	m, err := c.VertexMetrics(ctx, rl.Jobs[0], d.Vertices[2].ID, []string{"busyTimeMsPerSecond"}, flink.AggMax)
	if err != nil || len(m) != 1 || m[0].Max != 1000 {
		t.Errorf("the sink's busy time: %+v, %v; want 1000 (overloaded)", m, err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// $FAKE_JOBMANAGER_SAVEPOINT_DELAY is --savepoint-delay's default (a pod's
// env reaches a fake JobManager started as the Flink image); the flag wins,
// and a value that is no duration is a usage error.
func TestSavepointDelayFromEnv(t *testing.T) {
	t.Setenv(EnvSavepointDelay, "15s")
	cfg, err := parseFlags(nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.opts.CompletionDelay != 15*time.Second {
		t.Errorf("from the env: delay %s, want 15s", cfg.opts.CompletionDelay)
	}
	cfg, err = parseFlags([]string{"--savepoint-delay=2s"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.opts.CompletionDelay != 2*time.Second {
		t.Errorf("flag and env: delay %s, want the flag's 2s", cfg.opts.CompletionDelay)
	}
	t.Setenv(EnvSavepointDelay, "soon")
	if _, err := parseFlags(nil, io.Discard); err == nil || !strings.Contains(err.Error(), EnvSavepointDelay) {
		t.Errorf("bad env value: err %v, want one naming %s", err, EnvSavepointDelay)
	}
}
