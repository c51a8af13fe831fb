// Package integration holds the integration suite that runs against a real,
// local control plane (see e2e/localcluster): one cluster per package run,
// started in TestMain, with the CRDs from manifests/crds installed.
package integration
