package snapshot

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	core "k8s.io/client-go/testing"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	flinkcache "github.com/flinkops/flink-operator/pkg/cache"
	"github.com/flinkops/flink-operator/pkg/flink/fakejm"
	"github.com/flinkops/flink-operator/pkg/reasons"
	"github.com/flinkops/flink-operator/pkg/snapshotrules"
)

// Handed-over disposals (handover.go): a deleted savepoint that jobs not
// being deleted still hold is disposed of once they are all being deleted
// or gone, within the dispose timeout, and kept otherwise.

// disposalsOf returns the disposals handed to a job (none when it is gone).
func (f *fixture) disposalsOf(kind v1beta1.JobReferenceKind, name string) []flinkcache.PendingDisposal {
	f.T.Helper()
	var obj metav1.Object
	var err error
	switch kind {
	case v1beta1.JobReferenceKindDeployment:
		obj, err = f.Client.FlinkV1beta1().FlinkDeployments(ns).Get(f.Ctx, name, metav1.GetOptions{})
	default:
		obj, err = f.Client.FlinkV1beta1().FlinkSessionJobs(ns).Get(f.Ctx, name, metav1.GetOptions{})
	}
	if err != nil {
		return nil
	}
	list, err := flinkcache.PendingDisposalsOf(obj)
	if err != nil {
		f.T.Fatal(err)
	}
	return list
}

// syncDisposals runs one sync of the disposals handed to a job.
func (f *fixture) syncDisposals(kind v1beta1.JobReferenceKind, name string) time.Duration {
	f.T.Helper()
	f.Refresh()
	d, err := f.ctrl.Sync(f.Ctx, DisposalsKey(snapshotrules.JobKeyFor(kind, ns, name)))
	if err != nil {
		f.T.Fatalf("sync of the disposals handed to %s: %v", name, err)
	}
	f.Refresh()
	return d
}

// settleDisposals syncs the disposals handed to a job, stepping the clock
// by each requeue, until none is left; it returns how long that took.
func (f *fixture) settleDisposals(kind v1beta1.JobReferenceKind, name string) time.Duration {
	f.T.Helper()
	start := f.Clock.Now()
	for range 200 {
		if len(f.disposalsOf(kind, name)) == 0 {
			return f.Clock.Since(start)
		}
		d := f.syncDisposals(kind, name)
		if d == 0 && len(f.disposalsOf(kind, name)) > 0 {
			f.T.Fatalf("disposals handed to %s left without a requeue: %+v", name, f.disposalsOf(kind, name))
		}
		f.Clock.Step(d)
	}
	f.T.Fatalf("disposals handed to %s never settled: %+v", name, f.disposalsOf(kind, name))
	return 0
}

// jobDeleted marks FlinkDeployments deleted, as the API server does for
// objects with finalizers.
func jobDeleted(names ...string) func(f *fixture) {
	return func(f *fixture) {
		for _, name := range names {
			dep, err := f.Client.FlinkV1beta1().FlinkDeployments(ns).Get(f.Ctx, name, metav1.GetOptions{})
			if err != nil {
				f.T.Fatal(err)
			}
			dep.DeletionTimestamp = &metav1.Time{Time: f.Clock.Now()}
			if _, err := f.Client.FlinkV1beta1().FlinkDeployments(ns).Update(f.Ctx, dep, metav1.UpdateOptions{}); err != nil {
				f.T.Fatal(err)
			}
		}
	}
}

// jobGone removes FlinkDeployments.
func jobGone(names ...string) func(f *fixture) {
	return func(f *fixture) {
		for _, name := range names {
			if err := f.Client.FlinkV1beta1().FlinkDeployments(ns).Delete(f.Ctx, name, metav1.DeleteOptions{}); err != nil {
				f.T.Fatal(err)
			}
		}
	}
}

