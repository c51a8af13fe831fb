package deployment

import (
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/config"
)

// Issue 20 item 5, through the controller's sync: a user savepoint that
// fails forever (backoffLimit -1; the test plays the snapshot controller,
// alternating its attempts and retry waits) never stops the hourly periodic
// savepoints of its job. Each hour's slot gets its savepoint on the first
// sync after it, for 24 simulated hours.
func TestFailingUserSavepointDoesNotStopPeriodic(t *testing.T) {
	f := periodicFixture(t, config.KeyPeriodicSavepointInterval, "1h")
	user := f.putSnapshot(savepoint, v1beta1.SnapshotTriggerManual, v1beta1.SnapshotInProgress, t0)
	setFailures := func(n int32) {
		s, err := f.Client.FlinkV1beta1().FlinkStateSnapshots(ns).Get(f.Ctx, user, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		s.Spec.BackoffLimit = new(int32)
		*s.Spec.BackoffLimit = -1
		s.Status.Failures = n
		s.Status.Error = "CheckpointException: IO-problem detected."
		if _, err := f.Client.FlinkV1beta1().FlinkStateSnapshots(ns).UpdateStatus(f.Ctx, s, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	seen := map[string]bool{}
	for hour := 1; hour <= 24; hour++ {
		// The user's savepoint is in an attempt at every odd hour's slot
		// and waiting for its retry at every even one.
		state := v1beta1.SnapshotInProgress
		if hour%2 == 0 {
			state = v1beta1.SnapshotTriggerPending
		}
		f.setSnapshotState(user, state)
		setFailures(int32(hour))

		slot := t0.Add(time.Duration(hour) * time.Hour)
		f.Clock.SetTime(slot.Add(30 * time.Second))
		f.MustSync("job")
		want := periodicName(savepoint, slot)
		got := f.snapshotNames(savepoint, v1beta1.SnapshotTriggerPeriodic)
		if !slices.Contains(got, want) {
			t.Fatalf("hour %d (user savepoint %s, %d failures): periodic savepoints %v, want %s among them", hour, state, hour, got, want)
		}
		for _, n := range got {
			seen[n] = true
		}
		// The periodic savepoint completes before the next slot.
		f.setSnapshotState(want, v1beta1.SnapshotCompleted)
	}
	if len(seen) != 24 {
		t.Errorf("%d periodic savepoints in 24 h, want 24", len(seen))
	}
	if s, err := f.Client.FlinkV1beta1().FlinkStateSnapshots(ns).Get(f.Ctx, user, metav1.GetOptions{}); err != nil || s.Status.State.IsTerminal() {
		t.Errorf("the user's savepoint must still be in flight: %v %+v", err, s)
	}
}
