// Package benchscale is the scale benchmark of issue 21 (`make bench-scale`,
// docs/performance.md): a real local control plane (e2e/localcluster) with
// an audit log of the operator user's writes, the operator binary watching
// a set of namespaces, and a load of FlinkDeployments and
// FlinkStateSnapshots created as fast as the API server takes them.
//
// Scenarios:
//
//   - suspended: N FlinkDeployments with job.state suspended and M savepoint
//     snapshots referencing them (they end ABANDONED: nothing runs);
//   - running: N FlinkDeployments running on fake JobManagers (a fake node,
//     fakenode.go, binds their pods and serves every JobManager in-process
//     with pkg/flink/fakejm), then one savepoint per job, all created at
//     once (they end COMPLETED);
//   - autoscaler and autoscaler-off (issue 33's cost): N FlinkDeployments on
//     fake JobManagers serving a steady synthetic load
//     (cmd/fake-jobmanager/synthload: a source → map → sink job graph, its
//     metrics, and in-place rescales as Flink's adaptive scheduler does
//     them), with the job autoscaler on or off, then a measured window
//     (autoscaler.go).
//
// Figures: time from the first create to settling (every snapshot terminal
// and no operator write for a quiet period), the operator's API writes per
// object by verb and resource (from the audit log, events included),
// create→trigger and create→result percentiles, Flink REST calls (from the
// operator's /metrics), the operator's RSS, peak RSS and CPU seconds, writes
// and REST calls in an idle window after settling, and in a window after a
// restart of the operator.
//
// TestBenchScaleSmall is the small variant (a couple of minutes); the full
// size runs only with FLINKOP_BENCH_SCALE=1 (TestBenchScale). Likewise
// TestBenchAutoscalerSmall (10 jobs, under 2 minutes) and, with
// FLINKOP_BENCH_AUTOSCALER=1, TestBenchAutoscaler (100 jobs, on then off,
// 5 minutes each). All read their sizes from FLINKOP_BENCH_* variables
// (see config.go).
package benchscale
