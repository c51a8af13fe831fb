package deployment

// What the engine may do with an application or session cluster's job
// (jobengine.Driver's capabilities; the health check is in health.go).

// InPlaceScaling: an application cluster runs its recorded configuration,
// so the engine may rescale its job in place (jobengine/scale.go) when
// that configuration names the adaptive scheduler. In standalone mode the
// TaskManager Deployment keeps its pods: its config hash leaves the
// parallelism overrides out (pkg/cluster/scalehash.go).
func (k deploymentJob) InPlaceScaling() bool { return true }

// RollbackSupported: a FlinkDeployment whose deployed spec does not become
// stable in time is rolled back (kubernetes.operator.deployment.rollback.enabled;
// jobengine/rollback.go), as upstream.
func (k deploymentJob) RollbackSupported() bool { return true }
