#!/usr/bin/env bash
# Builds the control-plane binaries used by e2e/localcluster (etcd, etcdctl,
# kube-apiserver, kube-controller-manager, kubectl) from Go modules pinned in
# hack/cluster-bins/go.mod. Never downloads prebuilt binaries.
#
# Output goes to a cache directory keyed by version, outside the repository so
# that fresh clones (CI) reuse it:
#   ${FLINKOP_CACHE_DIR:-$HOME/.cache/flink-operator}/kube-bins/<k8s>-etcd<etcd>/
# Nothing is rebuilt when the stamp file of a complete build is present.
# Progress goes to stderr; the last line on stdout is the bin directory.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
mod="${root}/hack/cluster-bins"

modver() { awk -v m="$1" '$1 == m && $2 ~ /^v/ { print $2; exit }' "${mod}/go.mod"; }
kube_version="$(modver k8s.io/kubernetes)"
etcd_version="$(modver go.etcd.io/etcd/server/v3)"
if [[ -z "${kube_version}" || -z "${etcd_version}" ]]; then
  echo "build-cluster-bins: cannot read versions from ${mod}/go.mod" >&2
  exit 1
fi

cache="${FLINKOP_CACHE_DIR:-${HOME}/.cache/flink-operator}"
bin_dir="${cache}/kube-bins/${kube_version}-etcd${etcd_version#v}"
stamp="${bin_dir}/.complete"
bins=(etcd etcdctl kube-apiserver kube-controller-manager kubectl)

complete() {
  [[ -f "${stamp}" ]] || return 1
  local b
  for b in "${bins[@]}"; do [[ -x "${bin_dir}/${b}" ]] || return 1; done
}

if complete; then
  echo "build-cluster-bins: cached ${kube_version} etcd ${etcd_version} in ${bin_dir}" >&2
  echo "${bin_dir}"
  exit 0
fi

mkdir -p "${bin_dir}"
# Serialise concurrent builds (two test runs at once); re-check after the lock.
if command -v flock >/dev/null; then
  exec 9>"${bin_dir}/.lock"
  flock 9
fi
if complete; then
  echo "build-cluster-bins: cached ${kube_version} etcd ${etcd_version} in ${bin_dir}" >&2
  echo "${bin_dir}"
  exit 0
fi

major="${kube_version#v}"; major="${major%%.*}"
minor="${kube_version#v*.}"; minor="${minor%%.*}"
build_date="$(date -u +'%Y-%m-%dT%H:%M:%SZ')"
ldflags="-s -w"
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  ldflags+=" -X ${pkg}.gitVersion=${kube_version}"
  ldflags+=" -X ${pkg}.gitMajor=${major} -X ${pkg}.gitMinor=${minor}"
  ldflags+=" -X ${pkg}.gitTreeState=clean -X ${pkg}.buildDate=${build_date}"
done

tmp="$(mktemp -d "${bin_dir}/.build.XXXXXX")"
trap 'rm -rf "${tmp}"' EXIT

build() { # name package
  local start=${SECONDS}
  echo "build-cluster-bins: building $1 ($2)" >&2
  (cd "${mod}" && GOWORK=off CGO_ENABLED=0 go build -trimpath -ldflags "${ldflags}" -o "${tmp}/$1" "$2")
  echo "build-cluster-bins: built $1 in $((SECONDS - start))s" >&2
}

total_start=${SECONDS}
rm -f "${stamp}"
build etcd go.etcd.io/etcd/server/v3
build etcdctl go.etcd.io/etcd/etcdctl/v3
build kube-apiserver k8s.io/kubernetes/cmd/kube-apiserver
build kube-controller-manager k8s.io/kubernetes/cmd/kube-controller-manager
build kubectl k8s.io/kubernetes/cmd/kubectl

# Sanity check the version strings before publishing the binaries.
"${tmp}/kube-apiserver" --version | grep -qx "Kubernetes ${kube_version}" || {
  echo "build-cluster-bins: kube-apiserver reports '$("${tmp}/kube-apiserver" --version)'" >&2
  exit 1
}
"${tmp}/etcd" --version | grep -q "etcd Version: ${etcd_version#v}" || {
  echo "build-cluster-bins: etcd reports '$("${tmp}/etcd" --version | head -1)'" >&2
  exit 1
}

for b in "${bins[@]}"; do mv -f "${tmp}/${b}" "${bin_dir}/${b}"; done
printf 'kubernetes %s\netcd %s\nbuilt %s\n' "${kube_version}" "${etcd_version}" "${build_date}" >"${stamp}"
echo "build-cluster-bins: built all in $((SECONDS - total_start))s into ${bin_dir}" >&2
echo "${bin_dir}"
