package snapshotrules

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
)

var base = time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)

// snap makes a snapshot created `ageH` hours before base+48h.
func snap(name, typ string, trigger v1beta1.SnapshotTriggerType, state v1beta1.SnapshotState, created time.Time) *v1beta1.FlinkStateSnapshot {
	s := &v1beta1.FlinkStateSnapshot{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", CreationTimestamp: metav1.NewTime(created),
			Labels: map[string]string{v1beta1.LabelSnapshotTriggerType: string(trigger)}},
		Status: v1beta1.FlinkStateSnapshotStatus{State: state, Path: "/sp/" + name},
	}
	if typ == v1beta1.SnapshotTypeSavepoint {
		s.Spec.Savepoint = &v1beta1.SavepointSpec{}
	} else {
		s.Spec.Checkpoint = &v1beta1.CheckpointSpec{}
	}
	return s
}

func names(list []*v1beta1.FlinkStateSnapshot) string {
	var out []string
	for _, s := range list {
		out = append(out, s.Name)
	}
	return strings.Join(out, ",")
}

const (
	sp = v1beta1.SnapshotTypeSavepoint
	cp = v1beta1.SnapshotTypeCheckpoint
)

// Scenarios from upstream's SnapshotObserverTest, plus ours.
func TestSnapshotTypeCleanup(t *testing.T) {
	all := []*v1beta1.FlinkStateSnapshot{
		snap("sp1", sp, "PERIODIC", "COMPLETED", base), snap("sp2", sp, "PERIODIC", "COMPLETED", base.Add(time.Hour)),
		snap("cp1", cp, "PERIODIC", "COMPLETED", base), snap("cp2", cp, "PERIODIC", "COMPLETED", base.Add(time.Hour)),
	}
	if got := names(SelectForCleanup(all, sp, CleanupPolicy{MaxCount: 1}, base, nil)); got != "sp1" {
		t.Errorf("savepoints: %q", got)
	}
	if got := names(SelectForCleanup(all, cp, CleanupPolicy{MaxCount: 1}, base, nil)); got != "cp1" {
		t.Errorf("checkpoints: %q", got)
	}
}

func TestSnapshotKeepOneCompleted(t *testing.T) {
	all := []*v1beta1.FlinkStateSnapshot{
		snap("ok", sp, "PERIODIC", "COMPLETED", base),
		snap("f1", sp, "PERIODIC", "FAILED", base.Add(time.Hour)),
		snap("f2", sp, "PERIODIC", "FAILED", base.Add(2*time.Hour)),
	}
	if got := names(SelectForCleanup(all, sp, CleanupPolicy{MaxCount: 1}, base, nil)); got != "f1" {
		t.Errorf("got %q, want the older failed one only (newest COMPLETED kept)", got)
	}
}

func TestAgeBasedCleanupSavepoint(t *testing.T) {
	now := base.Add(48 * time.Hour)
	all := []*v1beta1.FlinkStateSnapshot{
		snap("old-completed", sp, "PERIODIC", "COMPLETED", base),
		snap("old-upgrade", sp, "UPGRADE", "COMPLETED", base.Add(time.Hour)),
		snap("old-failed", sp, "PERIODIC", "FAILED", base.Add(2*time.Hour)),
		snap("old-manual", sp, "MANUAL", "COMPLETED", base),
		snap("newest-completed", sp, "PERIODIC", "COMPLETED", base.Add(3*time.Hour)),
		snap("young", sp, "PERIODIC", "ABANDONED", now.Add(-time.Hour)),
	}
	got := names(SelectForCleanup(all, sp, CleanupPolicy{MaxAge: 24 * time.Hour}, now, nil))
	if got != "old-failed,old-upgrade,old-completed" {
		t.Errorf("got %q", got)
	}
}

func TestAgeBasedCleanupSavepointKeepOne(t *testing.T) {
	now := base.Add(48 * time.Hour)
	all := []*v1beta1.FlinkStateSnapshot{
		snap("a", sp, "PERIODIC", "FAILED", base), snap("b", sp, "PERIODIC", "ABANDONED", base.Add(time.Hour)),
	}
	if got := names(SelectForCleanup(all, sp, CleanupPolicy{MaxAge: time.Hour}, now, nil)); got != "a" {
		t.Errorf("got %q, want the newest kept", got)
	}
}

func TestAgeBasedCleanupCheckpoint(t *testing.T) {
	now := base.Add(48 * time.Hour)
	all := []*v1beta1.FlinkStateSnapshot{snap("a", cp, "PERIODIC", "COMPLETED", base), snap("b", cp, "PERIODIC", "COMPLETED", base.Add(time.Hour))}
	if got := SelectForCleanup(all, cp, CleanupPolicy{MaxCount: 10}, now, nil); len(got) != 0 {
		t.Errorf("checkpoints have no age rule, got %s", names(got))
	}
}

func TestCountBasedCleanupSavepoint(t *testing.T) {
	var all []*v1beta1.FlinkStateSnapshot
	states := []v1beta1.SnapshotState{"COMPLETED", "COMPLETED", "FAILED", "COMPLETED", "ABANDONED", "COMPLETED"}
	for i, st := range states {
		trig := v1beta1.SnapshotTriggerType("PERIODIC")
		if i%2 == 1 {
			trig = "UPGRADE"
		}
		all = append(all, snap(string(rune('a'+i)), sp, trig, st, base.Add(time.Duration(i)*time.Hour)))
	}
	all = append(all, snap("manual", sp, "MANUAL", "COMPLETED", base.Add(-time.Hour)))
	if got := names(SelectForCleanup(all, sp, CleanupPolicy{MaxCount: 2}, base, nil)); got != "d,c,b,a" {
		t.Errorf("got %q, want the 4 oldest of 6", got)
	}
}

