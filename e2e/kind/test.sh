#!/usr/bin/env bash
# Runs the end-to-end checks against the kind cluster of up.sh:
#
#   1. smoke: manifests/examples as a user applies them, with kubectl only: the application runs,
#      a savepoint and a checkpoint complete (their files appear in the shared storage), the
#      webhook refuses a snapshot of a job that does not exist, deleting the savepoint deletes its
#      files, deleting the FlinkDeployment removes its cluster;
#   2. native: upstream's examples/basic.yaml (no mode: native, as upstream) in a namespace of its
#      own with the Flink ServiceAccount of manifests/flink-serviceaccount: the job runs on
#      TaskManager pods Flink created (owned by the JobManager Deployment), deleting the
#      FlinkDeployment removes every pod;
#   3. the Go e2e scenarios (the same code as on the local control plane) with
#      FLINKOP_E2E_PROVIDER=kind: see README.md for the contract.
#
# Usage: e2e/kind/test.sh [go test packages...]
#   default packages: every e2e package whose tests use e2e/framework (the provider switch)
#   FLINKOP_KIND_SKIP_SMOKE=1  skip step 1;  FLINKOP_KIND_SKIP_NATIVE=1  skip step 2;
#   FLINKOP_KIND_SKIP_GO=1  skip step 3.
set -euo pipefail

# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

need docker kind kubectl
cluster_exists || die "no kind cluster ${cluster_name}: run e2e/kind/up.sh first"
[[ -f "${kubeconfig}" ]] || kind get kubeconfig --name "${cluster_name}" >"${kubeconfig}"

# wait_jsonpath <timeout> <resource> <jsonpath> <value> [kubectl args...]
wait_jsonpath() {
	local timeout="$1" resource="$2" path="$3" want="$4"
	shift 4
	k wait --for="jsonpath=${path}=${want}" --timeout="${timeout}" "${resource}" "$@"
}

# The host path of a file:///tmp/flink-data/... path written by a pod (the
# examples mount the node's /tmp/flink-data at the same path).
host_path() {
	local p="${1#file://}"
	p="${p#file:}"
	printf '%s%s\n' "${data_dir}" "${p#"${node_data_dir}"}"
}

smoke() {
	local ns="kind-smoke" examples="${repo_root}/manifests/examples"
	log "smoke: namespace ${ns}"
	k delete namespace "${ns}" --ignore-not-found --wait=true --timeout=180s
	k create namespace "${ns}"
	# A fresh directory tree for this run (the example writes to /tmp/flink-data/{savepoints,checkpoints}).
	node_rm "${node_data_dir}/savepoints" "${node_data_dir}/checkpoints"

	log "smoke: application.yaml"
	k -n "${ns}" apply -f "${examples}/application.yaml"
	wait_jsonpath 6m flinkdeployment/example-deployment '{.status.jobStatus.state}' RUNNING -n "${ns}"

	log "smoke: savepoint.yaml"
	k -n "${ns}" apply -f "${examples}/savepoint.yaml"
	wait_jsonpath 5m flinkstatesnapshot/example-savepoint '{.status.state}' COMPLETED -n "${ns}"
	local sp
	sp="$(k -n "${ns}" get flinkstatesnapshot example-savepoint -o jsonpath='{.status.path}')"
	[[ -f "$(host_path "${sp}")/_metadata" ]] || die "savepoint ${sp}: no _metadata at $(host_path "${sp}")"
	log "smoke: savepoint at ${sp}"

	log "smoke: checkpoint.yaml"
	k -n "${ns}" apply -f "${examples}/checkpoint.yaml"
	wait_jsonpath 5m flinkstatesnapshot/example-checkpoint '{.status.state}' COMPLETED -n "${ns}"
	k -n "${ns}" get flinksnp

	log "smoke: the webhook refuses a snapshot of a job that does not exist"
	local out
	if out="$(k -n "${ns}" create -f - 2>&1 <<EOF
apiVersion: flink.apache.org/v1beta1
kind: FlinkStateSnapshot
metadata:
  name: no-such-job
spec:
  jobReference:
    kind: FlinkDeployment
    name: no-such-job
  savepoint: {}
EOF
	)"; then
		die "a snapshot of a missing job was admitted: ${out}"
	fi
	grep -q 'denied the request' <<<"${out}" || die "refused, but not by the webhook: ${out}"
	log "smoke: refused: ${out}"

	log "smoke: deleting the savepoint disposes its files"
	k -n "${ns}" delete flinkstatesnapshot example-savepoint --timeout=3m
	[[ ! -e "$(host_path "${sp}")" ]] || die "savepoint files still at $(host_path "${sp}") after the delete"

	log "smoke: deleting the FlinkDeployment removes its cluster"
	k -n "${ns}" delete flinkdeployment example-deployment --timeout=5m
	wait_pods_gone "${ns}" app=example-deployment example-deployment
	k delete namespace "${ns}" --wait=true --timeout=180s
	log "smoke: passed"
}

