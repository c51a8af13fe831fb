package cluster

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"net/url"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
	corev1 "k8s.io/api/core/v1"

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
	// DeployToken identifies the JobManager Deployment of a native
	// application (a new one for each the operator creates; lowercase
	// letters, digits and dashes); its ended-job guard matches it
	// (endedjob.go). "" builds no guard.
	DeployToken string
	// EndedToken is the DeployToken of the running JobManager once its job
	// has ended (FINISHED, FAILED, CANCELED): the ConfigMap records it
	// (EndedJobKey), so that the JobManager, restarted, does not run the
	// job again. "" while the job runs, and with HA.
	EndedToken string
	// Native builds the JobManager side of a native-mode cluster (Flink's
	// Kubernetes integration creates the TaskManager pods) instead of a
	// standalone one; see the package doc. The caller decides how
	// spec.mode maps to it (NativeMode is upstream's rule).
	Native bool
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
	keyHAStorageDir          = "high-availability.storageDir"
	keyApplicationResults    = "application-result-store.storage-path"
	keyJobResults            = "job-result-store.storage-path"
	keyShutdownOnFinish      = "execution.shutdown-on-application-finish"
	keySubmitFailedJob       = "execution.submit-failed-job-on-application-error"
	keyExternalizedRetention = config.FlinkCheckpointRetention
	keyCheckpointInterval    = "execution.checkpointing.interval"
	keyPipelineName          = "pipeline.name"
	keyPipelineClasspaths    = "pipeline.classpaths"
	keyPipelineJars          = "pipeline.jars"
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

// restorePathKeys are dropped from the user's configuration: the restore
// point is Input.RestorePath alone (see doc.go).
var restorePathKeys = []string{keyRestorePath, "execution.state-recovery.path"}

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
	// resultStores are the result store keys applyResultStores set (not
	// the user's): left out of the pods' config hash.
	resultStores []string
	// options is the effective configuration including the
	// kubernetes.operator.* keys (conf leaves them out), for the operator
	// options that shape the objects (startupprobe.go).
	options config.Config

	restPort     int32 // rest.port, the REST Service's port
	restBindPort int32 // the port the JobManager listens on
	tmRPCPort    int32 // 0 when taskmanager.rpc.port is not one fixed port

	jm, tm     componentResources
	jmReplicas int32
	tmReplicas int32

	// tmPodTemplate is the TaskManager pod template of a native cluster;
	// nil in standalone mode or when there is none.
	tmPodTemplate *corev1.Pod
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

// buildConfig computes the effective Flink configuration and what the
// objects derive from it (resources, replicas, ports), one step per rule
// group. The order is the layer order of the package doc and matters:
// resources come before the defaults because spec memory suppresses the
// default process size, owned keys come after the defaults so they win, and
// replicas and ports read the finished configuration. It is also the order in
// which errors are reported.
func (p *plan) buildConfig() error {
	if err := p.mergeUserConfig(); err != nil {
		return err
	}
	if err := p.resolveComponentResources(); err != nil {
		return err
	}
	p.applyDefaults()
	p.applyOwnedKeys()
	p.applyHAKeys()
	slots, err := taskSlots(p.conf)
	if err != nil {
		return err
	}
	if p.spec.Job != nil {
		if err := p.applyJobKeys(slots); err != nil {
			return err
		}
	} else if uid := p.in.Deployment.UID; uid != "" {
		// A session cluster: its incarnation (the resource's UID) takes the
		// place of the job id.
		p.applyResultStores(string(uid))
	}
	if p.jmReplicas, err = jobManagerReplicas(p.spec); err != nil {
		return err
	}
	if p.tmReplicas, err = taskManagerReplicas(p.spec, p.conf, slots); err != nil {
		return err
	}
	if err := p.resolvePorts(); err != nil {
		return err
	}
	if p.in.Native {
		if err := p.applyNativeKeys(); err != nil {
			return err
		}
	}
	if !p.version.StandardYAML() {
		rewriteLegacyLists(p.conf)
	}
	return nil
}

