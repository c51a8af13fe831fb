// Package deployment is the FlinkDeployment controller for standalone mode:
// it builds a Flink cluster (pkg/cluster) for every FlinkDeployment,
// application clusters (spec.job set) and session clusters alike, watches
// the cluster and its job, and carries the job's state across upgrades,
// suspends and deletion. controller.go holds the queue and the event
// handlers; a deployment's life reads in sync.go (Sync, commit) →
// observe.go → jobengine.State.Reconcile, with this package's Driver in
// reconcile.go (validation, the objects of a deploy, steady state and drift
// repair) and upgrade.go (the stop protocol's questions, teardown) →
// deletion.go.
//
// # Shape of a sync
//
// Sync reads the FlinkDeployment and its objects from informer caches
// (never the API server), works on a DeepCopy, observes, decides, then
// commits: idempotent pre-writes (snapshot resources), at most one status
// write, events, then the writes and Flink calls the new status announces
// (create/update/delete objects, POST /stop, PATCH cancel). No worker waits
// on Flink or Kubernetes: progress is polled with AddAfter (the progress
// check interval, 10 s, while something changes; the reconcile interval,
// 60 s, when the job runs; 1–30 s while a stop-with-savepoint is in flight).
// Owned ConfigMaps, Deployments and Services, from informers filtered on
// type=flink-standalone-kubernetes, enqueue their controlling
// FlinkDeployment, so a JobManager becoming ready or a deleted Service is
// acted on at once; so does a FlinkStateSnapshot of the job that turns
// terminal (a periodic slot may have waited for it, history cleanup may have
// work). The controller's own status writes do not wake it.
//
// # Status is a write-ahead log
//
// Whatever is about to be torn down, stopped or deployed is recorded first,
// so that after a crash the next sync finds where it was and continues the
// same step:
//
//   - reconciliationStatus.lastReconciledSpec holds the spec the cluster runs
//     or, while reconciliationStatus.state is UPGRADING, the spec being
//     deployed. Upstream's JSON shape ({"spec": ..., "resource_metadata":
//     {"apiVersion", "firstDeployment"}}), so an upstream operator reads it.
//     lastStableSpec is set to it once the job runs (lifecycle STABLE).
//   - jobStatus.jobId is the job of the running cluster; during an upgrade,
//     the old job to stop, until the deploy records the new one (written
//     before the objects that carry it are created).
//   - jobStatus.upgradeSavepointPath is the state the next deploy restores
//     from, and in steady state the state the running job was deployed from
//     (or, once it ended, its last checkpoint).
//   - jobStatus.savepointInfo {triggerId, triggerTimestamp, triggerType:
//     UPGRADE} is a stop-with-savepoint the operator chose and recorded
//     before sending it (upstream's legacy trigger fields). The same fields
//     without a triggerId record a failed attempt: the job is then stopped by
//     last-state, or with the fallback disabled the stop is retried after the
//     reconcile interval.
//   - jobStatus.state SUSPENDED during an upgrade means the old job is
//     stopped and its state recorded: the old cluster may be torn down.
//
// # Life of a deployment
//
//   - First deploy: job id derived from the resource (new 32-hex),
//     restore from spec.job.initialSavepointPath (also recorded as
//     upgradeSavepointPath), ConfigMap, Services, Deployments created with
//     owner references. lifecycleState CREATED → DEPLOYED → STABLE once the
//     job runs (a RUNNING job whose tasks are not all running counts as
//     CREATED, upstream's rule). A job created suspended is only recorded.
//   - Spec change (savepoint/checkpoint trigger nonces and the autoscaler
//     nonce excluded; restartNonce included), by the new spec's upgradeMode:
//     stateless tears down and redeploys from empty state with a new job id;
//     savepoint stops with a savepoint (trigger id written first), records
//     an UPGRADE FlinkStateSnapshot (alreadyExists; named by the trigger time,
//     so a repeated create is adopted) or, in legacy mode, savepointInfo,
//     then redeploys from it with a new job id; last-state cancels the job
//     (checkpoints are retained on cancellation, which pkg/cluster
//     configures) and, once it has ended, redeploys from the newest
//     checkpoint or savepoint Flink reports, keeping the job id (the newest
//     checkpoint known before the cancel is recorded with the intent).
//   - Savepoint upgrade of a job that cannot take a savepoint (not RUNNING
//     after the readiness timeout, or the savepoint failed or timed out
//     after execution.checkpointing.timeout): last-state instead, unless
//     kubernetes.operator.job.upgrade.last-state-fallback.enabled is false;
//     then status.error says why and nothing is torn down.
//   - An ended job (FAILED, CANCELED, FINISHED): its newest checkpoint is
//     recorded in upgradeSavepointPath in the same write as the state, so an
//     upgrade restarts it from there; no stop is needed.
//   - The last state is never guessed: when the JobManager cannot be asked
//     and no state was recorded, the upgrade stops with "Manual restore
//     required" and keeps the old cluster. A job that never ran since its
//     deploy still has the state it was deployed from. A job with no
//     checkpoint at all restarts from what it was deployed from ("" = empty
//     state, the only state it ever had).
//   - job.state suspended: the same stop, then the Deployments are deleted;
//     lifecycle SUSPENDED. Spec changes meanwhile are recorded and applied on
//     resume, which redeploys from upgradeSavepointPath (stateless: empty).
//   - savepointRedeployNonce change: no stop; redeploy from
//     initialSavepointPath with a new job id.
//   - Session clusters have no job: a spec change tears the cluster down and
//     redeploys it.
//   - A spec the operator cannot apply (webhook rules of upstream's
//     DefaultValidator, or pkg/cluster refusing it) is reported in
//     status.error with one ValidationError event; the cluster keeps running
//     the last recorded spec.
//   - Drift: missing ConfigMap, Services and TaskManager Deployment are
//     recreated, and objects built differently (spec hash) are updated. The
//     JobManager Deployment is never updated in place (that restarts the job
//     from the restore point in its arguments); when it is missing it is
//     recreated only if that cannot lose state: session clusters, stateless
//     jobs, Flink HA, or a job not yet seen running. A stateful job seen
//     running whose JobManager vanished is reported (manual restore), as
//     upstream does without HA metadata. Edits of an owned object that keep
//     its spec-hash annotation are not detected (pkg/cluster compares hashes
//     so that server-side defaults never look like drift).
//   - Teardown deletes the JobManager and TaskManager Deployments with
//     foreground propagation and waits for them to be gone before the new
//     ones (same names) are created; ConfigMap and Services are kept and
//     updated. With Flink HA and a new job id, the HA ConfigMaps
//     (app=<name>, configmap-type=high-availability) are deleted too.
//   - Deletion: finalizer flinkdeployments.flink.apache.org/finalizer. With
//     kubernetes.operator.job.savepoint-on-deletion the running job is
//     stopped with a savepoint (same crash-safe stop, UPGRADE snapshot),
//     bounded by execution.checkpointing.timeout (10 min); then the
//     finalizer goes, with a Warning event on timeout. Owned objects are
//     garbage-collected.
//   - Snapshots the operator makes (docs/snapshots.md; rules in
//     pkg/snapshotrules, applied in pkg/controller/jobengine), while the JobManager answers
//     and snapshot resources are enabled for the job: manual nonces
//     (savepointTriggerNonce, checkpointTriggerNonce) never restart
//     anything; once the job runs, one MANUAL FlinkStateSnapshot each is
//     created (named by the nonce) before the status write that records the
//     nonce in lastReconciledSpec. A nonce changed together with an upgrade
//     is honoured after it. Periodic savepoints and checkpoints
//     (kubernetes.operator.periodic.*.interval, duration or Quartz cron)
//     are created while the job runs, named by their slot, never while one
//     of the same type is in flight, one for all missed slots; the schedule
//     is rebuilt from the snapshots themselves, so a restart fires nothing
//     extra, and the next slot is a requeue. History cleanup deletes
//     terminal PERIODIC/UPGRADE snapshots beyond the savepoint history
//     max.count/max.age or checkpoints' num-retained, never the newest
//     COMPLETED or newest PERIODIC one, nor the restore point (deletes carry
//     a UID precondition; the snapshot's finalizer disposes the data). With
//     snapshot resources disabled (operator-wide, per job, or because the
//     FlinkStateSnapshot CRD is not installed), legacy mode (legacy.go):
//     periodic and manual savepoints/checkpoints go through
//     savepointInfo/checkpointInfo (trigger id chosen and written before the
//     POST, polled by id, retried within the trigger grace period, then
//     given up with upstream's SavepointError/CheckpointError events), and
//     the legacy savepoint history is trimmed by count and age, disposing
//     through Flink before an entry leaves it. Without the CRD each job also
//     gets one SnapshotResourcesDisabled Warning.
//
// Events use upstream's reasons: SpecChanged, Suspended, Submit,
// JobStatusChanged, SavepointError, CheckpointError, UpgradeFailed, Cleanup,
// CleanupFailed, plus ValidationError, DeploymentError and
// SnapshotResourcesDisabled.
//
// # Reaching Flink
//
// The REST endpoint comes from an endpoints.Resolver (the <name>-rest
// Service by default, a JobManager pod IP for an operator outside the
// cluster). The client speaks the running cluster's Flink version, read
// from the JobManager Deployment's flinkops.io/flink-version annotation,
// and uses the live REST Service's port, so an upgrade that changes either
// still talks correctly to the old cluster while stopping it. Every call is
// bounded by kubernetes.operator.flink.client.timeout.
//
// Not here yet: native mode (rejected with an error; an unset spec.mode
// means standalone until native exists), rollbacks, and restart of failed
// jobs (kubernetes.operator.job.restart.failed).
package deployment
