package fakejm

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/flinkops/flink-operator/pkg/flink"
)

// The job model: a job has a state machine (CREATED → RUNNING →
// FINISHED/FAILED/CANCELED), a checkpoint history and an exception
// history. Tests drive it through the exported methods; REST calls drive
// it through the handlers. All methods expect s.mu to be held unless they
// are exported.

// JobSpec describes a job added with AddJob.
type JobSpec struct {
	// ID is the job id; empty means a random one.
	ID string
	// Name defaults to "fake-job-<first 6 chars of id>".
	Name string
	// State defaults to RUNNING.
	State flink.JobStatus
	// Parallelism of each of the job's two vertices. Default 1.
	Parallelism int
	// CheckpointingDisabled makes the checkpoint endpoints answer 404 as
	// for a job without execution.checkpointing.interval.
	CheckpointingDisabled bool
	// RestoredFrom is the savepoint or checkpoint the job was started from;
	// it shows up as latest.restored in the checkpoint statistics.
	RestoredFrom string
	// CheckpointRetention is the job's
	// execution.checkpointing.externalized-checkpoint-retention; ""
	// means Options.CheckpointRetention.
	CheckpointRetention string
}

// RetainOnCancellation is the checkpoint retention that keeps a job's
// checkpoints when it is cancelled.
const RetainOnCancellation = "RETAIN_ON_CANCELLATION"

type job struct {
	id, name      string
	state         flink.JobStatus
	parallelism   int
	startTime     time.Time
	endTime       time.Time
	timestamps    map[flink.JobStatus]int64
	runAt         time.Time // when a CREATED job turns RUNNING by itself; zero: never
	taskOverride  map[flink.ExecutionState]int
	checkpointing bool
	retention     string // execution.checkpointing.externalized-checkpoint-retention
	jarID         string

	nextCheckpointID int64
	history          []*checkpointStat // newest first, bounded
	counts           checkpointCounts
	latestCompleted  *checkpointStat
	latestSavepoint  *checkpointStat
	latestFailed     *checkpointStat
	restored         *restoredStat

	exceptions []exceptionEntry // newest first

	restarts int64 // the numRestarts metric (handlers_metrics.go)

	// requirements set by PUT /jobs/{jobid}/resource-requirements
	// (handlers_resources.go); nil: the defaults.
	requirements flink.ResourceRequirements

	// graph is the job graph (graph.go): set by SetJobGraph, else the
	// default two vertices, built on first use.
	graph *graphModel
}

type exceptionEntry struct {
	name, stacktrace, taskName string
	timestamp                  int64
}

// vertexNames are the default vertices (graph.go): a source and a sink.
var vertexNames = []string{"Source: fake-source", "Sink: fake-sink"}

func (j *job) numTasks() int { return j.totalTasks() }

// setState moves the job and records the transition time.
func (s *Server) setState(j *job, st flink.JobStatus) {
	now := s.now()
	j.state = st
	j.timestamps[st] = now.UnixMilli()
	if st.IsGloballyTerminal() || st == flink.JobSuspended {
		j.endTime = now
	} else {
		j.endTime = time.Time{}
	}
	if st != flink.JobCreated {
		j.runAt = time.Time{}
	}
}

