package snapshotrules

import (
	"maps"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/ptr"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/config"
)

// Every snapshot the operator makes for a job (periodic, manual nonce,
// upgrade/suspend/deletion savepoint) carries the job's labels, so it
// matches the kubernetes.operator.label.selector its job matches; the
// operator's own snapshot keys are its own, whatever the job's labels say,
// and the job's label map is never written to.
func TestOperatorMadeSnapshotsCarryJobLabels(t *testing.T) {
	jobLabels := map[string]string{
		"team": "a", "env": "prod", "app.kubernetes.io/name": "wordcount",
		// The operator's snapshot keys on the job are not copied.
		v1beta1.LabelSnapshotType: "bogus", v1beta1.LabelSnapshotTriggerType: "MANUAL", v1beta1.LabelSnapshotState: "COMPLETED",
		v1beta1.LabelJobReferenceKind: "FlinkSessionJob", v1beta1.LabelJobReferenceName: "other", v1beta1.LabelJobReferenceNamespace: "elsewhere",
	}
	before := maps.Clone(jobLabels)
	selector, err := labels.Parse("team=a,env in (prod),app.kubernetes.io/name")
	if err != nil {
		t.Fatal(err)
	}

	view := jobView(map[string]string{config.KeyPeriodicSavepointInterval: "1h", config.KeyPeriodicCheckpointInterval: "1h"})
	view.Labels = jobLabels
	view.SavepointNonce, view.ReconciledSavepointNonce = ptr.To[int64](2), ptr.To[int64](1)
	view.CheckpointNonce = ptr.To[int64](7)
	p, err := PlanSnapshots(view, base.Add(2*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Create) != 4 {
		t.Fatalf("planned %s, want periodic and manual savepoint and checkpoint", names(p.Create))
	}
	upgrade, err := UpgradeSnapshotWithFormat(view, "file:///sp/1", base, v1beta1.SavepointFormatType("NATIVE"))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range append(p.Create, upgrade) {
		if !selector.Matches(labels.Set(s.Labels)) {
			t.Errorf("%s: labels %v do not match the job's selector %s", s.Name, s.Labels, selector)
		}
		want := map[string]string{"team": "a", "env": "prod", "app.kubernetes.io/name": "wordcount",
			v1beta1.LabelSnapshotType: Type(s), v1beta1.LabelSnapshotTriggerType: string(TriggerType(s)),
			v1beta1.LabelSnapshotState:    string(v1beta1.SnapshotInProgress),
			v1beta1.LabelJobReferenceKind: string(v1beta1.JobReferenceKindDeployment), v1beta1.LabelJobReferenceName: "job"}
		if !maps.Equal(s.Labels, want) {
			t.Errorf("%s: labels %v, want %v", s.Name, s.Labels, want)
		}
	}
	if TriggerType(upgrade) != v1beta1.SnapshotTriggerUpgrade {
		t.Errorf("upgrade snapshot trigger type %s", TriggerType(upgrade))
	}
	if !maps.Equal(jobLabels, before) {
		t.Errorf("the job's labels were changed: %v", jobLabels)
	}

	// A job without labels: only the operator's keys.
	plain := jobView(map[string]string{config.KeyPeriodicSavepointInterval: "1h"})
	p, err = PlanSnapshots(plain, base.Add(2*time.Hour))
	if err != nil || len(p.Create) != 1 || len(p.Create[0].Labels) != 5 {
		t.Errorf("unlabelled job: %v, %s %v", err, names(p.Create), p.Create)
	}
}
