package snapshotrules

import (
	"reflect"
	"testing"
	"time"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/config"
)

// legacySp is a legacy history entry taken at epoch millis ts.
func legacySp(loc string, ts int64) v1beta1.Savepoint {
	return v1beta1.Savepoint{TimeStamp: ts, Location: loc, TriggerType: v1beta1.SnapshotTriggerManual, FormatType: v1beta1.SavepointFormatCanonical}
}

func locations(h []v1beta1.Savepoint) []string {
	out := []string{}
	for _, s := range h {
		out = append(out, s.Location)
	}
	return out
}

// disposer records disposal calls and answers ok.
type disposer struct {
	ok    bool
	calls []string
}

func (d *disposer) dispose(path string) bool {
	d.calls = append(d.calls, path)
	return d.ok
}

// Rows of upstream's SnapshotObserverLegacyTest (legacy savepoint history
// cleanup, as upstream).
func TestSnapshotObserverLegacy(t *testing.T) {
	now := base.Add(48 * time.Hour)
	recent := now.Add(-time.Minute).UnixMilli()
	old := now.Add(-30 * time.Hour).UnixMilli()
	count2 := LegacyHistoryPolicy{MaxCount: 2, MaxAge: 100 * 24 * time.Hour, Dispose: true}
	age := LegacyHistoryPolicy{MaxCount: 10, MaxAge: 24 * time.Hour, Dispose: true}
	five := []v1beta1.Savepoint{legacySp("sp1", recent), legacySp("sp2", recent), legacySp("sp3", recent), legacySp("sp4", recent), legacySp("sp5", recent)}
	crs := func(states ...v1beta1.SnapshotState) int {
		var all []*v1beta1.FlinkStateSnapshot
		for i, st := range states {
			all = append(all, snap(string(rune('a'+i)), sp, v1beta1.SnapshotTriggerPeriodic, st, base))
		}
		// MANUAL and checkpoint snapshots never count.
		all = append(all, snap("m", sp, v1beta1.SnapshotTriggerManual, v1beta1.SnapshotCompleted, base),
			snap("c", cp, v1beta1.SnapshotTriggerPeriodic, v1beta1.SnapshotCompleted, base))
		return CompletedSavepointResources(all)
	}

	t.Run("testBasicObserve", func(t *testing.T) {
		d := &disposer{ok: true}
		got := CleanupLegacyHistory([]v1beta1.Savepoint{legacySp("sp1", 1)}, age, 0, now, nil, d.dispose)
		if !reflect.DeepEqual(locations(got), []string{"sp1"}) || len(d.calls) != 0 {
			t.Fatalf("kept %v disposed %v", locations(got), d.calls)
		}
	})

	t.Run("testCountBasedDisposeWithSnapshotResources", func(t *testing.T) {
		d := &disposer{ok: true}
		h := CleanupLegacyHistory(five, count2, 0, now, nil, d.dispose)
		if !reflect.DeepEqual(locations(h), []string{"sp4", "sp5"}) || !reflect.DeepEqual(d.calls, []string{"sp1", "sp2", "sp3"}) {
			t.Fatalf("5 → %v disposed %v", locations(h), d.calls)
		}
		// An IN_PROGRESS resource does not reduce the allowance.
		if h = CleanupLegacyHistory(h, count2, crs(v1beta1.SnapshotInProgress), now, nil, d.dispose); len(h) != 2 {
			t.Fatalf("in-progress CR: %v", locations(h))
		}
		if h = CleanupLegacyHistory(h, count2, crs(v1beta1.SnapshotInProgress, v1beta1.SnapshotCompleted), now, nil, d.dispose); !reflect.DeepEqual(locations(h), []string{"sp5"}) {
			t.Fatalf("one completed CR: %v", locations(h))
		}
		if h = CleanupLegacyHistory(h, count2, crs(v1beta1.SnapshotCompleted, v1beta1.SnapshotCompleted), now, nil, d.dispose); len(h) != 0 {
			t.Fatalf("two completed CRs: %v", locations(h))
		}
		if !reflect.DeepEqual(d.calls, []string{"sp1", "sp2", "sp3", "sp4", "sp5"}) {
			t.Fatalf("disposed %v", d.calls)
		}
	})

	t.Run("testAgeBasedDisposeWithSnapshotResources", func(t *testing.T) {
		d := &disposer{ok: true}
		h := CleanupLegacyHistory([]v1beta1.Savepoint{legacySp("sp1", old), legacySp("sp2", old)}, age, 0, now, nil, d.dispose)
		if !reflect.DeepEqual(locations(h), []string{"sp2"}) {
			t.Fatalf("no completed CR: %v", locations(h))
		}
		if h = CleanupLegacyHistory(h, age, crs(v1beta1.SnapshotCompleted), now, nil, d.dispose); len(h) != 0 {
			t.Fatalf("one completed CR: %v", locations(h))
		}
		if !reflect.DeepEqual(d.calls, []string{"sp1", "sp2"}) {
			t.Fatalf("disposed %v", d.calls)
		}
	})

	t.Run("testAgeBasedDispose", func(t *testing.T) {
		d := &disposer{ok: true}
		p := LegacyHistoryPolicy{MaxCount: 10, MaxAge: 5 * time.Millisecond, Dispose: true}
		h := CleanupLegacyHistory([]v1beta1.Savepoint{legacySp("sp1", 1)}, p, 0, now, nil, d.dispose)
		if len(h) != 1 || len(d.calls) != 0 {
			t.Fatalf("single: %v %v", locations(h), d.calls)
		}
		h = CleanupLegacyHistory(append(h, legacySp("sp2", 2)), p, 0, now, nil, d.dispose)
		if !reflect.DeepEqual(locations(h), []string{"sp2"}) || !reflect.DeepEqual(d.calls, []string{"sp1"}) {
			t.Fatalf("two: %v %v", locations(h), d.calls)
		}
	})

	t.Run("testAgeBasedDisposeWithAgeThreshold", func(t *testing.T) {
		cfg := config.Defaults()
		cfg[config.KeySavepointHistoryMaxAge] = "100000 d"
		cfg[config.KeySavepointHistoryMaxAgeThreshold] = "5 ms"
		p, err := LegacyHistoryPolicyOf(cfg)
		if err != nil || p.MaxAge != 5*time.Millisecond || !p.Dispose || p.MaxCount != 10 {
			t.Fatalf("policy %+v %v", p, err)
		}
		d := &disposer{ok: true}
		h := CleanupLegacyHistory([]v1beta1.Savepoint{legacySp("sp1", 1)}, p, 0, now, nil, d.dispose)
		h = CleanupLegacyHistory(append(h, legacySp("sp2", 2)), p, 0, now, nil, d.dispose)
		if !reflect.DeepEqual(locations(h), []string{"sp2"}) || !reflect.DeepEqual(d.calls, []string{"sp1"}) {
			t.Fatalf("%v %v", locations(h), d.calls)
		}
	})

	t.Run("testDisabledDispose", func(t *testing.T) {
		cfg := config.Defaults()
		cfg[config.KeySavepointCleanupEnabled] = "false"
		cfg[config.KeySavepointHistoryMaxCount] = "1000"
		cfg[config.KeySavepointHistoryMaxAge] = "100 d"
		p, err := LegacyHistoryPolicyOf(cfg)
		if err != nil || p.Dispose {
			t.Fatalf("policy %+v %v", p, err)
		}
		d := &disposer{ok: true}
		future := now.Add(1000 * time.Hour).UnixMilli()
		h := CleanupLegacyHistory([]v1beta1.Savepoint{legacySp("sp1", future), legacySp("sp2", future)}, p, 0, now, nil, d.dispose)
		if len(h) != 2 || len(d.calls) != 0 {
			t.Fatalf("%v %v", locations(h), d.calls)
		}
		// Over the limits, entries leave the history without a disposal.
		p.MaxCount = 1
		if h = CleanupLegacyHistory(h, p, 0, now, nil, d.dispose); !reflect.DeepEqual(locations(h), []string{"sp2"}) || len(d.calls) != 0 {
			t.Fatalf("over limit: %v %v", locations(h), d.calls)
		}
	})

	t.Run("testCountBasedDisposeRetainsEntryOnFailure", func(t *testing.T) {
		d := &disposer{ok: false}
		h := CleanupLegacyHistory(five, count2, 0, now, nil, d.dispose)
		// The first failure stops the count rule: nothing is lost.
		if len(h) != 5 || !reflect.DeepEqual(d.calls, []string{"sp1"}) {
			t.Fatalf("%v %v", locations(h), d.calls)
		}
	})

	t.Run("testAgeBasedDisposeRetainsEntryOnFailure", func(t *testing.T) {
		d := &disposer{ok: false}
		h := CleanupLegacyHistory([]v1beta1.Savepoint{legacySp("sp1", old), legacySp("sp2", old), legacySp("sp3", old)}, age, 0, now, nil, d.dispose)
		// The age rule tries every old entry (but the newest) and keeps them all.
		if len(h) != 3 || !reflect.DeepEqual(d.calls, []string{"sp1", "sp2"}) {
			t.Fatalf("%v %v", locations(h), d.calls)
		}
	})

	t.Run("testDisposeRetryOnSubsequentReconcile", func(t *testing.T) {
		three := []v1beta1.Savepoint{legacySp("sp1", recent), legacySp("sp2", recent), legacySp("sp3", recent)}
		failing := &disposer{ok: false}
		h := CleanupLegacyHistory(three, count2, 0, now, nil, failing.dispose)
		if len(h) != 3 {
			t.Fatalf("failing: %v", locations(h))
		}
		working := &disposer{ok: true}
		h = CleanupLegacyHistory(h, count2, 0, now, nil, working.dispose)
		if !reflect.DeepEqual(locations(h), []string{"sp2", "sp3"}) || !reflect.DeepEqual(working.calls, []string{"sp1"}) {
			t.Fatalf("retry: %v %v", locations(h), working.calls)
		}
	})

	t.Run("testPeriodicSavepoint", func(t *testing.T) {
		info := &v1beta1.SavepointInfo{}
		SetLegacySavepointTrigger(info, "0123456789abcdef0123456789abcdef", v1beta1.SnapshotTriggerPeriodic, v1beta1.SavepointFormatCanonical, now)
		triggerTs := *info.TriggerTimestamp
		if info.LastPeriodicSavepointTimestamp != 0 || info.TriggerType != v1beta1.SnapshotTriggerPeriodic || !LegacySavepointPending(info) || triggerTs <= 0 {
			t.Fatalf("after trigger: %+v", info)
		}
		nonce := int64(7) // a nonce in the spec is not a PERIODIC savepoint's
		CompleteLegacySavepoint(info, "/sp/1", &nonce)
		if info.LastPeriodicSavepointTimestamp != triggerTs || LegacySavepointPending(info) {
			t.Fatalf("after completion: %+v", info)
		}
		if !reflect.DeepEqual(*info.LastSavepoint, info.SavepointHistory[0]) || info.LastSavepoint.TriggerType != v1beta1.SnapshotTriggerPeriodic ||
			info.LastSavepoint.TriggerNonce != nil || info.LastSavepoint.Location != "/sp/1" || info.LastSavepoint.TimeStamp != triggerTs {
			t.Fatalf("last savepoint: %+v history %+v", info.LastSavepoint, info.SavepointHistory)
		}
	})

	t.Run("testPeriodicCheckpoint", func(t *testing.T) {
		info := &v1beta1.CheckpointInfo{}
		SetLegacyCheckpointTrigger(info, "0123456789abcdef0123456789abcdef", v1beta1.SnapshotTriggerPeriodic, v1beta1.CheckpointTypeFull, now)
		triggerTs := *info.TriggerTimestamp
		if info.LastPeriodicCheckpointTimestamp != 0 || !LegacyCheckpointPending(info) || triggerTs <= 0 {
			t.Fatalf("after trigger: %+v", info)
		}
		CompleteLegacyCheckpoint(info, nil)
		if info.LastPeriodicCheckpointTimestamp != triggerTs || LegacyCheckpointPending(info) ||
			info.LastCheckpoint.TriggerType != v1beta1.SnapshotTriggerPeriodic || info.LastCheckpoint.TriggerNonce != nil {
			t.Fatalf("after completion: %+v %+v", info, info.LastCheckpoint)
		}
	})
}

