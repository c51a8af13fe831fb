package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// FlinkBlueGreenDeployment upgrades a job with no downtime: each version of
// spec.template runs as a child FlinkDeployment, <name>-blue or
// <name>-green; a new version starts beside the active one (from a
// savepoint of it when the upgrade mode keeps state), and the old child is
// deleted once the new one is ready (docs/bluegreen.md).
//
// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
// +kubebuilder:resource:shortName=flinkbgdep
// +kubebuilder:subresource:status
// +kubebuilder:subresource:scale:specpath=.spec.template.spec.taskManager.replicas,statuspath=.status.taskManagerReplicas
// +kubebuilder:printcolumn:name="Job Status",type=string,JSONPath=".status.jobStatus.state"
// +kubebuilder:printcolumn:name="Blue/Green State",type=string,JSONPath=".status.blueGreenState"
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=".metadata.creationTimestamp"
type FlinkBlueGreenDeployment struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   FlinkBlueGreenDeploymentSpec   `json:"spec,omitempty"`
	Status FlinkBlueGreenDeploymentStatus `json:"status,omitempty"`
}

// FlinkBlueGreenDeploymentSpec is the job's template and the blue/green
// settings.
type FlinkBlueGreenDeploymentSpec struct {
	// Configuration holds the kubernetes.operator.bluegreen.* options
	// (abort.grace-period, reconciliation.reschedule-interval,
	// deployment-deletion.delay).
	Configuration map[string]string `json:"configuration,omitempty"`
	// Ingress, when set, is one Ingress named after this resource that
	// leads to the active child's REST Service.
	Ingress *IngressSpec `json:"ingress,omitempty"`
	// Template is the FlinkDeployment each child runs.
	Template FlinkDeploymentTemplateSpec `json:"template,omitempty"`
}

// FlinkDeploymentTemplateSpec is a FlinkDeployment's spec with metadata.
type FlinkDeploymentTemplateSpec struct {
	// Metadata of the template (its labels and annotations go to the
	// children).
	ObjectMeta metav1.ObjectMeta `json:"metadata,omitempty"`
	// Spec of each child FlinkDeployment.
	Spec FlinkDeploymentSpec `json:"spec,omitempty"`
}

// FlinkBlueGreenDeploymentState is where a blue/green deployment is: one of
// the two steady ACTIVE states, or a step of a transition.
// +kubebuilder:validation:Enum=ACTIVE_BLUE;ACTIVE_GREEN;INITIALIZING_BLUE;SAVEPOINTING_BLUE;SAVEPOINTING_GREEN;TRANSITIONING_TO_BLUE;TRANSITIONING_TO_GREEN
type FlinkBlueGreenDeploymentState string

// The blue/green states (upstream's FlinkBlueGreenDeploymentState).
const (
	BlueGreenActiveBlue           FlinkBlueGreenDeploymentState = "ACTIVE_BLUE"
	BlueGreenActiveGreen          FlinkBlueGreenDeploymentState = "ACTIVE_GREEN"
	BlueGreenInitializingBlue     FlinkBlueGreenDeploymentState = "INITIALIZING_BLUE"
	BlueGreenSavepointingBlue     FlinkBlueGreenDeploymentState = "SAVEPOINTING_BLUE"
	BlueGreenSavepointingGreen    FlinkBlueGreenDeploymentState = "SAVEPOINTING_GREEN"
	BlueGreenTransitioningToBlue  FlinkBlueGreenDeploymentState = "TRANSITIONING_TO_BLUE"
	BlueGreenTransitioningToGreen FlinkBlueGreenDeploymentState = "TRANSITIONING_TO_GREEN"
	BlueGreenDeploymentTypeLabel                                = "flink/blue-green-deployment-type"
	BlueGreenDeploymentTypeBlue                                 = "BLUE"
	BlueGreenDeploymentTypeGreen                                = "GREEN"
)

// FlinkBlueGreenDeploymentStatus is the blue/green state machine's record:
// every step is written here before it is acted on.
type FlinkBlueGreenDeploymentStatus struct {
	// JobStatus mirrors the active child's job; its state is RECONCILING
	// while a transition deploys and FAILING after an abort.
	JobStatus JobStatus `json:"jobStatus,omitempty"`
	// BlueGreenState is the state machine's state.
	BlueGreenState FlinkBlueGreenDeploymentState `json:"blueGreenState,omitempty"`
	// LastReconciledSpec is the spec (JSON) the last step acted on.
	LastReconciledSpec string `json:"lastReconciledSpec,omitempty"`
	// LastReconciledTimestamp is when the status was last written.
	LastReconciledTimestamp string `json:"lastReconciledTimestamp,omitempty"`
	// AbortTimestamp is when a transition that is not ready gives up.
	AbortTimestamp string `json:"abortTimestamp,omitempty"`
	// DeploymentReadyTimestamp is when the new child was first seen ready
	// (the deletion delay of the old one counts from it).
	DeploymentReadyTimestamp string `json:"deploymentReadyTimestamp,omitempty"`
	// SavepointTriggerID is the Flink trigger id of the transition
	// savepoint, once its FlinkStateSnapshot has one.
	SavepointTriggerID string `json:"savepointTriggerId,omitempty"`
	// Error is why the last transition was aborted or could not start.
	Error string `json:"error,omitempty"`
	// TransitionSnapshot [ours] names the FlinkStateSnapshot (trigger type
	// UPGRADE) of the active child that the transition in progress
	// restores from (docs/bluegreen.md).
	TransitionSnapshot string `json:"transitionSnapshot,omitempty"`
	// TaskManagerReplicas [ours] is the active child's TaskManager
	// replicas (the scale subresource's status path).
	TaskManagerReplicas int32 `json:"taskManagerReplicas,omitempty"`
}

// FlinkBlueGreenDeploymentList is a list of FlinkBlueGreenDeployments.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
type FlinkBlueGreenDeploymentList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	Items []FlinkBlueGreenDeployment `json:"items"`
}
