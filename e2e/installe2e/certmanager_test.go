package installe2e

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/flinkops/flink-operator/e2e/framework"
	"github.com/flinkops/flink-operator/e2e/localcluster"
	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/cluster"
	"github.com/flinkops/flink-operator/pkg/controller/jobengine"
	flinkclient "github.com/flinkops/flink-operator/pkg/generated/clientset/versioned"
	"github.com/flinkops/flink-operator/pkg/reviewstamp"
)

// TestCertManagerOverlayCrossNamespaceReview installs
// manifests/overlays/cert-manager (rendered with `kubectl kustomize`,
// applied server-side; cert-manager's CRDs are stand-ins and the test plays
// cert-manager and its cainjector), runs the operator as the overlay's
// ServiceAccount with cross-namespace references enabled, and checks on the
// real API server that:
//
//   - the overlay's RBAC is enough (nothing refused) and no more: the review
//     key Secret only, no certificate Secret, no webhook configuration;
//   - a cross-namespace FlinkStateSnapshot and a FlinkDeployment starting
//     from another namespace's snapshot, both created before the webhook
//     existed, are never acted on (status error, no savepoint, no cluster);
//   - through the webhook, a user without the right is refused, and an
//     allowed reference is stamped and acted on (the clone's cluster is
//     built from the foreign snapshot);
//   - a stamp copied onto another FlinkDeployment while the webhook is gone
//     is rejected by the controller.
//
// No Flink runs (no node agent): the checks stop where the operator acts.
func TestCertManagerOverlayCrossNamespaceReview(t *testing.T) {
	if framework.Kind() {
		t.Skip("local provider only")
	}
	begin := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	root, err := localcluster.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	bins, err := localcluster.BuildCommands(ctx, "./cmd/flink-operator")
	if err != nil {
		t.Fatal(err)
	}
	c, err := localcluster.Start(ctx, localcluster.Options{Out: framework.TestWriter{T: t}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Stop() })
	base := t.TempDir()
	opLog := filepath.Join(base, "operator.log")
	e := &framework.Env{Ctx: ctx, Local: c, Config: c.RESTConfig(), Base: base, Root: root, OpLog: opLog}
	e.Kube = kubernetes.NewForConfigOrDie(e.Config)
	e.Flink = flinkclient.NewForConfigOrDie(e.Config)
	s := &suite{Env: e, t: t}
	t.Cleanup(func() {
		if t.Failed() {
			for _, ns := range []string{teamA, teamB} {
				e.Dump(t, ns)
			}
			framework.DumpTail(t, opLog, 200)
		}
	})
	if _, err := c.InstallCRDs(ctx, filepath.Join(root, "manifests", "crds")); err != nil {
		t.Fatal(err)
	}
	for _, ns := range []string{teamA, teamB} {
		s.CreateNamespace(t, ns)
	}

	// Before any webhook: the target job (suspended: nothing runs), a
	// COMPLETED snapshot in team-b, and in team-a a cross-namespace
	// snapshot and a job starting from team-b's snapshot.
	s.apply(suspendedDeployment(teamB, job, ""))
	s.apply(existingSavepoint(teamB, "base", "file:///tmp/flinkop-none/base"))
	s.apply(snapshotYAML(teamA, "early", job, teamB, "false"))
	s.apply(runningDeployment(teamA, "early-clone", "base"))

	// The overlay, as rendered by kustomize.
	s.apply(certManagerCRDs)
	rendered := s.kubectl("kustomize", filepath.Join(root, "manifests", "overlays", "cert-manager"))
	out, err := s.KubectlInput(strings.NewReader(rendered), "apply", "--server-side", "-f", "-")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"mutatingwebhookconfiguration.admissionregistration.k8s.io/flink-operator serverside-applied",
		"validatingwebhookconfiguration.admissionregistration.k8s.io/flink-operator serverside-applied",
		"role.rbac.authorization.k8s.io/flink-operator-review-key serverside-applied", "certificate.cert-manager.io/flink-operator-webhook serverside-applied"} {
		if !strings.Contains(out, want) {
			t.Errorf("kubectl apply of the rendered overlay: no %q in\n%s", want, out)
		}
	}
	for _, gone := range []string{"role.rbac.authorization.k8s.io/flink-operator-webhook-cert", "clusterrole.rbac.authorization.k8s.io/flink-operator-webhook-config"} {
		if strings.Contains(out, gone) {
			t.Errorf("the overlay still installs %s", gone)
		}
	}
	s.kubectl("scale", "deployment/flink-operator", "-n", opNamespace, "--replicas=0")

	for _, tc := range []struct {
		args []string
		want bool
	}{
		{[]string{"get", "secrets/" + "flink-operator-review-key", "-n", opNamespace}, true},
		{[]string{"create", "secrets", "-n", opNamespace}, true},
		{[]string{"update", "secrets/flink-operator-review-key", "-n", opNamespace}, false},
		{[]string{"get", "secrets/flink-operator-webhook-tls", "-n", opNamespace}, false},
		{[]string{"get", "secrets/flink-operator-webhook-cert", "-n", opNamespace}, false},
		{[]string{"list", "secrets", "-n", opNamespace}, false},
		{[]string{"get", "validatingwebhookconfigurations/flink-operator"}, false},
		{[]string{"update", "mutatingwebhookconfigurations/flink-operator"}, false},
		{[]string{"create", "subjectaccessreviews.authorization.k8s.io"}, true},
	} {
		out, _ := s.Kubectl(append([]string{"auth", "can-i", "--as", opSA}, tc.args...)...)
		if got := strings.TrimSpace(out) == "yes"; got != tc.want {
			t.Errorf("kubectl auth can-i %s as the operator: %q, want %v", strings.Join(tc.args, " "), strings.TrimSpace(out), tc.want)
		}
	}

	// cert-manager's part: the Secret with the serving certificate (mounted
	// as files for the local operator) and cainjector's caBundle.
	caPEM, certPEM, keyPEM := issueServing(t)
	certDir := filepath.Join(base, "certs")
	if err := os.MkdirAll(certDir, 0o700); err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{"tls.crt": certPEM, "tls.key": keyPEM} {
		if err := os.WriteFile(filepath.Join(certDir, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	port, err := localcluster.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	// The webhook configurations the overlay registered, pointed at the
	// local operator (the pod cannot run here), with the CA as cainjector
	// would write it. The objects above predate them.
	ca := base64.StdEncoding.EncodeToString(caPEM)
	for _, kind := range []string{"validatingwebhookconfiguration", "mutatingwebhookconfiguration"} {
		path := map[string]string{"validatingwebhookconfiguration": "/validate", "mutatingwebhookconfiguration": "/mutate"}[kind]
		s.kubectl("patch", kind, "flink-operator", "--type=json", "-p",
			fmt.Sprintf(`[{"op":"replace","path":"/webhooks/0/clientConfig","value":{"url":"https://127.0.0.1:%d%s","caBundle":"%s"}}]`, port, path, ca))
	}
	token := strings.TrimSpace(s.kubectl("create", "token", "flink-operator", "-n", opNamespace, "--duration=1h"))
	kubeconfig := filepath.Join(base, "operator-sa.kubeconfig")
	if err := c.WriteKubeconfig(kubeconfig, token); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(base, "operator-config.yaml")
	if err := os.WriteFile(cfg, []byte("kubernetes.operator.snapshot.cross-namespace-references.enabled: \"true\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s.Op = framework.StartOperator(t, filepath.Join(bins, "flink-operator"), kubeconfig, opLog,
		"--config", cfg, "--leader-elect", "--leader-election-namespace", opNamespace,
		"--webhook-bind-address", "127.0.0.1:"+strconv.Itoa(port), "--webhook-namespace", opNamespace,
		"--webhook-cert-mode=files", "--webhook-cert-dir", certDir)
	t.Cleanup(s.Op.Stop)

	// The objects from before the webhook are not acted on.
	early := s.waitSnapshotError(teamA, "early", "no flinkops.io/cross-namespace-review annotation")
	if early.Status.State != v1beta1.SnapshotTriggerPending || early.Status.TriggerID != "" {
		t.Errorf("unreviewed snapshot acted on: %+v", early.Status)
	}
	s.waitDeployment(teamA, "early-clone", time.Minute, "a ValidationError naming the missing review", func(d *v1beta1.FlinkDeployment) bool {
		return strings.Contains(jobengine.ErrorMessage(d.Status.Error), "was not reviewed by the operator's admission webhook")
	})
	s.noCluster(teamA, "early-clone")
	s.warningEvent(teamA, "early", "ValidationError")
	s.warningEvent(teamA, "early-clone", "ValidationError")
	t.Logf("objects created before the webhook: not acted on (%s)", lastLine(early.Status.Error))

	s.WaitFor(t, time.Minute, "the API server calling the webhook", func() (bool, string) {
		_, err := s.KubectlInput(strings.NewReader(snapshotYAML(teamB, "probe", "does-not-exist", "", "")), "create", "--dry-run=server", "-f", "-")
		if err == nil {
			return false, "a snapshot of a missing job was admitted"
		}
		return strings.Contains(err.Error(), "was not found"), err.Error()
	})

	// A user of team-a without rights in team-b is refused; the admin (who
	// may get team-b's snapshot) gets the reference stamped, and the clone's
	// cluster is built from team-b's snapshot.
	s.apply(fmt.Sprintf(`apiVersion: v1
kind: ServiceAccount
metadata: {name: alice, namespace: %[1]s}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: alice-edit, namespace: %[1]s}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cluster-admin}
subjects:
  - {kind: ServiceAccount, name: alice, namespace: %[1]s}
`, teamA))
	alice := s.userKubeconfig(teamA, "alice")
	_, err = s.KubectlInput(strings.NewReader(suspendedDeployment(teamA, "alice-clone", "base")), "--kubeconfig", alice, "create", "-f", "-")
	if err == nil || !strings.Contains(err.Error(), `may not get flinkstatesnapshots.flink.apache.org "base" in namespace "team-b"`) {
		t.Errorf("alice's clone of team-b's snapshot: %v", err)
	}
	s.apply(runningDeployment(teamA, "clone", "base"))
	clone, err := s.Flink.FlinkV1beta1().FlinkDeployments(teamA).Get(ctx, "clone", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	stamp := clone.Annotations[reviewstamp.Annotation]
	if st, err := reviewstamp.Parse(stamp); err != nil || st.User == "" {
		t.Fatalf("clone's stamp %q: %v", stamp, err)
	}
	s.waitDeployment(teamA, "clone", time.Minute, "deployed from team-b/base", func(d *v1beta1.FlinkDeployment) bool {
		return d.Status.JobStatus.UpgradeSavepointPath == "file:///tmp/flinkop-none/base"
	})
	s.WaitFor(t, time.Minute, "the clone's JobManager Deployment", func() (bool, string) {
		_, err := s.Kube.AppsV1().Deployments(teamA).Get(ctx, cluster.JobManagerDeploymentName("clone"), metav1.GetOptions{})
		return err == nil, fmt.Sprint(err)
	})
	t.Logf("reviewed clone stamped (%s) and deployed from team-b/base", stamp)

	// The webhook is removed; someone copies the clone's stamp onto a new
	// FlinkDeployment with the same reference: rejected, nothing built.
	s.kubectl("delete", "mutatingwebhookconfiguration", "flink-operator")
	s.kubectl("delete", "validatingwebhookconfiguration", "flink-operator")
	s.apply(strings.Replace(runningDeployment(teamA, "copycat", "base"), "metadata:\n", "metadata:\n  annotations:\n    "+reviewstamp.Annotation+": '"+stamp+"'\n", 1))
	s.waitDeployment(teamA, "copycat", time.Minute, "the copied stamp rejected", func(d *v1beta1.FlinkDeployment) bool {
		return strings.Contains(jobengine.ErrorMessage(d.Status.Error), "does not vouch for this FlinkDeployment team-a/copycat")
	})
	s.noCluster(teamA, "copycat")
	t.Logf("copied stamp rejected")

	s.checkOperatorLog()
	t.Logf("TestCertManagerOverlayCrossNamespaceReview: %s in all", time.Since(begin).Round(time.Second))
}

// certManagerCRDs stand in for cert-manager's, so the overlay's Issuer and
// Certificate apply as rendered.
const certManagerCRDs = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: issuers.cert-manager.io}
spec:
  group: cert-manager.io
  scope: Namespaced
  names: {plural: issuers, singular: issuer, kind: Issuer}
  versions:
    - name: v1
      served: true
      storage: true
      schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: certificates.cert-manager.io}
spec:
  group: cert-manager.io
  scope: Namespaced
  names: {plural: certificates, singular: certificate, kind: Certificate}
  versions:
    - name: v1
      served: true
      storage: true
      schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
`

func suspendedDeployment(ns, name, from string) string {
	return strings.Replace(deploymentYAML(ns, name, "flink:2.3", v1beta1.FlinkVersion("v2_3"), "/tmp/flinkop-none", 1, "savepoint", "suspended", ""),
		"    state: suspended", "    state: suspended"+refYAML(ns, from), 1)
}

func runningDeployment(ns, name, from string) string {
	return strings.Replace(suspendedDeployment(ns, name, from), "state: suspended", "state: running", 1)
}

// refYAML is a cross-namespace initialStateSnapshotRef to team-b.
func refYAML(ns, from string) string {
	if from == "" {
		return ""
	}
	return "\n    initialStateSnapshotRef:\n      name: " + from + "\n      namespace: " + teamB
}

func existingSavepoint(ns, name, path string) string {
	return fmt.Sprintf(`apiVersion: flink.apache.org/v1beta1
kind: FlinkStateSnapshot
metadata: {name: %s, namespace: %s}
spec:
  jobReference: {kind: FlinkDeployment, name: %s}
  savepoint: {alreadyExists: true, path: %q, disposeOnDelete: false}
`, name, ns, job, path)
}

func (s *suite) waitSnapshotError(ns, name, want string) *v1beta1.FlinkStateSnapshot {
	s.t.Helper()
	var got *v1beta1.FlinkStateSnapshot
	s.WaitFor(s.t, time.Minute, "FlinkStateSnapshot "+ns+"/"+name+": error "+want, func() (bool, string) {
		snap, err := s.Flink.FlinkV1beta1().FlinkStateSnapshots(ns).Get(s.Ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		got = snap
		return strings.Contains(snap.Status.Error, want), fmt.Sprintf("%+v", snap.Status)
	})
	return got
}

// noCluster checks nothing was built for a FlinkDeployment.
func (s *suite) noCluster(ns, name string) {
	s.t.Helper()
	_, err := s.Kube.AppsV1().Deployments(ns).Get(s.Ctx, cluster.JobManagerDeploymentName(name), metav1.GetOptions{})
	if !apierrors.IsNotFound(err) {
		s.t.Errorf("JobManager Deployment of %s/%s: %v, want none", ns, name, err)
	}
}

func (s *suite) warningEvent(ns, name, reason string) {
	s.t.Helper()
	s.WaitFor(s.t, 30*time.Second, "a Warning "+reason+" event on "+ns+"/"+name, func() (bool, string) {
		list, err := s.Kube.CoreV1().Events(ns).List(s.Ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + name})
		if err != nil {
			return false, err.Error()
		}
		for _, ev := range list.Items {
			if ev.Type == "Warning" && ev.Reason == reason {
				return true, ""
			}
		}
		return false, fmt.Sprintf("%d events", len(list.Items))
	})
}

// issueServing makes what cert-manager would: a CA and a serving
// certificate, here for 127.0.0.1 where the local operator listens.
func issueServing(t *testing.T) (caPEM, certPEM, keyPEM []byte) {
	t.Helper()
	now := time.Now()
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test-issuer"}, NotBefore: now.Add(-time.Hour),
		NotAfter: now.Add(time.Hour), IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "flink-operator-webhook"}, NotBefore: now.Add(-time.Hour),
		NotAfter: now.Add(time.Hour), IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		DNSNames: []string{"flink-operator-webhook.flink-operator.svc"}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		KeyUsage: x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, _ := x509.MarshalECPrivateKey(key)
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
		pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})
}
