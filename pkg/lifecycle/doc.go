// Package lifecycle holds the pure rules of a Flink job's life that the
// FlinkDeployment and FlinkSessionJob controllers share: the recorded spec
// in upstream's lastReconciledSpec shape and its comparison with the spec by
// meaning (SameSpec, which reads upstream's records too), fresh job ids, the job state the
// operator reports for a Flink job, the lifecycle state of the resource,
// and where a forgotten stop-with-savepoint left its savepoint. It does no
// I/O: it takes objects and returns decisions.
package lifecycle
