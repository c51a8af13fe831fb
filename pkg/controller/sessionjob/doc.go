// Package sessionjob is the FlinkSessionJob controller: jobs submitted
// through the REST API of a session cluster (a FlinkDeployment without
// spec.job, in the same namespace). controller.go holds the queue and the
// event handlers; a session job's life reads in sync.go (Sync, commit) →
// cluster.go (the session cluster, the effective configuration) →
// observe.go → reconcile.go (first deploy, upgrade intent, steady state) →
// submit.go (jar fetch, upload, run) and stop.go (stopping the old job with
// its state), then snapshots.go and deletion.go.
//
// # Status is a write-ahead log
//
// As for FlinkDeployments, whatever is about to be stopped or submitted is
// recorded first:
//
//   - reconciliationStatus.lastReconciledSpec holds the spec the job runs
//     or, while reconciliationStatus.state is UPGRADING, the spec being
//     deployed (upstream's JSON shape).
//   - jobStatus.jobId is the job the session job owns. A submission is
//     recorded (new job id derived from the resource and the id it
//     replaces, state RECONCILING, the restore point in
//     upgradeSavepointPath) and written before the next sync makes it:
//     POST /jars/upload, POST /jars/{id}/run with that jobId, DELETE
//     /jars/{id}. A crash after the run leaves a job Flink knows by the
//     recorded id: the next sync finds it instead of submitting again, and
//     a repeated run is Flink's DuplicateJobSubmission.
//   - jobStatus.savepointInfo {triggerId, triggerTimestamp, UPGRADE} is a
//     stop-with-savepoint chosen and recorded before it is sent; a trigger
//     id Flink forgot is looked up in the checkpoint history or sent again.
//   - jobStatus.state SUSPENDED during an upgrade means the old job's state
//     is recorded in upgradeSavepointPath; the old job is cancelled if it
//     still runs (stateless upgrades, savepoint redeploys) and must have
//     ended before anything new is submitted.
//
// # Life of a session job
//
//   - The session cluster must exist, be a session cluster and be READY;
//     otherwise status.error and a SessionClusterNotReady event say why, and
//     the job is looked at again with a growing delay (5 s … 5 min) — or at
//     once when the FlinkDeployment changes (its events wake its jobs
//     through a cache index by spec.deploymentName).
//   - jarURI: http(s):// (downloaded, streamed) or file:// (the operator's
//     file system). local:// names a file inside the cluster's image, which
//     the REST API cannot run: refused by validation with a message that
//     says so.
//   - Upgrade modes: savepoint stops the job with a savepoint, records an
//     UPGRADE FlinkStateSnapshot (named by the trigger time, created before
//     the status write) and submits the new job from it under a new id;
//     last-state cancels the job and submits from its newest checkpoint;
//     stateless cancels it and submits from empty state. A savepoint
//     upgrade of a job that cannot take one falls back to last-state unless
//     kubernetes.operator.job.upgrade.last-state-fallback.enabled is false.
//     savepointRedeployNonce cancels and submits from initialSavepointPath.
//     Suspend stops the job the same way and submits nothing; resume
//     submits from the recorded state.
//   - A job the session cluster lost (a restart without HA): stateless jobs
//     are submitted again; stateful ones are reported ("Manual restore
//     required") rather than restarted from empty state.
//   - spec.deploymentName is immutable; a change is reported and the job
//     stays where it is.
//   - Snapshots: the same rules as for applications (pkg/snapshotrules):
//     manual nonces, periodic savepoints/checkpoints, history cleanup; the
//     job's own savepoint directory wins over the cluster's. Without
//     snapshot resources only upgrade and deletion savepoints are recorded
//     (in savepointInfo); periodic and manual snapshots of session jobs then
//     are reported as unsupported.
//   - Deletion: finalizer flinksessionjobs.flink.apache.org/finalizer. The
//     job is cancelled, or with kubernetes.operator.job.savepoint-on-deletion
//     stopped with a savepoint (recorded as an UPGRADE snapshot), bounded by
//     execution.checkpointing.timeout; a missing cluster has nothing to
//     stop.
package sessionjob