// mergeUserConfig sets p.conf to layers 1 and 2 of the package doc: the
// operator config under spec.flinkConfiguration, merged by config.Effective
// so both follow pkg/config's rules (old key names, value checks).
// kubernetes.operator.* keys are dropped because they configure the operator,
// not Flink; the restore-path keys because where a job starts from is
// Input.RestorePath's decision alone (see the package doc).
func (p *plan) mergeUserConfig() error {
	values, err := p.spec.FlinkConfiguration.Values()
	if err != nil {
		return err
	}
	// Warnings (ignored operator-wide keys, unknown operator keys) are the
	// controller's to report; it gets them from config.Effective itself.
	eff, _, err := config.Effective(p.in.OperatorConfig, values)
	if err != nil {
		return err
	}
	p.options = eff
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
	return nil
}

// resolveComponentResources sets p.jm and p.tm from spec.jobManager and
// spec.taskManager. It runs before the defaults because the memory it finds
// decides whether the default process size applies. The limit factors are
// read from the merged configuration because they are Flink options
// (kubernetes.<component>.<cpu|memory>.limit-factor), not spec fields.
func (p *plan) resolveComponentResources() error {
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
		var err error
		if *f.dst, err = parseLimitFactor(p.conf, f.key); err != nil {
			return err
		}
	}
	var err error
	if jm := p.spec.JobManager; jm != nil {
		if p.jm, err = resolveResources("spec.jobManager", jm.Resource, jm.Resources, jmf); err != nil {
			return err
		}
	}
	if tm := p.spec.TaskManager; tm != nil {
		if p.tm, err = resolveResources("spec.taskManager", tm.Resource, tm.Resources, tmf); err != nil {
			return err
		}
	}
	return nil
}

// applyDefaults is layer 3 of the package doc: values filled only where the
// user set nothing, because our ConfigMap replaces the image's conf directory
// and with it the distribution's defaults. taskmanager.rpc.port 0 (Flink's
// "any free port") counts as unset, as in Flink's native Kubernetes mode: the
// TaskManager container declares one fixed port. The default process sizes
// apply only when no memory option is set at all, neither in the
// configuration nor in the spec: Flink refuses to start with none, and one
// added next to the user's could conflict with it.
func (p *plan) applyDefaults() {
	conf := p.conf
	setDefault(conf, keySlots, "1")
	setDefault(conf, keyRESTPort, strconv.Itoa(int(DefaultRESTPort)))
	if unset(conf, keyTMRPCPort) || strings.TrimSpace(conf[keyTMRPCPort]) == "0" {
		conf[keyTMRPCPort] = strconv.Itoa(int(TaskManagerRPCPort))
	}
	setDefault(conf, keyWebCancel, "false")
	if p.jm.processMemory == 0 && allUnset(conf, keyJMProcessMemory, keyJMFlinkMemory, keyJMHeapMemory) {
		conf[keyJMProcessMemory] = defaultJMProcessMemory
	}
	if p.tm.processMemory == 0 && allUnset(conf, keyTMProcessMemory, keyTMFlinkMemory, keyTMTaskHeapMemory) {
		conf[keyTMProcessMemory] = defaultTMProcessMemory
	}
}

// allUnset reports whether none of keys is set.
func allUnset(conf map[string]string, keys ...string) bool {
	for _, k := range keys {
		if !unset(conf, k) {
			return false
		}
	}
	return true
}

// applyOwnedKeys is layer 4 of the package doc: keys the operator owns,
// which always win. The RPC address and ports must match the Services built
// here, the cluster id and namespace name this cluster, and spec memory beats
// flinkConfiguration (as upstream) because it also sizes the containers.
func (p *plan) applyOwnedKeys() {
	conf := p.conf
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
}

