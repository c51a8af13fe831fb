package v1beta1

// JobState is the desired state of a job.
// +kubebuilder:validation:Enum=running;suspended
type JobState string

const (
	// JobStateRunning asks for the job to run.
	JobStateRunning JobState = "running"
	// JobStateSuspended asks for the job to be stopped (with state kept per
	// upgradeMode) and its cluster torn down, keeping the resource.
	JobStateSuspended JobState = "suspended"
)

// UpgradeMode says how the operator carries state across a job redeploy.
// +kubebuilder:validation:Enum=savepoint;last-state;stateless
type UpgradeMode string

const (
	// UpgradeModeSavepoint stops the job with a savepoint and restarts from it.
	UpgradeModeSavepoint UpgradeMode = "savepoint"
	// UpgradeModeLastState restarts from the latest externalized checkpoint.
	UpgradeModeLastState UpgradeMode = "last-state"
	// UpgradeModeStateless restarts from empty state.
	UpgradeModeStateless UpgradeMode = "stateless"
)

// JobSpec describes a Flink job of an application cluster or a session job.
type JobSpec struct {
	// JarURI is the job jar: local:// inside the image for applications;
	// http(s)://, file:// or local:// for session jobs.
	JarURI string `json:"jarURI,omitempty"`
	// Parallelism of the job.
	Parallelism *int32 `json:"parallelism,omitempty"`
	// EntryClass is the job's main class.
	EntryClass string `json:"entryClass,omitempty"`
	// Args are the job's program arguments.
	Args []string `json:"args,omitempty"`
	// State is the desired job state.
	State JobState `json:"state,omitempty"`
	// SavepointTriggerNonce: a change triggers one manual savepoint (deprecated
	// upstream in favour of FlinkStateSnapshot resources, still honoured).
	SavepointTriggerNonce *int64 `json:"savepointTriggerNonce,omitempty"`
	// InitialSavepointPath is the state the job starts from on first deploy
	// (and on a savepointRedeployNonce change).
	InitialSavepointPath string `json:"initialSavepointPath,omitempty"`
	// CheckpointTriggerNonce: a change triggers one manual checkpoint.
	CheckpointTriggerNonce *int64 `json:"checkpointTriggerNonce,omitempty"`
	// UpgradeMode chooses how state survives a redeploy.
	UpgradeMode UpgradeMode `json:"upgradeMode,omitempty"`
	// AllowNonRestoredState lets a restore skip state of removed operators.
	AllowNonRestoredState *bool `json:"allowNonRestoredState,omitempty"`
	// SavepointRedeployNonce: a change redeploys from initialSavepointPath.
	SavepointRedeployNonce *int64 `json:"savepointRedeployNonce,omitempty"`
	// AutoscalerResetNonce: a change resets autoscaler state (accepted for
	// compatibility; this operator has no autoscaler).
	AutoscalerResetNonce *int64 `json:"autoscalerResetNonce,omitempty"`
	// InitialStateSnapshotRef [ours] starts the job from a FlinkStateSnapshot
	// instead of a path: a COMPLETED savepoint, or a COMPLETED checkpoint with
	// a path. It is resolved on the first deploy and on a
	// savepointRedeployNonce change (then it takes the place of
	// initialSavepointPath, which must be empty); the path is recorded in
	// status.jobStatus.upgradeSavepointPath. While referenced, the snapshot is
	// kept by history cleanup and its data is not disposed of. A snapshot in
	// another namespace needs
	// kubernetes.operator.snapshot.cross-namespace-references.enabled and the
	// creator's right to get it (checked by the admission webhook).
	InitialStateSnapshotRef *SnapshotReference `json:"initialStateSnapshotRef,omitempty"`
}

// SnapshotReference names a FlinkStateSnapshot.
type SnapshotReference struct {
	// Name of the FlinkStateSnapshot.
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
	// Namespace of the FlinkStateSnapshot; defaults to the referring
	// resource's own.
	Namespace string `json:"namespace,omitempty"`
}

// JobStatusState is a Flink job state as reported by the JobManager (plus the
// operator's own RECONCILING and SUSPENDED).
// +kubebuilder:validation:Enum=INITIALIZING;CREATED;RUNNING;FAILING;FAILED;CANCELLING;CANCELED;FINISHED;RESTARTING;SUSPENDED;RECONCILING
type JobStatusState string

