package cluster

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
)

// The cases of upstream's IngressUtilsTest.testIngressUrl, and the
// java.net.URL readings the builder relies on.
func TestIngressURL(t *testing.T) {
	for _, tc := range []struct {
		template, host, path string
	}{
		{"flink.k8s.io/{{namespace}}/{{name}}", "flink.k8s.io", "/default/basic-ingress"},
		{"/{{namespace}}/{{name}}", "", "/default/basic-ingress"},
		{"{{name}}.{{namespace}}.flink.k8s.io", "basic-ingress.default.flink.k8s.io", ""},
		{"{{name}}.{{namespace}}.flink.k8s.io/", "basic-ingress.default.flink.k8s.io", "/"},
		{"/{{namespace}}/{{name}}(/|$)(.*)", "", "/default/basic-ingress(/|$)(.*)"},
		{"example.com/{{namespace}}/{{name}}(/|$)(.*)", "example.com", "/default/basic-ingress(/|$)(.*)"},
		{"https://{{NAME}}.example.com:8443/ui?x=1#top", "basic-ingress.example.com", "/ui"},
		{"HTTP://{{Namespace}}.example.com", "default.example.com", ""},
	} {
		host, path, err := IngressURL(tc.template, "basic-ingress", "default")
		if err != nil || host != tc.host || path != tc.path {
			t.Errorf("IngressURL(%q) = %q, %q, %v; want %q, %q", tc.template, host, path, err, tc.host, tc.path)
		}
	}
	for _, bad := range []string{"example.com:port", ""} {
		if _, _, err := IngressURL(bad, "basic-ingress", "default"); err == nil {
			t.Errorf("IngressURL(%q): no error", bad)
		}
	}
}

func TestIngress(t *testing.T) {
	dep := &v1beta1.FlinkDeployment{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "team", UID: "uid-web"}}
	spec := &v1beta1.IngressSpec{
		Template:    "/{{namespace}}/{{name}}(/|$)(.*)",
		ClassName:   "nginx",
		Annotations: map[string]string{"nginx.ingress.kubernetes.io/rewrite-target": "/$2"},
		Labels:      map[string]string{"team": "a", LabelType: "mine", LabelComponent: "mine"},
		TLS:         []networkingv1.IngressTLS{{Hosts: []string{"flink.example.com"}, SecretName: "tls"}},
	}
	ing, err := Ingress(IngressInput{Deployment: dep, Spec: spec, RESTPort: 8081})
	if err != nil {
		t.Fatal(err)
	}
	pathType := networkingv1.PathTypeImplementationSpecific
	wantSpec := networkingv1.IngressSpec{
		IngressClassName: new("nginx"),
		TLS:              []networkingv1.IngressTLS{{Hosts: []string{"flink.example.com"}, SecretName: "tls"}},
		Rules: []networkingv1.IngressRule{{IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{
			Paths: []networkingv1.HTTPIngressPath{{
				Path: "/team/web(/|$)(.*)", PathType: &pathType,
				Backend: networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{
					Name: "web-rest", Port: networkingv1.ServiceBackendPort{Number: 8081}}},
			}},
		}}}},
	}
	if diff := cmp.Diff(wantSpec, ing.Spec); diff != "" {
		t.Errorf("spec (-want +got):\n%s", diff)
	}
	if ing.Name != "web" || ing.Namespace != "team" {
		t.Errorf("name %s/%s, want team/web", ing.Namespace, ing.Name)
	}
	wantLabels := map[string]string{"team": "a", LabelApp: "web", LabelType: TypeStandalone, LabelComponent: ComponentIngress}
	if diff := cmp.Diff(wantLabels, ing.Labels); diff != "" {
		t.Errorf("labels (-want +got):\n%s", diff)
	}
	if ing.Annotations["nginx.ingress.kubernetes.io/rewrite-target"] != "/$2" || ing.Annotations[AnnotationSpecHash] == "" || len(ing.Annotations) != 2 {
		t.Errorf("annotations %v: want the spec's and the spec hash", ing.Annotations)
	}
	if refs := ing.OwnerReferences; len(refs) != 1 || refs[0].Kind != "FlinkDeployment" || refs[0].UID != "uid-web" || refs[0].Controller == nil || !*refs[0].Controller {
		t.Errorf("owner references %+v", refs)
	}
	// The spec's maps are not shared with the built object.
	ing.Labels["x"], ing.Annotations["x"] = "y", "y"
	if spec.Labels["x"] != "" || spec.Annotations["x"] != "" {
		t.Error("the built Ingress shares the spec's maps")
	}

	// A host template: the rule has the host and no path; native mode's
	// type label; no class, no annotations but the hash; rest.port.
	native, err := Ingress(IngressInput{Deployment: dep, Spec: &v1beta1.IngressSpec{Template: "{{name}}.{{namespace}}.example.com"}, Native: true, RESTPort: 9091})
	if err != nil {
		t.Fatal(err)
	}
	rule := native.Spec.Rules[0]
	if rule.Host != "web.team.example.com" || rule.HTTP.Paths[0].Path != "" || rule.HTTP.Paths[0].Backend.Service.Port.Number != 9091 {
		t.Errorf("rule %+v", rule)
	}
	if native.Labels[LabelType] != TypeNative || native.Spec.IngressClassName != nil || len(native.Annotations) != 1 {
		t.Errorf("labels %v, class %v, annotations %v", native.Labels, native.Spec.IngressClassName, native.Annotations)
	}

	// A template change changes the spec hash (the controller updates).
	other, err := Ingress(IngressInput{Deployment: dep, Spec: &v1beta1.IngressSpec{Template: "{{name}}.example.com"}, RESTPort: 8081})
	if err != nil {
		t.Fatal(err)
	}
	if !SpecHashChanged(other, native) {
		t.Error("spec hash unchanged by a template change")
	}
	if _, err := Ingress(IngressInput{Deployment: dep, Spec: &v1beta1.IngressSpec{Template: "x:y"}}); err == nil || !strings.Contains(err.Error(), "x:y") {
		t.Errorf("bad template: err %v", err)
	}
}
