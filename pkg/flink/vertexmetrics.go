package flink

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// Aggregated subtask metrics of a job vertex:
// GET /jobs/:jobid/vertices/:vertexid/subtasks/metrics.
//
// Without ?get= Flink lists the metric names the vertex's subtasks report
// (the union over subtasks, ids only). With ?get=a,b it answers, for each
// named metric that at least one subtask reports with a numeric value, the
// aggregates named in ?agg= (all of them without ?agg=); names it does not
// know are left out, not an error. Like the job metrics, the answer is a
// bare JSON array (AggregatedMetricsResponseBody has its own serializer;
// the spec's object with "metrics" is read too).
//
// Version differences (OpenAPI specs 1.15..2.x): the endpoint and
// MIN/MAX/SUM/AVG exist from 1.15 on; SKEW appears in the 1.20 spec
// (AggregationMode enum and the "skew" field). Flink parses ?agg= into its
// enum and answers 400 for an unknown mode, so the client refuses SKEW
// below 1.20 without sending anything.
//
// Values are doubles that Jackson may write as the strings "NaN",
// "Infinity" or "-Infinity" (a busy-time gauge reads NaN while Flink cannot
// measure it); they decode to the corresponding float64.

// Task-level metric names every job vertex reports (per subtask).
const (
	MetricBusyTimeMsPerSecond          = "busyTimeMsPerSecond"
	MetricBackPressuredTimeMsPerSecond = "backPressuredTimeMsPerSecond"
	MetricIdleTimeMsPerSecond          = "idleTimeMsPerSecond"
	MetricNumRecordsInPerSecond        = "numRecordsInPerSecond"
	MetricNumRecordsOutPerSecond       = "numRecordsOutPerSecond"
)

// Operator-level metrics appear in the listing as "<operator>.<metric>",
// the operator name with characters Flink's metric system does not allow
// (spaces, ':', ...) replaced by '_' — a "Source: Kafka" operator's output
// rate is "Source__Kafka.numRecordsOutPerSecond".
const (
	// SourceOperatorPrefix starts the metric names of source operators.
	SourceOperatorPrefix = "Source__"
	// MetricPendingRecords is the FLIP-33 connector metric (records not yet
	// fetched by the source); sources report it lazily or not at all.
	MetricPendingRecords = "pendingRecords"
)

// IsPendingRecordsMetric reports an "<operator>.pendingRecords" name.
func IsPendingRecordsMetric(name string) bool {
	return strings.HasSuffix(name, "."+MetricPendingRecords)
}

// IsSourceOperatorMetric reports a "Source__<name>.<metric>" name.
func IsSourceOperatorMetric(name, metric string) bool {
	return strings.HasPrefix(name, SourceOperatorPrefix) &&
		len(name) > len(SourceOperatorPrefix)+len(metric)+1 &&
		strings.HasSuffix(name, "."+metric)
}

// Aggregation is one of Flink's aggregation modes (AggregationMode).
type Aggregation string

// Aggregation modes.
const (
	AggMin  Aggregation = "MIN"
	AggMax  Aggregation = "MAX"
	AggSum  Aggregation = "SUM"
	AggAvg  Aggregation = "AVG"
	AggSkew Aggregation = "SKEW" // Flink 1.20+
)

// SupportsSkewAggregation reports whether ?agg=skew is accepted (the 1.20
// spec is the first with SKEW).
func (v Version) SupportsSkewAggregation() bool { return v.AtLeast(V1_20) }

// AggregatedMetric is one metric aggregated over a vertex's subtasks. An
// aggregate Flink did not send is reported absent by Has and reads 0.
type AggregatedMetric struct {
	ID   string
	Min  float64
	Max  float64
	Avg  float64
	Sum  float64
	Skew float64
	has  uint8
}

const (
	hasMin uint8 = 1 << iota
	hasMax
	hasAvg
	hasSum
	hasSkew
)

// Has reports whether Flink sent the aggregate.
func (m AggregatedMetric) Has(a Aggregation) bool {
	switch a {
	case AggMin:
		return m.has&hasMin != 0
	case AggMax:
		return m.has&hasMax != 0
	case AggAvg:
		return m.has&hasAvg != 0
	case AggSum:
		return m.has&hasSum != 0
	case AggSkew:
		return m.has&hasSkew != 0
	}
	return false
}

// Get returns the aggregate and whether Flink sent it.
func (m AggregatedMetric) Get(a Aggregation) (float64, bool) {
	if !m.Has(a) {
		return 0, false
	}
	switch a {
	case AggMin:
		return m.Min, true
	case AggMax:
		return m.Max, true
	case AggAvg:
		return m.Avg, true
	case AggSum:
		return m.Sum, true
	}
	return m.Skew, true
}

// NewAggregatedMetric builds a metric with the given aggregates, for tests
// and for callers that merge metrics.
func NewAggregatedMetric(id string, values map[Aggregation]float64) AggregatedMetric {
	m := AggregatedMetric{ID: id}
	for a, v := range values {
		m.set(a, v)
	}
	return m
}

func (m *AggregatedMetric) set(a Aggregation, v float64) {
	switch a {
	case AggMin:
		m.Min, m.has = v, m.has|hasMin
	case AggMax:
		m.Max, m.has = v, m.has|hasMax
	case AggAvg:
		m.Avg, m.has = v, m.has|hasAvg
	case AggSum:
		m.Sum, m.has = v, m.has|hasSum
	case AggSkew:
		m.Skew, m.has = v, m.has|hasSkew
	}
}

