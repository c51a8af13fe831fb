package store

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/flinkops/flink-operator/pkg/autoscaler/decide"
)

func cm(data map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: Name("job")}, Data: data}
}

func TestRoundTripKeepsNaNAndUpstreamKeys(t *testing.T) {
	at := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	state := decide.State{
		ResetNonce: 3,
		Overrides:  map[string]int{"bc764cd8ddf7a0cff126f51c16239658": 4, "0a448493b4782967b150582570326227": 2},
		Scalings: []decide.Scaling{{Time: at, RestartDuration: 40 * time.Second, Vertices: map[string]decide.VertexChange{
			"bc764cd8ddf7a0cff126f51c16239658": {From: 2, To: 4, TrueProcessingRate: math.NaN(), ExpectedProcessingRate: 120},
		}}},
		PendingScaleDowns: map[string]decide.PendingScaleDown{"0a448493b4782967b150582570326227": {Since: at, Recommendations: []decide.Recommendation{{Time: at, Parallelism: 1}}}},
	}
	upstream := map[string]string{"scalingHistory": "H4sIAAAA", "collectedMetrics": "H4sIBBBB"}
	data, err := Encode(Stored{State: state}, upstream)
	if err != nil {
		t.Fatal(err)
	}
	if got := data[KeyParallelismOverrides]; got != "0a448493b4782967b150582570326227:2,bc764cd8ddf7a0cff126f51c16239658:4" {
		t.Errorf("parallelismOverrides = %q, want upstream's sorted map syntax", got)
	}
	if data["scalingHistory"] != "H4sIAAAA" || data["collectedMetrics"] != "H4sIBBBB" || len(upstream) != 2 {
		t.Errorf("upstream's keys not kept as they were (or the input was changed): %v", data)
	}
	back, err := Decode(cm(data))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(state, back.State, cmpopts.EquateNaNs(), cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
}

func TestDecodeUpstreamMadeConfigMap(t *testing.T) {
	// What upstream's autoscaler leaves: its overrides in force, its own
	// compressed history (not read).
	got, err := Decode(cm(map[string]string{"parallelismOverrides": "a:2,b:6", "scalingHistory": "H4sI..."}))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]int{"a": 2, "b": 6}, got.State.Overrides); diff != "" {
		t.Errorf("overrides (-want +got):\n%s", diff)
	}
	if got, err := Decode(nil); err != nil || len(got.State.Overrides) != 0 || len(got.State.Scalings) != 0 {
		t.Errorf("no ConfigMap: %+v, %v", got, err)
	}
}

func TestDecodeRejectsBadData(t *testing.T) {
	for name, data := range map[string]map[string]string{
		"overrides without parallelism": {KeyParallelismOverrides: "a"},
		"parallelism 0":                 {KeyParallelismOverrides: "a:0"},
		"state not base64":              {KeyState: "%%%"},
		"state not gzip":                {KeyState: "aGVsbG8="},
	} {
		if _, err := Decode(cm(data)); err == nil || !strings.Contains(err.Error(), "ns/autoscaler-job") {
			t.Errorf("%s: err = %v, want an error naming the ConfigMap", name, err)
		}
	}
}

func TestEncodeBoundsTheState(t *testing.T) {
	var state decide.State
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range 20000 {
		state.Scalings = append(state.Scalings, decide.Scaling{Time: at.Add(time.Duration(i) * time.Minute), Vertices: map[string]decide.VertexChange{
			strings.Repeat("v", 32) + string(rune('a'+i%26)): {From: i%7 + 1, To: i%5 + 1, TrueProcessingRate: float64(i) * 1.37, ExpectedProcessingRate: float64(i) * 2.11},
		}})
	}
	data, err := Encode(Stored{State: state}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(data[KeyState]); n > MaxStateBytes {
		t.Fatalf("encoded state %d bytes, bound %d", n, MaxStateBytes)
	}
	back, err := Decode(cm(data))
	if err != nil {
		t.Fatal(err)
	}
	kept := back.State.Scalings
	if len(kept) == 0 || len(kept) >= len(state.Scalings) || !kept[len(kept)-1].Time.Equal(state.Scalings[len(state.Scalings)-1].Time) {
		t.Errorf("kept %d of %d scalings, newest %v: want the newest kept, the oldest dropped", len(kept), len(state.Scalings), kept[len(kept)-1].Time)
	}
}
