package snapshot

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/config"
	"github.com/flinkops/flink-operator/pkg/flink"
	"github.com/flinkops/flink-operator/pkg/flink/fakejm"
)

// Rules for a trigger id Flink does not know (recover.go: recover,
// claimedPaths, adoptFromHistory, sameKind, incrementalCheckpoints).

// lostTrigger creates a savepoint whose trigger POST never reached Flink:
// the intent (IN_PROGRESS + trigger id) is recorded at t0, Flink knows
// nothing.
func lostTrigger(t *testing.T, f *fixture, jm *fakejm.Server, s *v1beta1.FlinkStateSnapshot) string {
	t.Helper()
	remove := jm.InjectFault(fakejm.Fault{Route: fakejm.RouteSavepointTrigger, Status: http.StatusServiceUnavailable})
	got := triggered(t, f, s)
	remove()
	if n := len(jm.Operations()); n != 0 {
		t.Fatalf("%d operations started although the POST was lost", n)
	}
	return got.Status.TriggerID
}

// An unknown trigger id YOUNGER than rest.async.store-duration (the job's
// setting, default 5 min) is sent again, with the same id, and the
// savepoint it starts is the snapshot's; from that age on, the attempt has
// failed.
func TestUnknownTriggerIDResentOnlyWhileYoungerThanStoreDuration(t *testing.T) {
	for _, tc := range []struct {
		name   string
		conf   string // rest.async.store-duration of the job, "" = default
		age    time.Duration
		resent bool
	}{
		{"default, 1 ms younger: re-sent", "", 5*time.Minute - time.Millisecond, true},
		{"default, exactly 5 min: failed", "", 5 * time.Minute, false},
		{"job says 10 min, 6 min old: re-sent", "10 min", 6 * time.Minute, true},
		{"job says 1 min, 2 min old: failed", "1 min", 2 * time.Minute, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			conf := map[string]string{config.FlinkSavepointDir: "file://" + f.Dir + "/savepoints"}
			if tc.conf != "" {
				conf[config.FlinkRestAsyncStoreDuration] = tc.conf
			}
			jm := f.addCluster("job", v1beta1.FlinkVersion1_20, conf)
			id := lostTrigger(t, f, jm, withBackoff(savepointSnap("sp", "job"), 0))
			f.Clock.SetTime(t0.Add(tc.age))
			f.MustSync("sp")
			got := f.Get("sp")
			if !tc.resent {
				if got.Status.State != v1beta1.SnapshotFailed || !strings.Contains(got.Status.Error, "does not know trigger id "+id) ||
					len(jm.Operations()) != 0 {
					t.Fatalf("status %+v, %d operations: want FAILED without a new trigger", got.Status, len(jm.Operations()))
				}
				return
			}
			ops := jm.Operations()
			if got.Status.State != v1beta1.SnapshotInProgress || len(ops) != 1 || ops[0].TriggerID != id {
				t.Fatalf("status %+v, operations %+v: want the same id %s sent again", got.Status, ops, id)
			}
			done := f.drive("sp", 10)
			if done.Status.State != v1beta1.SnapshotCompleted || done.Status.TriggerID != id || !metadataExists(done.Status.Path) {
				t.Fatalf("after the re-send: %+v, want COMPLETED with the savepoint's path", done.Status)
			}
		})
	}
}

// A re-send that does not reach Flink either is tried again at the next
// poll: not a failure.
func TestUnknownTriggerIDResendUnreachableIsNoFailure(t *testing.T) {
	f := newFixture(t)
	jm := f.addCluster("job", v1beta1.FlinkVersion1_20, nil)
	lostTrigger(t, f, jm, savepointSnap("sp", "job"))
	jm.InjectFault(fakejm.Fault{Route: fakejm.RouteSavepointTrigger, Status: http.StatusServiceUnavailable})
	f.Clock.SetTime(t0.Add(10 * time.Second))
	if d := f.MustSync("sp"); d != 5*time.Second {
		t.Errorf("requeue %v, want half the elapsed 10 s", d)
	}
	if got := f.Get("sp"); got.Status.State != v1beta1.SnapshotInProgress || got.Status.Failures != 0 {
		t.Fatalf("status %+v, want still IN_PROGRESS without failure", got.Status)
	}
}

