package deployment

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	core "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	flinkcache "github.com/flinkops/flink-operator/pkg/cache"
	"github.com/flinkops/flink-operator/pkg/cluster"
	"github.com/flinkops/flink-operator/pkg/controller/controllerctx"
	"github.com/flinkops/flink-operator/pkg/controller/controllertest"
	"github.com/flinkops/flink-operator/pkg/controller/snapshot"
	"github.com/flinkops/flink-operator/pkg/flink/fakejm"
	"github.com/flinkops/flink-operator/pkg/reasons"
	"github.com/flinkops/flink-operator/pkg/snapshotrules"
)

// Savepoint disposals and the deletion of the job whose JobManager does
// them (deletion.go disposalsHoldTeardown; the snapshot side is
// pkg/controller/snapshot/handover.go).

// operator is the deployment fixture with the snapshot controller beside
// it, on the same fakes, as the operator runs them; the fake API server
// finalizes as the real one does (a delete of an object with finalizers
// marks it; the update that removes the last finalizer of a marked object
// removes it).
type operator struct {
	*fixture
	snaps *snapshot.Controller
}

func newOperator(t *testing.T) *operator {
	t.Helper()
	o := &operator{fixture: newFixture(t)}
	o.finalizing("flinkdeployments")
	o.finalizing("flinkstatesnapshots")
	var err error
	o.snaps, err = snapshot.New(controllerctx.Context{
		Client:    o.Client,
		Caches:    o.Caches,
		Recorder:  o.Recorder,
		Config:    o.Config,
		Clock:     o.Clock,
		Endpoints: controllertest.Endpoints(o.jms),
	}, snapshot.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return o
}

func (o *operator) finalizing(resource string) {
	gvr := v1beta1.SchemeGroupVersion.WithResource(resource)
	o.Client.PrependReactor("delete", resource, func(a core.Action) (bool, runtime.Object, error) {
		d := a.(core.DeleteAction)
		obj, err := o.Client.Tracker().Get(gvr, d.GetNamespace(), d.GetName())
		if err != nil {
			return false, nil, nil // NotFound from the default reactor
		}
		m, _ := meta.Accessor(obj)
		if len(m.GetFinalizers()) == 0 {
			return false, nil, nil
		}
		if m.GetDeletionTimestamp() == nil {
			m.SetDeletionTimestamp(ptr.To(metav1.NewTime(o.Clock.Now())))
			if err := o.Client.Tracker().Update(gvr, obj, d.GetNamespace()); err != nil {
				return true, nil, err
			}
		}
		return true, nil, nil
	})
	o.Client.PrependReactor("update", resource, func(a core.Action) (bool, runtime.Object, error) {
		u := a.(core.UpdateAction)
		m, _ := meta.Accessor(u.GetObject())
		if u.GetSubresource() != "" || m.GetDeletionTimestamp() == nil || len(m.GetFinalizers()) > 0 {
			return false, nil, nil
		}
		return true, u.GetObject(), o.Client.Tracker().Delete(gvr, m.GetNamespace(), m.GetName())
	})
}

// kubectlDelete deletes an object as kubectl delete does (without waiting).
func (o *operator) kubectlDelete(resource, name string) {
	o.T.Helper()
	var err error
	switch resource {
	case "flinkdeployments":
		err = o.Client.FlinkV1beta1().FlinkDeployments(ns).Delete(o.Ctx, name, metav1.DeleteOptions{})
	case "flinkstatesnapshots":
		err = o.Client.FlinkV1beta1().FlinkStateSnapshots(ns).Delete(o.Ctx, name, metav1.DeleteOptions{})
	}
	if err != nil {
		o.T.Fatal(err)
	}
}

func (o *operator) exists(resource, name string) bool {
	var err error
	switch resource {
	case "flinkdeployments":
		_, err = o.Client.FlinkV1beta1().FlinkDeployments(ns).Get(o.Ctx, name, metav1.GetOptions{})
	case "flinkstatesnapshots":
		_, err = o.Client.FlinkV1beta1().FlinkStateSnapshots(ns).Get(o.Ctx, name, metav1.GetOptions{})
	}
	return !apierrors.IsNotFound(err)
}

// run is the operator at work for n turns at most, or until done: every
// FlinkDeployment, FlinkStateSnapshot and handed-over disposal synced, the
// world's turn (kubeTick), then the earliest requeue (1 s to 30 s).
// kubectl's wait for a deletion is until(gone).
func (o *operator) run(n int, done func() bool) time.Duration {
	o.T.Helper()
	start := o.Clock.Now()
	for range n {
		if done() {
			return o.Clock.Since(start)
		}
		next := 30 * time.Second
		keep := func(d time.Duration, err error) {
			if err != nil {
				o.T.Logf("sync error (retried): %v", err)
				d = time.Second
			}
			if d > 0 {
				next = min(next, d)
			}
		}
		o.Refresh()
		deps, _ := o.Client.FlinkV1beta1().FlinkDeployments(ns).List(o.Ctx, metav1.ListOptions{})
		for _, d := range deps.Items {
			keep(o.Sync(d.Name))
			if d.Annotations[flinkcache.AnnotationPendingDisposals] != "" {
				keep(o.snaps.Sync(o.Ctx, snapshot.DisposalsKey(snapshotrules.JobKeyFor(v1beta1.JobReferenceKindDeployment, ns, d.Name))))
			}
		}
		snaps, _ := o.Client.FlinkV1beta1().FlinkStateSnapshots(ns).List(o.Ctx, metav1.ListOptions{})
		for _, s := range snaps.Items {
			o.Refresh()
			keep(o.snaps.Sync(o.Ctx, ns+"/"+s.Name))
		}
		o.Refresh()
		o.kubeTick()
		if done() {
			return o.Clock.Since(start)
		}
		o.Clock.Step(max(next, time.Second))
	}
	if !done() {
		o.T.Fatalf("not done after %d turns (%v)", n, o.Clock.Since(start))
	}
	return o.Clock.Since(start)
}

func savepointFiles(path string) bool {
	_, err := os.Stat(filepath.Join(strings.TrimPrefix(path, "file:"), "_metadata"))
	return err == nil
}

// The README's Try it, on the fakes: example-deployment, a savepoint of it
// (disposeOnDelete), example-deployment redeployed from that savepoint by
// reference, example-from-snapshot started from it; then its clean-up in
// the README's order, each kubectl delete waiting for its object to go:
// from-snapshot.yaml, savepoint.yaml (example-deployment, which holds the
// savepoint, is not being deleted yet), application.yaml. The savepoint's
// files are disposed of and every object is gone. Also in the orders
// where example-deployment's deletion begins first.
func TestCleanUpDisposesTheSavepoint(t *testing.T) {
	const app, clone, sp = "example-deployment", "example-from-snapshot", "example-savepoint"
	for _, tc := range []struct {
		name    string
		cleanUp func(o *operator)
	}{
		{"README order, kubectl waiting for each", func(o *operator) {
			o.kubectlDelete("flinkdeployments", clone)
			o.run(50, func() bool { return !o.exists("flinkdeployments", clone) })
			o.kubectlDelete("flinkstatesnapshots", sp)
			// kubectl waits for the snapshot: it must go without the
			// application's deletion.
			if took := o.run(10, func() bool { return !o.exists("flinkstatesnapshots", sp) }); took > 10*time.Second {
				t.Errorf("the savepoint's deletion took %v", took)
			}
			o.kubectlDelete("flinkdeployments", app)
			o.run(100, func() bool { return !o.exists("flinkdeployments", app) })
		}},
		{"application's deletion first (kubectl delete --wait=false), then the savepoint", func(o *operator) {
			o.kubectlDelete("flinkdeployments", clone)
			o.run(50, func() bool { return !o.exists("flinkdeployments", clone) })
			o.kubectlDelete("flinkdeployments", app)
			o.kubectlDelete("flinkstatesnapshots", sp)
			o.run(100, func() bool { return !o.exists("flinkdeployments", app) && !o.exists("flinkstatesnapshots", sp) })
		}},
		{"everything at once (a namespace's deletion)", func(o *operator) {
			o.kubectlDelete("flinkdeployments", app)
			o.kubectlDelete("flinkdeployments", clone)
			o.kubectlDelete("flinkstatesnapshots", sp)
			o.run(100, func() bool {
				return !o.exists("flinkdeployments", app) && !o.exists("flinkdeployments", clone) && !o.exists("flinkstatesnapshots", sp)
			})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := newOperator(t)
			o.Deploy(o.application(app, v1beta1.UpgradeModeSavepoint))
			// savepoint.yaml
			savepoint := &v1beta1.FlinkStateSnapshot{
				ObjectMeta: metav1.ObjectMeta{Name: sp, Namespace: ns},
				Spec: v1beta1.FlinkStateSnapshotSpec{
					JobReference: &v1beta1.JobReference{Kind: v1beta1.JobReferenceKindDeployment, Name: app},
					Savepoint:    &v1beta1.SavepointSpec{DisposeOnDelete: ptr.To(true)},
				},
			}
			if _, err := o.Client.FlinkV1beta1().FlinkStateSnapshots(ns).Create(o.Ctx, savepoint, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			var path string
			o.run(20, func() bool {
				s, err := o.Client.FlinkV1beta1().FlinkStateSnapshots(ns).Get(o.Ctx, sp, metav1.GetOptions{})
				path = s.Status.Path
				return err == nil && s.Status.State == v1beta1.SnapshotCompleted
			})
			if !savepointFiles(path) {
				t.Fatalf("no savepoint files at %q", path)
			}
			// The upgrade from that savepoint, by reference.
			o.edit(app, func(s *v1beta1.FlinkDeploymentSpec) {
				s.Job.Parallelism = ptr.To[int32](2)
				s.Job.InitialStateSnapshotRef = &v1beta1.SnapshotReference{Name: sp}
				s.Job.SavepointRedeployNonce = ptr.To[int64](1)
			})
			o.run(30, func() bool { d := o.Get(app); return running(d) && d.Status.JobStatus.UpgradeSavepointPath == path })
			// from-snapshot.yaml
			from := o.application(clone, v1beta1.UpgradeModeSavepoint)
			from.Spec.Job.InitialStateSnapshotRef = &v1beta1.SnapshotReference{Name: sp}
			o.Create(from)
			o.run(30, func() bool { return running(o.Get(clone)) })
			if p := o.jm(clone).restore; p != path {
				t.Fatalf("%s restored from %q, want %s", clone, p, path)
			}
			o.Events()

			tc.cleanUp(o)

			if savepointFiles(path) {
				t.Errorf("the savepoint's files are still at %s", path)
			}
			disposals := 0
			for _, jm := range o.JobManagers {
				for _, op := range jm.Operations() {
					if op.Kind == fakejm.OpDisposal && op.SavepointPath == path {
						disposals++
					}
				}
			}
			if disposals == 0 {
				t.Errorf("no disposal of %s asked of a JobManager", path)
			}
			deps, _ := o.Client.FlinkV1beta1().FlinkDeployments(ns).List(o.Ctx, metav1.ListOptions{})
			snaps, _ := o.Client.FlinkV1beta1().FlinkStateSnapshots(ns).List(o.Ctx, metav1.ListOptions{})
			if len(deps.Items)+len(snaps.Items) > 0 {
				t.Errorf("left: %d FlinkDeployments, %d FlinkStateSnapshots", len(deps.Items), len(snaps.Items))
			}
			events := o.Events()
			for _, e := range events {
				if strings.HasPrefix(e, "Warning ") {
					t.Errorf("event %s", e)
				}
			}
			// The JobManager disposed of it while the deletion waited.
			if !slices.ContainsFunc(events, func(e string) bool {
				return strings.HasPrefix(e, "Normal Cleanup Deletion waits") && strings.Contains(e, path)
			}) {
				t.Errorf("no event saying %s's deletion waited for the disposal: %v", app, events)
			}
		})
	}
}

// A FlinkDeployment being deleted keeps its JobManager (standalone: the
// finalizer, whose removal lets the garbage collector take the cluster;
// native: the JobManager Deployment, which it deletes first) while a
// savepoint disposal waits on it: a snapshot of it being deleted whose
// savepoint is being disposed of, or a disposal handed to it. Bounded by
// the dispose timeout after the deletion, and only while the JobManager is
// ready; said in one Normal event, giving up in a Warning.
func TestDeletionKeepsTheJobManagerForDisposals(t *testing.T) {
	deletingSnapshot := func(f *fixture) {
		s := &v1beta1.FlinkStateSnapshot{
			ObjectMeta: metav1.ObjectMeta{Name: "sp", Namespace: ns, Finalizers: []string{v1beta1.SnapshotFinalizer},
				DeletionTimestamp: ptr.To(metav1.NewTime(f.Clock.Now()))},
			Spec: v1beta1.FlinkStateSnapshotSpec{
				JobReference: &v1beta1.JobReference{Kind: v1beta1.JobReferenceKindDeployment, Name: "job"},
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
	handedOver := func(f *fixture) {
		d := f.Get("job")
		flinkcache.SetPendingDisposals(d, []flinkcache.PendingDisposal{{Path: "file:///savepoints/gone", Snapshot: ns + "/gone", Since: snapshotrules.FormatTime(f.Clock.Now())}})
		if _, err := f.Client.FlinkV1beta1().FlinkDeployments(ns).Update(f.Ctx, d, metav1.UpdateOptions{}); err != nil {
			f.T.Fatal(err)
		}
	}
	handedOverDone := func(f *fixture) {
		d := f.Get("job")
		flinkcache.SetPendingDisposals(d, nil)
		if _, err := f.Client.FlinkV1beta1().FlinkDeployments(ns).Update(f.Ctx, d, metav1.UpdateOptions{}); err != nil {
			f.T.Fatal(err)
		}
	}
	keptSnapshot := func(f *fixture) {
		deletingSnapshot(f)
		s, _ := f.Client.FlinkV1beta1().FlinkStateSnapshots(ns).Get(f.Ctx, "sp", metav1.GetOptions{})
		s.Spec.Savepoint.DisposeOnDelete = ptr.To(false)
		if _, err := f.Client.FlinkV1beta1().FlinkStateSnapshots(ns).Update(f.Ctx, s, metav1.UpdateOptions{}); err != nil {
			f.T.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name     string
		native   bool
		pending  func(f *fixture) // before the deletion
		done     func(f *fixture) // 5 s after it; nil: never
		notReady bool             // the JobManager is not ready
		held     time.Duration    // how long the deletion waits (about)
		event    string           // the Cleanup event about it
	}{
		{"a snapshot being deleted, its disposal done after 5 s", false, deletingSnapshot, snapshotReleased, false, 5 * time.Second,
			"Normal Cleanup Deletion waits (at most until 2026-12-01T10:11:"},
		{"native: the JobManager Deployment stays until the disposal is done", true, deletingSnapshot, snapshotReleased, false, 5 * time.Second,
			"Normal Cleanup Deletion waits"},
		{"a disposal handed to it, done after 5 s", false, handedOver, handedOverDone, false, 5 * time.Second,
			"of deleted FlinkStateSnapshot default/gone"},
		{"never done: at most the dispose timeout", false, deletingSnapshot, nil, false, 10 * time.Minute,
			"Warning Cleanup Savepoint disposals not done 10m0s after the deletion"},
		{"the JobManager is not ready: not held", false, deletingSnapshot, nil, true, 0,
			"Warning Cleanup The JobManager of job is not ready"},
		{"a savepoint kept on deletion: not held", false, keptSnapshot, nil, false, 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var f *fixture
			d := &v1beta1.FlinkDeployment{}
			if tc.native {
				f = newNativeFixture(t).fixture
				d = native(f.application("job", v1beta1.UpgradeModeSavepoint))
			} else {
				f = newFixture(t)
				d = f.application("job", v1beta1.UpgradeModeSavepoint)
			}
			f.Clock.SetTime(t0.Add(time.Minute)) // the event's deadline reads 10:11:00
			f.Deploy(d)
			tc.pending(f)
			f.Events()
			f.markDeleted("job")
			deleted := f.Clock.Now()
			if tc.notReady {
				jm := f.jmDeployment("job")
				jm.Status.ReadyReplicas = 0
				if _, err := f.Kube.AppsV1().Deployments(ns).UpdateStatus(f.Ctx, jm, metav1.UpdateOptions{}); err != nil {
					t.Fatal(err)
				}
				f.broken["job"] = true
			}
			done := tc.done
			for range 200 {
				if finalized(f.Get("job")) {
					break
				}
				if done != nil && !f.Clock.Now().Before(deleted.Add(5*time.Second)) {
					done(f)
					done = nil
				}
				if tc.native && tc.held > 0 && done != nil {
					if jm := f.jmDeployment("job"); jm.DeletionTimestamp != nil {
						t.Fatalf("JobManager Deployment deleted %v after the deletion, before the disposal was done", f.Clock.Since(deleted))
					}
				}
				f.Step("job")
			}
			took := f.Clock.Since(deleted)
			if !finalized(f.Get("job")) {
				t.Fatalf("finalizer still there %v after the deletion", took)
			}
			if took < tc.held || took > tc.held+30*time.Second {
				t.Errorf("finalizer removed %v after the deletion, want about %v", took, tc.held)
			}
			events := f.Events()
			if tc.event != "" && !slices.ContainsFunc(events, func(e string) bool { return strings.Contains(e, tc.event) }) {
				t.Errorf("events %v, want one with %q", events, tc.event)
			}
			waits := 0
			for _, e := range events {
				if strings.Contains(e, "Deletion waits") {
					waits++
				}
			}
			if waits > 1 || (waits == 1) != (tc.held > 0) {
				t.Errorf("%d events saying the deletion waits, want one while it does: %v", waits, events)
			}
			if tc.native {
				if _, err := f.Kube.AppsV1().Deployments(ns).Get(f.Ctx, cluster.JobManagerDeploymentName("job"), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
					t.Errorf("JobManager Deployment left after the deletion: %v", err)
				}
			}
			if !hasEvent(events, "Normal", reasons.ReasonCleanup) {
				t.Errorf("no Cleanup event: %v", events)
			}
		})
	}
}
