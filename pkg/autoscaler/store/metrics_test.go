package store

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/flinkops/flink-operator/pkg/autoscaler/collect"
	"github.com/flinkops/flink-operator/pkg/autoscaler/decide"
	"github.com/flinkops/flink-operator/pkg/flink"
)

var m0 = time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)

// history makes a job of n vertices (a source, then a chain, every other
// edge a keyBy) and samples a minute apart; value gives each figure.
func history(n, samples int, value func(i, k, f int) float64) Metrics {
	g := collect.JobGraph{JobID: "a1b2c3d4e5f60718293a4b5c6d7e8f90", RunningSince: m0.Add(-time.Hour).Add(123 * time.Millisecond)}
	for k := 0; k < n; k++ {
		v := collect.Vertex{ID: fmt.Sprintf("%032x", k*7919+1), Name: fmt.Sprintf("Flat Map -> Filter -> Timestamps/Watermarks %d", k),
			Parallelism: k%8 + 1, MaxParallelism: 128}
		if k == 0 {
			v.Source, v.Name = true, "Source: Kafka Source"
		} else {
			strategy := "REBALANCE"
			if k%2 == 0 {
				strategy = "HASH"
			}
			v.Inputs = []collect.Input{{ID: g.Vertices[k-1].ID, ShipStrategy: strategy}}
		}
		g.Vertices = append(g.Vertices, v)
	}
	m := Metrics{Graph: g}
	for i := 0; i < samples; i++ {
		s := collect.Sample{Time: m0.Add(time.Duration(i)*61*time.Second + time.Duration(i)*time.Microsecond)}
		for k, v := range g.Vertices {
			vm := collect.VertexMetrics{VertexID: v.ID}
			for f, p := range figures(&vm) {
				*p = value(i, k, f)
			}
			s.Vertices = append(s.Vertices, vm)
		}
		m.Samples = append(m.Samples, s)
	}
	return m
}

// realistic is what Flink reports: noisy rates and busy times, a source's
// growing backlog, -1 and 0 where a figure does not apply.
func realistic(seed uint64) func(i, k, f int) float64 {
	r := rand.New(rand.NewPCG(seed, 1))
	return func(i, k, f int) float64 {
		noise := 1 + (r.Float64()-0.5)/10
		switch f {
		case 0:
			return math.Min(1000, 400*noise+float64(k))
		case 1:
			if k == 0 {
				return 100 * noise
			}
			return 0
		case 2, 3:
			return 12345.678 * noise
		case 4:
			if k == 0 {
				return math.Round(1e6 + 5000*float64(i)*noise)
			}
			return -1
		default:
			if k == 0 {
				return 12345.678 * noise
			}
			return 0
		}
	}
}

