package operator

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/config"
	kubefake "github.com/flinkops/flink-operator/pkg/generated/kube/kubernetes/fake"
	"github.com/flinkops/flink-operator/pkg/reviewstamp"
)

type staticKeys [][]byte

func (k staticKeys) Keys() [][]byte { return k }

// The snapshot controller's guard trusts the snapshot's own stamp, nothing
// else: a same-namespace reference needs none; a cross-namespace one needs
// a stamp for this snapshot and this reference.
func TestSnapshotGuard(t *testing.T) {
	key := []byte("0123456789abcdef0123456789abcdef")
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	snap := func(name, ns string) *v1beta1.FlinkStateSnapshot {
		return &v1beta1.FlinkStateSnapshot{
			ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: name, CreationTimestamp: metav1.NewTime(now)},
			Spec: v1beta1.FlinkStateSnapshotSpec{Savepoint: &v1beta1.SavepointSpec{},
				JobReference: &v1beta1.JobReference{Kind: v1beta1.JobReferenceKindDeployment, Name: "orders", Namespace: ns}},
		}
	}
	stamp := func(s *v1beta1.FlinkStateSnapshot) string {
		v, err := reviewstamp.Sign(key, "FlinkStateSnapshot", s, reviewstamp.Reference{Kind: "FlinkDeployment", Namespace: s.Spec.JobReference.Namespace, Name: "orders"}, "bob", now)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	guard := snapshotGuard(staticKeys{key})
	if err := guard(t.Context(), snap("local", "")); err != nil {
		t.Errorf("same namespace: %v", err)
	}
	cross := snap("sp", "team-b")
	if err := guard(t.Context(), cross); err == nil || !strings.Contains(err.Error(), "has no flinkops.io/cross-namespace-review annotation") {
		t.Errorf("unstamped: %v", err)
	}
	cross.Annotations = map[string]string{reviewstamp.Annotation: stamp(snap("reviewed", "team-b"))}
	if err := guard(t.Context(), cross); err == nil || !strings.Contains(err.Error(), "does not vouch") {
		t.Errorf("copied stamp: %v", err)
	}
	cross.Annotations[reviewstamp.Annotation] = stamp(cross)
	if err := guard(t.Context(), cross); err != nil {
		t.Errorf("valid stamp: %v", err)
	}
	if err := snapshotGuard(reviewKeys(nil))(t.Context(), cross); err == nil {
		t.Error("accepted without a key")
	}
}

// The review key is loaded (its Secret created) only when cross-namespace
// references are enabled.
func TestNewReviewKey(t *testing.T) {
	kube := kubefake.NewSimpleClientset()
	opts := DefaultOptions()
	opts.Webhook.Namespace = "flink-operator"
	if k := newReviewKey(t.Context(), kube, opts); k != nil || len(kube.Actions()) != 0 {
		t.Errorf("option off: key %v, %d API calls", k, len(kube.Actions()))
	}
	opts.Config = config.Defaults()
	opts.Config[config.KeySnapshotCrossNamespaceReferencesEnabled] = "true"
	k := newReviewKey(t.Context(), kube, opts)
	if k == nil || len(k.Keys()) != 1 {
		t.Fatalf("option on: key %v", k)
	}
	if _, err := kube.CoreV1().Secrets("flink-operator").Get(t.Context(), ReviewKeySecretName, metav1.GetOptions{}); err != nil {
		t.Error(err)
	}
	t.Setenv("POD_NAMESPACE", "")
	opts.Webhook.Namespace = ""
	if k := newReviewKey(t.Context(), kube, opts); k != nil {
		t.Error("a key without a namespace for its Secret")
	}
}
