package deployment

import (
	"context"
	"github.com/flinkops/flink-operator/pkg/controller/autoscaling"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/cache"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/cluster"
	"github.com/flinkops/flink-operator/pkg/controller/jobengine"
	"github.com/flinkops/flink-operator/pkg/reasons"
)

// Requeue pacing. A worker never waits on Flink or on Kubernetes: it asks
// to look again later.
const (
	teardownPoll = 2 * time.Second // owned Deployments being deleted
)

// syncState is one sync of one FlinkDeployment: the engine's state
// (pkg/controller/jobengine) and what only a cluster has.
type syncState struct {
	*jobengine.State[*v1beta1.FlinkDeployment, v1beta1.FlinkDeploymentSpec]

	// Cfg (in the engine state) is the effective configuration of Recorded,
	// the spec the cluster runs (of the current spec before the first
	// deploy).
	owned ownedObjects

	// refPath is the resolved spec.job.initialStateSnapshotRef of a
	// savepointRedeployNonce change.
	refPath string

	// keepAdopted: ensureObjects keeps the running cluster, so objects
	// another operator made (ensure) are left as they are.
	keepAdopted bool
}

// Sync reconciles one FlinkDeployment: read it and its cluster from the
// caches, observe the cluster (Deployments, then Flink's REST API), decide,
// write the status at most once, then make the writes and Flink calls the
// status now announces, and say when to look again.
//
// The status is a write-ahead log: whatever is about to be torn down,
// stopped or deployed is recorded first, so a crash at any point leaves a
// status from which the next sync continues the same step.
func (c *Controller) Sync(ctx context.Context, key string) (time.Duration, error) {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return 0, err
	}
	cached, err := c.Caches.Deployment(ns, name)
	if apierrors.IsNotFound(err) {
		return 0, nil
	} else if err != nil {
		return 0, err
	}
	if cached.DeletionTimestamp != nil {
		return c.syncDeletion(ctx, key, cached)
	}
	es, err := c.engine.Start(ctx, key, cached, Finalizer)
	if err != nil {
		return 0, err
	}
	sc, err := c.newSync(es)
	if err != nil {
		return 0, err
	}
	if err := c.observe(ctx, sc); err != nil {
		return 0, err
	}
	if err := autoscaling.Sync(ctx, c.autoscaler, sc.State); err != nil {
		return 0, err
	}
	if err := sc.Reconcile(ctx, c.jobKind(sc)); err != nil {
		return 0, err
	}
	return c.commit(ctx, sc)
}

// newSync adds this controller's part to the engine's sync state.
func (c *Controller) newSync(st *jobengine.State[*v1beta1.FlinkDeployment, v1beta1.FlinkDeploymentSpec]) (*syncState, error) {
	sc := &syncState{State: st}
	var err error
	spec := &sc.Obj().Spec
	if sc.Recorded() != nil {
		s := jobengine.ConfigSpec(sc.Recorded().Spec, sc.Obj().Spec)
		spec = &s
	}
	if sc.Cfg, err = c.effectiveConfig(spec); err != nil {
		// Only the operator configuration can have changed since the spec
		// was accepted: act on the operator's values and say so.
		sc.Fail(reasons.ReasonValidationError, "spec.flinkConfiguration: %v", err)
		sc.Cfg = c.CurrentConfig()
	}
	if sc.owned, err = c.owned.objectsOf(sc.Base()); err != nil {
		return nil, err
	}
	if r := sc.Recorded(); r != nil && r.Spec.Mode == "" && sc.Obj().Spec.Mode == v1beta1.DeploymentModeStandalone && sc.owned.liveStandalone() {
		// Deployed with mode unset when that meant standalone (nativeFor),
		// now marked standalone by its user: the same cluster, no change.
		r.Spec.Mode = v1beta1.DeploymentModeStandalone
	}
	return sc, nil
}

// commit derives what the status says of the whole resource (error,
// lifecycle state, Running condition) and hands the sync to the engine,
// which writes it once.
func (c *Controller) commit(ctx context.Context, sc *syncState) (time.Duration, error) {
	sc.SetError()
	jobengine.KeepSuspendedStable(&sc.Obj().Status.ReconciliationStatus, sc.Recorded() != nil && jobengine.JobSuspended(&sc.Recorded().Spec))
	sc.Obj().Status.LifecycleState = lifecycleOf(sc.Obj(), sc.Recorded(), sc.NeedsManualRestore())
	setRunningCondition(sc)
	return c.engine.Commit(ctx, sc.State)
}

// native reports a cluster in native mode: the spec it runs (the current
// one before the first deploy), read by nativeFor.
func (sc *syncState) native() bool {
	if sc.Recorded() != nil {
		return sc.nativeFor(&sc.Recorded().Spec)
	}
	return sc.nativeFor(&sc.Obj().Spec)
}

// nativeFor says whether spec's cluster is (or is built) native: as
// spec.mode says, unset meaning native as upstream, except that with mode
// unset a live standalone cluster stays standalone until it is next
// deployed. Operator versions before native mode deployed unset as
// standalone; reading those clusters as native would make the first sync
// after an operator upgrade rebuild them (a restart no one asked for) and
// tear them down the wrong way. Their next deploy (an upgrade, a resume)
// runs after the old objects are gone, so it is native
// (docs/compatibility.md).
func (sc *syncState) nativeFor(spec *v1beta1.FlinkDeploymentSpec) bool {
	if spec.Mode == "" && sc.owned.liveStandalone() {
		return false
	}
	return cluster.NativeMode(spec.Mode)
}
