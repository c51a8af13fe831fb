package store

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/flinkops/flink-operator/pkg/autoscaler/collect"
)

// The metric history under KeyMetrics (upstream keeps its collectedMetrics
// in the ConfigMap so that the metrics window survives an operator
// restart; ours is collect's graph and samples).
//
// The encoding is binary, gzip-compressed and base64-encoded. Plain, it is
// a header ("fom" and a version byte), the graph (job id, RUNNING time,
// each vertex's id, name, parallelism, max parallelism, source flag and
// inputs with their ship strategy), the samples' times, then the values
// column by column: for each vertex, for each of its six figures
// (busy time, back pressure, records in, records out, pending records,
// source incoming rate), the sample values as IEEE 754 bits, each XORed
// with the previous sample's, stored byte plane by byte plane (every
// value's most significant byte, then every value's next byte, ...). Bits
// keep NaN (and -1, the unknown pending records) exactly; the XOR makes a
// steady or constant figure mostly zero bytes, and the planes put those
// zeros (sign, exponent, leading mantissa of similar values) in runs,
// which gzip shrinks to little. The vertex ids
// of a sample are not stored: the samples are in the graph's order.
//
// Bounds: the encoded value is at most MaxMetricsBytes, and never more than
// what leaves the ConfigMap's data (every key and value) within
// MaxDataBytes; the oldest samples are dropped until it fits. A 50-vertex
// job at collect.DefaultMaxSamples (256) samples of real-looking load (every
// rate noisy to the last bit) encodes in about 340 KiB with every sample;
// 256 samples of random values (incompressible, the worst case) keep the
// newest 158 in 500 KiB. With the state at MaxStateBytes (256 KiB) the
// data stays under MaxDataBytes (900 KiB), under the 1 MiB a ConfigMap
// holds in all (metadata included), whatever else it holds: other keys
// (upstream's) take from the metrics' share.
const (
	// KeyMetrics holds the collector's graph and samples.
	KeyMetrics = "flinkops.collectedMetrics"
	// MaxMetricsBytes bounds the encoded metrics.
	MaxMetricsBytes = 512 << 10
	// MaxDataBytes bounds the ConfigMap's data (keys and values) for the
	// metrics: they shrink (or go) to keep the whole under it, whatever
	// else (upstream's keys) the ConfigMap holds.
	MaxDataBytes = 900 << 10
)

// Metrics is a collector's history as collect.Collector.History gives it
// and collect.Collector.Restore takes it.
type Metrics struct {
	Graph   collect.JobGraph
	Samples []collect.Sample
}

var metricsMagic = []byte("fom\x01")

// Limits of the decoder (a corrupt value must not allocate without end).
const (
	maxDecodedMetrics = 16 << 20
	maxVertices       = 1 << 16
	maxStringLen      = 1 << 16
)

// DecodeMetrics reads the metric history stored in cm (none: zero Metrics).
// Decode does not read it: it is read once, for collect.Collector.Restore,
// and the history can be dropped if it is bad (the error says why).
func DecodeMetrics(cm *corev1.ConfigMap) (Metrics, error) {
	if cm == nil || cm.Data[KeyMetrics] == "" {
		return Metrics{}, nil
	}
	m, err := decodeMetrics(cm.Data[KeyMetrics])
	if err != nil {
		return Metrics{}, fmt.Errorf("ConfigMap %s/%s key %s: %w", cm.Namespace, cm.Name, KeyMetrics, err)
	}
	return m, nil
}

// putMetrics writes m under KeyMetrics in data, the oldest samples dropped
// until it fits the bounds; no samples (or none fitting, or samples not in
// the graph's vertex order) remove the key.
func putMetrics(data map[string]string, m *Metrics) error {
	delete(data, KeyMetrics)
	if !consistent(m) {
		return nil
	}
	others := 0
	for k, v := range data {
		others += len(k) + len(v)
	}
	limit := min(MaxMetricsBytes, MaxDataBytes-others-len(KeyMetrics))
	if limit <= 0 {
		return nil
	}
	samples := m.Samples
	for len(samples) > 0 {
		raw, err := encodeMetrics(Metrics{Graph: m.Graph, Samples: samples})
		if err != nil {
			return err
		}
		if len(raw) <= limit {
			data[KeyMetrics] = raw
			return nil
		}
		// Keep about the share that fits, a little less (gzip is not
		// linear), at least one sample fewer.
		keep := int(float64(len(samples)) * float64(limit) / float64(len(raw)) * 0.97)
		samples = samples[len(samples)-max(0, min(keep, len(samples)-1)):]
	}
	return nil
}

