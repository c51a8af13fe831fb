package controllerctx

import (
	"sync/atomic"

	"github.com/flinkops/flink-operator/pkg/config"
)

// LiveConfig holds the operator configuration in use while the operator
// runs: a whole snapshot, swapped at once when the operator's config file
// changes (kubernetes.operator.dynamic.config.enabled; pkg/operator's
// dynamicconfig.go). A snapshot is never changed after Store, so a sync
// that took one reads consistent values from it.
type LiveConfig struct {
	v atomic.Pointer[config.Config]
}

// NewLiveConfig starts with cfg.
func NewLiveConfig(cfg config.Config) *LiveConfig {
	l := &LiveConfig{}
	l.Store(cfg)
	return l
}

// Load returns the configuration in use; callers must not change it.
func (l *LiveConfig) Load() config.Config {
	return *l.v.Load()
}

// Store makes cfg the configuration in use; the caller gives it up.
func (l *LiveConfig) Store(cfg config.Config) {
	l.v.Store(&cfg)
}
