// Package installe2e is the end-to-end acceptance test of the install
// (issue 10) and of cross-namespace snapshots and restore by reference
// (issue 11), on the local control plane with real Flink:
//
//   - manifests/ applies with `kubectl apply -k --server-side`, as a server
//     dry run and for real; the operator then runs with a token of the
//     manifest's ServiceAccount (from the TokenRequest API), never the admin
//     credential, as a local process (the node agent cannot run the
//     operator image, so the manifest's Deployment is scaled to 0 and the
//     ValidatingWebhookConfiguration points at the local process by URL;
//     the operator's self-managed certificate covers 127.0.0.1 and it
//     patches its CA into the configuration);
//   - `kubectl auth can-i` shows what the ServiceAccount may not do;
//   - the API server calls the webhook, which rejects a snapshot whose target
//     does not exist and a savepoint with no resolvable directory;
//   - a full savepoint lifecycle works under that RBAC: a job runs, a manual
//     savepoint completes, a savepoint upgrade restores from its UPGRADE
//     snapshot, deleting a snapshot disposes of its data;
//   - a user with rights only in namespace team-a cannot create a snapshot
//     of team-b's job; a user who may update that FlinkDeployment can, and
//     the snapshot completes; a new FlinkDeployment in team-a that starts
//     from it by reference (spec.job.initialStateSnapshotRef) restores it,
//     as Flink's checkpoint statistics show, and records its path in
//     upgradeSavepointPath.
//
// Run it with
//
//	FLINKOP_KUBE_BIN_DIR=$(hack/build-cluster-bins.sh) go test -count=1 -timeout 20m -v ./e2e/installe2e/
package installe2e
