// Package metricstest reads a Prometheus registry the way a scrape of the
// operator's /metrics does, for tests. It lives apart from pkg/metrics so
// the operator's binary does not link net/http/httptest.
package metricstest

import (
	"bufio"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Samples reads g through the handler the operator serves at /metrics
// (pkg/metrics.Registry there) and returns each sample's value by its
// series, exactly as exposed (`name{label="v",...}`).
func Samples(g prometheus.Gatherer) (map[string]float64, error) {
	rec := httptest.NewRecorder()
	promhttp.HandlerFor(g, promhttp.HandlerOpts{DisableCompression: true}).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if rec.Code != http.StatusOK {
		return nil, fmt.Errorf("/metrics: %d %s", rec.Code, rec.Body)
	}
	out := map[string]float64{}
	sc := bufio.NewScanner(rec.Body)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if i < 0 || err != nil {
			return nil, fmt.Errorf("/metrics: bad sample line %q", line)
		}
		out[line[:i]] = v
	}
	return out, sc.Err()
}
