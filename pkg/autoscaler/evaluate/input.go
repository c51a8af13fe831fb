// Package evaluate turns a job graph and a window of metric samples into the
// per-vertex figures the autoscaler decides on: how fast each vertex could
// process at its current parallelism (true processing rate), how fast data
// arrives at it (target rate, computed from the sources downstream along the
// graph's edges), the extra rate needed to drain the sources' backlog within
// catch-up.duration, and the utilization these imply. It follows upstream's
// ScalingMetricEvaluator (Kalavri et al., "Three steps is all you need",
// OSDI 2018) on per-second rates, so the numbers compare with upstream's.
//
// Everything is pure: no clock, no I/O. Time arrives in the samples and as
// arguments.
package evaluate

import "time"

// Edge is one input of a vertex.
type Edge struct {
	From string
	// Hash is true for a keyBy (hash-partitioned) edge: the receiving
	// vertex's parallelism is then aligned to its key groups.
	Hash bool
}

// Vertex is one job vertex as Flink's job graph reports it.
type Vertex struct {
	ID             string
	Parallelism    int
	MaxParallelism int // number of key groups; bounds the parallelism
	// SourcePartitions is the number of partitions a source reads (Kafka
	// partitions, for example), 0 when unknown or not a source; a source's
	// parallelism is aligned to it.
	SourcePartitions int
	Inputs           []Edge // none for a source
	// SlotSharingGroup names the vertex's slot sharing group ("" = the
	// default group); the resource quota check counts slots per group.
	SlotSharingGroup string
}

// IsSource says whether the vertex has no inputs.
func (v Vertex) IsSource() bool { return len(v.Inputs) == 0 }

// Graph is a job's vertices, in any order.
type Graph []Vertex

// VertexSample is one observation of one vertex. Rates are for the whole
// vertex (all subtasks together), per second; NaN marks a figure the
// collector could not get.
type VertexSample struct {
	// BusyMsPerSecond is busyTimeMsPerSecond already aggregated over the
	// subtasks as metrics.busy-time.aggregator says (MAX by default): the
	// collector aggregates, this package does not see subtasks.
	BusyMsPerSecond float64
	// BackPressuredMsPerSecond (same aggregation) corrects the observed
	// processing rate of a source held back by its downstream.
	BackPressuredMsPerSecond float64
	// RecordsInPerSecond: records the vertex took in; for a source, the
	// records it read from the external system.
	RecordsInPerSecond  float64
	RecordsOutPerSecond float64
	// PendingRecords is a source's backlog in the external system (Kafka
	// consumer lag, for example); NaN when the connector does not report it.
	PendingRecords float64
}

// JobSample holds the job-wide figures that can block scaling.
type JobSample struct {
	GCPressure        float64 // fraction of time in GC, max over TaskManagers; NaN = unknown
	HeapMaxUsageRatio float64 // heap used / heap max, max over TaskManagers; NaN = unknown
}

// Sample is one collection of metrics at one time.
type Sample struct {
	Time     time.Time
	Vertices map[string]VertexSample
	Job      JobSample
}