// applyHAKeys sets p.ha and, when HA is on, the HA keys as Flink's native
// Kubernetes mode does: high-availability.cluster-id is the cluster's name
// (owned, so the HA data is this cluster's and a redeploy finds it again),
// and an unset or 0 (random) high-availability.jobmanager.port becomes the
// fixed RPC port, the one the headless Service exposes.
func (p *plan) applyHAKeys() {
	p.ha = haEnabled(p.conf)
	if !p.ha {
		return
	}
	p.conf[keyHAClusterID] = p.name
	if v := strings.TrimSpace(p.conf[keyHAJobManagerPort]); v == "" || v == "0" {
		p.conf[keyHAJobManagerPort] = strconv.Itoa(int(JobManagerRPCPort))
	}
}

// applyResultStores gives each job of a Flink 2.3+ application cluster
// with HA its own job and application result stores, unless the user chose
// them: <storageDir>/job-result-store/<cluster id>/<job id> and
// <storageDir>/application-result-store/<cluster id>/<job id> instead of
// Flink's defaults, the same without the job id.
//
// Flink records an ending job's result there, and from 2.3 its
// application's (dirty, then clean once its cleanup is done), and the
// stores, under the HA storage directory, outlive the cluster. A
// JobManager stopped during that cleanup (the operator deletes the cluster
// right after a stop-with-savepoint) leaves them dirty, and the next
// cluster of the deployment has the same cluster id and, in 2.3, the same
// application id (Flink derives it from the cluster id): its JobManager
// takes the old job's dirty result as its application's, or the dirty
// application result as its own, and the new job fails or never runs.
// Before 2.3 a dirty result of another job id is only cleaned up. The job
// id is new for each job (kept only by a last-state upgrade, which
// recovers the same job) and the same across a JobManager's restarts, so
// Flink's recovery of one job's cluster is unchanged. A left-behind dirty
// result stays where it is (its cleanup would only drop HA data of the old
// job that the upgrade's teardown deleted already).
//
// A session cluster's stores are its incarnation's, the resource's UID in
// place of the job id: a session cluster deleted and created again with
// the same name and HA storage has the same cluster id, and its JobManager
// recovered the previous incarnation's job results and crash-looped on
// Flink 2.3 ("Application ID is missing in the recovered job result");
// its upgrades keep the UID, so the JobManagers of one session cluster
// share them as Flink expects.
func (p *plan) applyResultStores(id string) {
	storage := strings.TrimRight(strings.TrimSpace(p.conf[keyHAStorageDir]), "/")
	if !p.ha || !p.version.AtLeast(2, 3) || storage == "" {
		return
	}
	for _, store := range [...]struct{ key, dir string }{
		{keyJobResults, "job-result-store"},
		{keyApplicationResults, "application-result-store"},
	} {
		if unset(p.conf, store.key) {
			p.conf[store.key] = storage + "/" + store.dir + "/" + p.name + "/" + id
			p.resultStores = append(p.resultStores, store.key)
		}
	}
}

// haEnabled reports whether the configuration turns HA on:
// high-availability.type, or its deprecated name high-availability when the
// new one is unset, is set to anything but NONE (in any case).
func haEnabled(conf map[string]string) bool {
	haType := strings.TrimSpace(conf[keyHAType])
	if haType == "" {
		haType = strings.TrimSpace(conf[keyHATypeDeprecated])
	}
	return haType != "" && !strings.EqualFold(haType, "NONE")
}

// taskSlots is taskmanager.numberOfTaskSlots (defaulted by then). It is
// checked here rather than left to Flink because parallelism and the
// TaskManager count are computed from it.
func taskSlots(conf map[string]string) (int, error) {
	slots, err := intOption(conf, keySlots)
	if err != nil {
		return 0, err
	}
	if slots < 1 {
		return 0, fmt.Errorf("config key %s: must be at least 1", keySlots)
	}
	return slots, nil
}

