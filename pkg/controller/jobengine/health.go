package jobengine

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/config"
	"github.com/flinkops/flink-operator/pkg/lifecycle"
	"github.com/flinkops/flink-operator/pkg/reasons"
)

// Restarts of a deployed job with the same recorded spec, as upstream's
// reconcileOtherChanges does them: a FAILED job with
// kubernetes.operator.job.restart.failed, and (application clusters) a job
// the cluster health check found unhealthy.
//
// A restart is an upgrade to the spec already recorded, written ahead like
// every other stop: reconciliationStatus UPGRADING (lastReconciledSpec
// unchanged) together with what the stop needs, then the upgrade's steps
// (State.continueUpgrade): stop the job keeping its state, end what its
// deploy left, deploy the recorded spec from that state. A crash at any
// step continues the same restart, never from older state. The state kept
// is the latest one, never a savepoint taken of the failing job:
//
//   - stateless: empty state (nothing to stop: jobStatus SUSPENDED);
//   - last-state: the latest checkpoint (a cancel that retains it, or, with
//     Kubernetes HA, the HA metadata the new JobManager recovers from);
//   - savepoint: as last-state (the stop is recorded as a failed
//     stop-with-savepoint, whose fallback is the latest checkpoint), unless
//     kubernetes.operator.job.upgrade.last-state-fallback.enabled is false:
//     then it is stopped with a savepoint as an upgrade would be;
//   - an ended (FAILED) job: the latest checkpoint or savepoint, which
//     ObserveJob recorded in upgradeSavepointPath when it ended.

// HealthChecker is the health check of a running job that a Driver's kind
// has (an application cluster: ClusterHealthInfo in status.clusterInfo;
// Driver.HealthCheck). Unhealthy says, in the steady state, whether the
// job is to be restarted and why; it clears the check's record when so.
type HealthChecker interface {
	Unhealthy() (why string, restart bool)
}

// restartIfNeeded restarts a deployed job that failed (job.restart.failed)
// or that the driver finds unhealthy; restarted reports that the sync's
// decision is taken.
func (s *State[T, S]) restartIfNeeded(ctx context.Context, d Driver[S]) (restarted bool, err error) {
	st := s.Status()
	// ROLLED_BACK too: the stable spec it runs is restarted (restartRolledBack).
	deployed := st.Reconciliation.State == v1beta1.ReconciliationDeployed || st.Reconciliation.State == v1beta1.ReconciliationRolledBack
	if jobOf(&s.recorded.Spec) == nil || !deployed || st.Job.JobID == "" {
		return false, nil
	}
	if st.Job.State == v1beta1.JobStatusFailed {
		restart, err := s.Cfg.Bool(config.KeyJobRestartFailed)
		if err != nil || !restart {
			return false, err
		}
		from := st.Job.UpgradeSavepointPath
		if UpgradeMode(&s.recorded.Spec) == v1beta1.UpgradeModeStateless || from == "" {
			from = "empty state"
		}
		s.log.Info("Restarting the failed job", "jobId", st.Job.JobID, "restorePath", st.Job.UpgradeSavepointPath)
		return true, s.Restart(ctx, d, corev1.EventTypeNormal, reasons.ReasonSubmit,
			fmt.Sprintf("Job %s FAILED; restarting it from %s (%s)", st.Job.JobID, from, config.KeyJobRestartFailed))
	}
	hc := d.HealthCheck()
	if hc == nil || st.Job.State.IsGloballyTerminal() {
		// Terminal jobs are not restarted by the health check (upstream).
		return false, nil
	}
	why, restart := hc.Unhealthy()
	if !restart {
		return false, nil
	}
	s.log.Info("Restarting the unhealthy job", "jobId", st.Job.JobID, "reason", why)
	return true, s.Restart(ctx, d, corev1.EventTypeWarning, reasons.ReasonRestartUnhealthyJob, why)
}

