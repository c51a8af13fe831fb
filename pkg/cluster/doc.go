// Package cluster builds the Kubernetes objects of a standalone Flink cluster
// for a FlinkDeployment: the effective Flink configuration, the ConfigMap
// holding it, the JobManager and TaskManager Deployments and the two Services.
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
//     FlinkConfigBuilder, which uses setDefaultConf for these); memory
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
// stay readable through config.Effective) and the restore-path keys
// execution.savepoint.path / execution.state-recovery.path: where a job
// starts from is the operator's decision (Input.RestorePath, passed as
// --fromSavepoint like upstream), and a path left in the file would silently
// restore old state on every restart, including a stateless redeploy.
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
// This differs from upstream, which by default merges arrays by position
// (kubernetes.operator.pod-template.merge-arrays-by-name=false); by name is
// what its own pod-template example needs and never pairs unrelated items.
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
// # Hashes
//
// Pod templates carry AnnotationConfigHash, a hash of the ConfigMap data, so a
// config change (a new job id, say) rolls the pods even though the ConfigMap
// name stays the same; AnnotationRestartNonce carries spec.restartNonce for
// the same reason. Every built object carries AnnotationSpecHash, a hash
// of what the operator built, so the controller can tell whether a live
// object needs an update (SpecHashChanged) without comparing against
// server-side defaults.
package cluster
