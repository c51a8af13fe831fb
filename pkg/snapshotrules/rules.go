package snapshotrules

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"time"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
)

// Type is SAVEPOINT or CHECKPOINT, as the snapshot.type label spells it.
func Type(s *v1beta1.FlinkStateSnapshot) string {
	if s.Spec.Savepoint != nil {
		return v1beta1.SnapshotTypeSavepoint
	}
	return v1beta1.SnapshotTypeCheckpoint
}

// IsSavepoint reports whether the snapshot asks for a savepoint.
func IsSavepoint(s *v1beta1.FlinkStateSnapshot) bool { return s.Spec.Savepoint != nil }

// AlreadyExists reports whether the snapshot records an existing savepoint.
func AlreadyExists(s *v1beta1.FlinkStateSnapshot) bool {
	return s.Spec.Savepoint != nil && s.Spec.Savepoint.AlreadyExists != nil && *s.Spec.Savepoint.AlreadyExists
}

// TriggerType reads the snapshot.trigger-type label; missing or unknown
// values are UNKNOWN (as upstream parses it).
func TriggerType(s *v1beta1.FlinkStateSnapshot) v1beta1.SnapshotTriggerType {
	switch t := v1beta1.SnapshotTriggerType(s.Labels[v1beta1.LabelSnapshotTriggerType]); t {
	case v1beta1.SnapshotTriggerManual, v1beta1.SnapshotTriggerPeriodic, v1beta1.SnapshotTriggerUpgrade:
		return t
	}
	return v1beta1.SnapshotTriggerUnknown
}

// BackoffLimit is spec.backoffLimit, or -1 (unlimited retries) when unset:
// user-created snapshots without the field retry until they succeed [ours];
// operator-created ones always carry an explicit value.
func BackoffLimit(s *v1beta1.FlinkStateSnapshot) int32 {
	if s.Spec.BackoffLimit == nil {
		return -1
	}
	return *s.Spec.BackoffLimit
}

// RetryAllowed reports whether a snapshot that has failed `failures` times
// may try again: -1 means always, 0 never, N allows N retries.
func RetryAllowed(failures, backoffLimit int32) bool {
	return backoffLimit < 0 || failures <= backoffLimit
}

// MaxRetryDelay caps the retry backoff [ours]: upstream doubles without limit.
const MaxRetryDelay = 10 * time.Minute

// RetryDelay is how long a failed snapshot waits before its next attempt:
// 10 s·2^(failures−1), capped at MaxRetryDelay.
func RetryDelay(failures int32) time.Duration {
	if failures < 1 {
		failures = 1
	}
	if failures > 10 { // 10 s·2^9 already exceeds the cap; avoid overflow
		return MaxRetryDelay
	}
	return min(10*time.Second<<(failures-1), MaxRetryDelay)
}

// DisposeOnDelete says whether deleting the snapshot removes its data. Unset
// means true for savepoints the operator takes and false for imported ones
// (alreadyExists), which the operator did not create [ours].
func DisposeOnDelete(s *v1beta1.FlinkStateSnapshot) bool {
	sp := s.Spec.Savepoint
	if sp == nil {
		return false // Flink owns checkpoint files
	}
	if sp.DisposeOnDelete != nil {
		return *sp.DisposeOnDelete
	}
	return !AlreadyExists(s)
}

// NeedsFinalizer reports whether the snapshot, in state, must be held on
// deletion. A savepoint the operator takes is held while it is not finished,
// whatever disposeOnDelete says: Flink may still be writing it, and only
// once the attempt has ended does the operator know whether there are files
// to dispose (or, with disposeOnDelete false, where the kept files are).
// After that, only a COMPLETED savepoint with disposeOnDelete is held, until
// its data is disposed. Checkpoints never are: Flink owns their files.
func NeedsFinalizer(s *v1beta1.FlinkStateSnapshot, state v1beta1.SnapshotState) bool {
	if !IsSavepoint(s) {
		return false
	}
	if !state.IsTerminal() {
		// An imported savepoint becomes COMPLETED at its first sync.
		return !AlreadyExists(s) || DisposeOnDelete(s)
	}
	return state == v1beta1.SnapshotCompleted && DisposeOnDelete(s)
}

// Poll pacing: the first poll after a trigger comes quickly (most savepoints
// of small jobs finish in seconds), later ones back off so a long savepoint
// costs few requests.
const (
	MinPollDelay = time.Second
	MaxPollDelay = 30 * time.Second
)

// PollDelay is the wait before the next status poll of an operation that has
// been running for `elapsed`: half the elapsed time, within [1 s, 30 s]. It
// depends only on the recorded trigger time, so it survives restarts.
func PollDelay(elapsed time.Duration) time.Duration {
	return min(max(elapsed/2, MinPollDelay), MaxPollDelay)
}

// NewTriggerID returns a Flink trigger id: 32 lowercase hex characters, as
// Flink's TriggerId serialises.
func NewTriggerID() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(fmt.Sprintf("crypto/rand failed: %v", err)) // never happens on Linux
	}
	return hex.EncodeToString(b[:])
}

// FormatTime renders a status timestamp: RFC 3339 in UTC, like upstream's
// ISO_INSTANT (fraction only when non-zero).
func FormatTime(t time.Time) string {
	return t.UTC().Format(time.RFC3339Nano)
}

// ParseTime reads a status timestamp; false when empty or malformed.
func ParseTime(s string) (time.Time, bool) {
	if s == "" {
		return time.Time{}, false
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	return t, err == nil
}

// JobRefNamespace is the namespace of the referenced job: the reference's
// own namespace [ours], else the snapshot's.
func JobRefNamespace(s *v1beta1.FlinkStateSnapshot) string {
	if r := s.Spec.JobReference; r != nil && r.Namespace != "" {
		return r.Namespace
	}
	return s.Namespace
}

// JobRefString renders a reference as upstream does in messages: "name (Kind)".
func JobRefString(r *v1beta1.JobReference) string {
	if r == nil {
		return "<none>"
	}
	return fmt.Sprintf("%s (%s)", r.Name, r.Kind)
}

// JobKey identifies the job a snapshot refers to, for indexes:
// "<kind>/<namespace>/<name>"; empty when there is no usable reference.
func JobKey(s *v1beta1.FlinkStateSnapshot) string {
	r := s.Spec.JobReference
	if r == nil || r.Name == "" || r.Kind == "" {
		return ""
	}
	return JobKeyFor(r.Kind, JobRefNamespace(s), r.Name)
}

// JobKeyFor builds the same key from a job's kind, namespace and name.
func JobKeyFor(kind v1beta1.JobReferenceKind, namespace, name string) string {
	return string(kind) + "/" + namespace + "/" + name
}

// IsCrossNamespace reports whether the snapshot refers to a job in another
// namespace.
func IsCrossNamespace(s *v1beta1.FlinkStateSnapshot) bool {
	r := s.Spec.JobReference
	return r != nil && r.Namespace != "" && r.Namespace != s.Namespace
}

// InFlight reports whether a snapshot may still start or be running a Flink
// operation: not yet terminal.
func InFlight(s *v1beta1.FlinkStateSnapshot) bool {
	return !s.Status.State.IsTerminal()
}
