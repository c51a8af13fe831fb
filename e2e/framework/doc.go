// Package framework is what the e2e scenarios share: one environment (a
// Kubernetes cluster, clients, kubectl, the operator, a host directory for
// checkpoints and savepoints) and the checks they make against Kubernetes
// and against Flink itself.
//
// The cluster comes from a provider, so the same scenario code runs on the
// local control plane (default: e2e/localcluster with the node agent and
// the operator as a local process) and on a kind cluster prepared by
// e2e/kind/up.sh (FLINKOP_E2E_PROVIDER=kind, FLINKOP_E2E_KUBECONFIG=<path>:
// the operator is the one installed by `kubectl apply -k manifests/`, and
// Flink's REST API is reached through the API server's service proxy).
package framework
