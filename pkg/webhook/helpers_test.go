package webhook

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/config"
)

const (
	spDir = "file:///flink/savepoints"
	cpDir = "file:///flink/checkpoints"
)

// fakeLookup is a Lookup over maps keyed "namespace/name".
type fakeLookup struct {
	deployments map[string]*v1beta1.FlinkDeployment
	sessionJobs map[string]*v1beta1.FlinkSessionJob
	unsynced    bool
	err         error
}

func newLookup(objs ...any) *fakeLookup {
	l := &fakeLookup{deployments: map[string]*v1beta1.FlinkDeployment{}, sessionJobs: map[string]*v1beta1.FlinkSessionJob{}}
	for _, o := range objs {
		switch o := o.(type) {
		case *v1beta1.FlinkDeployment:
			l.deployments[o.Namespace+"/"+o.Name] = o
		case *v1beta1.FlinkSessionJob:
			l.sessionJobs[o.Namespace+"/"+o.Name] = o
		}
	}
	return l
}

func (l *fakeLookup) Deployment(ns, name string) (*v1beta1.FlinkDeployment, error) {
	if l.err != nil {
		return nil, l.err
	}
	if d, ok := l.deployments[ns+"/"+name]; ok {
		return d, nil
	}
	return nil, apierrors.NewNotFound(v1beta1.Resource("flinkdeployments"), name)
}

func (l *fakeLookup) SessionJob(ns, name string) (*v1beta1.FlinkSessionJob, error) {
	if l.err != nil {
		return nil, l.err
	}
	if j, ok := l.sessionJobs[ns+"/"+name]; ok {
		return j, nil
	}
	return nil, apierrors.NewNotFound(v1beta1.Resource("flinksessionjobs"), name)
}

func (l *fakeLookup) HasSynced() bool { return !l.unsynced }

func ptr[T any](v T) *T { return &v }

func conf(kv ...string) *v1beta1.Configuration {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return v1beta1.NewConfiguration(m)
}

func application(ns, name string) *v1beta1.FlinkDeployment {
	return &v1beta1.FlinkDeployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "flink.apache.org/v1beta1", Kind: "FlinkDeployment"},
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1beta1.FlinkDeploymentSpec{
			Image:              "flink:1.20",
			FlinkVersion:       v1beta1.FlinkVersion1_20,
			ServiceAccount:     "flink",
			FlinkConfiguration: conf(config.FlinkSavepointDir, spDir, config.FlinkCheckpointDir, cpDir),
			JobManager:         &v1beta1.JobManagerSpec{Resource: &v1beta1.ResourceSpec{CPU: ptr(1.0), Memory: "1024m"}},
			TaskManager:        &v1beta1.TaskManagerSpec{Resource: &v1beta1.ResourceSpec{CPU: ptr(1.0), Memory: "1024m"}},
			Job: &v1beta1.JobSpec{
				JarURI:      "local:///opt/flink/examples/streaming/StateMachineExample.jar",
				Parallelism: ptr(int32(2)),
				UpgradeMode: v1beta1.UpgradeModeSavepoint,
			},
		},
	}
}

func sessionCluster(ns, name string) *v1beta1.FlinkDeployment {
	d := application(ns, name)
	d.Spec.Job = nil
	return d
}

func sessionJob(ns, name, cluster string) *v1beta1.FlinkSessionJob {
	return &v1beta1.FlinkSessionJob{
		TypeMeta:   metav1.TypeMeta{APIVersion: "flink.apache.org/v1beta1", Kind: "FlinkSessionJob"},
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1beta1.FlinkSessionJobSpec{
			DeploymentName: cluster,
			Job:            &v1beta1.JobSpec{JarURI: "https://repo.example/job.jar", UpgradeMode: v1beta1.UpgradeModeStateless},
		},
	}
}

