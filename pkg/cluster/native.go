package cluster

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
)

// Native mode: names, labels and paths of Flink's own Kubernetes integration
// (flink-kubernetes: Constants, KubernetesLabel, the JobManager decorators),
// so the objects the operator builds are the ones Flink's
// KubernetesClusterDescriptor would create and Flink's resource manager finds
// what it expects at run time. See the package doc.
const (
	// TypeNative is the type label of every object of a native cluster,
	// including the TaskManager pods and HA ConfigMaps Flink creates.
	TypeNative = "flink-native-kubernetes"

	// LabelConfigMapType and ConfigMapTypeHA label the HA ConfigMaps Flink
	// creates with high-availability.type kubernetes.
	LabelConfigMapType = "configmap-type"
	ConfigMapTypeHA    = "high-availability"

	// PodTemplateVolumeName, PodTemplateDir and TaskManagerPodTemplateFile
	// are Flink's PodTemplateMountDecorator's: the TaskManager pod template
	// is the key TaskManagerPodTemplateFile of ConfigMap pod-template-<name>,
	// mounted at PodTemplateDir in the JobManager.
	PodTemplateVolumeName      = "pod-template-volume"
	PodTemplateDir             = "/opt/flink/pod-template"
	TaskManagerPodTemplateFile = "taskmanager-pod-template.yaml"

	// KubernetesJobManagerScript is the distribution's native JobManager
	// start script (bin/kubernetes-jobmanager.sh), run through bash -c as
	// Flink's CmdJobManagerDecorator does.
	KubernetesJobManagerScript = "kubernetes-jobmanager.sh"

	// TargetApplication and TargetSession are Flink's
	// KubernetesDeploymentTarget names: execution.target and the first
	// argument of KubernetesJobManagerScript.
	TargetApplication = "kubernetes-application"
	TargetSession     = "kubernetes-session"

	applicationEntrypointClass = "org.apache.flink.kubernetes.entrypoint.KubernetesApplicationClusterEntrypoint"
	sessionEntrypointClass     = "org.apache.flink.kubernetes.entrypoint.KubernetesSessionClusterEntrypoint"

	// maxClusterIDLength is Flink's limit on kubernetes.cluster-id.
	maxClusterIDLength = 45
)

// Flink option keys of native mode.
const (
	keyExecutionTarget      = "execution.target"
	keyEntrypointClass      = "kubernetes.internal.jobmanager.entrypoint.class"
	keyJMEntrypointArgs     = "kubernetes.jobmanager.entrypoint.args"
	keyContainerImage       = "kubernetes.container.image.ref" // Flink ≥ 1.17
	keyContainerImageLegacy = "kubernetes.container.image"     // its name before 1.17
	keyImagePullPolicy      = "kubernetes.container.image.pull-policy"
	keyServiceAccount       = "kubernetes.service-account"
	keyRESTServiceType      = "kubernetes.rest-service.exposed.type"
	keyJMOwnerReference     = "kubernetes.jobmanager.owner.reference"
	keyJMReplicas           = "kubernetes.jobmanager.replicas"
	keyTMPodTemplateFile    = "kubernetes.pod-template-file.taskmanager"
	keyJMCPU                = "kubernetes.jobmanager.cpu.amount" // Flink ≥ 1.17
	keyTMCPU                = "kubernetes.taskmanager.cpu.amount"
	keyJMCPULegacy          = "kubernetes.jobmanager.cpu" // before 1.17
	keyTMCPULegacy          = "kubernetes.taskmanager.cpu"
	keyJMCPULimitFactor     = "kubernetes.jobmanager.cpu.limit-factor"
	keyJMMemoryLimitFactor  = "kubernetes.jobmanager.memory.limit-factor"
	keyTMCPULimitFactor     = "kubernetes.taskmanager.cpu.limit-factor"
	keyTMMemoryLimitFactor  = "kubernetes.taskmanager.memory.limit-factor"
	keyApplicationMain      = "$internal.application.main"
	keyApplicationArgs      = "$internal.application.program-args"
	// The restore keys are the ones upstream writes for every Flink version
	// (its SavepointConfigOptions); Flink ≥ 1.20 reads them as the
	// deprecated keys of execution.state-recovery.*, and tools written for
	// upstream (its own e2e among them) look for these names in the
	// JobManager's log.
	keyRestorePath     = "execution.savepoint.path"
	keyIgnoreUnclaimed = "execution.savepoint.ignore-unclaimed-state"
)

