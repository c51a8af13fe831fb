#!/usr/bin/env bash
# Deletes the kind cluster of up.sh and its state (kubeconfig, Flink storage).
#   FLINKOP_KIND_KEEP_DATA=1  keeps the state directory (savepoints, checkpoints) for a look.
#   FLINKOP_KIND_RMI=1        also removes the images up.sh built (operator and test-job images).
set -euo pipefail

# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

need kind
if cluster_exists; then
	if [[ "${FLINKOP_KIND_KEEP_DATA:-0}" != "1" ]] && command -v docker >/dev/null 2>&1; then
		# Flink's files belong to uid 9999: delete them as root inside the node while it exists.
		node_clear "${data_dir}" 2>/dev/null || true
	fi
	log "deleting kind cluster ${cluster_name}"
	kind delete cluster --name "${cluster_name}"
else
	log "no kind cluster ${cluster_name}"
fi

if [[ "${FLINKOP_KIND_KEEP_DATA:-0}" != "1" && -d "${state_dir}" ]]; then
	log "removing ${state_dir}"
	rm -rf "${state_dir}" || log "some files under ${state_dir} belong to Flink's uid 9999: remove them with sudo"
fi

if [[ "${FLINKOP_KIND_RMI:-0}" == "1" ]]; then
	need docker
	images=("${operator_image}")
	while read -r version; do
		images+=("$(testjob_image "${version}")")
	done < <(pinned_versions)
	for image in "${images[@]}"; do
		if docker image rm "${image}" >/dev/null 2>&1; then
			log "removed image ${image}"
		fi
	done
fi
