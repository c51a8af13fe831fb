package validation

import (
	"fmt"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/autoscaler/options"
	"github.com/flinkops/flink-operator/pkg/config"
)

// DeploymentConfig is the effective configuration of a FlinkDeployment: the
// operator's configuration with spec.flinkConfiguration on top. Warnings are
// the keys that were ignored or look like typos.
func DeploymentConfig(operator config.Config, spec *v1beta1.FlinkDeploymentSpec) (config.Config, []config.Warning, error) {
	values, err := spec.FlinkConfiguration.Values()
	if err != nil {
		return nil, nil, fmt.Errorf("spec.flinkConfiguration: %w", err)
	}
	cfg, warnings, err := config.Effective(operator, values)
	if err != nil {
		return nil, warnings, fmt.Errorf("spec.flinkConfiguration: %w", err)
	}
	if _, err := options.Parse(cfg); err != nil {
		return nil, warnings, fmt.Errorf("spec.flinkConfiguration: %w", err)
	}
	return cfg, warnings, nil
}

// SessionJobConfig is the effective configuration of a FlinkSessionJob: the
// operator's configuration, then its session cluster's flinkConfiguration
// (skipped when cluster is nil), then the job's own, which wins. Only the
// job's warnings are returned: the cluster's are reported on the cluster.
func SessionJobConfig(operator config.Config, cluster *v1beta1.FlinkDeployment, spec *v1beta1.FlinkSessionJobSpec) (config.Config, []config.Warning, error) {
	cfg := operator
	if cluster != nil {
		var err error
		if cfg, _, err = DeploymentConfig(operator, &cluster.Spec); err != nil {
			return nil, nil, fmt.Errorf("session cluster FlinkDeployment %s/%s: %w", cluster.Namespace, cluster.Name, err)
		}
	}
	values, err := spec.FlinkConfiguration.Values()
	if err != nil {
		return nil, nil, fmt.Errorf("spec.flinkConfiguration: %w", err)
	}
	out, warnings, err := config.Effective(cfg, values)
	if err != nil {
		return nil, warnings, fmt.Errorf("spec.flinkConfiguration: %w", err)
	}
	if _, err := options.Parse(out); err != nil {
		return nil, warnings, fmt.Errorf("spec.flinkConfiguration: %w", err)
	}
	return out, warnings, nil
}