// A forgotten trigger id is never matched with a history entry whose path
// another snapshot of the same job already names, in any namespace: two
// resources naming one path would dispose each other's data.
func TestForgottenTriggerIDNeverAdoptsAPathAnotherSnapshotNames(t *testing.T) {
	for _, tc := range []struct {
		name           string
		ours, claimant metav1.ObjectMeta
		claimed        bool // false: the history entry is free and adopted
	}{
		{"claimed by another snapshot", metav1.ObjectMeta{Namespace: ns, Name: "sp"}, metav1.ObjectMeta{Namespace: ns, Name: "other"}, true},
		{"claimed by a snapshot of the same name in another namespace",
			metav1.ObjectMeta{Namespace: "team-a", Name: "sp"}, metav1.ObjectMeta{Namespace: ns, Name: "sp"}, true},
		{"not claimed: the other snapshot has no path", metav1.ObjectMeta{Namespace: ns, Name: "sp"}, metav1.ObjectMeta{Namespace: ns, Name: "other"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			f.Config[config.KeySnapshotCrossNamespaceReferencesEnabled] = "true"
			f.guard = func(context.Context, *v1beta1.FlinkStateSnapshot) error { return nil }
			f.Restart()
			jm := f.addCluster("job", v1beta1.FlinkVersion1_20, nil)
			jm.SetCompletion(0, 0)

			// The other snapshot takes a savepoint just before ours: it is
			// in Flink's history within the clock-skew tolerance.
			claimant := savepointSnap(tc.claimant.Name, "job")
			f.Create(claimant)
			done := f.drive(claimant.Name, 5)
			path := done.Status.Path
			if !tc.claimed {
				done.Status.Path = ""
				if _, err := f.Client.FlinkV1beta1().FlinkStateSnapshots(ns).UpdateStatus(f.Ctx, done, metav1.UpdateOptions{}); err != nil {
					t.Fatal(err)
				}
			}

			ours := savepointSnap(tc.ours.Name, "job")
			ours.Namespace = tc.ours.Namespace
			ours.Spec.JobReference.Namespace = ns
			f.Create(withBackoff(ours, 0))
			jm.InjectFault(fakejm.Fault{Route: fakejm.RouteSavepointTrigger, Status: http.StatusServiceUnavailable, Times: 1})
			f.mustSyncIn(ours.Namespace, ours.Name)
			if got := f.GetIn(ours.Namespace, ours.Name); got.Status.State != v1beta1.SnapshotInProgress {
				t.Fatalf("ours not triggered: %+v", got.Status)
			}
			f.Clock.Step(6 * time.Minute) // too old to be sent again
			f.mustSyncIn(ours.Namespace, ours.Name)
			got := f.GetIn(ours.Namespace, ours.Name)
			if !tc.claimed {
				if got.Status.State != v1beta1.SnapshotCompleted || got.Status.Path != path {
					t.Fatalf("status %+v, want the free entry %s adopted", got.Status, path)
				}
				return
			}
			if got.Status.State != v1beta1.SnapshotFailed || got.Status.Path != "" || !strings.Contains(got.Status.Error, "no matching savepoint") {
				t.Fatalf("status %+v, want FAILED without adopting %s", got.Status, path)
			}
		})
	}
}

