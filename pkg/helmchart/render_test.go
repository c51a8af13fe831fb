//go:build helm

// Rendering tests: `helm template` of helm/flink-operator with Helm built from the Go module proxy
// by hack/build-helm.sh (about 1 to 3 minutes the first time on 2 cores, then cached). Behind the
// build tag `helm` so that `go test ./...` never builds Helm:
//
//	go test -tags helm ./pkg/helmchart/
//
// If Helm cannot be built the tests fail; they never skip.
package helmchart

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/flinkops/flink-operator/pkg/config"
)

const (
	release   = "flink-kubernetes-operator" // the release name upstream's docs use
	namespace = "flink-operator"
)

var (
	helmOnce sync.Once
	helmPath string
	helmErr  error
)

// helm builds (or finds cached) Helm with hack/build-helm.sh.
func helm(t *testing.T) string {
	t.Helper()
	helmOnce.Do(func() {
		var stdout, stderr bytes.Buffer
		cmd := exec.Command("bash", filepath.Join(RepoRoot(), "hack", "build-helm.sh"))
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			helmErr = fmt.Errorf("hack/build-helm.sh failed (%v): Helm is built from the Go module proxy "+
				"(helm.sh/helm/v4), which needs the proxy (GOPROXY) or a module cache holding it; its output:\n%s",
				err, stderr.String())
			return
		}
		lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
		helmPath = lines[len(lines)-1]
		if _, err := os.Stat(helmPath); err != nil {
			helmErr = fmt.Errorf("hack/build-helm.sh printed %q, which is not a file: %v", helmPath, err)
		}
	})
	if helmErr != nil {
		t.Fatal(helmErr)
	}
	return helmPath
}

// object is one rendered manifest.
type object struct {
	Kind, Name, Namespace string
	raw                   []byte
}

func (o object) String() string { return o.Kind + " " + o.Namespace + "/" + o.Name }

type rendered []object

// render runs helm template with args and decodes every document.
func render(t *testing.T, args ...string) rendered {
	t.Helper()
	return renderIn(t, namespace, args...)
}

// renderIn renders a release in namespace ns.
func renderIn(t *testing.T, ns string, args ...string) rendered {
	t.Helper()
	all := append([]string{"template", release, chartDir, "--namespace", ns, "--include-crds"}, args...)
	cmd := exec.Command(helm(t), all...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("helm %s: %v\n%s", strings.Join(all, " "), err, stderr.String())
	}
	var out rendered
	for _, d := range manifestDocs(t, &stdout) {
		o := object{d.kind, d.name, d.namespace, d.raw}
		// Every object decodes strictly into its API type: a misspelt or misplaced field fails.
		if newObj, ok := apiTypes[o.Kind]; ok {
			if err := yaml.UnmarshalStrict(d.raw, newObj()); err != nil {
				t.Errorf("%s does not decode strictly as a %s: %v", o, o.Kind, err)
			}
		} else {
			t.Errorf("%s: unexpected kind", o)
		}
		out = append(out, o)
	}
	return out
}

// manifestDoc is one document of a multi-document YAML stream.
type manifestDoc struct {
	kind, name, namespace string
	raw                   []byte
}

// manifestDocs splits a YAML stream into its documents, with their kind
// and name; documents of comments only are left out.
func manifestDocs(t *testing.T, r io.Reader) []manifestDoc {
	t.Helper()
	var out []manifestDoc
	reader := utilyaml.NewYAMLReader(bufio.NewReader(r))
	for {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		var meta struct {
			Kind     string `json:"kind"`
			Metadata struct {
				Name      string `json:"name"`
				Namespace string `json:"namespace"`
			} `json:"metadata"`
		}
		if err := yaml.Unmarshal(doc, &meta); err != nil {
			t.Fatalf("YAML does not decode: %v\n%s", err, doc)
		}
		if meta.Kind != "" {
			out = append(out, manifestDoc{meta.Kind, meta.Metadata.Name, meta.Metadata.Namespace, doc})
		}
	}
}

var apiTypes = map[string]func() any{
	"Deployment":                     func() any { return new(appsv1.Deployment) },
	"ServiceAccount":                 func() any { return new(corev1.ServiceAccount) },
	"Service":                        func() any { return new(corev1.Service) },
	"ConfigMap":                      func() any { return new(corev1.ConfigMap) },
	"Role":                           func() any { return new(rbacv1.Role) },
	"RoleBinding":                    func() any { return new(rbacv1.RoleBinding) },
	"ClusterRole":                    func() any { return new(rbacv1.ClusterRole) },
	"ClusterRoleBinding":             func() any { return new(rbacv1.ClusterRoleBinding) },
	"ValidatingWebhookConfiguration": func() any { return new(admissionv1.ValidatingWebhookConfiguration) },
	"MutatingWebhookConfiguration":   func() any { return new(admissionv1.MutatingWebhookConfiguration) },
	"CustomResourceDefinition":       func() any { return new(apiextensionsv1.CustomResourceDefinition) },
}

func (r rendered) names() []string {
	var out []string
	for _, o := range r {
		out = append(out, o.String())
	}
	slices.Sort(out)
	return out
}

func (r rendered) find(kind, ns, name string) (object, bool) {
	for _, o := range r {
		if o.Kind == kind && o.Namespace == ns && o.Name == name {
			return o, true
		}
	}
	return object{}, false
}

// get decodes the object of that kind, namespace and name into into.
func (r rendered) get(t *testing.T, kind, ns, name string, into any) {
	t.Helper()
	o, ok := r.find(kind, ns, name)
	if !ok {
		t.Fatalf("no %s %s/%s rendered; got %v", kind, ns, name, r.names())
	}
	if err := yaml.UnmarshalStrict(o.raw, into); err != nil {
		t.Fatalf("%s: %v", o, err)
	}
}

