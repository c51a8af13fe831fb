package webhook

import (
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/canary"
)

// TestCanaryNotValidated: as upstream, a FlinkDeployment or FlinkSessionJob
// labelled as a canary (pkg/canary) is admitted without validation (it is
// never deployed; upstream's example has no spec), on CREATE and on the
// operator's UPDATE bumping its restartNonce. Without the label the same
// objects are refused, and a FlinkStateSnapshot is validated either way.
func TestCanaryNotValidated(t *testing.T) {
	labelled := func(o metav1.Object, value string) {
		if value != "" {
			o.SetLabels(map[string]string{canary.Label: value})
		}
	}
	for _, tc := range []struct {
		name string
		obj  func(label string) runtime.Object
		old  bool // an UPDATE bumping spec.restartNonce
	}{
		{name: "bare FlinkDeployment", obj: func(label string) runtime.Object {
			d := &v1beta1.FlinkDeployment{TypeMeta: metav1.TypeMeta{APIVersion: "flink.apache.org/v1beta1", Kind: "FlinkDeployment"},
				ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "canary"}}
			labelled(d, label)
			return d
		}},
		{name: "FlinkDeployment bumped", old: true, obj: func(label string) runtime.Object {
			d := &v1beta1.FlinkDeployment{TypeMeta: metav1.TypeMeta{APIVersion: "flink.apache.org/v1beta1", Kind: "FlinkDeployment"},
				ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "canary"}}
			labelled(d, label)
			return d
		}},
		{name: "bare FlinkSessionJob", obj: func(label string) runtime.Object {
			j := &v1beta1.FlinkSessionJob{TypeMeta: metav1.TypeMeta{APIVersion: "flink.apache.org/v1beta1", Kind: "FlinkSessionJob"},
				ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "canary"}}
			labelled(j, label)
			return j
		}},
		{name: "FlinkStateSnapshot", obj: func(label string) runtime.Object {
			s := &v1beta1.FlinkStateSnapshot{TypeMeta: metav1.TypeMeta{APIVersion: "flink.apache.org/v1beta1", Kind: "FlinkStateSnapshot"},
				ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "canary"}}
			labelled(s, label)
			return s
		}},
	} {
		for _, label := range []string{"true", "TRUE", "false", ""} {
			t.Run(tc.name+"/label="+label, func(t *testing.T) {
				obj := tc.obj(label)
				req := request(admissionv1.Create, obj, nil)
				if tc.old {
					old := obj.DeepCopyObject()
					d := obj.(*v1beta1.FlinkDeployment)
					nonce := int64(3)
					d.Spec.RestartNonce = &nonce
					req = request(admissionv1.Update, d, old)
				}
				resp := admit(t, newValidator(newLookup(), nil), req)
				want := canary.Is(obj.(metav1.Object)) && tc.name != "FlinkStateSnapshot"
				if resp.Allowed != want {
					t.Errorf("allowed = %v, want %v (%v)", resp.Allowed, want, resp.Result)
				}
			})
		}
	}
}
