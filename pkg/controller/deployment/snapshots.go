package deployment

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/config"
	"github.com/flinkops/flink-operator/pkg/flink"
	"github.com/flinkops/flink-operator/pkg/snapshots"
)

// snapshotResources says whether this job records snapshots as
// FlinkStateSnapshot resources (else in the legacy status fields).
func (c *Controller) snapshotResources(sc *syncState) bool {
	on, err := config.SnapshotResourcesEnabled(c.cfg, sc.cfg)
	return err == nil && on
}

// upgradeSnapshotName is the deterministic name of the UPGRADE snapshot of
// the stop-with-savepoint triggered at ts (epoch millis): a create repeated
// after a crash finds it instead of making a second one.
func upgradeSnapshotName(dep *v1beta1.FlinkDeployment, ts int64) string {
	return snapshots.Name(dep.Name, v1beta1.SnapshotTypeSavepoint, v1beta1.SnapshotTriggerUpgrade, ts)
}

// upgradeSnapshot is the record of an upgrade (or suspend, or deletion)
// savepoint: an existing savepoint (alreadyExists) the snapshot controller
// marks COMPLETED without calling Flink.
func (c *Controller) upgradeSnapshot(sc *syncState, path string, ts int64) *v1beta1.FlinkStateSnapshot {
	s := c.newSnapshot(sc, upgradeSnapshotName(sc.dep, ts), v1beta1.SnapshotTriggerUpgrade, v1beta1.SnapshotTypeSavepoint)
	format := v1beta1.SavepointFormatType(savepointFormat(sc.cfg))
	if info := sc.dep.Status.JobStatus.SavepointInfo; info != nil && info.FormatType != "" {
		format = info.FormatType
	}
	dispose, _ := sc.cfg.Bool(config.KeySavepointDisposeOnDelete)
	s.Spec.Savepoint = &v1beta1.SavepointSpec{Path: path, FormatType: format, DisposeOnDelete: ptr.To(dispose), AlreadyExists: ptr.To(true)}
	return s
}

func (c *Controller) newSnapshot(sc *syncState, name string, trigger v1beta1.SnapshotTriggerType, typ string) *v1beta1.FlinkStateSnapshot {
	limit, err := sc.cfg.Int(config.KeySnapshotBackoffLimit)
	if err != nil {
		limit = 3
	}
	return &v1beta1.FlinkStateSnapshot{
		ObjectMeta: metav1.ObjectMeta{
			Name:      name,
			Namespace: sc.dep.Namespace,
			Labels: map[string]string{
				v1beta1.LabelSnapshotType:        typ,
				v1beta1.LabelSnapshotTriggerType: string(trigger),
				v1beta1.LabelJobReferenceKind:    string(v1beta1.JobReferenceKindDeployment),
				v1beta1.LabelJobReferenceName:    sc.dep.Name,
			},
		},
		Spec: v1beta1.FlinkStateSnapshotSpec{
			JobReference: &v1beta1.JobReference{Kind: v1beta1.JobReferenceKindDeployment, Name: sc.dep.Name},
			BackoffLimit: ptr.To(int32(limit)),
		},
	}
}

// upgradeSnapshotPath is the path of the UPGRADE snapshot already recorded
// for the stop-with-savepoint in flight, if a crash came between recording
// it and the status write.
func (c *Controller) upgradeSnapshotPath(sc *syncState) string {
	info := sc.dep.Status.JobStatus.SavepointInfo
	if info == nil || info.TriggerTimestamp == nil {
		return ""
	}
	s, err := c.caches.Snapshot(sc.dep.Namespace, upgradeSnapshotName(sc.dep, *info.TriggerTimestamp))
	if err != nil || s.Spec.Savepoint == nil {
		return ""
	}
	return s.Spec.Savepoint.Path
}

