package deploymente2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	flinkjvm "github.com/flinkops/flink-operator/e2e/flink"
	"github.com/flinkops/flink-operator/e2e/framework"
	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/cluster"
)

// TestIngress is issue 18 item 4's acceptance test, against the real API
// server (no ingress controller: the Ingress object is what is checked):
// a session cluster (newest pinned Flink, no TaskManagers) with
// spec.ingress gets its Ingress (host from the template, backend the
// <name>-rest Service's port, owned by the FlinkDeployment, labelled so
// the operator's informers see it); a template change (an upgrade, as
// upstream) rewrites it; removing spec.ingress deletes it; added back, it
// goes with the FlinkDeployment (the garbage collector, through its owner
// reference).
func TestIngress(t *testing.T) {
	if framework.Kind() {
		t.Skip("local provider only, as TestFlinkDeploymentLifecycle")
	}
	begin := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	versions := flinkjvm.Versions()
	version := versions[len(versions)-1]
	s := &suite{Env: framework.Setup(t, ctx, framework.Options{Name: "ingresse2e"})}
	r := s.newRun(t, version, "ingress")
	fl := flavours[version]

	// waitIngress waits for the Ingress to satisfy ok (nil = absent).
	waitIngress := func(timeout time.Duration, what string, ok func(*networkingv1.Ingress) bool) *networkingv1.Ingress {
		t.Helper()
		var got *networkingv1.Ingress
		r.WaitFor(t, timeout, what, func() (bool, string) {
			ing, err := r.Kube.NetworkingV1().Ingresses(r.ns).Get(r.Ctx, cluster.IngressName(name), metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				got = nil
				return ok(nil), "no Ingress"
			} else if err != nil {
				return false, err.Error()
			}
			got = ing
			return ok(ing), fmt.Sprintf("Ingress rules %+v, annotations %v", ing.Spec.Rules, ing.Annotations)
		})
		return got
	}
	host := func(ing *networkingv1.Ingress) string {
		if ing == nil || len(ing.Spec.Rules) == 0 {
			return ""
		}
		return ing.Spec.Rules[0].Host
	}
	// deployed waits until the cluster runs the applied generation.
	deployed := func(what string) *v1beta1.FlinkDeployment {
		t.Helper()
		gen := int64(0)
		if d, err := r.Flink.FlinkV1beta1().FlinkDeployments(r.ns).Get(r.Ctx, name, metav1.GetOptions{}); err == nil {
			gen = d.Generation
		}
		var got *v1beta1.FlinkDeployment
		r.WaitFor(t, 3*time.Minute, what, func() (bool, string) {
			d, err := r.Flink.FlinkV1beta1().FlinkDeployments(r.ns).Get(r.Ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			got = d
			st := d.Status
			return st.ObservedGeneration >= gen && st.JobManagerDeploymentStatus == v1beta1.JobManagerReady &&
					st.LifecycleState == v1beta1.LifecycleStable,
				fmt.Sprintf("generation %d, observed %d, %s, jm %s, error %q", d.Generation, st.ObservedGeneration, st.LifecycleState, st.JobManagerDeploymentStatus, st.Error)
		})
		return got
	}

	// 1. Created with the cluster.
	t0 := time.Now()
	r.apply(sessionYAML(r.ns, fl.image, fl.version, `
  ingress:
    template: "{{name}}.{{namespace}}.flink.example.com"
    className: nginx
    labels:
      team: a`))
	ing := waitIngress(time.Minute, "Ingress created", func(i *networkingv1.Ingress) bool {
		return host(i) == name+"."+r.ns+".flink.example.com"
	})
	r.record("apply → Ingress created", time.Since(t0))
	dep := deployed("session cluster ready")
	backend := ing.Spec.Rules[0].HTTP.Paths[0].Backend.Service
	if backend == nil || backend.Name != cluster.RESTServiceName(name) || backend.Port.Number != cluster.DefaultRESTPort {
		t.Errorf("backend %+v, want %s:%d", backend, cluster.RESTServiceName(name), cluster.DefaultRESTPort)
	}
	if c := ing.Spec.IngressClassName; c == nil || *c != "nginx" {
		t.Errorf("ingressClassName %v, want nginx", c)
	}
	if ing.Labels["team"] != "a" || ing.Labels[cluster.LabelType] != cluster.TypeStandalone || ing.Labels[cluster.LabelComponent] != cluster.ComponentIngress {
		t.Errorf("labels %v", ing.Labels)
	}
	if ref := metav1.GetControllerOf(ing); ref == nil || ref.Kind != "FlinkDeployment" || ref.UID != dep.UID {
		t.Errorf("controller %+v, want FlinkDeployment %s", ref, dep.UID)
	}
	r.logKubectl("get", "ingress", "-n", r.ns, "-o", "wide")

	// 2. A template change (path-based, with upstream's nginx rewrite
	// annotation as its docs give it) rewrites it.
	t0 = time.Now()
	r.apply(sessionYAML(r.ns, fl.image, fl.version, `
  ingress:
    template: "flink.example.com/{{namespace}}/{{name}}(/|$)(.*)"
    className: nginx
    annotations:
      nginx.ingress.kubernetes.io/rewrite-target: "/$2"`))
	ing = waitIngress(3*time.Minute, "Ingress updated to the new template", func(i *networkingv1.Ingress) bool {
		return host(i) == "flink.example.com"
	})
	r.record("template change → Ingress updated", time.Since(t0))
	if p := ing.Spec.Rules[0].HTTP.Paths[0].Path; p != "/"+r.ns+"/"+name+"(/|$)(.*)" {
		t.Errorf("path %q", p)
	}
	if ing.Annotations["nginx.ingress.kubernetes.io/rewrite-target"] != "/$2" || ing.Labels["team"] != "" {
		t.Errorf("annotations %v, labels %v: want the new spec's", ing.Annotations, ing.Labels)
	}
	deployed("new template deployed")
	r.logKubectl("get", "ingress", "-n", r.ns, "-o", "wide")

	// 3. spec.ingress removed: the Ingress is deleted.
	t0 = time.Now()
	r.apply(sessionYAML(r.ns, fl.image, fl.version, ""))
	waitIngress(3*time.Minute, "Ingress deleted", func(i *networkingv1.Ingress) bool { return i == nil })
	r.record("spec.ingress removed → Ingress deleted", time.Since(t0))
	deployed("cluster without ingress deployed")

	// 4. Added back, then the FlinkDeployment deleted: the Ingress goes too.
	r.apply(sessionYAML(r.ns, fl.image, fl.version, `
  ingress:
    template: "/{{namespace}}/{{name}}"`))
	waitIngress(3*time.Minute, "Ingress created again", func(i *networkingv1.Ingress) bool {
		return i != nil && len(i.Spec.Rules) == 1 && i.Spec.Rules[0].Host == "" && i.Spec.Rules[0].HTTP.Paths[0].Path == "/"+r.ns+"/"+name
	})
	deployed("cluster with ingress deployed again")
	t0 = time.Now()
	r.kubectl("delete", "flinkdeployment", name, "-n", r.ns, "--wait=false")
	waitIngress(2*time.Minute, "Ingress gone with the FlinkDeployment", func(i *networkingv1.Ingress) bool { return i == nil })
	r.record("FlinkDeployment deleted → Ingress gone", time.Since(t0))
	r.waitClusterGone(2*time.Minute, true)

	var table strings.Builder
	for _, tm := range s.timings {
		fmt.Fprintf(&table, "\n  %-7s %-45s %s", tm.version, tm.what, tm.d.Round(100*time.Millisecond))
	}
	t.Logf("measured durations:%s", table.String())
	t.Logf("TestIngress: %s in all", time.Since(begin).Round(time.Second))
}

// sessionYAML is a session cluster without TaskManagers (nothing runs on
// it), with extra appended to its spec.
func sessionYAML(ns, image string, version v1beta1.FlinkVersion, extra string) string {
	return fmt.Sprintf(`apiVersion: flink.apache.org/v1beta1
kind: FlinkDeployment
metadata:
  name: %s
  namespace: %s
spec:
  mode: standalone
  image: %s
  flinkVersion: %s
  flinkConfiguration:
    jobmanager.memory.process.size: 768m
  jobManager:
    replicas: 1
  taskManager:
    replicas: 0%s
`, name, ns, image, version, extra)
}
