package snapshot

import (
	"fmt"
	"time"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/snapshotrules"
)

// complete records a finished attempt; res.path is never empty.
func (c *Controller) complete(s *v1beta1.FlinkStateSnapshot, res pollResult, now time.Time) {
	s.Status.State = v1beta1.SnapshotCompleted
	s.Status.Path = res.path
	s.Status.Error = ""
	s.Status.ResultTimestamp = snapshotrules.FormatTime(now)
}

// fail records a failed attempt and decides between retry and FAILED.
func (c *Controller) fail(s *v1beta1.FlinkStateSnapshot, now time.Time, msg string) time.Duration {
	s.Status.Failures++
	s.Status.Error = msg
	s.Status.ResultTimestamp = snapshotrules.FormatTime(now)
	s.Status.Path = ""
	// The SavepointError/CheckpointError event is emitted by commit once
	// this failure is recorded.
	if snapshotrules.RetryAllowed(s.Status.Failures, snapshotrules.BackoffLimit(s)) {
		s.Status.State = v1beta1.SnapshotTriggerPending
		return snapshotrules.RetryDelay(s.Status.Failures)
	}
	s.Status.State = v1beta1.SnapshotFailed
	return 0
}

// abandon ends a snapshot whose job is gone or not running; it is not
// retried. detail is appended to the message. The SnapshotAbandoned event is
// emitted by commit once the state is recorded.
func (c *Controller) abandon(s *v1beta1.FlinkStateSnapshot, t *target, now time.Time, detail string) {
	what := "is not running"
	if !t.found {
		what = "was not found"
	}
	s.Status.State = v1beta1.SnapshotAbandoned
	s.Status.Path = ""
	s.Status.Error = fmt.Sprintf("Secondary resource %s for savepoint %s %s", snapshotrules.JobRefString(&t.ref), s.Name, what) + detail
	s.Status.ResultTimestamp = snapshotrules.FormatTime(now)
}
