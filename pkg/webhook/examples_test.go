package webhook

import (
	"encoding/json"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
)

// TestUpstreamExamplesAreAdmitted: every flink.apache.org object of the
// upstream samples is admitted on CREATE once the objects it refers to
// exist, so the webhook does not break what works upstream.
func TestUpstreamExamplesAreAdmitted(t *testing.T) {
	objs := upstreamObjects(t)
	lookup := newLookup()
	for _, o := range objs {
		switch o.kind {
		case "FlinkDeployment":
			d := &v1beta1.FlinkDeployment{}
			if err := json.Unmarshal(o.json, d); err != nil {
				t.Fatal(err)
			}
			d.Namespace = "default"
			lookup.deployments["default/"+d.Name] = d
		case "FlinkSessionJob":
			j := &v1beta1.FlinkSessionJob{}
			if err := json.Unmarshal(o.json, j); err != nil {
				t.Fatal(err)
			}
			j.Namespace = "default"
			lookup.sessionJobs["default/"+j.Name] = j
		}
	}
	if len(lookup.deployments) < 5 || len(lookup.sessionJobs) < 2 {
		t.Fatalf("only %d FlinkDeployments and %d FlinkSessionJobs in the upstream examples", len(lookup.deployments), len(lookup.sessionJobs))
	}
	v := newValidator(lookup, nil)
	for _, o := range objs {
		var meta metav1.PartialObjectMetadata
		_ = json.Unmarshal(o.json, &meta)
		req := &admissionv1.AdmissionRequest{UID: "u", Kind: metav1.GroupVersionKind{Group: v1beta1.GroupName, Version: "v1beta1", Kind: o.kind},
			Namespace: "default", Name: meta.Name, Operation: admissionv1.Create, Object: runtime.RawExtension{Raw: o.json}}
		resp := v.Review(t.Context(), req)
		if !resp.Allowed {
			t.Errorf("%s %s/%s denied: %s", o.source, o.kind, meta.Name, resp.Result.Message)
		}
		if len(resp.Warnings) > 0 {
			t.Errorf("%s %s/%s warnings: %q", o.source, o.kind, meta.Name, resp.Warnings)
		}
	}
}
