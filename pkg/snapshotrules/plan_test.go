package snapshotrules

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/config"
)

func jobView(conf map[string]string) JobView {
	cfg := config.Defaults()
	for k, v := range conf {
		cfg[k] = v
	}
	return JobView{Kind: v1beta1.JobReferenceKindDeployment, Namespace: "flink", Name: "job", Config: cfg,
		CheckpointsSupported: true, Running: true, Since: base}
}

// Scenarios of upstream's SnapshotUtilsTest.testSavepointTriggering and
// testCheckpointTriggering*, in plan form.
func TestSavepointTriggering(t *testing.T) {
	now := base.Add(11 * time.Minute)
	if p, _ := PlanSnapshots(jobView(nil), now); len(p.Create) != 0 {
		t.Fatalf("nothing configured: created %s", names(p.Create))
	}
	p, err := PlanSnapshots(jobView(map[string]string{config.KeyPeriodicSavepointInterval: "10m"}), now)
	if err != nil || len(p.Create) != 1 {
		t.Fatalf("10m interval: %v, %s", err, names(p.Create))
	}
	if got := TriggerType(p.Create[0]); got != v1beta1.SnapshotTriggerPeriodic || p.Create[0].Name != Name("job", sp, "PERIODIC", base.Add(10*time.Minute).UnixMilli()) {
		t.Errorf("periodic snapshot %s (%s)", p.Create[0].Name, got)
	}
	v := jobView(map[string]string{config.KeyPeriodicSavepointInterval: "0"})
	v.SavepointNonce = ptr.To[int64](2)
	v.ReconciledSavepointNonce = ptr.To[int64](1)
	p, _ = PlanSnapshots(v, now)
	if len(p.Create) != 1 || TriggerType(p.Create[0]) != v1beta1.SnapshotTriggerManual || p.SavepointNonce == nil || *p.SavepointNonce != 2 {
		t.Fatalf("changed nonce: %s nonce %v", names(p.Create), p.SavepointNonce)
	}
	if p.Create[0].Name != "job-savepoint-manual-2" {
		t.Errorf("manual name %s", p.Create[0].Name)
	}
	p, _ = PlanSnapshots(jobView(map[string]string{config.KeyPeriodicSavepointInterval: "0 0 * * * ?"}), base.Add(61*time.Minute))
	if len(p.Create) != 1 {
		t.Fatalf("cron: %s", names(p.Create))
	}
}

func TestCheckpointTriggeringPre1_17(t *testing.T) {
	v := jobView(map[string]string{config.KeyPeriodicCheckpointInterval: "1m"})
	v.CheckpointsSupported = false
	v.CheckpointNonce = ptr.To[int64](5)
	if p, _ := PlanSnapshots(v, base.Add(time.Hour)); len(p.Create) != 0 || p.CheckpointNonce != nil {
		t.Fatalf("checkpoints below 1.17: %s", names(p.Create))
	}
}

func TestCheckpointTriggeringPost1_17(t *testing.T) {
	v := jobView(map[string]string{config.KeyPeriodicCheckpointInterval: "1m"})
	p, _ := PlanSnapshots(v, base.Add(2*time.Minute))
	if len(p.Create) != 1 || p.Create[0].Spec.Checkpoint == nil || p.Create[0].Spec.JobReference.Name != "job" ||
		p.Create[0].Spec.JobReference.Kind != v1beta1.JobReferenceKindDeployment {
		t.Fatalf("periodic checkpoint: %+v", p.Create)
	}
}

// Upstream's FlinkStateSnapshotUtilsTest resource shapes.
func TestCreatedResources(t *testing.T) {
	v := jobView(map[string]string{config.KeyPeriodicSavepointInterval: "1m", config.KeySavepointDisposeOnDelete: "true", config.KeySavepointFormatType: "NATIVE"})
	p, _ := PlanSnapshots(v, base.Add(2*time.Minute))
	s := p.Create[0]
	if s.Namespace != "flink" || *s.Spec.Savepoint.AlreadyExists || !*s.Spec.Savepoint.DisposeOnDelete ||
		s.Spec.Savepoint.FormatType != "NATIVE" || *s.Spec.BackoffLimit != 3 || s.Spec.Savepoint.Path != "" {
		t.Errorf("periodic savepoint %+v", s.Spec.Savepoint)
	}
	v.Config[config.FlinkSavepointDir] = "s3://bucket/sp"
	p, _ = PlanSnapshots(v, base.Add(2*time.Minute))
	if got := p.Create[0].Spec.Savepoint.Path; got != "s3://bucket/sp" {
		t.Errorf("savepoint target directory %q, want the job's savepoint dir (as upstream)", got)
	}
	up, err := UpgradeSnapshot(jobView(nil), "/sp/1", base)
	if err != nil {
		t.Fatal(err)
	}
	if TriggerType(up) != v1beta1.SnapshotTriggerUpgrade || !*up.Spec.Savepoint.AlreadyExists || up.Spec.Savepoint.Path != "/sp/1" ||
		*up.Spec.Savepoint.DisposeOnDelete || up.Name != Name("job", sp, "UPGRADE", base.UnixMilli()) {
		t.Errorf("upgrade snapshot %s %+v", up.Name, up.Spec.Savepoint)
	}
}

