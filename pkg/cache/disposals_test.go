package cache

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/generated/clientset/versioned/fake"
	flinkinformers "github.com/flinkops/flink-operator/pkg/generated/informers/externalversions"
)

// The handed-over disposals annotation reads back what was written, sorted
// by path; an empty list removes it, and a value that does not parse is an
// error for the writer but holds no deletion.
func TestPendingDisposalsAnnotation(t *testing.T) {
	d := &v1beta1.FlinkDeployment{ObjectMeta: metav1.ObjectMeta{Name: "job", Namespace: "ns", Annotations: map[string]string{"other": "x"}}}
	list := []PendingDisposal{{Path: "file:/b", Snapshot: "ns/b", Since: "2026-12-01T10:00:00Z"}, {Path: "file:/a", Snapshot: "ns/a", Since: "2026-12-01T10:00:01Z"}}
	SetPendingDisposals(d, list)
	got, err := PendingDisposalsOf(d)
	if err != nil || len(got) != 2 || got[0] != list[1] || got[1] != list[0] {
		t.Fatalf("read back %+v, %v", got, err)
	}
	SetPendingDisposals(d, nil)
	if _, ok := d.Annotations[AnnotationPendingDisposals]; ok || d.Annotations["other"] != "x" {
		t.Fatalf("annotations %v after an empty list", d.Annotations)
	}
	d.Annotations[AnnotationPendingDisposals] = "{not json"
	if _, err := PendingDisposalsOf(d); err == nil {
		t.Error("a malformed annotation parsed")
	}
}

// PendingDisposals names what waits on a job's JobManager: its snapshots
// being deleted whose savepoint is still to be disposed of, and the
// disposals handed to it; LiveSnapshotReferrers leaves out jobs being
// deleted.
func TestPendingDisposalsAndLiveReferrers(t *testing.T) {
	now := metav1.NewTime(time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC))
	snap := func(name string, change func(*v1beta1.FlinkStateSnapshot)) *v1beta1.FlinkStateSnapshot {
		s := &v1beta1.FlinkStateSnapshot{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", DeletionTimestamp: &now, Finalizers: []string{v1beta1.SnapshotFinalizer}},
			Spec: v1beta1.FlinkStateSnapshotSpec{
				JobReference: &v1beta1.JobReference{Kind: v1beta1.JobReferenceKindDeployment, Name: "job"},
				Savepoint:    &v1beta1.SavepointSpec{DisposeOnDelete: ptr.To(true)},
			},
			Status: v1beta1.FlinkStateSnapshotStatus{State: v1beta1.SnapshotCompleted, Path: "file:/" + name},
		}
		if change != nil {
			change(s)
		}
		return s
	}
	ref := &v1beta1.JobSpec{InitialStateSnapshotRef: &v1beta1.SnapshotReference{Name: "sp"}}
	job := &v1beta1.FlinkDeployment{ObjectMeta: metav1.ObjectMeta{Name: "job", Namespace: "ns"}, Spec: v1beta1.FlinkDeploymentSpec{Job: ref}}
	SetPendingDisposals(job, []PendingDisposal{{Path: "file:/handed", Snapshot: "ns/gone", Since: "2026-12-01T10:00:00Z"}})
	leaving := &v1beta1.FlinkDeployment{ObjectMeta: metav1.ObjectMeta{Name: "leaving", Namespace: "ns", DeletionTimestamp: &now, Finalizers: []string{"x"}},
		Spec: v1beta1.FlinkDeploymentSpec{Job: ref}}
	client := fake.NewSimpleClientset(job, leaving,
		snap("disposing", nil),
		snap("released", func(s *v1beta1.FlinkStateSnapshot) { s.Finalizers = nil }),
		snap("kept", func(s *v1beta1.FlinkStateSnapshot) { s.Spec.Savepoint.DisposeOnDelete = ptr.To(false) }),
		snap("in-flight", func(s *v1beta1.FlinkStateSnapshot) { s.Status.State = v1beta1.SnapshotInProgress }),
		snap("not-deleted", func(s *v1beta1.FlinkStateSnapshot) { s.DeletionTimestamp = nil }),
		snap("other-job", func(s *v1beta1.FlinkStateSnapshot) { s.Spec.JobReference.Name = "other" }),
	)
	factory := flinkinformers.NewSharedInformerFactory(client, 0)
	c, err := New(map[string]flinkinformers.SharedInformerFactory{"": factory})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	factory.Start(ctx.Done())
	defer func() { cancel(); factory.Shutdown() }()
	factory.WaitForCacheSync(ctx.Done())

	got, err := c.PendingDisposals(v1beta1.JobReferenceKindDeployment, job)
	if err != nil || len(got) != 2 || !strings.Contains(got[0], "file:/disposing (FlinkStateSnapshot ns/disposing, being deleted)") ||
		!strings.Contains(got[1], "file:/handed (of deleted FlinkStateSnapshot ns/gone)") {
		t.Errorf("PendingDisposals = %q, %v", got, err)
	}
	if all, err := c.SnapshotReferrers("ns", "sp"); err != nil || len(all) != 2 {
		t.Errorf("SnapshotReferrers = %v, %v", all, err)
	}
	if live, err := c.LiveSnapshotReferrers("ns", "sp"); err != nil || len(live) != 1 || live[0] != "FlinkDeployment ns/job" {
		t.Errorf("LiveSnapshotReferrers = %v, %v", live, err)
	}
}
