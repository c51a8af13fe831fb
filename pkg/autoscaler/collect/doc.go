// Package collect gathers the job autoscaler's metrics from a Flink
// JobManager's REST API: the job graph once per job, and each collection a
// time-stamped sample of every job vertex's load, kept in a bounded
// in-memory history over the metrics window (upstream's
// job.autoscaler.metrics.window, default 15 minutes).
//
// The semantics follow the Apache Flink Kubernetes Operator's collector
// (flink-autoscaler ScalingMetricCollector / RestApiMetricsCollector):
//
//   - busyTimeMsPerSecond of a vertex is aggregated over its subtasks with
//     the configured aggregator (upstream's
//     job.autoscaler.metrics.busy-time.aggregator, default MAX);
//   - backPressuredTimeMsPerSecond is the subtasks' average;
//   - record rates and pending records are sums over the subtasks;
//   - a source's pending records are the sum of every
//     "<operator>.pendingRecords" metric it lists (FLIP-33; absent for
//     legacy or idle sources, which the sample marks with -1);
//   - a source's incoming rate is its task numRecordsInPerSecond, else its
//     "Source__<name>.numRecordsInPerSecond", else its
//     "Source__<name>.numRecordsOutPerSecond";
//   - a FINISHED vertex counts as idle (zeros), like upstream's
//     FINISHED_METRICS;
//   - a RUNNING vertex without busyTimeMsPerSecond makes the collection
//     fail as not ready (upstream's MetricNotFoundException), and history
//     restarts when the job restarts (its RUNNING timestamp moves) or its
//     graph changes.
//
// Time is an input (Collect's now); the package has no clock. Nothing here
// reads Kubernetes. As upstream keeps its collectedMetrics in the
// autoscaler ConfigMap, the history can outlive the collector: History
// gives the graph and the samples to store (pkg/autoscaler/store encodes
// them), Restore gives them to the next operator's collector, and its
// first collection keeps them only if the job is still the one they were
// collected on (same job id, vertices and parallelism, not restarted).
//
// The graph's edges carry the plan's ship strategy, so that a keyBy
// ("HASH") edge is known: its receiving vertex's parallelism is aligned to
// its key groups (max parallelism), as upstream aligns it.
//
// REST calls per collection, for a job of V running vertices:
//
//   - 1 GET /jobs/:jobid (state, RUNNING timestamp, vertex parallelism:
//     the check that the graph and history still hold);
//   - V GET /jobs/:jobid/vertices/:vertexid/subtasks/metrics?get=...&agg=...,
//     one per vertex with every metric it needs;
//   - only while a source has not yet reported pendingRecords: one listing
//     GET .../subtasks/metrics (no get=) for that source, at most once per
//     Options.NameRefresh.
//
// When the job id, a vertex's parallelism or the vertex set changes, the
// graph is rebuilt: its plan comes with the job details (no call; GET
// /jobs/:jobid/plan and GET /jobs/:jobid/vertices/:vertexid only on a
// JobManager whose details lack the plan or the max parallelism, see
// flink.Client.JobGraphFrom), plus one listing call per source vertex to
// find its operator metric names.
package collect