// Restart records a restart of the deployed job with the recorded spec and
// takes its first steps (see above); event is emitted with the status
// write that records it.
func (s *State[T, S]) Restart(ctx context.Context, d Driver[S], typ, reason, msg string) error {
	if s.rolledBackFrom != nil {
		return s.restartRolledBack(ctx, d, typ, reason, msg) // rollback.go
	}
	st := s.Status()
	st.Reconciliation.State = v1beta1.ReconciliationUpgrading
	st.Reconciliation.ReconciliationTimestamp = s.now.UnixMilli()
	js := st.Job
	lifecycle.ClearStopTrigger(js)
	s.resetLegacyTriggers()
	switch UpgradeMode(&s.recorded.Spec) {
	case v1beta1.UpgradeModeStateless:
		js.UpgradeSavepointPath = ""
		js.State = v1beta1.JobStatusSuspended
	case v1beta1.UpgradeModeSavepoint:
		fallback, err := s.Cfg.Bool(config.KeyJobUpgradeLastStateFallbackEnabled)
		if err != nil {
			return err
		}
		if fallback && !js.State.IsGloballyTerminal() {
			// No savepoint of a failing job: its latest checkpoint.
			lifecycle.MarkFailedStop(js, s.now)
		}
	}
	s.Event(typ, reason, "%s", msg)
	return s.continueUpgrade(ctx, d)
}

// ClusterHealthInfoKey is the status.clusterInfo key of the health check's
// record (upstream: ClusterHealthInfo's class name).
const ClusterHealthInfoKey = "ClusterHealthInfo"

// ClusterHealthInfo is upstream's record of a job's health, kept as JSON in
// status.clusterInfo under ClusterHealthInfoKey with upstream's field
// names, so either operator reads the other's.
type ClusterHealthInfo struct {
	// TimeStamp (ms) of the last observation.
	TimeStamp int64 `json:"timeStamp"`
	// NumRestarts at NumRestartsEvaluationTimeStamp, the start of the
	// restart window.
	NumRestarts                    int64 `json:"numRestarts"`
	NumRestartsEvaluationTimeStamp int64 `json:"numRestartsEvaluationTimeStamp"`
	// NumCompletedCheckpoints when it last grew, at
	// NumCompletedCheckpointsIncreasedTimeStamp.
	NumCompletedCheckpoints                   int64        `json:"numCompletedCheckpoints"`
	NumCompletedCheckpointsIncreasedTimeStamp int64        `json:"numCompletedCheckpointsIncreasedTimeStamp"`
	HealthResult                              HealthResult `json:"healthResult"`
}

// HealthResult is the outcome of the last evaluation.
type HealthResult struct {
	Healthy bool   `json:"healthy"`
	Error   string `json:"error,omitempty"`
}

func (r HealthResult) join(o HealthResult) HealthResult {
	var errs []string
	for _, e := range []string{r.Error, o.Error} {
		if e != "" {
			errs = append(errs, e)
		}
	}
	return HealthResult{Healthy: r.Healthy && o.Healthy, Error: strings.Join(errs, "|")}
}

// HealthInfo reads the health record from clusterInfo (nil: none, or
// unreadable, which starts a new one).
func HealthInfo(clusterInfo map[string]string) *ClusterHealthInfo {
	raw, ok := clusterInfo[ClusterHealthInfoKey]
	if !ok {
		return nil
	}
	var h ClusterHealthInfo
	if err := json.Unmarshal([]byte(raw), &h); err != nil {
		return nil
	}
	return &h
}

// setHealthInfo writes the health record into clusterInfo.
func setHealthInfo(clusterInfo map[string]string, h *ClusterHealthInfo) {
	b, err := json.Marshal(h)
	if err != nil {
		panic(fmt.Sprintf("jobengine: encoding ClusterHealthInfo: %v", err))
	}
	clusterInfo[ClusterHealthInfoKey] = string(b)
}

// HealthObservation is what the health check reads from Flink at now:
// the job's restarts (numRestarts) and completed checkpoints
// (numberOfCompletedCheckpoints).
type HealthObservation struct {
	Now                     time.Time
	NumRestarts             int64
	NumCompletedCheckpoints int64
}

// EvaluateHealth folds an observation into the record in clusterInfo, as
// upstream's ClusterHealthEvaluator: the first observation starts the
// record (healthy); later ones count the restarts since the start of the
// restart window (scaled down when the observations are further apart than
// the window) against the threshold, and check that the completed
// checkpoints grew within the checkpoint progress window. cfg is the
// job's effective configuration.
func EvaluateHealth(cfg config.Config, clusterInfo map[string]string, obs HealthObservation) (*ClusterHealthInfo, error) {
	now := obs.Now.UnixMilli()
	last := HealthInfo(clusterInfo)
	if last == nil || now < last.TimeStamp {
		// A clock that went back (upstream: a bug) starts a new record.
		h := &ClusterHealthInfo{
			TimeStamp: now, NumRestarts: obs.NumRestarts, NumRestartsEvaluationTimeStamp: now,
			NumCompletedCheckpoints: obs.NumCompletedCheckpoints, NumCompletedCheckpointsIncreasedTimeStamp: now,
			HealthResult: HealthResult{Healthy: true},
		}
		setHealthInfo(clusterInfo, h)
		return h, nil
	}
	restarts, err := evaluateRestarts(cfg, last, obs)
	if err != nil {
		return nil, err
	}
	checkpoints, err := evaluateCheckpoints(cfg, last, obs)
	if err != nil {
		return nil, err
	}
	last.TimeStamp = now
	last.HealthResult = restarts.join(checkpoints)
	setHealthInfo(clusterInfo, last)
	return last, nil
}