// nativeClientOnlyKeys are dropped from a native cluster's configuration, as
// Flink's FlinkConfMountDecorator drops them from the file it ships: they
// describe the client's host, not the cluster's pods.
var nativeClientOnlyKeys = []string{
	"kubernetes.config.file", "$internal.deployment.config-dir", "rest.bind-address",
	"jobmanager.bind-host", "taskmanager.bind-host", "taskmanager.host",
}

// NativeMode is upstream's reading of spec.mode: native unless the mode is
// standalone, so an unset mode is native (KubernetesDeploymentMode's
// default). Build does not apply it; the caller sets Input.Native.
func NativeMode(mode v1beta1.KubernetesDeploymentMode) bool {
	return mode != v1beta1.DeploymentModeStandalone
}

// PodTemplateConfigMapName is the ConfigMap holding the TaskManager pod
// template of a native cluster (Flink's KubernetesLabel.POD_TEMPLATE_CONFIG_MAP).
func PodTemplateConfigMapName(name string) string { return "pod-template-" + name }

// TaskManagerPodNamePrefix is how the names of the TaskManager pods Flink
// creates begin: <name>-taskmanager-<attempt>-<n>.
func TaskManagerPodNamePrefix(name string) string { return name + "-taskmanager-" }

// HAClusterConfigMapName is the ConfigMap Flink's Kubernetes HA (Flink ≥
// 1.15) keeps leader information in: <cluster-id>-cluster-config-map.
func HAClusterConfigMapName(name string) string { return name + "-cluster-config-map" }

// HAJobConfigMapName is the ConfigMap Flink's Kubernetes HA keeps a job's
// checkpoint pointers and counter in: <cluster-id>-<job-id>-config-map.
func HAJobConfigMapName(name, jobID string) string { return name + "-" + jobID + "-config-map" }

// HAConfigMapLabels are the labels Flink 1.x puts on the HA ConfigMaps it
// creates (KubernetesUtils.getConfigMapLabels): Flink's common labels (the
// native ones in either mode, since Flink labels them itself) and
// configmap-type=high-availability. Flink 2 puts the common labels only
// (haconfigmap.go: IsHAConfigMap recognises both).
func HAConfigMapLabels(name string) map[string]string {
	l := CommonLabels(Native, name)
	l[LabelConfigMapType] = ConfigMapTypeHA
	return l
}

// HAConfigMapSelector selects the HA ConfigMaps Flink 1.x creates for
// cluster name (HAConfigMapLabels). It misses Flink 2's, which have no
// configmap-type label: to find the HA ConfigMaps of any Flink version,
// list with HAConfigMapListSelector and keep those IsHAConfigMap accepts.
func HAConfigMapSelector(name string) string {
	return labels.SelectorFromSet(HAConfigMapLabels(name)).String()
}

// mode is the deployment mode of the cluster being built, for its labels.
func (p *plan) mode() Mode { return Mode(p.in.Native) }

// applyNativeKeys writes what Flink's native integration reads on top of the
// configuration every cluster gets, as upstream's FlinkConfigBuilder and
// Flink's KubernetesClusterDescriptor write it: the deployment target and
// entrypoint, the kubernetes.* options from the spec (image, pull policy,
// service account, owner reference, JobManager replicas, CPU and limit
// factors, the TaskManager pod template) and, for an application, the job's
// entry class, arguments and restore point, which native mode passes in the
// configuration instead of on the command line. It runs after the owned keys,
// so it sees the finished configuration apart from the legacy list rewrite.
func (p *plan) applyNativeKeys() error {
	conf, spec := p.conf, p.spec
	if len(p.name) > maxClusterIDLength || len(validation.IsDNS1035Label(p.name)) > 0 {
		// Flink's AbstractKubernetesParameters.getClusterId refuses others:
		// the id names Services and, with suffixes, its own objects.
		return fmt.Errorf("metadata.name %q: native mode needs a DNS-1035 label of at most %d characters (Flink's kubernetes.cluster-id)", p.name, maxClusterIDLength)
	}
	for _, k := range nativeClientOnlyKeys {
		delete(conf, k)
	}
	if p.jmReplicas > 1 && !p.ha {
		// Flink's KubernetesJobManagerParameters refuses standby JobManagers
		// without HA.
		return fmt.Errorf("spec.jobManager.replicas %d needs high availability (high-availability.type kubernetes) in native mode", p.jmReplicas)
	}

	target, entry := TargetSession, sessionEntrypointClass
	if spec.Job != nil {
		target, entry = TargetApplication, applicationEntrypointClass
	}
	conf[keyExecutionTarget] = target
	conf[keyEntrypointClass] = entry

	imageKey := keyContainerImage
	if !p.version.AtLeast(1, 17) {
		imageKey = keyContainerImageLegacy
	}
	conf[imageKey] = strings.TrimSpace(spec.Image)
	if v := strings.TrimSpace(spec.ImagePullPolicy); v != "" {
		conf[keyImagePullPolicy] = v
	}
	if v := strings.TrimSpace(spec.ServiceAccount); v != "" {
		conf[keyServiceAccount] = v
	}
	setDefault(conf, keyRESTServiceType, "ClusterIP")
	conf[keyJMOwnerReference] = p.ownerReferenceOption()
	conf[keyJMReplicas] = strconv.Itoa(int(p.jmReplicas))

	if err := p.applyNativeResources(); err != nil {
		return err
	}
	if p.tmPodTemplate = p.nativeTaskManagerPodTemplate(); p.tmPodTemplate != nil {
		conf[keyTMPodTemplateFile] = PodTemplateDir + "/" + TaskManagerPodTemplateFile
	}
	if spec.Job != nil {
		p.applyNativeJobKeys()
	}
	return nil
}

