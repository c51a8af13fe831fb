package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
)

// Snapshot metrics. Labels are bounded: namespace, type (savepoint or
// checkpoint), trigger type and state — never a snapshot or job name.
var (
	SnapshotDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: "flink_operator", Name: "snapshot_duration_seconds",
		Help:    "Time from trigger to completion of snapshots the operator triggered.",
		Buckets: prometheus.ExponentialBuckets(0.5, 2, 14), // 0.5 s .. ~68 min
	}, []string{"type", "trigger_type"})
	SnapshotFailures = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "flink_operator", Name: "snapshot_failures_total",
		Help: "Failed snapshot attempts (each retry counts).",
	}, []string{"namespace", "type"})
	SnapshotAbandoned = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "flink_operator", Name: "snapshot_abandoned_total",
		Help: "Snapshots abandoned because their job was missing or not running.",
	}, []string{"namespace", "type"})
	SnapshotDisposeSkipped = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "flink_operator", Name: "snapshot_dispose_skipped_total",
		Help: "Savepoints whose data was left on storage because disposal did not succeed within the dispose timeout.",
	}, []string{"namespace"})
)

func init() {
	Registry.MustRegister(SnapshotDuration, SnapshotFailures, SnapshotAbandoned, SnapshotDisposeSkipped)
}

// SnapshotCount is one value of the flink_operator_snapshots gauge.
type SnapshotCount struct {
	Namespace, Type, State string
	Count                  int
}

// snapshotCollector reports how many snapshots exist per namespace, type and
// state, computed from the informer cache at scrape time (no bookkeeping to
// drift, nothing to forget on deletion).
type snapshotCollector struct {
	desc  *prometheus.Desc
	count func() []SnapshotCount
}

// RegisterSnapshotCounter installs the flink_operator_snapshots gauge, fed by
// count on each scrape. It returns a function that unregisters it.
func RegisterSnapshotCounter(count func() []SnapshotCount) (unregister func()) {
	c := &snapshotCollector{
		desc: prometheus.NewDesc("flink_operator_snapshots",
			"FlinkStateSnapshot resources by namespace, type and state.",
			[]string{"namespace", "type", "state"}, nil),
		count: count,
	}
	Registry.MustRegister(c)
	return func() { Registry.Unregister(c) }
}

func (c *snapshotCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c *snapshotCollector) Collect(ch chan<- prometheus.Metric) {
	for _, v := range c.count() {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(v.Count), v.Namespace, v.Type, v.State)
	}
}
