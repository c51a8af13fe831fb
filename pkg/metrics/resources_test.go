package metrics

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/canary"
	listers "github.com/flinkops/flink-operator/pkg/generated/listers/flink/v1beta1"
)

func cachedDeployment(ns, name string, jm v1beta1.JobManagerDeploymentStatus, version string) *v1beta1.FlinkDeployment {
	d := &v1beta1.FlinkDeployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	d.Status.JobManagerDeploymentStatus = jm
	if version != "" {
		d.Status.ClusterInfo = map[string]string{"flink-version": version, "flink-revision": "abc123"}
	}
	return d
}

func cachedSessionJob(ns, name string) *v1beta1.FlinkSessionJob {
	return &v1beta1.FlinkSessionJob{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
}

func asCanary[T metav1.Object](o T) T {
	o.SetLabels(map[string]string{canary.Label: "true"})
	return o
}

func newIndexer(t *testing.T, objs ...any) cache.Indexer {
	t.Helper()
	idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	for _, o := range objs {
		if err := idx.Add(o); err != nil {
			t.Fatal(err)
		}
	}
	return idx
}

// seriesOf keeps the samples of the named metrics.
func seriesOf(samples map[string]float64, names ...string) map[string]float64 {
	out := map[string]float64{}
	for s, v := range samples {
		for _, n := range names {
			if strings.HasPrefix(s, n+"{") {
				out[s] = v
			}
		}
	}
	return out
}

// Issue 36 item 9: upstream's per-namespace FlinkDeployment and
// FlinkSessionJob counts (resource.metrics.enabled), from the caches of
// two watched namespaces (an informer each), read at scrape time.
func TestResourceCountsComeFromTheCachesAtScrapeTime(t *testing.T) {
	teamA := newIndexer(t,
		cachedDeployment("team-a", "ready", v1beta1.JobManagerReady, "1.20.1"),
		cachedDeployment("team-a", "new", v1beta1.JobManagerDeploying, ""),
		asCanary(cachedDeployment("team-a", "canary", v1beta1.JobManagerReady, "1.20.1")),
	)
	teamB := newIndexer(t,
		cachedDeployment("team-b", "broken", v1beta1.JobManagerError, "1.19.2"),
		cachedDeployment("team-b", "unobserved", "", "1.20.0"),
		cachedDeployment("team-b", "other", v1beta1.JobManagerReady, "1.20.0"),
	)
	jobsA := newIndexer(t, cachedSessionJob("team-a", "j1"), cachedSessionJob("team-a", "j2"), asCanary(cachedSessionJob("team-a", "canary")))
	jobsB := newIndexer(t, cachedSessionJob("team-b", "j3"))
	unregister := RegisterResourceCounter(ResourceListers{
		Deployments: []listers.FlinkDeploymentLister{listers.NewFlinkDeploymentLister(teamA), listers.NewFlinkDeploymentLister(teamB)},
		SessionJobs: []listers.FlinkSessionJobLister{listers.NewFlinkSessionJobLister(jobsA), listers.NewFlinkSessionJobLister(jobsB)},
	})
	defer unregister()

	names := []string{"flink_operator_resources", "flink_operator_jobmanager_deployments", "flink_operator_flink_versions"}
	want := map[string]float64{
		`flink_operator_resources{kind="FlinkDeployment",namespace="team-a"}`: 2, // not the canary
		`flink_operator_resources{kind="FlinkDeployment",namespace="team-b"}`: 3,
		`flink_operator_resources{kind="FlinkSessionJob",namespace="team-a"}`: 2,
		`flink_operator_resources{kind="FlinkSessionJob",namespace="team-b"}`: 1,
		// Every status of a namespace, zeros included, as upstream.
		`flink_operator_jobmanager_deployments{namespace="team-a",status="READY"}`:                      1,
		`flink_operator_jobmanager_deployments{namespace="team-a",status="DEPLOYED_NOT_READY"}`:         0,
		`flink_operator_jobmanager_deployments{namespace="team-a",status="DEPLOYING"}`:                  1,
		`flink_operator_jobmanager_deployments{namespace="team-a",status="MISSING"}`:                    0,
		`flink_operator_jobmanager_deployments{namespace="team-a",status="ERROR"}`:                      0,
		`flink_operator_jobmanager_deployments{namespace="team-b",status="READY"}`:                      1,
		`flink_operator_jobmanager_deployments{namespace="team-b",status="DEPLOYED_NOT_READY"}`:         0,
		`flink_operator_jobmanager_deployments{namespace="team-b",status="DEPLOYING"}`:                  0,
		`flink_operator_jobmanager_deployments{namespace="team-b",status="MISSING"}`:                    1, // no status yet: upstream's initial MISSING
		`flink_operator_jobmanager_deployments{namespace="team-b",status="ERROR"}`:                      1,
		`flink_operator_flink_versions{minor_version="1.20",namespace="team-a",version="1.20.1"}`:       1,
		`flink_operator_flink_versions{minor_version="MALFORMED",namespace="team-a",version="UNKNOWN"}`: 1,
		`flink_operator_flink_versions{minor_version="1.19",namespace="team-b",version="1.19.2"}`:       1,
		`flink_operator_flink_versions{minor_version="1.20",namespace="team-b",version="1.20.0"}`:       2,
	}
	if diff := cmp.Diff(want, seriesOf(scrape(t), names...)); diff != "" {
		t.Fatalf("resource counts (-want +got):\n%s", diff)
	}

	// The next scrape sees the caches as they are then.
	if err := teamB.Delete(cachedDeployment("team-b", "broken", "", "")); err != nil {
		t.Fatal(err)
	}
	if err := jobsB.Delete(cachedSessionJob("team-b", "j3")); err != nil {
		t.Fatal(err)
	}
	got := seriesOf(scrape(t), names...)
	for series, v := range map[string]float64{
		`flink_operator_resources{kind="FlinkDeployment",namespace="team-b"}`:                     2,
		`flink_operator_jobmanager_deployments{namespace="team-b",status="ERROR"}`:                0,
		`flink_operator_flink_versions{minor_version="1.19",namespace="team-b",version="1.19.2"}`: -1,
		`flink_operator_resources{kind="FlinkSessionJob",namespace="team-b"}`:                     -1,
	} {
		if n, ok := got[series]; v < 0 && ok {
			t.Errorf("%s = %v after its last resource went, want no series", series, n)
		} else if v >= 0 && n != v {
			t.Errorf("%s = %v after a deletion, want %v", series, n, v)
		}
	}

	unregister()
	if got := seriesOf(scrape(t), names...); len(got) > 0 {
		t.Errorf("still exposed after unregister: %v", got)
	}
}

func TestFlinkVersionLabelsAsUpstream(t *testing.T) {
	for v, want := range map[string][2]string{
		"1.20.1":        {"1.20.1", "1.20"},
		"2.0-SNAPSHOT":  {"2.0-SNAPSHOT", "2.0-SNAPSHOT"},
		"1.19.2-custom": {"1.19.2-custom", "1.19"},
		"":              {"UNKNOWN", "MALFORMED"},
		"2":             {"2", "MALFORMED"},
	} {
		if version, minor := FlinkVersionLabels(v); version != want[0] || minor != want[1] {
			t.Errorf("FlinkVersionLabels(%q) = %q, %q; want %q, %q", v, version, minor, want[0], want[1])
		}
	}
}
