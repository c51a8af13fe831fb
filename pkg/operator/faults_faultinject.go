//go:build faultinject

package operator

import (
	"context"
	"fmt"
	"os"
	"sync"
	"syscall"

	"k8s.io/klog/v2"

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

// installFaults sets the test hooks FaultEnv asks for.
func installFaults(ctx context.Context, snapshotOpts *snapshot.Options) error {
	switch v := os.Getenv(FaultEnv); v {
	case "":
		return nil
	case FaultExitAfterSnapshotIntent:
		var once sync.Once
		snapshotOpts.AfterIntentWritten = func(key string) {
			once.Do(func() {
				klog.FromContext(ctx).Info("Test fault point: killing the process after writing the snapshot intent", "snapshot", key)
				klog.Flush()
				_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
			})
		}
		klog.FromContext(ctx).Info("Fault-injection build: test fault point armed", "fault", v)
		return nil
	default:
		return fmt.Errorf("unknown %s=%q (known: %q)", FaultEnv, v, FaultExitAfterSnapshotIntent)
	}
}
