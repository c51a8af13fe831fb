#!/usr/bin/env bash
# Runs the end-to-end checks against the kind cluster of up.sh:
#
#   1. smoke: manifests/examples as a user applies them, with kubectl only: the application runs,
#      a savepoint and a checkpoint complete (their files appear in the shared storage), the
#      webhook refuses a snapshot of a job that does not exist, deleting the savepoint deletes its
#      files, deleting the FlinkDeployment removes its cluster;
#   2. the Go e2e scenarios (the same code as on the local control plane) with
#      FLINKOP_E2E_PROVIDER=kind: see README.md for the contract.
#
# Usage: e2e/kind/test.sh [go test packages...]
#   default packages: every e2e package whose tests use e2e/framework (the provider switch)
#   FLINKOP_KIND_SKIP_SMOKE=1  skip step 1;  FLINKOP_KIND_SKIP_GO=1  skip step 2.
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
	local i
	for i in $(seq 1 90); do
		[[ -z "$(k -n "${ns}" get pods -l app=example-deployment -o name)" ]] && break
		[[ ${i} -eq 90 ]] && die "pods of example-deployment still there 3 min after its deletion"
		sleep 2
	done
	k delete namespace "${ns}" --wait=true --timeout=180s
	log "smoke: passed"
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
if [[ "${FLINKOP_KIND_SKIP_GO:-0}" != "1" ]]; then
	go_scenarios "$@"
fi
log "e2e/kind/test.sh: all passed"