# wait_pods_gone <namespace> <selector> <what>: up to 3 min.
wait_pods_gone() {
	local ns="$1" selector="$2" what="$3" i
	for i in $(seq 1 90); do
		[[ -z "$(k -n "${ns}" get pods -l "${selector}" -o name)" ]] && return 0
		[[ ${i} -eq 90 ]] && die "pods of ${what} still there 3 min after its deletion"
		sleep 2
	done
}

# native: a native-mode FlinkDeployment as most of upstream's users write one. Flink's own
# Kubernetes resource manager creates the TaskManager pods, as the ServiceAccount flink, whose
# Role and RoleBinding manifests/flink-serviceaccount grants in the job namespace (up.sh applied
# them in namespace default with manifests/; here they go to a namespace of their own, the way
# that directory's kustomization.yaml tells users to).
native() {
	local ns="kind-native" name="basic-example"
	log "native: namespace ${ns} with the Flink ServiceAccount of manifests/flink-serviceaccount"
	k delete namespace "${ns}" --ignore-not-found --wait=true --timeout=180s
	k create namespace "${ns}"
	local sa_dir
	sa_dir="$(mktemp -d)"
	# kustomize takes relative paths only; the namespace transformer also sets the RoleBinding
	# subject's namespace.
	cat >"${sa_dir}/kustomization.yaml" <<EOF
namespace: ${ns}
resources:
  - $(realpath --relative-to="${sa_dir}" "${repo_root}/manifests/flink-serviceaccount")
EOF
	k apply --server-side -k "${sa_dir}"
	rm -rf "${sa_dir}"
	k -n "${ns}" auth can-i create pods --as="system:serviceaccount:${ns}:flink" >/dev/null ||
		die "the ServiceAccount ${ns}/flink may not create pods after manifests/flink-serviceaccount was applied"

	# Upstream's sample as it is, but for the image up.sh loaded (flink:2.3, not flink:2.2).
	log "native: upstream's examples/basic.yaml (spec.mode unset: native, as upstream) on ${example_flink_image}"
	sed -e "s|image: flink:2.2|image: ${example_flink_image}|" -e 's|flinkVersion: v2_2|flinkVersion: v2_3|' \
		"${repo_root}/pkg/upstreamtest/testdata/examples/basic.yaml" | k -n "${ns}" apply -f -
	wait_jsonpath 6m "flinkdeployment/${name}" '{.status.jobStatus.state}' RUNNING -n "${ns}"

	# The TaskManager pods are Flink's (labels of Flink's KubernetesUtils, owner the JobManager
	# Deployment <name>, ServiceAccount flink), and the operator made no TaskManager Deployment.
	local tm_selector="app=${name},component=taskmanager,type=flink-native-kubernetes" tms="" i
	for i in $(seq 1 60); do
		tms="$(k -n "${ns}" get pods -l "${tm_selector}" -o jsonpath='{range .items[*]}{.metadata.name} {.metadata.ownerReferences[0].kind}/{.metadata.ownerReferences[0].name} {.spec.serviceAccountName} {.status.phase}{"\n"}{end}')"
		grep -q ' Running$' <<<"${tms}" && break
		[[ ${i} -eq 60 ]] && die "no running TaskManager pod of ${name} created by Flink after 2 min: ${tms:-none}"
		sleep 2
	done
	log "native: TaskManager pods (name owner serviceAccount phase): ${tms//$'\n'/; }"
	if grep -v -q " Deployment/${name} flink " <<<"${tms}"; then
		die "TaskManager pods not owned by Deployment ${name} or not running as ServiceAccount flink: ${tms}"
	fi
	if k -n "${ns}" get deployment "${name}-taskmanager" >/dev/null 2>&1; then
		die "native mode: the operator created a TaskManager Deployment ${name}-taskmanager"
	fi

	log "native: deleting the FlinkDeployment removes every pod"
	k -n "${ns}" delete flinkdeployment "${name}" --timeout=5m
	wait_pods_gone "${ns}" "app=${name}" "${name}"
	k delete namespace "${ns}" --wait=true --timeout=180s
	log "native: passed"
}

