// Package realflink holds the end-to-end acceptance test of the local
// Kubernetes setup with real Flink: a local control plane
// (e2e/localcluster) whose node agent (e2e/nodeagent) runs the pods that
// pkg/cluster builds for a FlinkDeployment as real Flink JVMs (e2e/flink),
// for every pinned Flink version. There is no operator in the loop: the test
// creates the objects as the FlinkDeployment controller would, and talks to
// the JobManager over REST at its pod IP, as the operator does with
// --flink-endpoint=pod-ip.
//
// Run it with
//
//	FLINKOP_KUBE_BIN_DIR=$(hack/build-cluster-bins.sh) go test -count=1 -timeout=30m -v ./e2e/realflink/
//
// (~3 minutes when the kube binaries, Maven artifacts and the agent build
// are cached).
package realflink
