package sessionjob

import (
	"context"
	"strconv"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/flink"
	"github.com/flinkops/flink-operator/pkg/lifecycle"
)

// observe reads the session cluster's jobs overview when the cluster is
// ready, finds the job the status names (sc.job), and records its state
// unless the log says the job was stopped or suspended.
func (c *Controller) observe(ctx context.Context, sc *syncState) error {
	if !sc.clusterReady() {
		return nil
	}
	client, err := c.flinkClient(sc)
	if err != nil {
		sc.log.V(2).Info("Cannot reach the session JobManager", "err", err)
		return nil
	}
	jobs, err := client.JobsOverview(ctx)
	if err != nil {
		sc.log.V(2).Info("Session JobManager REST API not answering", "err", err)
		sc.after(sc.progressInterval())
		return nil
	}
	sc.client, sc.jobs = client, true
	js := &sc.sj.Status.JobStatus
	for i := range jobs {
		if js.JobID != "" && jobs[i].ID == js.JobID {
			sc.job = &jobs[i]
		}
	}
	if sc.jobObservable() {
		c.observeJob(ctx, sc)
	}
	return nil
}

// jobObservable says whether the job's state should be read from Flink:
// not while the log says the job was stopped for an upgrade or is
// suspended (jobStatus.state is then the operator's SUSPENDED marker).
func (sc *syncState) jobObservable() bool {
	st := &sc.sj.Status
	if sc.recorded == nil || st.JobStatus.JobID == "" {
		return false
	}
	if st.ReconciliationStatus.State == v1beta1.ReconciliationUpgrading {
		return st.JobStatus.State != v1beta1.JobStatusSuspended
	}
	return !jobSuspended(&sc.recorded.Spec)
}

// observeJob updates jobStatus from the jobs overview. A RUNNING job whose
// tasks are not all running counts as CREATED (upstream's rule). When the
// job ends, its newest checkpoint or savepoint is recorded in
// upgradeSavepointPath in the same write, so an upgrade restarts it from
// its last state.
func (c *Controller) observeJob(ctx context.Context, sc *syncState) {
	js := &sc.sj.Status.JobStatus
	if sc.job == nil {
		return // not submitted yet, or lost: reconcile decides
	}
	state := effectiveState(sc.job)
	js.JobName = sc.job.Name
	if sc.job.StartTime > 0 {
		js.StartTime = strconv.FormatInt(sc.job.StartTime, 10)
	}
	if state == js.State {
		return
	}
	if state.IsGloballyTerminal() && !js.State.IsGloballyTerminal() {
		path, err := c.latestState(ctx, sc)
		switch {
		case err != nil && flink.IsRetryable(err):
			sc.log.Info("Job ended but its checkpoints cannot be read yet", "state", state, "err", err)
			sc.after(sc.progressInterval())
			return
		case err != nil:
			sc.fail(ReasonUpgradeFailed, "Job %s is %s and its last state cannot be used: %v", js.JobID, state, err)
		case path != js.UpgradeSavepointPath:
			sc.log.Info("Recorded the last state of the ended job", "state", state, "path", path)
			js.UpgradeSavepointPath = path
		}
	}
	typ := "Normal"
	if state == v1beta1.JobStatusFailed {
		typ = "Warning"
	}
	sc.event(typ, ReasonJobStatusChanged, "Job status changed from %s to %s", stateOrNew(string(js.State)), state)
	js.State = state
	js.UpdateTime = strconv.FormatInt(sc.now.UnixMilli(), 10)
	if !state.IsGloballyTerminal() && state != v1beta1.JobStatusRunning {
		sc.after(sc.progressInterval())
	}
}

func effectiveState(j *flink.JobOverview) v1beta1.JobStatusState { return lifecycle.EffectiveState(j) }

// latestState is the state to restart the job from: the newest restorable
// checkpoint or savepoint Flink reports for it, else what the job started
// from (upgradeSavepointPath, "" for empty state). Only call it when the job
// cannot take another checkpoint, or as a best-effort early record.
func (c *Controller) latestState(ctx context.Context, sc *syncState) (string, error) {
	js := &sc.sj.Status.JobStatus
	stats, err := sc.client.Checkpoints(ctx, js.JobID)
	switch {
	case flink.IsNotFound(err): // checkpointing disabled
		return js.UpgradeSavepointPath, nil
	case err != nil:
		return "", err
	}
	return lifecycle.LatestStatePath(stats, js.UpgradeSavepointPath)
}