func TestCountBasedCleanupCheckpoint(t *testing.T) {
	var all []*v1beta1.FlinkStateSnapshot
	for i := range 6 {
		all = append(all, snap(string(rune('a'+i)), cp, "PERIODIC", "COMPLETED", base.Add(time.Duration(i)*time.Hour)))
	}
	if got := names(SelectForCleanup(all, cp, CleanupPolicy{MaxCount: 2}, base, nil)); got != "d,c,b,a" {
		t.Errorf("got %q", got)
	}
}

func TestCleanupNeverDeletesInFlight(t *testing.T) {
	all := []*v1beta1.FlinkStateSnapshot{
		snap("pending", sp, "PERIODIC", "TRIGGER_PENDING", base),
		snap("running", sp, "PERIODIC", "IN_PROGRESS", base.Add(time.Hour)),
		snap("new", sp, "PERIODIC", "", base.Add(90*time.Minute)),
		snap("done", sp, "PERIODIC", "COMPLETED", base.Add(2*time.Hour)),
	}
	if got := SelectForCleanup(all, sp, CleanupPolicy{MaxCount: 1, MaxAge: time.Minute}, base.Add(48*time.Hour), nil); len(got) != 0 {
		t.Errorf("deleted in-flight snapshots: %s", names(got))
	}
}

func TestCleanupKeepsRestorePoint(t *testing.T) {
	all := []*v1beta1.FlinkStateSnapshot{
		snap("restore", sp, "UPGRADE", "COMPLETED", base),
		snap("x", sp, "PERIODIC", "COMPLETED", base.Add(time.Hour)),
		snap("newest", sp, "PERIODIC", "COMPLETED", base.Add(2*time.Hour)),
	}
	if got := names(SelectForCleanup(all, sp, CleanupPolicy{MaxCount: 1}, base, []string{"/sp/restore"})); got != "x" {
		t.Errorf("got %q", got)
	}
}

func TestNameIsDeterministicAndBounded(t *testing.T) {
	slot := base.UnixMilli()
	n := Name("my-job", sp, v1beta1.SnapshotTriggerPeriodic, slot)
	if n != "my-job-savepoint-periodic-1796083200000" || Name("my-job", sp, v1beta1.SnapshotTriggerPeriodic, slot) != n {
		t.Fatalf("name %q", n)
	}
	if got := CreatedAt(&v1beta1.FlinkStateSnapshot{ObjectMeta: metav1.ObjectMeta{Name: n}}); !got.Equal(base) {
		t.Errorf("CreatedAt from name = %v", got)
	}
	long := Name(strings.Repeat("j", 300), cp, v1beta1.SnapshotTriggerUpgrade, slot)
	if len(long) > 253 || !strings.HasSuffix(long, "-checkpoint-upgrade-1796083200000") {
		t.Errorf("long name %d chars: %q", len(long), long[len(long)-40:])
	}
}

// Scenarios from upstream's SnapshotTriggerTimestampStoreTest, with ours:
// in-flight periodic snapshots count.
func TestTimestampStore(t *testing.T) {
	created := base
	if got := LastPeriodicTrigger(nil, sp, created); !got.Equal(created) {
		t.Errorf("no snapshots: %v", got)
	}
	slot := base.Add(time.Hour)
	all := []*v1beta1.FlinkStateSnapshot{
		snap(Name("job", sp, "PERIODIC", slot.UnixMilli()), sp, "PERIODIC", "IN_PROGRESS", slot.Add(time.Second)),
		snap("manual", sp, "MANUAL", "COMPLETED", base.Add(5*time.Hour)),
		snap("cp", cp, "PERIODIC", "COMPLETED", base.Add(6*time.Hour)),
	}
	if got := LastPeriodicTrigger(all, sp, created); !got.Equal(slot) {
		t.Errorf("got %v, want the in-flight periodic slot %v", got, slot)
	}
	legacy := base.Add(2 * time.Hour)
	if got := LastPeriodicTrigger(all, sp, legacy); !got.Equal(legacy) {
		t.Errorf("a later legacy timestamp should win: %v", got)
	}
}

// [ours] The newest PERIODIC snapshot anchors the periodic schedule: newer
// UPGRADE snapshots (or the age rule) never push it out, or the next plan
// would count from the job's creation and repeat an old slot.
func TestCleanupKeepsScheduleAnchor(t *testing.T) {
	now := base.Add(48 * time.Hour)
	all := []*v1beta1.FlinkStateSnapshot{
		snap("p1", sp, "PERIODIC", "COMPLETED", base),
		snap("p2", sp, "PERIODIC", "FAILED", base.Add(time.Hour)),
		snap("u1", sp, "UPGRADE", "COMPLETED", base.Add(2*time.Hour)),
		snap("u2", sp, "UPGRADE", "COMPLETED", base.Add(3*time.Hour)),
	}
	if got := names(SelectForCleanup(all, sp, CleanupPolicy{MaxCount: 1}, now, nil)); got != "u1,p1" {
		t.Errorf("count rule: got %q, want the newest periodic p2 kept", got)
	}
	if got := names(SelectForCleanup(all, sp, CleanupPolicy{MaxAge: time.Hour}, now, nil)); got != "u1,p1" {
		t.Errorf("age rule: got %q, want the newest periodic p2 kept", got)
	}
}
