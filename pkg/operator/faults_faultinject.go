//go:build faultinject

package operator

import (
	"context"
	"fmt"
	"os"
	"sync"
	"syscall"

	"k8s.io/klog/v2"

	"github.com/flinkops/flink-operator/pkg/controller/autoscaling"
	"github.com/flinkops/flink-operator/pkg/controller/snapshot"
)

// This file is compiled only with -tags faultinject: the operator binary the
// e2e crash test builds (e2e/framework.Env.FaultInjectOperatorBinary). The
// default build (make build, the Dockerfile) has no fault switch at all
// (faults_default.go).

// FaultEnv names the test-only fault point of the faultinject build.
// "exit-after-snapshot-intent" kills the process (SIGKILL, like kill -9)
// right after a snapshot's IN_PROGRESS intent is written and before Flink is
// called, once per process. Any other non-empty value is an error.
const FaultEnv = "FLINKOP_TEST_FAULT"

// FaultExitAfterSnapshotIntent is the FaultEnv value that kills the process
// after a snapshot's intent write.
const FaultExitAfterSnapshotIntent = "exit-after-snapshot-intent"

// FaultExitAfterAutoscalerDecision is the FaultEnv value that kills the
// process right after a job's autoscaler decision is recorded in its
// ConfigMap and before the sync applies it (the job engine's fault point
// autoscaling.FaultDecisionRecorded), once per process.
const FaultExitAfterAutoscalerDecision = "exit-after-autoscaler-decision"

// installFaults sets the test hooks FaultEnv asks for: the snapshot
// controller's, or the job controllers' fault point function.
func installFaults(ctx context.Context, snapshotOpts *snapshot.Options, jobFault *func(key, point string)) error {
	var once sync.Once
	kill := func(msg string, kv ...any) {
		once.Do(func() {
			klog.FromContext(ctx).Info("Test fault point: killing the process "+msg, kv...)
			klog.Flush()
			_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		})
	}
	switch v := os.Getenv(FaultEnv); v {
	case "":
		return nil
	case FaultExitAfterSnapshotIntent:
		snapshotOpts.AfterIntentWritten = func(key string) {
			kill("after writing the snapshot intent", "snapshot", key)
		}
	case FaultExitAfterAutoscalerDecision:
		*jobFault = func(key, point string) {
			if point == autoscaling.FaultDecisionRecorded {
				kill("after recording the autoscaler decision", "job", key)
			}
		}
	default:
		return fmt.Errorf("unknown %s=%q (known: %q, %q)", FaultEnv, v, FaultExitAfterSnapshotIntent, FaultExitAfterAutoscalerDecision)
	}
	klog.FromContext(ctx).Info("Fault-injection build: test fault point armed", "fault", os.Getenv(FaultEnv))
	return nil
}
