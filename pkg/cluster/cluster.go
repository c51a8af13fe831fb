package cluster

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// AnnotationRestartNonce on pod templates carries spec.restartNonce, so a
// nonce change replaces the pods even when nothing else changed.
const AnnotationRestartNonce = "flinkops.io/restart-nonce"

// Cluster is every object of one Flink cluster the operator creates.
type Cluster struct {
	// Native is Input.Native: TaskManager is nil and Flink creates the
	// TaskManager pods itself.
	Native bool
	// FlinkConfig is the effective Flink configuration (what the ConfigMap's
	// config file holds), for callers that need option values (rest.port,
	// savepoint directories, ...) as the cluster sees them.
	FlinkConfig map[string]string
	ConfigMap   *corev1.ConfigMap
	JobManager  *appsv1.Deployment
	// TaskManager is the standalone TaskManager Deployment; nil in native
	// mode.
	TaskManager *appsv1.Deployment
	// PodTemplateConfigMap is pod-template-<name>, the TaskManager pod
	// template Flink reads in native mode; nil in standalone mode and when
	// there is no TaskManager pod template.
	PodTemplateConfigMap *corev1.ConfigMap
	// RPCService is the headless <name> Service (RPC and blob ports).
	RPCService *corev1.Service
	// RESTService is <name>-rest; its port is rest.port.
	RESTService *corev1.Service
}

// Services lists the RPC and REST Services.
func (c *Cluster) Services() []*corev1.Service {
	return []*corev1.Service{c.RPCService, c.RESTService}
}

// Build computes all objects of the cluster from one Input.
func Build(in Input) (*Cluster, error) {
	p, err := newPlan(in)
	if err != nil {
		return nil, err
	}
	if in.Native {
		return p.buildNative()
	}
	cm, err := p.configMap()
	if err != nil {
		return nil, err
	}
	configHash, err := p.podConfigHash(cm.Data) // scalehash.go
	if err != nil {
		return nil, err
	}
	jm, err := p.jobManagerDeployment(configHash)
	if err != nil {
		return nil, err
	}
	tm, err := p.taskManagerDeployment(configHash)
	if err != nil {
		return nil, err
	}
	rpc, rest, err := p.services()
	if err != nil {
		return nil, err
	}
	return &Cluster{FlinkConfig: p.conf, ConfigMap: cm, JobManager: jm, TaskManager: tm, RPCService: rpc, RESTService: rest}, nil
}

// JobManagerDeployment builds the JobManager Deployment <name>.
func JobManagerDeployment(in Input) (*appsv1.Deployment, error) {
	c, err := Build(in)
	if err != nil {
		return nil, err
	}
	return c.JobManager, nil
}

// TaskManagerDeployment builds the TaskManager Deployment <name>-taskmanager.
// A native-mode cluster has none (an error).
func TaskManagerDeployment(in Input) (*appsv1.Deployment, error) {
	c, err := Build(in)
	if err != nil {
		return nil, err
	}
	if c.TaskManager == nil {
		return nil, errors.New("cluster: a native-mode cluster has no TaskManager Deployment")
	}
	return c.TaskManager, nil
}

// Services builds <name> (headless; RPC 6123, blob 6124) and <name>-rest
// (port rest.port), both selecting the JobManager pods. It returns an error
// because rest.port comes from the user's configuration.
func Services(in Input) ([]*corev1.Service, error) {
	p, err := newPlan(in)
	if err != nil {
		return nil, err
	}
	rpc, rest, err := p.services()
	if err != nil {
		return nil, err
	}
	return []*corev1.Service{rpc, rest}, nil
}

// RESTPort is the REST port clients use (rest.port, default 8081) in an
// effective configuration such as Cluster.FlinkConfig.
func RESTPort(flinkConfig map[string]string) (int32, error) {
	if unset(flinkConfig, keyRESTPort) {
		return DefaultRESTPort, nil
	}
	return portOption(flinkConfig, keyRESTPort)
}

// jobManagerArgs are the entrypoint arguments of the JobManager, in
// upstream's order (CmdStandaloneJobManagerDecorator).
func (p *plan) jobManagerArgs() []string {
	haArg := "-D" + keyRPCAddress + "=$(" + PodIPEnv + ")"
	job := p.spec.Job
	if job == nil {
		args := []string{"jobmanager"}
		if p.ha {
			args = append(args, haArg)
		}
		return args
	}
	args := []string{"standalone-job"}
	if c := strings.TrimSpace(job.EntryClass); c != "" {
		args = append(args, "--job-classname", c)
	}
	if p.in.AllowNonRestoredState || (job.AllowNonRestoredState != nil && *job.AllowNonRestoredState) {
		args = append(args, "--allowNonRestoredState")
	}
	if p.in.RestorePath != "" {
		args = append(args, "--fromSavepoint", p.in.RestorePath)
	}
	if p.ha {
		// With HA each JobManager advertises its own address for leader
		// election; the Service name would point at all of them.
		args = append(args, haArg)
	}
	return append(args, job.Args...)
}

