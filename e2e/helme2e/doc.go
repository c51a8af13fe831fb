// Package helme2e installs the operator with its Helm chart (helm/flink-operator) on the local
// cluster, as upstream's users install theirs (issue 34): the operator runs as a pod of the node
// agent (the chart's image, ghcr.io/flinkops/flink-operator, runs as the locally built binary, with
// the pod's ServiceAccount, ConfigMap volume, probes and logs), the API server calls its webhook
// through the webhook Service (localcluster's egress proxy), and it reaches Flink through the
// <name>-rest Services (the pod's hosts file), with none of the local-process shortcuts the other
// suites take (--flink-endpoint=pod-ip, the operator user's kubeconfig).
//
// One cluster, in order:
//
//   - helm install with the chart's defaults (upstream's values): the operator becomes Ready,
//     leads, its webhook rejects a snapshot of a job that does not exist, and a FlinkDeployment
//     runs and takes a savepoint;
//   - helm upgrade changing a value rolls the operator pod; the job keeps running (same
//     JobManager pod, same job id) and the new pod takes the next savepoint;
//   - helm uninstall leaves no object of the chart's, nor the webhook certificate the operator
//     created, and keeps the CRDs (as Helm does) and the job's resources;
//   - helm install with a values file setting watchNamespaces, replicas: 2, webhook.create: false
//     and defaultConfiguration: both replicas Ready, one leads; a job in the watched namespace
//     runs, one in another namespace is left alone;
//   - dynamic configuration (upstream's test_dynamic_config.sh): the watched namespaces edited in
//     the operator's ConfigMap reach the running operator within its check interval, without a
//     restart, and the job of the newly watched namespace runs;
//   - operator HA (upstream's test_flink_operator_ha.sh): the leader pod is deleted while a
//     savepoint is in flight; the other replica takes the Lease within the lease duration and
//     completes the savepoint, which Flink took exactly once.
//
// The Flink clusters are fake JobManagers (cmd/fake-jobmanager, run by the node agent): what is
// tested is the install path, and real Flink under the operator is covered by the other suites.
//
// Run it with (Helm is built from the Go module proxy into the cache by hack/build-helm.sh)
//
//	FLINKOP_KUBE_BIN_DIR=$(hack/build-cluster-bins.sh) go test -count=1 -timeout 20m -v ./e2e/helme2e/
package helme2e