// Flink job states.
const (
	JobStatusInitializing JobStatusState = "INITIALIZING"
	JobStatusCreated      JobStatusState = "CREATED"
	JobStatusRunning      JobStatusState = "RUNNING"
	JobStatusFailing      JobStatusState = "FAILING"
	JobStatusFailed       JobStatusState = "FAILED"
	JobStatusCancelling   JobStatusState = "CANCELLING"
	JobStatusCanceled     JobStatusState = "CANCELED"
	JobStatusFinished     JobStatusState = "FINISHED"
	JobStatusRestarting   JobStatusState = "RESTARTING"
	JobStatusSuspended    JobStatusState = "SUSPENDED"
	JobStatusReconciling  JobStatusState = "RECONCILING"
)

// IsGloballyTerminal reports whether Flink will never run the job again.
func (s JobStatusState) IsGloballyTerminal() bool {
	return s == JobStatusFailed || s == JobStatusCanceled || s == JobStatusFinished
}

// JobStatus is what the operator last observed of a job.
type JobStatus struct {
	// JobName is the Flink job name.
	JobName string `json:"jobName,omitempty"`
	// JobID is the Flink job id (32 hex characters).
	JobID string `json:"jobId,omitempty"`
	// State is the last observed job state.
	State JobStatusState `json:"state,omitempty"`
	// StartTime is the job start time in epoch millis, as a string (upstream).
	StartTime string `json:"startTime,omitempty"`
	// UpdateTime is when the operator last observed the job, epoch millis.
	UpdateTime string `json:"updateTime,omitempty"`
	// UpgradeSavepointPath is the state the next (re)deploy restores from.
	UpgradeSavepointPath string `json:"upgradeSavepointPath,omitempty"`
	// SavepointInfo is the legacy savepoint tracking (snapshot resources off).
	SavepointInfo *SavepointInfo `json:"savepointInfo,omitempty"`
	// CheckpointInfo is the legacy checkpoint tracking (snapshot resources off).
	CheckpointInfo *CheckpointInfo `json:"checkpointInfo,omitempty"`
}

// SnapshotTriggerType says who asked for a snapshot.
// +kubebuilder:validation:Enum=MANUAL;PERIODIC;UPGRADE;UNKNOWN
type SnapshotTriggerType string

// Snapshot trigger types.
const (
	SnapshotTriggerManual   SnapshotTriggerType = "MANUAL"
	SnapshotTriggerPeriodic SnapshotTriggerType = "PERIODIC"
	SnapshotTriggerUpgrade  SnapshotTriggerType = "UPGRADE"
	SnapshotTriggerUnknown  SnapshotTriggerType = "UNKNOWN"
)

// SavepointFormatType is Flink's savepoint format.
// +kubebuilder:validation:Enum=CANONICAL;NATIVE;UNKNOWN
type SavepointFormatType string

// Savepoint formats.
const (
	SavepointFormatCanonical SavepointFormatType = "CANONICAL"
	SavepointFormatNative    SavepointFormatType = "NATIVE"
	SavepointFormatUnknown   SavepointFormatType = "UNKNOWN"
)

// CheckpointType is Flink's checkpoint type for a manually triggered checkpoint.
// +kubebuilder:validation:Enum=FULL;INCREMENTAL;UNKNOWN
type CheckpointType string

// Checkpoint types.
const (
	CheckpointTypeFull        CheckpointType = "FULL"
	CheckpointTypeIncremental CheckpointType = "INCREMENTAL"
	CheckpointTypeUnknown     CheckpointType = "UNKNOWN"
)

// Savepoint is one savepoint recorded in legacy status.
type Savepoint struct {
	// TimeStamp is when the savepoint completed, epoch millis.
	TimeStamp int64 `json:"timeStamp,omitempty"`
	// Location is the savepoint path.
	Location string `json:"location,omitempty"`
	// TriggerType says who asked for it.
	TriggerType SnapshotTriggerType `json:"triggerType,omitempty"`
	// FormatType is the savepoint format.
	FormatType SavepointFormatType `json:"formatType,omitempty"`
	// TriggerNonce is the savepointTriggerNonce that asked for it, if any.
	TriggerNonce *int64 `json:"triggerNonce,omitempty"`
}

// SavepointInfo is the legacy (pre-FlinkStateSnapshot) savepoint status.
type SavepointInfo struct {
	// LastSavepoint is the newest completed savepoint.
	LastSavepoint *Savepoint `json:"lastSavepoint,omitempty"`
	// TriggerID of the savepoint in flight, if any.
	TriggerID string `json:"triggerId,omitempty"`
	// TriggerTimestamp of the savepoint in flight, epoch millis.
	TriggerTimestamp *int64 `json:"triggerTimestamp,omitempty"`
	// TriggerType of the savepoint in flight.
	TriggerType SnapshotTriggerType `json:"triggerType,omitempty"`
	// FormatType of the savepoint in flight.
	FormatType SavepointFormatType `json:"formatType,omitempty"`
	// SavepointHistory lists completed savepoints, oldest first.
	SavepointHistory []Savepoint `json:"savepointHistory,omitempty"`
	// LastPeriodicSavepointTimestamp is when the last periodic savepoint was
	// triggered, epoch millis.
	LastPeriodicSavepointTimestamp int64 `json:"lastPeriodicSavepointTimestamp,omitempty"`
}