// ownerReferenceOption is kubernetes.jobmanager.owner.reference naming the
// FlinkDeployment, as upstream's setOwnerReference writes it (controller
// false, blockOwnerDeletion true). The operator creates the JobManager
// Deployment itself with its own controller reference, so Flink only reads
// this if it ever creates the Deployment; it is written for parity with
// upstream's configuration. Flink ≥ 1.19 reads a YAML list of maps, older
// versions the legacy "k:v,k:v" form.
func (p *plan) ownerReferenceOption() string {
	d := p.in.Deployment
	gv := v1beta1.SchemeGroupVersion.String()
	if p.version.StandardYAML() {
		b, _ := json.Marshal([]map[string]string{{
			"apiVersion": gv, "kind": "FlinkDeployment", "name": d.Name, "uid": string(d.UID),
			"controller": "false", "blockOwnerDeletion": "true",
		}})
		return string(b)
	}
	return "apiVersion:" + gv + ",blockOwnerDeletion:true,controller:false,kind:FlinkDeployment,name:" + d.Name + ",uid:" + string(d.UID)
}

// applyNativeResources writes the CPU options (memory is already
// <component>.memory.process.size) so Flink sizes the TaskManager pods it
// creates; the JobManager's are written too, as upstream does, although the
// operator sizes its container itself. Limit factors come from
// spec.*.resources when it gives both a request and a limit, as upstream's
// setResourceRequirements.
func (p *plan) applyNativeResources() error {
	legacy := !p.version.AtLeast(1, 17)
	for _, c := range []struct {
		field                string
		res                  componentResources
		reqs                 *corev1.ResourceRequirements
		cpuKey, legacyKey    string
		cpuFactor, memFactor string
	}{
		{"spec.jobManager", p.jm, jobManagerRequirements(p.spec.JobManager), keyJMCPU, keyJMCPULegacy, keyJMCPULimitFactor, keyJMMemoryLimitFactor},
		{"spec.taskManager", p.tm, taskManagerRequirements(p.spec.TaskManager), keyTMCPU, keyTMCPULegacy, keyTMCPULimitFactor, keyTMMemoryLimitFactor},
	} {
		cont := c.res.container
		if q, ok := requestOrLimit(cont, corev1.ResourceCPU); ok {
			v := strconv.FormatFloat(float64(q.MilliValue())/1000, 'f', -1, 64)
			p.conf[c.cpuKey] = v
			if legacy {
				p.conf[c.legacyKey] = v
			}
		}
		if c.reqs == nil {
			continue
		}
		for _, f := range []struct {
			name corev1.ResourceName
			key  string
		}{{corev1.ResourceCPU, c.cpuFactor}, {corev1.ResourceMemory, c.memFactor}} {
			_, hasReq := c.reqs.Requests[f.name]
			_, hasLim := c.reqs.Limits[f.name]
			if !hasReq || !hasLim {
				continue
			}
			req, lim := cont.Requests[f.name], cont.Limits[f.name]
			factor := lim.AsApproximateFloat64() / req.AsApproximateFloat64()
			if math.IsNaN(factor) || math.IsInf(factor, 0) || factor < 1 {
				return fmt.Errorf("%s.resources: the %s limit must be at least the request (Flink's %s)", c.field, f.name, f.key)
			}
			p.conf[f.key] = strconv.FormatFloat(factor, 'f', -1, 64)
		}
	}
	return nil
}

func jobManagerRequirements(jm *v1beta1.JobManagerSpec) *corev1.ResourceRequirements {
	if jm == nil {
		return nil
	}
	return jm.Resources
}

