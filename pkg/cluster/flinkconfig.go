package cluster

import (
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/config"
)

// Input describes what to deploy.
type Input struct {
	// Deployment is the resource: its name and namespace name the objects,
	// its UID goes into owner references. Its spec is not read (see Spec).
	Deployment *v1beta1.FlinkDeployment
	// Spec is the spec being deployed. It may differ from Deployment.Spec:
	// during an upgrade the controller deploys the spec it recorded in
	// status, and after a rollback the last stable one.
	Spec v1beta1.FlinkDeploymentSpec
	// OperatorConfig is the operator-wide configuration. Its Flink keys are
	// the default Flink configuration of every cluster; its
	// kubernetes.operator.* keys are not written to the ConfigMap.
	OperatorConfig config.Config
	// JobID is the fixed Flink job id of an application
	// ($internal.pipeline.job-id), 32 hex characters; required when
	// Spec.Job is set, ignored for session clusters.
	JobID string
	// RestorePath is the savepoint or checkpoint an application starts from,
	// passed as --fromSavepoint; "" starts from empty state.
	RestorePath string
	// AllowNonRestoredState adds --allowNonRestoredState. It is ORed with
	// Spec.Job.AllowNonRestoredState, so callers only set it to force it.
	AllowNonRestoredState bool
}

// Flink option keys the builders read or write.
const (
	keyRPCAddress            = "jobmanager.rpc.address"
	keyRPCPort               = "jobmanager.rpc.port"
	keyBlobPort              = "blob.server.port"
	keyRESTPort              = config.FlinkRestPort
	keyRESTBindPort          = "rest.bind-port"
	keyTMRPCPort             = "taskmanager.rpc.port"
	keySlots                 = "taskmanager.numberOfTaskSlots"
	keyParallelism           = "parallelism.default"
	keyJobID                 = "$internal.pipeline.job-id"
	keyShutdownOnFinish      = "execution.shutdown-on-application-finish"
	keySubmitFailedJob       = "execution.submit-failed-job-on-application-error"
	keyExternalizedRetention = "execution.checkpointing.externalized-checkpoint-retention"
	keyCheckpointInterval    = "execution.checkpointing.interval"
	keyPipelineName          = "pipeline.name"
	keyPipelineClasspaths    = "pipeline.classpaths"
	keyWebCancel             = "web.cancel.enable"
	keyClusterID             = "kubernetes.cluster-id"
	keyNamespace             = "kubernetes.namespace"
	keyHAType                = "high-availability.type"
	keyHATypeDeprecated      = "high-availability"
	keyHAClusterID           = "high-availability.cluster-id"
	keyHAJobManagerPort      = "high-availability.jobmanager.port"
	keyEntryPath             = "kubernetes.entry.path"
	keyConfDir               = "kubernetes.flink.conf.dir"
	keyLogDir                = "kubernetes.flink.log.dir"
	keyJMEnvPrefix           = "containerized.master.env."
	keyTMEnvPrefix           = "containerized.taskmanager.env."

	keyJMProcessMemory  = "jobmanager.memory.process.size"
	keyJMFlinkMemory    = "jobmanager.memory.flink.size"
	keyJMHeapMemory     = "jobmanager.memory.heap.size"
	keyTMProcessMemory  = "taskmanager.memory.process.size"
	keyTMFlinkMemory    = "taskmanager.memory.flink.size"
	keyTMTaskHeapMemory = "taskmanager.memory.task.heap.size"

	// The Flink distribution's config.yaml values, lost when our ConfigMap
	// replaces the image's conf directory.
	defaultJMProcessMemory = "1600m"
	defaultTMProcessMemory = "1728m"

	// defaultLastStateCheckpointInterval is upstream's default checkpoint
	// interval for last-state upgrades, which need checkpoints.
	defaultLastStateCheckpointInterval = "5 min"
)