func savepoint(ns, name string, ref v1beta1.JobReference) *v1beta1.FlinkStateSnapshot {
	return &v1beta1.FlinkStateSnapshot{
		TypeMeta:   metav1.TypeMeta{APIVersion: "flink.apache.org/v1beta1", Kind: "FlinkStateSnapshot"},
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       v1beta1.FlinkStateSnapshotSpec{JobReference: &ref, Savepoint: &v1beta1.SavepointSpec{}},
	}
}

func deploymentRef(name string) v1beta1.JobReference {
	return v1beta1.JobReference{Kind: v1beta1.JobReferenceKindDeployment, Name: name}
}

// request builds an AdmissionRequest for obj (and old on UPDATE).
func request(op admissionv1.Operation, obj, old runtime.Object) *admissionv1.AdmissionRequest {
	kind := "Unknown"
	ns, name := "", ""
	if obj != nil {
		kind = obj.GetObjectKind().GroupVersionKind().Kind
		if m, ok := obj.(metav1.Object); ok {
			ns, name = m.GetNamespace(), m.GetName()
		}
	}
	req := &admissionv1.AdmissionRequest{
		UID:       types.UID("uid-" + string(op) + "-" + name),
		Kind:      metav1.GroupVersionKind{Group: "flink.apache.org", Version: "v1beta1", Kind: kind},
		Namespace: ns,
		Name:      name,
		Operation: op,
		UserInfo:  authenticationv1.UserInfo{Username: "alice", Groups: []string{"team-a", "system:authenticated"}, UID: "alice-uid"},
	}
	if obj != nil {
		req.Object = runtime.RawExtension{Raw: mustJSON(obj)}
	}
	if old != nil {
		req.OldObject = runtime.RawExtension{Raw: mustJSON(old)}
	}
	return req
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

func reviewBody(req *admissionv1.AdmissionRequest) []byte {
	return mustJSON(admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request:  req,
	})
}

// post sends a body to the validator through a real HTTP server.
func post(t *testing.T, v *Validator, contentType string, body []byte) (int, []byte) {
	t.Helper()
	srv := httptest.NewServer(v.Handler())
	defer srv.Close()
	resp, err := http.Post(srv.URL+ValidatePath, contentType, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, out
}

// admit posts a review and returns the decoded response, checking the
// envelope (200, same apiVersion/kind, uid echoed).
func admit(t *testing.T, v *Validator, req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
	t.Helper()
	code, body := post(t, v, "application/json", reviewBody(req))
	if code != http.StatusOK {
		t.Fatalf("HTTP %d: %s", code, body)
	}
	var review admissionv1.AdmissionReview
	if err := json.Unmarshal(body, &review); err != nil {
		t.Fatalf("decoding response: %v\n%s", err, body)
	}
	if review.APIVersion != "admission.k8s.io/v1" || review.Kind != "AdmissionReview" {
		t.Errorf("response apiVersion %q kind %q", review.APIVersion, review.Kind)
	}
	if review.Response == nil {
		t.Fatalf("no response in %s", body)
	}
	if review.Response.UID != req.UID {
		t.Errorf("response uid %q, want the request's %q", review.Response.UID, req.UID)
	}
	return review.Response
}

func newValidator(lookup Lookup, cfg config.Config) *Validator {
	return NewValidator(Options{Config: cfg, Lookup: lookup})
}

func newRecorder() *httptest.ResponseRecorder { return httptest.NewRecorder() }

func mustRequest(method, path string) *http.Request {
	return httptest.NewRequest(method, path, nil)
}

type authenticationExtra = authenticationv1.ExtraValue

// userFor picks a user with or without cross-namespace rights.
func userFor(n uint8) authenticationv1.UserInfo {
	if n%2 == 0 {
		return authenticationv1.UserInfo{Username: "alice", Groups: []string{"team-a"}}
	}
	return authenticationv1.UserInfo{Username: "bob"}
}

// reviewBodyOrNil is reviewBody for requests that may carry invalid JSON.
func reviewBodyOrNil(req *admissionv1.AdmissionRequest) []byte {
	b, err := json.Marshal(admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request:  req,
	})
	if err != nil {
		return nil
	}
	return b
}
