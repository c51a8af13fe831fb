#!/usr/bin/env bash
# Builds Helm (v4, helm.sh/helm/v4/cmd/helm) from the Go module proxy with `go install`, once per
# version, into a cache directory outside the repository, as hack/build-cluster-bins.sh and
# hack/build-yq.sh do. Never downloads a prebuilt binary. Helm is not a dependency of this module.
#   ${FLINKOP_CACHE_DIR:-$HOME/.cache/flink-operator}/tools/helm-<version>/helm
# The version is stamped into the binary as Helm's own release build does (`helm version`), so a
# cached build is recognised by what it reports. Concurrent runs are serialised with flock.
# Progress goes to stderr; the last line on stdout is the path of the helm binary.
# Used by the chart's tests (pkg/helmchart) to render helm/flink-operator.
#
# A cold build (module downloads included) takes a few minutes on 2 cores; see docs/install.md.
set -euo pipefail

version="${FLINKOP_HELM_VERSION:-v4.3.2}"
cache="${FLINKOP_CACHE_DIR:-${HOME}/.cache/flink-operator}"
dir="${cache}/tools/helm-${version}"

cached() {
  [[ -x "${dir}/helm" ]] && [[ "$("${dir}/helm" version --template '{{.Version}}' 2>/dev/null)" == "${version}" ]]
}

if cached; then
  echo "build-helm: cached helm ${version} in ${dir}" >&2
  echo "${dir}/helm"
  exit 0
fi
mkdir -p "${dir}"
if command -v flock >/dev/null; then
  exec 9>"${dir}/.lock"
  flock 9
fi
if ! cached; then
  start=${SECONDS}
  echo "build-helm: go install helm.sh/helm/v4/cmd/helm@${version} from the Go module proxy, once (a few minutes on 2 cores)" >&2
  tmp="$(mktemp -d "${dir}/.build.XXXXXX")"
  trap 'rm -rf "${tmp}"' EXIT
  # Outside any module (GOWORK=off, cwd in the temporary dir): go install pkg@version resolves
  # Helm's own go.mod. -mod=mod: Helm's module is used as published, without a vendor directory.
  (cd "${tmp}" && GOWORK=off CGO_ENABLED=0 GOBIN="${tmp}" GOFLAGS="-mod=mod -buildvcs=false" \
    go install -trimpath -ldflags "-s -w -X helm.sh/helm/v4/internal/version.version=${version} -X helm.sh/helm/v4/internal/version.gitTreeState=clean" \
    "helm.sh/helm/v4/cmd/helm@${version}")
  got="$("${tmp}/helm" version --template '{{.Version}}' 2>/dev/null || true)"
  if [[ "${got}" != "${version}" ]]; then
    echo "build-helm: the built helm reports version '${got}', want ${version}" >&2
    exit 1
  fi
  mv -f "${tmp}/helm" "${dir}/helm"
  echo "build-helm: built helm ${version} in $((SECONDS - start)) s" >&2
fi
echo "build-helm: helm ${version} in ${dir}" >&2
echo "${dir}/helm"
