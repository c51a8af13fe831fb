package fakejm

import (
	"time"

	"github.com/flinkops/flink-operator/pkg/flink"
)

// Options configure a fake JobManager. The zero value emulates a Flink 1.20
// session cluster with one TaskManager, instant async operations and
// Flink's default 5-minute result store.
type Options struct {
	// Version is the Flink release to emulate; it decides which request
	// fields are accepted and which response fields appear. Behaviour is
	// modelled from 1.15 on (the specs checked in tests cover 1.18-2.0).
	Version flink.Version
	// StoreDuration is rest.async.store-duration: how long a completed
	// operation's result stays queryable. Default 5m.
	StoreDuration time.Duration
	// Clock drives delays and expiry. Default: the wall clock.
	Clock Clock
	// CompletionPolls makes every async operation answer IN_PROGRESS to its
	// first N status polls.
	CompletionPolls int
	// CompletionDelay makes every async operation complete only once this
	// much Clock time has passed since its trigger. Combined with
	// CompletionPolls, both conditions must hold.
	CompletionDelay time.Duration
	// SavepointDir is the cluster's default savepoint directory
	// (execution.checkpointing.savepoint-dir), used when a trigger names
	// none. Empty means triggers without a target directory get 400.
	SavepointDir string
	// CheckpointDir, when set, makes checkpoints write
	// <CheckpointDir>/<jobid>/chk-<n>/_metadata. Otherwise checkpoints get
	// synthetic paths under file:/fakejm-checkpoints that are not written.
	CheckpointDir string
	// UnaddressableCheckpoints makes periodic checkpoints report Flink's
	// placeholder instead of a path, as with the JobManager's checkpoint
	// storage (no execution.checkpointing.dir): they cannot be restored
	// from. It wins over CheckpointDir.
	UnaddressableCheckpoints bool
	// CheckpointRetention is the cluster's
	// execution.checkpointing.externalized-checkpoint-retention, for jobs
	// submitted without one: RETAIN_ON_CANCELLATION (the default here, as
	// the operator configures application clusters), DELETE_ON_CANCELLATION,
	// or NO_EXTERNALIZED_CHECKPOINTS (Flink's own default). Unless retained,
	// a cancel deletes the job's checkpoints.
	CheckpointRetention string
	// CheckpointHistorySize is web.checkpoints.history. Default 10.
	CheckpointHistorySize int
	// TaskManagers and SlotsPerTaskManager shape /overview and
	// /taskmanagers. Defaults 1 and 4.
	TaskManagers        int
	SlotsPerTaskManager int
	// JobStartDelay keeps newly submitted jobs CREATED for this much Clock
	// time before they become RUNNING. Default 0 (RUNNING at once).
	JobStartDelay time.Duration
	// DisableWebSubmit removes the /jars endpoints, as on a JobManager
	// without flink-runtime-web.
	DisableWebSubmit bool
	// MaxRequestLog bounds the request log (oldest entries are dropped).
	// Default 10000.
	MaxRequestLog int
	// Logf, when set, receives one line per request.
	Logf func(format string, args ...any)
}

func (o Options) withDefaults() Options {
	if o.Version.IsZero() {
		o.Version = flink.V1_20
	}
	if o.StoreDuration <= 0 {
		o.StoreDuration = 5 * time.Minute
	}
	if o.Clock == nil {
		o.Clock = RealClock{}
	}
	if o.CheckpointRetention == "" {
		o.CheckpointRetention = RetainOnCancellation
	}
	if o.CheckpointHistorySize <= 0 {
		o.CheckpointHistorySize = 10
	}
	if o.TaskManagers <= 0 {
		o.TaskManagers = 1
	}
	if o.SlotsPerTaskManager <= 0 {
		o.SlotsPerTaskManager = 4
	}
	if o.MaxRequestLog <= 0 {
		o.MaxRequestLog = 10000
	}
	return o
}