func TestLegacyManualSavepointRecordsNonce(t *testing.T) {
	info := &v1beta1.SavepointInfo{SavepointHistory: []v1beta1.Savepoint{legacySp("/sp/0", 1)}}
	SetLegacySavepointTrigger(info, "0123456789abcdef0123456789abcdef", v1beta1.SnapshotTriggerManual, v1beta1.SavepointFormatNative, base)
	nonce := int64(3)
	CompleteLegacySavepoint(info, "/sp/1", &nonce)
	if info.LastSavepoint.TriggerNonce == nil || *info.LastSavepoint.TriggerNonce != 3 || info.LastSavepoint.FormatType != v1beta1.SavepointFormatNative ||
		len(info.SavepointHistory) != 2 || info.LastPeriodicSavepointTimestamp != 0 {
		t.Fatalf("%+v", info)
	}
}

func TestLegacyDue(t *testing.T) {
	now := base.Add(time.Hour)
	n1, n2 := int64(1), int64(2)
	cfg := func(interval string) config.Config {
		c := config.Defaults()
		c[config.KeyPeriodicSavepointInterval] = interval
		c[config.KeyPeriodicCheckpointInterval] = interval
		return c
	}
	cases := []struct {
		name string
		job  LegacyJob
		want v1beta1.SnapshotTriggerType
		req  time.Duration
	}{
		{"nothing configured", LegacyJob{Config: cfg(""), Running: true, Since: base}, "", 0},
		{"changed nonce", LegacyJob{Config: cfg(""), Running: true, Nonce: &n2, Reconciled: &n1, Since: base}, v1beta1.SnapshotTriggerManual, 0},
		{"new nonce", LegacyJob{Config: cfg(""), Running: true, Nonce: &n1, Since: base}, v1beta1.SnapshotTriggerManual, 0},
		{"reconciled nonce", LegacyJob{Config: cfg(""), Running: true, Nonce: &n1, Reconciled: &n1, Since: base}, "", 0},
		{"nonce while not running", LegacyJob{Config: cfg(""), Nonce: &n1, Since: base}, "", 0},
		{"nonce while pending", LegacyJob{Config: cfg(""), Running: true, Pending: true, Nonce: &n1, Since: base}, "", 0},
		{"nonce before periodic", LegacyJob{Config: cfg("10m"), Running: true, Nonce: &n1, Since: base}, v1beta1.SnapshotTriggerManual, 0},
		{"periodic due", LegacyJob{Config: cfg("10m"), Running: true, Since: base}, v1beta1.SnapshotTriggerPeriodic, 10 * time.Minute},
		{"periodic not yet due", LegacyJob{Config: cfg("10m"), Running: true, Since: base, LastPeriodic: now.Add(-4 * time.Minute)}, "", 6 * time.Minute},
		{"periodic while pending", LegacyJob{Config: cfg("10m"), Running: true, Pending: true, Since: base}, "", 0},
		{"periodic while not running", LegacyJob{Config: cfg("10m"), Since: base}, "", 0},
		{"periodic off", LegacyJob{Config: cfg("-1"), Running: true, Since: base}, "", 0},
	}
	for _, tc := range cases {
		for _, typ := range []string{sp, cp} {
			got := LegacyDue(typ, tc.job, now)
			if got.Type != tc.want || got.RequeueAfter != tc.req || got.Warning != "" {
				t.Errorf("%s %s: %+v", tc.name, typ, got)
			}
			if tc.want == v1beta1.SnapshotTriggerManual && got.Nonce != tc.job.Nonce {
				t.Errorf("%s: nonce %v", tc.name, got.Nonce)
			}
		}
	}
	if got := LegacyDue(sp, LegacyJob{Config: cfg("every tuesday"), Running: true, Since: base}, now); got.Type != "" || got.Warning == "" {
		t.Errorf("bad interval: %+v", got)
	}
}

