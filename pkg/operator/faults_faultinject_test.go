//go:build faultinject

package operator

import "testing"

// go test -tags faultinject ./pkg/operator: the fault-injection build arms
// the snapshot hook for FaultExitAfterSnapshotIntent only (the hook is not
// called: it would kill the test).
func TestFaultInjectBuildInstallsFault(t *testing.T) {
	if FaultEnv != faultEnvName {
		t.Fatalf("FaultEnv %q, the tests use %q", FaultEnv, faultEnvName)
	}
	if installed, err := afterIntentInstalled(t, FaultExitAfterSnapshotIntent); err != nil || !installed {
		t.Errorf("%s=%s: installed %v, err %v; want the hook", FaultEnv, FaultExitAfterSnapshotIntent, installed, err)
	}
	if installed, err := afterIntentInstalled(t, ""); err != nil || installed {
		t.Errorf("%s unset: installed %v, err %v; want no hook", FaultEnv, installed, err)
	}
	// The autoscaler's fault point is the job controllers' (FaultPoint),
	// not the snapshot controller's.
	if installed, err := afterIntentInstalled(t, FaultExitAfterAutoscalerDecision); err != nil || installed {
		t.Errorf("%s=%s: snapshot hook installed %v, err %v; want none and no error", FaultEnv, FaultExitAfterAutoscalerDecision, installed, err)
	}
	if _, err := afterIntentInstalled(t, "nonsense"); err == nil {
		t.Errorf("%s=nonsense accepted", FaultEnv)
	}
}
