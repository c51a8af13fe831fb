package snapshote2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	flinkjvm "github.com/flinkops/flink-operator/e2e/flink"
	"github.com/flinkops/flink-operator/e2e/framework"
	"github.com/flinkops/flink-operator/e2e/localcluster"
	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
)

// TestSnapshotHardeningWithRealFlink covers issue 20 items 1, 10 and 11
// against real Flink JVMs (the newest pinned version): a savepoint deleted
// while IN_PROGRESS (disposeOnDelete true: no files once it ends; false:
// files kept, the resource goes once the attempt has ended), a savepoint to
// a directory Flink cannot create (status.error names it; one SavepointError
// per recorded failure), and a savepoint Flink completed while its job was
// cancelled (COMPLETED with its path).
//
// To hold a savepoint IN_PROGRESS from the resource's point of view while
// Flink finishes it, the test stops the operator right after the
// IN_PROGRESS write (before its first poll, about a second later).
func TestSnapshotHardeningWithRealFlink(t *testing.T) {
	if framework.Kind() {
		t.Skip("the test stops and restarts the operator process, which is the local provider's")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	versions := flinkjvm.Versions()
	version := versions[len(versions)-1]
	if _, ok := flavours[version]; !ok {
		t.Fatalf("pinned Flink %s has no image here", version)
	}
	e := framework.Setup(t, ctx, framework.Options{Name: "snaphardening", NoOperator: true})
	if err := e.Local.GrantClusterAdmin(ctx, localcluster.OperatorUser); err != nil {
		t.Fatal(err)
	}
	s := &suite{Env: e}
	ns := "harden"
	t.Cleanup(func() {
		if t.Failed() {
			s.Dump(t, ns)
		}
	})
	job := s.deployJob(t, version, ns)
	op := s.startOperator(t, nil)

	// Item 10: a savepoint directory under a regular file cannot be created
	// (also when the JVM runs as root).
	blocker := filepath.Join(s.Base, ns, "not-a-directory")
	if err := os.WriteFile(blocker, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	bad := &v1beta1.FlinkStateSnapshot{
		ObjectMeta: metav1.ObjectMeta{Name: "unwritable", Namespace: ns},
		Spec: v1beta1.FlinkStateSnapshotSpec{
			JobReference: &v1beta1.JobReference{Kind: v1beta1.JobReferenceKindDeployment, Name: "job"},
			Savepoint:    &v1beta1.SavepointSpec{Path: "file://" + blocker + "/savepoints", DisposeOnDelete: ptr.To(true)},
			BackoffLimit: ptr.To[int32](1),
		},
	}
	if _, err := s.Flink.FlinkV1beta1().FlinkStateSnapshots(ns).Create(ctx, bad, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	failed := s.waitState(t, ns, "unwritable", v1beta1.SnapshotFailed, 3*time.Minute)
	if want := "Failed to create savepoint directory at file:" + blocker + "/savepoints"; !strings.Contains(failed.Status.Error, want) {
		t.Errorf("status.error does not name the directory Flink could not create (%q): %q", want, failed.Status.Error)
	}
	t.Logf("unwritable: failures %d, error %q", failed.Status.Failures, failed.Status.Error)
	s.WaitFor(t, 30*time.Second, "one SavepointError event per recorded failure", func() (bool, string) {
		n, msgs := s.eventCount(t, ns, "unwritable", "SavepointError")
		return n == int(failed.Status.Failures), fmt.Sprintf("%d SavepointError events for failures: %d: %q", n, failed.Status.Failures, msgs)
	})
	if n, _ := s.eventCount(t, ns, "unwritable", "SavepointError"); n != int(failed.Status.Failures) {
		t.Fatalf("%d SavepointError events for failures: %d", n, failed.Status.Failures)
	}

	// Item 1: deleted while IN_PROGRESS, disposeOnDelete true.
	before := savepointDirs(t, job.savepointDir)
	op = s.inFlightThenStop(t, ns, "delete-dispose", true, op)
	newDir := s.waitNewSavepoint(t, job.savepointDir, before)
	if err := s.Flink.FlinkV1beta1().FlinkStateSnapshots(ns).Delete(ctx, "delete-dispose", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	held, err := s.Flink.FlinkV1beta1().FlinkStateSnapshots(ns).Get(ctx, "delete-dispose", metav1.GetOptions{})
	if err != nil || held.DeletionTimestamp == nil || !slices.Contains(held.Finalizers, v1beta1.SnapshotFinalizer) {
		t.Fatalf("the in-flight savepoint is not held by its finalizer: %v %+v", err, held)
	}
	op = s.startOperator(t, nil)
	s.waitGone(t, ns, "delete-dispose", 2*time.Minute)
	if _, err := os.Stat(filepath.Join(job.savepointDir, newDir)); !os.IsNotExist(err) {
		t.Fatalf("savepoint %s still on storage after its snapshot was deleted in flight (%v)", newDir, err)
	}
	t.Logf("deleted in flight, disposeOnDelete true: %s disposed, resource gone", newDir)

	// Item 1: deleted while IN_PROGRESS, disposeOnDelete false.
	before = savepointDirs(t, job.savepointDir)
	op = s.inFlightThenStop(t, ns, "delete-keep", false, op)
	kept := s.waitNewSavepoint(t, job.savepointDir, before)
	if err := s.Flink.FlinkV1beta1().FlinkStateSnapshots(ns).Delete(ctx, "delete-keep", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	op = s.startOperator(t, nil)
	s.waitGone(t, ns, "delete-keep", 2*time.Minute)
	if _, err := os.Stat(filepath.Join(job.savepointDir, kept, "_metadata")); err != nil {
		t.Fatalf("savepoint %s of a disposeOnDelete: false snapshot is gone: %v", kept, err)
	}
	if _, msgs := s.eventCount(t, ns, "delete-keep", "DisposeSkipped"); !strings.Contains(strings.Join(msgs, "\n"), kept) {
		t.Errorf("no DisposeSkipped event names the kept savepoint %s: %q", kept, msgs)
	}
	t.Logf("deleted in flight, disposeOnDelete false: %s kept, resource gone", kept)

	// Item 11: Flink completes a savepoint while its job is cancelled; the
	// operator finds it COMPLETED rather than abandoning it.
	before = savepointDirs(t, job.savepointDir)
	op = s.inFlightThenStop(t, ns, "while-stopping", true, op)
	done := s.waitNewSavepoint(t, job.savepointDir, before)
	s.cancelJob(t, job)
	op = s.startOperator(t, nil)
	got := s.waitState(t, ns, "while-stopping", v1beta1.SnapshotCompleted, time.Minute)
	if !strings.Contains(got.Status.Path, done) {
		t.Errorf("completed with path %q, want the savepoint %s Flink wrote", got.Status.Path, done)
	}
	t.Logf("completed while its job stopped: %s", got.Status.Path)
	op.Stop()
}

// inFlightThenStop creates a savepoint and stops the operator as soon as
// the snapshot is IN_PROGRESS, before the operator's first poll; it tries
// again with a new name if the operator was faster. It returns the stopped
// operator.
func (s *suite) inFlightThenStop(t *testing.T, ns, name string, dispose bool, op *framework.Operator) *framework.Operator {
	t.Helper()
	for attempt := range 3 {
		n := name
		if attempt > 0 {
			// A fresh operator cleans up the completed try.
			op = s.startOperator(t, nil)
			_ = s.Flink.FlinkV1beta1().FlinkStateSnapshots(ns).Delete(s.Ctx, name, metav1.DeleteOptions{})
			s.waitGone(t, ns, name, time.Minute)
		}
		snap := &v1beta1.FlinkStateSnapshot{
			ObjectMeta: metav1.ObjectMeta{Name: n, Namespace: ns},
			Spec: v1beta1.FlinkStateSnapshotSpec{
				JobReference: &v1beta1.JobReference{Kind: v1beta1.JobReferenceKindDeployment, Name: "job"},
				Savepoint:    &v1beta1.SavepointSpec{DisposeOnDelete: ptr.To(dispose)},
				BackoffLimit: ptr.To[int32](0),
			},
		}
		if _, err := s.Flink.FlinkV1beta1().FlinkStateSnapshots(ns).Create(s.Ctx, snap, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(time.Minute)
		var cur *v1beta1.FlinkStateSnapshot
		for time.Now().Before(deadline) {
			got, err := s.Flink.FlinkV1beta1().FlinkStateSnapshots(ns).Get(s.Ctx, n, metav1.GetOptions{})
			if err == nil && got.Status.State != "" && got.Status.State != v1beta1.SnapshotTriggerPending {
				cur = got
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		if cur == nil {
			t.Fatalf("%s never left TRIGGER_PENDING", n)
		}
		if cur.Status.State == v1beta1.SnapshotInProgress {
			op.Stop()
			after, err := s.Flink.FlinkV1beta1().FlinkStateSnapshots(ns).Get(s.Ctx, n, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if after.Status.State == v1beta1.SnapshotInProgress {
				if !slices.Contains(after.Finalizers, v1beta1.SnapshotFinalizer) || after.Labels[v1beta1.LabelSnapshotState] != "IN_PROGRESS" ||
					after.Labels[v1beta1.LabelSnapshotType] != "SAVEPOINT" || after.Labels[v1beta1.LabelSnapshotTriggerType] != "MANUAL" {
					t.Fatalf("in-flight savepoint without its finalizer or labels: finalizers %v labels %v", after.Finalizers, after.Labels)
				}
				// kubectl shows the Type and Trigger columns while it runs.
				if out, err := s.Kubectl("get", "flinksnp", n, "-n", ns, "--no-headers"); err != nil || !strings.Contains(out, "SAVEPOINT") || !strings.Contains(out, "MANUAL") {
					t.Fatalf("kubectl get flinksnp %s while in flight: %q %v", n, out, err)
				}
				if out, err := s.Kubectl("get", "flinksnp", "-n", ns, "-l", "snapshot.state=IN_PROGRESS", "-o", "name"); err != nil || !strings.Contains(out, n) {
					t.Fatalf("-l snapshot.state=IN_PROGRESS does not list %s: %q %v", n, out, err)
				}
				return op
			}
		} else {
			op.Stop()
		}
		t.Logf("%s was %s before the operator stopped; trying again", n, cur.Status.State)
	}
	t.Fatalf("could not stop the operator while %s was IN_PROGRESS", name)
	return nil
}

// waitNewSavepoint waits until Flink has finished writing a savepoint
// directory not in before, and returns its name.
func (s *suite) waitNewSavepoint(t *testing.T, dir string, before []string) string {
	t.Helper()
	var found string
	s.WaitFor(t, 2*time.Minute, "Flink to finish the savepoint", func() (bool, string) {
		for _, d := range savepointDirs(t, dir) {
			if slices.Contains(before, d) {
				continue
			}
			if _, err := os.Stat(filepath.Join(dir, d, "_metadata")); err == nil {
				found = d
				return true, ""
			}
		}
		return false, fmt.Sprintf("savepoints %v", savepointDirs(t, dir))
	})
	return found
}

// eventCount sums the events with reason on a snapshot (the recorder
// aggregates repeats into one Event with a count).
func (s *suite) eventCount(t *testing.T, ns, name, reason string) (int, []string) {
	t.Helper()
	list, err := s.Kube.CoreV1().Events(ns).List(s.Ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + name})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	var msgs []string
	for _, e := range list.Items {
		if e.Reason != reason {
			continue
		}
		c := int(e.Count)
		if c == 0 {
			c = 1
		}
		n += c
		msgs = append(msgs, e.Message)
	}
	return n, msgs
}