// restorePathKeys are dropped from the configuration: the restore point is
// Input.RestorePath (see doc.go).
var restorePathKeys = []string{"execution.savepoint.path", "execution.state-recovery.path"}

var jobIDPattern = regexp.MustCompile(`^[0-9a-fA-F]{32}$`)

// plan is everything derived from an Input, computed once per Build.
type plan struct {
	in        Input
	spec      *v1beta1.FlinkDeploymentSpec
	name      string
	namespace string
	version   Version
	conf      map[string]string
	ha        bool

	restPort     int32 // rest.port, the REST Service's port
	restBindPort int32 // the port the JobManager listens on
	tmRPCPort    int32 // 0 when taskmanager.rpc.port is not one fixed port

	jm, tm     componentResources
	jmReplicas int32
	tmReplicas int32
}

// FlinkConfig is the effective Flink configuration written to the ConfigMap
// (see the package doc for the layers and the injected keys).
func FlinkConfig(in Input) (map[string]string, error) {
	p, err := newPlan(in)
	if err != nil {
		return nil, err
	}
	return p.conf, nil
}

func newPlan(in Input) (*plan, error) {
	d := in.Deployment
	if d == nil {
		return nil, errors.New("cluster: Input.Deployment is nil")
	}
	if d.Name == "" || d.Namespace == "" {
		return nil, errors.New("cluster: the FlinkDeployment has no name or namespace")
	}
	p := &plan{in: in, name: d.Name, namespace: d.Namespace}
	p.spec = &p.in.Spec
	var err error
	if p.version, err = ParseVersion(p.spec.FlinkVersion); err != nil {
		return nil, err
	}
	if strings.TrimSpace(p.spec.Image) == "" {
		return nil, errors.New("spec.image is required")
	}
	if err := p.buildConfig(); err != nil {
		return nil, err
	}
	return p, nil
}

// unset is pkg/config's rule: a blank value counts as unset.
func unset(conf map[string]string, key string) bool { return strings.TrimSpace(conf[key]) == "" }

func setDefault(conf map[string]string, key, value string) {
	if unset(conf, key) {
		conf[key] = value
	}
}

