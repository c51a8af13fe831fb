package snapshotrules

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestCreatedAtReadsSlotFromName pins when a snapshot was made, for the
// history rules and the periodic schedule: the slot in an operator-made
// name when it is epoch millis (from 10^12, i.e. September 2001, on),
// otherwise the creation timestamp (a manual nonce is a small number, and a
// user's snapshot has its own name).
func TestCreatedAtReadsSlotFromName(t *testing.T) {
	created := base.Add(-time.Hour)
	for _, tc := range []struct {
		name string
		want time.Time
	}{
		{"job-savepoint-periodic-1796083200000", base},
		{"job-checkpoint-upgrade-1796083200000", base},
		{"job-savepoint-manual-1796083200000", base},
		{"job-savepoint-periodic-1000000000000", time.UnixMilli(1_000_000_000_000).UTC()},
		{"job-savepoint-periodic-999999999999", created},
		{"job-savepoint-manual-42", created},
		{"job-savepoint-periodic-soon", created},
		{"before-release-1796083200000", created},
		{"nightly", created},
	} {
		s := snap(tc.name, sp, "MANUAL", "COMPLETED", created)
		s.CreationTimestamp = metav1.NewTime(created)
		if got := CreatedAt(s); !got.Equal(tc.want) {
			t.Errorf("CreatedAt(%s) = %v, want %v", tc.name, got, tc.want)
		}
	}
}
