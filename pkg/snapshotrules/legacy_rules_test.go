package snapshotrules

import (
	"reflect"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/config"
)

// TestLegacyDueReadsIntervalOfItsType pins that a legacy savepoint follows
// kubernetes.operator.periodic.savepoint.interval and a legacy checkpoint
// kubernetes.operator.periodic.checkpoint.interval, never the other's.
func TestLegacyDueReadsIntervalOfItsType(t *testing.T) {
	now := base.Add(time.Hour)
	for _, tc := range []struct {
		name          string
		key           string
		wantSavepoint v1beta1.SnapshotTriggerType
		wantCheckpt   v1beta1.SnapshotTriggerType
	}{
		{"savepoint interval only", config.KeyPeriodicSavepointInterval, v1beta1.SnapshotTriggerPeriodic, ""},
		{"checkpoint interval only", config.KeyPeriodicCheckpointInterval, "", v1beta1.SnapshotTriggerPeriodic},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := config.Defaults()
			cfg[tc.key] = "10m"
			job := LegacyJob{Config: cfg, Running: true, Since: base}
			if got := LegacyDue(sp, job, now).Type; got != tc.wantSavepoint {
				t.Errorf("savepoint: %q, want %q", got, tc.wantSavepoint)
			}
			if got := LegacyDue(cp, job, now).Type; got != tc.wantCheckpt {
				t.Errorf("checkpoint: %q, want %q", got, tc.wantCheckpt)
			}
		})
	}
}

// TestLegacyFailureMessageWithoutNonce pins upstream's event message for a
// failed manual legacy snapshot whose nonce is gone from the spec.
func TestLegacyFailureMessageWithoutNonce(t *testing.T) {
	for typ, want := range map[string]string{sp: "Savepoint failed", cp: "Checkpoint failed"} {
		if got := LegacyFailureMessage(typ, v1beta1.SnapshotTriggerManual, nil); got != want {
			t.Errorf("%s: %q, want %q", typ, got, want)
		}
	}
	// A periodic one names no nonce even when the spec has one.
	n := int64(3)
	if got := LegacyFailureMessage(sp, v1beta1.SnapshotTriggerPeriodic, &n); got != "Periodic savepoint failed" {
		t.Errorf("periodic with a nonce in the spec: %q", got)
	}
}

// TestLegacyHistoryPolicyOfRejectsBadValues pins that an unreadable history
// limit or cleanup switch is an error, not a silent default.
func TestLegacyHistoryPolicyOfRejectsBadValues(t *testing.T) {
	for _, key := range []string{config.KeySavepointHistoryMaxCount, config.KeySavepointHistoryMaxAge, config.KeySavepointCleanupEnabled} {
		cfg := config.Defaults()
		cfg[key] = "lots"
		if _, err := LegacyHistoryPolicyOf(cfg); err == nil {
			t.Errorf("%s: lots: no error", key)
		}
	}
}

// TestLegacyAgeRuleEdge pins that the legacy age rule removes only entries
// strictly older than max age: one taken exactly max age ago stays.
func TestLegacyAgeRuleEdge(t *testing.T) {
	now := base.Add(48 * time.Hour)
	edge := now.Add(-24 * time.Hour).UnixMilli()
	d := &disposer{ok: true}
	p := LegacyHistoryPolicy{MaxCount: 10, MaxAge: 24 * time.Hour, Dispose: true}
	h := CleanupLegacyHistory([]v1beta1.Savepoint{legacySp("older", edge-1), legacySp("edge", edge), legacySp("newest", now.UnixMilli())}, p, 0, now, nil, d.dispose)
	if !reflect.DeepEqual(locations(h), []string{"edge", "newest"}) || !reflect.DeepEqual(d.calls, []string{"older"}) {
		t.Fatalf("kept %v, disposed %v; want only the older one disposed", locations(h), d.calls)
	}
}