// consistent: every sample has the graph's vertices in its order.
func consistent(m *Metrics) bool {
	if m == nil || len(m.Samples) == 0 || len(m.Graph.Vertices) == 0 {
		return false
	}
	for _, s := range m.Samples {
		if len(s.Vertices) != len(m.Graph.Vertices) {
			return false
		}
		for k := range s.Vertices {
			if s.Vertices[k].VertexID != m.Graph.Vertices[k].ID {
				return false
			}
		}
	}
	return true
}

// figures are a vertex's six values in a sample, in the stored order.
func figures(v *collect.VertexMetrics) [6]*float64 {
	return [6]*float64{&v.BusyTimeMsPerSecond, &v.BackPressuredTimeMsPerSecond, &v.NumRecordsInPerSecond,
		&v.NumRecordsOutPerSecond, &v.PendingRecords, &v.SourceIncomingRate}
}

func encodeMetrics(m Metrics) (string, error) {
	g := m.Graph
	var b []byte
	b = append(b, metricsMagic...)
	b = appendString(b, g.JobID)
	b = appendTime(b, g.RunningSince)
	b = binary.AppendUvarint(b, uint64(len(g.Vertices)))
	for _, v := range g.Vertices {
		b = appendString(b, v.ID)
		b = appendString(b, v.Name)
		b = binary.AppendUvarint(b, uint64(max(v.Parallelism, 0)))
		b = binary.AppendUvarint(b, uint64(max(v.MaxParallelism, 0)))
		if v.Source {
			b = append(b, 1)
		} else {
			b = append(b, 0)
		}
		b = binary.AppendUvarint(b, uint64(len(v.Inputs)))
		for _, in := range v.Inputs {
			b = appendString(b, in.ID)
			b = appendString(b, in.ShipStrategy)
		}
	}
	b = binary.AppendUvarint(b, uint64(len(m.Samples)))
	for _, s := range m.Samples {
		b = appendTime(b, s.Time)
	}
	column := make([]uint64, len(m.Samples))
	for k := range g.Vertices {
		for f := 0; f < 6; f++ {
			var prev uint64
			for i := range m.Samples {
				bits := math.Float64bits(*figures(&m.Samples[i].Vertices[k])[f])
				column[i], prev = bits^prev, bits
			}
			for shift := 56; shift >= 0; shift -= 8 {
				for _, x := range column {
					b = append(b, byte(x>>shift))
				}
			}
		}
	}

	return gzipBase64(b)
}

func gzipBase64(b []byte) (string, error) {
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		return "", err
	}
	if _, err := zw.Write(b); err != nil {
		return "", fmt.Errorf("encoding the metric history: %w", err)
	}
	if err := zw.Close(); err != nil {
		return "", err
	}
	return base64.StdEncoding.EncodeToString(buf.Bytes()), nil
}

