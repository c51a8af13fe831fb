package deployment

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/labels"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/config"
	"github.com/flinkops/flink-operator/pkg/snapshotrules"
)

// The snapshots the controller makes for a labelled FlinkDeployment, the
// periodic one and the UPGRADE one of a savepoint upgrade, carry its labels:
// an operator with kubernetes.operator.label.selector team=a sees them, one
// sharded on team=b does not.
func TestSnapshotsCarryTheDeploymentsLabels(t *testing.T) {
	f := newFixture(t)
	f.Config[config.KeyReconcileInterval] = "10 min"
	f.Restart()
	d := f.application("job", v1beta1.UpgradeModeSavepoint)
	d.Labels = map[string]string{"team": "a", "env": "prod"}
	setConf(&d.Spec, config.KeyPeriodicSavepointInterval, "1 min")
	f.Deploy(d)
	ours, theirs := labels.SelectorFromSet(labels.Set{"team": "a"}), labels.SelectorFromSet(labels.Set{"team": "b"})

	f.Clock.SetTime(t0.Add(time.Minute + time.Second))
	f.MustSync("job")
	f.edit("job", newArgs)
	f.Until("job", 30, "savepoint upgrade", upgradedTo(2))

	seen := map[v1beta1.SnapshotTriggerType]bool{}
	for _, s := range f.Snapshots() {
		trigger := snapshotrules.TriggerType(&s)
		seen[trigger] = true
		if !ours.Matches(labels.Set(s.Labels)) || theirs.Matches(labels.Set(s.Labels)) || s.Labels["env"] != "prod" ||
			s.Labels[v1beta1.LabelJobReferenceName] != "job" {
			t.Errorf("%s snapshot %s: labels %v, want the deployment's (team=a, env=prod) and the operator's", trigger, s.Name, s.Labels)
		}
	}
	if !seen[v1beta1.SnapshotTriggerPeriodic] || !seen[v1beta1.SnapshotTriggerUpgrade] {
		t.Errorf("snapshots made: %v, want a periodic and an upgrade one", seen)
	}
}
