package snapshotrules

import (
	"testing"
	"time"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
)

// TestCleanupLimits pins the edges of the history limits of SelectForCleanup
// (snapshots.md, "Snapshots the operator makes"): a count limit of 0 is no
// limit, the age limit removes only what is strictly older than max age, and
// the newest candidate stays only while there is no COMPLETED one.
func TestCleanupLimits(t *testing.T) {
	now := base.Add(48 * time.Hour)
	for _, tc := range []struct {
		name   string
		all    []*v1beta1.FlinkStateSnapshot
		policy CleanupPolicy
		want   string
	}{
		{"no count limit: only the age rule deletes",
			[]*v1beta1.FlinkStateSnapshot{
				snap("p", sp, "PERIODIC", "COMPLETED", now.Add(-time.Hour)),
				snap("u-young", sp, "UPGRADE", "COMPLETED", now.Add(-2*time.Hour)),
				snap("u-old", sp, "UPGRADE", "COMPLETED", now.Add(-30*time.Hour)),
			}, CleanupPolicy{MaxCount: 0, MaxAge: 24 * time.Hour}, "u-old"},
		{"exactly max age is not too old",
			[]*v1beta1.FlinkStateSnapshot{
				snap("p", sp, "PERIODIC", "COMPLETED", now.Add(-time.Hour)),
				snap("u-edge", sp, "UPGRADE", "COMPLETED", now.Add(-24*time.Hour)),
				snap("u-older", sp, "UPGRADE", "COMPLETED", now.Add(-24*time.Hour-time.Millisecond)),
			}, CleanupPolicy{MaxAge: 24 * time.Hour}, "u-older"},
		{"without a COMPLETED one the newest candidate stays",
			[]*v1beta1.FlinkStateSnapshot{
				snap("u1", sp, "UPGRADE", "FAILED", base),
				snap("u2", sp, "UPGRADE", "ABANDONED", base.Add(time.Hour)),
			}, CleanupPolicy{MaxAge: time.Hour}, "u1"},
		{"with a COMPLETED one a newer failed one may go",
			[]*v1beta1.FlinkStateSnapshot{
				snap("u-done", sp, "UPGRADE", "COMPLETED", base),
				snap("u-failed", sp, "UPGRADE", "FAILED", base.Add(time.Hour)),
			}, CleanupPolicy{MaxAge: time.Hour}, "u-failed"},
		{"count limit keeps exactly max count",
			[]*v1beta1.FlinkStateSnapshot{
				snap("u1", sp, "UPGRADE", "COMPLETED", base),
				snap("u2", sp, "UPGRADE", "COMPLETED", base.Add(time.Hour)),
				snap("u3", sp, "UPGRADE", "COMPLETED", base.Add(2*time.Hour)),
			}, CleanupPolicy{MaxCount: 2}, "u1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := names(SelectForCleanup(tc.all, sp, tc.policy, now, nil)); got != tc.want {
				t.Errorf("deleted %q, want %q", got, tc.want)
			}
		})
	}
}