// readmeWorld is the README's Try it before its clean-up: a savepoint sp
// of job (real files, disposeOnDelete), job redeployed from it by
// reference (so it is job's restore point too), and a second application,
// clone, started from it by reference.
func readmeWorld(t *testing.T, f *fixture) (*fakejm.Server, string) {
	t.Helper()
	jm := f.addCluster("job", v1beta1.FlinkVersion1_20, nil)
	f.Create(savepointSnap("sp", "job"))
	path := f.drive("sp", 10).Status.Path
	if !metadataExists(path) || !containsString(f.Get("sp").Finalizers, v1beta1.SnapshotFinalizer) {
		t.Fatalf("no savepoint to dispose at %q", path)
	}
	ref := &v1beta1.SnapshotReference{Name: "sp"}
	dep, err := f.Client.FlinkV1beta1().FlinkDeployments(ns).Get(f.Ctx, "job", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	dep.Spec.Job.InitialStateSnapshotRef = ref
	dep.Status.JobStatus.UpgradeSavepointPath = path
	if _, err := f.Client.FlinkV1beta1().FlinkDeployments(ns).Update(f.Ctx, dep, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	clone := &v1beta1.FlinkDeployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "clone"},
		Spec:       v1beta1.FlinkDeploymentSpec{Job: &v1beta1.JobSpec{JarURI: "local:///opt/flink/job.jar", InitialStateSnapshotRef: ref}},
		Status:     v1beta1.FlinkDeploymentStatus{JobStatus: v1beta1.JobStatus{UpgradeSavepointPath: path}},
	}
	if _, err := f.Client.FlinkV1beta1().FlinkDeployments(ns).Create(f.Ctx, clone, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return jm, path
}

// timed is a change of the world some time after the snapshot's deletion.
type timed struct {
	after time.Duration
	do    func(f *fixture)
}

// The README's clean-up deletes from-snapshot.yaml, then savepoint.yaml,
// then application.yaml, each kubectl delete waiting for the finalizers: the
// savepoint is deleted while the application restored from it still runs.
// Its disposal waits for the jobs that hold it (bounded), then happens
// through the snapshot's job's JobManager; a holder that stays keeps the
// data. Whatever the order, the snapshot goes at once (kubectl waits for
// it), and each disposal ends within the dispose timeout.
func TestDeletedSavepointHeldByJobs(t *testing.T) {
	type want struct {
		handed   bool   // the snapshot's deletion handed the disposal to job (DisposeDeferred)
		disposed bool   // Flink disposed of the files
		skipped  string // in the DisposeSkipped event; "" none
	}
	for _, tc := range []struct {
		name   string
		before func(f *fixture) // before the snapshot's deletion
		after  []timed          // after it
		want   want
	}{
		{"README order: the referrer is gone, the application restored from it is deleted next",
			jobGone("clone"), []timed{{5 * time.Second, jobDeleted("job")}}, want{handed: true, disposed: true}},
		{"the referrer is still being deleted, then the application",
			jobDeleted("clone"), []timed{{5 * time.Second, jobDeleted("job")}}, want{handed: true, disposed: true}},
		{"operator restarts while the disposal waits",
			jobGone("clone"), []timed{{2 * time.Second, (*fixture).Restart}, {5 * time.Second, jobDeleted("job")}}, want{handed: true, disposed: true}},
		{"the referrer is deleted after the application",
			nil, []timed{{5 * time.Second, jobDeleted("job")}, {time.Minute, jobGone("clone")}}, want{handed: true, disposed: true}},
		{"every holder already being deleted: disposed at once",
			jobDeleted("clone", "job"), nil, want{disposed: true}},
		{"the application restored from it stays: kept, DisposeSkipped at the bound",
			jobGone("clone"), nil, want{handed: true, skipped: "FlinkDeployment default/job (spec.job.initialStateSnapshotRef, its restore point)"}},
		{"a referrer stays: kept",
			nil, []timed{{5 * time.Second, jobDeleted("job")}}, want{handed: true, skipped: "FlinkDeployment default/clone (spec.job.initialStateSnapshotRef)"}},
		{"the application is deleted only after the bound: kept",
			jobGone("clone"), []timed{{11 * time.Minute, jobDeleted("job")}}, want{handed: true, skipped: "its restore point"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			jm, path := readmeWorld(t, f)
			if tc.before != nil {
				tc.before(f)
			}
			f.Events()
			markDeleted(t, f, "sp")
			deleted := f.Clock.Now()

			// The controller's queue, as its handlers fill it: the
			// snapshot at once; the job's handed-over disposals when the
			// job's annotation or deletion changes.
			snapKey, dispKey := ns+"/sp", DisposalsKey(snapshotrules.JobKeyFor(v1beta1.JobReferenceKindDeployment, ns, "job"))
			due := map[string]time.Time{snapKey: deleted}
			look := func() string {
				dep, err := f.Client.FlinkV1beta1().FlinkDeployments(ns).Get(f.Ctx, "job", metav1.GetOptions{})
				if err != nil {
					return "gone"
				}
				return fmt.Sprint(dep.Annotations[flinkcache.AnnotationPendingDisposals], dep.DeletionTimestamp != nil)
			}
			seen := look()
			actions := tc.after
			end := deleted.Add(25 * time.Minute)
			for f.Clock.Now().Before(end) && (len(due) > 0 || len(actions) > 0) {
				now := f.Clock.Now()
				for len(actions) > 0 && !deleted.Add(actions[0].after).After(now) {
					actions[0].do(f)
					actions = actions[1:]
				}
				for key, at := range due {
					if at.After(now) {
						continue
					}
					delete(due, key)
					f.Refresh()
					d, err := f.ctrl.Sync(f.Ctx, key)
					f.Refresh()
					switch {
					case err != nil:
						due[key] = now.Add(time.Second) // rate-limited retry
					case d > 0:
						due[key] = now.Add(d)
					}
				}
				if cur := look(); cur != seen {
					seen = cur
					due[dispKey] = now
				}
				if len(due) == 0 && len(actions) == 0 {
					break
				}
				next := end
				for _, at := range due {
					next = minTime(next, at)
				}
				if len(actions) > 0 {
					next = minTime(next, deleted.Add(actions[0].after))
				}
				f.Clock.SetTime(maxTime(next, now.Add(time.Millisecond)))
			}
			took := f.Clock.Since(deleted)

			events := f.Events()
			if got := countEvents(events, reasons.ReasonDisposeDeferred) > 0; got != tc.want.handed {
				t.Errorf("handed over: %v, want %v (events %v)", got, tc.want.handed, events)
			}
			disposals := jm.StartedOperations(fakejm.OpDisposal)
			if tc.want.disposed {
				if disposals == 0 || metadataExists(path) {
					t.Errorf("%d disposals, files there: %v; want the savepoint disposed of (events %v)", disposals, metadataExists(path), events)
				}
			} else if disposals != 0 || !metadataExists(path) {
				t.Errorf("%d disposals, files there: %v; want the savepoint kept (events %v)", disposals, metadataExists(path), events)
			}
			skipped := ""
			for _, e := range events {
				if strings.Contains(e, " "+reasons.ReasonDisposeSkipped+" ") {
					skipped += e + "\n"
				}
			}
			switch {
			case tc.want.skipped == "" && skipped != "":
				t.Errorf("DisposeSkipped: %s", skipped)
			case tc.want.skipped != "" && !strings.Contains(skipped, tc.want.skipped):
				t.Errorf("DisposeSkipped events %q, want one naming %q (events %v)", skipped, tc.want.skipped, events)
			}
			if !gone(f, "sp") {
				t.Error("the snapshot kept its finalizer")
			}
			if len(due) > 0 || len(actions) > 0 {
				t.Errorf("not settled %v after the deletion: due %v, disposals handed over %+v", took, due, f.disposalsOf(v1beta1.JobReferenceKindDeployment, "job"))
			}
			if left := f.disposalsOf(v1beta1.JobReferenceKindDeployment, "job"); len(left) > 0 {
				t.Errorf("disposals left on the job: %+v", left)
			}
			if n := countEvents(events, reasons.ReasonCleanupFailed); n > 0 {
				t.Errorf("CleanupFailed events: %v", events)
			}
			if took > 12*time.Minute {
				t.Errorf("settled %v after the deletion, want within the dispose timeout (10 min) and the last action", took)
			}
			t.Logf("settled %v after the snapshot's deletion", took)
		})
	}
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// Crash safety of the hand-over: the disposal is recorded on the job before
// the snapshot's finalizer goes; a sync that dies in between (here: the
// finalizer's write fails) records nothing twice the next time, and the
// disposal still happens once the job is deleted.
func TestHandOverSurvivesAFailedRelease(t *testing.T) {
	f := newFixture(t)
	jm, path := readmeWorld(t, f)
	jobGone("clone")(f)
	markDeleted(t, f, "sp")
	failed := false
	f.Client.PrependReactor("update", "flinkstatesnapshots", func(a core.Action) (bool, runtime.Object, error) {
		if u, ok := a.(core.UpdateAction); ok && u.GetSubresource() == "" && !failed {
			failed = true
			return true, nil, errors.New("connection reset")
		}
		return false, nil, nil
	})
	if _, err := f.Sync("sp"); err == nil || gone(f, "sp") {
		t.Fatalf("sync: %v, released %v; want the injected failure", err, gone(f, "sp"))
	}
	if got := f.disposalsOf(v1beta1.JobReferenceKindDeployment, "job"); len(got) != 1 || got[0].Path != path || got[0].Snapshot != ns+"/sp" {
		t.Fatalf("handed over %+v before the failed release", got)
	}
	f.Restart()
	f.MustSync("sp")
	if !gone(f, "sp") {
		t.Fatal("snapshot not released")
	}
	if got := f.disposalsOf(v1beta1.JobReferenceKindDeployment, "job"); len(got) != 1 {
		t.Fatalf("handed over %+v, want it once", got)
	}
	jobDeleted("job")(f)
	f.settleDisposals(v1beta1.JobReferenceKindDeployment, "job")
	if jm.StartedOperations(fakejm.OpDisposal) != 1 || metadataExists(path) {
		t.Fatalf("%d disposals; files there: %v", jm.StartedOperations(fakejm.OpDisposal), metadataExists(path))
	}
}
