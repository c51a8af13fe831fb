// Package deploymente2e is the end-to-end acceptance test of the
// FlinkDeployment controller (issue 7), on the shared e2e framework's local
// provider (e2e/framework): a real control plane (e2e/localcluster), the
// node agent running the pods as real Flink JobManager and TaskManager JVMs
// (e2e/flink), and the operator binary with all its controllers running
// outside the cluster (--flink-endpoint=pod-ip). Everything goes through
// kubectl as a user would: for every pinned Flink version, in its own
// namespace, a FlinkDeployment of the stateful test job (upgradeMode
// savepoint) is applied and runs; a parallelism change upgrades it through a
// stop-with-savepoint (an UPGRADE FlinkStateSnapshot whose files exist) and
// the new job restores its keyed state from it; a suspend removes the pods
// and a resume restores from the suspend savepoint; a delete removes the
// FlinkDeployment, its objects, its pods and their JVMs (the node agent's
// process records). Then upstream's examples/basic.yaml (image and jar
// swapped for the test ones) runs too. With FLINKOP_E2E_PROVIDER=kind it
// skips: the JVM checks need the node agent.
//
// Issue 18's self-healing, each on the newest pinned Flink line: a missing
// entry class surfaced in status.error and an event (TestFailureSurfaced);
// a job failing in a loop restarted from its latest checkpoint
// (TestHealthRestarts); an upgrade to a broken spec rolled back
// (TestRollbackToStableSpec); a JobManager Deployment deleted by someone
// else recreated, the job going on from its HA checkpoint
// (TestJobManagerDeploymentRecovered); and the ingress (TestIngress).
// In-place rescaling on real Flink is e2e/nativee2e's autoscaler step (both
// lines: the autoscaler's overrides applied in place, up and down, under
// the same job id); a user's own override change is unit-tested
// (pkg/controller/deployment TestInPlaceScaling).
//
// Run it with
//
//	FLINKOP_KUBE_BIN_DIR=$(hack/build-cluster-bins.sh) go test -count=1 -timeout 20m -v ./e2e/deploymente2e/
//
// It prints the measured durations (apply → RUNNING, upgrade, suspend,
// resume, delete) per version.
package deploymente2e
