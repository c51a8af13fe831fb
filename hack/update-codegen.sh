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

# The informers take the operator's own client interfaces (pkg/clients), not
# the generated clientsets: those carry a discovery client, whose package
# registers every Kubernetes API group at start.
"${GOBIN}/informer-gen" \
  --versioned-clientset-package "${MODULE}/pkg/clients/flink" \
  --listers-package "${MODULE}/pkg/generated/listers" \
  --output-dir "${ROOT}/pkg/generated/informers" \
  --output-pkg "${MODULE}/pkg/generated/informers" \
  --go-header-file "${ROOT}/hack/boilerplate.go.txt" \
  "${MODULE}/pkg/apis/flink/v1beta1"

# The Kubernetes API groups the operator uses, as typed clients, informers
# and a scheme of their own (listers: client-go's, which import only their
# group). client-go's clientset, informers and leader election import every
# API group Kubernetes serves (56) and register them all at start: about
# 10 MiB of the operator's resident memory for types it never reads.
KUBE_GROUPS=(core/v1 apps/v1 networking/v1 authorization/v1 admissionregistration/v1 coordination/v1)
KUBE_OUT="${ROOT}/pkg/generated/kube"
rm -rf "${KUBE_OUT}"
"${GOBIN}/client-gen" \
  --clientset-name kubernetes \
  --input-base k8s.io/api \
  --input "$(IFS=,; echo "${KUBE_GROUPS[*]}")" \
  --prefers-protobuf \
  --plural-exceptions Endpoints:Endpoints \
  --output-dir "${KUBE_OUT}" \
  --output-pkg "${MODULE}/pkg/generated/kube" \
  --go-header-file "${ROOT}/hack/boilerplate.go.txt"
"${GOBIN}/informer-gen" \
  --versioned-clientset-package "${MODULE}/pkg/clients/kubernetes" \
  --listers-package k8s.io/client-go/listers \
  --single-directory \
  --plural-exceptions Endpoints:Endpoints \
  --output-dir "${KUBE_OUT}/informers" \
  --output-pkg "${MODULE}/pkg/generated/kube/informers" \
  --go-header-file "${ROOT}/hack/boilerplate.go.txt" \
  "${KUBE_GROUPS[@]/#/k8s.io/api/}"

go run ./hack/crdgen --paths ./pkg/apis/... --output-dir "${ROOT}/manifests/crds"
