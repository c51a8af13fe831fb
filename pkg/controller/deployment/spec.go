package deployment

import (
	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/lifecycle"
)

// reconciledSpec is lastReconciledSpec (pkg/lifecycle).
type reconciledSpec = lifecycle.Reconciled[v1beta1.FlinkDeploymentSpec]

// newJobID derives a fresh Flink job id from the resource, the job id it
// replaces and the generation being deployed (pkg/lifecycle).
func newJobID(uid, previous string, generation int64) string {
	return lifecycle.NewJobID("", uid, previous, generation)
}
