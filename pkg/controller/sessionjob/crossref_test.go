package sessionjob

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/config"
	"github.com/flinkops/flink-operator/pkg/controller/jobengine"
	"github.com/flinkops/flink-operator/pkg/reasons"
	"github.com/flinkops/flink-operator/pkg/reviewstamp"
)

type staticKeys [][]byte

func (k staticKeys) Keys() [][]byte { return k }

var testReviewKey = []byte("0123456789abcdef0123456789abcdef")

// A session job that starts from a snapshot in another namespace is
// submitted only with the admission webhook's stamp for this job and this
// reference: without one, or with one copied from another session job, it
// gets a ValidationError and a Warning event, and nothing is submitted.
func TestCrossNamespaceSnapshotRefNeedsReviewStamp(t *testing.T) {
	target := reviewstamp.Reference{Kind: "FlinkStateSnapshot", Namespace: "team-b", Name: "golden"}
	for _, tc := range []struct {
		name  string
		stamp func(j *v1beta1.FlinkSessionJob) string
		want  string // "" = submitted
	}{
		{"no stamp", nil, "has no flinkops.io/cross-namespace-review annotation"},
		{"copied from another session job", func(j *v1beta1.FlinkSessionJob) string {
			src := j.DeepCopy()
			src.Name = "reviewed"
			return signJob(t, src, target)
		}, "does not vouch for this FlinkSessionJob"},
		{"stamped as a FlinkDeployment", func(j *v1beta1.FlinkSessionJob) string {
			v, _ := reviewstamp.Sign(testReviewKey, "FlinkDeployment", j, target, "bob", j.CreationTimestamp.Time)
			return v
		}, "does not vouch for this FlinkSessionJob"},
		{"valid", func(j *v1beta1.FlinkSessionJob) string { return signJob(t, j, target) }, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			f.Config[config.KeySnapshotCrossNamespaceReferencesEnabled] = "true"
			f.reviewKeys = staticKeys{testReviewKey}
			f.Restart()
			f.sessionCluster("session", nil)
			snap := &v1beta1.FlinkStateSnapshot{
				ObjectMeta: metav1.ObjectMeta{Namespace: "team-b", Name: "golden"},
				Spec:       v1beta1.FlinkStateSnapshotSpec{Savepoint: &v1beta1.SavepointSpec{}},
				Status:     v1beta1.FlinkStateSnapshotStatus{State: v1beta1.SnapshotCompleted, Path: "s3://bucket/savepoints/golden"},
			}
			if _, err := f.Client.FlinkV1beta1().FlinkStateSnapshots("team-b").Create(f.Ctx, snap, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			j := f.sessionJob("job", v1beta1.UpgradeModeSavepoint)
			j.Spec.Job.InitialStateSnapshotRef = &v1beta1.SnapshotReference{Name: "golden", Namespace: "team-b"}
			j.CreationTimestamp = metav1.NewTime(f.Clock.Now())
			if tc.stamp != nil {
				j.Annotations = map[string]string{reviewstamp.Annotation: tc.stamp(j)}
			}
			f.Create(j)
			if tc.want == "" {
				got := f.Until("job", 10, "running", stable)
				if got.Status.JobStatus.UpgradeSavepointPath != snap.Status.Path {
					t.Errorf("status %s, want started from the foreign snapshot", statusString(got))
				}
				return
			}
			for range 3 {
				f.Step("job")
			}
			got := f.Get("job")
			if !strings.Contains(jobengine.ErrorMessage(got.Status.Error), "was not reviewed by the operator's admission webhook") || !strings.Contains(jobengine.ErrorMessage(got.Status.Error), tc.want) ||
				got.Status.JobStatus.JobID != "" || len(f.runs()) != 0 {
				t.Errorf("status %s, %d runs; want a ValidationError containing %q and no submission", statusString(got), len(f.runs()), tc.want)
			}
			if !hasWarning(f.Events(), reasons.ReasonValidationError) {
				t.Error("no Warning ValidationError event")
			}
		})
	}
}

func signJob(t *testing.T, j *v1beta1.FlinkSessionJob, ref reviewstamp.Reference) string {
	t.Helper()
	v, err := reviewstamp.Sign(testReviewKey, "FlinkSessionJob", j, ref, "bob", j.CreationTimestamp.Time)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func hasWarning(events []string, reason string) bool {
	for _, e := range events {
		if strings.HasPrefix(e, "Warning "+reason+" ") {
			return true
		}
	}
	return false
}
