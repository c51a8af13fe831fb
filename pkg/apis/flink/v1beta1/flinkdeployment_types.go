package v1beta1

import (
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// FlinkDeployment is a Flink cluster: an application cluster when spec.job is
// set, a session cluster otherwise.
//
// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
// +kubebuilder:resource:shortName=flinkdep
// +kubebuilder:subresource:status
// +kubebuilder:subresource:scale:specpath=.spec.taskManager.replicas,statuspath=.status.taskManager.replicas,selectorpath=.status.taskManager.labelSelector
// +kubebuilder:printcolumn:name="Job Status",type=string,JSONPath=".status.jobStatus.state"
// +kubebuilder:printcolumn:name="Lifecycle State",type=string,JSONPath=".status.lifecycleState"
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=".metadata.creationTimestamp"
type FlinkDeployment struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   FlinkDeploymentSpec   `json:"spec,omitempty"`
	Status FlinkDeploymentStatus `json:"status,omitempty"`
}

// FlinkVersion names a Flink minor version.
// +kubebuilder:validation:Enum=v1_13;v1_14;v1_15;v1_16;v1_17;v1_18;v1_19;v1_20;v2_0;v2_1;v2_2;v2_3;v2_4
type FlinkVersion string

// Flink versions the API accepts.
const (
	FlinkVersion1_13 FlinkVersion = "v1_13"
	FlinkVersion1_14 FlinkVersion = "v1_14"
	FlinkVersion1_15 FlinkVersion = "v1_15"
	FlinkVersion1_16 FlinkVersion = "v1_16"
	FlinkVersion1_17 FlinkVersion = "v1_17"
	FlinkVersion1_18 FlinkVersion = "v1_18"
	FlinkVersion1_19 FlinkVersion = "v1_19"
	FlinkVersion1_20 FlinkVersion = "v1_20"
	FlinkVersion2_0  FlinkVersion = "v2_0"
	FlinkVersion2_1  FlinkVersion = "v2_1"
	FlinkVersion2_2  FlinkVersion = "v2_2"
	FlinkVersion2_3  FlinkVersion = "v2_3"
	FlinkVersion2_4  FlinkVersion = "v2_4"
)

// KubernetesDeploymentMode says who creates the TaskManagers.
// +kubebuilder:validation:Enum=native;standalone
type KubernetesDeploymentMode string

const (
	// DeploymentModeNative lets Flink's Kubernetes integration create TaskManagers.
	DeploymentModeNative KubernetesDeploymentMode = "native"
	// DeploymentModeStandalone has the operator create the TaskManager Deployment.
	DeploymentModeStandalone KubernetesDeploymentMode = "standalone"
)

// FlinkDeploymentSpec is the desired Flink cluster (and job, for applications).
type FlinkDeploymentSpec struct {
	// Job is the application job; absent for a session cluster.
	Job *JobSpec `json:"job,omitempty"`
	// RestartNonce: a change restarts the cluster (and job).
	RestartNonce *int64 `json:"restartNonce,omitempty"`
	// FlinkConfiguration holds Flink and kubernetes.operator.* settings, flat
	// ("a.b: v") or nested YAML.
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:pruning:PreserveUnknownFields
	FlinkConfiguration *Configuration `json:"flinkConfiguration,omitempty"`
	// Image is the Flink container image.
	Image string `json:"image,omitempty"`
	// ImagePullPolicy of the Flink containers.
	ImagePullPolicy string `json:"imagePullPolicy,omitempty"`
	// ServiceAccount the Flink pods run as.
	ServiceAccount string `json:"serviceAccount,omitempty"`
	// FlinkVersion of the image.
	FlinkVersion FlinkVersion `json:"flinkVersion,omitempty"`
	// Ingress for the Flink web UI.
	Ingress *IngressSpec `json:"ingress,omitempty"`
	// PodTemplate is merged into both JobManager and TaskManager pods.
	PodTemplate *corev1.Pod `json:"podTemplate,omitempty"`
	// JobManager settings.
	JobManager *JobManagerSpec `json:"jobManager,omitempty"`
	// TaskManager settings.
	TaskManager *TaskManagerSpec `json:"taskManager,omitempty"`
	// LogConfiguration holds log config files by name (log4j-console.properties, ...).
	LogConfiguration map[string]string `json:"logConfiguration,omitempty"`
	// Mode chooses native or standalone Kubernetes integration.
	Mode KubernetesDeploymentMode `json:"mode,omitempty"`
}

