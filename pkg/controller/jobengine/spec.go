package jobengine

import (
	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/lifecycle"
)

// Spec is the spec of a resource that runs a Flink job.
type Spec interface {
	v1beta1.FlinkDeploymentSpec | v1beta1.FlinkSessionJobSpec
}

// JobOf is the job part of a spec (nil for a session cluster).
func JobOf[S Spec](spec *S) *v1beta1.JobSpec {
	return *jobField(spec)
}

func jobField[S Spec](spec *S) **v1beta1.JobSpec {
	switch s := any(spec).(type) {
	case *v1beta1.FlinkDeploymentSpec:
		return &s.Job
	case *v1beta1.FlinkSessionJobSpec:
		return &s.Job
	}
	panic("jobengine: unexpected spec type")
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
func Classify[S Spec](recorded, current S) Change {
	if lifecycle.SameSpec(withoutNonces(withoutOperatorKeys(recorded)), withoutNonces(withoutOperatorKeys(current))) {
		if lifecycle.SameSpec(recorded, current) {
			return ChangeNone
		}
		return ChangeNonces
	}
	wasSuspended, suspended := JobSuspended(&recorded), JobSuspended(&current)
	rec, cur := JobOf(&recorded), JobOf(&current)
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
func withoutNonces[S Spec](spec S) S {
	out := spec
	*jobField(&out) = lifecycle.WithoutNonces(JobOf(&spec))
	return out
}

// JobSuspended reports whether the spec asks for a suspended job.
func JobSuspended[S Spec](spec *S) bool {
	job := JobOf(spec)
	return job != nil && job.State == v1beta1.JobStateSuspended
}

// UpgradeMode is the spec's upgrade mode (stateless when unset, as
// upstream).
func UpgradeMode[S Spec](spec *S) v1beta1.UpgradeMode {
	job := JobOf(spec)
	if job == nil || job.UpgradeMode == "" {
		return v1beta1.UpgradeModeStateless
	}
	return job.UpgradeMode
}
