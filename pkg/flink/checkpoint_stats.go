package flink

// CheckpointingStatistics is GET /jobs/:jobid/checkpoints. Flink's JSON
// uses snake_case here, unlike most other endpoints.
type CheckpointingStatistics struct {
	Counts  CheckpointCounts       `json:"counts"`
	Latest  LatestCheckpoints      `json:"latest"`
	History []CheckpointStatistics `json:"history"` // newest first, bounded by web.checkpoints.history
}

// CheckpointCounts are the job's checkpoint counters.
type CheckpointCounts struct {
	Restored   int64 `json:"restored"`
	Total      int64 `json:"total"`
	InProgress int   `json:"in_progress"`
	Completed  int64 `json:"completed"`
	Failed     int64 `json:"failed"`
}

// LatestCheckpoints holds the latest checkpoint of each kind; each may be
// nil. Completed excludes savepoints, which are reported in Savepoint.
type LatestCheckpoints struct {
	Completed *CheckpointStatistics `json:"completed"`
	Savepoint *CheckpointStatistics `json:"savepoint"`
	Failed    *CheckpointStatistics `json:"failed"`
	Restored  *RestoredCheckpoint   `json:"restored"`
}

// CheckpointStatistics is one checkpoint. Flink serialises three subtypes
// distinguished by ClassName ("completed", "failed", "in_progress"); they
// are merged into one struct whose subtype-only fields stay zero.
type CheckpointStatistics struct {
	ClassName              string                `json:"className"`
	ID                     int64                 `json:"id"`
	Status                 CheckpointStatsStatus `json:"status"`
	IsSavepoint            bool                  `json:"is_savepoint"`
	SavepointFormat        string                `json:"savepointFormat"` // 1.17+
	TriggerTimestamp       int64                 `json:"trigger_timestamp"`
	LatestAckTimestamp     int64                 `json:"latest_ack_timestamp"`
	CheckpointedSize       int64                 `json:"checkpointed_size"`
	StateSize              int64                 `json:"state_size"`
	EndToEndDuration       int64                 `json:"end_to_end_duration"`
	AlignmentBuffered      int64                 `json:"alignment_buffered"`
	ProcessedData          int64                 `json:"processed_data"`
	PersistedData          int64                 `json:"persisted_data"`
	NumSubtasks            int                   `json:"num_subtasks"`
	NumAcknowledgedSubtask int                   `json:"num_acknowledged_subtasks"`
	CheckpointType         string                `json:"checkpoint_type"` // CHECKPOINT, UNALIGNED_CHECKPOINT, SAVEPOINT, SYNC_SAVEPOINT

	// Completed checkpoints only.
	ExternalPath string `json:"external_path"`
	Discarded    bool   `json:"discarded"`

	// Failed checkpoints only.
	FailureTimestamp int64  `json:"failure_timestamp"`
	FailureMessage   string `json:"failure_message"`
}

// RestoredCheckpoint is the checkpoint or savepoint the job started from.
type RestoredCheckpoint struct {
	ID               int64  `json:"id"`
	RestoreTimestamp int64  `json:"restore_timestamp"`
	IsSavepoint      bool   `json:"is_savepoint"`
	ExternalPath     string `json:"external_path"`
}

// CheckpointConfig is GET /jobs/:jobid/checkpoints/config.
type CheckpointConfig struct {
	Mode                         string                    `json:"mode"` // EXACTLY_ONCE or AT_LEAST_ONCE
	Interval                     int64                     `json:"interval"`
	Timeout                      int64                     `json:"timeout"`
	MinPause                     int64                     `json:"min_pause"`
	MaxConcurrent                int64                     `json:"max_concurrent"`
	Externalization              ExternalizedCheckpointCfg `json:"externalization"`
	StateBackend                 string                    `json:"state_backend"`
	CheckpointStorage            string                    `json:"checkpoint_storage"`
	UnalignedCheckpoints         bool                      `json:"unaligned_checkpoints"`
	TolerableFailedCheckpoints   int                       `json:"tolerable_failed_checkpoints"`
	AlignedCheckpointTimeout     int64                     `json:"aligned_checkpoint_timeout"`
	CheckpointsAfterTasksFinish  bool                      `json:"checkpoints_after_tasks_finish"`
	StateChangelogEnabled        bool                      `json:"state_changelog_enabled"`
	ChangelogStorage             string                    `json:"changelog_storage"`
	ChangelogMaterializationIntv int64                     `json:"changelog_periodic_materialization_interval"`
}

// ExternalizedCheckpointCfg says whether checkpoints are retained.
type ExternalizedCheckpointCfg struct {
	Enabled              bool `json:"enabled"`
	DeleteOnCancellation bool `json:"delete_on_cancellation"`
}

// Snapshot is a checkpoint or savepoint that can be restored from.
type Snapshot struct {
	ID           int64
	ExternalPath string
	Timestamp    int64 // trigger time, or restore time for the restored entry
	IsSavepoint  bool
}

// LatestSnapshot returns the newest restorable snapshot the statistics
// know about, the way the Java operator's CheckpointHistoryWrapper picks
// it for last-state upgrades: the highest id among latest.completed,
// latest.savepoint and latest.restored that has an external path.
func (s *CheckpointingStatistics) LatestSnapshot() (Snapshot, bool) {
	var best Snapshot
	found := false
	consider := func(sn Snapshot) {
		if sn.ExternalPath == "" || sn.ExternalPath == NonPersistentPointer {
			return
		}
		if !found || sn.ID > best.ID {
			best, found = sn, true
		}
	}
	for _, c := range []*CheckpointStatistics{s.Latest.Completed, s.Latest.Savepoint} {
		if c != nil {
			consider(Snapshot{ID: c.ID, ExternalPath: c.ExternalPath, Timestamp: c.TriggerTimestamp, IsSavepoint: c.IsSavepoint})
		}
	}
	if r := s.Latest.Restored; r != nil {
		consider(Snapshot{ID: r.ID, ExternalPath: r.ExternalPath, Timestamp: r.RestoreTimestamp, IsSavepoint: r.IsSavepoint})
	}
	return best, found
}

// InProgress returns the newest checkpoint if it is still running.
func (s *CheckpointingStatistics) InProgress() (CheckpointStatistics, bool) {
	if len(s.History) > 0 && s.History[0].Status == CheckpointStatsInProgress {
		return s.History[0], true
	}
	return CheckpointStatistics{}, false
}

// The external_path Flink reports for a checkpoint that cannot be restored
// from: NonPersistentPointer for one not written to durable storage,
// NotAddressablePointer for one kept in the JobManager's memory
// (NonPersistentMetadataCheckpointStorageLocation, no
// execution.checkpointing.dir).
const (
	NonPersistentPointer  = "<checkpoint-without-external-pointer>"
	NotAddressablePointer = "<checkpoint-not-externally-addressable>"
)
