// Package jobengine is what the FlinkDeployment (application) and
// FlinkSessionJob controllers share about a Flink job's life: the state of
// one sync and its single commit, the stop of a job with its state, the
// classification of spec changes, the intent of an upgrade, snapshot
// planning and legacy mode, the informer handlers both use, and the event
// reasons. Each controller embeds State in its own sync state and gives
// Reconcile and the stop protocol a Driver for what is really its own.
//
// # Shape of a sync
//
// A controller reads its resource from the informer cache; Engine.Start
// writes the finalizer if it is missing and NewState takes a DeepCopy to
// edit (the cached object is never written to); the controller
// observes, and State.Reconcile decides with the controller's Driver,
// recording errors (Fail), events (Event), idempotent
// pre-writes (beforeStatusWrite: snapshot resources the status will name),
// the writes and Flink calls the new status announces (AfterStatusWrite)
// and when to look again (RequeueWithin). Engine.Commit then runs the
// pre-writes, writes the status at most once, emits the events (a Warning
// per error only when the message of status.error changes; status.error
// is upstream's FlinkResourceException JSON, resourceerror.go) and runs
// the actions. The status is a write-ahead log: a crash between any two
// steps leaves a status from which the next sync continues the same step.
//
// # Where each job transition happens
//
// reconciliationStatus.state (the write-ahead log of spec changes):
//
//	(none) → UPGRADING    first deploy recorded: State.firstDeploy (reconcile.go)
//	DEPLOYED → UPGRADING  a spec change is recorded: State.Reconcile → recordSpecChange,
//	                      beginUpgrade (upgrade.go; Classify says which change)
//	DEPLOYED → UPGRADING  a restart of the recorded spec (a FAILED job with job.restart.failed,
//	                      an unhealthy one): State.steady → restartIfNeeded → Restart (health.go)
//	UPGRADING → DEPLOYED  the new spec is deployed or settled suspended: State.continueUpgrade
//	                      → State.deploy (Driver.Deploy makes the objects or the submission)
//	DEPLOYED → ROLLING_BACK  the deployed spec is not stable within deployment.readiness.timeout
//	                      (deployment.rollback.enabled, FlinkDeployments): State.Reconcile →
//	                      rollbackDue, beginRollback (rollback.go); the target is lastStableSpec,
//	                      lastReconciledSpec stays the failed spec
//	ROLLING_BACK → ROLLED_BACK  the failed job stopped keeping its state (stopForRollback),
//	                      lastStableSpec deployed: State.continueRollback → State.deploy
//	ROLLED_BACK → UPGRADING  the spec changes again (compared with the failed spec: State.classify)
//	ROLLED_BACK → DEPLOYED  the spec is set back to the stable one: acceptRollback (no redeploy)
//
// jobStatus.state:
//
//	→ RECONCILING          a deploy or submission is recorded: State.deploy
//	→ RUNNING, FAILED, ... what Flink reports: State.ObserveJob (called by both controllers' observe)
//	                       (an ended job's last checkpoint is recorded in the same write)
//	→ SUSPENDED            the old job's state is recorded and it may be torn down or cancelled:
//	                       State.stopJob → finishStop (savepoint and last-state upgrades);
//	                       State.beginUpgrade for stateless upgrades, resumes and savepoint redeploys;
//	                       State.stopForRollback (rollback.go);
//	                       State.firstDeploy of any job; State.continueUpgrade settling a
//	                       suspended one; the controllers' syncDeletion after a
//	                       savepoint on deletion (stopOnDeletion)
//
// jobStatus.savepointInfo, the stop in flight (stop.go):
//
//	{triggerId, UPGRADE}       State.triggerStop, written before the POST /stop it announces
//	{UPGRADE, no triggerId}    a failed stop (lifecycle.MarkFailedStop): last-state follows, or a retry
//	cleared                    finishStop (lifecycle.ClearStopTrigger)
//
// lifecycleState is derived in each controller's commit from the above
// (pkg/lifecycle.State; FAILED after an error recorded with
// FailManualRestore or wrapping lifecycle.ErrManualRestore); lastStableSpec follows lastReconciledSpec once the
// job runs (while DEPLOYED, never ROLLED_BACK), or at once for a job suspended by the user (KeepSuspendedStable).
// While ROLLING_BACK or ROLLED_BACK, State.Recorded is lastStableSpec, the spec being or been deployed.
//
// Snapshots the operator makes for a job (snapshots.go, legacy.go) are
// planned here too: manual nonces and periodic snapshots created before the
// status write that records them, history cleanup after it.
//
// What differs between the kinds is each controller's Driver (reconcile.go):
// an application cluster builds, repairs and tears down its objects; a
// session job is validated against its cluster, cancelled and submitted.
// Deletion stays in the controllers (an application's finalizer waits for
// its savepoint on deletion, a session job's for its cancel).
package jobengine