func decodeMetrics(raw string) (Metrics, error) {
	compressed, err := base64.StdEncoding.DecodeString(raw)
	if err != nil {
		return Metrics{}, err
	}
	zr, err := gzip.NewReader(bytes.NewReader(compressed))
	if err != nil {
		return Metrics{}, err
	}
	plain, err := io.ReadAll(io.LimitReader(zr, maxDecodedMetrics+1))
	if err != nil {
		return Metrics{}, err
	}
	if len(plain) > maxDecodedMetrics {
		return Metrics{}, fmt.Errorf("metric history over %d bytes", maxDecodedMetrics)
	}
	r := &reader{b: plain}
	if !bytes.HasPrefix(plain, metricsMagic) {
		return Metrics{}, errors.New("not a metric history of this version")
	}
	r.b = r.b[len(metricsMagic):]
	var m Metrics
	g := &m.Graph
	g.JobID = r.string()
	g.RunningSince = r.time()
	nv := r.count(maxVertices)
	g.Vertices = make([]collect.Vertex, nv)
	for k := range g.Vertices {
		v := &g.Vertices[k]
		v.ID, v.Name = r.string(), r.string()
		v.Parallelism, v.MaxParallelism = r.int(), r.int()
		v.Source = r.byte() == 1
		if ni := r.count(maxVertices); ni > 0 {
			v.Inputs = make([]collect.Input, ni)
			for i := range v.Inputs {
				v.Inputs[i] = collect.Input{ID: r.string(), ShipStrategy: r.string()}
			}
		}
	}
	ns := r.count(len(plain))
	// Each sample takes 2 bytes of time at least, and 48 per vertex.
	if r.err == nil && ns > len(r.b)/(2+nv*6*8) {
		r.err = errors.New("fewer values than samples")
	}
	if r.err != nil {
		return Metrics{}, r.err
	}
	m.Samples = make([]collect.Sample, ns)
	values := make([]collect.VertexMetrics, ns*nv) // one allocation for all samples
	for i := range m.Samples {
		m.Samples[i] = collect.Sample{Time: r.time(), Vertices: values[i*nv : (i+1)*nv : (i+1)*nv]}
		for k := range m.Samples[i].Vertices {
			m.Samples[i].Vertices[k].VertexID = g.Vertices[k].ID
		}
	}
	if r.err == nil && len(r.b) != ns*nv*6*8 {
		r.err = fmt.Errorf("%d bytes of values, want %d", len(r.b), ns*nv*6*8)
	}
	if r.err != nil {
		return Metrics{}, r.err
	}
	for k := 0; k < nv; k++ {
		for f := 0; f < 6; f++ {
			var prev uint64
			for i := range m.Samples {
				var x uint64
				for j := 0; j < 8; j++ {
					x = x<<8 | uint64(r.b[j*ns+i])
				}
				bits := x ^ prev
				*figures(&m.Samples[i].Vertices[k])[f] = math.Float64frombits(bits)
				prev = bits
			}
			r.b = r.b[8*ns:]
		}
	}
	return m, nil
}

func appendString(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

// appendTime writes t to the nanosecond (Unix seconds, then nanoseconds);
// the zero time survives.
func appendTime(b []byte, t time.Time) []byte {
	return binary.AppendUvarint(binary.AppendVarint(b, t.Unix()), uint64(t.Nanosecond()))
}

// reader reads the plain encoding; the first error sticks and makes every
// later read a zero value.
type reader struct {
	b   []byte
	err error
}

func (r *reader) fail(what string) {
	if r.err == nil {
		r.err = fmt.Errorf("metric history truncated or corrupt at %s", what)
	}
	r.b = nil
}

func (r *reader) uvarint(what string) uint64 {
	x, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.fail(what)
		return 0
	}
	r.b = r.b[n:]
	return x
}

func (r *reader) count(limit int) int {
	x := r.uvarint("a count")
	if x > uint64(limit) {
		r.fail("a count")
		return 0
	}
	return int(x)
}

func (r *reader) int() int {
	x := r.uvarint("a parallelism")
	if x > math.MaxInt32 {
		r.fail("a parallelism")
		return 0
	}
	return int(x)
}

func (r *reader) byte() byte {
	if len(r.b) == 0 {
		r.fail("a flag")
		return 0
	}
	c := r.b[0]
	r.b = r.b[1:]
	return c
}

func (r *reader) string() string {
	n := r.count(maxStringLen)
	if n > len(r.b) {
		r.fail("a string")
		return ""
	}
	s := string(r.b[:n])
	r.b = r.b[n:]
	return s
}

func (r *reader) time() time.Time {
	sec, n := binary.Varint(r.b)
	if n <= 0 {
		r.fail("a time")
		return time.Time{}
	}
	r.b = r.b[n:]
	nsec := r.uvarint("a time")
	if nsec >= 1e9 {
		r.fail("a time")
		return time.Time{}
	}
	return time.Unix(sec, int64(nsec)).UTC()
}