// applyJobKeys writes what an application cluster needs on top of a session
// cluster. Owned: the job id, because the operator finds and restores the
// job by it, and execution.shutdown-on-application-finish false, because
// the JobManager must outlive a terminal job so the operator can read its
// result. Defaults, as upstream's FlinkConfigBuilder sets them: submitting
// failed jobs, retained checkpoints, the pipeline name and, because
// last-state upgrades restore from checkpoints, a checkpoint interval. Then
// the parallelism (jobParallelism) and the jar's classpath entry.
func (p *plan) applyJobKeys(slots int) error {
	conf, job := p.conf, p.spec.Job
	if !jobIDPattern.MatchString(p.in.JobID) {
		return fmt.Errorf("cluster: Input.JobID %q must be 32 hex characters for an application", p.in.JobID)
	}
	conf[keyJobID] = p.in.JobID
	p.applyResultStores(p.in.JobID)
	conf[keyShutdownOnFinish] = "false"
	setDefault(conf, keySubmitFailedJob, "true")
	maps.Copy(conf, JobDefaults(conf, p.name, job))
	if par, ok := jobParallelism(p.spec, slots); ok {
		conf[keyParallelism] = strconv.Itoa(par)
	}
	if jar := strings.TrimSpace(job.JarURI); jar != "" && p.in.Native {
		// Native: the jar as given (local://), as upstream's pipeline.jars.
		conf[keyPipelineJars] = escapeListElement(jar)
	} else if jar != "" {
		cp, err := standaloneClasspath(jar)
		if err != nil {
			return err
		}
		conf[keyPipelineClasspaths] = cp
	}
	if p.in.RestorePath != "" {
		// The restore point, in the file of both modes as upstream's: the
		// native entrypoint takes no command line, so the file is how it
		// learns it; a standalone JobManager's --fromSavepoint
		// (jobManagerArgs) says the same. The JobManager logs
		// "execution.savepoint.path, <path>" when it loads the file (tools
		// written for upstream, its own e2e test_snapshot.sh among them,
		// look for that line).
		conf[keyRestorePath] = p.in.RestorePath
	}
	return nil
}

// JobDefaults are upstream's job-level defaults
// (FlinkConfigBuilder.applyJobConfig) that conf, a job's effective
// configuration, leaves unset: checkpoints retained on cancellation (a
// last-state stop cancels the job and restarts from its latest
// checkpoint), the pipeline name, and, because last-state upgrades restore
// from checkpoints, a checkpoint interval. An application's cluster and a
// session job's submission get the same.
func JobDefaults(conf map[string]string, name string, job *v1beta1.JobSpec) map[string]string {
	out := map[string]string{}
	add := func(key, value string) {
		if unset(conf, key) {
			out[key] = value
		}
	}
	add(keyExternalizedRetention, config.FlinkRetainOnCancellation)
	add(keyPipelineName, name)
	if job.UpgradeMode == v1beta1.UpgradeModeLastState {
		add(keyCheckpointInterval, defaultLastStateCheckpointInterval)
	}
	return out
}

// jobParallelism is the parallelism.default an application is given, as
// upstream: with spec.taskManager.replicas > 0, replicas × slots (upstream:
// "Job parallelism setting is ignored as TaskManager replicas are set" — the
// job uses every slot it is given); else job.parallelism when > 0. ok is
// false when neither applies, which leaves the user's parallelism.default.
func jobParallelism(spec *v1beta1.FlinkDeploymentSpec, slots int) (par int, ok bool) {
	if tm := spec.TaskManager; tm != nil && tm.Replicas != nil && *tm.Replicas > 0 {
		return int(*tm.Replicas) * slots, true
	}
	if job := spec.Job; job != nil && job.Parallelism != nil && *job.Parallelism > 0 {
		return int(*job.Parallelism), true
	}
	return 0, false
}

// jobManagerReplicas is spec.jobManager.replicas, 1 by default. Less than 1
// is an error: unlike TaskManagers, a cluster cannot run without a
// JobManager (it serves the REST API the operator talks to).
func jobManagerReplicas(spec *v1beta1.FlinkDeploymentSpec) (int32, error) {
	jm := spec.JobManager
	if jm == nil || jm.Replicas == nil {
		return 1, nil
	}
	if *jm.Replicas < 1 {
		return 0, errors.New("spec.jobManager.replicas must be at least 1")
	}
	return *jm.Replicas, nil
}