// [ours] A periodic interval shorter than the savepoint takes never yields
// two in flight.
func TestPeriodicNeverTwoInFlight(t *testing.T) {
	v := jobView(map[string]string{config.KeyPeriodicSavepointInterval: "10s"})
	inFlight := snap(Name("job", sp, "PERIODIC", base.Add(10*time.Second).UnixMilli()), sp, "PERIODIC", "IN_PROGRESS", base.Add(10*time.Second))
	v.Snapshots = []*v1beta1.FlinkStateSnapshot{inFlight}
	for _, after := range []time.Duration{25 * time.Second, time.Minute, time.Hour} {
		if p, _ := PlanSnapshots(v, base.Add(after)); len(p.Create) != 0 {
			t.Errorf("after %v: created %s while one is in flight", after, names(p.Create))
		}
	}
	inFlight.Status.State = v1beta1.SnapshotCompleted
	p, _ := PlanSnapshots(v, base.Add(time.Hour))
	if len(p.Create) != 1 {
		t.Fatalf("after completion: %s", names(p.Create))
	}
	// One snapshot for the newest missed slot, not one per missed slot.
	if want := Name("job", sp, "PERIODIC", base.Add(time.Hour).UnixMilli()); p.Create[0].Name != want {
		t.Errorf("name %s, want %s", p.Create[0].Name, want)
	}
}

// [ours] An operator restart does not fire an extra periodic snapshot: the
// plan depends only on the snapshots that exist, and repeats the same name.
func TestRestartDoesNotFireExtraPeriodic(t *testing.T) {
	v := jobView(map[string]string{config.KeyPeriodicSavepointInterval: "10m"})
	now := base.Add(15 * time.Minute)
	first, _ := PlanSnapshots(v, now)
	again, _ := PlanSnapshots(v, now.Add(time.Second)) // same state, "after a restart"
	if len(first.Create) != 1 || len(again.Create) != 1 || first.Create[0].Name != again.Create[0].Name {
		t.Fatalf("a repeated plan must produce the same name: %s vs %s", names(first.Create), names(again.Create))
	}
	created := first.Create[0]
	created.CreationTimestamp = metav1.NewTime(now)
	v.Snapshots = []*v1beta1.FlinkStateSnapshot{created}
	if p, _ := PlanSnapshots(v, now.Add(time.Minute)); len(p.Create) != 0 {
		t.Errorf("created another right after: %s", names(p.Create))
	}
	created.Status.State = v1beta1.SnapshotCompleted
	p, _ := PlanSnapshots(v, now.Add(time.Minute))
	if len(p.Create) != 0 || p.RequeueAfter <= 0 || p.RequeueAfter > 10*time.Minute {
		t.Errorf("next due: create %s, requeue %v", names(p.Create), p.RequeueAfter)
	}
}

func TestNotRunningWaits(t *testing.T) {
	v := jobView(map[string]string{config.KeyPeriodicSavepointInterval: "1m"})
	v.Running = false
	v.SavepointNonce = ptr.To[int64](1)
	if p, _ := PlanSnapshots(v, base.Add(time.Hour)); len(p.Create) != 0 || p.SavepointNonce != nil {
		t.Errorf("job not running: %s", names(p.Create))
	}
}

