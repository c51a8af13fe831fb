package operator

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	flinkfake "github.com/flinkops/flink-operator/pkg/generated/clientset/versioned/fake"
	kubefake "github.com/flinkops/flink-operator/pkg/generated/kube/kubernetes/fake"
	"github.com/flinkops/flink-operator/pkg/webhook"
)

func TestWebhookDisabledByDefault(t *testing.T) {
	inf := NewInformers(kubefake.NewSimpleClientset(), flinkfake.NewSimpleClientset(), nil, 0)
	srv, certs, err := newWebhook(t.Context(), kubefake.NewSimpleClientset(), flinkfake.NewSimpleClientset(), inf, &runState{Options: DefaultOptions()})
	if srv != nil || certs != nil || err != nil {
		t.Errorf("default options: server %v, certs %v, err %v; want the webhook off", srv, certs, err)
	}
}

func TestWebhookOptionErrors(t *testing.T) {
	t.Setenv("POD_NAMESPACE", "")
	for _, tc := range []struct {
		name string
		opts WebhookOptions
		want string
	}{
		{"files without dir", WebhookOptions{CertMode: WebhookCertFiles}, "--webhook-cert-dir"},
		{"files dir without certificate", WebhookOptions{CertMode: WebhookCertFiles, CertDir: filepath.Join(t.TempDir(), "none")}, "tls.crt"},
		{"unknown mode", WebhookOptions{CertMode: "vault"}, `--webhook-cert-mode "vault"`},
		{"self-managed without namespace", WebhookOptions{CertMode: WebhookCertSelfManaged, SecretName: "s", ServiceName: "svc"}, "$POD_NAMESPACE"},
		{"bad address", WebhookOptions{CertMode: WebhookCertSelfManaged, Namespace: "ns", SecretName: "s", ServiceName: "svc", BindAddress: "256.0.0.1:1"}, "webhook server"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := DefaultOptions()
			if tc.opts.BindAddress == "" {
				tc.opts.BindAddress = "127.0.0.1:0"
			}
			opts.Webhook = tc.opts
			inf := NewInformers(kubefake.NewSimpleClientset(), flinkfake.NewSimpleClientset(), nil, 0)
			_, _, err := newWebhook(t.Context(), kubefake.NewSimpleClientset(), flinkfake.NewSimpleClientset(), inf, &runState{Options: opts})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err %v, want one mentioning %q", err, tc.want)
			}
		})
	}
}

// TestWebhookServesFromTheInformers wires the webhook as run() does, with
// a self-managed certificate, and asks it over HTTPS, trusting only the
// CA it published, about snapshots of a job that exists and one that does
// not.
func TestWebhookServesFromTheInformers(t *testing.T) {
	ctx, cancel := context.WithCancel(klog.NewContext(t.Context(), klog.Background()))
	defer cancel()
	kube := kubefake.NewSimpleClientset()
	dep := &v1beta1.FlinkDeployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "job"},
		Spec: v1beta1.FlinkDeploymentSpec{FlinkVersion: v1beta1.FlinkVersion1_20,
			FlinkConfiguration: v1beta1.NewConfiguration(map[string]string{"execution.checkpointing.savepoint-dir": "file:///sp"})},
	}
	flink := flinkfake.NewSimpleClientset(dep)
	inf := NewInformers(kube, flink, nil, 0)
	opts := DefaultOptions()
	opts.Webhook.BindAddress = "127.0.0.1:0"
	opts.Webhook.Namespace = "flink"
	opts.Webhook.ExtraHosts = []string{"127.0.0.1"}
	srv, certs, err := newWebhook(ctx, kube, flink, inf, &runState{Options: opts})
	if err != nil {
		t.Fatal(err)
	}
	if srv == nil || certs == nil {
		t.Fatal("webhook not created")
	}
	inf.Start(ctx.Done())
	defer func() {
		cancel() // the informers stop only once their stop channel closes
		inf.Shutdown()
	}()
	if err := inf.WaitForCacheSync(ctx); err != nil {
		t.Fatal(err)
	}
	go srv.serve(klog.Background())
	defer func() { _ = srv.shutdown(t.Context()) }()

	secret, err := kube.CoreV1().Secrets("flink").Get(ctx, opts.Webhook.SecretName, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("self-managed Secret: %v", err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(secret.Data[webhook.SecretCAFile]) {
		t.Fatal("no CA in the Secret")
	}
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}}}
	url := "https://" + srv.ln.Addr().String() + webhook.ValidatePath

	for name, want := range map[string]string{"job": "", "missing": "Target for snapshot team/missing was not found"} {
		snap := &v1beta1.FlinkStateSnapshot{
			ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "s-" + name},
			Spec: v1beta1.FlinkStateSnapshotSpec{
				JobReference: &v1beta1.JobReference{Kind: v1beta1.JobReferenceKindDeployment, Name: name},
				Savepoint:    &v1beta1.SavepointSpec{},
			},
		}
		raw, _ := json.Marshal(snap)
		body, _ := json.Marshal(admissionv1.AdmissionReview{
			TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
			Request: &admissionv1.AdmissionRequest{UID: "uid-" + "name", Operation: admissionv1.Create, Namespace: "team",
				Kind:   metav1.GroupVersionKind{Group: v1beta1.GroupName, Version: "v1beta1", Kind: "FlinkStateSnapshot"},
				Object: runtime.RawExtension{Raw: raw}},
		})
		resp, err := client.Post(url, "application/json", bytes.NewReader(body))
		if err != nil {
			t.Fatalf("POST %s: %v", url, err)
		}
		var review admissionv1.AdmissionReview
		err = json.NewDecoder(resp.Body).Decode(&review)
		resp.Body.Close()
		if err != nil || review.Response == nil {
			t.Fatalf("%s: HTTP %d, decoding: %v", name, resp.StatusCode, err)
		}
		switch {
		case want == "" && !review.Response.Allowed:
			t.Errorf("%s: denied: %s", name, review.Response.Result.Message)
		case want != "" && (review.Response.Allowed || review.Response.Result.Message != want):
			t.Errorf("%s: allowed=%v %+v, want denied with %q", name, review.Response.Allowed, review.Response.Result, want)
		}
	}
	if secret.Type != corev1.SecretTypeTLS {
		t.Errorf("Secret type %s", secret.Type)
	}
}

