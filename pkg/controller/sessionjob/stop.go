package sessionjob

import (
	"context"
	"fmt"
	"time"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/config"
	"github.com/flinkops/flink-operator/pkg/controller/jobengine"
	"github.com/flinkops/flink-operator/pkg/flink"
	"github.com/flinkops/flink-operator/pkg/lifecycle"
)

// jobKind binds the engine (its Reconcile and stop protocol) to this sync
// of a session job.
func (c *Controller) jobKind(sc *syncState) sessionJob { return sessionJob{c, sc} }

type sessionJob struct {
	c  *Controller
	sc *syncState
}

func (k sessionJob) Starting() bool   { return jobStarting(k.sc) }
func (k sessionJob) NeverRan() bool   { return neverRan(k.sc) }
func (k sessionJob) Describe() string { return describeJob(k.sc) }

// EndOnDeletion: the job is cancelled until its cluster reports it ended
// (the cluster outlives it).
func (k sessionJob) EndOnDeletion() bool              { return k.c.ensureEnded(k.sc) }
func (k sessionJob) EndOnDeletionDescription() string { return "cancelling the job instead" }

// LastStateStop: a session job is only ever ended by a cancel (its cluster
// outlives it), so a last-state stop is possible only when the running job
// retains its checkpoints on cancellation, as its own checkpoint
// configuration says. Jobs submitted by this operator are (submit.go sets
// upstream's RETAIN_ON_CANCELLATION default); one submitted before, or
// configured otherwise, would lose the checkpoint it is to restart from.
func (k sessionJob) LastStateStop(ctx context.Context) (jobengine.LastStateStop, string) {
	sc := k.sc
	if sc.Client == nil || sc.Job == nil {
		return jobengine.StopByCancel, ""
	}
	cfg, err := sc.Client.CheckpointConfig(ctx, sc.Job.ID)
	switch {
	case flink.IsNotFound(err):
		// Checkpointing is off: the job restarts from what it started from,
		// which a cancel does not touch.
		return jobengine.StopByCancel, ""
	case err != nil:
		return jobengine.NoLastStateStop, fmt.Sprintf("its checkpoint configuration could not be read (%v)", err)
	case !cfg.Externalization.Enabled || cfg.Externalization.DeleteOnCancellation:
		return jobengine.NoLastStateStop, fmt.Sprintf("a cancel would delete its checkpoints (its %s is not %s)",
			config.FlinkCheckpointRetention, config.FlinkRetainOnCancellation)
	}
	return jobengine.StopByCancel, ""
}

// Unreachable: while the session cluster cannot be asked, only a state
// recorded earlier is trusted; otherwise the stop waits for the cluster.
func (k sessionJob) Unreachable() (handled, stopped bool) {
	sc := k.sc
	if sc.jobs {
		return false, false
	}
	js := &sc.Obj().Status.JobStatus
	if js.State.IsGloballyTerminal() || neverRan(sc) {
		return true, true
	}
	sc.Log().Info("Waiting for the session cluster to stop the job", "cluster", sc.deploymentName(), "jobId", js.JobID)
	sc.RequeueWithin(sc.ProgressInterval())
	return true, false
}

// jobStarting: the job is still coming up after its submission, for at most
// kubernetes.operator.deployment.readiness.timeout after the upgrade was
// recorded; a savepoint upgrade waits for it rather than falling back.
func jobStarting(sc *syncState) bool {
	timeout, _ := sc.Cfg.Duration(config.KeyDeploymentReadinessTimeout)
	if sc.Now().Sub(time.UnixMilli(sc.Obj().Status.ReconciliationStatus.ReconciliationTimestamp)) > timeout || sc.Job == nil {
		return false
	}
	switch lifecycle.EffectiveState(sc.Job) {
	case v1beta1.JobStatusCreated, v1beta1.JobStatusInitializing, v1beta1.JobStatusReconciling, v1beta1.JobStatusRestarting:
		return true
	}
	return false
}

// neverRan: the recorded submission was never seen by the operator and
// Flink does not know it, so the job still has the state it was deployed
// from.
func neverRan(sc *syncState) bool {
	js := &sc.Obj().Status.JobStatus
	return sc.Job == nil && (js.State == v1beta1.JobStatusReconciling || js.State == "")
}

func describeJob(sc *syncState) string {
	switch {
	case !sc.jobs:
		return "unreachable (session cluster " + sc.deploymentName() + " not ready)"
	case sc.Job == nil:
		return "unknown to its JobManager"
	}
	return string(lifecycle.EffectiveState(sc.Job))
}

// ensureEnded makes sure the job the status names (already marked stopped)
// is no longer running before anything new is submitted: stateless
// upgrades, savepoint redeploys and suspends cancel it here. It reports
// whether the job has ended (or never existed).
func (c *Controller) ensureEnded(sc *syncState) bool {
	js := &sc.Obj().Status.JobStatus
	if js.JobID == "" {
		return true
	}
	if !sc.jobs {
		if sc.Base().Status.JobStatus.State.IsGloballyTerminal() || neverRan(sc) || sc.Base().Status.JobStatus.State == "" {
			return true
		}
		sc.Log().Info("Waiting for the session cluster to confirm the job ended", "cluster", sc.deploymentName(), "jobId", js.JobID)
		sc.RequeueWithin(sc.ProgressInterval())
		return false
	}
	if sc.Job == nil || lifecycle.EffectiveState(sc.Job).IsGloballyTerminal() {
		return true
	}
	sc.Cancel()
	return false
}
