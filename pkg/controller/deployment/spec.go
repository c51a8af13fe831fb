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

// withoutNonces drops the fields that never need a redeploy: the manual
// snapshot nonces (a snapshot, not a restart) and the autoscaler reset
// nonce (no autoscaler here).
func withoutNonces(spec v1beta1.FlinkDeploymentSpec) v1beta1.FlinkDeploymentSpec {
	out := *spec.DeepCopy()
	out.Job = lifecycle.WithoutNonces(out.Job)
	return out
}

// sameSpec compares two specs the way the API server would store them.
func sameSpec(a, b v1beta1.FlinkDeploymentSpec) bool { return lifecycle.SameSpec(a, b) }

// specChange classifies a spec change against the recorded one.
type specChange int

const (
	changeNone specChange = iota
	// changeNonces: only fields that need no redeploy changed.
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

func (k specChange) String() string {
	return [...]string{"none", "nonces", "while-suspended", "suspend", "savepoint-redeploy", "upgrade"}[k]
}

func classify(recorded, current v1beta1.FlinkDeploymentSpec) specChange {
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
	case current.Job != nil && recorded.Job != nil && !equalNonce(current.Job.SavepointRedeployNonce, recorded.Job.SavepointRedeployNonce) &&
		current.Job.SavepointRedeployNonce != nil:
		return changeRedeploy
	}
	return changeUpgrade
}

func equalNonce(a, b *int64) bool { return lifecycle.EqualNonce(a, b) }

// jobSuspended reports whether the spec asks for a suspended job.
func jobSuspended(spec *v1beta1.FlinkDeploymentSpec) bool {
	return spec.Job != nil && spec.Job.State == v1beta1.JobStateSuspended
}

// upgradeMode is the spec's upgrade mode (stateless when unset, as upstream).
func upgradeMode(spec *v1beta1.FlinkDeploymentSpec) v1beta1.UpgradeMode {
	if spec.Job == nil || spec.Job.UpgradeMode == "" {
		return v1beta1.UpgradeModeStateless
	}
	return spec.Job.UpgradeMode
}

// newJobID derives a fresh Flink job id from the resource, the job id it
// replaces and the generation being deployed (pkg/lifecycle).
func newJobID(uid, previous string, generation int64) string {
	return lifecycle.NewJobID("", uid, previous, generation)
}
