// Package nativee2e is the end-to-end test of native mode (issue 17) with
// the operator, on real Flink: the shared e2e framework's local provider
// (e2e/framework: a real control plane, the node agent running Flink's
// native JobManager and the TaskManager pods Flink's own resource manager
// creates as real JVMs, and the operator binary outside the cluster). One
// cluster and one operator serve every scenario, in sequence, in one
// namespace per Flink line, where the Flink ServiceAccount and Role of
// manifests/flink-serviceaccount are applied as a user would (kustomize):
//
//   - a FlinkDeployment whose ServiceAccount does not exist ends with
//     status.error and a Warning ServiceAccountError event within 30 s, and
//     creates nothing;
//   - upstream's examples/basic.yaml (mode unset, so native; the image and the
//     test job's jar swapped in) reaches RUNNING with TaskManager pods
//     created by Flink and owned by the JobManager Deployment; a
//     FlinkStateSnapshot savepoint of it COMPLETES with _metadata on disk;
//   - the counting test job (e2e/flink) with Kubernetes HA: a savepoint
//     upgrade and a last-state upgrade each restore its keyed counter (never
//     below what it had counted, no mismatch, one job on the JobManager);
//     the JobManager JVM killed (SIGKILL) recovers the job from a checkpoint;
//     suspend and resume; deletion removes every pod, the cluster's objects
//     and the HA ConfigMaps.
//
// Run it with
//
//	FLINKOP_KUBE_BIN_DIR=$(hack/build-cluster-bins.sh) go test -count=1 -timeout 30m -v ./e2e/nativee2e/
//
// FLINKOP_NATIVE_E2E_VERSIONS (comma-separated pinned versions, e.g.
// "1.20.5") restricts the Flink lines; by default every pinned line runs.
// make test runs the 1.20 line only: on 2.3.0 the counting job's
// Kubernetes-HA ConfigMaps are not found within a minute of RUNNING (the
// scenarios before that pass), which is still open.
// With FLINKOP_E2E_PROVIDER=kind it skips (the JVM checks need the node
// agent).
package nativee2e
