package fakejm

import (
	"time"

	"github.com/flinkops/flink-operator/pkg/flink"
)

// Checkpoint statistics as Flink's CheckpointStatsTracker keeps them:
// checkpoints and savepoints share one id counter, every attempt enters the
// bounded history as IN_PROGRESS and is later replaced by its completed or
// failed form, and "latest" keeps the newest completed checkpoint,
// savepoint and failure separately.

type checkpointStat struct {
	id               int64
	status           flink.CheckpointStatsStatus
	isSavepoint      bool
	savepointFormat  string
	checkpointType   string // CHECKPOINT, SAVEPOINT, SYNC_SAVEPOINT
	triggerTimestamp int64
	ackTimestamp     int64
	stateSize        int64
	numSubtasks      int
	externalPath     string
	discarded        bool
	failureTimestamp int64
	failureMessage   string
}

type checkpointCounts struct {
	restored, total, inProgress, completed, failed int64
}

type restoredStat struct {
	id               int64
	restoreTimestamp int64
	isSavepoint      bool
	externalPath     string
}

// beginCheckpoint allocates the next id and records an in-progress entry.
func (s *Server) beginCheckpoint(j *job, checkpointType, savepointFormat string) *checkpointStat {
	st := &checkpointStat{
		id:               j.nextCheckpointID,
		status:           flink.CheckpointStatsInProgress,
		isSavepoint:      checkpointType != "CHECKPOINT",
		checkpointType:   checkpointType,
		triggerTimestamp: s.now().UnixMilli(),
		numSubtasks:      j.numTasks(),
	}
	if st.isSavepoint {
		st.savepointFormat = savepointFormat
		if st.savepointFormat == "" {
			st.savepointFormat = "CANONICAL"
		}
	}
	j.nextCheckpointID++
	j.counts.total++
	j.counts.inProgress++
	j.history = append([]*checkpointStat{st}, j.history...)
	if len(j.history) > s.opts.CheckpointHistorySize {
		j.history = j.history[:s.opts.CheckpointHistorySize]
	}
	return st
}

// completeCheckpoint marks st completed at path.
func (s *Server) completeCheckpoint(j *job, st *checkpointStat, path string) {
	if st.status != flink.CheckpointStatsInProgress {
		return
	}
	st.status = flink.CheckpointStatsCompleted
	st.ackTimestamp = s.now().UnixMilli()
	st.stateSize = 1024 * st.id
	st.externalPath = path
	j.counts.inProgress--
	j.counts.completed++
	if st.isSavepoint {
		if j.latestSavepoint == nil || st.id > j.latestSavepoint.id {
			j.latestSavepoint = st
		}
	} else if j.latestCompleted == nil || st.id > j.latestCompleted.id {
		j.latestCompleted = st
	}
}

// failCheckpoint marks st failed with msg.
func (s *Server) failCheckpoint(j *job, st *checkpointStat, msg string) {
	if st.status != flink.CheckpointStatsInProgress {
		return
	}
	st.status = flink.CheckpointStatsFailed
	st.failureTimestamp = s.now().UnixMilli()
	st.failureMessage = msg
	j.counts.inProgress--
	j.counts.failed++
	if j.latestFailed == nil || st.id > j.latestFailed.id {
		j.latestFailed = st
	}
}

// markDiscarded flags every statistics entry at path as discarded, as
// Flink does when a retained snapshot is deleted.
func markDiscarded(j *job, path string) {
	for _, st := range j.history {
		if st.externalPath == path {
			st.discarded = true
		}
	}
	for _, st := range []*checkpointStat{j.latestCompleted, j.latestSavepoint} {
		if st != nil && st.externalPath == path {
			st.discarded = true
		}
	}
}

// statsSnapshot is the statistics as rendered at one moment; the rendered
// maps are never changed afterwards, so a cached snapshot stays as it was.
type statsSnapshot struct {
	at      time.Time
	stats   map[string]any           // GET /jobs/:id/checkpoints
	details map[int64]map[string]any // GET /jobs/:id/checkpoints/details/:id
}

