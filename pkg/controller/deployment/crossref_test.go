package deployment

import (
	"strings"
	"testing"
	"time"

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

// A FlinkDeployment that starts from a snapshot in another namespace is
// deployed only if it carries the admission webhook's stamp for exactly that
// reference: with the option on but no stamp, a stamp copied from another
// FlinkDeployment, or a stamp for another snapshot, it gets a
// ValidationError and a Warning event, and nothing is built.
func TestCrossNamespaceSnapshotRefNeedsReviewStamp(t *testing.T) {
	const other = "team-b"
	for _, tc := range []struct {
		name  string
		stamp func(d *v1beta1.FlinkDeployment) string
		want  string // "" = deployed
	}{
		{"no stamp", nil, "has no flinkops.io/cross-namespace-review annotation"},
		{"stamp copied from another deployment", func(d *v1beta1.FlinkDeployment) string {
			src := d.DeepCopy()
			src.Name = "reviewed"
			return sign(t, "FlinkDeployment", src, reviewstamp.Reference{Kind: "FlinkStateSnapshot", Namespace: other, Name: "base"})
		}, "does not vouch for this FlinkDeployment"},
		{"stamp for another snapshot", func(d *v1beta1.FlinkDeployment) string {
			return sign(t, "FlinkDeployment", d, reviewstamp.Reference{Kind: "FlinkStateSnapshot", Namespace: other, Name: "elsewhere"})
		}, "does not vouch for this FlinkDeployment"},
		{"stamp signed with another key", func(d *v1beta1.FlinkDeployment) string {
			v, _ := reviewstamp.Sign([]byte("another key, held by nobody here"), "FlinkDeployment", d,
				reviewstamp.Reference{Kind: "FlinkStateSnapshot", Namespace: other, Name: "base"}, "alice", t0)
			return v
		}, "does not vouch for this FlinkDeployment"},
		{"valid stamp", func(d *v1beta1.FlinkDeployment) string {
			return sign(t, "FlinkDeployment", d, reviewstamp.Reference{Kind: "FlinkStateSnapshot", Namespace: other, Name: "base"})
		}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			f.Config[config.KeySnapshotCrossNamespaceReferencesEnabled] = "true"
			f.reviewKeys = staticKeys{testReviewKey}
			f.Restart()
			putForeignSnapshot(f, other, "base")
			d := f.application("clone", v1beta1.UpgradeModeSavepoint)
			d.Spec.Job.InitialStateSnapshotRef = &v1beta1.SnapshotReference{Name: "base", Namespace: other}
			d.CreationTimestamp = metav1.NewTime(t0)
			d.UID = "" // as at CREATE: the stamp is bound to the time of admission
			if tc.stamp != nil {
				d.Annotations = map[string]string{reviewstamp.Annotation: tc.stamp(d)}
			}
			d.UID = "uid-clone"
			f.Create(d)
			if tc.want == "" {
				got := f.Until("clone", 10, "running", running)
				if got.Status.JobStatus.UpgradeSavepointPath != "s3://bucket/savepoints/base" {
					t.Errorf("upgradeSavepointPath %q, want the foreign snapshot's path", got.Status.JobStatus.UpgradeSavepointPath)
				}
				return
			}
			for range 3 {
				f.Step("clone")
			}
			got := f.Get("clone")
			if !strings.Contains(jobengine.ErrorMessage(got.Status.Error), "was not reviewed by the operator's admission webhook") || !strings.Contains(jobengine.ErrorMessage(got.Status.Error), tc.want) ||
				got.Status.ReconciliationStatus.LastReconciledSpec != "" {
				t.Errorf("status %s, want a ValidationError containing %q and nothing recorded", statusString(got), tc.want)
			}
			if deps, _ := f.Kube.AppsV1().Deployments(ns).List(f.Ctx, metav1.ListOptions{}); len(deps.Items) != 0 {
				t.Errorf("%d Deployments created from an unreviewed reference", len(deps.Items))
			}
			if !hasEvent(f.Events(), "Warning", reasons.ReasonValidationError) {
				t.Error("no Warning ValidationError event")
			}
		})
	}
}

// Without any review key loaded nothing verifies; with the option off the
// option's message comes first (no stamp is asked for).
func TestCrossNamespaceSnapshotRefWithoutKeyOrOption(t *testing.T) {
	for _, on := range []bool{true, false} {
		f := newFixture(t)
		f.Config[config.KeySnapshotCrossNamespaceReferencesEnabled] = map[bool]string{true: "true", false: "false"}[on]
		f.Restart()
		putForeignSnapshot(f, "team-b", "base")
		d := f.application("clone", v1beta1.UpgradeModeSavepoint)
		d.Spec.Job.InitialStateSnapshotRef = &v1beta1.SnapshotReference{Name: "base", Namespace: "team-b"}
		f.Create(d)
		f.Step("clone")
		got := jobengine.ErrorMessage(f.Get("clone").Status.Error)
		want := map[bool]string{true: "has not loaded its review key", false: "cross-namespace-references.enabled is false"}[on]
		if !strings.Contains(got, want) {
			t.Errorf("option %v: error %q, want %q", on, got, want)
		}
	}
}

func sign(t *testing.T, kind string, obj metav1.Object, ref reviewstamp.Reference) string {
	t.Helper()
	v, err := reviewstamp.Sign(testReviewKey, kind, obj, ref, "bob", t0.Add(-time.Second))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// putForeignSnapshot creates a COMPLETED savepoint in namespace.
func putForeignSnapshot(f *fixture, namespace, name string) {
	f.T.Helper()
	s := &v1beta1.FlinkStateSnapshot{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec: v1beta1.FlinkStateSnapshotSpec{JobReference: &v1beta1.JobReference{Kind: v1beta1.JobReferenceKindDeployment, Name: "job"},
			Savepoint: &v1beta1.SavepointSpec{}},
		Status: v1beta1.FlinkStateSnapshotStatus{State: v1beta1.SnapshotCompleted, Path: "s3://bucket/savepoints/" + name},
	}
	if _, err := f.Client.FlinkV1beta1().FlinkStateSnapshots(namespace).Create(f.Ctx, s, metav1.CreateOptions{}); err != nil {
		f.T.Fatal(err)
	}
}
