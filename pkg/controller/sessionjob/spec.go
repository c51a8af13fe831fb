package sessionjob

import (
	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/lifecycle"
)

// reconciledSpec is lastReconciledSpec (pkg/lifecycle).
type reconciledSpec = lifecycle.Reconciled[v1beta1.FlinkSessionJobSpec]

// newJobID derives the Flink job id of the next submission from the
// resource, the id it replaces and the generation being deployed. It is
// recorded in status before the submission, which carries it as the jobId
// of /jars/:id/run: a submission repeated after a crash is then Flink's
// DuplicateJobSubmission (or finds the job running) instead of a second
// job. A session cluster never accepts a job id twice, so it is never the
// id it replaces.
func newJobID(uid, previous string, generation int64) string {
	return lifecycle.NewJobID("sessionjob/", uid, previous, generation)
}
