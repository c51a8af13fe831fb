// Package reasons declares the reason of every Kubernetes Event the
// operator records, once for the whole operator (issue 32).
//
// The names and values are API: users and upstream's e2e scripts select
// events by reason (kubectl get events --field-selector reason=...), so a
// value never changes. Where upstream (apache/flink-kubernetes-operator)
// records the same reason, each group says where; most are its
// EventRecorder.Reason.
//
// The package imports nothing, so every package of the operator can use
// it without a cycle; pkg/apis does not. reasons_test.go checks that no
// other production file declares a Reason constant and that no two
// reasons share a value.
package reasons

// The job lifecycle of FlinkDeployments and FlinkSessionJobs
// (pkg/controller/jobengine, and the job controllers' own steps). All are
// upstream's EventRecorder.Reason: Submit (ApplicationReconciler,
// SessionJobReconciler), SpecChanged and Rollback
// (AbstractFlinkResourceReconciler), Suspended (AbstractJobReconciler),
// JobStatusChanged (JobStatusObserver), Cleanup (FlinkDeploymentController,
// FlinkSessionJobController), RestartUnhealthyJob and RecoverDeployment
// (ApplicationReconciler), Scaling (NativeFlinkService's in-place
// rescale); UpgradeFailed is upstream's as a plain string
// (AbstractJobReconciler, ApplicationReconciler).
const (
	ReasonSubmit           = "Submit"
	ReasonSpecChanged      = "SpecChanged"
	ReasonSuspended        = "Suspended"
	ReasonJobStatusChanged = "JobStatusChanged"
	ReasonUpgradeFailed    = "UpgradeFailed"
	ReasonCleanup          = "Cleanup"
	// ReasonRollback: a rollback started or ended.
	ReasonRollback = "Rollback"
	// ReasonRestartUnhealthyJob: a running job found unhealthy is
	// restarted (kubernetes.operator.cluster.health-check.enabled).
	ReasonRestartUnhealthyJob = "RestartUnhealthyJob"
	// ReasonRecoverDeployment: a lost JobManager Deployment is recreated.
	ReasonRecoverDeployment = "RecoverDeployment"
	// ReasonScaling is the event of an in-place rescale.
	ReasonScaling = "Scaling"
	// ReasonScalingReport is the job autoscaler's report of a decision
	// that changes parallelism (upstream's AutoScalerEventHandler).
	ReasonScalingReport = "ScalingReport"
	// ReasonAutoscalerError: the autoscaler could not read or record its
	// state, or decide (upstream's AutoscalerError).
	ReasonAutoscalerError = "AutoscalerError"
)

// Snapshots and validation, recorded by the job controllers and by the
// FlinkStateSnapshot controller (pkg/controller/snapshot) alike. All are
// upstream's EventRecorder.Reason: SavepointError and CheckpointError
// (SnapshotObserver, FlinkStateSnapshotController), ValidationError (the
// three controllers' validation), CleanupFailed (FlinkStateSnapshotController,
// SessionReconciler, AbstractFlinkService; here a savepoint's disposal
// failed: a deleted snapshot's, or one of the legacy savepoint history).
const (
	ReasonSavepointError  = "SavepointError"
	ReasonCheckpointError = "CheckpointError"
	ReasonValidationError = "ValidationError"
	ReasonCleanupFailed   = "CleanupFailed"
)

// The FlinkStateSnapshot controller's own (pkg/controller/snapshot; its
// events are listed in docs/snapshots.md, "Events and metrics"; it also
// records SavepointError, CheckpointError, ValidationError and
// CleanupFailed above). SnapshotAbandoned is upstream's
// EventRecorder.Reason (FlinkStateSnapshotUtils); the others are this
// operator's own.
const (
	ReasonSnapshotAbandoned = "SnapshotAbandoned"
	ReasonSnapshotTriggered = "SnapshotTriggered"
	ReasonSnapshotCompleted = "SnapshotCompleted"
	ReasonDisposeSkipped    = "DisposeSkipped"
	// ReasonDisposeDeferred (Normal): a deleted snapshot's savepoint is
	// still held; its disposal was handed to its job.
	ReasonDisposeDeferred = "DisposeDeferred"
)

// The FlinkDeployment controller's own (pkg/controller/deployment).
// Missing (AbstractFlinkDeploymentObserver, JobStatusObserver) and
// JobException (JobStatusObserver; EventUtils reads them back after a
// restart) are upstream's EventRecorder.Reason, IngressManagement is
// upstream's IngressUtils.INGRESS_MANAGEMENT; DeploymentError and
// ServiceAccountError are this operator's own.
const (
	// ReasonMissing: the JobManager Deployment is gone and is not
	// recreated.
	ReasonMissing = "Missing"
	// ReasonJobException: a failure in the job's exception history.
	ReasonJobException = "JobException"
	// ReasonIngressManagement: kubernetes.operator.ingress.manage is false
	// and spec.ingress is set.
	ReasonIngressManagement = "IngressManagement"
	ReasonDeploymentError   = "DeploymentError"
	// ReasonServiceAccount: Flink's ServiceAccount of a native cluster is
	// missing or may not create the TaskManager pods.
	ReasonServiceAccount = "ServiceAccountError"
)

// Pod failures of a Flink cluster (pkg/controller/deployment pods.go):
// the values are Kubernetes' own reasons (a container's waiting or
// termination reason; Unschedulable is the PodScheduled condition's), used
// as the event reason as upstream does with a waiting container's reason
// (DeploymentFailedException, whose CONTAINER_ERROR_REASONS hold the first
// three; upstream does not report unschedulable pods). The other waiting
// reasons (ErrImagePull, RunContainerError, CreateContainerConfigError,
// ...) become event reasons as Kubernetes gives them and are not declared.
const (
	ReasonCrashLoopBackOff = "CrashLoopBackOff"
	ReasonOOMKilled        = "OOMKilled"
	ReasonImagePull        = "ImagePullBackOff"
	ReasonUnschedulable    = "Unschedulable"
)

// The FlinkSessionJob controller's own (pkg/controller/sessionjob); no
// upstream counterpart.
const (
	// ReasonSessionCluster: the session FlinkDeployment is missing,
	// being deleted, or cannot run session jobs.
	ReasonSessionCluster = "SessionClusterNotReady"
	// ReasonSubmitFailed: uploading the jar or submitting the job failed.
	ReasonSubmitFailed = "SubmitFailed"
)

// ReasonSnapshotResourcesDisabled is the Warning each job gets, once per
// operator process, while the FlinkStateSnapshot CRD is missing
// (pkg/controller/jobengine legacy.go). This operator's own: upstream has
// no such event.
const ReasonSnapshotResourcesDisabled = "SnapshotResourcesDisabled"

// The blue/green state machine (pkg/controller/bluegreen). This operator's
// own: upstream's blue/green controller records no events (it logs).
const (
	// ReasonBlueGreenTransition (Normal): the state changed
	// ("ACTIVE_BLUE -> SAVEPOINTING_BLUE: ...").
	ReasonBlueGreenTransition = "BlueGreenTransition"
	// ReasonBlueGreenAborted (Warning): a transition was given up; the
	// active child stays (status.error says why).
	ReasonBlueGreenAborted = "BlueGreenAborted"
	// ReasonBlueGreenPatched (Normal): a change applied to the active
	// child in place (upstream's PATCH_CHILD, suspend, resume).
	ReasonBlueGreenPatched = "BlueGreenPatched"
)
