package localcluster

import (
	"testing"
	"time"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

type testPath struct {
	path, svc string
	typ       networkingv1.PathType
}

func testIngress(name string, age int, annotations map[string]string, host string, paths ...testPath) *networkingv1.Ingress {
	ing := &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{
		Namespace: "default", Name: name, Annotations: annotations,
		CreationTimestamp: metav1.NewTime(time.Unix(1e9, 0).Add(time.Duration(age) * time.Second)),
	}}
	rule := networkingv1.IngressRule{Host: host, IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{}}}
	for _, p := range paths {
		typ := p.typ
		rule.HTTP.Paths = append(rule.HTTP.Paths, networkingv1.HTTPIngressPath{Path: p.path, PathType: &typ, Backend: networkingv1.IngressBackend{
			Service: &networkingv1.IngressServiceBackend{Name: p.svc, Port: networkingv1.ServiceBackendPort{Number: 8081}},
		}})
	}
	ing.Spec.Rules = []networkingv1.IngressRule{rule}
	return ing
}

const (
	implSpecific = networkingv1.PathTypeImplementationSpecific
	prefix       = networkingv1.PathTypePrefix
	exact        = networkingv1.PathTypeExact
)

// TestRouteIngressRewrite: the operator's Ingress as upstream's e2e data
// configures it (template /{{namespace}}/{{name}}(/|$)(.*), rewrite-target
// /$2), as ingress-nginx routes it.
func TestRouteIngressRewrite(t *testing.T) {
	rewrite := map[string]string{annRewriteTarget: "/$2"}
	ings := []*networkingv1.Ingress{
		testIngress("basic", 0, rewrite, "", testPath{"/default/basic(/|$)(.*)", "basic-rest", implSpecific}),
		testIngress("other", 1, rewrite, "", testPath{"/default/basic-other(/|$)(.*)", "other-rest", implSpecific}),
	}
	for _, tc := range []struct {
		path, svc, want string
	}{
		{"/default/basic/config", "basic-rest", "/config"},
		{"/default/basic/jobs/overview", "basic-rest", "/jobs/overview"},
		{"/default/basic", "basic-rest", "/"},
		{"/default/basic/", "basic-rest", "/"},
		{"/DEFAULT/Basic/config", "basic-rest", "/config"}, // case-insensitive, as nginx's ~*
		{"/default/basic-other/config", "other-rest", "/config"},
		{"/default/basicx/config", "", ""}, // (/|$) needs a slash or the end
		{"/kube-system/basic/config", "", ""},
		{"/", "", ""},
	} {
		r, ok, err := routeIngress(ings, "127.0.0.1", tc.path)
		if err != nil {
			t.Fatal(err)
		}
		if tc.svc == "" {
			if ok {
				t.Errorf("%s: routed to %s %s, want no route (404)", tc.path, r.Backend.Service.Name, r.Path)
			}
			continue
		}
		if !ok || r.Backend.Service.Name != tc.svc || r.Path != tc.want {
			t.Errorf("%s: got ok=%v %+v, want %s %s", tc.path, ok, r, tc.svc, tc.want)
		}
	}
}

func TestRewritePath(t *testing.T) {
	ings := []*networkingv1.Ingress{testIngress("a", 0, map[string]string{annRewriteTarget: "/x/$1/$2y"}, "",
		testPath{"/a/(\\w+)/(\\w+)", "a", implSpecific})}
	r, ok, err := routeIngress(ings, "", "/a/one/two/three")
	if err != nil || !ok || r.Path != "/x/one/twoy" {
		t.Fatalf("got %+v %v %v, want /x/one/twoy ($2y is group 2 then y, as nginx)", r, ok, err)
	}
	// No leading slash in the target: the path still gets one.
	ings[0].Annotations[annRewriteTarget] = "$1"
	if r, _, _ := routeIngress(ings, "", "/a/one/two"); r.Path != "/one" {
		t.Errorf("target $1: got %q, want /one", r.Path)
	}
}

// TestRouteIngressPrefix: without a regex on the host, Exact beats
// everything, then the longest prefix; Prefix matches whole path elements,
// ImplementationSpecific (nginx's plain location) any string prefix.
func TestRouteIngressPrefix(t *testing.T) {
	ings := []*networkingv1.Ingress{
		testIngress("a", 0, nil, "",
			testPath{"/", "root", prefix},
			testPath{"/api", "api", prefix},
			testPath{"/api/v1/", "v1", prefix},
			testPath{"/api/exact", "exact", exact},
			testPath{"/static", "static", implSpecific}),
	}
	for path, want := range map[string]string{
		"/":             "root",
		"/api":          "api",
		"/api/":         "api",
		"/apix":         "root", // Prefix /api does not take /apix
		"/api/v1":       "v1",   // a trailing slash of a Prefix path is ignored
		"/api/v1/jobs":  "v1",
		"/api/exact":    "exact",
		"/api/exact/x":  "api",
		"/staticfile":   "static", // ImplementationSpecific: a string prefix
		"/API":          "root",   // case-sensitive without a regex
		"/static/a/b/c": "static",
	} {
		r, ok, err := routeIngress(ings, "", path)
		if err != nil || !ok || r.Backend.Service.Name != want || r.Path != path {
			t.Errorf("%s: got %+v %v %v, want %s, path unchanged", path, r, ok, err, want)
		}
	}
	// No "/" path: nothing else matches.
	ings = []*networkingv1.Ingress{testIngress("a", 0, nil, "", testPath{"/api", "api", prefix})}
	if r, ok, _ := routeIngress(ings, "", "/other"); ok {
		t.Errorf("/other routed to %+v", r)
	}
}

