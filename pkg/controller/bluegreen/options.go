package bluegreen

import (
	"fmt"
	"time"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/config"
	"github.com/flinkops/flink-operator/pkg/validation"
)

// The blue/green options (upstream's FlinkBlueGreenDeploymentConfigOptions),
// read from spec.configuration over the operator's configuration.
const (
	KeyAbortGracePeriod      = config.KeyBlueGreenAbortGracePeriod
	KeyRescheduleInterval    = config.KeyBlueGreenRescheduleInterval
	KeyDeploymentDeleteDelay = config.KeyBlueGreenDeploymentDeletionDelay
)

// options are one blue/green deployment's settings.
type options struct {
	// abortGrace is how long a new child may take to become ready.
	abortGrace time.Duration
	// reschedule is how often a transition in progress is looked at.
	reschedule time.Duration
	// deleteDelay is how long the old child runs on once the new one is
	// ready.
	deleteDelay time.Duration
}

// optionsOf reads bg's options: spec.configuration wins over the operator's
// configuration, which wins over upstream's defaults.
func optionsOf(op config.Config, bg *v1beta1.FlinkBlueGreenDeployment) (options, error) {
	cfg, _, err := validation.BlueGreenConfig(op, bg)
	if err != nil {
		return options{}, fmt.Errorf("spec.configuration: %w", err)
	}
	var o options
	for _, f := range []struct {
		get func(config.Config) (time.Duration, error)
		to  *time.Duration
	}{{config.BlueGreenAbortGracePeriod, &o.abortGrace}, {config.BlueGreenRescheduleInterval, &o.reschedule},
		{config.BlueGreenDeploymentDeletionDelay, &o.deleteDelay}} {
		if *f.to, err = f.get(cfg); err != nil {
			return options{}, fmt.Errorf("spec.configuration: %w", err)
		}
	}
	if o.reschedule <= 0 {
		o.reschedule = 15 * time.Second
	}
	return o, nil
}
