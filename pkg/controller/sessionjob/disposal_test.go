package sessionjob

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	flinkcache "github.com/flinkops/flink-operator/pkg/cache"
	"github.com/flinkops/flink-operator/pkg/controller/controllerctx"
	"github.com/flinkops/flink-operator/pkg/controller/controllertest"
	"github.com/flinkops/flink-operator/pkg/controller/snapshot"
	"github.com/flinkops/flink-operator/pkg/flink/fakejm"
	"github.com/flinkops/flink-operator/pkg/snapshotrules"
)

// Savepoint disposals and the deletion of a session job (deletion.go
// disposalsHoldRemoval; the snapshot side is
// pkg/controller/snapshot/handover.go).

// A deleted FlinkSessionJob, its job stopped, keeps its finalizer while a
// savepoint disposal waits on it (the snapshot controller finds the session
// cluster through it, and a handed-over disposal is recorded on it):
// bounded by the dispose timeout.
func TestDeletionWaitsForDisposals(t *testing.T) {
	deletingSnapshot := func(f *fixture) {
		s := &v1beta1.FlinkStateSnapshot{
			ObjectMeta: metav1.ObjectMeta{Name: "sp", Namespace: ns, Finalizers: []string{v1beta1.SnapshotFinalizer},
				DeletionTimestamp: ptr.To(metav1.NewTime(f.Clock.Now()))},
			Spec: v1beta1.FlinkStateSnapshotSpec{
				JobReference: &v1beta1.JobReference{Kind: v1beta1.JobReferenceKindSessionJob, Name: "job"},
				Savepoint:    &v1beta1.SavepointSpec{DisposeOnDelete: ptr.To(true)},
			},
			Status: v1beta1.FlinkStateSnapshotStatus{State: v1beta1.SnapshotCompleted, Path: "file:///savepoints/sp"},
		}
		if _, err := f.Client.FlinkV1beta1().FlinkStateSnapshots(ns).Create(f.Ctx, s, metav1.CreateOptions{}); err != nil {
			f.T.Fatal(err)
		}
	}
	snapshotReleased := func(f *fixture) {
		if err := f.Client.FlinkV1beta1().FlinkStateSnapshots(ns).Delete(f.Ctx, "sp", metav1.DeleteOptions{}); err != nil {
			f.T.Fatal(err)
		}
	}
	setHandedOver := func(list []flinkcache.PendingDisposal) func(f *fixture) {
		return func(f *fixture) {
			j := f.Get("job")
			flinkcache.SetPendingDisposals(j, list)
			if _, err := f.Client.FlinkV1beta1().FlinkSessionJobs(ns).Update(f.Ctx, j, metav1.UpdateOptions{}); err != nil {
				f.T.Fatal(err)
			}
		}
	}
	for _, tc := range []struct {
		name    string
		pending func(f *fixture) // before the deletion
		done    func(f *fixture) // 5 s after it; nil: never
		held    time.Duration    // how long the deletion waits (about)
		event   string
	}{
		{"a snapshot being deleted, its disposal done after 5 s", deletingSnapshot, snapshotReleased, 5 * time.Second,
			"Normal Cleanup Deletion waits (at most until 2026-12-01T10:1"},
		{"a disposal handed to it, done after 5 s",
			setHandedOver([]flinkcache.PendingDisposal{{Path: "file:///savepoints/gone", Snapshot: ns + "/gone", Since: snapshotrules.FormatTime(controllertest.T0)}}),
			setHandedOver(nil), 5 * time.Second, "of deleted FlinkStateSnapshot default/gone"},
		{"never done: at most the dispose timeout", deletingSnapshot, nil, 10 * time.Minute,
			"Warning Cleanup Savepoint disposals not done 10m0s after the deletion"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			f.sessionCluster("session", nil)
			f.Deploy(f.sessionJob("job", v1beta1.UpgradeModeStateless))
			tc.pending(f)
			f.Events()
			f.delete("job")
			deleted := f.Clock.Now()
			done := tc.done
			for range 200 {
				if finalized(f.Get("job")) {
					break
				}
				if done != nil && !f.Clock.Now().Before(deleted.Add(5*time.Second)) {
					done(f)
					done = nil
				}
				f.Step("job")
			}
			took := f.Clock.Since(deleted)
			if !finalized(f.Get("job")) {
				t.Fatalf("finalizer still there %v after the deletion", took)
			}
			// Cancelling the job takes a few syncs of its own.
			if took < tc.held || took > tc.held+30*time.Second {
				t.Errorf("finalizer removed %v after the deletion, want about %v", took, tc.held)
			}
			events := f.Events()
			if !slices.ContainsFunc(events, func(e string) bool { return strings.Contains(e, tc.event) }) {
				t.Errorf("events %v, want one with %q", events, tc.event)
			}
		})
	}
}

