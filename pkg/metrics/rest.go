package metrics

import (
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

var (
	restDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: "flink_operator", Name: "flink_rest_request_duration_seconds",
		Help:    "Latency of Flink JobManager REST calls by endpoint.",
		Buckets: prometheus.ExponentialBuckets(0.005, 3, 9),
	}, []string{"method", "endpoint"})
	restRequests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "flink_operator", Name: "flink_rest_requests_total",
		Help: "Flink JobManager REST calls by endpoint and result (HTTP code, or 'error' when no response).",
	}, []string{"method", "endpoint", "code"})
)

func init() {
	Registry.MustRegister(restDuration, restRequests)
}

// InstrumentFlinkREST wraps a transport so every Flink REST call is counted
// and timed by endpoint. Ids in the path become placeholders, so the label
// set stays bounded.
func InstrumentFlinkREST(next http.RoundTripper) http.RoundTripper {
	if next == nil {
		next = http.DefaultTransport
	}
	return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
		endpoint := Endpoint(req.URL.Path)
		start := time.Now()
		resp, err := next.RoundTrip(req)
		restDuration.WithLabelValues(req.Method, endpoint).Observe(time.Since(start).Seconds())
		code := "error"
		if err == nil {
			code = strconv.Itoa(resp.StatusCode)
		}
		restRequests.WithLabelValues(req.Method, endpoint, code).Inc()
		return resp, err
	})
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

var (
	hexID   = regexp.MustCompile(`^[0-9a-fA-F]{32}$`)
	number  = regexp.MustCompile(`^[0-9]+$`)
	jarName = regexp.MustCompile(`\.jar$`)
)

// Endpoint turns a REST path into its route: /jobs/<id>/savepoints/<id> →
// /jobs/:id/savepoints/:id.
func Endpoint(path string) string {
	parts := strings.Split(path, "/")
	for i, p := range parts {
		switch {
		case hexID.MatchString(p):
			parts[i] = ":id"
		case number.MatchString(p):
			parts[i] = ":n"
		case jarName.MatchString(p):
			parts[i] = ":jar"
		}
	}
	return strings.Join(parts, "/")
}
