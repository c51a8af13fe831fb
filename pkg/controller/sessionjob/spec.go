package sessionjob

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
// lastStableSpec) hold, in upstream's shape so an upstream operator reads it:
// {"spec": <spec>, "resource_metadata": {"apiVersion": ..., "firstDeployment": ...}}.
type reconciledSpec struct {
	Spec v1beta1.FlinkSessionJobSpec `json:"spec"`
	Meta reconciledMeta              `json:"resource_metadata"`
}

type reconciledMeta struct {
	APIVersion      string `json:"apiVersion"`
	FirstDeployment bool   `json:"firstDeployment"`
}

func encodeSpec(spec v1beta1.FlinkSessionJobSpec, first bool) (string, error) {
	b, err := json.Marshal(reconciledSpec{Spec: spec, Meta: reconciledMeta{
		APIVersion: v1beta1.SchemeGroupVersion.String(), FirstDeployment: first,
	}})
	if err != nil {
		return "", fmt.Errorf("encoding lastReconciledSpec: %w", err)
	}
	return string(b), nil
}

// decodeSpec reads lastReconciledSpec; "" gives nil. Upstream's legacy form
// (the spec itself plus apiVersion, no resource_metadata) is accepted.
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
	if out.Job != nil {
		out.Job.SavepointTriggerNonce = nil
		out.Job.CheckpointTriggerNonce = nil
		out.Job.AutoscalerResetNonce = nil
	}
	return out
}

// sameSpec compares two specs through JSON, so key order inside
// flinkConfiguration or nil versus empty lists never count as a change.
func sameSpec(a, b v1beta1.FlinkSessionJobSpec) bool {
	return reflect.DeepEqual(normalized(a), normalized(b))
}

func normalized(spec v1beta1.FlinkSessionJobSpec) any {
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

func equalNonce(a, b *int64) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

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
	for salt := 0; ; salt++ {
		sum := sha256.Sum256([]byte("sessionjob/" + uid + "/" + previous + "/" + strconv.FormatInt(generation, 10) + "/" + strconv.Itoa(salt)))
		if id := hex.EncodeToString(sum[:16]); id != previous {
			return id
		}
	}
}