// manifest decodes the object of that kind and name from a multi-document file of manifests/.
func manifest(t *testing.T, file, kind, name string, into any) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(RepoRoot(), file))
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range manifestDocs(t, bytes.NewReader(data)) {
		if d.kind == kind && d.name == name {
			if err := yaml.UnmarshalStrict(d.raw, into); err != nil {
				t.Fatal(err)
			}
			return
		}
	}
	t.Fatalf("%s has no %s %s", file, kind, name)
}

func deployment(t *testing.T, r rendered, name string) (*appsv1.Deployment, *corev1.Container) {
	t.Helper()
	var d appsv1.Deployment
	r.get(t, "Deployment", namespace, name, &d)
	for i := range d.Spec.Template.Spec.Containers {
		if c := &d.Spec.Template.Spec.Containers[i]; c.Name == "flink-kubernetes-operator" {
			return &d, c
		}
	}
	t.Fatalf("Deployment %s has no container flink-kubernetes-operator", name)
	return nil, nil
}

// operatorConfig is the file the operator reads (--config), from the rendered ConfigMap, loaded
// as the operator loads it.
// Warnings fail the test unless allowed matches their key.
func operatorConfig(t *testing.T, r rendered, c *corev1.Container, allowed ...*regexp.Regexp) config.Config {
	t.Helper()
	var file string
	for _, a := range c.Args {
		if f, ok := strings.CutPrefix(a, "--config=/etc/flink-operator/"); ok {
			file = f
		}
	}
	if file == "" {
		t.Fatalf("no --config=/etc/flink-operator/<file> in %v", c.Args)
	}
	var cm corev1.ConfigMap
	r.get(t, "ConfigMap", namespace, "flink-operator-config", &cm)
	data, ok := cm.Data[file]
	if !ok {
		t.Fatalf("ConfigMap flink-operator-config has no %s (the operator's --config file)", file)
	}
	cfg, warnings, err := config.Load([]byte(data))
	if err != nil {
		t.Fatalf("the operator would not start with %s: %v\n%s", file, err, data)
	}
	for _, w := range warnings {
		if slices.ContainsFunc(allowed, func(re *regexp.Regexp) bool { return re.MatchString(w.Key) }) {
			t.Logf("the operator warns about %s: %s: %s", file, w.Key, w.Message)
			continue
		}
		t.Errorf("the operator would warn about %s: %s: %s", file, w.Key, w.Message)
	}
	return cfg
}

func TestMain(m *testing.M) {
	code := m.Run()
	if operatorPath != "" {
		os.RemoveAll(filepath.Dir(operatorPath))
	}
	os.Exit(code)
}

var (
	operatorOnce sync.Once
	operatorPath string
	operatorErr  error
)

// operatorBinary builds cmd/flink-operator once.
func operatorBinary(t *testing.T) string {
	t.Helper()
	operatorOnce.Do(func() {
		dir, err := os.MkdirTemp("", "helmchart-operator-")
		if err != nil {
			operatorErr = err
			return
		}
		operatorPath = filepath.Join(dir, "flink-operator")
		cmd := exec.Command("go", "build", "-o", operatorPath, "./cmd/flink-operator")
		cmd.Dir = RepoRoot()
		if out, err := cmd.CombinedOutput(); err != nil {
			operatorErr = fmt.Errorf("go build ./cmd/flink-operator: %v\n%s", err, out)
		}
	})
	if operatorErr != nil {
		t.Fatal(operatorErr)
	}
	return operatorPath
}

