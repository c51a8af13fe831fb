package fakejm

import (
	"fmt"
	"time"

	"github.com/flinkops/flink-operator/pkg/flink"
)

// Test controls: everything a test may want to do to the JobManager that a
// REST client cannot.

// AddJob adds a job as if it had been submitted; it returns the job id.
// Without spec.State the job is RUNNING. A job whose RestoredFrom snapshot
// does not exist ends FAILED, as in Flink.
func (s *Server) AddJob(spec JobSpec) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	j, err := s.newJob(spec)
	if err != nil {
		return "", err
	}
	if j.state == flink.JobCreated {
		st := spec.State
		if st == "" {
			st = flink.JobRunning
		}
		s.setState(j, st)
	}
	return j.id, nil
}

// MustAddJob is AddJob for tests; it panics on error.
func (s *Server) MustAddJob(spec JobSpec) string {
	id, err := s.AddJob(spec)
	if err != nil {
		panic(err)
	}
	return id
}

func (s *Server) job(id string) (*job, error) {
	j, found := s.jobs[id]
	if !found {
		return nil, fmt.Errorf("fakejm: no job %s", id)
	}
	return j, nil
}

// SetJobState moves a job to any state (tests may break the state machine
// on purpose, e.g. to emulate a JobManager that reports odd transitions).
func (s *Server) SetJobState(id string, st flink.JobStatus) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	j, err := s.job(id)
	if err != nil {
		return err
	}
	s.setState(j, st)
	return nil
}

// JobState returns a job's state.
func (s *Server) JobState(id string) (flink.JobStatus, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.progressJobs()
	s.progressOps()
	j, found := s.jobs[id]
	if !found {
		return "", false
	}
	return j.state, true
}

// JobIDs lists job ids in submission order.
func (s *Server) JobIDs() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, 0, len(s.jobs))
	for _, j := range s.sortedJobs() {
		out = append(out, j.id)
	}
	return out
}

// RemoveJob forgets a job entirely (as a JobManager without HA forgets
// jobs when it restarts). It reports whether the job existed.
func (s *Server) RemoveJob(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, found := s.jobs[id]; !found {
		return false
	}
	delete(s.jobs, id)
	delete(s.statsCache, id)
	for i, x := range s.jobOrder {
		if x == id {
			s.jobOrder = append(s.jobOrder[:i], s.jobOrder[i+1:]...)
			break
		}
	}
	return true
}

// SetTaskStates overrides the per-state task counts reported for a job
// (nil restores counts derived from the job state). The Java operator
// treats a RUNNING job whose tasks are not all running as still starting.
func (s *Server) SetTaskStates(id string, counts map[flink.ExecutionState]int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	j, err := s.job(id)
	if err != nil {
		return err
	}
	j.taskOverride = counts
	return nil
}

// FailJob ends a job FAILED with an exception in its exception history.
func (s *Server) FailJob(id, exceptionClass, message string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	j, err := s.job(id)
	if err != nil {
		return err
	}
	s.failJob(j, exceptionClass, message)
	return nil
}

// CompleteCheckpoint records a completed periodic checkpoint for a RUNNING
// job and returns its id and external path.
func (s *Server) CompleteCheckpoint(id string) (int64, string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	j, err := s.job(id)
	if err != nil {
		return 0, "", err
	}
	if j.state != flink.JobRunning {
		return 0, "", fmt.Errorf("fakejm: job %s is %s, not RUNNING", id, j.state)
	}
	op := &operation{rec: OperationRecord{Kind: OpCheckpoint, JobID: id}}
	op.stat = s.beginCheckpoint(j, "CHECKPOINT", "")
	s.completeSnapshotOp(op)
	if op.failure != nil {
		return 0, "", fmt.Errorf("fakejm: checkpoint failed: %s", op.failure.StackTrace)
	}
	return op.checkpointID, op.location, nil
}

// FailSavepoints makes savepoints (and stop-with-savepoint) of jobID fail
// with cause from now on; jobID "" applies to every job. An empty cause
// clears the setting for jobID.
func (s *Server) FailSavepoints(jobID, cause string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	setFailure(s.failSavepoints, jobID, cause)
}

// FailCheckpoints is FailSavepoints for manually triggered checkpoints.
func (s *Server) FailCheckpoints(jobID, cause string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	setFailure(s.failCheckpoints, jobID, cause)
}

func setFailure(m map[string]string, jobID, cause string) {
	if cause == "" {
		delete(m, jobID)
		return
	}
	m[jobID] = cause
}

// SetCompletion changes when async operations triggered from now on (and
// those still pending) complete: after polls status polls and delay of
// Clock time since their trigger.
func (s *Server) SetCompletion(polls int, delay time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.completionPolls = polls
	for _, op := range s.ops {
		if !op.done {
			op.readyAt = op.rec.Time.Add(delay)
		}
	}
	s.completionDelay = delay
}

// SetCheckpointStatsCache makes the checkpoint statistics endpoints
// (GET /jobs/:id/checkpoints and /jobs/:id/checkpoints/details/:id) answer
// from a per-job copy kept for ttl of Clock time after the read that took
// it, as Flink's rest.cache.checkpoint-statistics.timeout does: right after
// a checkpoint completes they may still show it IN_PROGRESS or not at all.
// 0 (the default) answers from the live statistics.
func (s *Server) SetCheckpointStatsCache(ttl time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.statsCacheTTL = ttl
}

// Restart emulates a JobManager restart with HA: every async operation and
// its result is forgotten (status polls give 404; pending operations never
// complete), uploaded jars and checkpoint statistics are gone, and jobs
// that were not terminal are recovered from their latest snapshot, which
// shows up as latest.restored. Jobs, faults and the request log survive.
func (s *Server) Restart() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ops = map[opKey]*operation{}
	s.jars = map[string]*jarRecord{}
	s.statsCache = map[string]*statsSnapshot{}
	for _, j := range s.jobs {
		var latest *checkpointStat
		for _, st := range []*checkpointStat{j.latestCompleted, j.latestSavepoint} {
			if st != nil && !st.discarded && (latest == nil || st.id > latest.id) {
				latest = st
			}
		}
		restored := j.restored
		j.history, j.counts = nil, checkpointCounts{}
		j.latestCompleted, j.latestSavepoint, j.latestFailed, j.restored = nil, nil, nil, nil
		if j.state.IsGloballyTerminal() {
			continue
		}
		switch {
		case latest != nil:
			j.restored = &restoredStat{id: latest.id, restoreTimestamp: s.now().UnixMilli(),
				isSavepoint: latest.isSavepoint, externalPath: latest.externalPath}
		case restored != nil:
			j.restored = restored
		}
		if j.restored != nil {
			j.counts.restored = 1
		}
		if j.state != flink.JobCreated {
			s.setState(j, flink.JobRunning)
		}
	}
}
