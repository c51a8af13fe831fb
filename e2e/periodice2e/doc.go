// Package periodice2e is the end-to-end acceptance test of issue 8
// (periodic, manual and legacy-mode savepoints), on the shared e2e
// framework's local provider (e2e/framework): a real control plane
// (e2e/localcluster), the node agent running the pods as real Flink
// JobManager and TaskManager JVMs (e2e/flink), and the operator binary
// running outside the cluster (--flink-endpoint=pod-ip), driven by kubectl.
// For Flink 2.3.0, a FlinkDeployment of the test job with a 20 s periodic
// savepoint interval, a savepoint history of 2 and dispose-on-delete runs:
// PERIODIC FlinkStateSnapshots complete one at a time, the history settles
// at 2 and the deleted ones' savepoint directories are gone; a
// savepointTriggerNonce gives exactly one MANUAL snapshot without a restart;
// then, with the operator stopped, the FlinkStateSnapshot CRD deleted and
// the operator restarted (legacy mode: the CRD-missing log line, a
// SnapshotResourcesDisabled Warning), a parallelism change upgrades the job
// through a savepoint recorded in status.jobStatus.savepointInfo; finally the
// CRD is reinstalled and the same operator process switches back to
// snapshot resources (it does not exit), so a FlinkStateSnapshot of the job
// completes again. With FLINKOP_E2E_PROVIDER=kind it skips: it stops and
// restarts the operator process.
//
// Run it with
//
//	FLINKOP_KUBE_BIN_DIR=$(hack/build-cluster-bins.sh) go test -count=1 -timeout 20m -v ./e2e/periodice2e/
//
// It prints the measured durations and snapshot counts.
package periodice2e
