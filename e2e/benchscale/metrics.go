package benchscale

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// restMetric is the operator's counter of Flink REST calls (pkg/metrics).
const restMetric = "flink_operator_flink_rest_requests_total"

var labelRE = regexp.MustCompile(`(\w+)="([^"]*)"`)

// heapMetric is the Go runtime's heap in use (spans with objects), from
// the operator's Go collector.
const heapMetric = "go_memstats_heap_inuse_bytes"

// restCalls scrapes the operator's /metrics: Flink REST calls by
// "METHOD endpoint", summed over result codes.
func restCalls(ctx context.Context, url string) (map[string]float64, error) {
	m, _, err := scrapeMetrics(ctx, url)
	return m, err
}

// scrapeMetrics scrapes the operator's /metrics: Flink REST calls by
// "METHOD endpoint" (summed over result codes), and the heap in use in
// bytes (0 when not exposed).
func scrapeMetrics(ctx context.Context, url string) (map[string]float64, float64, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, 0, fmt.Errorf("%s: HTTP %d", url, resp.StatusCode)
	}
	out := map[string]float64{}
	var heap float64
	s := bufio.NewScanner(resp.Body)
	s.Buffer(make([]byte, 1<<20), 1<<20)
	for s.Scan() {
		line := s.Text()
		if v, ok := strings.CutPrefix(line, heapMetric+" "); ok {
			heap, _ = strconv.ParseFloat(strings.TrimSpace(v), 64)
			continue
		}
		rest, ok := strings.CutPrefix(line, restMetric+"{")
		if !ok {
			continue
		}
		end := strings.LastIndexByte(rest, '}')
		if end < 0 {
			continue
		}
		labels := map[string]string{}
		for _, m := range labelRE.FindAllStringSubmatch(rest[:end], -1) {
			labels[m[1]] = m[2]
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(rest[end+1:]), 64)
		if err != nil {
			continue
		}
		out[labels["method"]+" "+labels["endpoint"]] += v
	}
	return out, heap, s.Err()
}

// restDelta is b - a, endpoint by endpoint, and its total.
func restDelta(a, b map[string]float64) (map[string]float64, float64) {
	d := map[string]float64{}
	total := 0.0
	for k, v := range b {
		if x := v - a[k]; x != 0 {
			d[k] = x
			total += x
		}
	}
	return d, total
}