// manualSnapshots honours changed savepointTriggerNonce /
// checkpointTriggerNonce (deprecated upstream, still supported): one MANUAL
// FlinkStateSnapshot each, created while the job runs, after which the
// nonce is recorded as reconciled (upstream: consumed once the resource
// exists, whatever its outcome). The snapshot controller does the rest.
func (c *Controller) manualSnapshots(sc *syncState) {
	cur, rec := sc.dep.Spec.Job, sc.recorded.Spec.Job
	if cur == nil || rec == nil || sc.dep.Status.JobStatus.State != v1beta1.JobStatusRunning {
		return
	}
	sp, cp := cur.SavepointTriggerNonce, cur.CheckpointTriggerNonce
	if equalNonce(sp, rec.SavepointTriggerNonce) && equalNonce(cp, rec.CheckpointTriggerNonce) {
		return
	}
	if _, err := c.validate(sc.dep, sc.dep.Spec, sc.recorded); err != nil {
		return // reported by reconcile
	}
	resources := c.snapshotResources(sc)
	create := func(s *v1beta1.FlinkStateSnapshot) {
		sc.before("create snapshot "+s.Name, func(ctx context.Context) error {
			_, err := c.client.FlinkV1beta1().FlinkStateSnapshots(s.Namespace).Create(ctx, s, metav1.CreateOptions{})
			if err != nil && !apierrors.IsAlreadyExists(err) {
				return fmt.Errorf("creating snapshot %s/%s: %w", s.Namespace, s.Name, err)
			}
			return nil
		})
	}
	if !equalNonce(sp, rec.SavepointTriggerNonce) && sp != nil {
		if resources {
			s := c.newSnapshot(sc, snapshots.Name(sc.dep.Name, v1beta1.SnapshotTypeSavepoint, v1beta1.SnapshotTriggerManual, *sp),
				v1beta1.SnapshotTriggerManual, v1beta1.SnapshotTypeSavepoint)
			dir, _ := config.SavepointDir(sc.cfg)
			dispose, _ := sc.cfg.Bool(config.KeySavepointDisposeOnDelete)
			s.Spec.Savepoint = &v1beta1.SavepointSpec{Path: dir, FormatType: v1beta1.SavepointFormatType(savepointFormat(sc.cfg)),
				DisposeOnDelete: ptr.To(dispose), AlreadyExists: ptr.To(false)}
			create(s)
		} else {
			sc.event("Warning", ReasonSavepointError, "Savepoint failed for savepointTriggerNonce: %d: manual savepoints need %s: true", *sp, config.KeySnapshotResourceEnabled)
		}
	}
	if !equalNonce(cp, rec.CheckpointTriggerNonce) && cp != nil {
		version, _ := flink.ParseVersion(string(sc.recorded.Spec.FlinkVersion))
		switch {
		case !version.SupportsCheckpointTrigger():
			sc.event("Warning", "CheckpointError", "Checkpoint failed for checkpointTriggerNonce: %d: manual checkpoints need Flink 1.17+", *cp)
		case resources:
			s := c.newSnapshot(sc, snapshots.Name(sc.dep.Name, v1beta1.SnapshotTypeCheckpoint, v1beta1.SnapshotTriggerManual, *cp),
				v1beta1.SnapshotTriggerManual, v1beta1.SnapshotTypeCheckpoint)
			s.Spec.Checkpoint = &v1beta1.CheckpointSpec{}
			create(s)
		default:
			sc.event("Warning", "CheckpointError", "Checkpoint failed for checkpointTriggerNonce: %d: manual checkpoints need %s: true", *cp, config.KeySnapshotResourceEnabled)
		}
	}
	// Record the nonces as reconciled, in the stable spec too if it was the
	// reconciled one (a nonce is not a reason to leave STABLE).
	updated := sc.recorded.Spec.DeepCopy()
	updated.Job.SavepointTriggerNonce, updated.Job.CheckpointTriggerNonce = sp, cp
	encoded, err := encodeSpec(*updated, sc.recorded.Meta.FirstDeployment)
	if err != nil {
		return
	}
	rs := &sc.dep.Status.ReconciliationStatus
	if rs.LastStableSpec == rs.LastReconciledSpec {
		rs.LastStableSpec = encoded
	}
	rs.LastReconciledSpec = encoded
	sc.recorded = &reconciledSpec{Spec: *updated, Meta: sc.recorded.Meta}
}