// checkArgsAreFlags runs the operator with the container's arguments and --help last: it parses
// every argument before it sees --help, so an unknown flag or a bad value fails.
func checkArgsAreFlags(t *testing.T, c *corev1.Container) {
	t.Helper()
	args := append(slices.Clone(c.Args), "--help")
	if out, err := exec.Command(operatorBinary(t), args...).CombinedOutput(); err != nil {
		t.Errorf("flink-operator %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

func envNames(c *corev1.Container) []string {
	var out []string
	for _, e := range c.Env {
		out = append(out, e.Name)
	}
	return out
}

func volumeNames(d *appsv1.Deployment) []string {
	var out []string
	for _, v := range d.Spec.Template.Spec.Volumes {
		out = append(out, v.Name)
	}
	return out
}

func mounts(c *corev1.Container) map[string]string {
	out := map[string]string{}
	for _, m := range c.VolumeMounts {
		out[m.Name] = m.MountPath
	}
	return out
}

func sameRules(t *testing.T, what string, got, want []rbacv1.PolicyRule) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s: rules\n  %+v\nwant (manifests/)\n  %+v", what, got, want)
	}
}

var webhookConfig = "flink-operator-" + namespace + "-webhook-configuration"

// kustomizeRoles maps the chart's role names (default values) to the kustomize install's.
var kustomizeRoles = []struct{ kind, ns, chart, kustomize string }{
	{"ClusterRole", "", "flink-operator", "flink-operator"},
	{"ClusterRole", "", "flink-operator-" + namespace + "-cluster", "flink-operator-cluster"},
	{"ClusterRole", "", "flink-operator-" + namespace + "-webhook-config", "flink-operator-webhook-config"},
	{"Role", namespace, "flink-operator-leader-election", "flink-operator-leader-election"},
	{"Role", namespace, "flink-operator-webhook-cert", "flink-operator-webhook-cert"},
	{"Role", namespace, "flink-operator-review-key", "flink-operator-review-key"},
}

func TestRenderDefault(t *testing.T) {
	r := render(t)
	want := []string{
		"ClusterRole /flink-operator",
		"ClusterRole /flink-operator-flink-operator-cluster",
		"ClusterRole /flink-operator-flink-operator-webhook-config",
		"ClusterRoleBinding /flink-operator-flink-operator-cluster",
		"ClusterRoleBinding /flink-operator-flink-operator-webhook-config",
		"ClusterRoleBinding /flink-operator-role-binding",
		"ConfigMap flink-operator/flink-operator-config",
		"CustomResourceDefinition /flinkbluegreendeployments.flink.apache.org",
		"CustomResourceDefinition /flinkdeployments.flink.apache.org",
		"CustomResourceDefinition /flinksessionjobs.flink.apache.org",
		"CustomResourceDefinition /flinkstatesnapshots.flink.apache.org",
		"Deployment flink-operator/flink-operator",
		"MutatingWebhookConfiguration /" + webhookConfig,
		"Role flink-operator/flink",
		"Role flink-operator/flink-operator-leader-election",
		"Role flink-operator/flink-operator-review-key",
		"Role flink-operator/flink-operator-webhook-cert",
		"RoleBinding flink-operator/flink-operator-leader-election",
		"RoleBinding flink-operator/flink-operator-review-key",
		"RoleBinding flink-operator/flink-operator-webhook-cert",
		"RoleBinding flink-operator/flink-role-binding",
		"Service flink-operator/flink-operator-metrics",
		"Service flink-operator/flink-operator-webhook-service",
		"ServiceAccount flink-operator/flink",
		"ServiceAccount flink-operator/flink-operator",
		"ValidatingWebhookConfiguration /" + webhookConfig,
	}
	if got := r.names(); !slices.Equal(got, want) {
		t.Errorf("rendered objects\n  %v\nwant\n  %v", got, want)
	}

	d, c := deployment(t, r, "flink-operator")
	wantArgs := []string{
		"--leader-elect",
		"--leader-election-id=flink-operator-lease",
		"--webhook-bind-address=:9443",
		"--webhook-service-name=flink-operator-webhook-service",
		"--webhook-secret-name=flink-operator-webhook-cert",
		"--webhook-config-name=" + webhookConfig,
		"--metrics-bind-address=:8080",
		"--health-probe-bind-address=:8085",
		"--config=/etc/flink-operator/flink-conf.yaml",
	}
	if !slices.Equal(c.Args, wantArgs) {
		t.Errorf("args %v, want %v", c.Args, wantArgs)
	}
	checkArgsAreFlags(t, c)
	// Every flag the kustomize install passes, the chart passes too (the probe port is upstream's).
	var kd0 appsv1.Deployment
	manifest(t, "manifests/base/deployment.yaml", "Deployment", "flink-operator", &kd0)
	for _, a := range kd0.Spec.Template.Spec.Containers[0].Args {
		name, _, _ := strings.Cut(a, "=")
		if !slices.ContainsFunc(c.Args, func(b string) bool { n, _, _ := strings.Cut(b, "="); return n == name }) {
			t.Errorf("the kustomize install passes %s, the chart does not", a)
		}
	}
	if *d.Spec.Replicas != 1 || d.Spec.Strategy.Type != appsv1.RecreateDeploymentStrategyType {
		t.Errorf("replicas %d strategy %q, want 1 and Recreate (upstream's defaults)", *d.Spec.Replicas, d.Spec.Strategy.Type)
	}
	if c.Image != "ghcr.io/flinkops/flink-operator:latest" {
		t.Errorf("image %q", c.Image)
	}
	if got := envNames(c); !slices.Equal(got, []string{"POD_NAMESPACE"}) || c.Env[0].ValueFrom.FieldRef.FieldPath != "metadata.namespace" {
		t.Errorf("env %v, want POD_NAMESPACE from metadata.namespace", got)
	}
	if got := volumeNames(d); !slices.Equal(got, []string{"tmp", "artifacts", "config"}) {
		t.Errorf("volumes %v", got)
	}
	if got, want := mounts(c), map[string]string{"tmp": "/tmp", "artifacts": "/opt/flink/artifacts", "config": "/etc/flink-operator"}; !reflect.DeepEqual(got, want) {
		t.Errorf("mounts %v, want %v", got, want)
	}
	for _, v := range d.Spec.Template.Spec.Volumes {
		if v.Name == "config" && (v.ConfigMap == nil || v.ConfigMap.Name != "flink-operator-config" || len(v.ConfigMap.Items) != 0) {
			t.Errorf("volume config %+v: want the whole ConfigMap flink-operator-config", v)
		}
	}
	if p := c.LivenessProbe; p == nil || p.HTTPGet.Path != "/healthz" || p.HTTPGet.Port.StrVal != "health" || p.PeriodSeconds != 10 || p.InitialDelaySeconds != 30 {
		t.Errorf("livenessProbe %+v", p)
	}
	if p := c.StartupProbe; p == nil || p.HTTPGet.Path != "/healthz" || p.FailureThreshold != 30 || p.PeriodSeconds != 10 {
		t.Errorf("startupProbe %+v", p)
	}
	if p := c.ReadinessProbe; p == nil || p.HTTPGet.Path != "/readyz" {
		t.Errorf("readinessProbe %+v", p)
	}
	ports := map[string]int32{}
	for _, p := range c.Ports {
		ports[p.Name] = p.ContainerPort
	}
	if want := map[string]int32{"webhook": 9443, "metrics": 8080, "health": 8085}; !reflect.DeepEqual(ports, want) {
		t.Errorf("ports %v, want %v", ports, want)
	}
	// Security as the kustomize install (restricted Pod Security Standard).
	var kd appsv1.Deployment
	manifest(t, "manifests/base/deployment.yaml", "Deployment", "flink-operator", &kd)
	if got, want := d.Spec.Template.Spec.SecurityContext, kd.Spec.Template.Spec.SecurityContext; !reflect.DeepEqual(got, want) {
		t.Errorf("pod securityContext %+v, want the kustomize install's %+v", got, want)
	}
	kc := kd.Spec.Template.Spec.Containers[0]
	if got, want := c.Resources, kc.Resources; !reflect.DeepEqual(got, want) {
		t.Errorf("resources %+v, want the kustomize install's %+v", got, want)
	}
	sc := c.SecurityContext
	if sc == nil || !*sc.ReadOnlyRootFilesystem || *sc.AllowPrivilegeEscalation || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) {
		t.Errorf("container securityContext %+v", sc)
	}

	cfg := operatorConfig(t, r, c)
	if got := cfg.String("kubernetes.operator.reconcile.interval"); got != "15 s" {
		t.Errorf("reconcile.interval %q, want upstream's chart's 15 s", got)
	}

	// RBAC: the kustomize install's rules, under the same names.
	for _, k := range kustomizeRoles {
		var got, want rbacv1.ClusterRole // Role has the same rules field
		r.get(t, k.kind, k.ns, k.chart, &got)
		manifest(t, "manifests/base/rbac.yaml", k.kind, k.kustomize, &want)
		if k.kustomize == "flink-operator-webhook-config" { // the chart's webhook configurations' name
			want.Rules[0].ResourceNames = []string{webhookConfig}
		}
		if k.kustomize == "flink-operator-webhook-cert" { // the chart's webhook Service's name
			want.Rules[2].ResourceNames = []string{"flink-operator-webhook-service"}
		}
		sameRules(t, k.kind+" "+k.chart, got.Rules, want.Rules)
	}
	var crb rbacv1.ClusterRoleBinding
	r.get(t, "ClusterRoleBinding", "", "flink-operator-role-binding", &crb)
	if crb.RoleRef.Name != "flink-operator" || crb.Subjects[0].Name != "flink-operator" || crb.Subjects[0].Namespace != namespace {
		t.Errorf("ClusterRoleBinding %+v", crb)
	}

	// The flink ServiceAccount, Role and RoleBinding in the release namespace, kept on uninstall.
	checkJobAccount(t, r, namespace, map[string]string{"helm.sh/resource-policy": "keep"})

	// The webhooks as manifests/base/webhook.yaml, but for the chart's Service and namespace.
	var vwc, kvwc admissionv1.ValidatingWebhookConfiguration
	r.get(t, "ValidatingWebhookConfiguration", "", webhookConfig, &vwc)
	manifest(t, "manifests/base/webhook.yaml", "ValidatingWebhookConfiguration", "flink-operator", &kvwc)
	for i := range kvwc.Webhooks {
		kvwc.Webhooks[i].ClientConfig.Service.Name = "flink-operator-webhook-service"
		kvwc.Webhooks[i].ClientConfig.Service.Namespace = namespace
	}
	if !reflect.DeepEqual(vwc.Webhooks, kvwc.Webhooks) {
		t.Errorf("validating webhooks\n  %+v\nwant\n  %+v", vwc.Webhooks, kvwc.Webhooks)
	}
	var mwc, kmwc admissionv1.MutatingWebhookConfiguration
	r.get(t, "MutatingWebhookConfiguration", "", webhookConfig, &mwc)
	manifest(t, "manifests/base/webhook.yaml", "MutatingWebhookConfiguration", "flink-operator", &kmwc)
	for i := range kmwc.Webhooks {
		kmwc.Webhooks[i].ClientConfig.Service.Name = "flink-operator-webhook-service"
		kmwc.Webhooks[i].ClientConfig.Service.Namespace = namespace
	}
	if !reflect.DeepEqual(mwc.Webhooks, kmwc.Webhooks) {
		t.Errorf("mutating webhooks\n  %+v\nwant\n  %+v", mwc.Webhooks, kmwc.Webhooks)
	}
	var svc corev1.Service
	r.get(t, "Service", namespace, "flink-operator-webhook-service", &svc)
	if svc.Spec.Ports[0].Port != 443 || svc.Spec.Ports[0].TargetPort.StrVal != "webhook" ||
		!reflect.DeepEqual(svc.Spec.Selector, d.Spec.Selector.MatchLabels) {
		t.Errorf("webhook Service %+v", svc.Spec)
	}
	for k, v := range d.Spec.Selector.MatchLabels {
		if d.Spec.Template.Labels[k] != v {
			t.Errorf("pod template lacks selector label %s=%s", k, v)
		}
	}
}

