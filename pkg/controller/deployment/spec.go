package deployment

import (
	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/lifecycle"
)

// reconciledSpec is lastReconciledSpec (pkg/lifecycle).
type reconciledSpec = lifecycle.Reconciled[v1beta1.FlinkDeploymentSpec]

type reconciledMeta = lifecycle.Meta

func encodeSpec(spec v1beta1.FlinkDeploymentSpec, first bool) (string, error) {
	return lifecycle.Encode(spec, first)
}

// decodeSpec reads lastReconciledSpec; "" gives nil.
func decodeSpec(s string) (*reconciledSpec, error) {
	return lifecycle.Decode[v1beta1.FlinkDeploymentSpec](s)
}

// newJobID derives a fresh Flink job id from the resource, the job id it
// replaces and the generation being deployed (pkg/lifecycle).
func newJobID(uid, previous string, generation int64) string {
	return lifecycle.NewJobID("", uid, previous, generation)
}
