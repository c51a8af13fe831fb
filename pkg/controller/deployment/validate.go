package deployment

import (
	"errors"
	"fmt"
	"strings"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/cluster"
	"github.com/flinkops/flink-operator/pkg/config"
	"github.com/flinkops/flink-operator/pkg/flink"
)

// placeholderJobID stands in for the job id when a spec is only checked.
const placeholderJobID = "00000000000000000000000000000000"

// validated is a spec that passed validation, with what was derived on the way.
type validated struct {
	spec    v1beta1.FlinkDeploymentSpec
	cfg     config.Config // effective configuration (operator + spec)
	version flink.Version
}

// validate checks a spec before the operator acts on it: the rules the
// webhook applies (upstream's DefaultValidator, reference §7.2, with its
// messages) plus whatever makes pkg/cluster refuse to build the cluster. A
// spec that fails is reported and not applied; the last good deployment
// keeps running.
func (c *Controller) validate(dep *v1beta1.FlinkDeployment, spec v1beta1.FlinkDeploymentSpec, recorded *reconciledSpec) (*validated, error) {
	switch spec.Mode {
	case "", v1beta1.DeploymentModeStandalone:
	case v1beta1.DeploymentModeNative:
		return nil, errors.New("spec.mode native is not supported yet: use mode: standalone")
	default:
		return nil, fmt.Errorf("spec.mode %q: want standalone", spec.Mode)
	}
	if strings.TrimSpace(spec.Image) == "" {
		return nil, errors.New("spec.image is required")
	}
	if spec.FlinkVersion == "" {
		return nil, errors.New("spec.flinkVersion is required")
	}
	version, err := flink.ParseVersion(string(spec.FlinkVersion))
	if err != nil {
		return nil, fmt.Errorf("spec.flinkVersion: %w", err)
	}
	if version.Before(flink.MinSupportedVersion) {
		return nil, fmt.Errorf("spec.flinkVersion %s is not supported: the operator needs Flink %s or newer", spec.FlinkVersion, flink.MinSupportedVersion)
	}
	values, err := spec.FlinkConfiguration.Values()
	if err != nil {
		return nil, err
	}
	cfg, _, err := config.Effective(c.cfg, values)
	if err != nil {
		return nil, fmt.Errorf("spec.flinkConfiguration: %w", err)
	}

	if job := spec.Job; job != nil {
		switch job.State {
		case "", v1beta1.JobStateRunning, v1beta1.JobStateSuspended:
		default:
			return nil, fmt.Errorf("spec.job.state %q: want running or suspended", job.State)
		}
		mode := upgradeMode(&spec)
		switch mode {
		case v1beta1.UpgradeModeStateless, v1beta1.UpgradeModeSavepoint, v1beta1.UpgradeModeLastState:
		default:
			return nil, fmt.Errorf("spec.job.upgradeMode %q: want stateless, savepoint or last-state", job.UpgradeMode)
		}
		_, hasCheckpointDir := config.CheckpointDir(cfg)
		_, hasSavepointDir := config.SavepointDir(cfg)
		if mode != v1beta1.UpgradeModeStateless && !hasCheckpointDir {
			return nil, fmt.Errorf("Checkpoint directory[%s] must be defined for last-state and savepoint upgrade modes", config.FlinkCheckpointDir)
		}
		if !hasSavepointDir {
			var recordedJob *v1beta1.JobSpec
			if recorded != nil {
				recordedJob = recorded.Spec.Job
			}
			switch {
			case mode == v1beta1.UpgradeModeSavepoint:
				return nil, fmt.Errorf("Job could not be upgraded with savepoint while config key[%s] is not set", config.FlinkSavepointDir)
			case job.SavepointTriggerNonce != nil && (recordedJob == nil || !equalNonce(job.SavepointTriggerNonce, recordedJob.SavepointTriggerNonce)):
				return nil, fmt.Errorf("Savepoint could not be manually triggered for the running job while config key[%s] is not set", config.FlinkSavepointDir)
			case strings.TrimSpace(cfg[config.KeyPeriodicSavepointInterval]) != "" && strings.TrimSpace(cfg[config.KeyPeriodicSavepointInterval]) != "0":
				return nil, fmt.Errorf("Periodic savepoints cannot be enabled when config key[%s] is not set", config.FlinkSavepointDir)
			}
		}
		if recorded != nil && recorded.Spec.Job != nil {
			old := recorded.Spec.Job
			if job.SavepointRedeployNonce != nil && !equalNonce(job.SavepointRedeployNonce, old.SavepointRedeployNonce) &&
				strings.TrimSpace(job.InitialSavepointPath) == "" {
				return nil, errors.New("InitialSavepointPath must not be empty for savepoint redeployment")
			}
			if old.State == v1beta1.JobStateSuspended && upgradeMode(&recorded.Spec) == v1beta1.UpgradeModeLastState &&
				recorded.Spec.FlinkVersion != spec.FlinkVersion {
				return nil, errors.New("Changing flinkVersion after last-state suspend is not allowed. Restore your cluster with the current flinkVersion and perform the version upgrade afterwards.")
			}
		}
	}
	// Whatever the builders refuse (bad ports, memory, pod template, ...).
	if _, err := cluster.Build(cluster.Input{Deployment: dep, Spec: spec, OperatorConfig: c.cfg, JobID: placeholderJobID}); err != nil {
		return nil, err
	}
	return &validated{spec: spec, cfg: cfg, version: version}, nil
}

// effectiveConfig is the configuration of a spec that was validated once
// (a recorded one); it cannot fail unless the operator config changed.
func (c *Controller) effectiveConfig(spec *v1beta1.FlinkDeploymentSpec) (config.Config, error) {
	values, err := spec.FlinkConfiguration.Values()
	if err != nil {
		return nil, err
	}
	cfg, _, err := config.Effective(c.cfg, values)
	return cfg, err
}
