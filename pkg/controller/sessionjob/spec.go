package sessionjob

import (
	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/lifecycle"
)

// reconciledSpec is lastReconciledSpec (pkg/lifecycle).
type reconciledSpec = lifecycle.Reconciled[v1beta1.FlinkSessionJobSpec]

type reconciledMeta = lifecycle.Meta

func encodeSpec(spec v1beta1.FlinkSessionJobSpec, first bool) (string, error) {
	return lifecycle.Encode(spec, first)
}

func decodeSpec(s string) (*reconciledSpec, error) {
	return lifecycle.Decode[v1beta1.FlinkSessionJobSpec](s)
}

// specChange classifies a spec change against the recorded one.
type specChange int

const (
	changeNone specChange = iota
	// changeNonces: only the manual snapshot nonces (or the autoscaler's)
	// changed: a snapshot, not a restart.
	changeNonces
	// changeSuspended: the job stays suspended; the new spec is recorded and
	// applied on resume.
	changeSuspended
	// changeSuspend: job.state running -> suspended.
	changeSuspend
	// changeRedeploy: savepointRedeployNonce changed (restore from
	// initialSavepointPath).
	changeRedeploy
	// changeUpgrade: anything else (including resume and restartNonce).
	changeUpgrade
)

func classify(recorded, current v1beta1.FlinkSessionJobSpec) specChange {
	if sameSpec(withoutNonces(recorded), withoutNonces(current)) {
		if sameSpec(recorded, current) {
			return changeNone
		}
		return changeNonces
	}
	wasSuspended, suspended := jobSuspended(&recorded), jobSuspended(&current)
	switch {
	case wasSuspended && suspended:
		return changeSuspended
	case suspended:
		return changeSuspend
	case current.Job != nil && recorded.Job != nil && current.Job.SavepointRedeployNonce != nil &&
		!equalNonce(current.Job.SavepointRedeployNonce, recorded.Job.SavepointRedeployNonce):
		return changeRedeploy
	}
	return changeUpgrade
}

func withoutNonces(spec v1beta1.FlinkSessionJobSpec) v1beta1.FlinkSessionJobSpec {
	out := *spec.DeepCopy()
	out.Job = lifecycle.WithoutNonces(out.Job)
	return out
}

func sameSpec(a, b v1beta1.FlinkSessionJobSpec) bool { return lifecycle.SameSpec(a, b) }

func equalNonce(a, b *int64) bool { return lifecycle.EqualNonce(a, b) }

func jobSuspended(spec *v1beta1.FlinkSessionJobSpec) bool {
	return spec.Job != nil && spec.Job.State == v1beta1.JobStateSuspended
}

// upgradeMode is the spec's upgrade mode (stateless when unset, as upstream).
func upgradeMode(spec *v1beta1.FlinkSessionJobSpec) v1beta1.UpgradeMode {
	if spec.Job == nil || spec.Job.UpgradeMode == "" {
		return v1beta1.UpgradeModeStateless
	}
	return spec.Job.UpgradeMode
}

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
