package jobengine

import (
	"maps"
	"slices"
	"strconv"
	"strings"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/config"
)

// OverlayParallelism makes the job autoscaler's parallelism overrides part
// of this sync's spec, in memory, as upstream's operator does
// (KubernetesScalingRealizer): the user's own
// pipeline.jobvertex-parallelism-overrides with the autoscaler's on top,
// except for excluded vertices (job.autoscaler.vertex.exclude.ids), where
// the user's value wins. The spec is never written back (only statuses
// are): the user's manifest stays as written, and every sync overlays the
// overrides the autoscaler's ConfigMap records, so that a decision recorded
// there is applied by the ordinary spec-change path (in place where the job
// can be rescaled so, else an upgrade with its upgradeMode) and recorded in
// lastReconciledSpec like any change, once: a sync after a crash overlays
// the same overrides and finds them deployed. Call it before Reconcile.
func (s *State[T, S]) OverlayParallelism(overrides map[string]int, excluded []string) error {
	if len(overrides) == 0 {
		return nil
	}
	spec := s.obj.CurrentSpec()
	values, err := spec.GetFlinkConfiguration().Values()
	if err != nil {
		return err
	}
	flat, err := config.Flatten(values)
	if err != nil {
		return err
	}
	user, err := parallelismOverrides(flat)
	if err != nil {
		return err
	}
	merged := maps.Clone(user)
	for vertex, p := range overrides {
		if _, set := merged[vertex]; set && slices.Contains(excluded, vertex) {
			continue
		}
		merged[vertex] = strconv.Itoa(p)
	}
	if maps.Equal(merged, user) {
		return nil
	}
	maps.DeleteFunc(flat, func(k, _ string) bool { return config.IsParallelismOverridesKey(k) })
	ids := slices.Sorted(maps.Keys(merged))
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = id + ":" + merged[id]
	}
	flat[config.FlinkParallelismOverrides] = strings.Join(parts, ",")
	s.obj.SetCurrentSpec(spec.Copy().WithFlinkConfiguration(v1beta1.NewConfiguration(flat)))
	return nil
}
