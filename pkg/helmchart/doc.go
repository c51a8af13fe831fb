// Package helmchart holds the tests of the Helm chart helm/flink-operator: that it accepts every key
// of upstream's chart's values file (Apache Flink Kubernetes Operator 1.15.0, whose key paths are
// listed in testdata/upstream-1.15.0/keys.txt; the file itself is not kept), that docs/install.md
// says what each key does here, that the files it shares with the kustomize install (manifests/)
// stay identical, and, with Helm built from the Go module proxy by hack/build-helm.sh, what
// `helm template` renders, also with a values file in upstream's schema
// (testdata/upstream-style-values.yaml).
package helmchart
