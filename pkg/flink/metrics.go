package flink

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// Job metric names the operator reads (GET /jobs/:jobid/metrics). Flink
// 1.x and 2.x report numRestarts; fullRestarts is its older, deprecated
// name, which upstream's health check falls back to.
const (
	MetricNumRestarts                  = "numRestarts"
	MetricFullRestarts                 = "fullRestarts"
	MetricNumberOfCompletedCheckpoints = "numberOfCompletedCheckpoints"
)

// Metric is one entry of a metrics answer (Flink's Metric: an id and,
// when selected with ?get=, its value as a string).
type Metric struct {
	ID    string `json:"id"`
	Value string `json:"value"`
}

// JobMetrics fetches GET /jobs/:jobid/metrics?get=<names> and returns the
// values Flink reported, by name; a metric Flink does not have is absent.
// Flink writes the answer as a bare JSON array (MetricCollectionResponseBody
// has its own serializer; the OpenAPI spec's object with "metrics" is read
// too).
func (c *Client) JobMetrics(ctx context.Context, jobID string, names ...string) (map[string]string, error) {
	p, err := jobPath(http.MethodGet, jobID, "/metrics")
	if err != nil {
		return nil, err
	}
	var q url.Values
	if len(names) > 0 {
		q = url.Values{"get": []string{strings.Join(names, ",")}}
	}
	var raw json.RawMessage
	if err := c.getJSON(ctx, p, q, &raw); err != nil {
		return nil, err
	}
	metrics, err := decodeMetrics(raw)
	if err != nil {
		return nil, unexpected(http.MethodGet, p, err)
	}
	out := make(map[string]string, len(metrics))
	for _, m := range metrics {
		out[m.ID] = m.Value
	}
	return out, nil
}

func decodeMetrics(raw json.RawMessage) ([]Metric, error) {
	s := strings.TrimSpace(string(raw))
	var metrics []Metric
	switch {
	case strings.HasPrefix(s, "["):
		if err := json.Unmarshal(raw, &metrics); err != nil {
			return nil, err
		}
	case strings.HasPrefix(s, "{"):
		var body struct {
			Metrics []Metric `json:"metrics"`
		}
		if err := json.Unmarshal(raw, &body); err != nil {
			return nil, err
		}
		metrics = body.Metrics
	default:
		return nil, fmt.Errorf("metrics answer is neither an array nor an object: %.40q", s)
	}
	return metrics, nil
}
