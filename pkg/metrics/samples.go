package metrics

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

// Samples reads Registry through the handler the operator serves at /metrics
// and returns each sample's value by its series, exactly as exposed
// (`name{label="v",...}`). Tests use it to assert what a scrape shows.
func Samples() (map[string]float64, error) { return SamplesOf(Registry) }

// SamplesOf is Samples for another registry (a test's own).
func SamplesOf(g prometheus.Gatherer) (map[string]float64, error) {
	rec := httptest.NewRecorder()
	promhttp.HandlerFor(g, promhttp.HandlerOpts{}).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
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