// TestRouteIngressRegexEnforced: one Ingress with use-regex makes every path
// of its host a regex, longest first (ingress-nginx's enforced regex).
func TestRouteIngressRegexEnforced(t *testing.T) {
	ings := []*networkingv1.Ingress{
		testIngress("plain", 0, nil, "", testPath{"/app", "plain", prefix}),
		testIngress("re", 1, map[string]string{annUseRegex: "true"}, "", testPath{"/app/[0-9]+", "re", implSpecific}),
	}
	for path, want := range map[string]string{"/app/12": "re", "/APP/x": "plain", "/appx": "plain"} {
		r, ok, err := routeIngress(ings, "", path)
		if err != nil || !ok || r.Backend.Service.Name != want || r.Path != path {
			t.Errorf("%s: got %+v %v %v, want %s", path, r, ok, err, want)
		}
	}
	// A bad expression is an error (500), not a silent 404.
	ings = append(ings, testIngress("bad", 2, map[string]string{annUseRegex: "true"}, "", testPath{"/bad/(", "bad", implSpecific}))
	if _, _, err := routeIngress(ings, "", "/bad/x"); err == nil {
		t.Error("a path that is not an expression: no error")
	}
}

// TestRouteIngressHosts: a host's own rules, else a wildcard's, else the
// rules without a host; the older Ingress keeps a path both have; a
// defaultBackend takes what no path does.
func TestRouteIngressHosts(t *testing.T) {
	ings := []*networkingv1.Ingress{
		testIngress("any", 0, nil, "", testPath{"/", "any", prefix}),
		testIngress("foo", 1, nil, "foo.example.com", testPath{"/x", "foo", prefix}),
		testIngress("wild", 2, nil, "*.example.com", testPath{"/", "wild", prefix}),
		testIngress("newer", 3, nil, "", testPath{"/", "newer", prefix}),
	}
	for _, tc := range []struct{ host, path, want string }{
		{"127.0.0.1", "/a", "any"}, // the older Ingress's "/" wins
		{"foo.example.com", "/x/1", "foo"},
		{"FOO.example.com", "/x", "foo"},
		{"foo.example.com", "/y", ""}, // the host's own rules only
		{"bar.example.com", "/y", "wild"},
		{"a.bar.example.com", "/y", "any"}, // a wildcard is one label
	} {
		r, ok, err := routeIngress(ings, tc.host, tc.path)
		got := ""
		if ok {
			got = r.Backend.Service.Name
		}
		if err != nil || got != tc.want {
			t.Errorf("%s%s: got %q (%v), want %q", tc.host, tc.path, got, err, tc.want)
		}
	}
	def := testIngress("def", 4, nil, "foo.example.com", testPath{"/x", "foo", prefix})
	def.Spec.DefaultBackend = &networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: "fallback"}}
	r, ok, _ := routeIngress(append(ings, def), "foo.example.com", "/y")
	if !ok || r.Backend.Service.Name != "fallback" || r.Path != "/y" {
		t.Errorf("defaultBackend: got %+v %v", r, ok)
	}
}

func TestServedIngress(t *testing.T) {
	class := func(name, controller string, isDefault bool) *networkingv1.IngressClass {
		c := &networkingv1.IngressClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: networkingv1.IngressClassSpec{Controller: controller}}
		if isDefault {
			c.Annotations = map[string]string{annDefaultIngressClass: "true"}
		}
		return c
	}
	withClass := func(name string) *networkingv1.Ingress {
		ing := testIngress("i", 0, nil, "")
		ing.Spec.IngressClassName = &name
		return ing
	}
	withAnnotation := func(v string) *networkingv1.Ingress {
		return testIngress("i", 0, map[string]string{annIngressClass: v}, "")
	}
	ours, oursNotDefault := class(IngressClassName, IngressController, true), class(IngressClassName, IngressController, false)
	other := class("traefik", "traefik.io/ingress-controller", true)
	for _, tc := range []struct {
		name    string
		ing     *networkingv1.Ingress
		classes []*networkingv1.IngressClass
		want    bool
	}{
		{"class nginx", withClass("nginx"), []*networkingv1.IngressClass{oursNotDefault}, true},
		{"another class of ours", withClass("internal"), []*networkingv1.IngressClass{class("internal", IngressController, false)}, true},
		{"another controller's class", withClass("traefik"), []*networkingv1.IngressClass{ours, other}, false},
		{"a class that does not exist", withClass("nginx"), nil, false},
		{"no class, ours default", testIngress("i", 0, nil, ""), []*networkingv1.IngressClass{ours}, true},
		{"no class, ours not default", testIngress("i", 0, nil, ""), []*networkingv1.IngressClass{oursNotDefault, other}, false},
		{"legacy annotation nginx", withAnnotation("nginx"), nil, true},
		{"legacy annotation other", withAnnotation("traefik"), []*networkingv1.IngressClass{ours}, false},
	} {
		if got := servedIngress(tc.ing, tc.classes); got != tc.want {
			t.Errorf("%s: served %v, want %v", tc.name, got, tc.want)
		}
	}
}
