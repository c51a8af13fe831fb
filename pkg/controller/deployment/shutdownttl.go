package deployment

import (
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/config"
	"github.com/flinkops/flink-operator/pkg/reasons"
)

// shutDownEnded applies kubernetes.operator.jm-deployment.shutdown-ttl
// (default 1 d) in the steady state, as upstream's ApplicationReconciler
// (cleanupTerminalJmAfterTtl): the cluster of an application whose job is
// globally terminal (FINISHED, FAILED, CANCELED) since longer than the TTL
// (counted from jobStatus.updateTime, written when the job was seen
// ending) is shut down. Its JobManager and TaskManager Deployments are
// deleted (with kubernetes.operator.resource.deletion.propagation; in
// native mode the TaskManager pods Flink created go with the JobManager's,
// shutDownCluster) and jobManagerDeploymentStatus
// becomes MISSING; everything a later upgrade, resume or restart needs
// stays: jobStatus (the terminal state, the job id, and the last
// checkpoint or savepoint recorded in upgradeSavepointPath in the same
// write that recorded the end), the HA ConfigMaps (as upstream,
// deleteHaData false), the ConfigMap and Services (the next deploy
// updates them). A FAILED job that kubernetes.operator.job.restart.failed
// restarts never gets here (the restart comes first).
//
// It reports true once the TTL has passed: Steady then neither recreates
// the TaskManager Deployment nor repairs other objects of a cluster that is
// meant to be gone. The deletes follow the status write that records
// MISSING and are idempotent (a crash repeats them). Before the TTL it
// asks to be woken when it passes.
func (c *Controller) shutDownEnded(sc *syncState) bool {
	st := &sc.Obj().Status
	js := &st.JobStatus
	if sc.Recorded() == nil || sc.Recorded().Spec.Job == nil || !js.State.IsGloballyTerminal() {
		return false
	}
	ttl, err := sc.Cfg.Duration(config.KeyJMDeploymentShutdownTTL)
	if err != nil || ttl <= 0 {
		return false
	}
	endedMs, err := strconv.ParseInt(js.UpdateTime, 10, 64)
	if err != nil {
		// When the job ended is not recorded (a status written by another
		// operator): the cluster is kept, as before this option.
		return false
	}
	due := time.UnixMilli(endedMs).Add(ttl)
	if !sc.Now().After(due) {
		sc.RequeueWithin(due.Sub(sc.Now()) + time.Second)
		return false
	}
	if jm := sc.owned.jobManager; jm != nil && jm.DeletionTimestamp == nil && ownedBy(jm, sc.Obj()) {
		restore := js.UpgradeSavepointPath
		if restore == "" {
			restore = "empty state"
		}
		sc.Log().Info("Removing the JobManager deployment of the terminal application", "jobId", js.JobID, "jobState", js.State,
			"ttl", ttl, "restorePath", js.UpgradeSavepointPath)
		sc.Event(corev1.EventTypeNormal, reasons.ReasonCleanup, "Job %s is %s since %s: shutting its cluster down (%s: %s); an upgrade restarts it from %s",
			js.JobID, js.State, time.UnixMilli(endedMs).UTC().Format(time.RFC3339), config.KeyJMDeploymentShutdownTTL, ttl, restore)
	}
	// Pods Orphan propagation leaves running are not waited for here:
	// nothing new starts, and a later upgrade or restart waits for them
	// (teardown).
	left, err := c.shutDownCluster(sc)
	if err != nil {
		sc.Log().Error(err, "Cannot list the cluster's pods")
	}
	st.JobManagerDeploymentStatus = v1beta1.JobManagerMissing
	if err != nil || left.pending() {
		sc.RequeueWithin(teardownPoll)
	} else {
		sc.RequeueWithin(sc.ReconcileInterval())
	}
	return true
}
