package validation

import (
	"errors"
	"fmt"
	"strings"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/config"
	"github.com/flinkops/flink-operator/pkg/flink"
)

// Result is what a check derived on the way, for callers that go on to act
// on the spec.
type Result struct {
	// Config is the effective configuration (see DeploymentConfig and
	// SessionJobConfig); nil when it could not be built (a session job
	// whose cluster does not exist yet).
	Config config.Config
	// Version is the Flink version of the cluster; zero when unknown.
	Version flink.Version
	// Warnings name configuration keys that were ignored or look mistyped;
	// the webhook shows them to the user, the controllers record them.
	Warnings []config.Warning
}

// UpgradeMode is the job's upgrade mode, stateless when unset (as upstream).
func UpgradeMode(job *v1beta1.JobSpec) v1beta1.UpgradeMode {
	if job == nil || job.UpgradeMode == "" {
		return v1beta1.UpgradeModeStateless
	}
	return job.UpgradeMode
}

// jobEnums checks the fields the CRD restricts to enums, for objects that
// reached the operator without the CRD's schema (and for clear messages).
func jobEnums(job *v1beta1.JobSpec) error {
	switch job.State {
	case "", v1beta1.JobStateRunning, v1beta1.JobStateSuspended:
	default:
		return fmt.Errorf("spec.job.state %q: want running or suspended", job.State)
	}
	switch UpgradeMode(job) {
	case v1beta1.UpgradeModeStateless, v1beta1.UpgradeModeSavepoint, v1beta1.UpgradeModeLastState:
	default:
		return fmt.Errorf("spec.job.upgradeMode %q: want stateless, savepoint or last-state", job.UpgradeMode)
	}
	return nil
}

// jobState is upstream's validateJobSpec part about state:
// the directories that the upgrade mode and the snapshot features need, on
// the effective configuration. last is the job the operator last
// reconciled, nil before the first deployment.
//
// Two conditions are deliberately looser than upstream's: a
// savepointTriggerNonce counts only when it changed (an old nonce must not
// block every later edit once the directory is removed), and a periodic
// savepoint interval counts only when it turns savepoints on (blank and "0"
// mean off in this operator, so they need no directory).
func jobState(job, last *v1beta1.JobSpec, cfg config.Config) error {
	mode := UpgradeMode(job)
	_, hasCheckpointDir := config.CheckpointDir(cfg)
	_, hasSavepointDir := config.SavepointDir(cfg)
	if mode != v1beta1.UpgradeModeStateless && !hasCheckpointDir {
		return fmt.Errorf("Checkpoint directory[%s] must be defined for last-state and savepoint upgrade modes", config.FlinkCheckpointDir)
	}
	if !hasSavepointDir {
		interval := strings.TrimSpace(cfg[config.KeyPeriodicSavepointInterval])
		switch {
		case mode == v1beta1.UpgradeModeSavepoint:
			return fmt.Errorf("Job could not be upgraded with savepoint while config key[%s] is not set", config.FlinkSavepointDir)
		case job.SavepointTriggerNonce != nil && (last == nil || !equalNonce(job.SavepointTriggerNonce, last.SavepointTriggerNonce)):
			return fmt.Errorf("Savepoint could not be manually triggered for the running job while config key[%s] is not set", config.FlinkSavepointDir)
		case interval != "" && interval != "0":
			return fmt.Errorf("Periodic savepoints cannot be enabled when config key[%s] is not set", config.FlinkSavepointDir)
		case cfg.String(config.KeyJobUpgradeLastStateMaxAllowedCheckpointAge) != "":
			return fmt.Errorf("In order to use max-checkpoint age functionality config key[%s] must be set to allow triggering savepoint upgrades.", config.FlinkSavepointDir)
		}
	}
	if ref := job.InitialStateSnapshotRef; ref != nil {
		if strings.TrimSpace(job.InitialSavepointPath) != "" {
			return errors.New("spec.job.initialSavepointPath and spec.job.initialStateSnapshotRef are mutually exclusive: set one state to start from")
		}
		if strings.TrimSpace(ref.Name) == "" {
			return errors.New("spec.job.initialStateSnapshotRef.name is required")
		}
	}
	if last != nil && job.SavepointRedeployNonce != nil && !equalNonce(job.SavepointRedeployNonce, last.SavepointRedeployNonce) &&
		strings.TrimSpace(job.InitialSavepointPath) == "" && job.InitialStateSnapshotRef == nil {
		// [ours] initialStateSnapshotRef counts as the redeploy's source.
		return errors.New("InitialSavepointPath must not be empty for savepoint redeployment")
	}
	return nil
}

func equalNonce(a, b *int64) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

// CrossNamespaceSnapshotRef reports whether a job (of a resource in
// namespace) starts from a FlinkStateSnapshot in another namespace
// (spec.job.initialStateSnapshotRef), and which. Like a snapshot's
// cross-namespace job reference it is a privilege (the job reads another
// namespace's state), which the caller authorizes; the rules here do not.
func CrossNamespaceSnapshotRef(namespace string, job *v1beta1.JobSpec) (ref v1beta1.SnapshotReference, cross bool) {
	if job == nil || job.InitialStateSnapshotRef == nil {
		return v1beta1.SnapshotReference{}, false
	}
	r := *job.InitialStateSnapshotRef
	if r.Namespace == "" || r.Namespace == namespace {
		return v1beta1.SnapshotReference{}, false
	}
	return r, true
}