// A savepoint of a session job that the job restored from is deleted: its
// disposal is handed to the session job; the session job's deletion then
// waits while the snapshot controller disposes of it through the session
// cluster, and goes.
func TestHandedOverDisposalThroughSessionCluster(t *testing.T) {
	f := newFixture(t)
	f.sessionCluster("session", nil)
	f.Deploy(f.sessionJob("job", v1beta1.UpgradeModeSavepoint))
	snaps, err := snapshot.New(controllerctx.Context{
		Client: f.Client, Caches: f.Caches, Recorder: f.Recorder, Config: f.Config, Clock: f.Clock,
		Endpoints: func(*v1beta1.FlinkDeployment, int) (string, error) { return f.jm.URL(), nil },
	}, snapshot.Options{})
	if err != nil {
		t.Fatal(err)
	}
	syncSnap := func(key string) time.Duration {
		t.Helper()
		f.Refresh()
		d, err := snaps.Sync(f.Ctx, key)
		if err != nil {
			t.Fatalf("snapshot sync %s: %v", key, err)
		}
		f.Refresh()
		return d
	}
	sp := &v1beta1.FlinkStateSnapshot{
		ObjectMeta: metav1.ObjectMeta{Name: "sp", Namespace: ns},
		Spec: v1beta1.FlinkStateSnapshotSpec{
			JobReference: &v1beta1.JobReference{Kind: v1beta1.JobReferenceKindSessionJob, Name: "job"},
			Savepoint:    &v1beta1.SavepointSpec{DisposeOnDelete: ptr.To(true)},
		},
	}
	if _, err := f.Client.FlinkV1beta1().FlinkStateSnapshots(ns).Create(f.Ctx, sp, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var path string
	for range 10 {
		f.Clock.Step(max(syncSnap(ns+"/sp"), time.Second))
		if s, _ := f.Client.FlinkV1beta1().FlinkStateSnapshots(ns).Get(f.Ctx, "sp", metav1.GetOptions{}); s.Status.State == v1beta1.SnapshotCompleted {
			path = s.Status.Path
			break
		}
	}
	metadata := filepath.Join(strings.TrimPrefix(path, "file:"), "_metadata")
	if _, err := os.Stat(metadata); err != nil {
		t.Fatalf("no savepoint: %q, %v", path, err)
	}
	// The job restored from it: its restore point.
	j := f.Get("job")
	j.Status.JobStatus.UpgradeSavepointPath = path
	if _, err := f.Client.FlinkV1beta1().FlinkSessionJobs(ns).UpdateStatus(f.Ctx, j, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}

	s, _ := f.Client.FlinkV1beta1().FlinkStateSnapshots(ns).Get(f.Ctx, "sp", metav1.GetOptions{})
	s.DeletionTimestamp = ptr.To(metav1.NewTime(f.Clock.Now()))
	if _, err := f.Client.FlinkV1beta1().FlinkStateSnapshots(ns).Update(f.Ctx, s, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	syncSnap(ns + "/sp")
	if s, _ := f.Client.FlinkV1beta1().FlinkStateSnapshots(ns).Get(f.Ctx, "sp", metav1.GetOptions{}); slices.Contains(s.Finalizers, v1beta1.SnapshotFinalizer) {
		t.Fatal("the snapshot kept its finalizer")
	}
	if list, _ := flinkcache.PendingDisposalsOf(f.Get("job")); len(list) != 1 || list[0].Path != path {
		t.Fatalf("handed over %+v, want %s", list, path)
	}

	f.delete("job")
	key := snapshot.DisposalsKey(snapshotrules.JobKeyFor(v1beta1.JobReferenceKindSessionJob, ns, "job"))
	for range 30 {
		if finalized(f.Get("job")) {
			break
		}
		f.MustSync("job")
		d := syncSnap(key)
		f.Clock.Step(max(min(d, time.Second), time.Second))
	}
	if !finalized(f.Get("job")) {
		t.Fatalf("session job still there: %s", statusString(f.Get("job")))
	}
	if f.jm.StartedOperations(fakejm.OpDisposal) != 1 {
		t.Errorf("%d disposals, want 1", f.jm.StartedOperations(fakejm.OpDisposal))
	}
	if _, err := os.Stat(metadata); !os.IsNotExist(err) {
		t.Errorf("savepoint files still there: %v", err)
	}
	if ev := f.Events(); slices.ContainsFunc(ev, func(e string) bool { return strings.HasPrefix(e, "Warning ") }) {
		t.Errorf("Warnings: %v", ev)
	}
}
