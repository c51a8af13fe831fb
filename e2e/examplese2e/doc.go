// Package examplese2e applies every sample a user is told to try, unchanged,
// on the local cluster (real control plane, real Flink JVMs through the node
// agent, the operator outside the cluster) and waits for each to reach the
// state its file promises: upstream's samples and e2e data
// (pkg/upstreamtest/testdata) and manifests/examples. A file that cannot run
// here yet is listed in pending with the reason and the issue that enables
// it; TestEveryExampleIsCovered fails when a file is in neither list, so a
// new sample is never silently left out.
//
//	FLINKOP_KUBE_BIN_DIR=$(hack/build-cluster-bins.sh) go test -count=1 -timeout 25m -v ./e2e/examplese2e/
//
// Like upstream's Helm chart, the test gives each namespace a `flink`
// ServiceAccount (the samples' serviceAccount) and creates the samples'
// hostPath directories (/tmp/flink, /tmp/flink-data) on this one-node
// cluster.
package examplese2e
