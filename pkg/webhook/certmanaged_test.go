package webhook

import (
	"bytes"
	"context"
	"crypto/x509"
	"reflect"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/flinkops/flink-operator/pkg/generated/kube/kubernetes/fake"
)

const (
	testNS      = "flink-operator"
	testSecret  = "flink-operator-webhook-cert"
	testService = "flink-operator-webhook"
	testConfig  = "flink-operator"
	serviceHost = testService + "." + testNS + ".svc"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func webhookConfig() *admissionregistrationv1.ValidatingWebhookConfiguration {
	wh := func(name string) admissionregistrationv1.ValidatingWebhook {
		return admissionregistrationv1.ValidatingWebhook{Name: name, ClientConfig: admissionregistrationv1.WebhookClientConfig{
			Service: &admissionregistrationv1.ServiceReference{Namespace: testNS, Name: testService, Path: ptr(ValidatePath)},
		}}
	}
	return &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: testConfig},
		Webhooks:   []admissionregistrationv1.ValidatingWebhook{wh("flinkdeployments.flink.apache.org"), wh("flinkstatesnapshots.flink.apache.org")},
	}
}

func newManager(t *testing.T, client *fake.Clientset, clk *clocktesting.FakeClock, mutate ...func(*SelfManagedOptions)) *SelfManaged {
	t.Helper()
	opts := SelfManagedOptions{
		Client: client, Namespace: testNS, SecretName: testSecret, ServiceName: testService,
		WebhookConfigName: testConfig, ExtraHosts: []string{"127.0.0.1"}, Clock: clk,
	}
	for _, m := range mutate {
		m(&opts)
	}
	m, err := NewSelfManaged(opts)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func ensure(t *testing.T, m *SelfManaged) {
	t.Helper()
	if err := m.Ensure(t.Context()); err != nil {
		t.Fatalf("Ensure: %v", err)
	}
}

func servedLeaf(t *testing.T, m *SelfManaged) *x509.Certificate {
	t.Helper()
	c, err := m.GetCertificate(nil)
	if err != nil {
		t.Fatal(err)
	}
	return c.Leaf
}

func getSecret(t *testing.T, client *fake.Clientset) *corev1.Secret {
	t.Helper()
	s, err := client.CoreV1().Secrets(testNS).Get(context.Background(), testSecret, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func caBundles(t *testing.T, client *fake.Clientset) [][]byte {
	t.Helper()
	cfg, err := client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(context.Background(), testConfig, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out [][]byte
	for _, w := range cfg.Webhooks {
		out = append(out, w.ClientConfig.CABundle)
	}
	return out
}

func pool(t *testing.T, bundle []byte) *x509.CertPool {
	t.Helper()
	p := x509.NewCertPool()
	if !p.AppendCertsFromPEM(bundle) {
		t.Fatal("no certificate in the CA bundle")
	}
	return p
}

func countActions(client *fake.Clientset, verb, resource string) int {
	n := 0
	for _, a := range client.Actions() {
		if a.GetVerb() == verb && a.GetResource().Resource == resource {
			n++
		}
	}
	return n
}

func TestSelfManagedCreatesSecretAndPatchesCABundle(t *testing.T) {
	client := fake.NewSimpleClientset(webhookConfig())
	m := newManager(t, client, clocktesting.NewFakeClock(t0))
	if _, err := m.GetCertificate(nil); err == nil {
		t.Error("a certificate before Ensure")
	}
	ensure(t, m)

	secret := getSecret(t, client)
	if secret.Type != corev1.SecretTypeTLS {
		t.Errorf("Secret type %s", secret.Type)
	}
	for _, k := range []string{SecretCAFile, SecretCAKeyFile, corev1.TLSCertKey, corev1.TLSPrivateKeyKey} {
		if len(secret.Data[k]) == 0 {
			t.Errorf("Secret has no %s", k)
		}
	}
	leaf := servedLeaf(t, m)
	for _, h := range []string{serviceHost, serviceHost + ".cluster.local", "127.0.0.1"} {
		if err := leaf.VerifyHostname(h); err != nil {
			t.Errorf("certificate not valid for %s: %v", h, err)
		}
	}
	if want := t0.Add(DefaultCertValidity); !leaf.NotAfter.Equal(want) {
		t.Errorf("certificate valid until %v, want %v", leaf.NotAfter, want)
	}
	for i, b := range caBundles(t, client) {
		if !bytes.Equal(b, m.CABundle()) || !bytes.Equal(b, secret.Data[SecretCAFile]) {
			t.Errorf("webhook %d: caBundle not patched", i)
		}
	}

	// The API server's view: the served certificate verifies against the
	// patched caBundle under the Service's DNS name.
	addr := serveTLS(t, m)
	if got := handshakeAt(t, addr, pool(t, caBundles(t, client)[0]), serviceHost, func() time.Time { return t0 }); got != leaf.SerialNumber.String() {
		t.Errorf("served serial %s, want %s", got, leaf.SerialNumber)
	}

	// A second Ensure with nothing to do writes nothing.
	updates := countActions(client, "update", "secrets") + countActions(client, "update", "validatingwebhookconfigurations")
	ensure(t, m)
	if n := countActions(client, "update", "secrets") + countActions(client, "update", "validatingwebhookconfigurations"); n != updates {
		t.Errorf("%d updates by an idle Ensure", n-updates)
	}
}

func TestSelfManagedSecondReplicaAdoptsTheSecret(t *testing.T) {
	client := fake.NewSimpleClientset(webhookConfig())
	clk := clocktesting.NewFakeClock(t0)
	first := newManager(t, client, clk)
	ensure(t, first)
	second := newManager(t, client, clk)
	ensure(t, second)
	if !servedLeaf(t, first).Equal(servedLeaf(t, second)) {
		t.Error("the second replica serves another certificate")
	}
	if !bytes.Equal(first.CABundle(), second.CABundle()) {
		t.Error("the replicas disagree on the CA bundle")
	}
	if n := countActions(client, "create", "secrets"); n != 1 {
		t.Errorf("%d Secret creates, want 1", n)
	}
	if n := countActions(client, "update", "secrets"); n != 0 {
		t.Errorf("%d Secret updates, want 0", n)
	}
}

// TestSelfManagedLosesCreateRace: another replica creates the Secret
// between this one's read and its create; this one adopts the winner's.
func TestSelfManagedLosesCreateRace(t *testing.T) {
	clk := clocktesting.NewFakeClock(t0)
	winnerClient := fake.NewSimpleClientset(webhookConfig())
	winner := newManager(t, winnerClient, clk)
	ensure(t, winner)
	winnerSecret := getSecret(t, winnerClient)

	client := fake.NewSimpleClientset(webhookConfig())
	raced := false
	client.PrependReactor("create", "secrets", func(k8stesting.Action) (bool, runtime.Object, error) {
		if raced {
			return false, nil, nil
		}
		raced = true
		if err := client.Tracker().Add(winnerSecret.DeepCopy()); err != nil {
			t.Fatal(err)
		}
		return true, nil, apierrors.NewAlreadyExists(corev1.Resource("secrets"), testSecret)
	})
	loser := newManager(t, client, clk)
	ensure(t, loser)
	if !raced {
		t.Fatal("the race was not staged")
	}
	if !servedLeaf(t, loser).Equal(servedLeaf(t, winner)) {
		t.Error("the loser serves its own certificate, not the winner's")
	}
	if !bytes.Equal(caBundles(t, client)[0], winnerSecret.Data[SecretCAFile]) {
		t.Error("caBundle is not the winner's CA")
	}
}

// TestSelfManagedLosesUpdateRace: two replicas renew at once; the one
// whose update conflicts adopts the other's renewal.
func TestSelfManagedLosesUpdateRace(t *testing.T) {
	clk := clocktesting.NewFakeClock(t0)
	client := fake.NewSimpleClientset(webhookConfig())
	ensure(t, newManager(t, client, clk))
	original := getSecret(t, client)

	clk.SetTime(t0.Add(DefaultCertValidity - 10*24*time.Hour)) // inside the rotation window
	winnerClient := fake.NewSimpleClientset(webhookConfig(), original.DeepCopy())
	winner := newManager(t, winnerClient, clk)
	ensure(t, winner)
	renewed := getSecret(t, winnerClient)

	raced := false
	client.PrependReactor("update", "secrets", func(k8stesting.Action) (bool, runtime.Object, error) {
		if raced {
			return false, nil, nil
		}
		raced = true
		if err := client.Tracker().Update(corev1.SchemeGroupVersion.WithResource("secrets"), renewed.DeepCopy(), testNS); err != nil {
			t.Fatal(err)
		}
		return true, nil, apierrors.NewConflict(corev1.Resource("secrets"), testSecret, nil)
	})
	loser := newManager(t, client, clk)
	ensure(t, loser)
	if !raced {
		t.Fatal("the race was not staged")
	}
	if !servedLeaf(t, loser).Equal(servedLeaf(t, winner)) {
		t.Error("the loser does not serve the winner's renewal")
	}
}

func TestSelfManagedRotatesBeforeExpiry(t *testing.T) {
	client := fake.NewSimpleClientset(webhookConfig())
	clk := clocktesting.NewFakeClock(t0)
	m := newManager(t, client, clk, func(o *SelfManagedOptions) { o.CheckInterval = time.Minute })
	ensure(t, m)
	first := servedLeaf(t, m)
	bundle := m.CABundle()
	addr := serveTLS(t, m)
	roots := pool(t, bundle)

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	go m.Run(ctx)

	// Well before the rotation window, a check changes nothing.
	eventually(t, "the check loop to wait on its ticker", clk.HasWaiters)
	clk.SetTime(t0.Add(300 * 24 * time.Hour))
	if err := m.Ensure(t.Context()); err != nil {
		t.Fatal(err)
	}
	if !servedLeaf(t, m).Equal(first) {
		t.Fatal("renewed 65 days before expiry")
	}

	// Inside it, the periodic check renews; the server serves the new
	// certificate on the next handshake, with the same CA.
	renewAt := t0.Add(DefaultCertValidity - 20*24*time.Hour)
	clk.SetTime(renewAt)
	clk.Step(time.Minute)
	eventually(t, "the renewed certificate to be served", func() bool {
		return handshakeAt(t, addr, roots, serviceHost, clk.Now) != first.SerialNumber.String()
	})
	renewed := servedLeaf(t, m)
	if earliest := renewAt.Add(DefaultCertValidity); renewed.NotAfter.Before(earliest) {
		t.Errorf("renewed certificate valid until %v, want a full validity from %v", renewed.NotAfter, renewAt)
	}
	if !bytes.Equal(m.CABundle(), bundle) || !bytes.Equal(caBundles(t, client)[0], bundle) {
		t.Error("renewing the serving certificate changed the CA bundle")
	}
	if got := getSecret(t, client).Data[corev1.TLSCertKey]; !bytes.Contains(got, []byte("CERTIFICATE")) {
		t.Error("the Secret does not hold the renewed certificate")
	}
}

func TestSelfManagedRotatesTheCA(t *testing.T) {
	client := fake.NewSimpleClientset(webhookConfig())
	clk := clocktesting.NewFakeClock(t0)
	caValidity := 2 * DefaultCertValidity
	m := newManager(t, client, clk, func(o *SelfManagedOptions) { o.CAValidity = caValidity })
	ensure(t, m)
	oldCA, err := parseCertificates(m.CABundle())
	if err != nil {
		t.Fatal(err)
	}
	// The serving certificate never outlives its CA.
	clk.SetTime(t0.Add(caValidity - DefaultCertValidity + time.Hour))
	ensure(t, m)
	if leaf := servedLeaf(t, m); leaf.NotAfter.After(oldCA[0].NotAfter) {
		t.Errorf("serving certificate valid until %v, after its CA (%v)", leaf.NotAfter, oldCA[0].NotAfter)
	}

	clk.SetTime(t0.Add(caValidity - 10*24*time.Hour))
	ensure(t, m)
	bundle, err := parseCertificates(m.CABundle())
	if err != nil {
		t.Fatal(err)
	}
	if len(bundle) != 2 || bundle[0].Equal(oldCA[0]) || !bundle[1].Equal(oldCA[0]) {
		t.Fatalf("CA bundle after rotation has %d certificates, want the new CA then the old one", len(bundle))
	}
	if err := servedLeaf(t, m).CheckSignatureFrom(bundle[0]); err != nil {
		t.Errorf("serving certificate not signed by the new CA: %v", err)
	}
	if !bytes.Equal(caBundles(t, client)[1], m.CABundle()) {
		t.Error("the new bundle is not patched into the webhook configuration")
	}
	// Once the old CA has expired, the next renewal drops it.
	clk.SetTime(t0.Add(caValidity + DefaultCertValidity - 10*24*time.Hour))
	ensure(t, m)
	if bundle, _ := parseCertificates(m.CABundle()); len(bundle) != 1 {
		t.Errorf("bundle keeps %d certificates after the old CA expired", len(bundle))
	}
}

func TestSelfManagedRepairsAndWaitsForConfig(t *testing.T) {
	client := fake.NewSimpleClientset() // no webhook configuration yet
	clk := clocktesting.NewFakeClock(t0)
	m := newManager(t, client, clk)
	ensure(t, m) // not an error: patched once it exists

	// Broken Secret content is replaced.
	secret := getSecret(t, client)
	secret.Data[corev1.TLSCertKey] = []byte("garbage")
	if _, err := client.CoreV1().Secrets(testNS).Update(t.Context(), secret, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	ensure(t, m)
	if _, err := parseKeyPair(getSecret(t, client).Data[corev1.TLSCertKey], getSecret(t, client).Data[corev1.TLSPrivateKeyKey]); err != nil {
		t.Errorf("Secret not repaired: %v", err)
	}

	// The configuration appears, and someone resets its caBundle.
	if _, err := client.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(t.Context(), webhookConfig(), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	ensure(t, m)
	if !bytes.Equal(caBundles(t, client)[0], m.CABundle()) {
		t.Error("caBundle not patched once the configuration exists")
	}

	// A replica with one more host re-issues a certificate for all of them.
	more := newManager(t, client, clk, func(o *SelfManagedOptions) { o.ExtraHosts = []string{"127.0.0.1", "webhook.local"} })
	ensure(t, more)
	for _, h := range []string{"127.0.0.1", "webhook.local", serviceHost} {
		if err := servedLeaf(t, more).VerifyHostname(h); err != nil {
			t.Errorf("host %s: %v", h, err)
		}
	}
	ensure(t, m) // the first replica is content with the wider certificate
	if !servedLeaf(t, m).Equal(servedLeaf(t, more)) {
		t.Error("replicas with different hosts do not converge")
	}
}

func TestSelfManagedOptions(t *testing.T) {
	for _, mutate := range []func(*SelfManagedOptions){
		func(o *SelfManagedOptions) { o.Namespace = "" },
		func(o *SelfManagedOptions) { o.SecretName = "" },
		func(o *SelfManagedOptions) { o.ServiceName = "" },
		func(o *SelfManagedOptions) { o.Client = nil },
		func(o *SelfManagedOptions) { o.RotateBefore = 2 * DefaultCertValidity },
	} {
		opts := SelfManagedOptions{Client: fake.NewSimpleClientset(), Namespace: testNS, SecretName: testSecret, ServiceName: testService}
		mutate(&opts)
		if _, err := NewSelfManaged(opts); err == nil {
			t.Errorf("no error for %+v", opts)
		}
	}
}

// The Secret the operator creates is owned by the webhook Service, so that
// removing the install (which removes the Service) lets the garbage collector
// remove the certificate too; without a readable Service it is created
// unowned, as before.
func TestSelfManagedSecretOwnedByTheService(t *testing.T) {
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: testNS, Name: testService, UID: "svc-uid"}}
	client := fake.NewSimpleClientset(webhookConfig(), svc)
	ensure(t, newManager(t, client, clocktesting.NewFakeClock(t0)))
	got := getSecret(t, client).OwnerReferences
	want := []metav1.OwnerReference{{APIVersion: "v1", Kind: "Service", Name: testService, UID: "svc-uid"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("owner references %+v, want %+v", got, want)
	}

	client = fake.NewSimpleClientset(webhookConfig())
	ensure(t, newManager(t, client, clocktesting.NewFakeClock(t0)))
	if got := getSecret(t, client).OwnerReferences; len(got) != 0 {
		t.Errorf("no Service: owner references %+v, want none", got)
	}
}
