package deployment

import (
	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/cluster"
	"github.com/flinkops/flink-operator/pkg/config"
	"github.com/flinkops/flink-operator/pkg/controller/jobmanager"
	"github.com/flinkops/flink-operator/pkg/flink"
	"github.com/flinkops/flink-operator/pkg/validation"
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
// webhook applies (pkg/validation: upstream's DefaultValidator, with its
// messages) plus whatever makes pkg/cluster refuse to build
// the cluster, which the webhook checks the same way. A spec that fails is
// reported and not applied; the last good deployment keeps running. The
// webhook may not have seen the spec (installed later, or failurePolicy
// bypassed), so this is the check that counts.
func (c *Controller) validate(dep *v1beta1.FlinkDeployment, spec v1beta1.FlinkDeploymentSpec, recorded *reconciledSpec) (*validated, error) {
	var last *v1beta1.FlinkDeploymentSpec
	if recorded != nil {
		last = &recorded.Spec
	}
	res, err := validation.DeploymentSpec(&spec, last, c.CurrentConfig())
	if err != nil {
		return nil, err
	}
	// Whatever the builders refuse (bad ports, memory, pod template, ...).
	if _, err := cluster.Build(cluster.Input{Deployment: dep, Spec: spec, OperatorConfig: c.CurrentConfig(), JobID: placeholderJobID, Native: cluster.NativeMode(spec.Mode)}); err != nil {
		return nil, err
	}
	return &validated{spec: spec, cfg: res.Config, version: res.Version}, nil
}

// effectiveConfig is the configuration of a spec that was validated once
// (a recorded one); it cannot fail unless the operator config changed.
func (c *Controller) effectiveConfig(spec *v1beta1.FlinkDeploymentSpec) (config.Config, error) {
	return jobmanager.EffectiveConfig(c.CurrentConfig(), spec.FlinkConfiguration)
}