// mainContainer is the operator-built Flink container of a component.
func (p *plan) mainContainer(envPrefix string) corev1.Container {
	entry := DefaultEntrypoint
	if v := strings.TrimSpace(p.conf[keyEntryPath]); v != "" {
		entry = v
	}
	env := []corev1.EnvVar{{
		Name:      PodIPEnv,
		ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "status.podIP"}},
	}}
	if dir := p.confDir(); dir != DefaultConfDir {
		env = append(env, corev1.EnvVar{Name: "FLINK_CONF_DIR", Value: dir})
	}
	if dir := strings.TrimSpace(p.conf[keyLogDir]); dir != "" {
		env = append(env, corev1.EnvVar{Name: "FLINK_LOG_DIR", Value: dir})
	}
	// containerized.master.env.X / containerized.taskmanager.env.X, as in
	// Flink's own Kubernetes decorators.
	var names []string
	for k := range p.conf {
		if name, ok := strings.CutPrefix(k, envPrefix); ok && name != "" {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	for _, name := range names {
		env = append(env, corev1.EnvVar{Name: name, Value: p.conf[envPrefix+name]})
	}
	return corev1.Container{
		Name:            MainContainerName,
		Image:           p.spec.Image,
		ImagePullPolicy: corev1.PullPolicy(p.spec.ImagePullPolicy),
		Command:         []string{entry},
		Env:             env,
		VolumeMounts:    []corev1.VolumeMount{{Name: ConfigVolumeName, MountPath: p.confDir()}},
	}
}

func (p *plan) confDir() string {
	if v := strings.TrimSpace(p.conf[keyConfDir]); v != "" {
		return v
	}
	return DefaultConfDir
}

func (p *plan) configVolume() corev1.Volume {
	return corev1.Volume{
		Name: ConfigVolumeName,
		VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: ConfigMapName(p.name)},
		}},
	}
}

// pod builds one component's pod template: operator pod, then the common and
// the component's pod templates, then the operator's invariants.
func (p *plan) pod(component string, main corev1.Container, args []string, componentTemplate *corev1.Pod, res componentResources, configHash string) (corev1.PodTemplateSpec, error) {
	main.Args = args
	pod := corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: Labels(p.mode(), p.name, component)},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{main},
			Volumes:    []corev1.Volume{p.configVolume()},
		},
	}
	mergePodTemplate(&pod, p.spec.PodTemplate)
	mergePodTemplate(&pod, componentTemplate)

	// Invariants, re-applied over the templates.
	pod.Labels = mergeMap(pod.Labels, Labels(p.mode(), p.name, component))
	pod.Annotations = mergeMap(pod.Annotations, map[string]string{AnnotationConfigHash: configHash})
	if n := p.spec.RestartNonce; n != nil {
		pod.Annotations[AnnotationRestartNonce] = strconv.FormatInt(*n, 10)
	}
	pod.Spec.Volumes = mergeByKey(pod.Spec.Volumes, []corev1.Volume{p.configVolume()},
		func(v corev1.Volume) string { return v.Name }, nil)
	i := slices.IndexFunc(pod.Spec.Containers, func(c corev1.Container) bool { return c.Name == MainContainerName })
	c := &pod.Spec.Containers[i] // the operator put it there; merging by name keeps it
	c.Command, c.Args = main.Command, args
	if p.spec.Image != "" {
		c.Image = p.spec.Image
	}
	if p.spec.ImagePullPolicy != "" {
		c.ImagePullPolicy = corev1.PullPolicy(p.spec.ImagePullPolicy)
	}
	mergeResources(&c.Resources, res.container)
	if p.spec.ServiceAccount != "" {
		pod.Spec.ServiceAccountName = p.spec.ServiceAccount
	}
	if c.Image == "" {
		return pod, fmt.Errorf("%s pod: no image (spec.image)", component)
	}
	return pod, nil
}

func (p *plan) deployment(name, component string, replicas int32, pod corev1.PodTemplateSpec, strategy appsv1.DeploymentStrategy) *appsv1.Deployment {
	d := &appsv1.Deployment{
		TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{
			Name:            name,
			Namespace:       p.namespace,
			Labels:          Labels(p.mode(), p.name, component),
			OwnerReferences: []metav1.OwnerReference{OwnerReference(p.in.Deployment)},
		},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: Labels(p.mode(), p.name, component)},
			Template: pod,
			Strategy: strategy,
		},
	}
	setSpecHash(&d.ObjectMeta, d.Spec)
	return d
}

func (p *plan) jobManagerDeployment(configHash string) (*appsv1.Deployment, error) {
	main := p.jobManagerContainer()
	var tmpl *corev1.Pod
	if p.spec.JobManager != nil {
		tmpl = p.spec.JobManager.PodTemplate
	}
	pod, err := p.pod(ComponentJobManager, main, p.jobManagerArgs(), tmpl, p.jm, configHash)
	if err != nil {
		return nil, err
	}
	if err := p.addStartupProbe(&pod); err != nil { // startupprobe.go
		return nil, err
	}
	// Recreate: two JobManagers of one non-HA cluster must never run at once
	// (both would run the job and write the same checkpoints).
	return p.deployment(JobManagerDeploymentName(p.name), ComponentJobManager, p.jmReplicas, pod,
		appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}), nil
}

