// Package metrics defines the operator's Prometheus metrics. Label sets are
// bounded on purpose: never a resource name, only namespaces, kinds, types,
// states and endpoints, so cardinality does not grow with the number of
// snapshots. The one exception is the job autoscaler's per-vertex series
// (autoscaler.go), as upstream's: they exist only for autoscaled jobs.
package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// Registry holds every metric the operator exposes on /metrics.
var Registry = prometheus.NewRegistry()

func init() {
	Registry.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
}