// TestCompleteLegacyCheckpointNonce pins that a completed legacy checkpoint
// records the nonce that asked for it only when it was a MANUAL one, and that
// only a PERIODIC one moves lastPeriodicCheckpointTimestamp.
func TestCompleteLegacyCheckpointNonce(t *testing.T) {
	n := int64(9)
	for _, tc := range []struct {
		name         string
		trigger      v1beta1.SnapshotTriggerType
		nonce        *int64
		wantNonce    *int64
		wantPeriodic bool
	}{
		{"manual with nonce", v1beta1.SnapshotTriggerManual, &n, &n, false},
		{"manual, nonce gone", v1beta1.SnapshotTriggerManual, nil, nil, false},
		{"periodic, nonce in spec", v1beta1.SnapshotTriggerPeriodic, &n, nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			info := &v1beta1.CheckpointInfo{}
			SetLegacyCheckpointTrigger(info, "0123456789abcdef0123456789abcdef", tc.trigger, v1beta1.CheckpointTypeFull, base)
			CompleteLegacyCheckpoint(info, tc.nonce)
			want := &v1beta1.Checkpoint{TimeStamp: base.UnixMilli(), TriggerType: tc.trigger, FormatType: v1beta1.CheckpointTypeFull, TriggerNonce: tc.wantNonce}
			if diff := cmp.Diff(want, info.LastCheckpoint); diff != "" {
				t.Errorf("lastCheckpoint (-want +got):\n%s", diff)
			}
			if got := info.LastPeriodicCheckpointTimestamp == base.UnixMilli(); got != tc.wantPeriodic {
				t.Errorf("lastPeriodicCheckpointTimestamp %d", info.LastPeriodicCheckpointTimestamp)
			}
			if LegacyCheckpointPending(info) || info.TriggerTimestamp != nil || info.TriggerType != "" {
				t.Errorf("trigger not cleared: %+v", info)
			}
		})
	}
}

// TestFailLegacySnapshot pins how a legacy savepoint or checkpoint is given
// up: the trigger is cleared, and a PERIODIC one counts as this period's
// attempt (its trigger time becomes the last periodic timestamp) so it is not
// triggered again at once; a MANUAL one leaves that timestamp alone.
func TestFailLegacySnapshot(t *testing.T) {
	const previous = int64(5)
	for _, tc := range []struct {
		name         string
		trigger      v1beta1.SnapshotTriggerType
		triggered    bool
		wantPeriodic int64
	}{
		{"periodic", v1beta1.SnapshotTriggerPeriodic, true, base.UnixMilli()},
		{"manual", v1beta1.SnapshotTriggerManual, true, previous},
		{"periodic without trigger time", v1beta1.SnapshotTriggerPeriodic, false, previous},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spInfo := &v1beta1.SavepointInfo{LastPeriodicSavepointTimestamp: previous}
			SetLegacySavepointTrigger(spInfo, "0123456789abcdef0123456789abcdef", tc.trigger, v1beta1.SavepointFormatCanonical, base)
			cpInfo := &v1beta1.CheckpointInfo{LastPeriodicCheckpointTimestamp: previous}
			SetLegacyCheckpointTrigger(cpInfo, "0123456789abcdef0123456789abcdef", tc.trigger, v1beta1.CheckpointTypeFull, base)
			if !tc.triggered {
				spInfo.TriggerTimestamp, cpInfo.TriggerTimestamp = nil, nil
			}
			FailLegacySavepoint(spInfo)
			FailLegacyCheckpoint(cpInfo)
			if spInfo.LastPeriodicSavepointTimestamp != tc.wantPeriodic || cpInfo.LastPeriodicCheckpointTimestamp != tc.wantPeriodic {
				t.Errorf("last periodic timestamps %d, %d; want %d", spInfo.LastPeriodicSavepointTimestamp, cpInfo.LastPeriodicCheckpointTimestamp, tc.wantPeriodic)
			}
			if LegacySavepointPending(spInfo) || spInfo.TriggerType != "" || spInfo.TriggerTimestamp != nil || spInfo.FormatType != "" {
				t.Errorf("savepoint trigger not cleared: %+v", spInfo)
			}
			if LegacyCheckpointPending(cpInfo) || cpInfo.TriggerType != "" || cpInfo.TriggerTimestamp != nil || cpInfo.FormatType != "" {
				t.Errorf("checkpoint trigger not cleared: %+v", cpInfo)
			}
		})
	}
}
