// Package deployment is the FlinkDeployment controller, standalone and
// native mode: it builds a Flink cluster (pkg/cluster) for every FlinkDeployment,
// application clusters (spec.job set) and session clusters alike, watches
// the cluster and its job, and carries the job's state across upgrades,
// suspends and deletion. controller.go holds the queue and the event
// handlers; a deployment's life reads in sync.go (Sync, commit) →
// observe.go → jobengine.State.Reconcile, with this package's Driver in
// reconcile.go (validation, the objects of a deploy, steady state and drift
// repair) and upgrade.go (the stop protocol's questions, teardown) →
// deletion.go.
//
// # Shape of a sync
//
// Sync reads the FlinkDeployment and its objects from informer caches
// (never the API server), works on a DeepCopy, observes, decides, then
// commits: idempotent pre-writes (snapshot resources), at most one status
// write, events, then the writes and Flink calls the new status announces
// (create/update/delete objects, POST /stop, PATCH cancel). No worker waits
// on Flink or Kubernetes (but for the log tail of a failed container run,
// read once per run within 5 s, pods.go, and the check of a native
// cluster's ServiceAccount, once per deploy within 5 s,
// serviceaccount.go): progress is polled with AddAfter
// (the progress check interval, 10 s, while something changes; the
// reconcile interval, 60 s, when the job runs; 1–30 s while a
// stop-with-savepoint is in flight).
// Owned ConfigMaps, Deployments and Services, from informers filtered on
// type=flink-standalone-kubernetes or flink-native-kubernetes (native mode:
// also the TaskManager pods and HA ConfigMaps Flink creates), enqueue their controlling
// FlinkDeployment, so a JobManager becoming ready or a deleted Service is
// acted on at once; the cluster's pods (same filter) enqueue theirs by the
// app label, so a crash-looping or unschedulable pod is reported at once
// (pods.go); so does a FlinkStateSnapshot of the job that turns
// terminal (a periodic slot may have waited for it, history cleanup may have
// work). The controller's own status writes do not wake it.
//
// # Behaviour
//
// What a FlinkDeployment does (the objects, the status as a write-ahead
// log, upgrades, suspend, deletion, drift repair, reaching Flink) is
// described for users in docs/deployments.md; the job transitions and the
// function making each are in pkg/controller/jobengine's doc.go.
package deployment