// newJob registers a job; the caller holds s.mu.
func (s *Server) newJob(spec JobSpec) (*job, error) {
	id := spec.ID
	if id == "" {
		id = flink.NewID()
	}
	if !flink.IsValidID(id) {
		return nil, fmt.Errorf("fakejm: invalid job id %q", id)
	}
	if _, dup := s.jobs[id]; dup {
		return nil, fmt.Errorf("fakejm: job %s already exists", id)
	}
	j := &job{
		id:               id,
		name:             spec.Name,
		parallelism:      spec.Parallelism,
		startTime:        s.now(),
		timestamps:       map[flink.JobStatus]int64{},
		checkpointing:    !spec.CheckpointingDisabled,
		retention:        strings.ToUpper(strings.TrimSpace(spec.CheckpointRetention)),
		nextCheckpointID: 1,
	}
	if j.name == "" {
		j.name = "fake-job-" + id[:6]
	}
	if j.retention == "" {
		j.retention = strings.ToUpper(s.opts.CheckpointRetention)
	}
	if j.parallelism <= 0 {
		j.parallelism = 1
	}
	s.jobs[id] = j
	s.jobOrder = append(s.jobOrder, id)
	s.setState(j, flink.JobCreated)
	if spec.RestoredFrom != "" {
		if err := s.restoreFrom(j, spec.RestoredFrom); err != nil {
			s.failJob(j, "org.apache.flink.runtime.client.JobInitializationException",
				"Could not start the JobMaster.\nCaused by: "+err.Error())
			return j, nil
		}
	}
	return j, nil
}

// startJob makes a CREATED job RUNNING now or after Options.JobStartDelay.
func (s *Server) startJob(j *job) {
	if j.state != flink.JobCreated {
		return
	}
	if s.opts.JobStartDelay > 0 {
		j.runAt = s.now().Add(s.opts.JobStartDelay)
		return
	}
	s.setState(j, flink.JobRunning)
}

// failJob ends j as FAILED and records the exception.
func (s *Server) failJob(j *job, exceptionClass, message string) {
	s.setState(j, flink.JobFailed)
	j.exceptions = append([]exceptionEntry{{
		name:       exceptionClass,
		stacktrace: exceptionClass + ": " + message + fakeFrames,
		taskName:   vertexNames[0] + " (1/1)",
		timestamp:  s.now().UnixMilli(),
	}}, j.exceptions...)
}

// progressJobs applies time-driven transitions (delayed start).
func (s *Server) progressJobs() {
	now := s.now()
	for _, j := range s.jobs {
		if j.state == flink.JobCreated && !j.runAt.IsZero() && !now.Before(j.runAt) {
			s.setState(j, flink.JobRunning)
		}
	}
}

// taskCounts returns tasks per execution state for the job's state.
func (j *job) taskCounts() map[flink.ExecutionState]int {
	if j.taskOverride != nil {
		return j.taskOverride
	}
	n := j.numTasks()
	st := flink.TaskRunning
	switch j.state {
	case flink.JobCreated, flink.JobInitializing:
		st = flink.TaskCreated
	case flink.JobRestarting, flink.JobFailing:
		st = flink.TaskCanceling
	case flink.JobCancelling:
		st = flink.TaskCanceling
	case flink.JobCanceled, flink.JobSuspended:
		st = flink.TaskCanceled
	case flink.JobFailed:
		st = flink.TaskFailed
	case flink.JobFinished:
		st = flink.TaskFinished
	case flink.JobReconciling:
		st = flink.TaskReconciling
	}
	return map[flink.ExecutionState]int{st: n}
}

// sortedJobs returns jobs in creation order.
func (s *Server) sortedJobs() []*job {
	out := make([]*job, 0, len(s.jobOrder))
	for _, id := range s.jobOrder {
		if j, ok := s.jobs[id]; ok {
			out = append(out, j)
		}
	}
	return out
}

// allExecutionStates lists Flink's ExecutionState values in Flink's order.
var allExecutionStates = []flink.ExecutionState{
	flink.TaskCreated, flink.TaskScheduled, flink.TaskDeploying, flink.TaskRunning,
	flink.TaskFinished, flink.TaskCanceling, flink.TaskCanceled, flink.TaskFailed,
	flink.TaskReconciling, flink.TaskInitializing,
}

// allJobStatuses lists Flink's JobStatus values in Flink's order.
var allJobStatuses = []flink.JobStatus{
	flink.JobInitializing, flink.JobCreated, flink.JobRunning, flink.JobFailing,
	flink.JobFailed, flink.JobCancelling, flink.JobCanceled, flink.JobFinished,
	flink.JobRestarting, flink.JobSuspended, flink.JobReconciling,
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
