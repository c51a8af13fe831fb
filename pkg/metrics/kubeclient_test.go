package metrics

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	clientset "github.com/flinkops/flink-operator/pkg/clients/flink"
)

// Issue 36 item 9: client-go's requests to the API server are counted and
// timed (kubernetes.client.metrics.enabled), with component-base's names
// and bounded labels (the path as client-go templates it, no names).
func TestKubeClientRequestsAreCountedByVerbAndCode(t *testing.T) {
	RegisterKubeClientMetrics()
	var flaky atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		name := r.URL.Path[strings.LastIndexByte(r.URL.Path, '/')+1:]
		if name == "status" {
			name = "present"
		}
		switch {
		case name == "flaky" && flaky.Add(1) == 1:
			// Retried by client-go: a 503 with Retry-After.
			w.Header().Set("Retry-After", "0")
			w.WriteHeader(http.StatusServiceUnavailable)
			json.NewEncoder(w).Encode(apierrors.NewServiceUnavailable("busy").ErrStatus)
		case name == "present" || name == "flaky":
			json.NewEncoder(w).Encode(&v1beta1.FlinkDeployment{
				TypeMeta:   metav1.TypeMeta{APIVersion: "flink.apache.org/v1beta1", Kind: "FlinkDeployment"},
				ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "team-a"},
			})
		default:
			w.WriteHeader(http.StatusNotFound)
			json.NewEncoder(w).Encode(apierrors.NewNotFound(v1beta1.Resource("flinkdeployments"), name).ErrStatus)
		}
	}))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	client, err := clientset.NewForConfig(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	fd := client.FlinkV1beta1()
	ctx := context.Background()

	before := scrape(t)
	present, err := fd.FlinkDeployments("team-a").Get(ctx, "present", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, ns := range []string{"team-a", "team-b"} {
		if _, err := fd.FlinkDeployments(ns).Get(ctx, "missing-in-"+ns, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Fatalf("want NotFound, got %v", err)
		}
	}
	if _, err := fd.FlinkDeployments("team-a").UpdateStatus(ctx, present, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := fd.FlinkDeployments("team-a").Get(ctx, "flaky", metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}
	// No response at all: code "<error>", as component-base.
	dead := httptest.NewServer(http.NotFoundHandler())
	deadHost := strings.TrimPrefix(dead.URL, "http://")
	dead.Close()
	deadClient, err := clientset.NewForConfig(&rest.Config{Host: dead.URL})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := deadClient.FlinkV1beta1().FlinkDeployments("team-a").List(ctx, metav1.ListOptions{}); err == nil {
		t.Fatal("a closed server answered")
	}
	after := scrape(t)

	byName := "/apis/flink.apache.org/v1beta1/namespaces/{namespace}/flinkdeployments/{name}"
	for series, want := range map[string]float64{
		`rest_client_requests_total{code="200",host="` + host + `",method="GET"}`:         2, // present, flaky's second attempt
		`rest_client_requests_total{code="404",host="` + host + `",method="GET"}`:         2,
		`rest_client_requests_total{code="503",host="` + host + `",method="GET"}`:         1,
		`rest_client_requests_total{code="200",host="` + host + `",method="PUT"}`:         1,
		`rest_client_requests_total{code="<error>",host="` + deadHost + `",method="GET"}`: 1,
		`rest_client_request_retries_total{code="200",host="` + host + `",verb="GET"}`:    1,
		// Both namespaces and all names share one series.
		`rest_client_request_duration_seconds_count{host="` + host + `",path="` + byName + `",verb="GET"}`:                                                             4,
		`rest_client_request_duration_seconds_count{host="` + host + `",path="` + byName + `/status",verb="PUT"}`:                                                      1,
		`rest_client_request_duration_seconds_count{host="` + deadHost + `",path="/apis/flink.apache.org/v1beta1/namespaces/{namespace}/flinkdeployments",verb="GET"}`: 1,
		`rest_client_rate_limiter_duration_seconds_count{host="` + host + `",verb="GET"}`:                                                                              5, // each attempt waits
	} {
		if got := after[series] - before[series]; got != want {
			t.Errorf("%s grew by %v, want %v", series, got, want)
		}
	}
	for series := range after {
		if strings.HasPrefix(series, "rest_client_") && (strings.Contains(series, "present") || strings.Contains(series, "team-")) {
			t.Errorf("a resource's name or namespace reached a label: %s", series)
		}
	}
}

func TestRequestPathKeepsLabelsBounded(t *testing.T) {
	for path, want := range map[string]string{
		"/apis/flink.apache.org/v1beta1/namespaces/{namespace}/flinkdeployments/{name}/status": "/apis/flink.apache.org/v1beta1/namespaces/{namespace}/flinkdeployments/{name}/status",
		"/api/v1/namespaces/{namespace}/pods/{name}/log":                                       "/api/v1/namespaces/{namespace}/pods/{name}/log",
		"/api/v1/namespaces/{namespace}/services/{name}/proxy/jobs/0123/savepoints":            "/api/v1/namespaces/{namespace}/services/{name}/proxy/{path}",
		"/apis/apps/v1/namespaces/{namespace}/deployments/{name}/scale/extra/more":             "/apis/apps/v1/namespaces/{namespace}/deployments/{name}/scale/{path}",
		"/version": "/version",
	} {
		if got := RequestPath(path); got != want {
			t.Errorf("RequestPath(%q) = %q, want %q", path, got, want)
		}
	}
}
