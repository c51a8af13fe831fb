// Package flink is a typed client for the Apache Flink JobManager REST API
// (the "dispatcher" API, versions 1.15 to 2.x).
//
// The client exists so that the operator never hand-builds JSON for Flink:
// Flink's REST API spells the same idea differently from endpoint to endpoint
// (target-directory on /savepoints but targetDirectory on /stop,
// failure-cause for savepoints but failureCause for checkpoints), and Flink
// up to 1.19 rejects any request field it does not know with HTTP 400. A
// Client is therefore built for one Flink Version and only ever sends the
// fields that version accepts, while it decodes responses leniently because
// Flink adds response fields in every release.
//
// Every call takes a context and is additionally bounded by a per-call
// timeout. Failures are returned as *Error values whose Kind tells callers
// what to do next (retry, treat as gone, give up); use IsNotFound,
// IsRetryable and friends, which see through wrapping.
//
// Asynchronous operations (savepoints, stop-with-savepoint, checkpoints,
// savepoint disposal) are triggered with a caller-chosen trigger id so that a
// retried trigger never starts a second operation, and are polled into an
// AsyncResult that distinguishes pending, succeeded and failed.
//
// The package deliberately knows nothing of Kubernetes; it only needs a base
// URL and, optionally, an *http.Client.
package flink
