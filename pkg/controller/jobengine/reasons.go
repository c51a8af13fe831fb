package jobengine

// Event reasons of the job controllers, upstream's where it has one.
const (
	ReasonSpecChanged      = "SpecChanged"
	ReasonSuspended        = "Suspended"
	ReasonSubmit           = "Submit"
	ReasonJobStatusChanged = "JobStatusChanged"
	ReasonSavepointError   = "SavepointError"
	ReasonCheckpointError  = "CheckpointError"
	ReasonUpgradeFailed    = "UpgradeFailed"
	ReasonCleanup          = "Cleanup"
	ReasonValidationError  = "ValidationError"
	reasonCleanupFailed    = "CleanupFailed"
)
