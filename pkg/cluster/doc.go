// Package cluster builds the Kubernetes objects of a Flink cluster for a
// FlinkDeployment: the effective Flink configuration, the ConfigMap holding
// it, the JobManager and TaskManager Deployments and the two Services of a
// standalone cluster, or the JobManager side of a native one (Input.Native,
// see "Native mode" below).
//
// Everything here is pure: functions take an Input and return objects (or an
// error naming the offending field); there is no I/O and no client, so the
// controller decides when to create, update or delete, and every rule is
// tested with tables. Build computes everything at once (the controller's
// normal entry point); FlinkConfig, ConfigMap, JobManagerDeployment,
// TaskManagerDeployment and Services are shortcuts for one part each.
// Services returns an error too, since rest.port comes from user input.
//
// The layout follows the Apache Flink Kubernetes Operator's standalone mode
// (flink-kubernetes-standalone), so a cluster looks the same to users, to
// kubectl and to dashboards whichever operator deployed it:
//
//	ConfigMap  flink-config-<name>   config.yaml (Flink ≥ 1.19) or flink-conf.yaml, log4j-console.properties, ...
//	Deployment <name>                JobManager, Recreate, /docker-entrypoint.sh standalone-job|jobmanager
//	Deployment <name>-taskmanager    TaskManagers, /docker-entrypoint.sh taskmanager
//	Service    <name>                headless, RPC 6123 + blob 6124 (jobmanager.rpc.address points here)
//	Service    <name>-rest           ClusterIP, port rest.port (8081)
//
// All carry app=<name>, type=flink-standalone-kubernetes (and component=
// jobmanager|taskmanager for Deployments, pods and Services), and a
// controller owner reference to the FlinkDeployment, so deleting the
// resource garbage-collects the cluster.
//
// # Effective Flink configuration (FlinkConfig)
//
// Layers, later wins:
//
//  1. the operator config (config.Config): its Flink keys are every cluster's
//     defaults, as upstream;
//  2. spec.flinkConfiguration, flat or nested, merged with config.Effective
//     (so a resource's old key name beats the operator's new one, and invalid
//     values of registered keys are errors);
//  3. defaults the operator fills only when the key is unset:
//     taskmanager.numberOfTaskSlots 1, rest.port 8081, taskmanager.rpc.port
//     6122, web.cancel.enable false; for applications pipeline.name <name>,
//     execution.submit-failed-job-on-application-error true,
//     execution.checkpointing.externalized-checkpoint-retention
//     RETAIN_ON_CANCELLATION and, for upgradeMode last-state,
//     execution.checkpointing.interval 5 min (all as upstream's
//     FlinkConfigBuilder, which uses setDefaultConf for these); for Flink
//     2.3+ applications with HA, job-result-store.storage-path and
//     application-result-store.storage-path
//     <storageDir>/{job,application}-result-store/<name>/<job id>, stores
//     per job (ours: see applyResultStores; left out of the pods' config
//     hash); memory
//     process sizes 1600m/1728m when no memory option is set at all, because
//     our ConfigMap replaces the image's conf directory and with it the
//     distribution's defaults, without which Flink refuses to start;
//  4. keys the operator owns, which always win: jobmanager.rpc.address
//     (<name>.<namespace>, the headless Service), jobmanager.rpc.port 6123,
//     blob.server.port 6124 (the Services expose fixed ports),
//     kubernetes.cluster-id, kubernetes.namespace, high-availability.cluster-id
//     (when HA is on), jobmanager/taskmanager.memory.process.size from
//     spec.*.resource(s) memory (as upstream, the spec beats
//     flinkConfiguration); for applications $internal.pipeline.job-id
//     (Input.JobID), execution.shutdown-on-application-finish false (the
//     JobManager must outlive a terminal job so the operator can read its
//     result), parallelism.default and pipeline.classpaths (the jarURI, with
//     local:// turned into file:// as upstream does for standalone).
//
// Left out of the file: kubernetes.operator.* keys (Flink ignores them; they
// stay readable through config.Effective) and the user's restore-path keys
// execution.savepoint.path / execution.state-recovery.path: where a job
// starts from is the operator's decision (Input.RestorePath, passed as
// --fromSavepoint like upstream), and a user's path left in the file would
// silently restore old state on every restart, including a stateless
// redeploy. An application built with Input.RestorePath gets that path as
// execution.savepoint.path in its file as well, as upstream's do (the
// JobManager logs it when it loads the file; the file is rebuilt with each
// deploy, so a later deploy without a restore path has none); it is left
// out of the pods' config hash (scalehash.go).
//
// Parallelism and TaskManager count follow upstream: with
// spec.taskManager.replicas set, parallelism.default = replicas × slots;
// otherwise job.parallelism; and without replicas an application gets
// ceil(parallelism / slots) TaskManagers, so the job always gets its slots.
// Session clusters default to one TaskManager.
//
// # Config file format
//
// Flink ≥ 1.19 reads config.yaml with a standard YAML 1.2 parser (2.x reads
// nothing else); older versions read flink-conf.yaml with a line parser. Both
// files are written as flat, sorted "key: value" lines:
//
//   - config.yaml: integers and true/false are written plain, strings that
//     are unambiguous YAML strings in every common schema plain too, all
//     else double-quoted with YAML escapes, so every value reads back as
//     exactly the string in FlinkConfig. Lists ("[a, b]") and maps stay
//     strings: Flink ≥ 1.19 parses a string value of a list or map option as
//     YAML (with a fallback to the legacy "a;b" form).
//   - flink-conf.yaml: raw values, because the legacy parser never unquotes;
//     it cuts lines at "#", so values with "#", line breaks or
//     leading/trailing blanks cannot be written and are reported as errors.
//     YAML flow lists ("[a, b]", which pkg/config renders from nested YAML
//     lists) are rewritten into Flink's legacy "a;b" form for this format.
//
// # Resources
//
// spec.*.resources (Kubernetes form) wins over spec.*.resource (Flink form)
// per resource name (cpu, memory, ephemeral-storage). Memory is read like
// upstream's parseResourceMemoryString: Flink's MemorySize syntax first
// ("2048m" and "2g" are binary MiB/GiB), then Kubernetes quantity syntax
// ("2Gi", "1.5G"). So upstream's own example, resources.requests.memory
// "2048m", means 2 GiB and not 2.048 bytes; container memory is written in
// bytes and equals the Flink process size. From spec.*.resource, requests
// equal limits times kubernetes.{jobmanager,taskmanager}.{cpu,memory}.limit-factor
// (default 1, as Flink's native decorators).
//
// # Pod templates
//
// The operator builds each pod, then spec.podTemplate and then
// spec.jobManager.podTemplate / spec.taskManager.podTemplate are laid over it
// field by field, the template winning:
//
//   - metadata labels and annotations are merged;
//   - pod spec fields the template sets replace the operator's; lists with a
//     natural key are merged by it (containers, initContainers, volumes,
//     imagePullSecrets, resourceClaims, schedulingGates by name), tolerations,
//     hostAliases, topologySpreadConstraints and readinessGates are appended
//     (duplicates dropped), nodeSelector and overhead merged per key;
//   - containers are merged by name, flink-main-container into the operator's
//     main container: env by name, volumeMounts by mountPath, ports by
//     containerPort/protocol, volumeDevices by devicePath, resources per
//     resource name, envFrom appended, other fields replaced when set.
//     Sidecars and init containers are appended.
//
// This is so whatever kubernetes.operator.pod-template.merge-arrays-by-name
// says. Upstream merges spec.podTemplate with the component's template
// (FlinkUtils.mergePodTemplates, JSON trees) by position by default: the
// i-th element of the component's array is deep-merged into the i-th of the
// common one, whatever their names, which turns volumes a (emptyDir) and b
// (configMap) into one volume b with both sources, env [A] and [B] into
// [B], and a component template's flink-main-container into whatever
// container the common template lists at its position. With the key
// true it merges arrays by "name" when every element of both has one
// (deep-merging matched elements) and by position otherwise. Merging by
// name or natural key here never pairs unrelated items; where it differs
// from upstream's true: arrays without names (tolerations, envFrom, ...)
// are appended rather than merged by position, volumeMounts are matched by
// mountPath and ports by containerPort/protocol rather than by name, and a
// matched volume or a set container field (a probe, a securityContext) is
// replaced whole rather than deep-merged.
//
// Then what must hold for the cluster to work is re-applied, as in Flink's
// "fields overwritten by Flink" table: the selector labels app, component and
// type (a user label must not detach pods from their Deployment and
// Services); the main container's name, command and args (the operator's
// restore path and job id travel there); the config-hash annotation; the
// ConfigMap volume flink-config-volume; and the dedicated spec fields
// (image, imagePullPolicy, serviceAccount, resource(s)) when set, because
// they are the more specific user input.
//
// Last, with kubernetes.operator.jm-deployment.startup.probe.enabled (default
// true), the JobManager's main container gets upstream's startup probe
// (FlinkUtils.addStartupProbe) unless a template gave it one: HTTP GET
// /config on the REST port Flink binds (upstream names the port "rest"),
// every second, failureThreshold MaxInt32, so it never restarts the
// container and only holds back readiness until Flink's REST API answers.
// Both modes; never the TaskManagers. It changes only the JobManager
// Deployment, which the controller never updates in place, so running
// clusters keep their JobManager until their next deploy.
//
// # Native mode
//
// With Input.Native the operator builds what Flink's own
// KubernetesClusterDescriptor would create for an application or session
// cluster (KubernetesJobManagerFactory and its decorators), and Flink's
// Kubernetes resource manager, running in the JobManager, creates the
// TaskManager pods. The caller maps spec.mode to Input.Native; NativeMode is
// upstream's rule (unset or native means native). Objects the operator
// builds (Cluster, TaskManager nil):
//
//	ConfigMap  flink-config-<name>   config file as above, log4j-console.properties, ...
//	ConfigMap  pod-template-<name>   taskmanager-pod-template.yaml (only when there is a TaskManager template)
//	Deployment <name>                JobManager, Recreate, /docker-entrypoint.sh bash -c "kubernetes-jobmanager.sh kubernetes-application|kubernetes-session <kubernetes.jobmanager.entrypoint.args>"
//	Service    <name>                headless, RPC 6123 + blob 6124 (Flink's internal Service)
//	Service    <name>-rest           kubernetes.rest-service.exposed.type (default ClusterIP), port rest.port
//
// Labels are Flink's: app=<name>, type=flink-native-kubernetes on all,
// component=jobmanager on the Deployment, its pods and the Services'
// selectors (Services and ConfigMaps carry the common labels only, as
// Flink's decorators). Every object is owned by the FlinkDeployment, as in
// standalone mode. The JobManager arguments are exactly Flink's
// CmdJobManagerDecorator's (the image's entrypoint runs them as given); no
// -D for HA: Flink's Kubernetes entrypoint binds to the pod IP
// (_POD_IP_ADDRESS) itself when HA is on. The TaskManager pod template,
// when spec.podTemplate or spec.taskManager.podTemplate is set or the
// TaskManager has resources other than cpu and memory, is spec.podTemplate
// with spec.taskManager.podTemplate laid over it (the rules above) plus
// those resources on flink-main-container; it is mounted in the JobManager
// at /opt/flink/pod-template (volume pod-template-volume) as Flink's
// PodTemplateMountDecorator does, and the JobManager's config hash covers it
// because Flink reads it once at start.
//
// Configuration, on top of the layers above (upstream's FlinkConfigBuilder
// and Flink's KubernetesClusterDescriptor): execution.target and
// kubernetes.internal.jobmanager.entrypoint.class (kubernetes-application
// or kubernetes-session); kubernetes.container.image.ref (before 1.17
// kubernetes.container.image) = spec.image;
// kubernetes.container.image.pull-policy, kubernetes.service-account from
// the spec when set; kubernetes.rest-service.exposed.type ClusterIP unless
// set; kubernetes.jobmanager.owner.reference (the FlinkDeployment,
// controller false, as upstream; Flink uses it only if it creates the
// Deployment itself); kubernetes.jobmanager.replicas (more than one needs
// HA, as Flink requires); kubernetes.{jobmanager,taskmanager}.cpu.amount
// from spec cpu and the cpu/memory limit factors from spec.*.resources
// giving both request and limit (memory is the process size, as above);
// kubernetes.pod-template-file.taskmanager when there is a template.
// Applications get pipeline.jars (the jarURI as given, local://; not
// pipeline.classpaths), $internal.application.main and
// $internal.application.program-args (a YAML list, "a;b" before 1.19),
// and, because the native entrypoint takes no command line,
// Input.RestorePath as execution.savepoint.path and allowNonRestoredState
// as execution.savepoint.ignore-unclaimed-state, for every version, as
// upstream writes them (Flink 1.20 and later read them as the deprecated
// keys of execution.state-recovery.*). The client-side keys Flink's
// FlinkConfMountDecorator strips (rest.bind-address, jobmanager.bind-host,
// taskmanager.bind-host, taskmanager.host, kubernetes.config.file) are
// dropped. kubernetes.cluster-id is <name>, which Flink also uses as the
// JobManager Deployment's name, and with HA as high-availability.cluster-id;
// so the name must be a DNS-1035 label of at most 45 characters (Flink's
// limit), or Build fails.
//
// What Flink creates itself, through the API server as the pods'
// ServiceAccount (kubernetes.service-account, else "default"):
//
//   - TaskManager pods <name>-taskmanager-<attempt>-<n>
//     (TaskManagerPodNamePrefix), labelled Labels(Native, name, taskmanager)
//     (TaskManagerSelector(Native, name)), restartPolicy Never, mounting
//     flink-config-<name> (only the keys it found in its conf directory),
//     with a controller owner reference (blockOwnerDeletion true) to the
//     JobManager Deployment <name>, which Flink GETs by that name to set
//     it. They go when the Deployment is deleted (garbage collection) and
//     when the resource manager releases them; the operator never creates
//     or scales them. A new JobManager pod of the same Deployment (a
//     config change) does not delete them at once: the new resource
//     manager recovers or releases the previous attempt's pods.
//   - With high-availability.type kubernetes: ConfigMaps
//     <name>-cluster-config-map (leader election and addresses) and
//     <name>-<job-id>-config-map (checkpoint pointers, counter, job graph),
//     labelled app=<name>, type=flink-native-kubernetes, and on Flink 1.x
//     also configmap-type=high-availability (HAConfigMapLabels), which
//     Flink 2 dropped: IsHAConfigMap recognises both, by that label or by
//     name (haconfigmap.go). They have no owner reference, so they survive
//     the Deployment's deletion on purpose (last-state upgrades and
//     suspend read them); upstream deletes them when the resource is
//     deleted or redeployed stateless, and so must the controller. Flink
//     itself deletes a job's HA data when the job reaches a globally
//     terminal state (FINISHED, CANCELED, FAILED), and all of them when
//     the cluster is shut down through Flink.
//   - Nothing else: the JobManager neither creates nor updates the objects
//     above, and with execution.shutdown-on-application-finish false it
//     does not delete its Deployment when the job ends (a session cluster
//     shut down through Flink's REST API deletes Deployment <name>).
//
// RBAC the Flink ServiceAccount needs in the job namespace (a Role, as
// upstream's chart's job role; nothing cluster-wide):
//
//   - pods: get, list, watch (the resource manager watches its pods),
//     create, delete (upstream also grants update, patch);
//   - configmaps: get, list, watch, create, update, patch, delete (HA
//     leader election, checkpoint pointers and their cleanup; Flink
//     deletes by label, which a client may send as deletecollection, so
//     grant it too if the API server logs a denial);
//   - deployments (apps): get on <name> for the TaskManagers' owner
//     reference, and update on deployments/finalizers because that
//     reference sets blockOwnerDeletion (enforced where the
//     OwnerReferencesPermissionEnforcement admission plugin runs); delete
//     only if a session cluster may be shut down through Flink. Upstream
//     grants get, list, watch, create, update, patch, delete on
//     deployments and deployments/finalizers.
//
// Without pods create the JobManager starts but no TaskManager ever
// registers (the job stays CREATED/INITIALIZING and the JobManager log
// shows 403s); without configmaps an HA JobManager never becomes leader.
//
// # Hashes
//
// Pod templates carry AnnotationConfigHash, a hash of the ConfigMap data, so a
// config change (a new job id, say) rolls the pods even though the ConfigMap
// name stays the same (pipeline.jobvertex-parallelism-overrides is left
// out: it is applied to the running job in place, scalehash.go);
// AnnotationRestartNonce carries spec.restartNonce for the same reason.
// Every built object carries AnnotationSpecHash, a hash of what the
// operator built, so the controller can tell whether a live object needs
// an update (SpecHashChanged) without comparing against server-side
// defaults.
package cluster
