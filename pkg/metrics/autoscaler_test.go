package metrics

import (
	"math"
	"testing"
)

// autoscalerSeries gathers the registry's autoscaler series: family name →
// vertex label → value.
func autoscalerSeries(t *testing.T) map[string]map[string]float64 {
	t.Helper()
	families, err := Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string]float64{}
	for _, f := range families {
		if len(f.GetName()) < len("flink_operator_autoscaler_") || f.GetName()[:len("flink_operator_autoscaler_")] != "flink_operator_autoscaler_" {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["namespace"] != "ns" || labels["kind"] != "FlinkDeployment" || labels["name"] != "job" {
				t.Errorf("%s: labels %v", f.GetName(), labels)
			}
			if out[f.GetName()] == nil {
				out[f.GetName()] = map[string]float64{}
			}
			out[f.GetName()][labels["vertex"]] = m.GetGauge().GetValue()
		}
	}
	return out
}

func TestAutoscalerVertexSeries(t *testing.T) {
	SetAutoscalerVertices("uid-1", "ns", "FlinkDeployment", "job", []AutoscalerVertex{
		{ID: "v1", Parallelism: 2, RecommendedParallelism: 4, TrueProcessingRate: 500, TargetDataRate: 1400, Utilization: 0.95},
		{ID: "v2", Parallelism: 1, RecommendedParallelism: 1, TrueProcessingRate: math.NaN(), TargetDataRate: 1000, Utilization: 0.1},
	})
	got := autoscalerSeries(t)
	if len(got) != 5 {
		t.Fatalf("%d autoscaler families, want 5: %v", len(got), got)
	}
	if v := got["flink_operator_autoscaler_recommended_parallelism"]; v["v1"] != 4 || v["v2"] != 1 {
		t.Errorf("recommended parallelism %v", v)
	}
	if v := got["flink_operator_autoscaler_utilization"]; v["v1"] != 0.95 {
		t.Errorf("utilization %v", v)
	}
	if v := got["flink_operator_autoscaler_true_processing_rate"]; !math.IsNaN(v["v2"]) || v["v1"] != 500 {
		t.Errorf("true processing rate %v (NaN when not measured)", v)
	}
	ForgetAutoscaler("uid-1")
	if got := autoscalerSeries(t); len(got) != 0 {
		t.Errorf("series after ForgetAutoscaler: %v", got)
	}
}