func (p *plan) buildConfig() error {
	spec, job := p.spec, p.spec.Job
	values, err := spec.FlinkConfiguration.Values()
	if err != nil {
		return err
	}
	// Warnings (ignored operator-wide keys, unknown operator keys) are the
	// controller's to report; it gets them from config.Effective itself.
	eff, _, err := config.Effective(p.in.OperatorConfig, values)
	if err != nil {
		return err
	}
	conf := make(map[string]string, len(eff)+16)
	for k, v := range eff {
		if !strings.HasPrefix(k, config.OperatorPrefix) {
			conf[k] = v
		}
	}
	for _, k := range restorePathKeys {
		delete(conf, k)
	}
	p.conf = conf

	// Resources first: the memory they give is injected below.
	var jmf, tmf limitFactors
	for _, f := range []struct {
		dst *float64
		key string
	}{
		{&jmf.cpu, "kubernetes.jobmanager.cpu.limit-factor"},
		{&jmf.memory, "kubernetes.jobmanager.memory.limit-factor"},
		{&tmf.cpu, "kubernetes.taskmanager.cpu.limit-factor"},
		{&tmf.memory, "kubernetes.taskmanager.memory.limit-factor"},
	} {
		if *f.dst, err = parseLimitFactor(conf, f.key); err != nil {
			return err
		}
	}
	if jm := spec.JobManager; jm != nil {
		if p.jm, err = resolveResources("spec.jobManager", jm.Resource, jm.Resources, jmf); err != nil {
			return err
		}
	}
	if tm := spec.TaskManager; tm != nil {
		if p.tm, err = resolveResources("spec.taskManager", tm.Resource, tm.Resources, tmf); err != nil {
			return err
		}
	}

	// Defaults: only where the user set nothing.
	setDefault(conf, keySlots, "1")
	setDefault(conf, keyRESTPort, strconv.Itoa(int(DefaultRESTPort)))
	if unset(conf, keyTMRPCPort) || strings.TrimSpace(conf[keyTMRPCPort]) == "0" {
		conf[keyTMRPCPort] = strconv.Itoa(int(TaskManagerRPCPort))
	}
	setDefault(conf, keyWebCancel, "false")
	if unset(conf, keyJMProcessMemory) && unset(conf, keyJMFlinkMemory) && unset(conf, keyJMHeapMemory) && p.jm.processMemory == 0 {
		conf[keyJMProcessMemory] = defaultJMProcessMemory
	}
	if unset(conf, keyTMProcessMemory) && unset(conf, keyTMFlinkMemory) && unset(conf, keyTMTaskHeapMemory) && p.tm.processMemory == 0 {
		conf[keyTMProcessMemory] = defaultTMProcessMemory
	}

	// Owned by the operator.
	conf[keyRPCAddress] = p.name + "." + p.namespace
	conf[keyRPCPort] = strconv.Itoa(int(JobManagerRPCPort))
	conf[keyBlobPort] = strconv.Itoa(int(BlobServerPort))
	conf[keyClusterID] = p.name
	conf[keyNamespace] = p.namespace
	if p.jm.processMemory > 0 {
		conf[keyJMProcessMemory] = FormatMemory(p.jm.processMemory)
	}
	if p.tm.processMemory > 0 {
		conf[keyTMProcessMemory] = FormatMemory(p.tm.processMemory)
	}
	haType := strings.TrimSpace(conf[keyHAType])
	if haType == "" {
		haType = strings.TrimSpace(conf[keyHATypeDeprecated])
	}
	p.ha = haType != "" && !strings.EqualFold(haType, "NONE")
	if p.ha {
		conf[keyHAClusterID] = p.name
		if v := strings.TrimSpace(conf[keyHAJobManagerPort]); v == "" || v == "0" {
			conf[keyHAJobManagerPort] = strconv.Itoa(int(JobManagerRPCPort))
		}
	}

	slots, err := intOption(conf, keySlots)
	if err != nil {
		return err
	}
	if slots < 1 {
		return fmt.Errorf("config key %s: must be at least 1", keySlots)
	}

	if job != nil {
		if !jobIDPattern.MatchString(p.in.JobID) {
			return fmt.Errorf("cluster: Input.JobID %q must be 32 hex characters for an application", p.in.JobID)
		}
		conf[keyJobID] = p.in.JobID
		conf[keyShutdownOnFinish] = "false"
		setDefault(conf, keySubmitFailedJob, "true")
		setDefault(conf, keyExternalizedRetention, "RETAIN_ON_CANCELLATION")
		setDefault(conf, keyPipelineName, p.name)
		if job.UpgradeMode == v1beta1.UpgradeModeLastState {
			setDefault(conf, keyCheckpointInterval, defaultLastStateCheckpointInterval)
		}
		switch {
		case spec.TaskManager != nil && spec.TaskManager.Replicas != nil && *spec.TaskManager.Replicas > 0:
			// Upstream: "Job parallelism setting is ignored as TaskManager
			// replicas are set" — the job uses every slot it is given.
			conf[keyParallelism] = strconv.Itoa(int(*spec.TaskManager.Replicas) * slots)
		case job.Parallelism != nil && *job.Parallelism > 0:
			conf[keyParallelism] = strconv.Itoa(int(*job.Parallelism))
		}
		if jar := strings.TrimSpace(job.JarURI); jar != "" {
			cp, err := standaloneClasspath(jar)
			if err != nil {
				return err
			}
			conf[keyPipelineClasspaths] = cp
		}
	}

	// Replicas.
	p.jmReplicas = 1
	if spec.JobManager != nil && spec.JobManager.Replicas != nil {
		if *spec.JobManager.Replicas < 1 {
			return errors.New("spec.jobManager.replicas must be at least 1")
		}
		p.jmReplicas = *spec.JobManager.Replicas
	}
	p.tmReplicas = 1
	switch {
	case spec.TaskManager != nil && spec.TaskManager.Replicas != nil:
		if *spec.TaskManager.Replicas < 0 {
			return errors.New("spec.taskManager.replicas must not be negative")
		}
		p.tmReplicas = *spec.TaskManager.Replicas
	case job != nil && !unset(conf, keyParallelism):
		par, err := intOption(conf, keyParallelism)
		if err != nil {
			return err
		}
		if par > 0 {
			p.tmReplicas = int32((par + slots - 1) / slots)
		}
	}

	// Ports.
	rest, err := portOption(conf, keyRESTPort)
	if err != nil {
		return err
	}
	p.restPort, p.restBindPort = rest, rest
	if !unset(conf, keyRESTBindPort) {
		if p.restBindPort, err = portOption(conf, keyRESTBindPort); err != nil {
			return fmt.Errorf("%w (the Service and container need one fixed port)", err)
		}
	}
	if port, err := portOption(conf, keyTMRPCPort); err == nil {
		p.tmRPCPort = port // a range is legal in Flink; then no containerPort
	}

	if !p.version.StandardYAML() {
		for k, v := range conf {
			if l, ok := legacyList(v); ok {
				conf[k] = l
			}
		}
	}
	return nil
}