func taskManagerRequirements(tm *v1beta1.TaskManagerSpec) *corev1.ResourceRequirements {
	if tm == nil {
		return nil
	}
	return tm.Resources
}

// requestOrLimit is a resource's request, or its limit when only that is set
// (Kubernetes defaults the request to the limit).
func requestOrLimit(r corev1.ResourceRequirements, name corev1.ResourceName) (resource.Quantity, bool) {
	if q, ok := r.Requests[name]; ok {
		return q, true
	}
	q, ok := r.Limits[name]
	return q, ok
}

// applyNativeJobKeys passes the job to Flink's application entrypoint
// through the configuration (upstream's applyJobConfig and
// ApplicationReconciler.deploy): entry class, program arguments and
// allowNonRestoredState. The jar is pipeline.jars (applyJobKeys); the
// restore point, parallelism, job id and the other job keys are those of
// every application (applyJobKeys).
func (p *plan) applyNativeJobKeys() {
	conf, job := p.conf, p.spec.Job
	if c := strings.TrimSpace(job.EntryClass); c != "" {
		conf[keyApplicationMain] = c
	}
	if len(job.Args) > 0 {
		// A YAML flow list (JSON is YAML); rewritten to "a;b" for Flink <
		// 1.19 by rewriteLegacyLists.
		b, _ := json.Marshal(job.Args)
		conf[keyApplicationArgs] = string(b)
	}
	switch {
	case p.in.AllowNonRestoredState || (job.AllowNonRestoredState != nil && *job.AllowNonRestoredState):
		conf[keyIgnoreUnclaimed] = "true"
	case job.AllowNonRestoredState != nil:
		conf[keyIgnoreUnclaimed] = "false"
	}
}

// nativeTaskManagerPodTemplate is the pod template Flink's resource manager
// builds TaskManager pods from: spec.podTemplate with
// spec.taskManager.podTemplate laid over it (the rules of the package doc),
// plus the TaskManager resources Flink has no option for (anything but cpu
// and memory, e.g. ephemeral-storage) on flink-main-container, as upstream's
// applyResourceRequirementsToPodTemplate. Flink itself sets the image, pull
// policy, service account, labels, command, CPU and memory of the pods it
// creates from it. nil when there is nothing to template.
func (p *plan) nativeTaskManagerPodTemplate() *corev1.Pod {
	var tmTemplate *corev1.Pod
	if tm := p.spec.TaskManager; tm != nil {
		tmTemplate = tm.PodTemplate
	}
	var extra corev1.ResourceRequirements
	for _, side := range []struct {
		in  corev1.ResourceList
		out *corev1.ResourceList
	}{{p.tm.container.Requests, &extra.Requests}, {p.tm.container.Limits, &extra.Limits}} {
		for name, q := range side.in {
			if name == corev1.ResourceCPU || name == corev1.ResourceMemory {
				continue
			}
			if *side.out == nil {
				*side.out = corev1.ResourceList{}
			}
			(*side.out)[name] = q.DeepCopy()
		}
	}
	extra.Claims = p.tm.container.Claims
	hasExtra := len(extra.Requests) > 0 || len(extra.Limits) > 0 || len(extra.Claims) > 0
	if p.spec.PodTemplate == nil && tmTemplate == nil && !hasExtra {
		return nil
	}
	var pod corev1.PodTemplateSpec
	mergePodTemplate(&pod, p.spec.PodTemplate)
	mergePodTemplate(&pod, tmTemplate)
	if hasExtra {
		i := slices.IndexFunc(pod.Spec.Containers, func(c corev1.Container) bool { return c.Name == MainContainerName })
		if i < 0 {
			pod.Spec.Containers = append(pod.Spec.Containers, corev1.Container{Name: MainContainerName})
			i = len(pod.Spec.Containers) - 1
		}
		mergeResources(&pod.Spec.Containers[i].Resources, extra)
	}
	return &corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Labels: pod.Labels, Annotations: pod.Annotations},
		Spec:       pod.Spec,
	}
}

// podTemplateConfigMap is pod-template-<name> with the TaskManager pod
// template, as Flink's PodTemplateMountDecorator ships it.
func (p *plan) podTemplateConfigMap() (*corev1.ConfigMap, error) {
	b, err := yaml.Marshal(p.tmPodTemplate)
	if err != nil {
		return nil, fmt.Errorf("TaskManager pod template: %w", err)
	}
	cm := &corev1.ConfigMap{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{
			Name:            PodTemplateConfigMapName(p.name),
			Namespace:       p.namespace,
			Labels:          CommonLabels(p.mode(), p.name),
			OwnerReferences: []metav1.OwnerReference{OwnerReference(p.in.Deployment)},
		},
		Data: map[string]string{TaskManagerPodTemplateFile: string(b)},
	}
	setSpecHash(&cm.ObjectMeta, cm.Data)
	return cm, nil
}

