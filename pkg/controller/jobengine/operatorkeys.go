package jobengine

import (
	"maps"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/config"
)

// The operator-only keys of a flinkConfiguration (config.OperatorOnlyKey:
// kubernetes.operator.*, job.autoscaler.*) tell the operator how to manage
// the job, not Flink how to run it. As upstream, a change of only such keys
// never redeploys (Classify), and the operator acts on their current values
// while the job keeps running the recorded spec (ConfigSpec).

// withoutOperatorKeys is spec with the operator-only keys dropped from its
// flinkConfiguration (a new configuration; the rest of the spec is shared,
// and only compared). A configuration that does not decode stays as it is:
// validation reports it.
func withoutOperatorKeys[S Spec[S]](spec S) S {
	flat, ok := flatConfig(spec.GetFlinkConfiguration())
	if !ok {
		return spec
	}
	maps.DeleteFunc(flat, func(k, _ string) bool { return config.OperatorOnlyKey(k) })
	return spec.WithFlinkConfiguration(v1beta1.NewConfiguration(flat))
}

// ConfigSpec is the spec whose configuration the operator reads for a job
// that runs recorded: recorded's, with the operator-only keys taken from
// current (upstream's observe configuration: the deployed spec's, plus the
// operator's options from the current one). Enabling snapshot resources
// or periodic savepoints on a running job so takes effect at once, without
// a restart.
func ConfigSpec[S Spec[S]](recorded, current S) S {
	rec, ok1 := flatConfig(recorded.GetFlinkConfiguration())
	cur, ok2 := flatConfig(current.GetFlinkConfiguration())
	if !ok1 || !ok2 {
		return recorded
	}
	maps.DeleteFunc(rec, func(k, _ string) bool { return config.OperatorOnlyKey(k) })
	for k, v := range cur {
		if config.OperatorOnlyKey(k) {
			rec[k] = v
		}
	}
	return recorded.WithFlinkConfiguration(v1beta1.NewConfiguration(rec))
}

// flatConfig is a configuration as Flink reads it (flat keys, string
// values); false when it does not decode.
func flatConfig(c *v1beta1.Configuration) (map[string]string, bool) {
	if c == nil {
		return map[string]string{}, true
	}
	values, err := c.Values()
	if err != nil {
		return nil, false
	}
	flat, err := config.Flatten(values)
	if err != nil {
		return nil, false
	}
	return flat, true
}