// UnmarshalJSON reads Flink's AggregatedMetric: {"id", "min", "max",
// "avg", "sum", "skew"}, each aggregate optional, numbers or the strings
// Jackson writes for non-finite doubles.
func (m *AggregatedMetric) UnmarshalJSON(b []byte) error {
	var w struct {
		ID   string    `json:"id"`
		Min  flexFloat `json:"min"`
		Max  flexFloat `json:"max"`
		Avg  flexFloat `json:"avg"`
		Sum  flexFloat `json:"sum"`
		Skew flexFloat `json:"skew"`
	}
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*m = AggregatedMetric{ID: w.ID}
	for _, f := range [...]struct {
		a Aggregation
		v flexFloat
	}{{AggMin, w.Min}, {AggMax, w.Max}, {AggAvg, w.Avg}, {AggSum, w.Sum}, {AggSkew, w.Skew}} {
		if f.v.ok {
			m.set(f.a, f.v.v)
		}
	}
	return nil
}

// flexFloat is a JSON double that may be absent, null, a number, or a
// string holding a number, "NaN" or "(-)Infinity".
type flexFloat struct {
	v  float64
	ok bool
}

func (f *flexFloat) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) == 0 || string(b) == "null" {
		return nil
	}
	s := string(b)
	if b[0] == '"' {
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
	}
	switch s {
	case "NaN":
		f.v, f.ok = math.NaN(), true
		return nil
	case "Infinity", "+Infinity":
		f.v, f.ok = math.Inf(1), true
		return nil
	case "-Infinity":
		f.v, f.ok = math.Inf(-1), true
		return nil
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return fmt.Errorf("not a number: %.40q", s)
	}
	f.v, f.ok = v, true
	return nil
}

// VertexMetricNames fetches GET /jobs/:jobid/vertices/:vertexid/subtasks/metrics
// without ?get=: the names of the metrics the vertex's subtasks report.
func (c *Client) VertexMetricNames(ctx context.Context, jobID, vertexID string) ([]string, error) {
	p, err := vertexPath(http.MethodGet, jobID, vertexID, "/subtasks/metrics")
	if err != nil {
		return nil, err
	}
	ms, err := c.getAggregated(ctx, p, nil)
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(ms))
	for _, m := range ms {
		if m.ID != "" {
			out = append(out, m.ID)
		}
	}
	return out, nil
}

// VertexMetrics fetches GET /jobs/:jobid/vertices/:vertexid/subtasks/metrics
// ?get=<names>&agg=<aggs>: the named metrics aggregated over the vertex's
// subtasks, in Flink's order; metrics Flink does not have are absent. No
// aggs means every mode the version offers. Names must be non-empty and
// free of ',' (Flink splits ?get= on commas); SKEW below 1.20 is refused
// as KindUnsupported without a call.
func (c *Client) VertexMetrics(ctx context.Context, jobID, vertexID string, names []string, aggs ...Aggregation) ([]AggregatedMetric, error) {
	p, err := vertexPath(http.MethodGet, jobID, vertexID, "/subtasks/metrics")
	if err != nil {
		return nil, err
	}
	if len(names) == 0 {
		return nil, &Error{Kind: KindBadRequest, Method: http.MethodGet, Path: p, Message: "no metric names"}
	}
	for _, n := range names {
		if n == "" || strings.Contains(n, ",") {
			return nil, &Error{Kind: KindBadRequest, Method: http.MethodGet, Path: p, Message: fmt.Sprintf("metric name %q cannot be requested", n)}
		}
	}
	q := url.Values{"get": {strings.Join(names, ",")}}
	if len(aggs) > 0 {
		parts := make([]string, len(aggs))
		for i, a := range aggs {
			switch a {
			case AggMin, AggMax, AggSum, AggAvg:
			case AggSkew:
				if !c.version.SupportsSkewAggregation() {
					return nil, c.unsupported(http.MethodGet, p, "the skew aggregation needs Flink 1.20 or newer")
				}
			default:
				return nil, &Error{Kind: KindBadRequest, Method: http.MethodGet, Path: p, Message: fmt.Sprintf("unknown aggregation %q", a)}
			}
			parts[i] = strings.ToLower(string(a))
		}
		q.Set("agg", strings.Join(parts, ","))
	}
	return c.getAggregated(ctx, p, q)
}

func (c *Client) getAggregated(ctx context.Context, p string, q url.Values) ([]AggregatedMetric, error) {
	var raw json.RawMessage
	if err := c.getJSON(ctx, p, q, &raw); err != nil {
		return nil, err
	}
	ms, err := decodeAggregated(raw)
	if err != nil {
		return nil, unexpected(http.MethodGet, p, err)
	}
	return ms, nil
}

func decodeAggregated(raw json.RawMessage) ([]AggregatedMetric, error) {
	raw = bytes.TrimSpace(raw)
	var out []AggregatedMetric
	switch {
	case len(raw) > 0 && raw[0] == '[':
		if err := json.Unmarshal(raw, &out); err != nil {
			return nil, err
		}
	case len(raw) > 0 && raw[0] == '{':
		var body struct {
			Metrics []AggregatedMetric `json:"metrics"`
		}
		if err := json.Unmarshal(raw, &body); err != nil {
			return nil, err
		}
		out = body.Metrics
	default:
		return nil, fmt.Errorf("metrics answer is neither an array nor an object: %.40q", raw)
	}
	return out, nil
}
