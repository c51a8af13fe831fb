package lifecycle

import (
	"strings"
	"testing"
	"time"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/flink"
)

func TestState(t *testing.T) {
	deployed := v1beta1.ReconciliationStatus{State: v1beta1.ReconciliationDeployed, LastReconciledSpec: "a", LastStableSpec: "a"}
	unstable := deployed
	unstable.LastStableSpec = "b"
	upgrading := deployed
	upgrading.State = v1beta1.ReconciliationUpgrading
	rollingBack := unstable
	rollingBack.State = v1beta1.ReconciliationRollingBack
	rolledBack := unstable
	rolledBack.State = v1beta1.ReconciliationRolledBack
	for _, tc := range []struct {
		name string
		in   Observed
		want v1beta1.ResourceLifecycleState
	}{
		{"deleting wins", Observed{Deleting: true, Recorded: true, Status: upgrading}, v1beta1.LifecycleDeleting},
		{"nothing recorded", Observed{}, v1beta1.LifecycleCreated},
		{"nothing recorded, error", Observed{Error: "bad spec"}, v1beta1.LifecycleFailed},
		{"upgrading", Observed{Recorded: true, Status: upgrading}, v1beta1.LifecycleUpgrading},
		{"suspended", Observed{Recorded: true, Suspended: true, Status: deployed}, v1beta1.LifecycleSuspended},
		{"job failed", Observed{Recorded: true, Status: deployed, JobState: v1beta1.JobStatusFailed}, v1beta1.LifecycleFailed},
		{"manual restore", Observed{Recorded: true, Status: deployed, Error: "x. Manual restore required: y", ManualRestore: true, ManualRestoreFails: true}, v1beta1.LifecycleFailed},
		{"manual restore ignored", Observed{Recorded: true, Status: deployed, Error: "Manual restore required"}, v1beta1.LifecycleStable},
		{"stable", Observed{Recorded: true, Status: deployed}, v1beta1.LifecycleStable},
		{"deployed", Observed{Recorded: true, Status: unstable}, v1beta1.LifecycleDeployed},
		{"rolling back", Observed{Recorded: true, Status: rollingBack, JobState: v1beta1.JobStatusFailed}, v1beta1.LifecycleRollingBack},
		{"rolled back", Observed{Recorded: true, Status: rolledBack, JobState: v1beta1.JobStatusRunning}, v1beta1.LifecycleRolledBack},
		{"rolled back, job failed", Observed{Recorded: true, Status: rolledBack, JobState: v1beta1.JobStatusFailed}, v1beta1.LifecycleFailed},
	} {
		if got := State(tc.in); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
}

func TestReconciledRoundTripAndLegacyForm(t *testing.T) {
	spec := v1beta1.FlinkSessionJobSpec{DeploymentName: "session", Job: &v1beta1.JobSpec{JarURI: "https://x/job.jar"}}
	s, err := Encode(spec, true)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Decode[v1beta1.FlinkSessionJobSpec](s)
	if err != nil || !got.Meta.FirstDeployment || !SameSpec(got.Spec, spec) || got.Meta.APIVersion != "flink.apache.org/v1beta1" {
		t.Fatalf("round trip: %+v, %v", got, err)
	}
	legacy, err := Decode[v1beta1.FlinkSessionJobSpec](`{"apiVersion":"flink.apache.org/v1beta1","deploymentName":"session","job":{"jarURI":"https://x/job.jar"}}`)
	if err != nil || !SameSpec(legacy.Spec, spec) || legacy.Meta.FirstDeployment {
		t.Fatalf("legacy form: %+v, %v", legacy, err)
	}
	if none, err := Decode[v1beta1.FlinkSessionJobSpec](""); none != nil || err != nil {
		t.Errorf("empty: %v, %v", none, err)
	}
}

func TestNewJobIDNeverRepeats(t *testing.T) {
	a := NewJobID("", "uid", "", 1)
	if !flink.IsValidID(a) || a != NewJobID("", "uid", "", 1) {
		t.Fatalf("not a deterministic job id: %s", a)
	}
	if b := NewJobID("", "uid", a, 2); b == a || NewJobID("sessionjob/", "uid", "", 1) == a {
		t.Errorf("ids repeat: %s", b)
	}
}

func TestSavepointSince(t *testing.T) {
	trigger := time.UnixMilli(1_000_000)
	stats := &flink.CheckpointingStatistics{History: []flink.CheckpointStatistics{
		{IsSavepoint: true, TriggerTimestamp: trigger.UnixMilli() - 10_000, Status: flink.CheckpointStatsCompleted, ExternalPath: "old"},
		{IsSavepoint: false, TriggerTimestamp: trigger.UnixMilli() + 1_000, Status: flink.CheckpointStatsCompleted, ExternalPath: "chk"},
	}}
	if _, found := SavepointSince(stats, trigger); found {
		t.Error("an older savepoint or a checkpoint counted")
	}
	stats.History = append(stats.History, flink.CheckpointStatistics{IsSavepoint: true, TriggerTimestamp: trigger.UnixMilli() - 1_000, Status: flink.CheckpointStatsInProgress})
	if path, found := SavepointSince(stats, trigger); !found || path != "" {
		t.Errorf("in progress (within the clock tolerance): %q %v", path, found)
	}
	stats.Latest.Savepoint = &flink.CheckpointStatistics{IsSavepoint: true, TriggerTimestamp: trigger.UnixMilli() + 500, ExternalPath: "sp"}
	if path, found := SavepointSince(stats, trigger); !found || path != "sp" {
		t.Errorf("completed: %q %v", path, found)
	}
}

func TestLatestStatePath(t *testing.T) {
	if p, err := LatestStatePath(nil, "from"); p != "from" || err != nil {
		t.Errorf("no statistics: %q %v", p, err)
	}
	stats := &flink.CheckpointingStatistics{}
	stats.Latest.Completed = &flink.CheckpointStatistics{ID: 7, TriggerTimestamp: 5, ExternalPath: flink.NotAddressablePointer}
	if _, err := LatestStatePath(stats, "from"); err == nil || !strings.Contains(err.Error(), ManualRestore) {
		t.Errorf("not addressable: %v", err)
	}
	stats.Latest.Completed.ExternalPath = "file:/cp/chk-7"
	if p, err := LatestStatePath(stats, "from"); p != "file:/cp/chk-7" || err != nil {
		t.Errorf("latest: %q %v", p, err)
	}
}