func checkJobAccount(t *testing.T, r rendered, ns string, annotations map[string]string) {
	t.Helper()
	var sa corev1.ServiceAccount
	r.get(t, "ServiceAccount", ns, "flink", &sa)
	if !reflect.DeepEqual(sa.Annotations, annotations) {
		t.Errorf("ServiceAccount %s/flink annotations %v, want %v", ns, sa.Annotations, annotations)
	}
	var role, want rbacv1.Role
	r.get(t, "Role", ns, "flink", &role)
	manifest(t, "manifests/flink-serviceaccount/rbac.yaml", "Role", "flink", &want)
	sameRules(t, "Role "+ns+"/flink", role.Rules, want.Rules)
	if role.Annotations["helm.sh/resource-policy"] != "keep" {
		t.Errorf("Role %s/flink is not kept on uninstall: %v", ns, role.Annotations)
	}
	var rb rbacv1.RoleBinding
	r.get(t, "RoleBinding", ns, "flink-role-binding", &rb)
	if rb.RoleRef.Kind != "Role" || rb.RoleRef.Name != "flink" || len(rb.Subjects) != 1 ||
		rb.Subjects[0].Name != "flink" || rb.Subjects[0].Namespace != ns {
		t.Errorf("RoleBinding %s/flink-role-binding %+v", ns, rb)
	}
}

