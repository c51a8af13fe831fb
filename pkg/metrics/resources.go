package metrics

import (
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/labels"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/canary"
	listers "github.com/flinkops/flink-operator/pkg/generated/listers/flink/v1beta1"
)

// Resource counts (kubernetes.operator.resource.metrics.enabled): upstream's
// FlinkDeploymentMetrics and FlinkSessionJobMetrics, per namespace:
//
//	<Kind>.Count                                  flink_operator_resources{kind,namespace}
//	FlinkDeployment.JmDeploymentStatus.<S>.Count  flink_operator_jobmanager_deployments{namespace,status}
//	FlinkDeployment.FlinkVersion.<V>.Count        flink_operator_flink_versions{namespace,version,minor_version}
//	FlinkDeployment.FlinkMinorVersion.<M>.Count   sum by (namespace, minor_version) of the above
//
// Lifecycle.State.<STATE>.Count is flink_operator_lifecycle_resources
// (lifecycle.go). Counted from the informer caches at scrape time, so
// nothing drifts or outlives a deleted resource; canary resources are left
// out, as upstream (its reconciler never records them). Upstream's
// ResourceUsage gauges (Cpu, Memory, StateSize) are not exported: their
// inputs (clusterInfo's total-cpu, total-memory, state-size) are not
// recorded in the status here.

// jobManagerStatuses are the status label's values, in upstream's order.
var jobManagerStatuses = [...]v1beta1.JobManagerDeploymentStatus{
	v1beta1.JobManagerReady,
	v1beta1.JobManagerDeployedNotReady,
	v1beta1.JobManagerDeploying,
	v1beta1.JobManagerMissing,
	v1beta1.JobManagerError,
}

// Upstream's placeholders for a FlinkDeployment whose Flink version is not
// known yet (no clusterInfo flink-version) and for a version without a
// minor part.
const (
	UnknownFlinkVersion   = "UNKNOWN"
	MalformedMinorVersion = "MALFORMED"
)

// ResourceListers are the FlinkDeployment and FlinkSessionJob listers of
// every watched namespace (one each when all namespaces are watched).
type ResourceListers struct {
	Deployments []listers.FlinkDeploymentLister
	SessionJobs []listers.FlinkSessionJobLister
}

type resourceCollector struct {
	listers                        ResourceListers
	resources, jobManagers, flinks *prometheus.Desc
}

// RegisterResourceCounter installs flink_operator_resources,
// flink_operator_jobmanager_deployments and flink_operator_flink_versions,
// counted from l on each scrape. It returns a function that unregisters
// them. The operator calls it only when kubernetes.operator.resource.metrics.enabled
// is true at start.
func RegisterResourceCounter(l ResourceListers) (unregister func()) {
	c := newResourceCollector(l)
	Registry.MustRegister(c)
	return func() { Registry.Unregister(c) }
}

func newResourceCollector(l ResourceListers) *resourceCollector {
	return &resourceCollector{
		listers: l,
		resources: prometheus.NewDesc("flink_operator_resources",
			"FlinkDeployments and FlinkSessionJobs by namespace (upstream's <Kind>.Count).",
			[]string{"kind", "namespace"}, nil),
		jobManagers: prometheus.NewDesc("flink_operator_jobmanager_deployments",
			"FlinkDeployments by namespace and status.jobManagerDeploymentStatus (upstream's FlinkDeployment.JmDeploymentStatus.<STATUS>.Count).",
			[]string{"namespace", "status"}, nil),
		flinks: prometheus.NewDesc("flink_operator_flink_versions",
			"FlinkDeployments by namespace and the Flink version their JobManager reports (upstream's FlinkDeployment.FlinkVersion.<VERSION>.Count and, summed by minor_version, FlinkMinorVersion.<MINOR>.Count).",
			[]string{"namespace", "version", "minor_version"}, nil),
	}
}

func (c *resourceCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.resources
	ch <- c.jobManagers
	ch <- c.flinks
}

func (c *resourceCollector) Collect(ch chan<- prometheus.Metric) {
	type deployments struct {
		count    int
		statuses [len(jobManagerStatuses)]int
		versions map[string]int
	}
	byNamespace := map[string]*deployments{}
	for _, l := range c.listers.Deployments {
		list, _ := l.List(labels.Everything()) // a lister's List never fails
		for _, d := range list {
			if canary.Is(d) {
				continue
			}
			n := byNamespace[d.Namespace]
			if n == nil {
				n = &deployments{versions: map[string]int{}}
				byNamespace[d.Namespace] = n
			}
			n.count++
			if i := jobManagerStatusIndex(d.Status.JobManagerDeploymentStatus); i >= 0 {
				n.statuses[i]++
			}
			n.versions[d.Status.ClusterInfo["flink-version"]]++
		}
	}
	for ns, n := range byNamespace {
		ch <- prometheus.MustNewConstMetric(c.resources, prometheus.GaugeValue, float64(n.count), KindFlinkDeployment, ns)
		// Every status of a namespace with FlinkDeployments, zeros
		// included, as upstream.
		for i, s := range jobManagerStatuses {
			ch <- prometheus.MustNewConstMetric(c.jobManagers, prometheus.GaugeValue, float64(n.statuses[i]), ns, string(s))
		}
		for v, count := range n.versions {
			version, minor := FlinkVersionLabels(v)
			ch <- prometheus.MustNewConstMetric(c.flinks, prometheus.GaugeValue, float64(count), ns, version, minor)
		}
	}
	sessionJobs := map[string]int{}
	for _, l := range c.listers.SessionJobs {
		list, _ := l.List(labels.Everything())
		for _, j := range list {
			if !canary.Is(j) {
				sessionJobs[j.Namespace]++
			}
		}
	}
	for ns, n := range sessionJobs {
		ch <- prometheus.MustNewConstMetric(c.resources, prometheus.GaugeValue, float64(n), KindFlinkSessionJob, ns)
	}
}

// jobManagerStatusIndex is s's index in jobManagerStatuses, -1 for none.
// No status yet counts as MISSING, upstream's initial value.
func jobManagerStatusIndex(s v1beta1.JobManagerDeploymentStatus) int {
	if s == "" {
		s = v1beta1.JobManagerMissing
	}
	for i, v := range jobManagerStatuses {
		if v == s {
			return i
		}
	}
	return -1
}

// FlinkVersionLabels are the version and minor_version labels of a
// FlinkDeployment whose status.clusterInfo has flink-version v, as upstream:
// "1.20.1" is minor "1.20"; no version is UNKNOWN (minor MALFORMED).
func FlinkVersionLabels(v string) (version, minor string) {
	if strings.TrimSpace(v) == "" {
		v = UnknownFlinkVersion
	}
	parts := strings.Split(v, ".")
	if len(parts) < 2 {
		return v, MalformedMinorVersion
	}
	return v, parts[0] + "." + parts[1]
}
