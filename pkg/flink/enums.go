package flink

// String enums of the REST API. They are plain string types rather than
// closed Go enums because Flink adds values over time and the client must
// pass unknown values through instead of failing to decode.

// JobStatus is Flink's JobStatus.
type JobStatus string

// JobStatus values, identical from 1.15 to 2.x.
const (
	JobInitializing JobStatus = "INITIALIZING"
	JobCreated      JobStatus = "CREATED"
	JobRunning      JobStatus = "RUNNING"
	JobFailing      JobStatus = "FAILING"
	JobFailed       JobStatus = "FAILED"
	JobCancelling   JobStatus = "CANCELLING"
	JobCanceled     JobStatus = "CANCELED"
	JobFinished     JobStatus = "FINISHED"
	JobRestarting   JobStatus = "RESTARTING"
	JobSuspended    JobStatus = "SUSPENDED"
	JobReconciling  JobStatus = "RECONCILING"
)

// IsGloballyTerminal reports FINISHED, FAILED and CANCELED: the job will
// never run again under this id.
func (s JobStatus) IsGloballyTerminal() bool {
	return s == JobFinished || s == JobFailed || s == JobCanceled
}

// IsTerminal also counts SUSPENDED, which is terminal for this JobManager
// (it lost leadership) but may be resumed by another.
func (s JobStatus) IsTerminal() bool { return s.IsGloballyTerminal() || s == JobSuspended }

// ExecutionState is the state of a task (vertex subtask).
type ExecutionState string

// ExecutionState values.
const (
	TaskCreated      ExecutionState = "CREATED"
	TaskScheduled    ExecutionState = "SCHEDULED"
	TaskDeploying    ExecutionState = "DEPLOYING"
	TaskRunning      ExecutionState = "RUNNING"
	TaskFinished     ExecutionState = "FINISHED"
	TaskCanceling    ExecutionState = "CANCELING"
	TaskCanceled     ExecutionState = "CANCELED"
	TaskFailed       ExecutionState = "FAILED"
	TaskReconciling  ExecutionState = "RECONCILING"
	TaskInitializing ExecutionState = "INITIALIZING"
)

// SavepointFormatType selects the savepoint format (since 1.15).
type SavepointFormatType string

// SavepointFormatType values; empty means Flink's default (CANONICAL).
const (
	SavepointFormatCanonical SavepointFormatType = "CANONICAL"
	SavepointFormatNative    SavepointFormatType = "NATIVE"
)

// CheckpointType is the type of a manually triggered checkpoint.
type CheckpointType string

// CheckpointType values; empty means Flink's default (CONFIGURED).
// INCREMENTAL is rejected by Flink since 1.19 (FLINK-33723).
const (
	CheckpointConfigured  CheckpointType = "CONFIGURED"
	CheckpointFull        CheckpointType = "FULL"
	CheckpointIncremental CheckpointType = "INCREMENTAL"
)

// ClaimMode is the savepoint restore claim mode (RestoreMode before 2.0,
// RecoveryClaimMode since; same wire values).
type ClaimMode string

// ClaimMode values; empty means the cluster default (NO_CLAIM).
const (
	ClaimModeClaim   ClaimMode = "CLAIM"
	ClaimModeNoClaim ClaimMode = "NO_CLAIM"
	ClaimModeLegacy  ClaimMode = "LEGACY"
)

// CheckpointStatsStatus is the status of one checkpoint in the statistics.
type CheckpointStatsStatus string

// CheckpointStatsStatus values.
const (
	CheckpointStatsInProgress CheckpointStatsStatus = "IN_PROGRESS"
	CheckpointStatsCompleted  CheckpointStatsStatus = "COMPLETED"
	CheckpointStatsFailed     CheckpointStatsStatus = "FAILED"
)
