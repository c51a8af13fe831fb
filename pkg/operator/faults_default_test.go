//go:build !faultinject

package operator

import "testing"

// The operator built by default has no fault switch: whatever FLINKOP_TEST_FAULT
// says, no test hook is installed and the value is not even checked.
func TestDefaultBuildInstallsNoFault(t *testing.T) {
	for _, v := range []string{"", "exit-after-snapshot-intent", "exit-after-autoscaler-decision", "hang-after-snapshot-intent", "nonsense"} {
		installed, err := afterIntentInstalled(t, v)
		if err != nil {
			t.Fatalf("%s=%q: %v", faultEnvName, v, err)
		}
		if installed {
			t.Errorf("%s=%q: the default build installed snapshot.Options.AfterIntentWritten", faultEnvName, v)
		}
	}
}