// upstreamStyleValues is a values file in upstream's chart's schema, as a user switching from
// upstream's chart would keep it (written for these tests; upstream's own values.yaml is not kept).
var upstreamStyleValues = filepath.Join("testdata", "upstream-style-values.yaml")

// decoded is an object's generic form, to compare two renderings whole.
func decoded(t *testing.T, o object) map[string]any {
	t.Helper()
	var m map[string]any
	if err := yaml.Unmarshal(o.raw, &m); err != nil {
		t.Fatalf("%s: %v", o, err)
	}
	return m
}

// A user's values file written for upstream's chart. It renders as the defaults with its
// watchNamespaces, replicas and metrics.port given on the command line (the keys that change which
// objects are rendered, and the Deployment's replicas and arguments): every object but the
// Deployment and the ConfigMap is identical; the Deployment differs in the fields the file sets
// (pod uid/gid, resources, env) and nothing else, and runs this project's image although the file
// names upstream's with a tag; the ConfigMap carries the file's flink-conf.yaml, which the operator
// loads, logging upstream's metric reporter keys as unknown and nothing else.
func TestRenderUpstreamStyleValues(t *testing.T) {
	r := render(t, "-f", upstreamStyleValues)
	ref := render(t, "--set", "watchNamespaces={flink-jobs,flink-batch},replicas=2,metrics.port=9249")
	if got, want := r.names(), ref.names(); !slices.Equal(got, want) {
		t.Errorf("with %s\n  %v\nwith the same watchNamespaces, replicas and metrics.port set\n  %v", upstreamStyleValues, got, want)
	}
	for _, o := range ref {
		if o.Kind == "Deployment" || o.Kind == "ConfigMap" {
			continue
		}
		got, ok := r.find(o.Kind, o.Namespace, o.Name)
		if !ok {
			continue // reported above
		}
		if !reflect.DeepEqual(decoded(t, got), decoded(t, o)) {
			t.Errorf("%s differs from the one rendered with the same keys set:\n%s\nwant\n%s", o, got.raw, o.raw)
		}
	}
	for _, ns := range []string{"flink-jobs", "flink-batch"} {
		checkJobAccount(t, r, ns, map[string]string{"helm.sh/resource-policy": "keep"})
	}

	d, c := deployment(t, r, "flink-operator")
	if c.Image != "ghcr.io/flinkops/flink-operator:latest" {
		t.Errorf("image %q: upstream's repository, and its tag 1.15.0, must be replaced by this project's image", c.Image)
	}
	if *d.Spec.Replicas != 2 {
		t.Errorf("replicas %d", *d.Spec.Replicas)
	}
	for _, want := range []string{"--leader-elect", "--leader-election-id=flink-operator-lease", "--metrics-bind-address=:9249"} {
		if !slices.Contains(c.Args, want) {
			t.Errorf("args %v lack %s", c.Args, want)
		}
	}
	checkArgsAreFlags(t, c)
	if sc := d.Spec.Template.Spec.SecurityContext; *sc.RunAsUser != 9999 || *sc.RunAsGroup != 9999 || !*sc.RunAsNonRoot {
		t.Errorf("pod securityContext %+v: want upstream's uid/gid 9999, still non-root", sc)
	}
	// The same Deployment as with the keys set on the command line, but for the fields the file sets.
	rd, rc := deployment(t, ref, "flink-operator")
	want := rd.DeepCopy()
	uid := int64(9999)
	want.Spec.Template.Spec.SecurityContext.RunAsUser, want.Spec.Template.Spec.SecurityContext.RunAsGroup = &uid, &uid
	wc := &want.Spec.Template.Spec.Containers[slices.IndexFunc(want.Spec.Template.Spec.Containers, func(x corev1.Container) bool { return x.Name == rc.Name })]
	wc.Resources = corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m"), corev1.ResourceMemory: resource.MustParse("512Mi")},
		Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi")},
	}
	wc.Env = append(wc.Env, corev1.EnvVar{Name: "TZ", Value: "Europe/Amsterdam"})
	if !equality.Semantic.DeepEqual(d, want) {
		got, _ := yaml.Marshal(d)
		exp, _ := yaml.Marshal(want)
		t.Errorf("Deployment\n%s\nwant\n%s", got, exp)
	}

	// The ConfigMap: the file's flink-conf.yaml in place of the chart's default one, after the
	// chart's conf/config.yaml (append: true); the other files as with the defaults.
	var cm, rcm corev1.ConfigMap
	r.get(t, "ConfigMap", namespace, "flink-operator-config", &cm)
	ref.get(t, "ConfigMap", namespace, "flink-operator-config", &rcm)
	chartValues, err := ReadValues(filepath.Join(chartDir, "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	userValues, err := ReadValues(upstreamStyleValues)
	if err != nil {
		t.Fatal(err)
	}
	defaultConf := strings.TrimSpace(chartValues["defaultConfiguration"].(map[string]any)["flink-conf.yaml"].(string))
	userConf := strings.TrimSpace(userValues["defaultConfiguration"].(map[string]any)["flink-conf.yaml"].(string))
	if !strings.Contains(rcm.Data["flink-conf.yaml"], defaultConf) {
		t.Fatalf("the default ConfigMap's flink-conf.yaml lacks the chart's default value:\n%s", rcm.Data["flink-conf.yaml"])
	}
	wantData := maps.Clone(rcm.Data)
	wantData["flink-conf.yaml"] = strings.Replace(rcm.Data["flink-conf.yaml"], defaultConf, userConf, 1)
	// Blank lines aside: where a value ends, the chart's next line (watchNamespaces) follows it.
	for _, data := range []map[string]string{cm.Data, wantData} {
		for k, v := range data {
			data[k] = withoutBlankLines(v)
		}
	}
	if !reflect.DeepEqual(cm.Data, wantData) || !reflect.DeepEqual(cm.ObjectMeta, rcm.ObjectMeta) {
		t.Errorf("ConfigMap data\n%v\nwant\n%v", cm.Data, wantData)
	}
	// Upstream's metric reporters (SLF4J, Prometheus on metrics.port) are keys this operator does
	// not have (it serves Prometheus /metrics itself, on metrics.port): logged as unknown, nothing
	// else.
	cfg := operatorConfig(t, r, c, regexp.MustCompile(`^kubernetes\.operator\.metrics\.reporter\.(slf4j|prom)\.`))
	for key, want := range map[string]string{
		"kubernetes.operator.reconcile.interval":               "30 s",
		"kubernetes.operator.observer.progress-check.interval": "10 s",
		"kubernetes.operator.savepoint.history.max.count":      "5",
	} {
		if got := cfg.String(key); got != want {
			t.Errorf("%s %q, want the values file's %s", key, got, want)
		}
	}
}

func TestRenderWebhookOff(t *testing.T) {
	r := render(t, "--set", "webhook.create=false")
	for _, o := range r {
		switch {
		case o.Kind == "ValidatingWebhookConfiguration", o.Kind == "MutatingWebhookConfiguration",
			o.Name == "flink-operator-webhook-service", strings.Contains(o.Name, "webhook-c"):
			t.Errorf("%s rendered with webhook.create=false", o)
		}
	}
	_, c := deployment(t, r, "flink-operator")
	if !slices.Contains(c.Args, "--webhook-bind-address=0") || slices.ContainsFunc(c.Args, func(a string) bool { return strings.HasPrefix(a, "--webhook-config-name") }) {
		t.Errorf("args %v: want the webhook server off", c.Args)
	}
	for _, p := range c.Ports {
		if p.Name == "webhook" {
			t.Errorf("webhook port with webhook.create=false")
		}
	}
	if _, ok := r.find("Role", namespace, "flink-operator-review-key"); !ok {
		t.Errorf("Role flink-operator-review-key missing: the controllers read the review key without the webhook too")
	}
}

func TestRenderWatchNamespaces(t *testing.T) {
	r := render(t, "--set", "watchNamespaces={team-a,team-b}")
	_, c := deployment(t, r, "flink-operator")
	// As upstream's chart: the key in the operator's configuration file, not --namespaces (which
	// would win over the file), so that editing it in the ConfigMap reaches a running operator.
	if slices.ContainsFunc(c.Args, func(a string) bool { return strings.HasPrefix(a, "--namespaces") }) {
		t.Errorf("args %v set --namespaces: a change of the ConfigMap's watched namespaces would be ignored", c.Args)
	}
	if got := config.WatchedNamespaces(operatorConfig(t, r, c)); !slices.Equal(got, []string{"team-a", "team-b"}) {
		t.Errorf("the operator's configuration watches %v, want [team-a team-b]", got)
	}
	// The key in defaultConfiguration as well: a clear error at install, not a file the operator
	// refuses to start with.
	all := []string{"template", release, chartDir, "--namespace", namespace, "--set", "watchNamespaces={team-a}",
		"--set-string", "defaultConfiguration.flink-conf\\.yaml=kubernetes.operator.watched.namespaces: other"}
	if out, err := exec.Command(helm(t), all...).CombinedOutput(); err == nil ||
		!strings.Contains(string(out), "sets kubernetes.operator.watched.namespaces and watchNamespaces is set too") {
		t.Errorf("helm %s: err %v, want the chart's error; output\n%s", strings.Join(all, " "), err, out)
	}
	checkArgsAreFlags(t, c)
	if _, ok := r.find("ClusterRole", "", "flink-operator"); ok {
		t.Error("ClusterRole flink-operator rendered with watchNamespaces: the namespaced rules must be Roles")
	}
	if _, ok := r.find("ClusterRoleBinding", "", "flink-operator-role-binding"); ok {
		t.Error("ClusterRoleBinding flink-operator-role-binding rendered with watchNamespaces")
	}
	var want rbacv1.ClusterRole
	manifest(t, "manifests/base/rbac.yaml", "ClusterRole", "flink-operator", &want)
	for _, ns := range []string{"team-a", "team-b"} {
		var role rbacv1.Role
		r.get(t, "Role", ns, "flink-operator", &role)
		sameRules(t, "Role "+ns+"/flink-operator", role.Rules, want.Rules)
		var rb rbacv1.RoleBinding
		r.get(t, "RoleBinding", ns, "flink-operator-role-binding", &rb)
		if rb.RoleRef.Kind != "Role" || rb.RoleRef.Name != "flink-operator" || rb.Subjects[0].Name != "flink-operator" || rb.Subjects[0].Namespace != namespace {
			t.Errorf("RoleBinding %s/flink-operator-role-binding %+v", ns, rb)
		}
		checkJobAccount(t, r, ns, map[string]string{"helm.sh/resource-policy": "keep"})
	}
	if _, ok := r.find("ServiceAccount", namespace, "flink"); ok {
		t.Error("ServiceAccount flink in the release namespace, which is not watched")
	}
	// Cluster-scoped grants stay: SubjectAccessReviews, the webhook configurations' caBundle.
	for _, name := range []string{"flink-operator-flink-operator-cluster", "flink-operator-flink-operator-webhook-config"} {
		if _, ok := r.find("ClusterRole", "", name); !ok {
			t.Errorf("ClusterRole %s missing", name)
		}
	}
	var vwc admissionv1.ValidatingWebhookConfiguration
	r.get(t, "ValidatingWebhookConfiguration", "", webhookConfig, &vwc)
	var mwc admissionv1.MutatingWebhookConfiguration
	r.get(t, "MutatingWebhookConfiguration", "", webhookConfig, &mwc)
	for _, sel := range []*metav1.LabelSelector{vwc.Webhooks[0].NamespaceSelector, mwc.Webhooks[0].NamespaceSelector} {
		if sel == nil || len(sel.MatchExpressions) != 1 || sel.MatchExpressions[0].Key != "kubernetes.io/metadata.name" ||
			!slices.Equal(sel.MatchExpressions[0].Values, []string{"team-a", "team-b"}) {
			t.Errorf("webhook namespaceSelector %+v", sel)
		}
	}
}

func TestRenderTwoReplicas(t *testing.T) {
	values := filepath.Join(t.TempDir(), "values.yaml")
	if err := os.WriteFile(values, []byte("replicas: 2\nstrategy:\n  type: RollingUpdate\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := render(t, "-f", values)
	d, c := deployment(t, r, "flink-operator")
	if *d.Spec.Replicas != 2 || d.Spec.Strategy.Type != appsv1.RollingUpdateDeploymentStrategyType {
		t.Errorf("replicas %d strategy %+v", *d.Spec.Replicas, d.Spec.Strategy)
	}
	if !slices.Contains(c.Args, "--leader-elect") {
		t.Errorf("args %v: two replicas need leader election", c.Args)
	}
	var role rbacv1.Role
	r.get(t, "Role", namespace, "flink-operator-leader-election", &role)
	if !slices.Equal(role.Rules[0].ResourceNames, []string{"flink-operator-lease"}) {
		t.Errorf("leader-election Role %+v", role.Rules)
	}
}

// Most of upstream's keys set at once (testdata/all-set.yaml).
func TestRenderAllSet(t *testing.T) {
	r := render(t, "-f", filepath.Join("testdata", "all-set.yaml"))
	d, c := deployment(t, r, "my-operator")
	spec := d.Spec.Template.Spec
	if c.Image != "registry.example.com/flink-operator:v0.1.0" || c.ImagePullPolicy != corev1.PullAlways ||
		spec.ImagePullSecrets[0].Name != "pull-secret" {
		t.Errorf("image %q %q %v", c.Image, c.ImagePullPolicy, spec.ImagePullSecrets)
	}
	if d.Spec.Strategy.RollingUpdate == nil || d.Spec.Strategy.RollingUpdate.MaxUnavailable.IntVal != 0 {
		t.Errorf("strategy %+v", d.Spec.Strategy)
	}
	if spec.PriorityClassName != "system-cluster-critical" || spec.DNSPolicy != corev1.DNSClusterFirstWithHostNet ||
		spec.DNSConfig == nil || spec.NodeSelector["kubernetes.io/os"] != "linux" || spec.Affinity.NodeAffinity == nil ||
		spec.Tolerations[0].Key != "dedicated" || spec.TopologySpreadConstraints[0].TopologyKey != "kubernetes.io/hostname" {
		t.Errorf("pod spec scheduling fields not all set: %+v", spec)
	}
	if d.Spec.Template.Annotations["prometheus.io/scrape"] != "true" || d.Spec.Template.Labels["team"] != "data" || d.Labels["team"] != "data" {
		t.Errorf("pod annotations %v labels %v", d.Spec.Template.Annotations, d.Spec.Template.Labels)
	}
	if got := envNames(c); !slices.Equal(got, []string{"POD_NAMESPACE", "HTTPS_PROXY", "WEBHOOK_ONLY"}) {
		t.Errorf("env %v", got)
	}
	if len(c.EnvFrom) != 1 || c.EnvFrom[0].ConfigMapRef.Name != "operator-env" {
		t.Errorf("envFrom %+v", c.EnvFrom)
	}
	if c.Resources.Limits.Cpu().String() != "1" || c.Resources.Limits.Memory().String() != "1Gi" {
		t.Errorf("resources %+v", c.Resources)
	}
	if len(spec.InitContainers) != 1 || len(spec.Containers) != 2 || spec.Containers[1].Name != "sidecar" {
		t.Errorf("init containers %d, containers %d", len(spec.InitContainers), len(spec.Containers))
	}
	if got := volumeNames(d); !slices.Equal(got, []string{"tmp", "flink-artifacts", "config"}) {
		t.Errorf("volumes %v", got)
	}
	if mounts(c)["flink-artifacts"] != "/opt/flink/artifacts" {
		t.Errorf("mounts %v", mounts(c))
	}
	if *spec.SecurityContext.RunAsUser != 9999 {
		t.Errorf("pod securityContext %+v", spec.SecurityContext)
	}
	if c.Lifecycle == nil || c.Lifecycle.PostStart == nil || c.Lifecycle.PostStart.Exec.Command[0] != "/bin/true" {
		t.Errorf("lifecycle %+v", c.Lifecycle)
	}
	for _, want := range []string{"--metrics-bind-address=:9999", "--health-probe-bind-address=:8090", "--config=/etc/flink-operator/config.yaml"} {
		if !slices.Contains(c.Args, want) {
			t.Errorf("args %v lack %s", c.Args, want)
		}
	}
	checkArgsAreFlags(t, c)
	cfg := operatorConfig(t, r, c)
	if got := cfg.String("kubernetes.operator.reconcile.interval"); got != "30 s" {
		t.Errorf("reconcile.interval %q, want the values file's 30 s", got)
	}
	if got := cfg.String("kubernetes.operator.savepoint.history.max.count"); got != "3" {
		t.Errorf("savepoint.history.max.count %q", got)
	}
	if _, ok := r.find("ValidatingWebhookConfiguration", "", webhookConfig); ok {
		t.Error("ValidatingWebhookConfiguration with webhook.validator.create=false")
	}
	if _, ok := r.find("MutatingWebhookConfiguration", "", webhookConfig); !ok {
		t.Error("no MutatingWebhookConfiguration (webhook.mutator.create defaults to webhook.create)")
	}
	var svc corev1.Service
	r.get(t, "Service", namespace, "flink-operator-webhook-service", &svc)
	if svc.Labels["team"] != "data" {
		t.Errorf("webhook Service labels %v", svc.Labels)
	}
	var sa corev1.ServiceAccount
	r.get(t, "ServiceAccount", namespace, "flink-operator", &sa)
	if sa.Annotations["eks.amazonaws.com/role-arn"] == "" {
		t.Errorf("operator ServiceAccount annotations %v", sa.Annotations)
	}
	checkJobAccount(t, r, namespace, map[string]string{"eks.amazonaws.com/role-arn": "arn:aws:iam::123:role/flink", "helm.sh/resource-policy": "keep"})
	var crb rbacv1.ClusterRoleBinding
	r.get(t, "ClusterRoleBinding", "", "my-binding", &crb)
	var cluster rbacv1.ClusterRole
	r.get(t, "ClusterRole", "", "my-operator-flink-operator-cluster", &cluster)
	if !slices.ContainsFunc(cluster.Rules, func(p rbacv1.PolicyRule) bool { return slices.Contains(p.Resources, "nodes") }) {
		t.Errorf("rbac.nodesRule.create: no nodes rule in %+v", cluster.Rules)
	}
}

// No RBAC, no ServiceAccounts, no ConfigMap: the objects a cluster admin provides.
func TestRenderNothingCreated(t *testing.T) {
	r := render(t, "--set", "rbac.create=false,operatorServiceAccount.create=false,jobServiceAccount.create=false,defaultConfiguration.create=false")
	for _, o := range r {
		switch o.Kind {
		case "Role", "RoleBinding", "ClusterRole", "ClusterRoleBinding", "ServiceAccount", "ConfigMap":
			t.Errorf("%s rendered", o)
		}
	}
	d, _ := deployment(t, r, "flink-operator")
	if d.Spec.Template.Spec.ServiceAccountName != "flink-operator" {
		t.Errorf("serviceAccountName %q", d.Spec.Template.Spec.ServiceAccountName)
	}
}

func TestRenderWithoutHealth(t *testing.T) {
	r := render(t, "--set", "operatorHealth=null")
	_, c := deployment(t, r, "flink-operator")
	if c.LivenessProbe != nil || c.StartupProbe != nil || c.ReadinessProbe != nil {
		t.Errorf("probes with operatorHealth null: %+v %+v %+v", c.LivenessProbe, c.StartupProbe, c.ReadinessProbe)
	}
	if !slices.Contains(c.Args, "--health-probe-bind-address=0") {
		t.Errorf("args %v: want the probe server off", c.Args)
	}
}

func TestLint(t *testing.T) {
	for _, args := range [][]string{nil, {"-f", upstreamStyleValues}, {"-f", filepath.Join("testdata", "all-set.yaml")}} {
		all := append([]string{"lint", "--strict", chartDir}, args...)
		out, err := exec.Command(helm(t), all...).CombinedOutput()
		if err != nil {
			t.Errorf("helm %s: %v\n%s", strings.Join(all, " "), err, out)
		}
	}
}

// Two releases in their own namespaces, each watching its own namespaces (upstream's chart allows
// it): no object but the CRDs is claimed by both, so Helm installs the second.
func TestRenderTwoReleasesCoexist(t *testing.T) {
	a := renderIn(t, "ops-a", "--set", "watchNamespaces={team-a}")
	b := renderIn(t, "ops-b", "--set", "watchNamespaces={team-b}")
	for _, o := range a.names() {
		if slices.Contains(b.names(), o) && !strings.HasPrefix(o, "CustomResourceDefinition ") {
			t.Errorf("both releases render %s", o)
		}
	}
}

// append: false: only the values' file, even one whose first line is indented (nested YAML cut
// out of a larger file).
func TestRenderConfigWithoutAppend(t *testing.T) {
	values := filepath.Join(t.TempDir(), "values.yaml")
	data := "defaultConfiguration:\n  append: false\n  flink-conf.yaml: null\n  config.yaml: |\n" +
		"      kubernetes.operator:\n        reconcile.interval: 10 s\n      parallelism.default: 2\n"
	if err := os.WriteFile(values, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	r := render(t, "-f", values)
	_, c := deployment(t, r, "flink-operator")
	cfg := operatorConfig(t, r, c)
	if got := cfg.String("kubernetes.operator.reconcile.interval"); got != "10 s" {
		t.Errorf("reconcile.interval %q, want 10 s", got)
	}
	if got := cfg.String("parallelism.default"); got != "2" {
		t.Errorf("parallelism.default %q, want 2", got)
	}
	var cm corev1.ConfigMap
	r.get(t, "ConfigMap", namespace, "flink-operator-config", &cm)
	if strings.Contains(cm.Data["config.yaml"], "# Operator configuration") {
		t.Errorf("append: false, yet config.yaml starts with the chart's default:\n%s", cm.Data["config.yaml"])
	}
}

// withoutBlankLines drops the lines of s that hold only white space.
func withoutBlankLines(s string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.TrimSpace(l) != "" {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