// checkpointStats is what the statistics endpoints answer: the live
// statistics, or with a cache timeout (SetCheckpointStatsCache) the copy
// taken by the first read after the previous copy expired, as Flink's REST
// handlers cache them per job (rest.cache.checkpoint-statistics.timeout,
// default web.refresh-interval, 3 s). A checkpoint that completed since is
// still IN_PROGRESS there, or missing if it began after the copy.
func (s *Server) checkpointStats(j *job) *statsSnapshot {
	now := s.now()
	if c := s.statsCache[j.id]; c != nil && now.Sub(c.at) < s.statsCacheTTL {
		return c
	}
	snap := &statsSnapshot{at: now, stats: j.statsJSON(), details: make(map[int64]map[string]any, len(j.history))}
	for _, st := range j.history {
		snap.details[st.id] = st.json()
	}
	s.statsCache[j.id] = snap
	return snap
}

// className is the Jackson type discriminator of a statistics entry.
func (st *checkpointStat) className() string {
	switch st.status {
	case flink.CheckpointStatsCompleted:
		return "completed"
	case flink.CheckpointStatsFailed:
		return "failed"
	}
	return "in_progress"
}

// json renders st as Flink's CheckpointStatistics subtype.
func (st *checkpointStat) json() map[string]any {
	m := map[string]any{
		"className":                 st.className(),
		"id":                        st.id,
		"status":                    string(st.status),
		"is_savepoint":              st.isSavepoint,
		"trigger_timestamp":         st.triggerTimestamp,
		"latest_ack_timestamp":      st.ackTimestamp,
		"checkpointed_size":         st.stateSize,
		"state_size":                st.stateSize,
		"end_to_end_duration":       max(st.ackTimestamp-st.triggerTimestamp, 0),
		"alignment_buffered":        0,
		"processed_data":            0,
		"persisted_data":            0,
		"num_subtasks":              st.numSubtasks,
		"num_acknowledged_subtasks": 0,
		"checkpoint_type":           st.checkpointType,
		"tasks":                     map[string]any{},
	}
	if st.savepointFormat != "" {
		m["savepointFormat"] = st.savepointFormat
	}
	switch st.status {
	case flink.CheckpointStatsCompleted:
		m["num_acknowledged_subtasks"] = st.numSubtasks
		m["external_path"] = st.externalPath
		m["discarded"] = st.discarded
	case flink.CheckpointStatsFailed:
		m["failure_timestamp"] = st.failureTimestamp
		m["failure_message"] = st.failureMessage
	}
	return m
}

func (r *restoredStat) json() map[string]any {
	return map[string]any{
		"id":                r.id,
		"restore_timestamp": r.restoreTimestamp,
		"is_savepoint":      r.isSavepoint,
		"external_path":     r.externalPath,
	}
}

// statsJSON renders GET /jobs/:id/checkpoints.
func (j *job) statsJSON() map[string]any {
	latest := map[string]any{"completed": nil, "savepoint": nil, "failed": nil, "restored": nil}
	if j.latestCompleted != nil {
		latest["completed"] = j.latestCompleted.json()
	}
	if j.latestSavepoint != nil {
		latest["savepoint"] = j.latestSavepoint.json()
	}
	if j.latestFailed != nil {
		latest["failed"] = j.latestFailed.json()
	}
	if j.restored != nil {
		latest["restored"] = j.restored.json()
	}
	history := make([]any, 0, len(j.history))
	for _, st := range j.history {
		history = append(history, st.json())
	}
	summary := map[string]any{}
	for _, k := range []string{"checkpointed_size", "state_size", "end_to_end_duration", "alignment_buffered", "processed_data", "persisted_data"} {
		summary[k] = map[string]any{"min": 0, "max": 0, "avg": 0, "p50": 0.0, "p90": 0.0, "p95": 0.0, "p99": 0.0, "p999": 0.0}
	}
	return map[string]any{
		"counts": map[string]any{
			"restored":    j.counts.restored,
			"total":       j.counts.total,
			"in_progress": j.counts.inProgress,
			"completed":   j.counts.completed,
			"failed":      j.counts.failed,
		},
		"summary": summary,
		"latest":  latest,
		"history": history,
	}
}
