#!/usr/bin/env bash
# Creates a kind cluster with the operator installed from this checkout:
#
#   1. a one-node kind cluster with a host directory mounted in (shared Flink storage);
#   2. the operator image built with docker from ./Dockerfile and loaded into the node;
#   3. the official Flink images and, per pinned Flink version, a test-job image (the official
#      image + e2e/flink's CountingJob), pulled or built and loaded into the node;
#   4. `kubectl apply -k manifests/ --server-side` (with the image above), then waits for the CRDs,
#      the operator rollout and the webhook's caBundle.
#
# Re-running it updates everything in place (rebuilds and reloads the images, re-applies the
# manifests, restarts the operator). Needs docker, kind, kubectl; Java 17 + Maven for the test-job
# jars (FLINKOP_KIND_TESTJOB=0 skips them). See README.md.
set -euo pipefail

# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

need docker kind kubectl
docker info >/dev/null 2>&1 || die "cannot reach a Docker engine (docker info failed)"

mkdir -p "${state_dir}" "${data_dir}"
# Flink runs as uid 9999 in its pods and must write savepoints and checkpoints here.
chmod 0777 "${data_dir}"

# 1. The cluster.
if cluster_exists; then
	log "kind cluster ${cluster_name} exists: reusing it"
	kind get kubeconfig --name "${cluster_name}" >"${kubeconfig}"
else
	log "creating kind cluster ${cluster_name}"
	config="${state_dir}/kind-config.yaml"
	cat >"${config}" <<EOF
kind: Cluster
apiVersion: kind.x-k8s.io/v1alpha4
nodes:
  - role: control-plane
    extraMounts:
      - hostPath: ${data_dir}
        containerPath: ${data_dir}
      - hostPath: ${data_dir}
        containerPath: ${node_data_dir}
EOF
	args=(create cluster --name "${cluster_name}" --config "${config}" --kubeconfig "${kubeconfig}" --wait 180s)
	if [[ -n "${node_image}" ]]; then
		args+=(--image "${node_image}")
	fi
	kind "${args[@]}"
fi
chmod 0600 "${kubeconfig}"

# 2. The operator image.
log "building ${operator_image}"
DOCKER_BUILDKIT=1 docker build -t "${operator_image}" "${repo_root}"
log "loading ${operator_image} into ${cluster_name}"
kind load docker-image --name "${cluster_name}" "${operator_image}"

# 3. Flink images.
flink_images=("${example_flink_image}")
while read -r version; do
	flink_images+=("flink:$(minor_of "${version}")-java17")
done < <(pinned_versions)
for image in "${flink_images[@]}"; do
	if ! docker image inspect "${image}" >/dev/null 2>&1; then
		log "pulling ${image}"
		docker pull "${image}"
	fi
	log "loading ${image} into ${cluster_name}"
	kind load docker-image --name "${cluster_name}" "${image}"
done

if [[ "${FLINKOP_KIND_TESTJOB:-1}" != "0" ]]; then
	need java mvn
	while read -r version; do
		# e2e/flink/build.sh prints the version's cache directory, holding testjob.jar.
		jar_dir="$("${repo_root}/e2e/flink/build.sh" "${version}" | tail -n 1)"
		[[ -f "${jar_dir}/testjob.jar" ]] || die "e2e/flink/build.sh ${version} left no testjob.jar in ${jar_dir}"
		image="$(testjob_image "${version}")"
		log "building ${image} (flink:$(minor_of "${version}")-java17 + testjob.jar)"
		docker build -t "${image}" -f - "${jar_dir}" <<EOF
FROM flink:$(minor_of "${version}")-java17
COPY --chown=flink:flink testjob.jar /opt/flink/usrlib/testjob.jar
EOF
		kind load docker-image --name "${cluster_name}" "${image}"
	done < <(pinned_versions)
fi

# 4. The operator: manifests/ as it is, with this build's image. kustomize only accepts a relative
# path to the base, so the throwaway overlay points back at manifests/ from a temp directory.
# Its operator configuration adds what the Go scenarios' session jobs need: their jars are served
# over http by the test process at the kind network's gateway, a private address, which
# upstream's artifact defaults (https only, no restricted hosts) refuse.
overlay="$(mktemp -d)"
trap 'rm -rf "${overlay}"' EXIT
image_name="${operator_image%:*}"
image_tag="${operator_image##*:}"
cp "${repo_root}/manifests/base/operator-config/config.yaml" "${overlay}/config.yaml"
cat >>"${overlay}/config.yaml" <<EOF
kubernetes.operator.user.artifacts.allowed-schemes: http,https
kubernetes.operator.user.artifacts.disallow-restricted-hosts: "false"
EOF
cat >"${overlay}/kustomization.yaml" <<EOF
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
  - $(realpath --relative-to="${overlay}" "${repo_root}/manifests")
images:
  - name: ghcr.io/flinkops/flink-operator
    newName: ${image_name}
    newTag: ${image_tag}
configMapGenerator:
  - name: flink-operator-config
    namespace: flink-operator
    behavior: replace
    files:
      - config.yaml
    options:
      disableNameSuffixHash: true
      labels:
        app.kubernetes.io/name: flink-operator
EOF
log "kubectl apply -k manifests/ --server-side (image ${operator_image})"
# --force-conflicts: this is a throwaway cluster, and the Go scenarios scale and patch the
# operator Deployment; re-running up.sh puts it back to what manifests/ says.
k apply --server-side --force-conflicts -k "${overlay}"

log "waiting for the CRDs"
k wait --for=condition=Established --timeout=60s \
	crd/flinkdeployments.flink.apache.org crd/flinksessionjobs.flink.apache.org crd/flinkstatesnapshots.flink.apache.org crd/flinkbluegreendeployments.flink.apache.org

# The same tag is rebuilt on every run: restart so the new image is used.
k -n "${operator_namespace}" rollout restart "deployment/${operator_deployment}"
log "waiting for the operator rollout"
k -n "${operator_namespace}" rollout status "deployment/${operator_deployment}" --timeout=180s

# In the self-managed certificate mode the operator patches its CA into the webhook
# configuration; until then every Flink resource is refused (failurePolicy Fail).
log "waiting for the webhook's caBundle"
for _ in $(seq 1 60); do
	ca="$(k get validatingwebhookconfiguration flink-operator -o jsonpath='{.webhooks[0].clientConfig.caBundle}' 2>/dev/null || true)"
	[[ -n "${ca}" ]] && break
	sleep 2
done
[[ -n "${ca}" ]] || die "the ValidatingWebhookConfiguration flink-operator has no caBundle after 120 s: kubectl --kubeconfig ${kubeconfig} -n ${operator_namespace} logs deployment/${operator_deployment}"

cat >&2 <<EOF

kind cluster ${cluster_name} is up with the operator from this checkout.

  export KUBECONFIG=${kubeconfig}
  kubectl -n ${operator_namespace} get pods
  kubectl apply -f manifests/examples/application.yaml

Flink storage: ${data_dir} on this machine is the same path on the node (and ${node_data_dir}
there, the hostPath of manifests/examples/application.yaml).
Next: e2e/kind/test.sh   (and e2e/kind/down.sh to delete the cluster)
EOF
