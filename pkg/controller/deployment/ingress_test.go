package deployment

import (
	"slices"
	"strings"
	"testing"

	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/cluster"
	"github.com/flinkops/flink-operator/pkg/config"
	"github.com/flinkops/flink-operator/pkg/controller/jobengine"
	"github.com/flinkops/flink-operator/pkg/reasons"
)

func (f *fixture) ingress(name string) *networkingv1.Ingress {
	f.T.Helper()
	ing, err := f.Kube.NetworkingV1().Ingresses(ns).Get(f.Ctx, cluster.IngressName(name), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	} else if err != nil {
		f.T.Fatal(err)
	}
	return ing
}

func ingressHost(ing *networkingv1.Ingress) string { return ing.Spec.Rules[0].Host }

// The Ingress of spec.ingress follows the deployed spec: created with the
// cluster, rebuilt when the template changes (with the upgrade that
// deploys it), repaired when deleted or edited, deleted when spec.ingress
// goes; owned by the FlinkDeployment, so the garbage collector removes it
// with it.
func TestIngressFollowsSpec(t *testing.T) {
	f := newFixture(t)
	app := f.application("app", v1beta1.UpgradeModeSavepoint)
	app.Spec.Ingress = &v1beta1.IngressSpec{Template: "{{name}}.{{namespace}}.example.com", ClassName: "nginx",
		Annotations: map[string]string{"a": "1"}}
	setConf(&app.Spec, config.FlinkRestPort, "9091")
	f.Deploy(app)
	ing := f.ingress("app")
	if ing == nil {
		t.Fatal("no Ingress after the deploy")
	}
	if host := ingressHost(ing); host != "app."+ns+".example.com" {
		t.Errorf("host %q", host)
	}
	backend := ing.Spec.Rules[0].HTTP.Paths[0].Backend.Service
	if backend.Name != "app-rest" || backend.Port.Number != 9091 {
		t.Errorf("backend %+v, want app-rest:9091", backend)
	}
	if !ownedBy(ing, f.Get("app")) || ing.Labels[cluster.LabelType] != cluster.TypeStandalone {
		t.Errorf("owner %+v, labels %v", ing.OwnerReferences, ing.Labels)
	}

	// Drift: an edit by someone else is undone, a deleted Ingress returns.
	edited := ing.DeepCopy()
	edited.Spec.Rules[0].Host = "elsewhere.example.com"
	delete(edited.Annotations, cluster.AnnotationSpecHash)
	if _, err := f.Kube.NetworkingV1().Ingresses(ns).Update(f.Ctx, edited, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.MustSync("app")
	if host := ingressHost(f.ingress("app")); host != "app."+ns+".example.com" {
		t.Errorf("after an edit: host %q, want it restored", host)
	}
	if err := f.Kube.NetworkingV1().Ingresses(ns).Delete(f.Ctx, "app", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	f.MustSync("app")
	if f.ingress("app") == nil {
		t.Fatal("deleted Ingress not recreated")
	}

	// A template change (an upgrade, as upstream) reaches the Ingress.
	f.edit("app", func(s *v1beta1.FlinkDeploymentSpec) {
		s.Ingress.Template = "flink.example.com/{{namespace}}/{{name}}(/|$)(.*)"
		s.Ingress.Annotations = map[string]string{"b": "2"}
	})
	f.Until("app", 20, "template change deployed", func(d *v1beta1.FlinkDeployment) bool {
		ing := f.ingress("app")
		return running(d) && ing != nil && ingressHost(ing) == "flink.example.com"
	})
	ing = f.ingress("app")
	if p := ing.Spec.Rules[0].HTTP.Paths[0].Path; p != "/"+ns+"/app(/|$)(.*)" {
		t.Errorf("path %q", p)
	}
	if ing.Annotations["b"] != "2" || ing.Annotations["a"] != "" {
		t.Errorf("annotations %v: want the new spec's only", ing.Annotations)
	}

	// spec.ingress removed: the Ingress goes.
	f.edit("app", func(s *v1beta1.FlinkDeploymentSpec) { s.Ingress = nil })
	f.Until("app", 20, "Ingress removed", func(d *v1beta1.FlinkDeployment) bool {
		return running(d) && f.ingress("app") == nil
	})
}

// An Ingress of the same name that the FlinkDeployment does not control
// is left alone and reported.
func TestIngressNotOwned(t *testing.T) {
	other := &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: ns,
		Labels: map[string]string{cluster.LabelType: cluster.TypeStandalone}}}
	f := newFixture(t)
	if _, err := f.Kube.NetworkingV1().Ingresses(ns).Create(f.Ctx, other, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	app := f.application("app", v1beta1.UpgradeModeStateless)
	app.Spec.Ingress = &v1beta1.IngressSpec{Template: "{{name}}.example.com"}
	f.Create(app)
	f.Until("app", 10, "error reported", func(d *v1beta1.FlinkDeployment) bool {
		return strings.Contains(jobengine.ErrorMessage(d.Status.Error), "Ingress app exists and is not controlled")
	})
	if ing := f.ingress("app"); len(ing.Spec.Rules) != 0 || len(ing.OwnerReferences) != 0 {
		t.Errorf("foreign Ingress changed: %+v", ing)
	}
}

// kubernetes.operator.ingress.manage=false: no Ingress, and upstream's
// Warning event when a cluster with spec.ingress is deployed.
func TestIngressManageOff(t *testing.T) {
	f := newFixture(t)
	f.Config[config.KeyIngressManage] = "false"
	f.Restart()
	if f.ctrl.owned.forNamespace("").ingresses != nil {
		t.Error("Ingress informer requested with ingress.manage=false")
	}
	app := f.application("app", v1beta1.UpgradeModeStateless)
	app.Spec.Ingress = &v1beta1.IngressSpec{Template: "{{name}}.example.com"}
	f.Deploy(app)
	if f.ingress("app") != nil {
		t.Error("Ingress created with ingress.manage=false")
	}
	events := f.Events()
	warnings := slices.DeleteFunc(events, func(e string) bool { return !strings.HasPrefix(e, "Warning "+reasons.ReasonIngressManagement+" ") })
	if len(warnings) != 1 {
		t.Errorf("IngressManagement warnings %q, want one (at the deploy)", warnings)
	}
}

// A template that is not a URL is rejected as upstream's validator does
// (pkg/validation, also the webhook's check): nothing is deployed.
func TestIngressTemplateInvalid(t *testing.T) {
	f := newFixture(t)
	app := f.application("app", v1beta1.UpgradeModeStateless)
	app.Spec.Ingress = &v1beta1.IngressSpec{Template: "example.com:port"}
	f.Create(app)
	f.Until("app", 5, "validation error", func(d *v1beta1.FlinkDeployment) bool {
		return strings.Contains(jobengine.ErrorMessage(d.Status.Error), "Unable to process the Ingress template(example.com:port)")
	})
	if _, err := f.Kube.AppsV1().Deployments(ns).Get(f.Ctx, "app", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("JobManager Deployment: err %v, want none deployed", err)
	}
	if f.ingress("app") != nil {
		t.Error("Ingress created for an invalid template")
	}
}
