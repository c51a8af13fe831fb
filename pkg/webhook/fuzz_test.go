package webhook

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/config"
	"github.com/flinkops/flink-operator/pkg/upstreamtest"
)

// upstreamObject is one flink.apache.org object of the upstream samples, as JSON.
type upstreamObject struct {
	source string
	kind   string
	json   []byte
}

func upstreamObjects(tb testing.TB) []upstreamObject {
	tb.Helper()
	files, err := upstreamtest.Glob("examples", "*.yaml")
	if err != nil {
		tb.Fatal(err)
	}
	var out []upstreamObject
	for _, f := range files {
		data, err := upstreamtest.ReadFile(f)
		if err != nil {
			tb.Fatal(err)
		}
		reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
		for {
			doc, err := reader.Read()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				tb.Fatalf("%s: %v", f, err)
			}
			js, err := yaml.YAMLToJSON(doc)
			if err != nil {
				tb.Fatalf("%s: %v", f, err)
			}
			var meta metav1.TypeMeta
			if err := yaml.Unmarshal(js, &meta); err != nil || meta.GroupVersionKind().Group != v1beta1.GroupName {
				continue
			}
			out = append(out, upstreamObject{source: filepath.Base(f), kind: meta.Kind, json: js})
		}
	}
	return out
}

var fuzzKinds = []string{"FlinkDeployment", "FlinkSessionJob", "FlinkStateSnapshot", "Pod"}
var fuzzOps = []admissionv1.Operation{admissionv1.Create, admissionv1.Update, admissionv1.Delete, admissionv1.Connect}

// reviewFunc is a SubjectAccessReview client in one function. The fuzz
// test avoids the fake clientset: it links every API group, and coverage
// instrumentation of all that code slows fuzzing to a crawl.
type reviewFunc func(*authorizationv1.SubjectAccessReview) *authorizationv1.SubjectAccessReview

func (f reviewFunc) Create(_ context.Context, r *authorizationv1.SubjectAccessReview, _ metav1.CreateOptions) (*authorizationv1.SubjectAccessReview, error) {
	return f(r.DeepCopy()), nil
}

// fuzzValidator reaches every path: targets exist, cross-namespace
// references are on and reviewed (allowed for one user only).
func fuzzValidator() *Validator {
	reviews := reviewFunc(func(r *authorizationv1.SubjectAccessReview) *authorizationv1.SubjectAccessReview {
		r.Status.Allowed = r.Spec.User == "alice"
		return r
	})
	cfg := config.Defaults()
	cfg[config.KeySnapshotCrossNamespaceReferencesEnabled] = "true"
	cluster := sessionCluster("default", "basic-session-deployment-only-example")
	return NewValidator(Options{
		Config: cfg,
		Lookup: newLookup(application("default", "basic-example"), application("default", "example-deployment"), cluster,
			sessionJob("default", "basic-session-job-only-example", cluster.Name), application("other", "job")),
		AccessReviews: reviews,
	})
}

// FuzzValidate feeds arbitrary bytes to the webhook, as a whole request
// body and as the objects of a well-formed AdmissionReview: it must answer
// every one (200 with a decision, or 4xx) and never panic.
func FuzzValidate(f *testing.F) {
	for _, o := range upstreamObjects(f) {
		for i, k := range fuzzKinds {
			if k == o.kind {
				f.Add(reviewBody(&admissionv1.AdmissionRequest{UID: "seed", Kind: metav1.GroupVersionKind{Group: v1beta1.GroupName, Version: "v1beta1", Kind: k},
					Operation: admissionv1.Create, Object: runtime.RawExtension{Raw: o.json}}), uint8(i), uint8(0), []byte{}, []byte{})
				f.Add([]byte{}, uint8(i), uint8(0), o.json, []byte{})
				f.Add([]byte{}, uint8(i), uint8(1), o.json, o.json)
			}
		}
	}
	f.Add([]byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"x"}}`), uint8(2), uint8(0),
		[]byte(`{"metadata":{"namespace":"a"},"spec":{"jobReference":{"kind":"FlinkDeployment","name":"job","namespace":"other"},"checkpoint":{}}}`), []byte(`null`))
	f.Add([]byte(`{`), uint8(1), uint8(1), []byte(`{"spec":{"flinkConfiguration":{"a":{"b":[1,{"c":null}]}}}}`), []byte(`{"spec":{"deploymentName":7}}`))

	v := fuzzValidator()
	handler := v.Handler()
	f.Fuzz(func(t *testing.T, body []byte, kind, op uint8, object, oldObject []byte) {
		// Lookups and access reviews never fail here, so an answer with a
		// 5xx code is a bug: Review turns a panic into one (so that the
		// API server gets an answer), and the fuzzer must still see it.
		decided := func(resp *admissionv1.AdmissionResponse) {
			t.Helper()
			switch {
			case resp == nil:
				t.Fatal("no response")
			case !resp.Allowed && resp.Result == nil:
				t.Fatalf("denied without a result: %+v", resp)
			case !resp.Allowed && resp.Result.Code >= 500:
				t.Fatalf("internal error: %s", resp.Result.Message)
			}
		}
		check := func(body []byte) {
			t.Helper()
			rec := httptest.NewRecorder()
			req := httptest.NewRequest(http.MethodPost, ValidatePath, bytes.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			handler.ServeHTTP(rec, req)
			switch {
			case rec.Code >= 400 && rec.Code < 500:
			case rec.Code == http.StatusOK:
				var review admissionv1.AdmissionReview
				if err := json.Unmarshal(rec.Body.Bytes(), &review); err != nil {
					t.Fatalf("undecodable answer %q: %v", rec.Body.Bytes(), err)
				}
				decided(review.Response)
			default:
				t.Fatalf("HTTP %d for %q", rec.Code, body)
			}
		}
		check(body)

		req := &admissionv1.AdmissionRequest{
			UID:       "fuzz",
			Kind:      metav1.GroupVersionKind{Group: v1beta1.GroupName, Version: "v1beta1", Kind: fuzzKinds[int(kind)%len(fuzzKinds)]},
			Namespace: "default",
			Operation: fuzzOps[int(op)%len(fuzzOps)],
			UserInfo:  userFor(op),
			Object:    runtime.RawExtension{Raw: object},
			OldObject: runtime.RawExtension{Raw: oldObject},
		}
		decided(v.Review(t.Context(), req))
		// Raw bytes that are not JSON cannot be embedded in a review body.
		if b := reviewBodyOrNil(req); b != nil {
			check(b)
		}
	})
}
