// Package snapshote2e runs the FlinkStateSnapshot controller end to end: a
// real control plane, the node agent running real Flink JobManager and
// TaskManager JVMs, and the operator binary running outside the cluster
// (--flink-endpoint=pod-ip). The Flink cluster is created by hand from
// pkg/cluster's builders, so only the snapshot controller runs
// (--controllers=flinkstatesnapshot).
package snapshote2e
