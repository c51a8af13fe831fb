package jobengine

import (
	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/lifecycle"
)

// Spec is the spec of a resource that runs a Flink job
// (FlinkDeploymentSpec, FlinkSessionJobSpec), as the engine reads it: both
// kinds say it through the same methods
// (pkg/apis/flink/v1beta1/jobresource.go).
type Spec[S any] interface {
	// GetJob is the job part (nil for a session cluster).
	GetJob() *v1beta1.JobSpec
	// WithJob is the spec with another job part.
	WithJob(*v1beta1.JobSpec) S
	// GetFlinkConfiguration is spec.flinkConfiguration.
	GetFlinkConfiguration() *v1beta1.Configuration
	// WithFlinkConfiguration is the spec with another flinkConfiguration.
	WithFlinkConfiguration(*v1beta1.Configuration) S
	// GetFlinkVersion is the Flink version the spec deploys ("" for a
	// session job, whose cluster has it).
	GetFlinkVersion() v1beta1.FlinkVersion
	// Copy is a deep copy.
	Copy() S
}

// jobOf is the job part of a spec (nil for a session cluster).
func jobOf[S Spec[S]](spec *S) *v1beta1.JobSpec {
	return (*spec).GetJob()
}

// Change classifies a spec change against the recorded one.
type Change int

const (
	ChangeNone Change = iota
	// ChangeNonces: only fields that need no redeploy changed: the manual
	// snapshot nonces (a snapshot, not a restart), the autoscaler reset
	// nonce (no autoscaler here) and the operator-only keys of
	// flinkConfiguration (operatorkeys.go). The recorded spec stays.
	ChangeNonces
	// ChangeSuspended: the job stays suspended; the new spec is recorded
	// and applied on resume.
	ChangeSuspended
	// ChangeSuspend: job.state running -> suspended.
	ChangeSuspend
	// ChangeRedeploy: savepointRedeployNonce changed (restore from
	// initialSavepointPath or initialStateSnapshotRef).
	ChangeRedeploy
	// ChangeUpgrade: anything else (including resume and restartNonce).
	ChangeUpgrade
)

func (k Change) String() string {
	return [...]string{"none", "nonces", "while-suspended", "suspend", "savepoint-redeploy", "upgrade"}[k]
}

// Classify compares the current spec with the recorded one.
func Classify[S Spec[S]](recorded, current S) Change {
	if lifecycle.SameSpec(withoutNonces(withoutOperatorKeys(recorded)), withoutNonces(withoutOperatorKeys(current))) {
		if lifecycle.SameSpec(recorded, current) {
			return ChangeNone
		}
		return ChangeNonces
	}
	wasSuspended, suspended := JobSuspended(&recorded), JobSuspended(&current)
	rec, cur := jobOf(&recorded), jobOf(&current)
	switch {
	case wasSuspended && suspended:
		return ChangeSuspended
	case suspended:
		return ChangeSuspend
	case cur != nil && rec != nil && cur.SavepointRedeployNonce != nil &&
		!lifecycle.EqualNonce(cur.SavepointRedeployNonce, rec.SavepointRedeployNonce):
		return ChangeRedeploy
	}
	return ChangeUpgrade
}

// withoutNonces drops the fields that never need a redeploy (the job spec
// is copied; the rest of the spec is shared, and only compared).
func withoutNonces[S Spec[S]](spec S) S {
	return spec.WithJob(lifecycle.WithoutNonces(jobOf(&spec)))
}

// JobSuspended reports whether the spec asks for a suspended job.
func JobSuspended[S Spec[S]](spec *S) bool {
	job := jobOf(spec)
	return job != nil && job.State == v1beta1.JobStateSuspended
}

// UpgradeMode is the spec's upgrade mode (stateless when unset, as
// upstream).
func UpgradeMode[S Spec[S]](spec *S) v1beta1.UpgradeMode {
	job := jobOf(spec)
	if job == nil || job.UpgradeMode == "" {
		return v1beta1.UpgradeModeStateless
	}
	return job.UpgradeMode
}

// withCurrentUnrecorded is recorded with the job fields upstream's spec
// diff ignores (JobSpec's @SpecDiff(IGNORE): upgradeMode,
// allowNonRestoredState, initialSavepointPath; the nonces are
// withoutNonces') taken from current. A change of them alone never
// redeploys, and the operator acts on their current values, as upstream
// reads the current spec's upgradeMode at every step of an upgrade; the
// status keeps lastReconciledSpec as recorded until the next deploy records
// the whole spec. Upstream records a first deployment without
// initialSavepointPath as upgradeMode stateless (its
// updateStatusBeforeFirstDeployment): a job taken over from it keeps the
// upgrade mode its spec says.
func withCurrentUnrecorded[S Spec[S]](recorded, current S) S {
	rj, cj := recorded.GetJob(), current.GetJob()
	if rj == nil || cj == nil {
		return recorded
	}
	j := rj.DeepCopy()
	j.UpgradeMode, j.AllowNonRestoredState, j.InitialSavepointPath = cj.UpgradeMode, cj.AllowNonRestoredState, cj.InitialSavepointPath
	return recorded.WithJob(j)
}
