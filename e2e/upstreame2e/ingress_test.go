package upstreame2e

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
)

// Annotations of ingress-nginx that the upstream data uses.
const (
	annotationRewriteTarget = "nginx.ingress.kubernetes.io/rewrite-target"
	annotationUseRegex      = "nginx.ingress.kubernetes.io/use-regex"
)

// ingressProxy stands in for minikube's ingress addon (ingress-nginx), which
// `minikube ip` leads upstream's assert_available_slots to: it serves, on
// 127.0.0.1, the Ingresses of the cluster as ingress-nginx would route them,
// for the requests those scripts make. A request's path is matched against
// every host-less rule of every Ingress (case-insensitive regular
// expressions anchored at the start, as ingress-nginx treats paths when the
// Ingress has a rewrite-target or use-regex annotation; prefixes otherwise),
// rewritten by nginx.ingress.kubernetes.io/rewrite-target ($1, $2 from the
// match), and sent to the backend Service's target port on one of its Ready
// pods, by pod IP: with no kube-proxy, a Service is reached at its pods,
// as the operator's pod-ip endpoint reaches the JobManager.
type ingressProxy struct {
	ctx  context.Context
	kube kubernetes.Interface
	t    *testing.T
}

// startIngressProxy serves p on 127.0.0.1 and returns host:port (what the
// minikube shim prints for `minikube ip`). Stopped by t.Cleanup.
func startIngressProxy(t *testing.T, ctx context.Context, kube kubernetes.Interface) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: &ingressProxy{ctx: ctx, kube: kube, t: t}, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	return l.Addr().String()
}

func (p *ingressProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	target, path, err := p.route(r.Context(), r.URL.Path)
	if err != nil {
		p.t.Logf("ingress stand-in: %s %s: %v", r.Method, r.URL.Path, err)
		http.Error(w, err.Error(), http.StatusNotFound)
		return
	}
	p.t.Logf("ingress stand-in: %s %s -> http://%s%s", r.Method, r.URL.Path, target, path)
	rp := &httputil.ReverseProxy{Rewrite: func(pr *httputil.ProxyRequest) {
		pr.Out.URL.Scheme, pr.Out.URL.Host = "http", target
		pr.Out.URL.Path, pr.Out.URL.RawPath = path, ""
		pr.Out.Host = target
	}}
	rp.ServeHTTP(w, r)
}

// route finds the Ingress path that takes reqPath and returns the backend
// pod's host:port and the rewritten path.
func (p *ingressProxy) route(ctx context.Context, reqPath string) (string, string, error) {
	ings, err := p.kube.NetworkingV1().Ingresses("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return "", "", err
	}
	for _, ing := range ings.Items {
		regex := ing.Annotations[annotationRewriteTarget] != "" || ing.Annotations[annotationUseRegex] == "true"
		for _, rule := range ing.Spec.Rules {
			if rule.Host != "" || rule.HTTP == nil {
				continue // the scripts call the address without a host name
			}
			for _, path := range rule.HTTP.Paths {
				rewritten, ok, err := matchPath(path.Path, regex, ing.Annotations[annotationRewriteTarget], reqPath)
				if err != nil {
					return "", "", fmt.Errorf("Ingress %s/%s: %w", ing.Namespace, ing.Name, err)
				}
				if !ok {
					continue
				}
				if path.Backend.Service == nil {
					return "", "", fmt.Errorf("Ingress %s/%s: no service backend", ing.Namespace, ing.Name)
				}
				target, err := p.endpoint(ctx, ing.Namespace, path.Backend.Service)
				if err != nil {
					return "", "", fmt.Errorf("Ingress %s/%s: %w", ing.Namespace, ing.Name, err)
				}
				return target, rewritten, nil
			}
		}
	}
	return "", "", fmt.Errorf("no Ingress path matches %s", reqPath)
}

// matchPath applies one Ingress path to reqPath as ingress-nginx does and
// returns the path sent upstream.
func matchPath(path string, regex bool, rewrite, reqPath string) (string, bool, error) {
	if path == "" {
		path = "/"
	}
	if !regex {
		if !strings.HasPrefix(reqPath, path) {
			return "", false, nil
		}
		return reqPath, true, nil
	}
	re, err := regexp.Compile("(?i)^" + path)
	if err != nil {
		return "", false, fmt.Errorf("path %q: %w", path, err)
	}
	m := re.FindStringSubmatchIndex(reqPath)
	if m == nil {
		return "", false, nil
	}
	if rewrite == "" {
		return reqPath, true, nil
	}
	// nginx's $1 is Go's ${1} (Go would read "$2abc" as a group named 2abc).
	tmpl := regexp.MustCompile(`\$(\d+)`).ReplaceAllString(rewrite, "$${$1}")
	out := string(re.ExpandString(nil, tmpl, reqPath, m))
	if !strings.HasPrefix(out, "/") {
		out = "/" + out
	}
	return out, true, nil
}

// endpoint is host:port of a Ready pod behind the backend Service.
func (p *ingressProxy) endpoint(ctx context.Context, ns string, b *networkingv1.IngressServiceBackend) (string, error) {
	svc, err := p.kube.CoreV1().Services(ns).Get(ctx, b.Name, metav1.GetOptions{})
	if err != nil {
		return "", err
	}
	var port *corev1.ServicePort
	for i, sp := range svc.Spec.Ports {
		if (b.Port.Name != "" && sp.Name == b.Port.Name) || (b.Port.Name == "" && sp.Port == b.Port.Number) {
			port = &svc.Spec.Ports[i]
		}
	}
	if port == nil {
		return "", fmt.Errorf("service %s/%s has no port %+v", ns, b.Name, b.Port)
	}
	if len(svc.Spec.Selector) == 0 {
		return "", fmt.Errorf("service %s/%s has no selector", ns, b.Name)
	}
	pods, err := p.kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: labels.SelectorFromSet(svc.Spec.Selector).String()})
	if err != nil {
		return "", err
	}
	for _, pod := range pods.Items {
		if pod.DeletionTimestamp != nil || pod.Status.PodIP == "" || !podReady(&pod) {
			continue
		}
		target := port.TargetPort
		if target.Type == intstr.String {
			n := containerPort(&pod, target.StrVal)
			if n == 0 {
				continue
			}
			return net.JoinHostPort(pod.Status.PodIP, strconv.Itoa(int(n))), nil
		}
		if target.IntVal == 0 {
			target = intstr.FromInt32(port.Port)
		}
		return net.JoinHostPort(pod.Status.PodIP, strconv.Itoa(int(target.IntVal))), nil
	}
	return "", fmt.Errorf("service %s/%s has no Ready pod", ns, b.Name)
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func containerPort(p *corev1.Pod, name string) int32 {
	for _, c := range p.Spec.Containers {
		for _, cp := range c.Ports {
			if cp.Name == name {
				return cp.ContainerPort
			}
		}
	}
	return 0
}
