// Command fake-jobmanager serves the fake Flink JobManager REST API of
// package fakejm on a real listener, so that end-to-end and scale tests
// can start many cheap JobManagers (hundreds fit on one machine) without a
// JVM.
//
// Usage:
//
//	fake-jobmanager --listen 127.0.0.1:0 --flink-version 1.20 --jobs 3
//
// On start it prints one JSON line to stdout, e.g.
//
//	{"url":"http://127.0.0.1:41234","flinkVersion":"1.20","jobs":["…"]}
//
// (and writes the same line to --ready-file if given), then serves until
// SIGTERM or SIGINT, when it shuts down gracefully.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "fake-jobmanager:", err)
		os.Exit(exitCode(err))
	}
}

// exitCode is 2 for usage errors (as the flag package does), else 1.
func exitCode(err error) int {
	var ue usageError
	if errors.As(err, &ue) {
		return 2
	}
	return 1
}

// usageError marks bad command-line input.
type usageError struct{ error }

func (u usageError) Unwrap() error { return u.error }
