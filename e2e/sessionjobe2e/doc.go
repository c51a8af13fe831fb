// Package sessionjobe2e is the end-to-end acceptance test of the
// FlinkSessionJob controller (issue 9), on the shared e2e framework: for
// every pinned Flink version, upstream's
// examples/basic-session-deployment-and-job.yaml — image and jars swapped
// for the test job's, served over http by the test, plus the Flink options
// a stateful upgrade needs — runs a session cluster with two jobs; a
// FlinkStateSnapshot with jobReference.kind FlinkSessionJob completes with
// its files on disk; a savepoint upgrade of one job (parallelism 2 → 1)
// stops it with a savepoint, resubmits it restored from it (Flink's own
// latest.restored, the keyed counter continues) and leaves the other job
// running untouched; deleting the session jobs cancels their jobs.
//
// Run it with
//
//	FLINKOP_KUBE_BIN_DIR=$(hack/build-cluster-bins.sh) go test -count=1 -timeout 20m -v ./e2e/sessionjobe2e/
package sessionjobe2e
