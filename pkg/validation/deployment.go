package validation

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/cluster"
	"github.com/flinkops/flink-operator/pkg/config"
	"github.com/flinkops/flink-operator/pkg/flink"
)

// deploymentNamePattern is upstream's: the name prefixes Kubernetes object
// names (Services, ConfigMaps) that must stay valid DNS labels.
var deploymentNamePattern = regexp.MustCompile(`^[a-z]([-a-z\d]{0,43}[a-z\d])?$`)

// DeploymentName checks a FlinkDeployment name (also a session job's
// deploymentName) with upstream's rule and message.
func DeploymentName(name string) error {
	if !deploymentNamePattern.MatchString(name) {
		return fmt.Errorf("The FlinkDeployment name: %s is invalid, must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123'), and the length must be no more than 45 characters.", name)
	}
	return nil
}

// Deployment checks a FlinkDeployment as the webhook sees it: its name, then
// DeploymentSpec against the spec the operator last reconciled (from its
// status). A lastReconciledSpec that does not decode is treated as absent:
// the controller reports it, and it must not lock the user out of fixing
// the spec.
func Deployment(dep *v1beta1.FlinkDeployment, operator config.Config) (*Result, error) {
	if err := DeploymentName(dep.Name); err != nil {
		return nil, err
	}
	last, err := LastReconciledDeploymentSpec(&dep.Status)
	if err != nil {
		last = nil
	}
	return DeploymentSpec(&dep.Spec, last, operator)
}

// DeploymentSpec checks a FlinkDeployment spec, first error wins: what the
// operator needs to deploy it (mode, image, a supported Flink version, a
// configuration that parses), upstream's rules about state
// and about changes against last, the spec the operator last reconciled
// (nil before the first deployment), then the numbers and enum-like strings
// of the JobManager and TaskManager (numbers.go). What pkg/cluster refuses
// to build (memory sizes, slots, ports) is checked by building, which
// callers do next.
func DeploymentSpec(spec, last *v1beta1.FlinkDeploymentSpec, operator config.Config) (*Result, error) {
	switch spec.Mode {
	case "", v1beta1.DeploymentModeStandalone, v1beta1.DeploymentModeNative:
		// Unset is native, as upstream (cluster.NativeMode).
	default:
		return nil, fmt.Errorf("spec.mode %q: want native or standalone", spec.Mode)
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
	cfg, warnings, err := DeploymentConfig(operator, spec)
	if err != nil {
		return nil, err
	}
	res := &Result{Config: cfg, Version: version, Warnings: warnings}

	if in := spec.Ingress; in != nil {
		// Upstream's validateIngress (the name and namespace cannot make
		// a template invalid: they are DNS labels).
		if _, _, err := cluster.IngressURL(in.Template, "name", "namespace"); err != nil {
			return nil, err
		}
	}
	if last != nil {
		switch {
		case spec.Job != nil && last.Job == nil:
			return nil, errors.New("Cannot switch from session to job cluster")
		case spec.Job == nil && last.Job != nil:
			return nil, errors.New("Cannot switch from job to session cluster")
		}
	}
	if job := spec.Job; job != nil {
		if err := jobEnums(job); err != nil {
			return nil, err
		}
		var lastJob *v1beta1.JobSpec
		if last != nil {
			lastJob = last.Job
		}
		if err := jobState(job, lastJob, cfg); err != nil {
			return nil, err
		}
		if err := jobParallelism(job, tmReplicasDecide(spec)); err != nil {
			return nil, err
		}
		// Last-state keeps the job's state in checkpoints of the old version,
		// which a new Flink version may not read; upstream refuses the change
		// unless the new spec gives up state (stateless).
		if lastJob != nil && lastJob.State == v1beta1.JobStateSuspended && UpgradeMode(lastJob) == v1beta1.UpgradeModeLastState &&
			UpgradeMode(job) != v1beta1.UpgradeModeStateless && last.FlinkVersion != spec.FlinkVersion {
			return nil, errors.New("Changing flinkVersion after last-state suspend is not allowed. Restore your cluster with the current flinkVersion and perform the version upgrade afterwards.")
		}
	}
	// After the job's rules, as upstream orders them.
	if err := components(spec, cfg); err != nil {
		return nil, err
	}
	return res, nil
}
