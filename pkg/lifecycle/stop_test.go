package lifecycle

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/config"
)

var stopNow = time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)

func millis(t time.Time) *int64 {
	ms := t.UnixMilli()
	return &ms
}

// TestMarkFailedStop pins how a failed stop-with-savepoint is recorded: an
// UPGRADE trigger without a trigger id at the time of the failure, with the
// legacy savepoint history untouched.
func TestMarkFailedStop(t *testing.T) {
	history := []v1beta1.Savepoint{{Location: "s3://sp/1", TimeStamp: 1}}
	for _, tc := range []struct {
		name string
		in   *v1beta1.SavepointInfo
		want *v1beta1.SavepointInfo
	}{
		{"no savepoint info yet", nil,
			&v1beta1.SavepointInfo{TriggerTimestamp: millis(stopNow), TriggerType: v1beta1.SnapshotTriggerUpgrade}},
		{"a stop in flight with history", &v1beta1.SavepointInfo{TriggerID: "abc", TriggerTimestamp: millis(stopNow.Add(-time.Minute)), TriggerType: v1beta1.SnapshotTriggerUpgrade, SavepointHistory: history},
			&v1beta1.SavepointInfo{TriggerTimestamp: millis(stopNow), TriggerType: v1beta1.SnapshotTriggerUpgrade, SavepointHistory: history}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			js := &v1beta1.JobStatus{SavepointInfo: tc.in}
			MarkFailedStop(js, stopNow)
			if diff := cmp.Diff(tc.want, js.SavepointInfo); diff != "" {
				t.Errorf("savepointInfo (-want +got):\n%s", diff)
			}
		})
	}
}

// TestClearStopTrigger pins that only a stop's (UPGRADE) trigger is
// forgotten, that a legacy periodic or manual trigger is left alone, and
// that savepointInfo goes away only when no legacy history is left in it.
func TestClearStopTrigger(t *testing.T) {
	stop := func(mod func(*v1beta1.SavepointInfo)) *v1beta1.SavepointInfo {
		info := &v1beta1.SavepointInfo{TriggerID: "abc", TriggerTimestamp: millis(stopNow), TriggerType: v1beta1.SnapshotTriggerUpgrade, FormatType: v1beta1.SavepointFormatNative}
		if mod != nil {
			mod(info)
		}
		return info
	}
	last := &v1beta1.Savepoint{Location: "s3://sp/1", TimeStamp: 1}
	for _, tc := range []struct {
		name string
		in   *v1beta1.SavepointInfo
		want *v1beta1.SavepointInfo
	}{
		{"no savepoint info", nil, nil},
		{"stop only: savepointInfo removed", stop(nil), nil},
		{"stop with a last savepoint", stop(func(i *v1beta1.SavepointInfo) { i.LastSavepoint = last }), &v1beta1.SavepointInfo{LastSavepoint: last}},
		{"stop with history", stop(func(i *v1beta1.SavepointInfo) { i.SavepointHistory = []v1beta1.Savepoint{*last} }),
			&v1beta1.SavepointInfo{SavepointHistory: []v1beta1.Savepoint{*last}}},
		{"stop with a periodic timestamp", stop(func(i *v1beta1.SavepointInfo) { i.LastPeriodicSavepointTimestamp = 7 }),
			&v1beta1.SavepointInfo{LastPeriodicSavepointTimestamp: 7}},
		{"periodic savepoint in flight is not a stop", stop(func(i *v1beta1.SavepointInfo) { i.TriggerType = v1beta1.SnapshotTriggerPeriodic }),
			stop(func(i *v1beta1.SavepointInfo) { i.TriggerType = v1beta1.SnapshotTriggerPeriodic })},
	} {
		t.Run(tc.name, func(t *testing.T) {
			js := &v1beta1.JobStatus{SavepointInfo: tc.in}
			ClearStopTrigger(js)
			if diff := cmp.Diff(tc.want, js.SavepointInfo); diff != "" {
				t.Errorf("savepointInfo (-want +got):\n%s", diff)
			}
		})
	}
}

// TestStopTimeout pins the bound of a stop-with-savepoint: the job's
// execution.checkpointing.timeout when it is a positive duration, else
// Flink's default of 10 minutes.
func TestStopTimeout(t *testing.T) {
	for _, tc := range []struct {
		name  string
		value string
		want  time.Duration
	}{
		{"unset", "", 10 * time.Minute},
		{"configured", "5 min", 5 * time.Minute},
		{"zero", "0", 10 * time.Minute},
		{"unreadable", "soon", 10 * time.Minute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := config.Config{}
			if tc.value != "" {
				cfg[config.FlinkCheckpointTimeout] = tc.value
			}
			if got := StopTimeout(cfg); got != tc.want {
				t.Errorf("StopTimeout = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestSavepointFormat pins the format of a stop's savepoint: the configured
// kubernetes.operator.savepoint.format.type in its canonical spelling, and
// CANONICAL when unset or unreadable.
func TestSavepointFormat(t *testing.T) {
	for _, tc := range []struct {
		name  string
		value string
		want  string
	}{
		{"unset", "", "CANONICAL"},
		{"native, any case", "native", "NATIVE"},
		{"canonical", "CANONICAL", "CANONICAL"},
		{"unknown value", "compressed", "CANONICAL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := config.Config{}
			if tc.value != "" {
				cfg[config.KeySavepointFormatType] = tc.value
			}
			if got := SavepointFormat(cfg); got != tc.want {
				t.Errorf("SavepointFormat = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestRecordLegacySavepoint pins how a stop's savepoint lands in the legacy
// savepointInfo: as lastSavepoint (UPGRADE, the in-flight format, now), and
// appended to the history unless the newest entry is that path already, so a
// repeated sync records it once.
func TestRecordLegacySavepoint(t *testing.T) {
	info := &v1beta1.SavepointInfo{FormatType: v1beta1.SavepointFormatNative}
	RecordLegacySavepoint(info, "s3://sp/1", stopNow)
	first := v1beta1.Savepoint{TimeStamp: stopNow.UnixMilli(), Location: "s3://sp/1", TriggerType: v1beta1.SnapshotTriggerUpgrade, FormatType: v1beta1.SavepointFormatNative}
	if diff := cmp.Diff(&first, info.LastSavepoint); diff != "" {
		t.Errorf("lastSavepoint (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]v1beta1.Savepoint{first}, info.SavepointHistory); diff != "" {
		t.Errorf("history after the first record (-want +got):\n%s", diff)
	}

	later := stopNow.Add(time.Minute)
	RecordLegacySavepoint(info, "s3://sp/1", later)
	if len(info.SavepointHistory) != 1 {
		t.Errorf("the same path recorded again: history %+v", info.SavepointHistory)
	}

	RecordLegacySavepoint(info, "s3://sp/2", later)
	if got := locationsOf(info.SavepointHistory); !cmp.Equal(got, []string{"s3://sp/1", "s3://sp/2"}) {
		t.Errorf("history %v, want both savepoints oldest first", got)
	}
	if info.LastSavepoint.Location != "s3://sp/2" || info.LastSavepoint.TimeStamp != later.UnixMilli() {
		t.Errorf("lastSavepoint %+v, want the newest", info.LastSavepoint)
	}
}

func locationsOf(h []v1beta1.Savepoint) []string {
	var out []string
	for _, s := range h {
		out = append(out, s.Location)
	}
	return out
}
