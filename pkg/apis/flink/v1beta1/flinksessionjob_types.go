package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// FlinkSessionJob is a job submitted to a session FlinkDeployment.
//
// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
// +kubebuilder:resource:shortName=sessionjob
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Job Status",type=string,JSONPath=".status.jobStatus.state"
// +kubebuilder:printcolumn:name="Lifecycle State",type=string,JSONPath=".status.lifecycleState"
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=".metadata.creationTimestamp"
type FlinkSessionJob struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   FlinkSessionJobSpec   `json:"spec,omitempty"`
	Status FlinkSessionJobStatus `json:"status,omitempty"`
}

// FlinkSessionJobSpec is the desired session job.
type FlinkSessionJobSpec struct {
	// DeploymentName is the session FlinkDeployment (same namespace) to run on.
	DeploymentName string `json:"deploymentName,omitempty"`
	// Job to run.
	Job *JobSpec `json:"job,omitempty"`
	// RestartNonce: a change restarts the job.
	RestartNonce *int64 `json:"restartNonce,omitempty"`
	// FlinkConfiguration: job-level Flink and kubernetes.operator.* settings.
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:pruning:PreserveUnknownFields
	FlinkConfiguration *Configuration `json:"flinkConfiguration,omitempty"`
}

// FlinkSessionJobStatus is what the operator observed and recorded.
type FlinkSessionJobStatus struct {
	// JobStatus of the job.
	JobStatus JobStatus `json:"jobStatus,omitempty"`
	// Error is the last error.
	Error string `json:"error,omitempty"`
	// ObservedGeneration is the generation the status describes.
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// LifecycleState summarises the resource's life.
	LifecycleState ResourceLifecycleState `json:"lifecycleState,omitempty"`
	// ReconciliationStatus is the write-ahead log of spec changes.
	ReconciliationStatus ReconciliationStatus `json:"reconciliationStatus,omitempty"`
}

// FlinkSessionJobList is a list of FlinkSessionJobs.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
type FlinkSessionJobList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []FlinkSessionJob `json:"items"`
}

// SessionJobFinalizer holds a FlinkSessionJob until its job is stopped
// (upstream's JOSDK-derived name).
const SessionJobFinalizer = "flinksessionjobs.flink.apache.org/finalizer"