// TestWebhookFollowsReloadedConfig: the webhook judges every admission
// with the operator configuration in use, so a reloaded --config file
// (dynamic configuration) changes its verdict without a restart, as it
// changes what the controllers accept. Here an operator-wide savepoint
// directory makes a savepoint-mode FlinkDeployment without its own valid,
// and removing it makes the same spec invalid again.
func TestWebhookFollowsReloadedConfig(t *testing.T) {
	f := newDynamicFixture(t, "kubernetes.operator.savepoint.history.max.count: 3\n")
	kube := kubefake.NewSimpleClientset()
	flink := flinkfake.NewSimpleClientset()
	inf := NewInformers(kube, flink, nil, 0)
	opts := *f.opts
	opts.Webhook.BindAddress = "127.0.0.1:0"
	opts.Webhook.Namespace = "flink"
	srv, _, err := newWebhook(f.ctx, kube, flink, inf, &opts)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = srv.ln.Close() }()
	var restarts int
	w := f.watcher(&restarts)

	dep := &v1beta1.FlinkDeployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "flink.apache.org/v1beta1", Kind: "FlinkDeployment"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "job"},
		Spec: v1beta1.FlinkDeploymentSpec{
			Image: "flink:1.20", FlinkVersion: v1beta1.FlinkVersion1_20, ServiceAccount: "flink",
			FlinkConfiguration: v1beta1.NewConfiguration(map[string]string{"execution.checkpointing.dir": "file:///cp"}),
			JobManager:         &v1beta1.JobManagerSpec{Resource: &v1beta1.ResourceSpec{CPU: ptrTo(1.0), Memory: "1024m"}},
			TaskManager:        &v1beta1.TaskManagerSpec{Resource: &v1beta1.ResourceSpec{CPU: ptrTo(1.0), Memory: "1024m"}},
			Job:                &v1beta1.JobSpec{JarURI: "local:///opt/flink/job.jar", UpgradeMode: v1beta1.UpgradeModeSavepoint},
		},
	}
	admit := func(step string, wantAllowed bool) {
		t.Helper()
		raw, _ := json.Marshal(dep)
		body, _ := json.Marshal(admissionv1.AdmissionReview{
			TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
			Request: &admissionv1.AdmissionRequest{UID: "uid", Operation: admissionv1.Create, Namespace: "team", Name: "job",
				Kind:   metav1.GroupVersionKind{Group: v1beta1.GroupName, Version: "v1beta1", Kind: "FlinkDeployment"},
				Object: runtime.RawExtension{Raw: raw}},
		})
		req := httptest.NewRequest(http.MethodPost, webhook.ValidatePath, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		srv.srv.Handler.ServeHTTP(rec, req)
		var review admissionv1.AdmissionReview
		if err := json.NewDecoder(rec.Body).Decode(&review); err != nil || review.Response == nil {
			t.Fatalf("%s: HTTP %d, decoding: %v", step, rec.Code, err)
		}
		if got := review.Response.Allowed; got != wantAllowed {
			t.Errorf("%s: allowed=%v (%+v), want %v", step, got, review.Response.Result, wantAllowed)
		}
	}

	admit("start-up configuration without a savepoint directory", false)
	f.write("kubernetes.operator.savepoint.history.max.count: 3\nexecution.checkpointing.savepoint-dir: file:///sp\n")
	w.check(f.ctx)
	admit("reloaded configuration with a savepoint directory", true)
	f.write("kubernetes.operator.savepoint.history.max.count: 3\n")
	w.check(f.ctx)
	admit("reloaded configuration without it again", false)
}

func ptrTo[T any](v T) *T { return &v }
