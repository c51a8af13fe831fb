// Package snapshote2e runs the FlinkStateSnapshot controller end to end, on
// the shared e2e framework's local provider (e2e/framework): a real control
// plane, the node agent running real Flink JobManager and TaskManager JVMs,
// and the operator binary running outside the cluster
// (--flink-endpoint=pod-ip). The Flink cluster is created by hand from
// pkg/cluster's builders, so only the snapshot controller runs
// (--controllers=flinkstatesnapshot). The test starts the operator itself
// (framework.Options.NoOperator), stops it between steps and, with the
// operator's fault-injection build (go build -tags faultinject,
// framework.Env.FaultInjectOperatorBinary) and
// FLINKOP_TEST_FAULT=exit-after-snapshot-intent, kills it right after a
// snapshot's IN_PROGRESS write to check that a restarted operator completes
// that snapshot with exactly one savepoint. With FLINKOP_E2E_PROVIDER=kind it
// skips.
//
// Run it with
//
//	FLINKOP_KUBE_BIN_DIR=$(hack/build-cluster-bins.sh) go test -count=1 -timeout 25m -v ./e2e/snapshote2e/
package snapshote2e
