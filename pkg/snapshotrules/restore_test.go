package snapshotrules

import (
	"strings"
	"testing"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
)

func TestRestorePath(t *testing.T) {
	snap := func(state v1beta1.SnapshotState, path, errText string) *v1beta1.FlinkStateSnapshot {
		s := &v1beta1.FlinkStateSnapshot{}
		s.Status.State, s.Status.Path, s.Status.Error = state, path, errText
		return s
	}
	ref := &v1beta1.SnapshotReference{Name: "sp"}
	other := &v1beta1.SnapshotReference{Name: "sp", Namespace: "team-b"}
	for _, tc := range []struct {
		name    string
		ref     *v1beta1.SnapshotReference
		snap    *v1beta1.FlinkStateSnapshot
		cross   bool
		want    string
		wantErr string
	}{
		{"completed savepoint", ref, snap(v1beta1.SnapshotCompleted, "s3://b/sp-1", ""), false, "s3://b/sp-1", ""},
		{"missing", ref, nil, false, "", "FlinkStateSnapshot team-a/sp was not found"},
		{"failed", ref, snap(v1beta1.SnapshotFailed, "", "boom"), false, "", "is FAILED, not COMPLETED; the job starts only from a COMPLETED savepoint or checkpoint (its error: boom)"},
		{"in progress", ref, snap(v1beta1.SnapshotInProgress, "", ""), false, "", "is IN_PROGRESS, not COMPLETED; the job starts only from a COMPLETED savepoint or checkpoint; waiting for it"},
		{"new", ref, snap("", "", ""), false, "", "is not started, not COMPLETED"},
		{"completed without path", ref, snap(v1beta1.SnapshotCompleted, "", ""), false, "", "COMPLETED but has no path"},
		{"other namespace refused", other, snap(v1beta1.SnapshotCompleted, "s3://b/sp-1", ""), false, "", "FlinkStateSnapshot team-b/sp is in another namespace, which the operator does not allow"},
		{"other namespace allowed", other, snap(v1beta1.SnapshotCompleted, "s3://b/sp-1", ""), true, "s3://b/sp-1", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := RestorePath(tc.ref, "team-a", tc.snap, tc.cross)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("got %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}