// Selection rules of adoptFromHistory beyond TestAdoptFromHistory: the
// clock-skew tolerance is inclusive, the earliest trigger time wins (ties
// go to the lower checkpoint id, in any listing order), and a savepoint
// whose format Flink does not report is of any format.
func TestAdoptFromHistoryTiesAndTolerance(t *testing.T) {
	trig := t0
	sp := func(id int64, d time.Duration, path, format string) flink.CheckpointStatistics {
		return flink.CheckpointStatistics{ID: id, TriggerTimestamp: trig.Add(d).UnixMilli(), IsSavepoint: true,
			CheckpointType: "SAVEPOINT", SavepointFormat: format, Status: flink.CheckpointStatsCompleted, ExternalPath: path}
	}
	native := savepointSnap("native", "job")
	native.Spec.Savepoint.FormatType = v1beta1.SavepointFormatNative
	for _, c := range []struct {
		name    string
		snap    *v1beta1.FlinkStateSnapshot
		history []flink.CheckpointStatistics
		want    string
	}{
		{"exactly the tolerance before the trigger: adopted", savepointSnap("sp", "job"),
			[]flink.CheckpointStatistics{sp(1, -historyTolerance, "/edge", "CANONICAL")}, "/edge"},
		{"1 ms more than the tolerance before: not adopted", savepointSnap("sp", "job"),
			[]flink.CheckpointStatistics{sp(1, -historyTolerance-time.Millisecond, "/early", "CANONICAL")}, ""},
		{"the tolerance is 2 s", savepointSnap("sp", "job"),
			[]flink.CheckpointStatistics{sp(1, -2*time.Second, "/2s", "CANONICAL"), sp(2, -2001*time.Millisecond, "/2001ms", "CANONICAL")}, "/2s"},
		{"same trigger time, lower id listed first: lower id", savepointSnap("sp", "job"),
			[]flink.CheckpointStatistics{sp(4, time.Second, "/id4", "CANONICAL"), sp(5, time.Second, "/id5", "CANONICAL")}, "/id4"},
		{"same trigger time, lower id listed last: lower id", savepointSnap("sp", "job"),
			[]flink.CheckpointStatistics{sp(5, time.Second, "/id5", "CANONICAL"), sp(4, time.Second, "/id4", "CANONICAL")}, "/id4"},
		{"earliest trigger time wins over a lower id", savepointSnap("sp", "job"),
			[]flink.CheckpointStatistics{sp(2, time.Second, "/early", "CANONICAL"), sp(1, 5*time.Second, "/late", "CANONICAL")}, "/early"},
		{"format not reported: any format", native,
			[]flink.CheckpointStatistics{sp(1, time.Second, "/unknown-format", "")}, "/unknown-format"},
		{"format compared case-insensitively", native,
			[]flink.CheckpointStatistics{sp(1, time.Second, "/native", "native")}, "/native"},
		{"an entry without a path is still ours (a failed attempt)", savepointSnap("sp", "job"),
			[]flink.CheckpointStatistics{sp(1, time.Second, "", "CANONICAL")}, "(no path)"},
	} {
		got := ""
		if h := adoptFromHistory(c.snap, config.Config{}, c.history, trig, map[string]bool{"": true}); h != nil {
			got = h.ExternalPath
			if got == "" {
				got = "(no path)"
			}
		}
		if got != c.want {
			t.Errorf("%s: adopted %q, want %q", c.name, got, c.want)
		}
	}
}

// A job takes incremental checkpoints when execution.checkpointing.incremental
// (or the older state.backend.incremental) says so; the newer key wins, an
// unreadable value counts as yes (adoption only gets stricter).
func TestIncrementalCheckpointsSetting(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  config.Config
		want bool
	}{
		{"unset", config.Config{}, false},
		{"true", config.Config{"execution.checkpointing.incremental": "true"}, true},
		{"false", config.Config{"execution.checkpointing.incremental": "false"}, false},
		{"spaces and case", config.Config{"execution.checkpointing.incremental": " TRUE "}, true},
		{"unreadable", config.Config{"execution.checkpointing.incremental": "sometimes"}, true},
		{"older key", config.Config{"state.backend.incremental": "true"}, true},
		{"older key false", config.Config{"state.backend.incremental": "false"}, false},
		{"newer key wins", config.Config{"execution.checkpointing.incremental": "false", "state.backend.incremental": "true"}, false},
	} {
		if got := incrementalCheckpoints(tc.cfg); got != tc.want {
			t.Errorf("%s: incremental %v, want %v", tc.name, got, tc.want)
		}
	}
}
