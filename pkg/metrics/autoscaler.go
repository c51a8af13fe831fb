package metrics

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"
)

// The job autoscaler's view of each vertex of each autoscaled job, as of
// its last evaluation, as upstream reports it per resource and vertex
// (AutoscalerFlinkMetrics: parallelism, recommended parallelism, true
// processing rate, target data rate, load). The one exception to this
// package's rule against resource names in labels: these series exist only
// for jobs with job.autoscaler.enabled, one per vertex, and go when the
// resource does or its autoscaler is turned off.

// AutoscalerVertex is one vertex's figures.
type AutoscalerVertex struct {
	ID                     string
	Parallelism            int
	RecommendedParallelism int
	// TrueProcessingRate and TargetDataRate in records per second;
	// Utilization is the busy time fraction (0..1). NaN: not measured.
	TrueProcessingRate float64
	TargetDataRate     float64
	Utilization        float64
}

type autoscaledJob struct {
	namespace, kind, name string
	vertices              []AutoscalerVertex
}

type autoscalerCollector struct {
	mu   sync.Mutex
	jobs map[types.UID]autoscaledJob

	parallelism, recommended, rate, target, utilization *prometheus.Desc
}

var autoscaler = newAutoscalerCollector()

func newAutoscalerCollector() *autoscalerCollector {
	labels := []string{"namespace", "kind", "name", "vertex"}
	d := func(name, help string) *prometheus.Desc {
		return prometheus.NewDesc("flink_operator_autoscaler_"+name, help, labels, nil)
	}
	return &autoscalerCollector{
		jobs:        map[types.UID]autoscaledJob{},
		parallelism: d("parallelism", "Parallelism of the job vertex at the autoscaler's last evaluation."),
		recommended: d("recommended_parallelism", "Parallelism the autoscaler recommends for the job vertex."),
		rate:        d("true_processing_rate", "Records per second the job vertex could process at full load."),
		target:      d("target_data_rate", "Records per second the job vertex must process (its input, plus the backlog to catch up)."),
		utilization: d("utilization", "Busy time fraction of the job vertex (0..1)."),
	}
}

func init() { Registry.MustRegister(autoscaler) }

// SetAutoscalerVertices records the last evaluation of the job of resource
// uid (kind FlinkDeployment or FlinkSessionJob).
func SetAutoscalerVertices(uid types.UID, namespace, kind, name string, vertices []AutoscalerVertex) {
	autoscaler.mu.Lock()
	defer autoscaler.mu.Unlock()
	autoscaler.jobs[uid] = autoscaledJob{namespace, kind, name, vertices}
}

// ForgetAutoscaler drops the series of resource uid.
func ForgetAutoscaler(uid types.UID) {
	autoscaler.mu.Lock()
	defer autoscaler.mu.Unlock()
	delete(autoscaler.jobs, uid)
}

func (c *autoscalerCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.parallelism, c.recommended, c.rate, c.target, c.utilization} {
		ch <- d
	}
}

func (c *autoscalerCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, j := range c.jobs {
		for _, v := range j.vertices {
			l := []string{j.namespace, j.kind, j.name, v.ID}
			ch <- prometheus.MustNewConstMetric(c.parallelism, prometheus.GaugeValue, float64(v.Parallelism), l...)
			ch <- prometheus.MustNewConstMetric(c.recommended, prometheus.GaugeValue, float64(v.RecommendedParallelism), l...)
			ch <- prometheus.MustNewConstMetric(c.rate, prometheus.GaugeValue, v.TrueProcessingRate, l...)
			ch <- prometheus.MustNewConstMetric(c.target, prometheus.GaugeValue, v.TargetDataRate, l...)
			ch <- prometheus.MustNewConstMetric(c.utilization, prometheus.GaugeValue, v.Utilization, l...)
		}
	}
}
