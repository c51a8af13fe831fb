package lifecycle

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/flink"
)

// ManualRestore marks errors after which upstream reports the resource
// FAILED: the operator will not act until a human says where to restart.
const ManualRestore = "Manual restore required"

// ErrManualRestore is wrapped by errors after which a person must say where
// the job restarts from; code branches on it with errors.Is, never on the
// text.
var ErrManualRestore = errors.New(ManualRestore)

// NewJobID derives a fresh Flink job id from a namespace of ids (the
// controller's), the resource's UID, the id it replaces and the generation
// being deployed: deterministic, and never the id it replaces. It is
// recorded in status before anything carries it; determinism is a
// convenience, the record is what makes a crash safe.
func NewJobID(scope, uid, previous string, generation int64) string {
	for salt := 0; ; salt++ {
		sum := sha256.Sum256([]byte(scope + uid + "/" + previous + "/" + strconv.FormatInt(generation, 10) + "/" + strconv.Itoa(salt)))
		if id := hex.EncodeToString(sum[:16]); id != previous {
			return id
		}
	}
}

// EffectiveState is the job state the operator reports: RUNNING only when
// every task runs, else CREATED (upstream's rule).
func EffectiveState(j *flink.JobOverview) v1beta1.JobStatusState {
	if j.State == flink.JobRunning && !j.AllTasksRunning() {
		return v1beta1.JobStatusCreated
	}
	return v1beta1.JobStatusState(j.State)
}

// notAddressable are Flink's pointers of checkpoints without external
// storage.
var notAddressable = []string{flink.NotAddressablePointer, flink.NonPersistentPointer}

// LatestStatePath is the state to restart a job from, given its checkpoint
// statistics: the newest restorable checkpoint or savepoint, else what the
// job itself started from (current; "" for empty state). A checkpoint
// without an external path is an error: the last state cannot be used.
func LatestStatePath(stats *flink.CheckpointingStatistics, current string) (string, error) {
	if stats == nil {
		return current, nil
	}
	snap, ok := stats.LatestSnapshot()
	if !ok {
		return current, nil
	}
	for _, p := range notAddressable {
		if strings.Contains(snap.ExternalPath, p) {
			return "", fmt.Errorf("latest checkpoint %d is not externally addressable: %w", snap.ID, ErrManualRestore)
		}
	}
	return snap.ExternalPath, nil
}

// HistoryTolerance allows for clock skew between operator and JobManager
// when matching a trigger against Flink's checkpoint history.
const HistoryTolerance = 2 * time.Second

// SavepointSince looks in a job's checkpoint statistics for a savepoint
// triggered at or after triggered (less HistoryTolerance): the result of a
// stop-with-savepoint whose trigger id Flink has forgotten. found with a
// path: it completed; found without: it is still in progress.
func SavepointSince(stats *flink.CheckpointingStatistics, triggered time.Time) (path string, found bool) {
	if stats == nil {
		return "", false
	}
	since := triggered.Add(-HistoryTolerance).UnixMilli()
	if sp := stats.Latest.Savepoint; sp != nil && sp.TriggerTimestamp >= since && sp.ExternalPath != "" {
		return sp.ExternalPath, true
	}
	for _, h := range stats.History {
		if !h.IsSavepoint || h.TriggerTimestamp < since {
			continue
		}
		switch h.Status {
		case flink.CheckpointStatsCompleted:
			return h.ExternalPath, true
		case flink.CheckpointStatsInProgress:
			return "", true
		}
	}
	return "", false
}
