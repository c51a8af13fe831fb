# syntax=docker/dockerfile:1
#
# The flink-operator image: a static Go binary on distroless/static, running as uid/gid 65532.
#
#   docker build -t ghcr.io/flinkops/flink-operator:dev .
#   docker buildx build --platform linux/amd64,linux/arm64 -t <registry>/flink-operator:<tag> --push .
#
# The builder runs on the build machine's platform and cross-compiles (CGO_ENABLED=0), so a
# multi-platform build needs no emulation. manifests/base/deployment.yaml runs it with a read-only
# root filesystem; the binary writes nothing outside /tmp.

ARG GO_VERSION=1.26

FROM --platform=$BUILDPLATFORM golang:${GO_VERSION} AS build
ARG TARGETOS=linux
ARG TARGETARCH
WORKDIR /src
# Dependencies first: this layer (and the module cache mount) survives source-only changes.
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod \
    go mod download
# Only what the binary is built from (see .dockerignore).
COPY cmd/ cmd/
COPY pkg/ pkg/
RUN --mount=type=cache,target=/go/pkg/mod \
    --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 GOOS=${TARGETOS} GOARCH=${TARGETARCH} \
    go build -trimpath -ldflags "-s -w" -o /out/flink-operator ./cmd/flink-operator

# distroless/static: CA certificates (https jar downloads of session jobs), tzdata, /etc/passwd
# with the nonroot user, no shell, no package manager.
FROM gcr.io/distroless/static-debian12:nonroot
LABEL org.opencontainers.image.title="flink-operator" \
      org.opencontainers.image.description="Kubernetes operator for Apache Flink (flink.apache.org/v1beta1)" \
      org.opencontainers.image.source="https://github.com/flinkops/flink-operator"
COPY --from=build /out/flink-operator /flink-operator
USER 65532:65532
ENTRYPOINT ["/flink-operator"]