go_scenarios() {
	need go
	# Only the scenarios on e2e/framework choose their cluster from FLINKOP_E2E_PROVIDER; the others
	# would quietly start a local control plane instead, which is not what this script promises.
	local packages=("$@")
	if [[ ${#packages[@]} -eq 0 ]]; then
		local dir
		while read -r dir; do
			packages+=("./${dir}/")
		done < <(cd "${repo_root}" && grep -l --include='*_test.go' -r 'flink-operator/e2e/framework"' e2e | xargs -r -n1 dirname | sort -u)
	fi
	if [[ ${#packages[@]} -eq 0 ]]; then
		die "no e2e package uses e2e/framework (FLINKOP_E2E_PROVIDER) yet (README.md, \"Go scenarios\"); FLINKOP_KIND_SKIP_GO=1 runs the smoke test only"
	fi
	# Pods and the in-cluster operator reach the test process (e.g. the session jobs' jar server)
	# at the kind network's gateway.
	local host_address="${FLINKOP_E2E_HOST_ADDRESS:-}"
	if [[ -z "${host_address}" ]]; then
		host_address="$(docker network inspect kind -f '{{range .IPAM.Config}}{{if .Gateway}}{{.Gateway}} {{end}}{{end}}' | awk '{print $1}')"
	fi
	log "go test ${packages[*]} against kind cluster ${cluster_name} (test host at ${host_address})"
	(
		cd "${repo_root}"
		FLINKOP_E2E_PROVIDER=kind \
			FLINKOP_E2E_HOST_ADDRESS="${host_address}" \
			FLINKOP_E2E_KUBECONFIG="${kubeconfig}" \
			FLINKOP_E2E_OPERATOR_NAMESPACE="${operator_namespace}" \
			FLINKOP_E2E_OPERATOR_DEPLOYMENT="${operator_deployment}" \
			FLINKOP_E2E_FLINK_IMAGES="$(flink_images_env)" \
			FLINKOP_E2E_DATA_DIR="${data_dir}" \
			go test -p 1 -count=1 -timeout 60m -v "${packages[@]}"
	)
}

if [[ "${FLINKOP_KIND_SKIP_SMOKE:-0}" != "1" ]]; then
	smoke
fi
if [[ "${FLINKOP_KIND_SKIP_NATIVE:-0}" != "1" ]]; then
	native
fi
if [[ "${FLINKOP_KIND_SKIP_GO:-0}" != "1" ]]; then
	go_scenarios "$@"
fi
log "e2e/kind/test.sh: all passed"
