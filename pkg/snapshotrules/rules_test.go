package snapshotrules

import (
	"regexp"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
)

func savepoint(mod func(*v1beta1.FlinkStateSnapshot)) *v1beta1.FlinkStateSnapshot {
	s := &v1beta1.FlinkStateSnapshot{
		ObjectMeta: metav1.ObjectMeta{Name: "sp", Namespace: "ns"},
		Spec: v1beta1.FlinkStateSnapshotSpec{
			JobReference: &v1beta1.JobReference{Kind: v1beta1.JobReferenceKindDeployment, Name: "job"},
			Savepoint:    &v1beta1.SavepointSpec{},
		},
	}
	if mod != nil {
		mod(s)
	}
	return s
}

func TestRetryAllowed(t *testing.T) {
	cases := []struct {
		failures, limit int32
		want            bool
	}{
		{1, -1, true}, {100, -1, true},
		{1, 0, false},
		{1, 1, true}, {2, 1, false},
		{3, 3, true}, {4, 3, false},
		{7, 7, true}, {8, 7, false},
	}
	for _, c := range cases {
		if got := RetryAllowed(c.failures, c.limit); got != c.want {
			t.Errorf("RetryAllowed(failures=%d, limit=%d) = %v, want %v", c.failures, c.limit, got, c.want)
		}
	}
}

func TestRetryDelayDoublesAndCaps(t *testing.T) {
	want := map[int32]time.Duration{
		0: 10 * time.Second, 1: 10 * time.Second, 2: 20 * time.Second, 3: 40 * time.Second,
		6: 320 * time.Second, 7: 10 * time.Minute, 8: 10 * time.Minute, 63: 10 * time.Minute, 1 << 30: 10 * time.Minute,
	}
	for failures, d := range want {
		if got := RetryDelay(failures); got != d {
			t.Errorf("RetryDelay(%d) = %v, want %v", failures, got, d)
		}
	}
}

func TestBackoffLimitDefaultsToUnlimited(t *testing.T) {
	if got := BackoffLimit(savepoint(nil)); got != -1 {
		t.Errorf("unset backoffLimit = %d, want -1", got)
	}
	if got := BackoffLimit(savepoint(func(s *v1beta1.FlinkStateSnapshot) { s.Spec.BackoffLimit = ptr.To[int32](3) })); got != 3 {
		t.Errorf("backoffLimit = %d, want 3", got)
	}
}

func TestDisposeOnDeleteDefaults(t *testing.T) {
	cases := []struct {
		name string
		mod  func(*v1beta1.FlinkStateSnapshot)
		want bool
	}{
		{"triggered savepoint, unset", nil, true},
		{"triggered savepoint, false", func(s *v1beta1.FlinkStateSnapshot) { s.Spec.Savepoint.DisposeOnDelete = ptr.To(false) }, false},
		{"imported savepoint, unset", func(s *v1beta1.FlinkStateSnapshot) { s.Spec.Savepoint.AlreadyExists = ptr.To(true) }, false},
		{"imported savepoint, true", func(s *v1beta1.FlinkStateSnapshot) {
			s.Spec.Savepoint.AlreadyExists = ptr.To(true)
			s.Spec.Savepoint.DisposeOnDelete = ptr.To(true)
		}, true},
		{"checkpoint", func(s *v1beta1.FlinkStateSnapshot) {
			s.Spec.Savepoint = nil
			s.Spec.Checkpoint = &v1beta1.CheckpointSpec{}
		}, false},
	}
	for _, c := range cases {
		if got := DisposeOnDelete(savepoint(c.mod)); got != c.want {
			t.Errorf("%s: DisposeOnDelete = %v, want %v", c.name, got, c.want)
		}
	}
}

func TestPollDelayBacksOff(t *testing.T) {
	cases := map[time.Duration]time.Duration{
		0: time.Second, 500 * time.Millisecond: time.Second, 10 * time.Second: 5 * time.Second,
		time.Minute: 30 * time.Second, time.Hour: 30 * time.Second,
	}
	for elapsed, want := range cases {
		if got := PollDelay(elapsed); got != want {
			t.Errorf("PollDelay(%v) = %v, want %v", elapsed, got, want)
		}
	}
}

func TestTriggerIDShape(t *testing.T) {
	re := regexp.MustCompile(`^[0-9a-f]{32}$`)
	a, b := NewTriggerID(), NewTriggerID()
	if !re.MatchString(a) || !re.MatchString(b) || a == b {
		t.Fatalf("trigger ids %q, %q: want distinct 32 lowercase hex", a, b)
	}
}

func TestTimeRoundTrip(t *testing.T) {
	now := time.Date(2026, 12, 2, 10, 0, 0, 123456000, time.FixedZone("x", 3600))
	s := FormatTime(now)
	if s != "2026-12-02T09:00:00.123456Z" {
		t.Fatalf("FormatTime = %q", s)
	}
	back, ok := ParseTime(s)
	if !ok || !back.Equal(now) {
		t.Fatalf("ParseTime(%q) = %v, %v", s, back, ok)
	}
	if _, ok := ParseTime("yesterday"); ok {
		t.Fatal("malformed time parsed")
	}
}

