// Package sessionjob is the FlinkSessionJob controller: jobs submitted
// through the REST API of a session cluster (a FlinkDeployment without
// spec.job, in the same namespace). controller.go holds the queue and the
// event handlers; a session job's life reads in sync.go (Sync, commit) →
// cluster.go (the session cluster, the effective configuration) →
// observe.go → jobengine.State.Reconcile, with this package's Driver in
// reconcile.go (validation against the cluster, the steady state) and
// stop.go (the stop protocol's questions, the cancel of the old job) →
// submit.go and submissions.go (jar fetch, upload, run, in the background)
// and deletion.go.
//
// # Behaviour
//
// What a FlinkSessionJob does (crash-safe submission: the job id is
// recorded before the jar is run with it; upgrades, suspend, deletion, a
// missing or lost session cluster, snapshots) is described for users in
// docs/sessionjobs.md; the job transitions and the function making each are
// in pkg/controller/jobengine's doc.go.
package sessionjob
