package jobengine

import (
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"

	"github.com/flinkops/flink-operator/pkg/config"
	"github.com/flinkops/flink-operator/pkg/reasons"
	"github.com/flinkops/flink-operator/pkg/snapshotrules"
)

// HoldForDisposals keeps a deleted job's resource, and with it the
// JobManager through which Flink disposes of savepoints, while savepoint
// disposals wait on it [ours]: a FlinkStateSnapshot of this job being
// deleted whose savepoint the snapshot controller is disposing of, or a
// disposal handed to this job when a snapshot was deleted while jobs still
// held its savepoint (the README's clean-up deletes the savepoint, then the
// application restored from it). via names that JobManager ("the
// JobManager of x", "session cluster x") and ready says whether it can
// dispose of anything now. Bounded: never past
// kubernetes.operator.snapshot.dispose.timeout after the deletion, and only
// while the JobManager is ready. Said once in a Normal Cleanup event;
// giving up leaves the savepoints on storage, said in a Warning.
// Requeue-based: the snapshot controller's writes do not wake the job.
// held reports that the deletion waits.
func (s *State[T, S]) HoldForDisposals(via string, ready bool) (held bool, err error) {
	obj := s.obj
	pending, err := s.e.Caches.PendingDisposals(obj.JobReferenceKind(), obj)
	if err != nil || len(pending) == 0 {
		return false, err
	}
	timeout, err := s.operator.Duration(config.KeySnapshotDisposeTimeout)
	if err != nil {
		return false, err
	}
	deletedAt := obj.GetDeletionTimestamp().Time
	deadline := deletedAt.Add(timeout)
	list := strings.Join(pending, "; ")
	switch {
	case !ready:
		s.sayOnce(corev1.EventTypeWarning, fmt.Sprintf("%s is not ready to dispose of savepoints; deleting without waiting, their data is left: %s",
			capitalized(via), list))
		return false, nil
	case !s.now.Before(deadline):
		s.sayOnce(corev1.EventTypeWarning, fmt.Sprintf("Savepoint disposals not done %s after the deletion (%s); deleting anyway, their data is left: %s",
			timeout, config.KeySnapshotDisposeTimeout, list))
		return false, nil
	}
	s.sayOnce(corev1.EventTypeNormal, fmt.Sprintf("Deletion waits (at most until %s) for savepoint disposals through %s: %s",
		deadline.UTC().Format(time.RFC3339), via, list))
	s.RequeueWithin(snapshotrules.PollDelay(s.now.Sub(deletedAt)))
	s.requeueNoLaterThan(deadline.Sub(s.now))
	return true, nil
}

// ForgetDisposalHold drops what HoldForDisposals last said of the
// resource, once its finalizer goes.
func (s *State[T, S]) ForgetDisposalHold() {
	s.e.disposalHolds.Delete(s.obj.GetUID())
	s.e.reconciledLogged.Delete(s.obj.GetUID())
}

// sayOnce emits a Cleanup event of HoldForDisposals unless it is what it
// last said of this resource: a wait of many syncs is one event.
func (s *State[T, S]) sayOnce(typ, msg string) {
	if said, _ := s.e.disposalHolds.Swap(s.obj.GetUID(), msg); said != msg {
		s.Event(typ, reasons.ReasonCleanup, "%s", msg)
	}
}

func capitalized(s string) string {
	r, n := utf8.DecodeRuneInString(s)
	return string(unicode.ToUpper(r)) + s[n:]
}
