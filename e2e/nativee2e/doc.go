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
//     and the HA ConfigMaps (Flink 1.x labels them
//     configmap-type=high-availability, Flink 2 does not:
//     cluster.IsHAConfigMap);
//   - a job that failed for good with Kubernetes HA, then a fixed spec
//     (stateless upgrade): the fixed job runs in the new cluster, even
//     with the failed job's (and on Flink 2.3 its application's) result
//     left dirty in Flink's result stores, as a JobManager stopped during
//     the job's cleanup leaves them (a CI run's savepoint upgrade on 2.3
//     whose new job failed at once);
//   - a native session cluster (no job) runs two FlinkSessionJobs of the
//     test job (its jar served over HTTP) on a TaskManager pod Flink
//     creates; meanwhile a FlinkDeployment whose ServiceAccount exists but
//     may not create pods (a Role without pods create) ends with
//     status.error and a Warning ServiceAccountError event naming the
//     missing permission within 30 s, creating nothing, while the second
//     session job, applied with it, reaches RUNNING; deleting the session
//     jobs cancels their jobs, deleting the cluster removes every pod;
//   - the job autoscaler (autoscaler_test.go): the test job with its load
//     stage (--load-file) on the adaptive scheduler; its load raised while
//     it runs, the stage's parallelism goes up in place (ScalingReport,
//     SpecChanged, Scaling; the same job id), the load lowered, it comes
//     down after scale-down.interval; the keyed counter goes on with no
//     mismatch and no snapshot stops the job (~4 min per line); on the last
//     line the operator making the scale-up decision is the fault-injection
//     build killed (SIGKILL) right after recording it, and the next one
//     applies it exactly once;
//   - an ended application job never runs again when its JobManager
//     restarts (the last line only: the guard is the same on every line);
//   - a FlinkBlueGreenDeployment (bluegreen_test.go, the last line only):
//     ACTIVE_BLUE with its Ingress served by the local cluster, an
//     operator option patched into blue in place, a change that needs
//     state through SAVEPOINTING_BLUE and TRANSITIONING_TO_GREEN with the
//     operator killed (SIGKILL) and restarted there, ending ACTIVE_GREEN
//     from the transition savepoint with the keyed counter continued and
//     blue deleted; a change to an image the node cannot run aborted after
//     the grace period (green untouched, the new blue suspended, a
//     Warning); fixed and stateless, back to blue (~2 min);
//   - taking over from upstream's operator (the 1.20 line, the one
//     upstream's recording ran; takeover_test.go): the objects upstream's
//     operator 1.15.0 left for a running native application, a running
//     standalone application, a session cluster with a FlinkSessionJob and
//     a suspended application, recreated as upstream left them while this
//     operator is stopped, are taken over with no restart, no upgrade and
//     no error, a new savepoint of each running job completes, and the
//     suspended one resumes from upstream's savepoint with its keyed state.
//
// Run it with
//
//	FLINKOP_KUBE_BIN_DIR=$(hack/build-cluster-bins.sh) go test -count=1 -timeout 30m -v ./e2e/nativee2e/
//
// FLINKOP_NATIVE_E2E_VERSIONS (comma-separated pinned versions, e.g.
// "1.20.5") restricts the Flink lines; by default every pinned line runs,
// as make test does (Makefile NATIVE_E2E_VERSIONS): measured on 2 cores,
// 3 min 52 s for 1.20.5 and 3 min 31 s for 2.3.0, 7 min 28 s with the
// cluster's start.
// With FLINKOP_E2E_PROVIDER=kind it skips (the JVM checks need the node
// agent).
package nativee2e
