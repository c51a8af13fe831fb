package snapshot

import (
	"fmt"
	"path/filepath"
	"testing"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/config"
	"github.com/flinkops/flink-operator/pkg/flink/fakejm"
)

// Issue 20 item 9: the operator-wide cap
// kubernetes.operator.snapshot.max-concurrent (snapshots IN_PROGRESS across
// all jobs; unset = unlimited). Each job here has one snapshot, so the
// per-job limit (default 1) never decides; only the operator-wide one can.

// withMaxConcurrent builds the fixture's controller with the operator-wide
// cap ("" leaves it unset).
func withMaxConcurrent(t *testing.T, value string) *fixture {
	t.Helper()
	f := newFixture(t)
	if value != "" {
		f.Config[config.KeySnapshotMaxConcurrent] = value
	}
	f.Restart()
	return f
}

// jobsWithSnapshots adds n clusters job-0 … job-n-1, each with a RUNNING
// job whose savepoints never complete on their own, and one savepoint
// snapshot sp-i of each.
func jobsWithSnapshots(f *fixture, n int) []*fakejm.Server {
	f.T.Helper()
	var jms []*fakejm.Server
	for i := range n {
		jm := f.addCluster(fmt.Sprintf("job-%d", i), v1beta1.FlinkVersion1_20, nil)
		jm.SetCompletion(1000, 0)
		jms = append(jms, jm)
		f.Create(savepointSnap(fmt.Sprintf("sp-%d", i), fmt.Sprintf("job-%d", i)))
	}
	return jms
}

// started counts the snapshots Flink was asked for, over all JobManagers.
func started(jms []*fakejm.Server) int {
	n := 0
	for _, jm := range jms {
		n += jm.StartedOperations(fakejm.OpSavepoint)
	}
	return n
}

func TestOperatorWideMaxConcurrent(t *testing.T) {
	for _, tc := range []struct {
		name    string
		cap     string
		jobs    int
		running int // IN_PROGRESS after one sync of each, in order
	}{
		{"cap 1: the second job's snapshot waits", "1", 2, 1},
		{"cap 2: the third job's snapshot waits", "2", 3, 2},
		{"cap 3: three jobs run at once", "3", 3, 3},
		{"unset: no cap", "", 4, 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := withMaxConcurrent(t, tc.cap)
			jms := jobsWithSnapshots(f, tc.jobs)
			for i := range tc.jobs {
				d := f.MustSync(fmt.Sprintf("sp-%d", i))
				s := f.Get(fmt.Sprintf("sp-%d", i))
				if i < tc.running {
					if s.Status.State != v1beta1.SnapshotInProgress {
						t.Fatalf("sp-%d: %+v, want IN_PROGRESS", i, s.Status)
					}
					continue
				}
				// Waiting for a slot is not a failure, and is retried.
				if s.Status.State != v1beta1.SnapshotTriggerPending || s.Status.Failures != 0 || s.Status.TriggerID != "" {
					t.Fatalf("sp-%d: %+v, want TRIGGER_PENDING without failure or trigger id", i, s.Status)
				}
				if d != waitForSlot {
					t.Errorf("sp-%d requeued after %v, want %v", i, d, waitForSlot)
				}
			}
			if n := started(jms); n != tc.running {
				t.Fatalf("%d snapshots started in Flink, want %d", n, tc.running)
			}
		})
	}
}

// A waiting snapshot starts once a slot frees: the first one completes, the
// next sync of the waiting one triggers it.
func TestOperatorWideMaxConcurrentSlotFrees(t *testing.T) {
	f := withMaxConcurrent(t, "1")
	jms := jobsWithSnapshots(f, 2)
	jms[0].SetCompletion(1, 0)
	f.MustSync("sp-0")
	f.MustSync("sp-1")
	if s := f.Get("sp-1"); s.Status.State != v1beta1.SnapshotTriggerPending {
		t.Fatalf("sp-1 %+v, want waiting", s.Status)
	}
	if got := f.drive("sp-0", 10); got.Status.State != v1beta1.SnapshotCompleted {
		t.Fatalf("sp-0 %+v", got.Status)
	}
	f.MustSync("sp-1")
	if s := f.Get("sp-1"); s.Status.State != v1beta1.SnapshotInProgress {
		t.Fatalf("sp-1 %+v after sp-0 completed, want IN_PROGRESS", s.Status)
	}
	if n := jms[1].StartedOperations(fakejm.OpSavepoint); n != 1 {
		t.Fatalf("job-1: %d savepoints started, want 1", n)
	}
}

// The cap holds between two syncs that have not seen each other's writes
// (two workers, stale cache): the controller's own reservations count.
func TestOperatorWideMaxConcurrentWithStaleCache(t *testing.T) {
	f := withMaxConcurrent(t, "1")
	jms := jobsWithSnapshots(f, 2)
	f.Refresh()
	for _, name := range []string{"sp-0", "sp-1"} { // no refresh in between
		if _, err := f.ctrl.Sync(f.Ctx, ns+"/"+name); err != nil {
			t.Fatal(err)
		}
	}
	if n := started(jms); n != 1 {
		t.Fatalf("%d snapshots started across jobs, want 1", n)
	}
}

// The cap is operator-wide only: a job cannot set it for itself (nor lift
// it) in its flinkConfiguration.
func TestOperatorWideMaxConcurrentNotPerJob(t *testing.T) {
	f := withMaxConcurrent(t, "")
	var jms []*fakejm.Server
	for i := range 2 {
		name := fmt.Sprintf("job-%d", i)
		jm := f.addCluster(name, v1beta1.FlinkVersion1_20, map[string]string{
			config.FlinkSavepointDir:        "file://" + filepath.Join(f.Dir, "savepoints"),
			config.KeySnapshotMaxConcurrent: "1",
		})
		jm.SetCompletion(1000, 0)
		jms = append(jms, jm)
		f.Create(savepointSnap(fmt.Sprintf("sp-%d", i), name))
	}
	f.MustSync("sp-0")
	f.MustSync("sp-1")
	if n := started(jms); n != 2 {
		t.Fatalf("%d snapshots started, want 2: a job's own max-concurrent must not cap the operator", n)
	}

	// And the other way round: the operator's cap holds whatever a job says.
	f = withMaxConcurrent(t, "1")
	jms = nil
	for i := range 2 {
		name := fmt.Sprintf("job-%d", i)
		jm := f.addCluster(name, v1beta1.FlinkVersion1_20, map[string]string{
			config.FlinkSavepointDir:        "file://" + filepath.Join(f.Dir, "savepoints"),
			config.KeySnapshotMaxConcurrent: "10",
		})
		jm.SetCompletion(1000, 0)
		jms = append(jms, jm)
		f.Create(savepointSnap(fmt.Sprintf("sp-%d", i), name))
	}
	f.MustSync("sp-0")
	f.MustSync("sp-1")
	if n := started(jms); n != 1 {
		t.Fatalf("%d snapshots started, want 1: a job must not lift the operator's cap", n)
	}
}
