package metrics

import (
	"context"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	clientmetrics "k8s.io/client-go/tools/metrics"
)

// Kubernetes API client metrics (kubernetes.operator.kubernetes.client.metrics.enabled):
// client-go's request hooks (k8s.io/client-go/tools/metrics) fed into
// Registry, with the names and labels k8s.io/component-base's restclient
// adapter gives them, so the dashboards of Kubernetes components work.
// Written here on client_golang because component-base would link 16 more
// packages (OpenTelemetry among them) and register into its own registry.
//
// Labels are bounded: verb, status code, the API server's host, and for
// the latency the request's path as client-go templates it, namespace and
// name replaced (/api/v1/namespaces/{namespace}/pods/{name}).
//
// Upstream's fabric8 metrics map as: KubeClient.HttpRequest.<METHOD>.Count
// and HttpResponse.<code>.Count to rest_client_requests_total{method,code}
// (code "<error>" for a request that got no response, upstream's
// HttpRequest.Failed), HttpResponse.TimeNanos to
// rest_client_request_duration_seconds. Upstream's response code groups
// (1xx … 5xx) are a label match here (code=~"5.."), and its slow requests
// (kubernetes.client.metrics.slow.request.threshold, 5 s) the count above
// the duration histogram's 5 s bucket.
var (
	kubeRequestDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "rest_client_request_duration_seconds",
		Help:    "Kubernetes API request latency in seconds, by verb, host and path (namespace and name replaced).",
		Buckets: []float64{0.005, 0.025, 0.1, 0.25, 0.5, 1, 2, 4, 5, 8, 15, 30, 60},
	}, []string{"verb", "host", "path"})
	kubeRequests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "rest_client_requests_total",
		Help: "Kubernetes API requests by status code (\"<error>\" without a response), method and host.",
	}, []string{"code", "method", "host"})
	kubeRateLimiterDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "rest_client_rate_limiter_duration_seconds",
		Help:    "Time Kubernetes API requests waited for the client-side rate limiter, by verb and host.",
		Buckets: []float64{0.005, 0.025, 0.1, 0.25, 0.5, 1, 2, 4, 8, 15, 30, 60},
	}, []string{"verb", "host"})
	kubeRequestRetries = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "rest_client_request_retries_total",
		Help: "Kubernetes API requests client-go retried, by the failed attempt's status code, verb and host.",
	}, []string{"code", "verb", "host"})
)

var registerClientMetrics sync.Once

// RegisterKubeClientMetrics installs the rest_client_* series: it adds them
// to Registry and hands client-go the adapters that feed them. client-go
// takes adapters once per process, so only the first call counts; the
// operator makes it at start when kubernetes.client.metrics.enabled is
// true (the default). Without it client-go's hooks stay no-ops and no
// rest_client_* series is exposed.
func RegisterKubeClientMetrics() {
	registerClientMetrics.Do(func() {
		Registry.MustRegister(kubeRequestDuration, kubeRequests, kubeRateLimiterDuration, kubeRequestRetries)
		clientmetrics.Register(clientmetrics.RegisterOpts{
			RequestLatency:     latencyAdapter{kubeRequestDuration, true},
			RateLimiterLatency: latencyAdapter{kubeRateLimiterDuration, false},
			RequestResult:      resultAdapter{kubeRequests},
			RequestRetry:       retryAdapter{kubeRequestRetries},
		})
	})
}

type latencyAdapter struct {
	m        *prometheus.HistogramVec
	withPath bool
}

func (a latencyAdapter) Observe(_ context.Context, verb string, u url.URL, latency time.Duration) {
	if a.withPath {
		a.m.WithLabelValues(verb, u.Host, RequestPath(u.Path)).Observe(latency.Seconds())
		return
	}
	a.m.WithLabelValues(verb, u.Host).Observe(latency.Seconds())
}

type resultAdapter struct{ m *prometheus.CounterVec }

func (a resultAdapter) Increment(_ context.Context, code, method, host string) {
	a.m.WithLabelValues(code, method, host).Inc()
}

type retryAdapter struct{ m *prometheus.CounterVec }

func (a retryAdapter) IncrementRetry(_ context.Context, code, verb, host string) {
	a.m.WithLabelValues(code, verb, host).Inc()
}

// RequestPath bounds a path client-go has templated (namespace and name
// already replaced): what follows a resource's subresource (a proxied
// path, say) becomes {path}, so no caller-chosen text reaches a label.
// Paths outside /api and /apis are client-go's own few (/version, or
// "/{prefix}").
func RequestPath(p string) string {
	segments := strings.Split(p, "/")
	// "", "apis", group, version, "namespaces", ns, resource, name, subresource
	limit := 9
	if len(segments) > 1 && segments[1] == "api" {
		limit = 8 // no group
	}
	if len(segments) <= limit {
		return p
	}
	return strings.Join(append(segments[:limit:limit], "{path}"), "/")
}
