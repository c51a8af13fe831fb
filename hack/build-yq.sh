#!/usr/bin/env bash
# Builds mikefarah's yq (v4; upstream's e2e-tests/*.sh read resources with it) from the Go module
# proxy with `go install`, once per version, into a cache directory outside the repository, as
# hack/build-cluster-bins.sh does for the control plane. yq is not a dependency of this module.
#   ${FLINKOP_CACHE_DIR:-$HOME/.cache/flink-operator}/tools/yq-<version>/yq
# Progress goes to stderr; the last line on stdout is the directory holding yq.
# Used by e2e/upstreame2e (make e2e-upstream).
set -euo pipefail

version="${FLINKOP_YQ_VERSION:-v4.54.3}"
cache="${FLINKOP_CACHE_DIR:-${HOME}/.cache/flink-operator}"
dir="${cache}/tools/yq-${version}"

cached() { [[ -x "${dir}/yq" ]] && "${dir}/yq" --version 2>/dev/null | grep -q "version ${version}\$"; }

if cached; then
  echo "build-yq: cached yq ${version} in ${dir}" >&2
  echo "${dir}"
  exit 0
fi
mkdir -p "${dir}"
if command -v flock >/dev/null; then
  exec 9>"${dir}/.lock"
  flock 9
fi
if ! cached; then
  echo "build-yq: go install github.com/mikefarah/yq/v4@${version} (~30 s)" >&2
  tmp="$(mktemp -d "${dir}/.build.XXXXXX")"
  trap 'rm -rf "${tmp}"' EXIT
  # Outside any module: go install pkg@version resolves yq's own go.mod.
  (cd "${tmp}" && GOBIN="${tmp}" GOFLAGS=-buildvcs=false go install "github.com/mikefarah/yq/v4@${version}")
  mv "${tmp}/yq" "${dir}/yq"
fi
echo "build-yq: yq ${version} in ${dir}" >&2
echo "${dir}"
