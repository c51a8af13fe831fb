package lifecycle

import (
	"encoding/json"
	"fmt"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
)

// Reconciled is what status.reconciliationStatus.lastReconciledSpec (and
// lastStableSpec) hold, in upstream's shape so an upstream operator reads
// it: {"spec": <spec>, "resource_metadata": {"apiVersion": ...,
// "firstDeployment": ...}}. T is FlinkDeploymentSpec or FlinkSessionJobSpec.
type Reconciled[T any] struct {
	Spec T    `json:"spec"`
	Meta Meta `json:"resource_metadata"`
}

// Meta is upstream's resource_metadata.
type Meta struct {
	APIVersion      string `json:"apiVersion"`
	FirstDeployment bool   `json:"firstDeployment"`
}

// Encode writes spec as lastReconciledSpec.
func Encode[T any](spec T, first bool) (string, error) {
	b, err := json.Marshal(Reconciled[T]{Spec: spec, Meta: Meta{APIVersion: v1beta1.SchemeGroupVersion.String(), FirstDeployment: first}})
	if err != nil {
		return "", fmt.Errorf("encoding lastReconciledSpec: %w", err)
	}
	return string(b), nil
}

// Decode reads lastReconciledSpec; "" gives nil. Every form upstream's
// releases write is accepted: resource_metadata with the metadata
// (generation) releases up to 1.9 put there, which is ignored as upstream's
// SpecUtils.deserializeSpecWithMeta ignores it, and the legacy form (the
// spec itself plus apiVersion, no resource_metadata). Upstream's record
// has another form than the spec it records (nulls, Java defaults):
// compare them with SameSpec.
func Decode[T any](s string) (*Reconciled[T], error) {
	if s == "" {
		return nil, nil
	}
	var probe map[string]json.RawMessage
	if err := json.Unmarshal([]byte(s), &probe); err != nil {
		return nil, fmt.Errorf("decoding lastReconciledSpec: %w", err)
	}
	out := &Reconciled[T]{}
	if _, ok := probe["resource_metadata"]; ok {
		if err := json.Unmarshal([]byte(s), out); err != nil {
			return nil, fmt.Errorf("decoding lastReconciledSpec: %w", err)
		}
		return out, nil
	}
	delete(probe, "apiVersion")
	legacy, _ := json.Marshal(probe)
	if err := json.Unmarshal(legacy, &out.Spec); err != nil {
		return nil, fmt.Errorf("decoding lastReconciledSpec (legacy form): %w", err)
	}
	out.Meta.APIVersion = v1beta1.SchemeGroupVersion.String()
	return out, nil
}

// EqualNonce compares two optional nonces.
func EqualNonce(a, b *int64) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

// WithoutNonces is a copy of job without the fields that never need a
// redeploy: the manual snapshot nonces (a snapshot, not a restart) and the
// autoscaler reset nonce (no autoscaler here).
func WithoutNonces(job *v1beta1.JobSpec) *v1beta1.JobSpec {
	if job == nil {
		return nil
	}
	out := job.DeepCopy()
	out.SavepointTriggerNonce, out.CheckpointTriggerNonce, out.AutoscalerResetNonce = nil, nil, nil
	return out
}
