package validation

import (
	"encoding/json"
	"fmt"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
)

// LastReconciledDeploymentSpec reads the spec the operator last acted on
// from status.reconciliationStatus.lastReconciledSpec; nil before the first
// deployment. The rules about spec changes compare with it, as upstream
// does: what matters is what runs, not the previous version of the object.
func LastReconciledDeploymentSpec(status *v1beta1.FlinkDeploymentStatus) (*v1beta1.FlinkDeploymentSpec, error) {
	return decodeReconciled[v1beta1.FlinkDeploymentSpec](status.ReconciliationStatus.LastReconciledSpec)
}

// LastReconciledSessionJobSpec is LastReconciledDeploymentSpec for a
// FlinkSessionJob.
func LastReconciledSessionJobSpec(status *v1beta1.FlinkSessionJobStatus) (*v1beta1.FlinkSessionJobSpec, error) {
	return decodeReconciled[v1beta1.FlinkSessionJobSpec](status.ReconciliationStatus.LastReconciledSpec)
}

// decodeReconciled reads upstream's shape, {"spec": ..., "resource_metadata":
// ...}, and its legacy one (the spec itself plus apiVersion, which decoding
// ignores).
func decodeReconciled[T any](s string) (*T, error) {
	if s == "" {
		return nil, nil
	}
	var probe map[string]json.RawMessage
	if err := json.Unmarshal([]byte(s), &probe); err != nil {
		return nil, fmt.Errorf("decoding lastReconciledSpec: %w", err)
	}
	raw := []byte(s)
	if _, ok := probe["resource_metadata"]; ok {
		raw = probe["spec"]
	}
	out := new(T)
	if len(raw) == 0 {
		return out, nil
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return nil, fmt.Errorf("decoding lastReconciledSpec: %w", err)
	}
	return out, nil
}
