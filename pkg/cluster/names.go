package cluster

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
)

// Label keys and values, upstream's (StandaloneKubernetesUtils and Flink's
// Constants), so selectors, dashboards and kubectl habits carry over.
const (
	LabelApp       = "app"
	LabelComponent = "component"
	LabelType      = "type"

	// TypeStandalone is the value of the type label on every object.
	TypeStandalone = "flink-standalone-kubernetes"

	ComponentJobManager  = "jobmanager"
	ComponentTaskManager = "taskmanager"
)

// Annotations the operator writes. They are this operator's own (upstream has
// no equivalent), hence its own prefix.
const (
	// AnnotationConfigHash on pod templates is a hash of the ConfigMap data:
	// pods roll when the configuration changes.
	AnnotationConfigHash = "flinkops.io/config-hash"
	// AnnotationSpecHash on every built object is a hash of what the
	// operator built (see SpecHashChanged).
	AnnotationSpecHash = "flinkops.io/spec-hash"
	// AnnotationFlinkDefaults on the ConfigMap records the operator's Flink
	// defaults (the Flink keys of its configuration, JSON) the cluster was
	// deployed with: a running cluster keeps them until its next deploy,
	// whatever the operator's configuration says meanwhile (upstream applies
	// changed defaults at a resource's next deploy). On the ConfigMap only,
	// whose data holds the same values already.
	AnnotationFlinkDefaults = "flinkops.io/flink-defaults"
)

// Names, ports and paths shared with the image and with Flink.
const (
	// MainContainerName is upstream's (and Flink's) main container name; a
	// pod template container of this name is merged into it.
	MainContainerName = "flink-main-container"
	// ConfigVolumeName is the volume holding the ConfigMap (Flink's name).
	ConfigVolumeName = "flink-config-volume"
	// DefaultConfDir is where the image's scripts read the configuration.
	DefaultConfDir = "/opt/flink/conf"
	// DefaultEntrypoint is the official image's entrypoint
	// (kubernetes.entry.path overrides it).
	DefaultEntrypoint = "/docker-entrypoint.sh"

	// PodIPEnv carries the pod IP (downward API), for -D
	// jobmanager.rpc.address=$(_POD_IP_ADDRESS) with HA, as upstream.
	PodIPEnv = "_POD_IP_ADDRESS"

	JobManagerRPCPort   int32 = 6123
	BlobServerPort      int32 = 6124
	DefaultRESTPort     int32 = 8081
	TaskManagerRPCPort  int32 = 6122
	RPCPortName               = "jobmanager-rpc"
	BlobPortName              = "blobserver"
	RESTPortName              = "rest"
	TaskManagerPortName       = "taskmanager-rpc"
	Log4jConsoleFile          = "log4j-console.properties"
	LogbackConsoleFile        = "logback-console.xml"
	ConfigYAMLFile            = "config.yaml"
	LegacyConfigFile          = "flink-conf.yaml"
)

// ConfigMapName is the ConfigMap holding the Flink configuration.
func ConfigMapName(name string) string { return "flink-config-" + name }

// JobManagerDeploymentName is the JobManager Deployment: the resource's name.
func JobManagerDeploymentName(name string) string { return name }

// TaskManagerDeploymentName is the TaskManager Deployment.
func TaskManagerDeploymentName(name string) string { return name + "-taskmanager" }

// RPCServiceName is the headless JobManager Service that
// jobmanager.rpc.address names.
func RPCServiceName(name string) string { return name }

// RESTServiceName is the Service of the JobManager's REST API; the operator
// talks to http://<name>-rest.<namespace>.svc:<rest.port>.
func RESTServiceName(name string) string { return name + "-rest" }

// Mode is how a cluster is deployed, as far as its labels tell: Standalone
// (the operator creates the JobManager and TaskManager Deployments, labelled
// like upstream's StandaloneKubernetesUtils) or Native (Flink's Kubernetes
// integration, which creates the TaskManager pods itself and labels them like
// Flink's KubernetesUtils). The two differ only in the type label, so the
// label and selector functions take the mode rather than coming in
// Native* twins. A bool underneath: a caller holding Input.Native (or
// NativeMode's answer) passes Mode(native).
type Mode bool

// The two modes.
const (
	Standalone Mode = false
	Native     Mode = true
)

// typeLabel is the value of the type label on every object of a cluster in
// mode m.
func (m Mode) typeLabel() string {
	if m == Native {
		return TypeNative
	}
	return TypeStandalone
}

// CommonLabels are on every object of a cluster in mode: app=<name> and
// type=flink-standalone-kubernetes (upstream's getCommonLabels) or
// type=flink-native-kubernetes (Flink's KubernetesUtils.getCommonLabels).
func CommonLabels(mode Mode, name string) map[string]string {
	return map[string]string{LabelApp: name, LabelType: mode.typeLabel()}
}

// Labels are the pod and selector labels of one component: the common labels
// and component=jobmanager|taskmanager. In native mode Flink's resource
// manager labels the TaskManager pods it creates
// Labels(Native, name, ComponentTaskManager).
func Labels(mode Mode, name, component string) map[string]string {
	l := CommonLabels(mode, name)
	l[LabelComponent] = component
	return l
}

// TaskManagerSelector is the TaskManager pod selector in string form, for
// status.taskManager.labelSelector (the scale subresource's selectorpath)
// and for observing the pods; in native mode it selects the pods Flink
// creates.
func TaskManagerSelector(mode Mode, name string) string {
	return labels.SelectorFromSet(Labels(mode, name, ComponentTaskManager)).String()
}

// JobManagerSelector is the JobManager pod selector in string form, for
// listing JobManager pods.
func JobManagerSelector(mode Mode, name string) string {
	return labels.SelectorFromSet(Labels(mode, name, ComponentJobManager)).String()
}

// OwnerReference makes the FlinkDeployment the controller of an object, so
// the garbage collector deletes the cluster with it and informers can map an
// object back to its FlinkDeployment. TypeMeta of d may be empty (typed
// objects from a lister have none), so the kind is fixed here.
func OwnerReference(d *v1beta1.FlinkDeployment) metav1.OwnerReference {
	return *metav1.NewControllerRef(d, v1beta1.SchemeGroupVersion.WithKind("FlinkDeployment"))
}
