// Package fakejm is an in-process fake Flink JobManager REST server for
// tests, and the engine of cmd/fake-jobmanager.
//
// It exists so that the operator and the flink client can be tested
// against Flink's real REST semantics without a JVM: version-specific
// request validation (Flink up to 1.19 answers unknown request fields with
// 400), idempotent async operations keyed by triggerId, results that are
// forgotten after rest.async.store-duration or a JobManager restart,
// savepoints that exist on disk, a job state machine, and fault injection.
//
// Responses are built independently of package flink's types on purpose:
// if the client misspells a field, tests against the fake must fail, not
// agree with it. The fake's own tests check its answers against Flink's
// published OpenAPI specs.
//
// Typical use:
//
//	jm := fakejm.New(fakejm.Options{Version: flink.V1_18})
//	defer jm.Close()
//	jobID := jm.AddJob(fakejm.JobSpec{})
//	c, _ := flink.New(flink.Config{BaseURL: jm.URL(), Version: flink.V1_18})
package fakejm
