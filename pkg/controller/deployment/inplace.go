package deployment

// InPlaceScaling: an application cluster runs its recorded configuration,
// so the engine may rescale its job in place (jobengine/scale.go) when
// that configuration names the adaptive scheduler. In standalone mode the
// TaskManager Deployment keeps its pods: its config hash leaves the
// parallelism overrides out (pkg/cluster/scalehash.go).
func (k deploymentJob) InPlaceScaling() bool { return true }