func TestMetricsRoundTripKeepsNaN(t *testing.T) {
	m := history(3, 4, realistic(1))
	m.Samples[1].Vertices[2].BusyTimeMsPerSecond = math.NaN()
	m.Samples[2].Vertices[0].PendingRecords = -1
	m.Samples[3].Vertices[1].NumRecordsInPerSecond = math.Inf(1)
	m.Samples[3].Time = m.Samples[2].Time // equal times are allowed
	state := decide.State{Overrides: map[string]int{m.Graph.Vertices[1].ID: 3}}
	upstream := map[string]string{"collectedMetrics": "H4sIBBBB", KeyState: "old"}
	data, err := Encode(Stored{State: state, Metrics: &m}, upstream)
	if err != nil {
		t.Fatal(err)
	}
	if data["collectedMetrics"] != "H4sIBBBB" || data[KeyMetrics] == "" {
		t.Errorf("data %v", data)
	}
	back, err := DecodeMetrics(cm(data))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(m, back, cmpopts.EquateNaNs()); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
	if !back.Graph.Vertices[2].Inputs[0].Hash() || back.Graph.Vertices[1].Inputs[0].Hash() {
		t.Errorf("ship strategies %+v", back.Graph.Vertices)
	}
	// Decode reads the state, not the history.
	s, err := Decode(cm(data))
	if err != nil || s.Metrics != nil || s.State.Overrides[m.Graph.Vertices[1].ID] != 3 {
		t.Errorf("Decode: %+v, %v", s, err)
	}
	// What a collector restores.
	col, err := collect.New((*flink.Client)(nil), collect.Options{Window: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	m.Samples[3].Vertices[1].NumRecordsInPerSecond = 0
	if err := col.Restore(back.Graph, back.Samples); err != nil {
		t.Errorf("the decoded history does not restore: %v", err)
	}
}

// A ConfigMap written before the history was kept (or by upstream) has
// none; Encode without Metrics leaves the key as it is, with an empty
// history (or one not matching its graph) removes it.
func TestMetricsKeyCompatible(t *testing.T) {
	for _, c := range []map[string]string{nil, {KeyParallelismOverrides: "a:2"}} {
		m, err := DecodeMetrics(cm(c))
		if err != nil || len(m.Samples) != 0 || m.Graph.JobID != "" {
			t.Errorf("%v: %+v, %v", c, m, err)
		}
	}
	if m, err := DecodeMetrics(nil); err != nil || len(m.Samples) != 0 {
		t.Errorf("no ConfigMap: %+v, %v", m, err)
	}
	data, err := Encode(Stored{}, map[string]string{KeyMetrics: "kept"})
	if err != nil || data[KeyMetrics] != "kept" {
		t.Errorf("Metrics nil: %v, %v", data, err)
	}
	bad := history(2, 2, realistic(2))
	bad.Samples[1].Vertices = bad.Samples[1].Vertices[:1]
	for name, m := range map[string]*Metrics{"empty": {Graph: bad.Graph}, "inconsistent": &bad} {
		data, err := Encode(Stored{Metrics: m}, map[string]string{KeyMetrics: "old"})
		if _, ok := data[KeyMetrics]; ok || err != nil {
			t.Errorf("%s: %v, %v", name, data, err)
		}
	}
}

func TestDecodeMetricsRejectsBadData(t *testing.T) {
	good, err := encodeMetrics(history(2, 3, realistic(3)))
	if err != nil {
		t.Fatal(err)
	}
	plain := func(b []byte) string { // gzip+base64 of b
		s, err := gzipBase64(b)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	for name, raw := range map[string]string{
		"not base64":    "%%%",
		"not gzip":      "aGVsbG8=",
		"other version": plain([]byte("fom\x02rest")),
		"truncated":     plain(append(append([]byte(nil), metricsMagic...), 40, 'a')),
		"huge count":    plain(append(append([]byte(nil), metricsMagic...), 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0x0f)),
		"cut short":     good[:len(good)/2],
	} {
		if _, err := DecodeMetrics(cm(map[string]string{KeyMetrics: raw})); err == nil || !strings.Contains(err.Error(), "ns/autoscaler-job key "+KeyMetrics) {
			t.Errorf("%s: err = %v, want an error naming the ConfigMap and key", name, err)
		}
	}
}

// A 50-vertex job at the collector's cap of samples: real-looking load
// fits whole; random values (the worst case) lose their oldest samples;
// with the state at its bound the data stays under MaxDataBytes, and
// other keys take from the metrics' share.
func TestEncodeBoundsTheMetrics(t *testing.T) {
	const vertices, samples = 50, collect.DefaultMaxSamples
	real := history(vertices, samples, realistic(4))
	data, err := Encode(Stored{Metrics: &real}, nil)
	if err != nil {
		t.Fatal(err)
	}
	back, err := DecodeMetrics(cm(data))
	if err != nil {
		t.Fatal(err)
	}
	if len(back.Samples) != samples || len(data[KeyMetrics]) > MaxMetricsBytes {
		t.Errorf("real-looking load: %d bytes, %d of %d samples kept", len(data[KeyMetrics]), len(back.Samples), samples)
	}
	t.Logf("50 vertices × %d samples of real-looking load: %d bytes", samples, len(data[KeyMetrics]))

	r := rand.New(rand.NewPCG(5, 5))
	random := history(vertices, samples, func(i, k, f int) float64 { return math.Float64frombits(r.Uint64()) })
	state := boundedState()
	for name, old := range map[string]map[string]string{
		"alone":                  nil,
		"beside upstream's keys": {"collectedMetrics": strings.Repeat("x", 400<<10)},
		"no room left for them":  {"collectedMetrics": strings.Repeat("x", MaxDataBytes)},
	} {
		data, err := Encode(Stored{State: state, Metrics: &random}, old)
		if err != nil {
			t.Fatal(err)
		}
		total := 0
		for k, v := range data {
			total += len(k) + len(v)
		}
		raw, ok := data[KeyMetrics]
		if len(raw) > MaxMetricsBytes || (old == nil || len(old["collectedMetrics"]) < MaxDataBytes) && total > MaxDataBytes {
			t.Errorf("%s: metrics %d bytes, data %d bytes", name, len(raw), total)
		}
		if !ok {
			if name != "no room left for them" {
				t.Errorf("%s: no metrics stored", name)
			}
			continue
		}
		back, err := DecodeMetrics(cm(data))
		if err != nil {
			t.Fatal(err)
		}
		kept := back.Samples
		if len(kept) == 0 || len(kept) >= samples || !kept[len(kept)-1].Time.Equal(random.Samples[samples-1].Time) {
			t.Errorf("%s: kept %d of %d samples: want the newest kept, the oldest dropped", name, len(kept), samples)
		}
		if diff := cmp.Diff(random.Samples[samples-len(kept):], kept, cmpopts.EquateNaNs()); diff != "" {
			t.Errorf("%s: kept samples differ (-want +got):\n%s", name, diff)
		}
		t.Logf("%s: random values, %d of %d samples in %d bytes, data %d bytes", name, len(kept), samples, len(raw), total)
	}
}

// boundedState is a state at MaxStateBytes once encoded.
func boundedState() decide.State {
	var state decide.State
	for i := range 20000 {
		state.Scalings = append(state.Scalings, decide.Scaling{Time: m0.Add(time.Duration(i) * time.Minute), Vertices: map[string]decide.VertexChange{
			strings.Repeat("v", 32) + string(rune('a'+i%26)): {From: i%7 + 1, To: i%5 + 1, TrueProcessingRate: float64(i) * 1.37, ExpectedProcessingRate: float64(i) * 2.11},
		}})
	}
	return state
}

// Encoding and decoding the history of a 50-vertex job at the cap of
// samples, as the runner would at each write and after a restart.
func BenchmarkMetrics50x256(b *testing.B) {
	m := history(50, collect.DefaultMaxSamples, realistic(6))
	raw, err := encodeMetrics(m)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("encode", func(b *testing.B) {
		for b.Loop() {
			if _, err := encodeMetrics(m); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("decode", func(b *testing.B) {
		for b.Loop() {
			if _, err := decodeMetrics(raw); err != nil {
				b.Fatal(err)
			}
		}
	})
}
