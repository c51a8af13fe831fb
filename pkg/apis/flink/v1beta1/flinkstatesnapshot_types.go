package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// FlinkStateSnapshot is one savepoint or checkpoint of a job, as a resource the
// operator triggers, tracks, retries, retains and disposes.
//
// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
// +kubebuilder:resource:shortName=flinksnp
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Type",type=string,JSONPath=".metadata.labels.snapshot\\.type"
// +kubebuilder:printcolumn:name="Job",type=string,JSONPath=".spec.jobReference.name"
// +kubebuilder:printcolumn:name="Trigger",type=string,JSONPath=".metadata.labels.snapshot\\.trigger-type"
// +kubebuilder:printcolumn:name="State",type=string,JSONPath=".status.state"
// +kubebuilder:printcolumn:name="Path",type=string,JSONPath=".status.path"
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=".metadata.creationTimestamp"
// +kubebuilder:printcolumn:name="Result Timestamp",type=string,JSONPath=".status.resultTimestamp",priority=1
type FlinkStateSnapshot struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   FlinkStateSnapshotSpec   `json:"spec,omitempty"`
	Status FlinkStateSnapshotStatus `json:"status,omitempty"`
}

// FlinkStateSnapshotSpec says what to snapshot and how. It never changes after
// creation: a different snapshot is a new resource.
//
// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec is immutable: create a new FlinkStateSnapshot instead"
// +kubebuilder:validation:XValidation:rule="has(self.savepoint) != has(self.checkpoint)",message="exactly one of spec.savepoint and spec.checkpoint must be set"
type FlinkStateSnapshotSpec struct {
	// JobReference is the job to snapshot; optional for alreadyExists savepoints.
	JobReference *JobReference `json:"jobReference,omitempty"`
	// Savepoint asks for a savepoint.
	Savepoint *SavepointSpec `json:"savepoint,omitempty"`
	// Checkpoint asks for a checkpoint (Flink 1.17+).
	Checkpoint *CheckpointSpec `json:"checkpoint,omitempty"`
	// BackoffLimit is the number of retries after a failed attempt: -1 means
	// unlimited, 0 none. Unset means -1 for snapshots created by users.
	// +kubebuilder:validation:Minimum=-1
	BackoffLimit *int32 `json:"backoffLimit,omitempty"`
}

// JobReferenceKind is the kind of resource a snapshot refers to.
// +kubebuilder:validation:Enum=FlinkDeployment;FlinkSessionJob
type JobReferenceKind string

// Job reference kinds.
const (
	JobReferenceKindDeployment JobReferenceKind = "FlinkDeployment"
	JobReferenceKindSessionJob JobReferenceKind = "FlinkSessionJob"
)

// JobReference points at a FlinkDeployment or FlinkSessionJob.
type JobReference struct {
	// Kind of the referenced resource.
	Kind JobReferenceKind `json:"kind,omitempty"`
	// Name of the referenced resource.
	Name string `json:"name,omitempty"`
	// Namespace of the referenced resource; defaults to the snapshot's own.
	// [ours] A reference to another namespace is acted on only when the operator
	// allows it and the admission webhook checked the creator's rights.
	Namespace string `json:"namespace,omitempty"`
}

// SavepointSpec configures a savepoint snapshot.
type SavepointSpec struct {
	// Path is the target directory, or the existing savepoint when
	// alreadyExists is true. Empty means the job's configured savepoint dir.
	Path string `json:"path,omitempty"`
	// FormatType of the savepoint.
	FormatType SavepointFormatType `json:"formatType,omitempty"`
	// DisposeOnDelete removes the savepoint data when the resource is deleted.
	DisposeOnDelete *bool `json:"disposeOnDelete,omitempty"`
	// AlreadyExists records an existing savepoint at Path instead of taking one.
	AlreadyExists *bool `json:"alreadyExists,omitempty"`
}

// CheckpointSpec configures a checkpoint snapshot. It has no settings yet; its
// presence asks for a checkpoint.
type CheckpointSpec struct{}

// SnapshotState is where a snapshot is in its life.
// +kubebuilder:validation:Enum=COMPLETED;FAILED;IN_PROGRESS;TRIGGER_PENDING;ABANDONED
type SnapshotState string

// Snapshot states.
const (
	SnapshotTriggerPending SnapshotState = "TRIGGER_PENDING"
	SnapshotInProgress     SnapshotState = "IN_PROGRESS"
	SnapshotCompleted      SnapshotState = "COMPLETED"
	SnapshotFailed         SnapshotState = "FAILED"
	SnapshotAbandoned      SnapshotState = "ABANDONED"
)

// IsTerminal reports whether the snapshot will never change state again.
func (s SnapshotState) IsTerminal() bool {
	return s == SnapshotCompleted || s == SnapshotFailed || s == SnapshotAbandoned
}

// FlinkStateSnapshotStatus is the observed state of a snapshot.
type FlinkStateSnapshotStatus struct {
	// State of the snapshot.
	State SnapshotState `json:"state,omitempty"`
	// TriggerID is the Flink async operation id of the current attempt. The
	// operator chooses it and records it before calling Flink.
	TriggerID string `json:"triggerId,omitempty"`
	// TriggerTimestamp is when the current attempt was triggered (RFC 3339).
	TriggerTimestamp string `json:"triggerTimestamp,omitempty"`
	// ResultTimestamp is when the snapshot completed or last failed (RFC 3339).
	ResultTimestamp string `json:"resultTimestamp,omitempty"`
	// Path of the completed snapshot.
	Path string `json:"path,omitempty"`
	// Error of the last failed attempt.
	Error string `json:"error,omitempty"`
	// Failures counts failed attempts.
	Failures int32 `json:"failures,omitempty"`
}

// FlinkStateSnapshotList is a list of FlinkStateSnapshots.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
type FlinkStateSnapshotList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []FlinkStateSnapshot `json:"items"`
}

// Labels and finalizer the operator keeps on snapshots (upstream names).
const (
	LabelSnapshotType        = "snapshot.type"
	LabelSnapshotTriggerType = "snapshot.trigger-type"
	LabelSnapshotState       = "snapshot.state"
	LabelJobReferenceKind    = "job-reference.kind"
	LabelJobReferenceName    = "job-reference.name"
	// LabelJobReferenceNamespace [ours] is set for cross-namespace references.
	LabelJobReferenceNamespace = "job-reference.namespace"

	// SnapshotFinalizer holds a snapshot until its data is disposed.
	SnapshotFinalizer = "flinkstatesnapshots.flink.apache.org/finalizer"
)

// Snapshot types as used in the snapshot.type label.
const (
	SnapshotTypeSavepoint  = "SAVEPOINT"
	SnapshotTypeCheckpoint = "CHECKPOINT"
)
