package operator

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	core "k8s.io/client-go/testing"
	"k8s.io/klog/v2/ktesting"
	testingclock "k8s.io/utils/clock/testing"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/canary"
	"github.com/flinkops/flink-operator/pkg/config"
	flinkfake "github.com/flinkops/flink-operator/pkg/generated/clientset/versioned/fake"
)

func TestMetricsMuxServesProfilesOnlyWithProfiling(t *testing.T) {
	for _, profiling := range []bool{false, true} {
		mux := metricsMux(profiling)
		for path, want := range map[string]int{
			"/metrics":                  http.StatusOK,
			"/debug/pprof/heap?debug=1": map[bool]int{false: http.StatusNotFound, true: http.StatusOK}[profiling],
			"/debug/pprof/":             map[bool]int{false: http.StatusNotFound, true: http.StatusOK}[profiling],
		} {
			rec := httptest.NewRecorder()
			mux.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
			if rec.Code != want {
				t.Errorf("profiling=%v: GET %s = %d, want %d", profiling, path, rec.Code, want)
			}
		}
	}
}

// A scrape asking for gzip gets the text uncompressed (metricsMux).
func TestMetricsServedUncompressed(t *testing.T) {
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
	req.Header.Set("Accept-Encoding", "gzip")
	metricsMux(false).ServeHTTP(rec, req)
	if enc := rec.Header().Get("Content-Encoding"); rec.Code != http.StatusOK || enc != "" {
		t.Fatalf("GET /metrics with Accept-Encoding gzip = %d, Content-Encoding %q; want 200 uncompressed", rec.Code, enc)
	}
	if !strings.Contains(rec.Body.String(), "# TYPE go_goroutines gauge") {
		t.Errorf("/metrics body is not the text exposition:\n%.300s", rec.Body.String())
	}
}

func TestProbeMux(t *testing.T) {
	stalled := errors.New("canary resources not reconciled within 1m0s of their last change: FlinkDeployment default/canary")
	for _, tc := range []struct {
		name     string
		ready    bool
		live     func() error
		wantLive int
		wantBody string
		wantRdy  int
	}{
		{name: "starting", live: nil, wantLive: http.StatusOK, wantBody: "ok", wantRdy: http.StatusServiceUnavailable},
		{name: "no liveness check", ready: true, live: nil, wantLive: http.StatusOK, wantBody: "ok", wantRdy: http.StatusOK},
		{name: "canaries reconciled", ready: true, live: func() error { return nil }, wantLive: http.StatusOK, wantBody: "ok", wantRdy: http.StatusOK},
		{name: "controller stalled", ready: true, live: func() error { return stalled }, wantLive: http.StatusServiceUnavailable,
			wantBody: "unhealthy: " + stalled.Error(), wantRdy: http.StatusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ready := &readiness{}
			ready.set(tc.ready, "informer caches not synced")
			mux := probeMux(ready, tc.live)
			rec := httptest.NewRecorder()
			mux.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/healthz", nil))
			if rec.Code != tc.wantLive || strings.TrimSpace(rec.Body.String()) != tc.wantBody {
				t.Errorf("GET /healthz = %d %q, want %d %q", rec.Code, rec.Body.String(), tc.wantLive, tc.wantBody)
			}
			rec = httptest.NewRecorder()
			mux.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/readyz", nil))
			if rec.Code != tc.wantRdy {
				t.Errorf("GET /readyz = %d, want %d", rec.Code, tc.wantRdy)
			}
		})
	}
}

// TestHealthzCanaries runs the probe on a canary Monitor as run wires it:
// /healthz fails once a canary change went unreconciled for the timeout,
// and never with kubernetes.operator.health.probe.enabled=false.
func TestHealthzCanaries(t *testing.T) {
	for _, tc := range []struct {
		name      string
		enabled   string
		reconcile bool // the controller syncs the canary after its bump
		want      int
	}{
		{name: "reconciled in time", enabled: "true", reconcile: true, want: http.StatusOK},
		{name: "controller stalled", enabled: "true", reconcile: false, want: http.StatusServiceUnavailable},
		{name: "probe disabled", enabled: "false", reconcile: false, want: http.StatusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			ctx, cancel := context.WithCancel(ctx)
			cfg := config.Defaults()
			cfg[config.KeyHealthProbeEnabled] = tc.enabled
			clk := testingclock.NewFakeClock(time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC))
			m, err := canary.New(cfg, clk)
			if err != nil {
				t.Fatal(err)
			}
			client := flinkfake.NewSimpleClientset(&v1beta1.FlinkDeployment{ObjectMeta: metav1.ObjectMeta{
				Namespace: "default", Name: "canary", Generation: 1, Labels: map[string]string{canary.Label: "true"}}})
			// The API server moves the generation on a spec change (the
			// Monitor's updates change only the spec).
			client.PrependReactor("update", "flinkdeployments", func(a core.Action) (bool, runtime.Object, error) {
				d := a.(core.UpdateAction).GetObject().(*v1beta1.FlinkDeployment)
				d.Generation++
				return false, nil, nil
			})
			sync := func() {
				t.Helper()
				handled, err := canary.Sync(ctx, m, client, "default/canary", func(ns, name string) (*v1beta1.FlinkDeployment, error) {
					return client.FlinkV1beta1().FlinkDeployments(ns).Get(ctx, name, metav1.GetOptions{})
				})
				if err != nil || !handled {
					t.Fatalf("canary sync: handled=%v err=%v", handled, err)
				}
			}
			bumps := func() int {
				n := 0
				for _, a := range client.Actions() {
					if a.GetVerb() == "update" {
						n++
					}
				}
				return n
			}
			done := make(chan struct{})
			go func() { m.Run(ctx, client); close(done) }()
			defer func() { cancel(); <-done }()
			poll := func(what string, cond func() bool) {
				t.Helper()
				if err := wait.PollUntilContextTimeout(ctx, time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
					return cond(), nil
				}); err != nil {
					t.Fatalf("waiting for %s: %v", what, err)
				}
			}
			healthz := func() int {
				rec := httptest.NewRecorder()
				probeMux(&readiness{}, m.Healthy).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/healthz", nil))
				return rec.Code
			}

			sync()
			if tc.enabled == "true" {
				poll("the bump", func() bool { return bumps() == 1 && clk.HasWaiters() })
			}
			if tc.reconcile {
				sync()
			}
			clk.Step(59 * time.Second)
			if got := healthz(); got != http.StatusOK {
				t.Fatalf("GET /healthz before the timeout = %d", got)
			}
			clk.Step(time.Second)
			if tc.enabled == "true" {
				poll("the check", func() bool { return bumps() == 2 })
			}
			if got := healthz(); got != tc.want {
				t.Errorf("GET /healthz after the timeout = %d, want %d", got, tc.want)
			}
		})
	}
}
