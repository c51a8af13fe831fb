# shellcheck shell=bash disable=SC2034 # the settings are used by the scripts that source this file
# Shared settings of e2e/kind/{up,test,down}.sh; sourced, not run. Every setting can be
# overridden from the environment (README.md lists them).

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"

# The kind cluster and where its state lives on this machine.
cluster_name="${KIND_CLUSTER_NAME:-flink-operator-e2e}"
cache_dir="${FLINKOP_CACHE_DIR:-${HOME}/.cache/flink-operator}"
state_dir="${FLINKOP_KIND_STATE_DIR:-${cache_dir}/kind/${cluster_name}}"
# The cluster's admin kubeconfig: its own file, so ~/.kube/config is never touched.
kubeconfig="${state_dir}/kubeconfig"
# Shared Flink storage: this host directory is mounted into the kind node twice (extraMounts):
# at the same path, so a Go scenario's directory under it is the same path on the host, on the node
# and (as a hostPath volume) in Flink pods; and at /tmp/flink-data, the hostPath of
# manifests/examples/application.yaml. Savepoint and checkpoint files written in pods are checked
# here, on the host.
data_dir="${FLINKOP_KIND_DATA_DIR:-${state_dir}/flink-data}"
node_data_dir="/tmp/flink-data"
# kind's name for the container of the cluster's (only) node.
node_container="${cluster_name}-control-plane"
# kind's node image; empty = the default of the installed kind version.
node_image="${FLINKOP_KIND_NODE_IMAGE:-}"

# The operator image built from this checkout. Not :latest, so that imagePullPolicy defaults to
# IfNotPresent and the image loaded into the node is used instead of a pull.
operator_image="${FLINKOP_KIND_IMAGE:-ghcr.io/flinkops/flink-operator:kind-e2e}"
operator_namespace="flink-operator"
operator_deployment="flink-operator"

# Official Flink images: base of the test-job images (Java 17: the test job is compiled for 17),
# and the one manifests/examples use. Pulled once and loaded into the node (no Docker Hub pull
# from inside the cluster, so no rate limit surprises).
example_flink_image="flink:2.3"
# Test-job images, one per pinned Flink version (e2e/flink/versions.txt): the official image
# with e2e/flink's CountingJob at /opt/flink/usrlib/testjob.jar.
testjob_repo="${FLINKOP_KIND_TESTJOB_REPO:-flinkops/flink-testjob}"

log() { printf '==> %s\n' "$*" >&2; }
die() { printf 'error: %s\n' "$*" >&2; exit 1; }

need() {
	local tool
	for tool in "$@"; do
		command -v "${tool}" >/dev/null 2>&1 || die "${tool} is not installed (see e2e/kind/README.md)"
	done
}

# kubectl against the kind cluster only.
k() { kubectl --kubeconfig "${kubeconfig}" "$@"; }

cluster_exists() { kind get clusters 2>/dev/null | grep -qx "${cluster_name}"; }

# Removes paths under the shared storage as root inside the node: Flink wrote them as uid 9999,
# and a non-root user of this machine cannot delete files in Flink's directories.
node_rm() {
	docker exec "${node_container}" rm -rf "$@"
}

# Empties a directory of the shared storage (same reason as node_rm).
node_clear() {
	docker exec "${node_container}" find "$1" -mindepth 1 -delete
}

# Pinned Flink versions, one "<version>" per line (e2e/flink/versions.txt).
pinned_versions() {
	grep -v '^[[:space:]]*#' "${repo_root}/e2e/flink/versions.txt" | awk 'NF { print $1 }'
}

# "1.20.5" -> "1.20"
minor_of() { printf '%s\n' "${1%.*}"; }

testjob_image() { printf '%s:%s\n' "${testjob_repo}" "$(minor_of "$1")"; }

# FLINKOP_E2E_FLINK_IMAGES for the Go scenarios: "1.20.5=flinkops/flink-testjob:1.20,...".
flink_images_env() {
	local v out=""
	while read -r v; do
		out+="${out:+,}${v}=$(testjob_image "${v}")"
	done < <(pinned_versions)
	printf '%s\n' "${out}"
}
