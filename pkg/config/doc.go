// Package config holds the operator's configuration: the
// kubernetes.operator.* keys and the few Flink keys the operator reads, their
// defaults, the operator's config file, per-resource overrides from a
// resource's flinkConfiguration, and Flink-compatible duration parsing.
//
// It follows the Apache Flink Kubernetes Operator so that configs, docs and
// habits carry over: the same key names and defaults, one flat string map
// like Flink's Configuration, durations parsed like Flink's
// TimeUtils.parseDuration ("10 s", "1 min", "24 h", "500" = ms) plus
// Go-style "1h30m", nested or flat YAML accepted everywhere.
//
// Where it differs, on purpose:
//
//   - Each key says whether a resource may override it (Key.Overridable).
//     Operator-wide keys — loop intervals, client timeouts, worker count,
//     watched namespaces, leader election, admin caps (history thresholds,
//     snapshot.max-concurrent), the disposal timeout that guarantees deletion
//     never hangs, and the cross-namespace privilege — are ignored with a
//     warning when a resource sets them. Upstream silently ignores some and
//     honours others.
//   - Unknown kubernetes.operator.* keys give warnings (with a "did you
//     mean"), so a typo is visible instead of silently doing nothing.
//   - A resource's value under an old Flink key name (state.savepoints.dir)
//     beats the operator's value under the new one; see Effective.
//   - kubernetes.operator.reconcile.parallelism is the number of workers per
//     controller, default 5, not upstream's 200 blocking threads.
//
// Every option of upstream's configuration reference (operator and metric
// options) has a status here (UpstreamKeys: implemented, different, not
// applicable, not yet, with the reason); TestUpstreamParity checks the list
// against upstream's reference (pkg/upstreamtest), ParityTable renders it
// into docs/compatibility.md, and setting an upstream option that has no
// effect here gives a warning saying why.
//
// The package does no I/O besides LoadFile reading the file it is given, so
// everything else is tested with tables. Quartz cron parsing of the periodic
// snapshot intervals lives with the snapshot rules, not here: this package
// only stores the string.
package config
