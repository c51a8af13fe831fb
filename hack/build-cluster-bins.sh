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
#
# A cold build takes ~13 min on 2 cores (more on a busy machine) and has no
# deadline: it cannot hang, only be slow. While a binary builds, a progress
# line with its elapsed time and an estimate of what is left is printed every
# ${FLINKOP_BUILD_PROGRESS_SECONDS:-20} s. Estimates come from the durations of
# the last build on this machine (<cache>/kube-bins/build-seconds), else from
# the cold durations measured on 2 cores below.
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
build_pid=""
trap 'rm -rf "${tmp}"; [[ -z "${build_pid}" ]] || kill "${build_pid}" 2>/dev/null || true' EXIT

# Binaries in build order with their packages.
packages=(
  etcd go.etcd.io/etcd/server/v3
  etcdctl go.etcd.io/etcd/etcdctl/v3
  kube-apiserver k8s.io/kubernetes/cmd/kube-apiserver
  kube-controller-manager k8s.io/kubernetes/cmd/kube-controller-manager
  kubectl k8s.io/kubernetes/cmd/kubectl
)
# Cold durations in seconds (module downloads included) measured on 2 cores
# for Kubernetes v1.37.2 / etcd v3.7.3: the estimate before any build here.
declare -A seconds=([etcd]=47 [etcdctl]=7 [kube-apiserver]=534 [kube-controller-manager]=184 [kubectl]=29)
times_file="${cache}/kube-bins/build-seconds"
estimate_source="cold durations measured on 2 cores"
if [[ -f "${times_file}" ]]; then
  while read -r name secs; do
    [[ -n "${seconds[${name}]+set}" && "${secs}" =~ ^[0-9]+$ ]] && seconds[${name}]=${secs}
  done <"${times_file}"
  estimate_source="the last build's durations"
fi
interval="${FLINKOP_BUILD_PROGRESS_SECONDS:-20}"
declare -A took=()

duration() { # seconds -> "1m05s"
  if (($1 >= 60)); then printf '%dm%02ds' $(($1 / 60)) $(($1 % 60)); else printf '%ds' "$1"; fi
}

# left <index of the binary being built> <its elapsed seconds>: the estimate
# of what remains, in seconds.
left() {
  local i=$1 elapsed=$2 rest=0 j
  ((seconds[${packages[i]}] > elapsed)) && rest=$((seconds[${packages[i]}] - elapsed))
  for ((j = i + 2; j < ${#packages[@]}; j += 2)); do rest=$((rest + seconds[${packages[j]}])); done
  echo "${rest}"
}

build() { # index into packages
  local i=$1 name=${packages[$1]} pkg=${packages[$1 + 1]} start=${SECONDS} last=${SECONDS} status=0
  echo "build-cluster-bins: building ${name} (${pkg}), expected ~$(duration "${seconds[${name}]}")" >&2
  (cd "${mod}" && GOWORK=off CGO_ENABLED=0 exec go build -trimpath -ldflags "${ldflags}" -o "${tmp}/${name}" "${pkg}") &
  build_pid=$!
  while kill -0 "${build_pid}" 2>/dev/null; do
    sleep 1
    if ((SECONDS - last >= interval)) && kill -0 "${build_pid}" 2>/dev/null; then
      last=${SECONDS}
      local elapsed=$((SECONDS - start)) note=""
      ((elapsed > seconds[${name}])) && note=", longer than expected"
      echo "build-cluster-bins: ${name}: $(duration "${elapsed}") so far${note}; about $(duration "$(left "${i}" "${elapsed}")") left in all ($(duration $((SECONDS - total_start))) since the start)" >&2
    fi
  done
  wait "${build_pid}" || status=$?
  build_pid=""
  if ((status != 0)); then
    echo "build-cluster-bins: go build ${pkg} failed (exit ${status})" >&2
    exit "${status}"
  fi
  took[${name}]=$((SECONDS - start))
  echo "build-cluster-bins: built ${name} in $(duration "${took[${name}]}")" >&2
}

total_start=${SECONDS}
total=0
for ((i = 0; i < ${#packages[@]}; i += 2)); do total=$((total + seconds[${packages[i]}])); done
echo "build-cluster-bins: building ${kube_version} and etcd ${etcd_version} from the Go module proxy, once:" \
  "about $(duration "${total}") in all (estimated from ${estimate_source})" >&2
rm -f "${stamp}"
for ((i = 0; i < ${#packages[@]}; i += 2)); do build "${i}"; done

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
for name in "${!took[@]}"; do printf '%s %s\n' "${name}" "${took[${name}]}"; done | sort >"${times_file}.new" &&
  mv -f "${times_file}.new" "${times_file}"
echo "build-cluster-bins: built all in $(duration $((SECONDS - total_start))) into ${bin_dir}" >&2
echo "${bin_dir}"