func TestPlanCleanup(t *testing.T) {
	v := jobView(map[string]string{config.KeySavepointHistoryMaxCount: "2"})
	for i := range 4 {
		v.Snapshots = append(v.Snapshots, snap(Name("job", sp, "PERIODIC", base.Add(time.Duration(i)*time.Minute).UnixMilli()), sp, "PERIODIC", "COMPLETED", base))
	}
	p, _ := PlanSnapshots(v, base.Add(time.Hour))
	if len(p.Delete) != 2 {
		t.Fatalf("deleted %s", names(p.Delete))
	}
	v.Config[config.KeySavepointCleanupEnabled] = "false"
	if p, _ := PlanSnapshots(v, base.Add(time.Hour)); len(p.Delete) != 0 {
		t.Errorf("cleanup disabled: deleted %s", names(p.Delete))
	}
}

// The UPGRADE record keeps the format the stop asked for, not the one the
// job's configuration says now.
func TestUpgradeSnapshotFormat(t *testing.T) {
	v := jobView(map[string]string{config.KeySavepointFormatType: "CANONICAL", config.FlinkSavepointDir: "s3://bucket/sp"})
	up, err := UpgradeSnapshotWithFormat(v, "s3://bucket/sp/savepoint-1", base, v1beta1.SavepointFormatNative)
	if err != nil {
		t.Fatal(err)
	}
	if up.Spec.Savepoint.FormatType != v1beta1.SavepointFormatNative || up.Spec.Savepoint.Path != "s3://bucket/sp/savepoint-1" {
		t.Errorf("upgrade snapshot %+v", up.Spec.Savepoint)
	}
	up, _ = UpgradeSnapshotWithFormat(v, "s3://bucket/sp/savepoint-1", base, "")
	if up.Spec.Savepoint.FormatType != v1beta1.SavepointFormatCanonical {
		t.Errorf("no override: format %s", up.Spec.Savepoint.FormatType)
	}
}

