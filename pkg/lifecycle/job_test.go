package lifecycle

import (
	"testing"
	"time"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/flink"
)

// TestEffectiveState pins upstream's rule for the job state the operator
// reports: a RUNNING job counts as RUNNING only once every task runs (or has
// finished); any other Flink state is reported as it is.
func TestEffectiveState(t *testing.T) {
	tasks := func(total, running, finished int) map[string]int {
		return map[string]int{"total": total, "running": running, "finished": finished}
	}
	for _, tc := range []struct {
		name string
		job  flink.JobOverview
		want v1beta1.JobStatusState
	}{
		{"running, every task running", flink.JobOverview{State: flink.JobRunning, Tasks: tasks(4, 4, 0)}, v1beta1.JobStatusRunning},
		{"running, tasks running or finished", flink.JobOverview{State: flink.JobRunning, Tasks: tasks(4, 1, 3)}, v1beta1.JobStatusRunning},
		{"running, tasks still deploying", flink.JobOverview{State: flink.JobRunning, Tasks: tasks(4, 2, 0)}, v1beta1.JobStatusCreated},
		{"running, no task reported yet", flink.JobOverview{State: flink.JobRunning}, v1beta1.JobStatusCreated},
		{"failed, no task running", flink.JobOverview{State: flink.JobFailed, Tasks: tasks(4, 0, 0)}, v1beta1.JobStatusFailed},
		{"created, no task running", flink.JobOverview{State: flink.JobCreated, Tasks: tasks(4, 0, 0)}, v1beta1.JobStatusCreated},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := EffectiveState(&tc.job); got != tc.want {
				t.Errorf("EffectiveState = %s, want %s", got, tc.want)
			}
		})
	}
}

// TestSavepointSinceClockTolerance pins the window in which a savepoint in
// Flink's checkpoint history is taken for a forgotten stop-with-savepoint:
// triggered at or after the stop's trigger time less HistoryTolerance (2 s),
// not a millisecond earlier, whether Flink reports it as the latest
// savepoint or only in its history.
func TestSavepointSinceClockTolerance(t *testing.T) {
	triggered := time.UnixMilli(1_000_000)
	edge := triggered.Add(-2 * time.Second).UnixMilli()
	latest := func(ts int64, path string) *flink.CheckpointingStatistics {
		s := &flink.CheckpointingStatistics{}
		s.Latest.Savepoint = &flink.CheckpointStatistics{IsSavepoint: true, TriggerTimestamp: ts, Status: flink.CheckpointStatsCompleted, ExternalPath: path}
		return s
	}
	history := func(entries ...flink.CheckpointStatistics) *flink.CheckpointingStatistics {
		return &flink.CheckpointingStatistics{History: entries}
	}
	savepointAt := func(ts int64, status flink.CheckpointStatsStatus, path string) flink.CheckpointStatistics {
		return flink.CheckpointStatistics{IsSavepoint: true, TriggerTimestamp: ts, Status: status, ExternalPath: path}
	}
	for _, tc := range []struct {
		name      string
		stats     *flink.CheckpointingStatistics
		wantPath  string
		wantFound bool
	}{
		{"no statistics", nil, "", false},
		{"latest savepoint at the edge of the tolerance", latest(edge, "s3://sp/1"), "s3://sp/1", true},
		{"latest savepoint just before the tolerance", latest(edge-1, "s3://sp/1"), "", false},
		{"latest savepoint without a path is not a result", latest(triggered.UnixMilli(), ""), "", false},
		{"completed in history at the edge", history(savepointAt(edge, flink.CheckpointStatsCompleted, "s3://sp/2")), "s3://sp/2", true},
		{"in progress in history at the edge", history(savepointAt(edge, flink.CheckpointStatsInProgress, "")), "", true},
		{"history entry just before the tolerance", history(savepointAt(edge-1, flink.CheckpointStatsCompleted, "s3://sp/2")), "", false},
		{"a checkpoint is not a savepoint", history(flink.CheckpointStatistics{TriggerTimestamp: edge + 1, Status: flink.CheckpointStatsCompleted, ExternalPath: "s3://chk"}), "", false},
		{"a failed savepoint is skipped, an older completed one is found",
			history(savepointAt(edge+900, flink.CheckpointStatsFailed, ""), savepointAt(edge+500, flink.CheckpointStatsCompleted, "s3://sp/3")), "s3://sp/3", true},
		{"only failed savepoints", history(savepointAt(edge+900, flink.CheckpointStatsFailed, "")), "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path, found := SavepointSince(tc.stats, triggered)
			if path != tc.wantPath || found != tc.wantFound {
				t.Errorf("SavepointSince = %q, %v; want %q, %v", path, found, tc.wantPath, tc.wantFound)
			}
		})
	}
}
