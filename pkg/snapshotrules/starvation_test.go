package snapshotrules

import (
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/config"
)

// Issue 20 item 5: which existing snapshots hold back the next periodic one.
// Only the periodic chain itself, in any non-terminal state; nothing a user
// (or a nonce) asked for.
func TestBlocksPeriodic(t *testing.T) {
	deleted := func(s *v1beta1.FlinkStateSnapshot) *v1beta1.FlinkStateSnapshot {
		now := metav1.NewTime(base)
		s.DeletionTimestamp = &now
		return s
	}
	retrying := func(s *v1beta1.FlinkStateSnapshot) *v1beta1.FlinkStateSnapshot {
		s.Status.Failures = 3
		s.Status.Error = "IO-problem detected"
		return s
	}
	unlabelled := func(s *v1beta1.FlinkStateSnapshot) *v1beta1.FlinkStateSnapshot {
		delete(s.Labels, v1beta1.LabelSnapshotTriggerType)
		return s
	}
	for _, tc := range []struct {
		name string
		s    *v1beta1.FlinkStateSnapshot
		want bool
	}{
		{"periodic new", snap("p", sp, "PERIODIC", "", base), true},
		{"periodic pending", snap("p", sp, "PERIODIC", "TRIGGER_PENDING", base), true},
		{"periodic in progress", snap("p", sp, "PERIODIC", "IN_PROGRESS", base), true},
		{"periodic waiting for a retry", retrying(snap("p", sp, "PERIODIC", "TRIGGER_PENDING", base)), true},
		{"periodic checkpoint in progress", snap("p", cp, "PERIODIC", "IN_PROGRESS", base), true},
		{"periodic completed", snap("p", sp, "PERIODIC", "COMPLETED", base), false},
		{"periodic failed", snap("p", sp, "PERIODIC", "FAILED", base), false},
		{"periodic abandoned", snap("p", sp, "PERIODIC", "ABANDONED", base), false},
		{"periodic in progress, being deleted", deleted(snap("p", sp, "PERIODIC", "IN_PROGRESS", base)), false},
		{"manual in progress", snap("m", sp, "MANUAL", "IN_PROGRESS", base), false},
		{"manual new", snap("m", sp, "MANUAL", "", base), false},
		{"manual waiting for a retry", retrying(snap("m", sp, "MANUAL", "TRIGGER_PENDING", base)), false},
		{"upgrade pending", snap("u", sp, "UPGRADE", "TRIGGER_PENDING", base), false},
		{"no trigger-type label, in progress", unlabelled(snap("x", sp, "PERIODIC", "IN_PROGRESS", base)), false},
	} {
		if got := BlocksPeriodic(tc.s); got != tc.want {
			t.Errorf("%s: BlocksPeriodic = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// PeriodicInFlight looks only at snapshots of the asked type.
func TestPeriodicInFlightByType(t *testing.T) {
	all := []*v1beta1.FlinkStateSnapshot{
		snap("c", cp, "PERIODIC", "IN_PROGRESS", base),
		snap("m", sp, "MANUAL", "IN_PROGRESS", base),
	}
	if PeriodicInFlight(all, sp) {
		t.Error("a periodic checkpoint or a manual savepoint held back periodic savepoints")
	}
	if !PeriodicInFlight(all, cp) {
		t.Error("an in-flight periodic checkpoint did not hold back the next periodic checkpoint")
	}
}

// A periodic snapshot waiting for its retry still holds back the next one:
// with kubernetes.operator.snapshot.backoff-limit -1 a failing periodic
// savepoint must not turn into one more retrying snapshot per interval.
func TestRetryingPeriodicHoldsBackTheNext(t *testing.T) {
	v := jobView(map[string]string{config.KeyPeriodicSavepointInterval: "1h"})
	p := snap(Name("job", sp, "PERIODIC", base.Add(time.Hour).UnixMilli()), sp, "PERIODIC", "TRIGGER_PENDING", base.Add(time.Hour))
	p.Status.Failures = 5
	v.Snapshots = []*v1beta1.FlinkStateSnapshot{p}
	if plan, _ := PlanSnapshots(v, base.Add(5*time.Hour)); len(plan.Create) != 0 {
		t.Fatalf("created %s while the previous periodic savepoint waits for a retry", names(plan.Create))
	}
}

// A changed nonce and a due periodic slot in the same plan give both: the
// manual snapshot does not hold the periodic one back (the snapshot
// controller's per-job limit runs them one after the other).
func TestManualNonceDoesNotHoldBackPeriodic(t *testing.T) {
	v := jobView(map[string]string{config.KeyPeriodicSavepointInterval: "1h"})
	v.SavepointNonce = ptr.To[int64](7)
	p, err := PlanSnapshots(v, base.Add(61*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	var manual, periodic int
	for _, s := range p.Create {
		switch TriggerType(s) {
		case v1beta1.SnapshotTriggerManual:
			manual++
		case v1beta1.SnapshotTriggerPeriodic:
			periodic++
		}
	}
	if manual != 1 || periodic != 1 {
		t.Fatalf("created %s, want one manual and one periodic savepoint", names(p.Create))
	}
}

// The acceptance test of issue 20 item 5, on a fake clock: a user savepoint
// that fails forever (backoffLimit -1) and periodic savepoints every hour.
// The planner runs every minute for 24 simulated hours while the user's
// savepoint goes through its attempts and retry waits; every periodic
// savepoint the planner creates goes in flight and completes a few minutes
// later. Each hourly slot must get its periodic savepoint, on time.
func TestFailingUserSavepointDoesNotStopPeriodic(t *testing.T) {
	for _, tc := range []struct {
		name string
		// attempt is how long one attempt of the user's savepoint stays
		// IN_PROGRESS before it fails; 0 means it never starts (a
		// ValidationError keeps it TRIGGER_PENDING without failures).
		attempt time.Duration
		trigger v1beta1.SnapshotTriggerType
	}{
		{"user savepoint failing at once", 2 * time.Second, v1beta1.SnapshotTriggerManual},
		{"user savepoint failing by the snapshot timeout", 11 * time.Minute, v1beta1.SnapshotTriggerManual},
		{"user savepoint without trigger-type label", 11 * time.Minute, ""},
		{"user savepoint that never starts", 0, v1beta1.SnapshotTriggerManual},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := jobView(map[string]string{config.KeyPeriodicSavepointInterval: "1h", config.FlinkSavepointDir: "file:///sp"})
			user := &v1beta1.FlinkStateSnapshot{
				ObjectMeta: metav1.ObjectMeta{Name: "before-release", Namespace: "flink", CreationTimestamp: metav1.NewTime(base)},
				Spec: v1beta1.FlinkStateSnapshotSpec{
					JobReference: &v1beta1.JobReference{Kind: v1beta1.JobReferenceKindDeployment, Name: "job"},
					Savepoint:    &v1beta1.SavepointSpec{Path: "file:///unwritable"},
					BackoffLimit: ptr.To[int32](-1),
				},
				Status: v1beta1.FlinkStateSnapshotStatus{State: v1beta1.SnapshotTriggerPending},
			}
			if tc.trigger != "" {
				user.Labels = map[string]string{v1beta1.LabelSnapshotTriggerType: string(tc.trigger)}
			}
			attemptEnds, retryAt := time.Time{}, base

			type periodic struct {
				s       *v1beta1.FlinkStateSnapshot
				created time.Time
			}
			var made []periodic
			step := time.Minute
			end := base.Add(24*time.Hour + 30*time.Minute)
			for now := base; !now.After(end); now = now.Add(step) {
				// The user's savepoint, as the snapshot controller drives it.
				if tc.attempt > 0 {
					switch user.Status.State {
					case v1beta1.SnapshotTriggerPending:
						if !now.Before(retryAt) {
							user.Status.State = v1beta1.SnapshotInProgress
							attemptEnds = now.Add(tc.attempt)
						}
					case v1beta1.SnapshotInProgress:
						if !now.Before(attemptEnds) {
							user.Status.State = v1beta1.SnapshotTriggerPending
							user.Status.Failures++
							if !RetryAllowed(user.Status.Failures, BackoffLimit(user)) {
								t.Fatal("backoffLimit -1 must always allow a retry")
							}
							retryAt = now.Add(RetryDelay(user.Status.Failures))
						}
					}
				}
				// Periodic savepoints in flight complete 3 minutes after
				// their creation.
				for _, p := range made {
					switch {
					case now.Sub(p.created) >= 3*time.Minute:
						p.s.Status.State = v1beta1.SnapshotCompleted
						p.s.Status.Path = "file:///sp/" + p.s.Name
					case now.After(p.created):
						p.s.Status.State = v1beta1.SnapshotInProgress
					}
				}

				v.Snapshots = []*v1beta1.FlinkStateSnapshot{user}
				for _, p := range made {
					v.Snapshots = append(v.Snapshots, p.s)
				}
				plan, err := PlanSnapshots(v, now)
				if err != nil {
					t.Fatal(err)
				}
				for _, s := range plan.Create {
					if TriggerType(s) != v1beta1.SnapshotTriggerPeriodic {
						t.Fatalf("%v: created %s, want only periodic savepoints", now, s.Name)
					}
					s.CreationTimestamp = metav1.NewTime(now)
					made = append(made, periodic{s: s, created: now})
				}
			}

			if user.Status.State.IsTerminal() {
				t.Fatalf("the user's savepoint ended %s; the test needs it failing all day", user.Status.State)
			}
			if tc.attempt > 0 && user.Status.Failures < 24 {
				t.Fatalf("the user's savepoint failed only %d times", user.Status.Failures)
			}
			if len(made) != 24 {
				var got []string
				for _, p := range made {
					got = append(got, fmt.Sprintf("%s@%s", p.s.Name, p.created.Format("15:04")))
				}
				t.Fatalf("%d periodic savepoints in 24 h, want 24: %v", len(made), got)
			}
			for i, p := range made {
				slot := base.Add(time.Duration(i+1) * time.Hour)
				if want := Name("job", sp, v1beta1.SnapshotTriggerPeriodic, slot.UnixMilli()); p.s.Name != want {
					t.Errorf("periodic savepoint %d is %s, want %s", i+1, p.s.Name, want)
				}
				if late := p.created.Sub(slot); late < 0 || late > step {
					t.Errorf("periodic savepoint %d created %v after its slot", i+1, late)
				}
			}
		})
	}
}