// A later legacy lastPeriodic timestamp counts for its own type only.
func TestLegacyPeriodicTimestamps(t *testing.T) {
	v := jobView(map[string]string{config.KeyPeriodicSavepointInterval: "10m", config.KeyPeriodicCheckpointInterval: "10m"})
	v.LegacyLastPeriodicSavepoint = base.Add(8 * time.Minute)
	p, err := PlanSnapshots(v, base.Add(12*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Create) != 1 || p.Create[0].Spec.Checkpoint == nil {
		t.Fatalf("want only the checkpoint due, got %s", names(p.Create))
	}
	if p.RequeueAfter != 6*time.Minute {
		t.Errorf("requeue %v, want the savepoint due 10 min after the legacy timestamp", p.RequeueAfter)
	}
	v.LegacyLastPeriodicSavepoint = base.Add(-time.Hour) // older than Since: ignored
	if p, _ := PlanSnapshots(v, base.Add(12*time.Minute)); len(p.Create) != 2 {
		t.Errorf("an older legacy timestamp must not matter: %s", names(p.Create))
	}
}

// A periodic interval that cannot be read disables that periodic snapshot
// only: manual nonces and cleanup still work, and the plan says why.
func TestBadIntervalOnlyWarns(t *testing.T) {
	v := jobView(map[string]string{config.KeyPeriodicSavepointInterval: "every now and then", config.KeySavepointHistoryMaxCount: "1"})
	v.SavepointNonce = ptr.To[int64](4)
	for i := range 3 {
		v.Snapshots = append(v.Snapshots, snap(Name("job", sp, "PERIODIC", base.Add(time.Duration(i)*time.Minute).UnixMilli()), sp, "PERIODIC", "COMPLETED", base))
	}
	p, err := PlanSnapshots(v, base.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Warnings) != 1 || !strings.Contains(p.Warnings[0], config.KeyPeriodicSavepointInterval) {
		t.Errorf("warnings %q", p.Warnings)
	}
	if len(p.Create) != 1 || TriggerType(p.Create[0]) != v1beta1.SnapshotTriggerManual || len(p.Delete) != 2 {
		t.Errorf("create %s, delete %s", names(p.Create), names(p.Delete))
	}
}

func TestHandledNonces(t *testing.T) {
	n := func(v int64) *int64 { return &v }
	for _, tc := range []struct {
		name                 string
		view                 JobView
		plan                 Plan
		wantSP, wantCP       *int64
		wantUnsupportedWarns bool
	}{
		{"created snapshots record their nonces",
			JobView{SavepointNonce: n(2), ReconciledSavepointNonce: n(1), CheckpointNonce: n(5), CheckpointsSupported: true},
			Plan{SavepointNonce: n(2), CheckpointNonce: n(5)}, n(2), n(5), false},
		{"removed nonces are recorded as removed",
			JobView{ReconciledSavepointNonce: n(1), ReconciledCheckpointNonce: n(3), CheckpointsSupported: true},
			Plan{}, nil, nil, false},
		{"a nonce waiting for its snapshot keeps the old value",
			JobView{SavepointNonce: n(2), ReconciledSavepointNonce: n(1), CheckpointNonce: n(3), ReconciledCheckpointNonce: n(3), CheckpointsSupported: true},
			Plan{}, n(1), n(3), false},
		{"an unsupported checkpoint nonce is consumed with a warning",
			JobView{CheckpointNonce: n(4), ReconciledCheckpointNonce: n(3)},
			Plan{}, nil, n(4), true},
	} {
		sp, cp, warn := HandledNonces(tc.view, tc.plan)
		if !nonceEqual(sp, tc.wantSP) || !nonceEqual(cp, tc.wantCP) || warn != tc.wantUnsupportedWarns {
			t.Errorf("%s: %v %v %v", tc.name, sp, cp, warn)
		}
	}
}

// TestOperatorMadeSnapshotsCarryLabelsAndFinalizerFromCreation pins that
// periodic and upgrade snapshots are created with the labels the columns and
// selectors need and, for savepoints, the finalizer, so the snapshot
// controller needs no metadata write before their trigger.
func TestOperatorMadeSnapshotsCarryLabelsAndFinalizerFromCreation(t *testing.T) {
	view := jobView(map[string]string{
		"kubernetes.operator.periodic.savepoint.interval":  "1h",
		"kubernetes.operator.periodic.checkpoint.interval": "1h",
		"kubernetes.operator.savepoint.dispose-on-delete":  "false",
		"execution.checkpointing.savepoint-dir":            "file:///sp",
	})
	p, err := PlanSnapshots(view, base.Add(2*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	upgrade, err := UpgradeSnapshot(view, "file:///sp/savepoint-1", base)
	if err != nil {
		t.Fatal(err)
	}
	disposing := jobView(map[string]string{"kubernetes.operator.savepoint.dispose-on-delete": "true"})
	upgradeDisposed, err := UpgradeSnapshot(disposing, "file:///sp/savepoint-2", base)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Create) != 2 {
		t.Fatalf("planned %s, want a periodic savepoint and checkpoint", names(p.Create))
	}
	for _, s := range append(p.Create, upgrade, upgradeDisposed) {
		wantTrigger := "PERIODIC"
		if s == upgrade || s == upgradeDisposed {
			wantTrigger = "UPGRADE"
		}
		want := map[string]string{"snapshot.type": Type(s), "snapshot.trigger-type": wantTrigger, "snapshot.state": "IN_PROGRESS",
			"job-reference.kind": "FlinkDeployment", "job-reference.name": "job"}
		for k, v := range want {
			if s.Labels[k] != v {
				t.Errorf("%s: label %s = %q, want %q", s.Name, k, s.Labels[k], v)
			}
		}
		// In flight: every savepoint the operator takes is held; an imported
		// (upgrade) one only if it will be disposed.
		wantFinalizer := Type(s) == v1beta1.SnapshotTypeSavepoint && (s != upgrade)
		if got := len(s.Finalizers) == 1 && s.Finalizers[0] == v1beta1.SnapshotFinalizer; got != wantFinalizer {
			t.Errorf("%s: finalizers %v, want finalizer %v", s.Name, s.Finalizers, wantFinalizer)
		}
	}
}

// A blue/green transition records the savepoint's name before creating it;
// after a crash the same object is built again from that name alone.
func TestTransitionSavepointSlotRoundTrip(t *testing.T) {
	slot := base.Add(1234 * time.Millisecond)
	snap, err := TransitionSavepoint(jobView(nil), slot)
	if err != nil {
		t.Fatal(err)
	}
	got, ok := TransitionSavepointSlot(snap.Name)
	if !ok || !got.Equal(slot) {
		t.Fatalf("TransitionSavepointSlot(%q) = %v, %v; want %v", snap.Name, got, ok, slot)
	}
	again, err := TransitionSavepoint(jobView(nil), got)
	if err != nil || again.Name != snap.Name {
		t.Fatalf("rebuilt from the name: %v, %v; want %s", again, err, snap.Name)
	}
	if _, ok := TransitionSavepointSlot("job-savepoint-7"); ok {
		t.Error("a name without a time slot parsed")
	}
}
