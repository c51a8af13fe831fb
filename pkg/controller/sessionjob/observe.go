package sessionjob

import (
	"context"
	"strconv"

	corev1 "k8s.io/api/core/v1"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/controller/jobengine"
	"github.com/flinkops/flink-operator/pkg/flink"
	"github.com/flinkops/flink-operator/pkg/lifecycle"
)

// observe reads the session cluster's jobs overview when the cluster is
// ready, finds the job the status names (sc.Job), and records its state
// unless the log says the job was stopped or suspended.
func (c *Controller) observe(ctx context.Context, sc *syncState) error {
	if !sc.clusterReady() {
		return nil
	}
	client, err := c.flinkClient(sc)
	if err != nil {
		sc.Log.V(2).Info("Cannot reach the session JobManager", "err", err)
		return nil
	}
	jobs, err := client.JobsOverview(ctx)
	if err != nil {
		sc.Log.V(2).Info("Session JobManager REST API not answering", "err", err)
		sc.RequeueWithin(sc.ProgressInterval())
		return nil
	}
	sc.Client, sc.jobs = client, true
	js := &sc.Obj.Status.JobStatus
	for i := range jobs {
		if js.JobID != "" && jobs[i].ID == js.JobID {
			sc.Job = &jobs[i]
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
	st := &sc.Obj.Status
	if sc.recorded == nil || st.JobStatus.JobID == "" {
		return false
	}
	if st.ReconciliationStatus.State == v1beta1.ReconciliationUpgrading {
		return st.JobStatus.State != v1beta1.JobStatusSuspended
	}
	return !jobengine.JobSuspended(&sc.recorded.Spec)
}

// observeJob updates jobStatus from the jobs overview. A RUNNING job whose
// tasks are not all running counts as CREATED (upstream's rule). When the
// job ends, its newest checkpoint or savepoint is recorded in
// upgradeSavepointPath in the same write, so an upgrade restarts it from
// its last state.
func (c *Controller) observeJob(ctx context.Context, sc *syncState) {
	js := &sc.Obj.Status.JobStatus
	if sc.Job == nil {
		return // not submitted yet, or lost: reconcile decides
	}
	state := effectiveState(sc.Job)
	js.JobName = sc.Job.Name
	if sc.Job.StartTime > 0 {
		js.StartTime = strconv.FormatInt(sc.Job.StartTime, 10)
	}
	if state == js.State {
		return
	}
	if state.IsGloballyTerminal() && !js.State.IsGloballyTerminal() {
		path, err := sc.LatestState(ctx)
		switch {
		case err != nil && flink.IsRetryable(err):
			sc.Log.Info("Job ended but its checkpoints cannot be read yet", "state", state, "err", err)
			sc.RequeueWithin(sc.ProgressInterval())
			return
		case err != nil:
			sc.Fail(jobengine.ReasonUpgradeFailed, "Job %s is %s and its last state cannot be used: %v", js.JobID, state, err)
		case path != js.UpgradeSavepointPath:
			sc.Log.Info("Recorded the last state of the ended job", "state", state, "path", path)
			js.UpgradeSavepointPath = path
		}
	}
	typ := corev1.EventTypeNormal
	if state == v1beta1.JobStatusFailed {
		typ = corev1.EventTypeWarning
	}
	sc.Event(typ, jobengine.ReasonJobStatusChanged, "Job status changed from %s to %s", jobengine.StateOrNew(string(js.State)), state)
	js.State = state
	js.UpdateTime = strconv.FormatInt(sc.Now.UnixMilli(), 10)
	if !state.IsGloballyTerminal() && state != v1beta1.JobStatusRunning {
		sc.RequeueWithin(sc.ProgressInterval())
	}
}

func effectiveState(j *flink.JobOverview) v1beta1.JobStatusState { return lifecycle.EffectiveState(j) }