// IngressSpec describes an Ingress for the Flink web UI.
type IngressSpec struct {
	// Template is the ingress host/path template ({{name}}, {{namespace}}).
	Template string `json:"template,omitempty"`
	// ClassName is the ingress class.
	ClassName string `json:"className,omitempty"`
	// Annotations of the Ingress.
	Annotations map[string]string `json:"annotations,omitempty"`
	// Labels of the Ingress.
	Labels map[string]string `json:"labels,omitempty"`
	// TLS settings of the Ingress.
	TLS []networkingv1.IngressTLS `json:"tls,omitempty"`
}

// ResourceSpec is a Flink process's resource request in Flink's terms.
type ResourceSpec struct {
	// CPU cores.
	CPU *float64 `json:"cpu,omitempty"`
	// Memory size, Flink or Kubernetes notation ("2048m", "2g", "2Gi").
	Memory string `json:"memory,omitempty"`
	// EphemeralStorage size.
	EphemeralStorage string `json:"ephemeralStorage,omitempty"`
}

// JobManagerSpec configures the JobManager pods.
type JobManagerSpec struct {
	// Resource in Flink's terms.
	Resource *ResourceSpec `json:"resource,omitempty"`
	// Resources in Kubernetes' terms (wins over Resource where both are set).
	Resources *corev1.ResourceRequirements `json:"resources,omitempty"`
	// Replicas of the JobManager (more than one needs HA).
	Replicas *int32 `json:"replicas,omitempty"`
	// PodTemplate merged into the JobManager pod.
	PodTemplate *corev1.Pod `json:"podTemplate,omitempty"`
}

// TaskManagerSpec configures the TaskManager pods.
type TaskManagerSpec struct {
	// Resource in Flink's terms.
	Resource *ResourceSpec `json:"resource,omitempty"`
	// Resources in Kubernetes' terms.
	Resources *corev1.ResourceRequirements `json:"resources,omitempty"`
	// Replicas of the TaskManager (standalone mode).
	Replicas *int32 `json:"replicas,omitempty"`
	// PodTemplate merged into the TaskManager pod.
	PodTemplate *corev1.Pod `json:"podTemplate,omitempty"`
}

// JobManagerDeploymentStatus is the observed state of the JobManager.
// +kubebuilder:validation:Enum=READY;DEPLOYED_NOT_READY;DEPLOYING;MISSING;ERROR
type JobManagerDeploymentStatus string

// JobManager deployment states.
const (
	JobManagerReady            JobManagerDeploymentStatus = "READY"
	JobManagerDeployedNotReady JobManagerDeploymentStatus = "DEPLOYED_NOT_READY"
	JobManagerDeploying        JobManagerDeploymentStatus = "DEPLOYING"
	JobManagerMissing          JobManagerDeploymentStatus = "MISSING"
	JobManagerError            JobManagerDeploymentStatus = "ERROR"
)

// FlinkDeploymentStatus is what the operator observed and recorded.
type FlinkDeploymentStatus struct {
	// JobStatus of the application job.
	JobStatus JobStatus `json:"jobStatus,omitempty"`
	// Error is the last error, in plain text or upstream's JSON shape.
	Error string `json:"error,omitempty"`
	// ObservedGeneration is the generation the status describes.
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// LifecycleState summarises the resource's life.
	LifecycleState ResourceLifecycleState `json:"lifecycleState,omitempty"`
	// ClusterInfo holds facts about the running cluster (flink-version, ...).
	ClusterInfo map[string]string `json:"clusterInfo,omitempty"`
	// JobManagerDeploymentStatus is the observed JobManager state.
	JobManagerDeploymentStatus JobManagerDeploymentStatus `json:"jobManagerDeploymentStatus,omitempty"`
	// ReconciliationStatus is the write-ahead log of spec changes.
	ReconciliationStatus ReconciliationStatus `json:"reconciliationStatus,omitempty"`
	// TaskManager is the scale subresource's view of the TaskManagers.
	TaskManager *TaskManagerInfo `json:"taskManager,omitempty"`
	// Conditions of the resource.
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// TaskManagerInfo backs the scale subresource.
type TaskManagerInfo struct {
	// LabelSelector of the TaskManager pods, in string form.
	LabelSelector string `json:"labelSelector,omitempty"`
	// Replicas observed.
	Replicas int32 `json:"replicas,omitempty"`
}

// FlinkDeploymentList is a list of FlinkDeployments.
//
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +kubebuilder:object:root=true
type FlinkDeploymentList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []FlinkDeployment `json:"items"`
}

// DeploymentFinalizer holds a FlinkDeployment until the operator has had its
// chance to take a savepoint on deletion (upstream's JOSDK-derived name, so
// either operator recognises it).
const DeploymentFinalizer = "flinkdeployments.flink.apache.org/finalizer"
