package cluster

import (
	"maps"
	"slices"

	"github.com/flinkops/flink-operator/pkg/config"
)

// podConfigHash is the config hash the pod templates carry: that of the
// ConfigMap data, except that the parallelism overrides and the result
// stores the operator sets are left out. A change of only the overrides
// is applied to the running job in place; it updates the ConfigMap (what a
// restarted JobManager reads) but must not roll the TaskManager pods,
// which would restart the job's tasks. The result stores
// (applyResultStores) only matter to a JobManager starting, and change
// exactly when the job id does; leaving them out keeps the hash of Flink
// 2.3 clusters deployed before the operator set them, so an operator
// upgrade does not roll their TaskManagers. A standalone application's
// restore path is left out for the same reason: the JobManager's
// --fromSavepoint argument already changes with it (only the JobManager
// restarts from it), and clusters deployed before the file carried it keep
// their hash. Without any of these the hash is ConfigHash(data), so
// clusters without them keep theirs.
func (p *plan) podConfigHash(data map[string]string) (string, error) {
	conf := maps.Clone(p.conf)
	maps.DeleteFunc(conf, func(k, _ string) bool {
		return config.IsParallelismOverridesKey(k) || slices.Contains(p.resultStores, k) || (k == keyRestorePath && !p.in.Native)
	})
	if len(conf) == len(p.conf) {
		return ConfigHash(data), nil
	}
	rendered, err := RenderConfig(p.version, conf)
	if err != nil {
		return "", err
	}
	hashed := maps.Clone(data)
	hashed[p.version.ConfigFileName()] = rendered
	return ConfigHash(hashed), nil
}
