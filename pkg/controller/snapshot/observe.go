package snapshot

import (
	"context"
	"fmt"
	"time"

	"k8s.io/klog/v2"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/config"
	"github.com/flinkops/flink-operator/pkg/flink"
	"github.com/flinkops/flink-operator/pkg/snapshotrules"
)

// observe polls an IN_PROGRESS snapshot by its trigger id. deleting: the
// snapshot is being deleted and only the end of the attempt matters; a
// trigger id Flink never saw is not sent again.
func (c *Controller) observe(ctx context.Context, s *v1beta1.FlinkStateSnapshot, t *target, r request, deleting bool) (time.Duration, error) {
	now := c.Clock.Now()
	triggered, _ := snapshotrules.ParseTime(s.Status.TriggerTimestamp)
	elapsed := now.Sub(triggered)
	if !t.running() {
		return c.settleStopped(ctx, s, t, r, now), nil
	}
	timeout, err := config.SnapshotTimeout(t.cfg)
	if err != nil {
		return 0, err
	}
	if elapsed > timeout {
		return c.timedOut(ctx, s, t, r, now, timeout), nil
	}

	client, err := c.flinkClient(t)
	if err != nil {
		return 0, err
	}
	res, err := c.poll(ctx, client, s, t, r.kind)
	if flink.IsNotFound(err) {
		res, err = c.recover(ctx, client, s, t, r, triggered, elapsed, deleting)
	}
	switch {
	case err != nil && flink.IsRetryable(err):
		klog.FromContext(ctx).V(2).Info("Flink not reachable, will poll again", "err", err)
		return snapshotrules.PollDelay(elapsed), nil
	case err != nil:
		return c.fail(s, now, err.Error()), nil
	case res.failure != "":
		return c.fail(s, now, res.failure), nil
	case res.pathPending:
		klog.FromContext(ctx).V(2).Info("Checkpoint completed, waiting for its path in the job's checkpoint statistics", "checkpointId", res.checkpointID)
		return snapshotrules.PollDelay(elapsed), nil
	case res.pending:
		return snapshotrules.PollDelay(elapsed), nil
	}
	c.complete(s, res, now)
	return 0, nil
}

// timedOut ends an attempt older than the snapshot timeout. A checkpoint
// that Flink finished may be waiting only for its path to reach the job's
// checkpoint statistics, which the operator does not record between polls:
// Flink is asked once more, so that the failure names the checkpoint and
// what to change, and a path that arrived just now is not thrown away.
func (c *Controller) timedOut(ctx context.Context, s *v1beta1.FlinkStateSnapshot, t *target, r request, now time.Time, timeout time.Duration) time.Duration {
	msg := fmt.Sprintf("%s with trigger id %s did not complete within %s (%s)",
		r.kind, s.Status.TriggerID, timeout, config.KeySnapshotTimeout)
	if r.kind == savepoint {
		return c.fail(s, now, msg)
	}
	client, err := c.flinkClient(t)
	if err != nil {
		return c.fail(s, now, msg)
	}
	res, err := c.poll(ctx, client, s, t, r.kind)
	switch {
	case err == nil && res.path != "":
		c.complete(s, res, now)
		return 0
	case err == nil && res.pathPending:
		msg = pathFailure(res.checkpointID, fmt.Sprintf("it was not in the job's checkpoint statistics within %s (%s)", timeout, config.KeySnapshotTimeout))
	}
	return c.fail(s, now, msg)
}

// settleStopped ends an IN_PROGRESS snapshot whose job stopped running; it
// is not retried. The job's JobManager may still be up and Flink may have
// finished the snapshot: a savepoint that completed while its job was being
// suspended is recorded COMPLETED with its path rather than left on
// storage, named by no resource. So Flink is asked once more by trigger id
// before abandoning. When the result cannot be read, or Flink is still at
// it, the abandon message (status.error and the SnapshotAbandoned event)
// names the savepoint directory, so the files can be found.
func (c *Controller) settleStopped(ctx context.Context, s *v1beta1.FlinkStateSnapshot, t *target, r request, now time.Time) time.Duration {
	where := ""
	if r.kind == savepoint && r.dir != "" {
		where = fmt.Sprintf("; if Flink completes savepoint %s (trigger id %s), its files are in %s", s.Name, s.Status.TriggerID, r.dir)
	}
	if !t.found || t.cluster == nil {
		c.abandon(s, t, now, where)
		return 0
	}
	client, err := c.flinkClient(t)
	if err != nil {
		c.abandon(s, t, now, fmt.Sprintf("; its result could not be read (%v)%s", err, where))
		return 0
	}
	res, err := c.poll(ctx, client, s, t, r.kind)
	switch {
	case err != nil:
		c.abandon(s, t, now, fmt.Sprintf("; its result could not be read (%v)%s", err, where))
	case res.failure != "":
		c.abandon(s, t, now, "; "+res.failure)
	case res.pathPending:
		c.abandon(s, t, now, fmt.Sprintf("; checkpoint %d completed, but its path was not in the job's checkpoint statistics yet", res.checkpointID))
	case res.pending:
		c.abandon(s, t, now, "; Flink was still taking it"+where)
	default:
		klog.FromContext(ctx).Info("Snapshot completed although its job stopped", "snapshot", klog.KObj(s), "path", res.path)
		c.complete(s, res, now)
	}
	return 0
}

// pollResult is what one status poll learned. The attempt is done only
// with a path: a COMPLETED snapshot always has one.
type pollResult struct {
	pending bool
	path    string
	failure string // the attempt failed: Flink says so, or the path cannot be had
	// pathPending: Flink finished checkpoint checkpointID, but its path is
	// not in the job's checkpoint statistics yet.
	pathPending  bool
	checkpointID int64
}

// poll asks Flink, by trigger id, how s's attempt of kind k is doing.
func (c *Controller) poll(ctx context.Context, client *flink.Client, s *v1beta1.FlinkStateSnapshot, t *target, k kind) (pollResult, error) {
	if k == savepoint {
		r, err := client.SavepointStatus(ctx, t.jobStatus.JobID, s.Status.TriggerID)
		switch {
		case err != nil:
			return pollResult{}, err
		case r.Failed():
			return pollResult{failure: "savepoint failed: " + r.Failure.Message()}, nil
		case r.Pending():
			return pollResult{pending: true}, nil
		}
		return pollResult{path: r.Value}, nil
	}
	r, err := client.CheckpointStatus(ctx, t.jobStatus.JobID, s.Status.TriggerID)
	switch {
	case err != nil:
		return pollResult{}, err
	case r.Failed():
		return pollResult{failure: "checkpoint failed: " + r.Failure.Message()}, nil
	case r.Pending():
		return pollResult{pending: true}, nil
	}
	return checkpointPath(ctx, client, t.jobStatus.JobID, r.Value)
}