// Checkpoint is one manually or periodically triggered checkpoint recorded in
// legacy status.
type Checkpoint struct {
	// TimeStamp is when the checkpoint completed, epoch millis.
	TimeStamp int64 `json:"timeStamp,omitempty"`
	// TriggerType says who asked for it.
	TriggerType SnapshotTriggerType `json:"triggerType,omitempty"`
	// FormatType is the checkpoint type.
	FormatType CheckpointType `json:"formatType,omitempty"`
	// TriggerNonce is the checkpointTriggerNonce that asked for it, if any.
	TriggerNonce *int64 `json:"triggerNonce,omitempty"`
}

// CheckpointInfo is the legacy (pre-FlinkStateSnapshot) checkpoint status.
type CheckpointInfo struct {
	// LastCheckpoint is the newest completed checkpoint the operator triggered.
	LastCheckpoint *Checkpoint `json:"lastCheckpoint,omitempty"`
	// TriggerID of the checkpoint in flight, if any.
	TriggerID string `json:"triggerId,omitempty"`
	// TriggerTimestamp of the checkpoint in flight, epoch millis.
	TriggerTimestamp *int64 `json:"triggerTimestamp,omitempty"`
	// TriggerType of the checkpoint in flight.
	TriggerType SnapshotTriggerType `json:"triggerType,omitempty"`
	// FormatType of the checkpoint in flight.
	FormatType CheckpointType `json:"formatType,omitempty"`
	// LastPeriodicCheckpointTimestamp is when the last periodic checkpoint was
	// triggered, epoch millis.
	LastPeriodicCheckpointTimestamp int64 `json:"lastPeriodicCheckpointTimestamp,omitempty"`
}

// ReconciliationState is where the operator is in applying a spec.
// +kubebuilder:validation:Enum=DEPLOYED;UPGRADING;ROLLING_BACK;ROLLED_BACK
type ReconciliationState string

// Reconciliation states.
const (
	ReconciliationDeployed    ReconciliationState = "DEPLOYED"
	ReconciliationUpgrading   ReconciliationState = "UPGRADING"
	ReconciliationRollingBack ReconciliationState = "ROLLING_BACK"
	ReconciliationRolledBack  ReconciliationState = "ROLLED_BACK"
)

// ReconciliationStatus is the operator's write-ahead log for spec changes: the
// spec about to be deployed is recorded here before anything is torn down.
type ReconciliationStatus struct {
	// ReconciliationTimestamp is when the last reconciled spec was recorded,
	// epoch millis.
	ReconciliationTimestamp int64 `json:"reconciliationTimestamp,omitempty"`
	// LastReconciledSpec is the JSON of the last spec the operator acted on.
	LastReconciledSpec string `json:"lastReconciledSpec,omitempty"`
	// LastStableSpec is the JSON of the last spec that ran healthily.
	LastStableSpec string `json:"lastStableSpec,omitempty"`
	// State is where the operator is in applying LastReconciledSpec.
	State ReconciliationState `json:"state,omitempty"`
}

// ResourceLifecycleState is the user-facing summary of a resource's life.
// +kubebuilder:validation:Enum=CREATED;SUSPENDED;UPGRADING;DEPLOYED;STABLE;ROLLING_BACK;ROLLED_BACK;FAILED;DELETING;DELETED
type ResourceLifecycleState string

// Lifecycle states.
const (
	LifecycleCreated     ResourceLifecycleState = "CREATED"
	LifecycleSuspended   ResourceLifecycleState = "SUSPENDED"
	LifecycleUpgrading   ResourceLifecycleState = "UPGRADING"
	LifecycleDeployed    ResourceLifecycleState = "DEPLOYED"
	LifecycleStable      ResourceLifecycleState = "STABLE"
	LifecycleRollingBack ResourceLifecycleState = "ROLLING_BACK"
	LifecycleRolledBack  ResourceLifecycleState = "ROLLED_BACK"
	LifecycleFailed      ResourceLifecycleState = "FAILED"
	LifecycleDeleting    ResourceLifecycleState = "DELETING"
	LifecycleDeleted     ResourceLifecycleState = "DELETED"
)
