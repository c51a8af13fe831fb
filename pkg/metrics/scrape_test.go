package metrics

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/flinkops/flink-operator/pkg/metrics/metricstest"
)

func scrape(t *testing.T) map[string]float64 {
	t.Helper()
	samples, err := metricstest.Samples(Registry)
	if err != nil {
		t.Fatal(err)
	}
	return samples
}

func TestEndpointKeepsLabelsBounded(t *testing.T) {
	for path, want := range map[string]string{
		"/jobs/0123456789abcdef0123456789abcdef/savepoints/fedcba9876543210fedcba9876543210": "/jobs/:id/savepoints/:id",
		"/jobs/0123456789abcdef0123456789abcdef/checkpoints/details/42":                      "/jobs/:id/checkpoints/details/:n",
		"/jars/3f2a_TopSpeedWindowing.jar/run":                                               "/jars/:jar/run",
		"/config":                                                                            "/config",
	} {
		if got := Endpoint(path); got != want {
			t.Errorf("Endpoint(%q) = %q, want %q", path, got, want)
		}
	}
}

func TestFlinkRESTCallsAreCountedByRouteAndCode(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/missing") {
			http.NotFound(w, r)
			return
		}
		w.Write([]byte("{}"))
	}))
	defer srv.Close()
	client := &http.Client{Transport: InstrumentFlinkREST(nil)}
	before := scrape(t)
	for _, p := range []string{
		"/jobs/0123456789abcdef0123456789abcdef/savepoints",
		"/jobs/fedcba9876543210fedcba9876543210/savepoints",
		"/jobs/0123456789abcdef0123456789abcdef/missing",
	} {
		resp, err := client.Post(srv.URL+p, "application/json", strings.NewReader("{}"))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	// A call that gets no response is counted as "error".
	dead := httptest.NewServer(http.NotFoundHandler())
	dead.Close()
	if _, err := client.Get(dead.URL + "/overview"); err == nil {
		t.Fatal("a closed server answered")
	}
	after := scrape(t)
	for series, want := range map[string]float64{
		`flink_operator_flink_rest_requests_total{code="200",endpoint="/jobs/:id/savepoints",method="POST"}`:      2,
		`flink_operator_flink_rest_requests_total{code="404",endpoint="/jobs/:id/missing",method="POST"}`:         1,
		`flink_operator_flink_rest_requests_total{code="error",endpoint="/overview",method="GET"}`:                1,
		`flink_operator_flink_rest_request_duration_seconds_count{endpoint="/jobs/:id/savepoints",method="POST"}`: 2,
	} {
		if got := after[series] - before[series]; got != want {
			t.Errorf("%s grew by %v, want %v", series, got, want)
		}
	}
}

func TestSnapshotGaugeComesFromTheCountAtScrapeTime(t *testing.T) {
	counts := []SnapshotCount{{Namespace: "team-a", Type: "savepoint", State: "COMPLETED", Count: 3}}
	unregister := RegisterSnapshotCounter(func() []SnapshotCount { return counts })
	defer unregister()
	series := `flink_operator_snapshots{namespace="team-a",state="COMPLETED",type="savepoint"}`
	if got := scrape(t)[series]; got != 3 {
		t.Fatalf("%s = %v, want 3", series, got)
	}
	counts = []SnapshotCount{{Namespace: "team-a", Type: "savepoint", State: "COMPLETED", Count: 4}}
	if got := scrape(t)[series]; got != 4 {
		t.Errorf("%s = %v after the count changed, want 4", series, got)
	}
	unregister()
	if _, ok := scrape(t)[series]; ok {
		t.Error("the gauge is still exposed after unregister")
	}
}
