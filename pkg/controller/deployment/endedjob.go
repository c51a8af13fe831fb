package deployment

import (
	"strconv"
	"time"

	"github.com/flinkops/flink-operator/pkg/cluster"
)

// Without HA nothing of Flink's tells a restarted JobManager that its
// job has ended; its ConfigMap does (pkg/cluster endedjob.go). Each
// JobManager Deployment the operator creates for a native application
// gets a token of its own, which its guard matches.

// newDeployToken is the token of a JobManager Deployment created now for
// jobID: unique per creation, even for the same job id (a last-state
// upgrade without HA keeps it).
func newDeployToken(jobID string, now time.Time) string {
	prefix := jobID
	if len(prefix) > 8 {
		prefix = prefix[:8]
	}
	return prefix + "-" + strconv.FormatInt(now.UnixMilli(), 36)
}

// steadyTokens are the tokens of a steady sync's build: the live
// JobManager's (a new one if it is to be recreated), and, once its job has
// ended, that same token as the ConfigMap's record (none with HA, where
// Flink's job result store already says the job ended, and none for a
// JobManager built before the guard: it would not read it).
func (c *Controller) steadyTokens(sc *syncState) (token, ended string) {
	jm := sc.owned.jobManager
	if jm == nil {
		return newDeployToken(sc.Obj().Status.JobStatus.JobID, sc.Now()), ""
	}
	token = cluster.DeployTokenOf(jm)
	js := &sc.Obj().Status.JobStatus
	if token != "" && ownedBy(jm, sc.Obj()) && js.State.IsGloballyTerminal() && !haEnabled(sc.Cfg) {
		ended = token
	}
	return token, ended
}