func TestTriggerTypeFromLabel(t *testing.T) {
	for label, want := range map[string]v1beta1.SnapshotTriggerType{
		"": v1beta1.SnapshotTriggerUnknown, "bogus": v1beta1.SnapshotTriggerUnknown,
		"MANUAL": v1beta1.SnapshotTriggerManual, "PERIODIC": v1beta1.SnapshotTriggerPeriodic, "UPGRADE": v1beta1.SnapshotTriggerUpgrade,
	} {
		s := savepoint(func(s *v1beta1.FlinkStateSnapshot) {
			s.Labels = map[string]string{v1beta1.LabelSnapshotTriggerType: label}
		})
		if got := TriggerType(s); got != want {
			t.Errorf("label %q: TriggerType = %q, want %q", label, got, want)
		}
	}
}

func TestDesiredLabels(t *testing.T) {
	cases := []struct {
		name     string
		snap     *v1beta1.FlinkStateSnapshot
		state    v1beta1.SnapshotState
		jobFound bool
		want     map[string]string
	}{
		{"in flight, job missing: IN_PROGRESS, no job labels", savepoint(nil), v1beta1.SnapshotInProgress, false,
			map[string]string{"snapshot.type": "SAVEPOINT", "snapshot.trigger-type": "MANUAL", "snapshot.state": "IN_PROGRESS"}},
		{"completed with job", savepoint(nil), v1beta1.SnapshotCompleted, true,
			map[string]string{"snapshot.type": "SAVEPOINT", "snapshot.trigger-type": "MANUAL", "snapshot.state": "COMPLETED",
				"job-reference.kind": "FlinkDeployment", "job-reference.name": "job"}},
		{"trigger type never overwritten, user labels kept, wrong type reverted",
			savepoint(func(s *v1beta1.FlinkStateSnapshot) {
				s.Labels = map[string]string{"snapshot.trigger-type": "PERIODIC", "team": "a", "snapshot.type": "CHECKPOINT", "snapshot.state": "FAILED"}
			}), v1beta1.SnapshotTriggerPending, false,
			map[string]string{"snapshot.type": "SAVEPOINT", "snapshot.trigger-type": "PERIODIC", "team": "a", "snapshot.state": "IN_PROGRESS"}},
		{"cross-namespace reference",
			savepoint(func(s *v1beta1.FlinkStateSnapshot) { s.Spec.JobReference.Namespace = "other" }), v1beta1.SnapshotFailed, true,
			map[string]string{"snapshot.type": "SAVEPOINT", "snapshot.trigger-type": "MANUAL", "snapshot.state": "FAILED",
				"job-reference.kind": "FlinkDeployment", "job-reference.name": "job", "job-reference.namespace": "other"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := c.snap.DeepCopy()
			got := DesiredLabels(c.snap, c.state, c.jobFound)
			if diff := cmp.Diff(c.want, got); diff != "" {
				t.Errorf("labels (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(before, c.snap); diff != "" {
				t.Errorf("DesiredLabels mutated its input:\n%s", diff)
			}
		})
	}
}

// TestNeedsFinalizer pins which snapshots are held on deletion: every
// savepoint the operator takes while it is not finished (Flink may still be
// writing it), afterwards only COMPLETED ones with disposeOnDelete.
func TestNeedsFinalizer(t *testing.T) {
	dispose := func(v bool) func(*v1beta1.FlinkStateSnapshot) {
		return func(s *v1beta1.FlinkStateSnapshot) { s.Spec.Savepoint.DisposeOnDelete = &v }
	}
	imported := func(s *v1beta1.FlinkStateSnapshot) {
		yes := true
		s.Spec.Savepoint.AlreadyExists = &yes
	}
	checkpoint := func(s *v1beta1.FlinkStateSnapshot) {
		s.Spec.Savepoint, s.Spec.Checkpoint = nil, &v1beta1.CheckpointSpec{}
	}
	for _, c := range []struct {
		name  string
		snap  *v1beta1.FlinkStateSnapshot
		state v1beta1.SnapshotState
		want  bool
	}{
		{"pending savepoint, dispose", savepoint(dispose(true)), v1beta1.SnapshotTriggerPending, true},
		{"in-progress savepoint, keep", savepoint(dispose(false)), v1beta1.SnapshotInProgress, true},
		{"completed savepoint, dispose", savepoint(dispose(true)), v1beta1.SnapshotCompleted, true},
		{"completed savepoint, keep", savepoint(dispose(false)), v1beta1.SnapshotCompleted, false},
		{"failed savepoint, dispose", savepoint(dispose(true)), v1beta1.SnapshotFailed, false},
		{"abandoned savepoint, dispose", savepoint(dispose(true)), v1beta1.SnapshotAbandoned, false},
		{"imported, default", savepoint(imported), v1beta1.SnapshotTriggerPending, false},
		{"imported, dispose", savepoint(func(s *v1beta1.FlinkStateSnapshot) { imported(s); dispose(true)(s) }), v1beta1.SnapshotTriggerPending, true},
		{"checkpoint in flight", savepoint(checkpoint), v1beta1.SnapshotInProgress, false},
	} {
		if got := NeedsFinalizer(c.snap, c.state); got != c.want {
			t.Errorf("%s: NeedsFinalizer = %v, want %v", c.name, got, c.want)
		}
	}
}

func TestJobKeyAndNamespace(t *testing.T) {
	s := savepoint(nil)
	if got := JobKey(s); got != "FlinkDeployment/ns/job" {
		t.Errorf("JobKey = %q", got)
	}
	s.Spec.JobReference.Namespace = "b"
	if got := JobKey(s); got != "FlinkDeployment/b/job" || !IsCrossNamespace(s) {
		t.Errorf("cross-namespace JobKey = %q, cross=%v", got, IsCrossNamespace(s))
	}
	s.Spec.JobReference = nil
	if got := JobKey(s); got != "" {
		t.Errorf("no reference: JobKey = %q", got)
	}
}
