package sessionjob

import (
	"context"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/controller/jobengine"
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
		sc.Log().V(2).Info("Cannot reach the session JobManager", "err", err)
		return nil
	}
	jobs, err := client.JobsOverview(ctx)
	if err != nil {
		sc.Log().V(2).Info("Session JobManager REST API not answering", "err", err)
		sc.RequeueWithin(sc.ProgressInterval())
		return nil
	}
	sc.Client, sc.jobs = client, true
	js := &sc.Obj().Status.JobStatus
	for i := range jobs {
		if js.JobID != "" && jobs[i].ID == js.JobID {
			sc.Job = &jobs[i]
		}
	}
	if sc.jobObservable() {
		sc.ObserveJob(ctx)
	}
	return nil
}

// jobObservable says whether the job's state should be read from Flink:
// not while the log says the job was stopped for an upgrade or is
// suspended (jobStatus.state is then the operator's SUSPENDED marker).
func (sc *syncState) jobObservable() bool {
	st := &sc.Obj().Status
	if sc.Recorded() == nil || st.JobStatus.JobID == "" {
		return false
	}
	if st.ReconciliationStatus.State == v1beta1.ReconciliationUpgrading {
		return st.JobStatus.State != v1beta1.JobStatusSuspended
	}
	return !jobengine.JobSuspended(&sc.Recorded().Spec)
}
