// Package kubernetes is the operator's client for the Kubernetes API groups
// it uses (see package clients for why it is not client-go's).
package kubernetes

import (
	"net/http"

	"k8s.io/client-go/rest"

	"github.com/flinkops/flink-operator/pkg/clients"
	admissionregistrationv1 "github.com/flinkops/flink-operator/pkg/generated/kube/kubernetes/typed/admissionregistration/v1"
	appsv1 "github.com/flinkops/flink-operator/pkg/generated/kube/kubernetes/typed/apps/v1"
	authorizationv1 "github.com/flinkops/flink-operator/pkg/generated/kube/kubernetes/typed/authorization/v1"
	coordinationv1 "github.com/flinkops/flink-operator/pkg/generated/kube/kubernetes/typed/coordination/v1"
	corev1 "github.com/flinkops/flink-operator/pkg/generated/kube/kubernetes/typed/core/v1"
	networkingv1 "github.com/flinkops/flink-operator/pkg/generated/kube/kubernetes/typed/networking/v1"
)

// Interface is what the operator calls; the generated fake clientset
// (pkg/generated/kube/kubernetes/fake) implements it too.
type Interface interface {
	AdmissionregistrationV1() admissionregistrationv1.AdmissionregistrationV1Interface
	AppsV1() appsv1.AppsV1Interface
	AuthorizationV1() authorizationv1.AuthorizationV1Interface
	CoordinationV1() coordinationv1.CoordinationV1Interface
	CoreV1() corev1.CoreV1Interface
	NetworkingV1() networkingv1.NetworkingV1Interface
}

// Clientset holds a typed client per API group.
type Clientset struct {
	admissionregistrationV1 *admissionregistrationv1.AdmissionregistrationV1Client
	appsV1                  *appsv1.AppsV1Client
	authorizationV1         *authorizationv1.AuthorizationV1Client
	coordinationV1          *coordinationv1.CoordinationV1Client
	coreV1                  *corev1.CoreV1Client
	networkingV1            *networkingv1.NetworkingV1Client
}

func (c *Clientset) AdmissionregistrationV1() admissionregistrationv1.AdmissionregistrationV1Interface {
	return c.admissionregistrationV1
}
func (c *Clientset) AppsV1() appsv1.AppsV1Interface { return c.appsV1 }
func (c *Clientset) AuthorizationV1() authorizationv1.AuthorizationV1Interface {
	return c.authorizationV1
}
func (c *Clientset) CoordinationV1() coordinationv1.CoordinationV1Interface { return c.coordinationV1 }
func (c *Clientset) CoreV1() corev1.CoreV1Interface                         { return c.coreV1 }
func (c *Clientset) NetworkingV1() networkingv1.NetworkingV1Interface       { return c.networkingV1 }

// NewForConfig creates the clients; they share one HTTP client.
func NewForConfig(c *rest.Config) (*Clientset, error) {
	return NewForConfigAndClient(c, nil)
}

// NewForConfigAndClient creates the clients on httpClient (nil: one made
// from c).
func NewForConfigAndClient(c *rest.Config, httpClient *http.Client) (*Clientset, error) {
	cfg, hc, err := clients.Prepare(c, httpClient)
	if err != nil {
		return nil, err
	}
	var cs Clientset
	if cs.admissionregistrationV1, err = admissionregistrationv1.NewForConfigAndClient(cfg, hc); err != nil {
		return nil, err
	}
	if cs.appsV1, err = appsv1.NewForConfigAndClient(cfg, hc); err != nil {
		return nil, err
	}
	if cs.authorizationV1, err = authorizationv1.NewForConfigAndClient(cfg, hc); err != nil {
		return nil, err
	}
	if cs.coordinationV1, err = coordinationv1.NewForConfigAndClient(cfg, hc); err != nil {
		return nil, err
	}
	if cs.coreV1, err = corev1.NewForConfigAndClient(cfg, hc); err != nil {
		return nil, err
	}
	if cs.networkingV1, err = networkingv1.NewForConfigAndClient(cfg, hc); err != nil {
		return nil, err
	}
	return &cs, nil
}