func TestLegacyGiveUpAndMessages(t *testing.T) {
	if LegacyGiveUp(base, time.Minute, base.Add(59*time.Second)) || !LegacyGiveUp(base, time.Minute, base.Add(61*time.Second)) {
		t.Fatal("grace period")
	}
	n := int64(42)
	for _, tc := range []struct {
		typ     string
		trigger v1beta1.SnapshotTriggerType
		nonce   *int64
		want    string
	}{
		{sp, v1beta1.SnapshotTriggerPeriodic, nil, "Periodic savepoint failed"},
		{sp, v1beta1.SnapshotTriggerManual, &n, "Savepoint failed for savepointTriggerNonce: 42"},
		{cp, v1beta1.SnapshotTriggerPeriodic, nil, "Periodic checkpoint failed"},
		{cp, v1beta1.SnapshotTriggerManual, &n, "Checkpoint failed for checkpointTriggerNonce: 42"},
	} {
		if got := LegacyFailureMessage(tc.typ, tc.trigger, tc.nonce); got != tc.want {
			t.Errorf("got %q want %q", got, tc.want)
		}
	}
}

func TestLegacyCleanupKeepsRestorePointData(t *testing.T) {
	d := &disposer{ok: true}
	p := LegacyHistoryPolicy{MaxCount: 1, MaxAge: time.Hour, Dispose: true}
	h := CleanupLegacyHistory([]v1beta1.Savepoint{legacySp("restore", 1), legacySp("sp2", 2)}, p, 0, base, []string{"restore"}, d.dispose)
	if !reflect.DeepEqual(locations(h), []string{"sp2"}) || len(d.calls) != 0 {
		t.Fatalf("%v %v", locations(h), d.calls)
	}
}
