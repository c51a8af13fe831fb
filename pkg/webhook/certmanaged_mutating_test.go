package webhook

import (
	"bytes"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/flinkops/flink-operator/pkg/generated/kube/kubernetes/fake"
)

// The self-managed CA goes into the MutatingWebhookConfiguration of the
// same name too (the step that stamps reviewed cross-namespace
// references), and is restored there when someone resets it.
func TestSelfManagedPatchesMutatingConfiguration(t *testing.T) {
	mwc := &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: testConfig},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{Name: "stamp.flink.apache.org", ClientConfig: admissionregistrationv1.WebhookClientConfig{
			Service: &admissionregistrationv1.ServiceReference{Namespace: testNS, Name: testService, Path: ptr(MutatePath)},
		}}},
	}
	client := fake.NewSimpleClientset(webhookConfig(), mwc)
	m := newManager(t, client, clocktesting.NewFakeClock(t0))
	ensure(t, m)
	bundle := func() []byte {
		got, err := client.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(t.Context(), testConfig, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return got.Webhooks[0].ClientConfig.CABundle
	}
	if b := bundle(); len(b) == 0 || !bytes.Equal(b, m.CABundle()) {
		t.Fatalf("mutating caBundle %q, want the CA", b)
	}
	reset := mwc.DeepCopy()
	if _, err := client.AdmissionregistrationV1().MutatingWebhookConfigurations().Update(t.Context(), reset, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	ensure(t, m)
	if !bytes.Equal(bundle(), m.CABundle()) {
		t.Error("reset caBundle not restored")
	}
	for _, b := range caBundles(t, client) {
		if !bytes.Equal(b, m.CABundle()) {
			t.Error("validating caBundle not patched")
		}
	}
}
