package deployment

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
)

// reconciledSpec is what status.reconciliationStatus.lastReconciledSpec (and
// lastStableSpec) hold, in upstream's shape so an upstream operator can read
// it: {"spec": <spec>, "resource_metadata": {"apiVersion": ..., "firstDeployment": ...}}.
type reconciledSpec struct {
	Spec v1beta1.FlinkDeploymentSpec `json:"spec"`
	Meta reconciledMeta              `json:"resource_metadata"`
}

type reconciledMeta struct {
	APIVersion      string `json:"apiVersion"`
	FirstDeployment bool   `json:"firstDeployment"`
}

func encodeSpec(spec v1beta1.FlinkDeploymentSpec, first bool) (string, error) {
	b, err := json.Marshal(reconciledSpec{Spec: spec, Meta: reconciledMeta{
		APIVersion: v1beta1.SchemeGroupVersion.String(), FirstDeployment: first,
	}})
	if err != nil {
		return "", fmt.Errorf("encoding lastReconciledSpec: %w", err)
	}
	return string(b), nil
}

// decodeSpec reads lastReconciledSpec; "" gives nil. Upstream's legacy
// form (the spec itself plus apiVersion, no resource_metadata) is accepted.
func decodeSpec(s string) (*reconciledSpec, error) {
	if s == "" {
		return nil, nil
	}
	var probe map[string]json.RawMessage
	if err := json.Unmarshal([]byte(s), &probe); err != nil {
		return nil, fmt.Errorf("decoding lastReconciledSpec: %w", err)
	}
	out := &reconciledSpec{}
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

// withoutNonces drops the fields that never need a redeploy: the manual
// snapshot nonces (a snapshot, not a restart) and the autoscaler reset
// nonce (no autoscaler here).
func withoutNonces(spec v1beta1.FlinkDeploymentSpec) v1beta1.FlinkDeploymentSpec {
	out := *spec.DeepCopy()
	if out.Job != nil {
		out.Job.SavepointTriggerNonce = nil
		out.Job.CheckpointTriggerNonce = nil
		out.Job.AutoscalerResetNonce = nil
	}
	return out
}

// sameSpec compares two specs the way the API server would store them:
// through JSON, so key order and spacing inside flinkConfiguration, or nil
// versus empty lists, never count as a change.
func sameSpec(a, b v1beta1.FlinkDeploymentSpec) bool {
	return reflect.DeepEqual(normalized(a), normalized(b))
}

func normalized(spec v1beta1.FlinkDeploymentSpec) any {
	b, err := json.Marshal(spec)
	if err != nil {
		return nil
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		return nil
	}
	return out
}

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

func equalNonce(a, b *int64) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

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
// replaces and the generation being deployed: deterministic (so logs and
// tests can predict it) and never equal to the id it replaces. It is
// written to status before any object carries it, so determinism is a
// convenience, not what makes a crash safe.
func newJobID(uid, previous string, generation int64) string {
	for salt := 0; ; salt++ {
		sum := sha256.Sum256([]byte(uid + "/" + previous + "/" + strconv.FormatInt(generation, 10) + "/" + strconv.Itoa(salt)))
		if id := hex.EncodeToString(sum[:16]); id != previous {
			return id
		}
	}
}