// jobManagerContainer is the JobManager's main container before arguments
// and pod templates: ports and readiness probe (both modes; the startup
// probe is added after the templates, startupprobe.go).
func (p *plan) jobManagerContainer() corev1.Container {
	main := p.mainContainer(keyJMEnvPrefix)
	main.Ports = []corev1.ContainerPort{
		{Name: RPCPortName, ContainerPort: JobManagerRPCPort, Protocol: corev1.ProtocolTCP},
		{Name: BlobPortName, ContainerPort: BlobServerPort, Protocol: corev1.ProtocolTCP},
		{Name: RESTPortName, ContainerPort: p.restBindPort, Protocol: corev1.ProtocolTCP},
	}
	// A TCP check works whether or not REST uses TLS; the operator's own
	// readiness check of the REST API is a TCP connect too (upstream).
	main.ReadinessProbe = &corev1.Probe{
		ProbeHandler:  corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(p.restBindPort)}},
		PeriodSeconds: 5,
	}
	return main
}

func (p *plan) taskManagerDeployment(configHash string) (*appsv1.Deployment, error) {
	main := p.mainContainer(keyTMEnvPrefix)
	if p.tmRPCPort > 0 {
		main.Ports = []corev1.ContainerPort{{Name: TaskManagerPortName, ContainerPort: p.tmRPCPort, Protocol: corev1.ProtocolTCP}}
	}
	var tmpl *corev1.Pod
	if p.spec.TaskManager != nil {
		tmpl = p.spec.TaskManager.PodTemplate
	}
	pod, err := p.pod(ComponentTaskManager, main, []string{"taskmanager"}, tmpl, p.tm, configHash)
	if err != nil {
		return nil, err
	}
	return p.deployment(TaskManagerDeploymentName(p.name), ComponentTaskManager, p.tmReplicas, pod, appsv1.DeploymentStrategy{}), nil
}

// restServiceType maps kubernetes.rest-service.exposed.type (Flink's option,
// default ClusterIP as upstream sets it) to a Service type.
func (p *plan) restServiceType() (corev1.ServiceType, bool, error) {
	v := strings.TrimSpace(p.conf["kubernetes.rest-service.exposed.type"])
	switch strings.ToLower(v) {
	case "", "clusterip":
		return corev1.ServiceTypeClusterIP, false, nil
	case "headless_clusterip":
		return corev1.ServiceTypeClusterIP, true, nil
	case "nodeport":
		return corev1.ServiceTypeNodePort, false, nil
	case "loadbalancer":
		return corev1.ServiceTypeLoadBalancer, false, nil
	}
	return "", false, fmt.Errorf("config key kubernetes.rest-service.exposed.type: invalid value %q: must be ClusterIP, Headless_ClusterIP, NodePort or LoadBalancer", v)
}

func (p *plan) services() (rpc, rest *corev1.Service, err error) {
	objectLabels := Labels(Standalone, p.name, ComponentJobManager)
	if p.in.Native {
		// Flink's service decorators label Services with the common labels.
		objectLabels = CommonLabels(Native, p.name)
	}
	meta := func(name string) metav1.ObjectMeta {
		return metav1.ObjectMeta{
			Name:            name,
			Namespace:       p.namespace,
			Labels:          maps.Clone(objectLabels),
			OwnerReferences: []metav1.OwnerReference{OwnerReference(p.in.Deployment)},
		}
	}
	selector := Labels(p.mode(), p.name, ComponentJobManager)
	rpc = &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: meta(RPCServiceName(p.name)),
		Spec: corev1.ServiceSpec{
			// Headless: jobmanager.rpc.address resolves straight to the
			// JobManager pod, as with Flink's own internal service.
			ClusterIP: corev1.ClusterIPNone,
			Selector:  selector,
			Ports: []corev1.ServicePort{
				{Name: RPCPortName, Port: JobManagerRPCPort, TargetPort: intstr.FromInt32(JobManagerRPCPort), Protocol: corev1.ProtocolTCP},
				{Name: BlobPortName, Port: BlobServerPort, TargetPort: intstr.FromInt32(BlobServerPort), Protocol: corev1.ProtocolTCP},
			},
		},
	}
	setSpecHash(&rpc.ObjectMeta, rpc.Spec)

	typ, headless, err := p.restServiceType()
	if err != nil {
		return nil, nil, err
	}
	rest = &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: meta(RESTServiceName(p.name)),
		Spec: corev1.ServiceSpec{
			Type:     typ,
			Selector: selector,
			Ports: []corev1.ServicePort{
				{Name: RESTPortName, Port: p.restPort, TargetPort: intstr.FromInt32(p.restBindPort), Protocol: corev1.ProtocolTCP},
			},
		},
	}
	if headless {
		rest.Spec.ClusterIP = corev1.ClusterIPNone
	}
	setSpecHash(&rest.ObjectMeta, rest.Spec)
	return rpc, rest, nil
}