// nativeJobManagerArgs are the main container's arguments as Flink's
// CmdJobManagerDecorator builds them: the native start script with the
// deployment target and kubernetes.jobmanager.entrypoint.args, run through
// bash -c (KubernetesUtils.getStartCommandWithBashWrapper), so the image's
// entrypoint passes them through. The string is Flink's, trailing blank
// included when there are no extra arguments.
func (p *plan) nativeJobManagerArgs() []string {
	if p.guardsEndedJob() {
		return []string{"bash", "-c", endedJobGuard(p.in.DeployToken, p.conf[keyJMEntrypointArgs])}
	}
	return []string{"bash", "-c", KubernetesJobManagerScript + " " + p.conf[keyExecutionTarget] + " " + p.conf[keyJMEntrypointArgs]}
}

// buildNative builds the JobManager side of a native cluster (see the
// package doc); Flink's resource manager creates the TaskManager pods.
func (p *plan) buildNative() (*Cluster, error) {
	cm, err := p.configMap()
	if err != nil {
		return nil, err
	}
	configHash := ConfigHash(cm.Data)
	var tmpl *corev1.ConfigMap
	if p.tmPodTemplate != nil {
		if tmpl, err = p.podTemplateConfigMap(); err != nil {
			return nil, err
		}
		// The JobManager reads the template once, at start: a new template
		// needs a new JobManager pod.
		configHash = HashOf([]map[string]string{cm.Data, tmpl.Data})
	}
	jm, err := p.nativeJobManagerDeployment(configHash)
	if err != nil {
		return nil, err
	}
	rpc, rest, err := p.services()
	if err != nil {
		return nil, err
	}
	return &Cluster{
		Native: true, FlinkConfig: p.conf, ConfigMap: cm, PodTemplateConfigMap: tmpl,
		JobManager: jm, RPCService: rpc, RESTService: rest,
	}, nil
}

// nativeJobManagerDeployment is jobManagerDeployment with Flink's native
// arguments and, when there is a TaskManager pod template, its volume and
// mount (PodTemplateMountDecorator).
func (p *plan) nativeJobManagerDeployment(configHash string) (*appsv1.Deployment, error) {
	main := p.jobManagerContainer()
	if p.guardsEndedJob() {
		main.Env = append(main.Env, endedJobEnvVar(p.name))
	}
	var tmpl *corev1.Pod
	if p.spec.JobManager != nil {
		tmpl = p.spec.JobManager.PodTemplate
	}
	pod, err := p.pod(ComponentJobManager, main, p.nativeJobManagerArgs(), tmpl, p.jm, configHash)
	if err != nil {
		return nil, err
	}
	if err := p.addStartupProbe(&pod); err != nil { // startupprobe.go
		return nil, err
	}
	if p.tmPodTemplate != nil {
		pod.Spec.Volumes = mergeByKey(pod.Spec.Volumes, []corev1.Volume{{
			Name: PodTemplateVolumeName,
			VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
				LocalObjectReference: corev1.LocalObjectReference{Name: PodTemplateConfigMapName(p.name)},
				Items:                []corev1.KeyToPath{{Key: TaskManagerPodTemplateFile, Path: TaskManagerPodTemplateFile}},
			}},
		}}, func(v corev1.Volume) string { return v.Name }, nil)
		i := slices.IndexFunc(pod.Spec.Containers, func(c corev1.Container) bool { return c.Name == MainContainerName })
		c := &pod.Spec.Containers[i]
		c.VolumeMounts = mergeByKey(c.VolumeMounts, []corev1.VolumeMount{{Name: PodTemplateVolumeName, MountPath: PodTemplateDir}},
			func(m corev1.VolumeMount) string { return m.MountPath }, nil)
	}
	// Recreate, as in standalone mode: the operator replaces the JobManager
	// of a non-HA cluster only after the old one is gone.
	d := p.deployment(JobManagerDeploymentName(p.name), ComponentJobManager, p.jmReplicas, pod,
		appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType})
	if p.guardsEndedJob() {
		if d.Annotations == nil {
			d.Annotations = map[string]string{}
		}
		d.Annotations[AnnotationDeployToken] = p.in.DeployToken
	}
	return d, nil
}