// taskManagerReplicas is spec.taskManager.replicas when set (0 is allowed: a
// cluster scaled down to no TaskManagers). Without it an application gets
// ceil(parallelism.default / slots) TaskManagers, as upstream, so the job
// always finds its slots; a session cluster, or an application without a
// positive parallelism, gets one.
func taskManagerReplicas(spec *v1beta1.FlinkDeploymentSpec, conf map[string]string, slots int) (int32, error) {
	if tm := spec.TaskManager; tm != nil && tm.Replicas != nil {
		if *tm.Replicas < 0 {
			return 0, errors.New("spec.taskManager.replicas must not be negative")
		}
		return *tm.Replicas, nil
	}
	if spec.Job == nil || unset(conf, keyParallelism) {
		return 1, nil
	}
	par, err := intOption(conf, keyParallelism)
	if err != nil {
		return 0, err
	}
	if par <= 0 {
		return 1, nil
	}
	return int32((par + slots - 1) / slots), nil
}

// resolvePorts sets the ports the Services and containers declare.
// rest.port is what the REST Service exposes and rest.bind-port, when set,
// where the JobManager listens; both must be single ports because a Service
// and a containerPort name one number. taskmanager.rpc.port may be a range
// (legal in Flink); then the TaskManager declares no containerPort.
func (p *plan) resolvePorts() error {
	rest, err := portOption(p.conf, keyRESTPort)
	if err != nil {
		return err
	}
	p.restPort, p.restBindPort = rest, rest
	if !unset(p.conf, keyRESTBindPort) {
		if p.restBindPort, err = portOption(p.conf, keyRESTBindPort); err != nil {
			return fmt.Errorf("%w (the Service and container need one fixed port)", err)
		}
	}
	if port, err := portOption(p.conf, keyTMRPCPort); err == nil {
		p.tmRPCPort = port
	}
	return nil
}

// rewriteLegacyLists turns YAML flow lists into Flink's legacy "a;b" form,
// for Flink < 1.19, whose flink-conf.yaml parser reads no YAML (see
// legacyList).
func rewriteLegacyLists(conf map[string]string) {
	for k, v := range conf {
		if l, ok := legacyList(v); ok {
			conf[k] = l
		}
	}
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
// flink-conf.yaml's parser understands. Only a value that is one flow list
// and nothing else is rewritten: Flink < 1.19 reads any other value as
// written, so text around a list ("[a] and [b]"), a second YAML document or
// a comment keeps the value as it is (ok is false).
func legacyList(v string) (string, bool) {
	t := strings.TrimSpace(v)
	if !strings.HasPrefix(t, "[") || !strings.HasSuffix(t, "]") {
		return "", false
	}
	// A decoder, not yaml.Unmarshal: Unmarshal reads the first node and
	// ignores what follows it ("[a] and [b]" read as [a]); the second
	// Decode reaching io.EOF proves the list was all of the value.
	dec := yaml.NewDecoder(strings.NewReader(t))
	var doc, rest yaml.Node
	if err := dec.Decode(&doc); err != nil || len(doc.Content) != 1 || dec.Decode(&rest) != io.EOF {
		return "", false
	}
	seq := doc.Content[0]
	if seq.Kind != yaml.SequenceNode || commented(&doc) || commented(seq) {
		return "", false
	}
	items := make([]string, 0, len(seq.Content))
	for _, item := range seq.Content {
		if item.Kind != yaml.ScalarNode || commented(item) {
			return "", false
		}
		items = append(items, escapeListElement(item.Value))
	}
	return strings.Join(items, ";"), true
}

// commented reports whether YAML attached a comment to n.
func commented(n *yaml.Node) bool {
	return n.HeadComment != "" || n.LineComment != "" || n.FootComment != ""
}
