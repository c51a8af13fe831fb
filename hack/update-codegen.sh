#!/usr/bin/env bash
# Regenerates everything derived from the API types: deepcopy functions, the
# typed clientset, listers and informers (k8s.io/code-generator's
# kube_codegen.sh) and the CRD manifests (hack/crdgen, built on controller-tools).
# Versions come from go.mod, so a checkout always generates the same output.
set -o errexit -o nounset -o pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${ROOT}"
MODULE="github.com/flinkops/flink-operator"

# A fresh module cache has go.mod's modules but not necessarily their source.
go mod download k8s.io/code-generator
CODEGEN_PKG="$(go list -m -f '{{.Dir}}' k8s.io/code-generator)"
# kube_codegen.sh installs its generators with `go install` into GOBIN; keep
# them out of the user's GOPATH/bin and keyed by the pinned version.
export GOBIN="${FLINKOP_CACHE_DIR:-${HOME}/.cache/flink-operator}/codegen-bin/$(go list -m -f '{{.Version}}' k8s.io/code-generator)"
mkdir -p "${GOBIN}"
# shellcheck source=/dev/null
source "${CODEGEN_PKG}/kube_codegen.sh"

kube::codegen::gen_helpers \
  --boilerplate "${ROOT}/hack/boilerplate.go.txt" \
  "${ROOT}/pkg/apis"

kube::codegen::gen_client \
  --with-watch \
  --output-dir "${ROOT}/pkg/generated" \
  --output-pkg "${MODULE}/pkg/generated" \
  --boilerplate "${ROOT}/hack/boilerplate.go.txt" \
  "${ROOT}/pkg/apis"

go run ./hack/crdgen --paths ./pkg/apis/... --output-dir "${ROOT}/manifests/crds"
