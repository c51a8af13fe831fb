// checkStop follows a stop-with-savepoint the operator recorded before
// sending it (trigger id in status): ask Flink by trigger id, and when Flink
// has forgotten it (rest.async.store-duration, a JobManager restart) or
// never saw it (a crash right after the intent was written), find the
// savepoint in the job's checkpoint history or tell the caller to send the
// same id again. It makes the REST calls but writes nothing: the caller
// records the outcome.

package jobengine

import (
	"context"
	"fmt"
	"time"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/config"
	"github.com/flinkops/flink-operator/pkg/flink"
	"github.com/flinkops/flink-operator/pkg/lifecycle"
	"github.com/flinkops/flink-operator/pkg/snapshotrules"
)

// StopQuery describes the stop in flight and what is known of its job.
type StopQuery struct {
	// Client reaches the JobManager; nil when it cannot be asked.
	Client *flink.Client
	// JobID and TriggerID identify the stop; triggered is when it was
	// recorded.
	JobID, TriggerID string
	triggered, Now   time.Time
	// Timeout bounds the whole stop (the job's checkpoint timeout).
	Timeout time.Duration
	// Recorded is the path of the UPGRADE snapshot already recorded for this
	// stop ("" if none): a crash may have come between that record and the
	// status write.
	Recorded string
	// JobState is the job's state as just observed ("" when unknown).
	JobState v1beta1.JobStatusState
}

// StopOutcome is what became of the stop.
type StopOutcome struct {
	// Pending: look again after pollAfter.
	Pending   bool
	pollAfter time.Duration
	// resend: Flink does not know the trigger id and the job still runs, so
	// no stop can have completed: send the same stop (same id) again.
	resend bool
	// Path is the savepoint of a successful stop.
	Path string
	// Failure says why the stop failed (including a timeout).
	Failure string
	// lost: the job FINISHED after the stop but its savepoint's path is
	// unknown (manual restore).
	lost bool
}

// Check asks Flink about the stop in flight.
func checkStop(ctx context.Context, q StopQuery) StopOutcome {
	elapsed := q.Now.Sub(q.triggered)
	pending := func() StopOutcome {
		if elapsed > q.Timeout {
			return StopOutcome{Failure: fmt.Sprintf("Timed out stopping the job %s with savepoint, please configure a larger timeout via '%s'",
				q.JobID, config.FlinkCheckpointTimeout)}
		}
		return StopOutcome{Pending: true, pollAfter: snapshotrules.PollDelay(elapsed)}
	}
	if q.Recorded != "" && q.Client == nil {
		return StopOutcome{Path: q.Recorded}
	}
	if q.Client == nil {
		return pending()
	}
	res, err := q.Client.SavepointStatus(ctx, q.JobID, q.TriggerID)
	if flink.IsNotFound(err) {
		return recoverStop(ctx, q, pending)
	}
	switch {
	case err != nil && flink.IsRetryable(err), err == nil && res.Pending():
		return pending()
	case err != nil:
		return StopOutcome{Failure: fmt.Sprintf("Stop-with-savepoint of job %s failed: %v", q.JobID, err)}
	case res.Failed():
		msg := "unknown cause"
		if res.Failure != nil {
			msg = res.Failure.Message()
		}
		return StopOutcome{Failure: fmt.Sprintf("Stop-with-savepoint of job %s failed: %s", q.JobID, msg)}
	}
	return StopOutcome{Path: res.Value}
}

// recover handles a trigger id Flink does not know: the savepoint may be
// recorded already, or be in the job's checkpoint history. Otherwise, while
// the job still runs, no stop can have completed (a completed
// stop-with-savepoint ends the job), so the same id is sent again, still
// bounded by the timeout. A job that FINISHED without a trace of its
// savepoint is the one case where the state to restart from is unknown.
func recoverStop(ctx context.Context, q StopQuery, pending func() StopOutcome) StopOutcome {
	if q.Recorded != "" {
		return StopOutcome{Path: q.Recorded}
	}
	stats, err := q.Client.Checkpoints(ctx, q.JobID)
	switch {
	case err != nil && flink.IsRetryable(err):
		return pending()
	case err != nil && !flink.IsNotFound(err):
		return StopOutcome{Failure: fmt.Sprintf("Stop-with-savepoint of job %s failed: %v", q.JobID, err)}
	}
	if path, found := lifecycle.SavepointSince(stats, q.triggered); found {
		if path == "" {
			return pending()
		}
		return StopOutcome{Path: path}
	}
	switch q.JobState {
	case v1beta1.JobStatusRunning:
		out := pending()
		out.resend = out.Pending
		return out
	case v1beta1.JobStatusFinished:
		return StopOutcome{lost: true}
	}
	return StopOutcome{Failure: fmt.Sprintf("Stop-with-savepoint of job %s failed: Flink does not know trigger id %s (results are forgotten after %s and on JobManager restart) and no savepoint taken after it is in the job's checkpoint history",
		q.JobID, q.TriggerID, config.FlinkRestAsyncStoreDuration)}
}
