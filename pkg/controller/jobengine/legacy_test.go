package jobengine

import (
	"testing"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/config"
)

// Only a pending PERIODIC or MANUAL savepoint delays an upgrade (a pending
// UPGRADE trigger is the stop itself, a checkpoint never blocks), and
// ignore-pending-savepoint lifts it; an unreadable value keeps the safe
// default.
func TestUpgradeBlocked(t *testing.T) {
	pending := func(tt v1beta1.SnapshotTriggerType) *v1beta1.SavepointInfo {
		return &v1beta1.SavepointInfo{TriggerID: "t1", TriggerType: tt}
	}
	for _, tc := range []struct {
		name   string
		status v1beta1.JobStatus
		ignore string
		want   bool
	}{
		{name: "nothing pending", status: v1beta1.JobStatus{}, want: false},
		{name: "manual savepoint", status: v1beta1.JobStatus{SavepointInfo: pending(v1beta1.SnapshotTriggerManual)}, want: true},
		{name: "periodic savepoint", status: v1beta1.JobStatus{SavepointInfo: pending(v1beta1.SnapshotTriggerPeriodic)}, want: true},
		{name: "the stop's own trigger", status: v1beta1.JobStatus{SavepointInfo: pending(v1beta1.SnapshotTriggerUpgrade)}, want: false},
		{name: "checkpoint only", status: v1beta1.JobStatus{CheckpointInfo: &v1beta1.CheckpointInfo{TriggerID: "c1"}}, want: false},
		{name: "ignored", status: v1beta1.JobStatus{SavepointInfo: pending(v1beta1.SnapshotTriggerManual)}, ignore: "true", want: false},
		{name: "explicitly not ignored", status: v1beta1.JobStatus{SavepointInfo: pending(v1beta1.SnapshotTriggerManual)}, ignore: "false", want: true},
		{name: "unreadable value", status: v1beta1.JobStatus{SavepointInfo: pending(v1beta1.SnapshotTriggerManual)}, ignore: "maybe", want: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := config.Defaults()
			if tc.ignore != "" {
				cfg[config.KeyJobUpgradeIgnorePendingSavepoint] = tc.ignore
			}
			if got := upgradeBlocked(cfg, &tc.status); got != tc.want {
				t.Errorf("upgradeBlocked = %v, want %v", got, tc.want)
			}
		})
	}
}