func evaluateRestarts(cfg config.Config, last *ClusterHealthInfo, obs HealthObservation) (HealthResult, error) {
	now := obs.Now.UnixMilli()
	if obs.NumRestarts < last.NumRestarts {
		// A new job (its counter started again).
		last.NumRestarts, last.NumRestartsEvaluationTimeStamp = obs.NumRestarts, now
		return HealthResult{Healthy: true}, nil
	}
	window, err := cfg.Duration(config.KeyClusterHealthCheckRestartsWindow)
	if err != nil {
		return HealthResult{}, err
	}
	threshold, err := cfg.Int(config.KeyClusterHealthCheckRestartsThreshold)
	if err != nil {
		return HealthResult{}, err
	}
	diff := now - last.NumRestartsEvaluationTimeStamp
	multiplier := 1.0
	if diff > 0 && float64(window.Milliseconds())/float64(diff) < 1 {
		multiplier = float64(window.Milliseconds()) / float64(diff)
	}
	restarts := int64(float64(obs.NumRestarts-last.NumRestarts) * multiplier)
	result := HealthResult{Healthy: true}
	if restarts > int64(threshold) {
		result = HealthResult{Error: fmt.Sprintf("Restart count hit threshold: %d", threshold)}
	}
	if last.NumRestartsEvaluationTimeStamp < now-window.Milliseconds() {
		// The window moves on.
		last.NumRestarts, last.NumRestartsEvaluationTimeStamp = obs.NumRestarts, now
	}
	return result, nil
}

// Flink's checkpointing options the progress check reads.
const (
	flinkCheckpointingInterval = "execution.checkpointing.interval"
	flinkTolerableFailures     = "execution.checkpointing.tolerable-failed-checkpoints"
)

func evaluateCheckpoints(cfg config.Config, last *ClusterHealthInfo, obs HealthObservation) (HealthResult, error) {
	healthy := HealthResult{Healthy: true}
	if on, err := cfg.Bool(config.KeyClusterHealthCheckCheckpointProgressEnabled); err != nil || !on {
		return healthy, err
	}
	window, explicit, err := cfg.OptionalDuration(config.KeyClusterHealthCheckCheckpointProgressWindow)
	if err != nil {
		return healthy, err
	}
	interval := time.Duration(-1)
	if v := strings.TrimSpace(cfg[flinkCheckpointingInterval]); v != "" {
		if interval, err = config.ParseDuration(v); err != nil {
			return healthy, fmt.Errorf("%s: %w", flinkCheckpointingInterval, err)
		}
	}
	checkpointing := interval > 0
	timeout, err := cfg.Duration(config.FlinkCheckpointTimeout)
	if err != nil {
		return healthy, err
	}
	tolerable := 0
	if v := strings.TrimSpace(cfg[flinkTolerableFailures]); v != "" {
		if _, err := fmt.Sscan(v, &tolerable); err != nil {
			return healthy, fmt.Errorf("%s: %q is not an integer", flinkTolerableFailures, v)
		}
	}
	n := time.Duration(tolerable + 2)
	minWindow := max(interval*n, timeout*n)
	if !explicit && !checkpointing {
		return healthy, nil
	}
	if !explicit || window < minWindow {
		window = minWindow
	}
	now := obs.Now.UnixMilli()
	switch {
	case obs.NumCompletedCheckpoints < last.NumCompletedCheckpoints, obs.NumCompletedCheckpoints > last.NumCompletedCheckpoints:
		// A new job, or progress.
		last.NumCompletedCheckpoints, last.NumCompletedCheckpointsIncreasedTimeStamp = obs.NumCompletedCheckpoints, now
	case last.NumCompletedCheckpointsIncreasedTimeStamp+window.Milliseconds() < now:
		return HealthResult{Error: "Cluster is not able to complete checkpoints"}, nil
	}
	return healthy, nil
}
