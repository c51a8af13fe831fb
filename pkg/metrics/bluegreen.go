package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/labels"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	listers "github.com/flinkops/flink-operator/pkg/generated/listers/flink/v1beta1"
)

// Blue/green metrics: upstream's FlinkBlueGreenDeploymentMetrics, per
// namespace:
//
//	FlinkBlueGreenDeployment.BlueGreenState.<STATE>.Count  flink_operator_bluegreen_deployments{namespace,state}
//	FlinkBlueGreenDeployment.JobStatus.<STATUS>.Count      flink_operator_bluegreen_job_status{namespace,status}
//	FlinkBlueGreenDeployment.Failures                      flink_operator_bluegreen_failures_total{namespace}
//
// The gauges are counted from the informer cache at scrape time (every
// state of a namespace with blue/green deployments, zeros included, as
// upstream); the counter is incremented by the controller each time a
// deployment turns FAILING (an aborted transition, a transition that could
// not start).

// blueGreenStates are the state label's values, in upstream's order.
var blueGreenStates = [...]v1beta1.FlinkBlueGreenDeploymentState{
	v1beta1.BlueGreenInitializingBlue, v1beta1.BlueGreenActiveBlue, v1beta1.BlueGreenSavepointingBlue,
	v1beta1.BlueGreenTransitioningToGreen, v1beta1.BlueGreenActiveGreen, v1beta1.BlueGreenSavepointingGreen,
	v1beta1.BlueGreenTransitioningToBlue,
}

var blueGreenFailures = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "flink_operator_bluegreen_failures_total",
	Help: "FlinkBlueGreenDeployments that turned FAILING (upstream's FlinkBlueGreenDeployment.Failures).",
}, []string{"namespace"})

func init() { Registry.MustRegister(blueGreenFailures) }

// BlueGreenFailed counts a blue/green deployment of namespace turning
// FAILING.
func BlueGreenFailed(namespace string) { blueGreenFailures.WithLabelValues(namespace).Inc() }

type blueGreenCollector struct {
	listers    []listers.FlinkBlueGreenDeploymentLister
	states, js *prometheus.Desc
}

// RegisterBlueGreenCounter installs the blue/green gauges, counted from l
// on each scrape; it returns a function that unregisters them.
func RegisterBlueGreenCounter(l []listers.FlinkBlueGreenDeploymentLister) (unregister func()) {
	c := &blueGreenCollector{
		listers: l,
		states: prometheus.NewDesc("flink_operator_bluegreen_deployments",
			"FlinkBlueGreenDeployments by namespace and status.blueGreenState (upstream's FlinkBlueGreenDeployment.BlueGreenState.<STATE>.Count).",
			[]string{"namespace", "state"}, nil),
		js: prometheus.NewDesc("flink_operator_bluegreen_job_status",
			"FlinkBlueGreenDeployments by namespace and status.jobStatus.state (upstream's FlinkBlueGreenDeployment.JobStatus.<STATUS>.Count).",
			[]string{"namespace", "status"}, nil),
	}
	Registry.MustRegister(c)
	return func() { Registry.Unregister(c) }
}

func (c *blueGreenCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.states
	ch <- c.js
}

func (c *blueGreenCollector) Collect(ch chan<- prometheus.Metric) {
	states := map[string]map[v1beta1.FlinkBlueGreenDeploymentState]int{}
	jobs := map[string]map[v1beta1.JobStatusState]int{}
	for _, l := range c.listers {
		list, _ := l.List(labels.Everything()) // a lister's List never fails
		for _, bg := range list {
			if states[bg.Namespace] == nil {
				states[bg.Namespace] = map[v1beta1.FlinkBlueGreenDeploymentState]int{}
				jobs[bg.Namespace] = map[v1beta1.JobStatusState]int{}
			}
			if bg.Status.BlueGreenState != "" {
				states[bg.Namespace][bg.Status.BlueGreenState]++
			}
			if s := bg.Status.JobStatus.State; s != "" {
				jobs[bg.Namespace][s]++
			}
		}
	}
	for ns, byState := range states {
		for _, s := range blueGreenStates {
			ch <- prometheus.MustNewConstMetric(c.states, prometheus.GaugeValue, float64(byState[s]), ns, string(s))
		}
		for s, n := range jobs[ns] {
			ch <- prometheus.MustNewConstMetric(c.js, prometheus.GaugeValue, float64(n), ns, string(s))
		}
	}
}
