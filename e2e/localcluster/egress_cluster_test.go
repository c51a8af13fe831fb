package localcluster

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
)

const (
	egressTestNS  = "egress-test"
	egressTestSvc = "egress-webhook"
	// egressTestPodIP is the webhook "pod": a loopback address as the node
	// agent gives pods, far above the ones it hands out first.
	egressTestPodIP = "127.100.250.1"
	labelVia        = "egress-test/via"  // which webhook sees the object: service or url
	labelDeny       = "egress-test/deny" // "true": the webhook denies it
)

// TestServiceWebhookThroughEgress: the API server calls a validating webhook
// configured by Service, as on a real cluster: it dials the Service's
// ClusterIP, which the egress proxy sends to the Ready pod behind it (a Pod
// object with no process, whose status says Ready at an IP where a test
// server listens); once that pod is not Ready, the call fails (failurePolicy
// Fail) saying why, and works again when it is Ready. A webhook configured
// by URL at 127.0.0.1 (as e2e/installe2e's; the API server dials it
// directly, not through the proxy) keeps working throughout.
func TestServiceWebhookThroughEgress(t *testing.T) {
	start, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// No controller manager: nothing here needs one, and the Pod is only an
	// endpoint record.
	c, err := Start(start, Options{Out: testWriter{t}, NoControllerManager: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	admin := kubernetes.NewForConfigOrDie(c.RESTConfig())

	svcHost := egressTestSvc + "." + egressTestNS + ".svc"
	caPEM, cert := testServingCert(t, []string{svcHost}, []net.IP{net.ParseIP("127.0.0.1")})
	var serviceCalls, urlCalls atomic.Int32
	serviceHook := startTestWebhook(t, egressTestPodIP+":0", cert, "service", &serviceCalls)
	urlHook := startTestWebhook(t, "127.0.0.1:0", cert, "url", &urlCalls)
	hookPort := serviceHook.Listener.Addr().(*net.TCPAddr).Port

	if _, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: egressTestNS}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The ServiceAccount admission wants the pod's ServiceAccount, which
	// kube-controller-manager would create.
	if _, err := admin.CoreV1().ServiceAccounts(egressTestNS).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod, err := admin.CoreV1().Pods(egressTestNS).Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "webhook-0", Labels: map[string]string{"app": egressTestSvc}},
		Spec: corev1.PodSpec{
			// Bound to a node nobody runs: nothing starts it, nothing
			// changes its status but this test.
			NodeName:   "no-such-node",
			Containers: []corev1.Container{{Name: "webhook", Image: "none"}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	setReady := func(ready bool) {
		t.Helper()
		status := corev1.ConditionFalse
		if ready {
			status = corev1.ConditionTrue
		}
		pod.Status = corev1.PodStatus{
			Phase:  corev1.PodRunning,
			PodIP:  egressTestPodIP,
			PodIPs: []corev1.PodIP{{IP: egressTestPodIP}},
			HostIP: "127.0.0.1",
			Conditions: []corev1.PodCondition{
				{Type: corev1.PodReady, Status: status, LastTransitionTime: metav1.Now()},
				{Type: corev1.ContainersReady, Status: status, LastTransitionTime: metav1.Now()},
			},
		}
		if pod, err = admin.CoreV1().Pods(egressTestNS).UpdateStatus(ctx, pod, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	setReady(true)
	svc, err := admin.CoreV1().Services(egressTestNS).Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: egressTestSvc},
		Spec: corev1.ServiceSpec{
			Selector: map[string]string{"app": egressTestSvc},
			Ports:    []corev1.ServicePort{{Name: "https", Port: 443, TargetPort: intstr.FromInt32(int32(hookPort))}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("Service %s/%s: ClusterIP %s:443 -> pod %s:%d", egressTestNS, egressTestSvc, svc.Spec.ClusterIP, egressTestPodIP, hookPort)

	fail := admissionregistrationv1.Fail
	none := admissionregistrationv1.SideEffectClassNone
	timeout := int32(5)
	webhook := func(via string, cc admissionregistrationv1.WebhookClientConfig) admissionregistrationv1.ValidatingWebhook {
		return admissionregistrationv1.ValidatingWebhook{
			Name:         via + ".egress.localcluster.test",
			ClientConfig: cc,
			Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
				Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}},
			}},
			// Only this test's objects: with failurePolicy Fail, no
			// other write may depend on these webhooks.
			ObjectSelector:          &metav1.LabelSelector{MatchLabels: map[string]string{labelVia: via}},
			FailurePolicy:           &fail,
			SideEffects:             &none,
			TimeoutSeconds:          &timeout,
			AdmissionReviewVersions: []string{"v1"},
		}
	}
	path := "/validate"
	port := int32(443)
	urlStr := "https://" + urlHook.Listener.Addr().String() + path
	_, err = admin.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx, &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "egress-test"},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{
			webhook("service", admissionregistrationv1.WebhookClientConfig{CABundle: caPEM,
				Service: &admissionregistrationv1.ServiceReference{Namespace: egressTestNS, Name: egressTestSvc, Path: &path, Port: &port}}),
			webhook("url", admissionregistrationv1.WebhookClientConfig{CABundle: caPEM, URL: &urlStr}),
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}

	// create makes a ConfigMap for webhook via; it returns the API
	// server's error, "" if the ConfigMap was created (and removes it).
	create := func(via string, deny bool) string {
		t.Helper()
		cm, err := admin.CoreV1().ConfigMaps(egressTestNS).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
			GenerateName: "cm-", Labels: map[string]string{labelVia: via, labelDeny: fmt.Sprint(deny)}}}, metav1.CreateOptions{})
		if err != nil {
			return err.Error()
		}
		if err := admin.CoreV1().ConfigMaps(egressTestNS).Delete(ctx, cm.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		return ""
	}
	// until repeats create until its result has want (the API server
	// learns of the webhook configuration, and the proxy of the pod,
	// within moments) and returns it.
	until := func(what, via string, deny bool, want ...string) string {
		t.Helper()
		var last string
		deadline := time.Now().Add(30 * time.Second)
		for {
			last = create(via, deny)
			ok := last != ""
			for _, w := range want {
				ok = ok && strings.Contains(last, w)
			}
			if ok {
				return last
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: a ConfigMap for the %s webhook (deny %v): want an error with %q, last: %q", what, via, deny, want, last)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}

	viaService := "egress test webhook (service) denies it, called as " + svcHost
	msg := until("the webhook behind the Service", "service", true, viaService)
	t.Logf("denied through the Service: %s", msg)
	if got := create("service", false); got != "" {
		t.Errorf("a ConfigMap the webhook allows: %s", got)
	}
	viaURL := "egress test webhook (url) denies it"
	msg = until("the webhook by URL", "url", true, viaURL)
	t.Logf("denied through the URL: %s", msg)

	// Not Ready: the proxy has no endpoint, the call fails, and the
	// reason reaches the API server's error.
	setReady(false)
	msg = until("the webhook's pod not ready", "service", true,
		`failed calling webhook "service.egress.localcluster.test"`,
		"503 no ready pod of Service "+egressTestNS+"/"+egressTestSvc)
	t.Logf("pod not ready: %s", msg)
	if got := create("service", false); !strings.Contains(got, "no ready pod") {
		t.Errorf("a ConfigMap the webhook would allow, its pod not ready: %q, want the call's failure (failurePolicy Fail)", got)
	}
	if got := create("url", true); !strings.Contains(got, viaURL) {
		t.Errorf("the URL webhook while the Service has no ready pod: %q", got)
	}

	setReady(true)
	until("the webhook's pod ready again", "service", true, viaService)
	if serviceCalls.Load() == 0 || urlCalls.Load() == 0 {
		t.Errorf("calls: service %d, url %d", serviceCalls.Load(), urlCalls.Load())
	}
}

// startTestWebhook serves a validating webhook over HTTPS at addr that
// denies objects labelled labelDeny=true, saying which webhook it is and the
// TLS server name it was called with.
func startTestWebhook(t *testing.T, addr string, cert tls.Certificate, name string, calls *atomic.Int32) *httptest.Server {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		var review admissionv1.AdmissionReview
		if err := json.NewDecoder(r.Body).Decode(&review); err != nil || review.Request == nil {
			http.Error(w, fmt.Sprintf("bad review: %v", err), http.StatusBadRequest)
			return
		}
		var obj metav1.PartialObjectMetadata
		if err := json.Unmarshal(review.Request.Object.Raw, &obj); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		resp := &admissionv1.AdmissionResponse{UID: review.Request.UID, Allowed: true}
		if obj.Labels[labelDeny] == "true" {
			resp.Allowed = false
			resp.Result = &metav1.Status{Code: http.StatusForbidden,
				Message: fmt.Sprintf("egress test webhook (%s) denies it, called as %s", name, r.TLS.ServerName)}
		}
		review.Response, review.Request = resp, nil
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(&review)
	}))
	srv.Listener.Close()
	srv.Listener = ln
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	// One connection per call, so that a call after the pod is no longer
	// Ready is dialed anew (a kept-alive tunnel would outlive it, as
	// established connections outlive an endpoint under kube-proxy).
	srv.Config.SetKeepAlivesEnabled(false)
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv
}

// testServingCert makes a CA and a serving certificate it signs for
// dnsNames and ips.
func testServingCert(t *testing.T, dnsNames []string, ips []net.IP) ([]byte, tls.Certificate) {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "egress-test-ca"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		t.Fatal(err)
	}
	kp, err := issue(&x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: dnsNames[0]},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour), KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, DNSNames: dnsNames, IPAddresses: ips}, ca, caKey)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := tls.X509KeyPair(kp.cert, kp.key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), cert
}
