package cluster

import (
	"errors"
	"fmt"
	"maps"
	"regexp"
	"strconv"
	"strings"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
)

// ComponentIngress is the component label of the Ingress (upstream's
// LABEL_COMPONENT_INGRESS).
const ComponentIngress = "ingress"

// IngressName is the Ingress of the Flink web UI: the resource's name.
func IngressName(name string) string { return name }

var (
	namePlaceholder      = regexp.MustCompile(`(?i)\{\{name\}\}`)
	namespacePlaceholder = regexp.MustCompile(`(?i)\{\{namespace\}\}`)
	httpScheme           = regexp.MustCompile(`(?i)^https?://`)
)

// IngressURL is upstream's IngressUtils.getIngressUrl: the template with
// {{name}} and {{namespace}} (any case) replaced, read as an http(s) URL
// ("http://" is prepended when it has no scheme). It gives the host (""
// for a path-only template such as "/{{namespace}}/{{name}}") and the path
// ("" when none), both as java.net.URL would: the path keeps regular
// expressions such as "(/|$)(.*)" as written, and ends at '?' or '#'.
func IngressURL(template, name, namespace string) (host, path string, err error) {
	if template == "" {
		return "", "", errors.New("Ingress template must be defined")
	}
	u := template
	if !httpScheme.MatchString(u) {
		u = "http://" + u
	}
	u = namePlaceholder.ReplaceAllLiteralString(u, name)
	u = namespacePlaceholder.ReplaceAllLiteralString(u, namespace)
	rest := u[strings.Index(u, "://")+3:]
	if i := strings.IndexAny(rest, "#"); i >= 0 {
		rest = rest[:i]
	}
	if i := strings.IndexAny(rest, "?"); i >= 0 {
		rest = rest[:i]
	}
	authority := rest
	if i := strings.IndexByte(rest, '/'); i >= 0 {
		authority, path = rest[:i], rest[i:]
	}
	if i := strings.LastIndexByte(authority, '@'); i >= 0 {
		authority = authority[i+1:]
	}
	host = authority
	port := ""
	if strings.HasPrefix(authority, "[") {
		end := strings.IndexByte(authority, ']')
		if end < 0 {
			return "", "", fmt.Errorf("Unable to process the Ingress template(%s). Error: invalid IPv6 address", template)
		}
		host = authority[:end+1]
		if tail := authority[end+1:]; strings.HasPrefix(tail, ":") {
			port = tail[1:]
		} else if tail != "" {
			return "", "", fmt.Errorf("Unable to process the Ingress template(%s). Error: invalid authority %q", template, authority)
		}
	} else if i := strings.IndexByte(authority, ':'); i >= 0 {
		host, port = authority[:i], authority[i+1:]
	}
	if port != "" {
		if _, perr := strconv.ParseUint(port, 10, 16); perr != nil {
			return "", "", fmt.Errorf("Unable to process the Ingress template(%s). Error: invalid port %q", template, port)
		}
	}
	return host, path, nil
}

// IngressInput is what the Ingress of a Flink cluster is built from.
type IngressInput struct {
	Deployment *v1beta1.FlinkDeployment
	Spec       *v1beta1.IngressSpec
	// Native selects the type label (flink-native-kubernetes or
	// flink-standalone-kubernetes), which the operator's informers filter
	// on.
	Native bool
	// RESTPort is the <name>-rest Service's port (rest.port).
	RESTPort int32
}

// Ingress builds upstream's Ingress for spec.ingress (IngressUtils): named
// after the deployment, one rule whose host and path come from the
// template, path type ImplementationSpecific, backend the <name>-rest
// Service's rest port; className, annotations, labels and tls as given.
// The labels are the spec's plus app, type and component=ingress (the
// operator's own win). Upstream adds no annotation of its own (a rewrite
// for nginx is the user's to give, as in its examples).
func Ingress(in IngressInput) (*networkingv1.Ingress, error) {
	dep := in.Deployment
	labels := CommonLabels(Mode(in.Native), dep.Name)
	return buildIngress(dep.Name, dep.Namespace, OwnerReference(dep), in.Spec, labels, RESTServiceName(dep.Name), in.RESTPort)
}

// BlueGreenIngress builds the Ingress of a FlinkBlueGreenDeployment's
// spec.ingress (upstream's IngressUtils.reconcileBlueGreenIngress): named
// after the blue/green deployment, its host and path from the template with
// the blue/green deployment's name, its backend the active child's REST
// Service; labels the spec's plus component=ingress, as upstream.
func BlueGreenIngress(name, namespace string, owner metav1.OwnerReference, spec *v1beta1.IngressSpec, child string, restPort int32) (*networkingv1.Ingress, error) {
	return buildIngress(name, namespace, owner, spec, nil, RESTServiceName(child), restPort)
}

// buildIngress is one Ingress named name for spec, leading to service:port;
// own labels win over the spec's.
func buildIngress(name, namespace string, owner metav1.OwnerReference, spec *v1beta1.IngressSpec, own map[string]string, service string, port int32) (*networkingv1.Ingress, error) {
	host, path, err := IngressURL(spec.Template, name, namespace)
	if err != nil {
		return nil, err
	}
	labels := maps.Clone(spec.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	maps.Copy(labels, own)
	labels[LabelComponent] = ComponentIngress
	pathType := networkingv1.PathTypeImplementationSpecific
	rule := networkingv1.IngressRule{
		Host: host,
		IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{
			Paths: []networkingv1.HTTPIngressPath{{
				Path:     path,
				PathType: &pathType,
				Backend: networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{
					Name: service,
					Port: networkingv1.ServiceBackendPort{Number: port},
				}},
			}},
		}},
	}
	ing := &networkingv1.Ingress{
		TypeMeta: metav1.TypeMeta{APIVersion: "networking.k8s.io/v1", Kind: "Ingress"},
		ObjectMeta: metav1.ObjectMeta{
			Name:            IngressName(name),
			Namespace:       namespace,
			Labels:          labels,
			Annotations:     maps.Clone(spec.Annotations),
			OwnerReferences: []metav1.OwnerReference{owner},
		},
		Spec: networkingv1.IngressSpec{
			Rules: []networkingv1.IngressRule{rule},
		},
	}
	if spec.ClassName != "" {
		className := spec.ClassName
		ing.Spec.IngressClassName = &className
	}
	for _, t := range spec.TLS {
		ing.Spec.TLS = append(ing.Spec.TLS, *t.DeepCopy())
	}
	setSpecHash(&ing.ObjectMeta, ing.Spec)
	return ing, nil
}
