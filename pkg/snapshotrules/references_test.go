package snapshotrules

import (
	"testing"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
)

// TestJobRefString pins how a job reference reads in messages, as upstream
// writes it: "name (Kind)", and "<none>" without one.
func TestJobRefString(t *testing.T) {
	if got := JobRefString(nil); got != "<none>" {
		t.Errorf("JobRefString(nil) = %q", got)
	}
	ref := &v1beta1.JobReference{Kind: v1beta1.JobReferenceKindSessionJob, Name: "orders"}
	if got := JobRefString(ref); got != "orders (FlinkSessionJob)" {
		t.Errorf("JobRefString = %q", got)
	}
}

// TestRefKey pins the cache key of a job's initialStateSnapshotRef: the
// snapshot's namespace (the referring job's own when unset) and name.
func TestRefKey(t *testing.T) {
	for _, tc := range []struct {
		ref  v1beta1.SnapshotReference
		want string
	}{
		{v1beta1.SnapshotReference{Name: "sp"}, "team-a/sp"},
		{v1beta1.SnapshotReference{Name: "sp", Namespace: "team-b"}, "team-b/sp"},
	} {
		if got := RefKey(&tc.ref, "team-a"); got != tc.want {
			t.Errorf("RefKey(%+v) = %q, want %q", tc.ref, got, tc.want)
		}
	}
}