// intOption parses an integer Flink option.
func intOption(conf map[string]string, key string) (int, error) {
	v := strings.TrimSpace(conf[key])
	n, err := strconv.ParseInt(v, 10, 32)
	if err != nil {
		return 0, fmt.Errorf("config key %s: invalid value %q: not an integer", key, v)
	}
	return int(n), nil
}

// portOption parses a single TCP port.
func portOption(conf map[string]string, key string) (int32, error) {
	n, err := intOption(conf, key)
	if err != nil || n < 1 || n > 65535 {
		return 0, fmt.Errorf("config key %s: invalid value %q: not a port number", key, strings.TrimSpace(conf[key]))
	}
	return int32(n), nil
}

// standaloneClasspath turns a jarURI into the pipeline.classpaths entry of a
// standalone application cluster, as upstream's getStandaloneJarURI: the
// jar is already in the image, and Flink's classpath wants file://, not the
// local:// scheme native mode uses. A single entry is valid in both config
// formats (Flink ≥ 1.19 falls back to the legacy form for a non-list string);
// one containing ';' is quoted for Flink's list splitter.
func standaloneClasspath(jar string) (string, error) {
	u, err := url.Parse(jar)
	if err != nil {
		return "", fmt.Errorf("spec.job.jarURI: %w", err)
	}
	if strings.EqualFold(u.Scheme, "local") {
		u.Scheme = "file"
		u.OmitHost = false
		jar = u.String()
	}
	return escapeListElement(jar), nil
}

// escapeListElement quotes one element of a legacy Flink list ("a;b") the way
// Flink's StructuredOptionsSplitter reads it back.
func escapeListElement(s string) string {
	if !strings.ContainsAny(s, ";'\"") {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", "''") + "'"
}

// legacyList rewrites a YAML flow list of scalars ("[a, b]", as pkg/config
// renders nested lists) into Flink's legacy "a;b" form, the only list form
// flink-conf.yaml's parser understands.
func legacyList(v string) (string, bool) {
	t := strings.TrimSpace(v)
	if !strings.HasPrefix(t, "[") || !strings.HasSuffix(t, "]") {
		return "", false
	}
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(t), &doc); err != nil || len(doc.Content) != 1 {
		return "", false
	}
	seq := doc.Content[0]
	if seq.Kind != yaml.SequenceNode {
		return "", false
	}
	items := make([]string, 0, len(seq.Content))
	for _, item := range seq.Content {
		if item.Kind != yaml.ScalarNode {
			return "", false
		}
		items = append(items, escapeListElement(item.Value))
	}
	return strings.Join(items, ";"), true
}
