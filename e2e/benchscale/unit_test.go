package benchscale

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestAuditLogTallies(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.log")
	line := func(verb, res, sub, name string, code int, at time.Time) string {
		return fmt.Sprintf(`{"kind":"Event","stage":"ResponseComplete","verb":%q,"user":{"username":"flink-operator"},`+
			`"objectRef":{"resource":%q,"subresource":%q,"namespace":"bench-00","name":%q,"apiGroup":"flink.apache.org"},`+
			`"responseStatus":{"code":%d},"requestReceivedTimestamp":%q,"stageTimestamp":%q}`+"\n",
			verb, res, sub, name, code, at.Format(time.RFC3339Nano), at.Format(time.RFC3339Nano))
	}
	t0 := time.Date(2026, 12, 4, 2, 0, 0, 0, time.UTC)
	a := &auditLog{path: path}
	if err := a.poll(); err != nil { // no file yet
		t.Fatal(err)
	}
	first := line("update", "flinkstatesnapshots", "status", "sp-00001-00", 200, t0) +
		line("update", "flinkstatesnapshots", "status", "sp-00002-00", 409, t0)
	// A partial line is kept until its end arrives.
	partial := line("create", "events", "", "sp-00001-00.18a2b3c4d5e6f708", 201, t0.Add(time.Second))
	if err := os.WriteFile(path, []byte(first+partial[:20]), 0o644); err != nil {
		t.Fatal(err)
	}
	if n := a.mark(); n != 2 {
		t.Fatalf("after the first write: %d writes, want 2", n)
	}
	f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	fmt.Fprint(f, partial[20:]+line("update", "flinkdeployments", "status", "fd-00001", 200, t0.Add(2*time.Second))+
		line("create", "configmaps", "", "flink-config-fd-00001", 201, t0.Add(2*time.Second))+
		line("create", "secrets", "", "flink-operator-webhook-cert", 201, t0.Add(3*time.Second)))
	f.Close()
	ws := a.since(0)
	if len(ws) != 6 {
		t.Fatalf("%d writes, want 6", len(ws))
	}
	if last, n := a.lastWrite(); n != 6 || !last.Equal(t0.Add(3*time.Second)) {
		t.Errorf("lastWrite = %v, %d", last, n)
	}
	rows := tally(ws, map[string]int{classSnapshot: 2, classDeployment: 1})
	got := map[string]WriteRow{}
	for _, r := range rows {
		got[r.Object+" "+r.Resource+" "+r.Verb] = r
	}
	for k, want := range map[string][2]float64{
		"FlinkStateSnapshot flinkstatesnapshots/status update": {2, 1},
		"FlinkStateSnapshot events create":                     {1, 0.5},
		"FlinkDeployment flinkdeployments/status update":       {1, 1},
		"FlinkDeployment configmaps create":                    {1, 1},
		"other secrets create":                                 {1, 0},
	} {
		r, ok := got[k]
		if !ok || float64(r.Count) != want[0] || r.PerObject != want[1] {
			t.Errorf("%s: %+v (found %v), want count %v per object %v", k, r, ok, want[0], want[1])
		}
	}
	if r := got["FlinkStateSnapshot flinkstatesnapshots/status update"]; r.Failed != 1 {
		t.Errorf("failed = %d, want 1 (the 409)", r.Failed)
	}
	if c := perClass(rows); c[classSnapshot] != 3 || c[classDeployment] != 2 || c[classOther] != 1 {
		t.Errorf("perClass = %v", c)
	}
}

func TestPercentiles(t *testing.T) {
	var xs []float64
	for i := 100; i >= 1; i-- {
		xs = append(xs, float64(i))
	}
	p := percentiles(xs)
	if p.N != 100 || p.P50 != 50 || p.P99 != 99 || p.Max != 100 {
		t.Errorf("percentiles = %+v", p)
	}
	if percentiles(nil) != nil {
		t.Error("percentiles(nil) != nil")
	}
}

func TestReadProc(t *testing.T) {
	st, err := readProc(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if st.RSS <= 0 || st.HWM < st.RSS || st.CPU < 0 {
		t.Errorf("readProc(self) = %+v", st)
	}
}

func TestRESTCalls(t *testing.T) {
	body := `# HELP flink_operator_flink_rest_requests_total Flink JobManager REST calls
# TYPE flink_operator_flink_rest_requests_total counter
flink_operator_flink_rest_requests_total{code="200",endpoint="/jobs/:id/savepoints",method="POST"} 3
flink_operator_flink_rest_requests_total{code="error",endpoint="/jobs/:id/savepoints",method="POST"} 1
flink_operator_flink_rest_requests_total{code="200",endpoint="/jobs/overview",method="GET"} 7
flink_operator_flink_rest_request_duration_seconds_count{endpoint="/jobs/overview",method="GET"} 7
# TYPE go_memstats_heap_inuse_bytes gauge
go_memstats_heap_inuse_bytes 3.3554432e+07
`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, body) }))
	defer srv.Close()
	m, err := restCalls(context.Background(), srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	if len(m) != 2 || m["POST /jobs/:id/savepoints"] != 4 || m["GET /jobs/overview"] != 7 {
		t.Errorf("restCalls = %v", m)
	}
	if _, heap, err := scrapeMetrics(context.Background(), srv.URL); err != nil || heap != 32<<20 {
		t.Errorf("heap in use = %v, %v; want 32 MiB", heap, err)
	}
	d, total := restDelta(map[string]float64{"GET /jobs/overview": 5}, m)
	if total != 6 || d["GET /jobs/overview"] != 2 {
		t.Errorf("restDelta = %v, %v", d, total)
	}
}

func TestJobIDFromConfig(t *testing.T) {
	const id = "0123456789abcdef0123456789abcdef"
	for _, conf := range []string{
		"a: b\n$internal.pipeline.job-id: " + id + "\n",
		"  \"$internal.pipeline.job-id\": \"" + id + "\"\n",
	} {
		if m := jobIDRE.FindStringSubmatch(conf); m == nil || m[1] != id {
			t.Errorf("%q: %v", conf, m)
		}
	}
}

func TestSteadyAfterLastRescale(t *testing.T) {
	slices := []Slice{
		{Seconds: 30, RESTTotal: 600, Writes: 90, Rescaling: true},
		{Seconds: 30, RESTTotal: 300, Writes: 10, ConfigMapWrites: 10, CPUSeconds: 0.3, REST: map[string]float64{"GET /jobs/overview": 300}},
		{Seconds: 30, RESTTotal: 300, Writes: 20, ConfigMapWrites: 20, CPUSeconds: 0.3, REST: map[string]float64{"GET /jobs/overview": 300}},
	}
	r := steady(slices, 10)
	if r == nil || r.Seconds != 60 || r.RESTPerMinute != 600 || r.RESTPerJobPerMinute != 60 || r.WritesPerMinute != 30 ||
		r.ConfigMapWritesPerMinute != 30 || r.CPUPercent != 1 || r.RESTPerMinuteByRoute["GET /jobs/overview"] != 600 {
		t.Errorf("steady = %+v", r)
	}
	slices[2].Rescaling = true
	if r := steady(slices, 10); r != nil {
		t.Errorf("rescaling in the last slice: steady = %+v, want nil", r)
	}
}
