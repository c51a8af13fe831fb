package localcluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	networkinglisters "k8s.io/client-go/listers/networking/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
)

// An ingress controller, as minikube's ingress addon (ingress-nginx) gives
// a cluster: Start creates the IngressClass IngressClassName (controller
// IngressController, the cluster's default class) and serves, over plain
// HTTP on 127.0.0.1 (Cluster.IngressAddress), the Ingresses of that class
// as ingress-nginx routes them, from the process that owns the cluster
// (like the egress proxy). What "of that class" means follows
// ingress-nginx: spec.ingressClassName naming an IngressClass of
// IngressController, or the legacy annotation kubernetes.io/ingress.class:
// nginx, or no class at all while an IngressClass of IngressController is
// the default (the API server's DefaultIngressClass admission gives new
// Ingresses without a class the default class anyway).
//
// Routing (routeIngress): the rules of the request's host (Host header,
// port dropped; exact, else a wildcard *.domain of one label, else the
// rules without a host) give the locations; if any Ingress on that host has
// nginx.ingress.kubernetes.io/use-regex: "true" or a rewrite-target, every
// path of the host is a case-insensitive regular expression anchored at the
// start, tried longest path first (ingress-nginx's enforced regex);
// otherwise Exact paths match exactly and Prefix and ImplementationSpecific
// paths by prefix (Prefix element-wise), the longest winning. A
// rewrite-target replaces the path ($1..$9 from the path's expression,
// the query kept). The backend Service's port (number or name) goes to a
// Ready pod's IP and target port, round-robin (as the egress proxy: there
// is no kube-proxy, and ingress-nginx too sends to endpoints, not to the
// ClusterIP). No matching path: the Ingress's defaultBackend if it has one,
// else 404; a backend without a Ready pod: 503; a pod that does not answer:
// 502. The original Host header is passed on, with X-Forwarded-For, -Host,
// -Proto, X-Real-IP. Served Ingresses get status.loadBalancer.ingress
// [{ip: 127.0.0.1}], as a controller publishes its address (the port is
// Cluster.IngressAddress's). Not served: TLS (no HTTPS listener, no
// ssl-redirect), other annotations.

const (
	// IngressClassName is the IngressClass Start creates (the default).
	IngressClassName = "nginx"
	// IngressController is its spec.controller, ingress-nginx's.
	IngressController = "k8s.io/ingress-nginx"
	// DefaultIngressPort is the port the ingress listens on (127.0.0.1)
	// when it is free; otherwise any free port.
	DefaultIngressPort = 30080

	annIngressClass        = "kubernetes.io/ingress.class"
	annDefaultIngressClass = "ingressclass.kubernetes.io/is-default-class"
	annRewriteTarget       = "nginx.ingress.kubernetes.io/rewrite-target"
	annUseRegex            = "nginx.ingress.kubernetes.io/use-regex"
)

// ingressServer is the ingress controller: an HTTP server and the status
// writer.
type ingressServer struct {
	addr   string // host:port
	srv    *http.Server
	client kubernetes.Interface
	routes func() *serviceRoutes // the egress proxy's
	logf   func(string, ...any)

	ingresses networkinglisters.IngressLister
	classes   networkinglisters.IngressClassLister
	synced    func() bool
	queue     workqueue.TypedRateLimitingInterface[string]
	factory   informers.SharedInformerFactory
	cancel    context.CancelFunc
	wg        sync.WaitGroup
	stop      sync.Once
}

// listenIngress listens on 127.0.0.1:port, port 0 meaning
// DefaultIngressPort if it is free and any port otherwise; a negative
// port is any port.
func listenIngress(port int) (net.Listener, error) {
	if port == 0 {
		if ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(DefaultIngressPort))); err == nil {
			return ln, nil
		}
	}
	port = max(port, 0)
	return net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
}

// startIngress creates the IngressClass, starts the informers (waiting for
// their sync within ctx) and serves on ln until close.
func startIngress(ctx context.Context, cfg *rest.Config, ln net.Listener, routes func() *serviceRoutes, logf func(string, ...any)) (*ingressServer, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.UserAgent = "localcluster-ingress"
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	_, err = client.NetworkingV1().IngressClasses().Create(ctx, &networkingv1.IngressClass{
		ObjectMeta: metav1.ObjectMeta{
			Name:        IngressClassName,
			Annotations: map[string]string{annDefaultIngressClass: "true"},
			Labels:      map[string]string{"app.kubernetes.io/managed-by": "localcluster"},
		},
		Spec: networkingv1.IngressClassSpec{Controller: IngressController},
	}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, fmt.Errorf("IngressClass %s: %w", IngressClassName, err)
	}
	factory := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithTransform(stripManagedFields))
	ingInformer := factory.Networking().V1().Ingresses().Informer()
	classInformer := factory.Networking().V1().IngressClasses().Informer()
	s := &ingressServer{
		addr: ln.Addr().String(), client: client, routes: routes, logf: logf, factory: factory,
		ingresses: factory.Networking().V1().Ingresses().Lister(),
		classes:   factory.Networking().V1().IngressClasses().Lister(),
		synced:    func() bool { return ingInformer.HasSynced() && classInformer.HasSynced() },
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.NewTypedItemExponentialFailureRateLimiter[string](100*time.Millisecond, 10*time.Second),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "localcluster-ingress"}),
	}
	add := func(obj any) {
		if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
			s.queue.Add(key)
		}
	}
	if _, err := ingInformer.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: add, UpdateFunc: func(_, o any) { add(o) }}); err != nil {
		return nil, err
	}
	// A class change may change which Ingresses are served.
	all := func(any) {
		ings, _ := s.ingresses.List(labels.Everything())
		for _, ing := range ings {
			add(ing)
		}
	}
	if _, err := classInformer.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: all, UpdateFunc: func(_, o any) { all(o) }, DeleteFunc: all}); err != nil {
		return nil, err
	}
	ictx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	factory.Start(ictx.Done())
	s.srv = &http.Server{Handler: s, ReadHeaderTimeout: 30 * time.Second}
	s.wg.Go(func() {
		if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			logf("ingress: %v", err)
		}
	})
	s.wg.Go(func() {
		for s.next(ictx) {
		}
	})
	if !cache.WaitForCacheSync(ctx.Done(), ingInformer.HasSynced, classInformer.HasSynced) {
		s.close()
		return nil, fmt.Errorf("ingress: informers not synced: %w", ctx.Err())
	}
	return s, nil
}

// close stops serving (open requests are cut) and the informers.
func (s *ingressServer) close() {
	if s == nil {
		return
	}
	s.stop.Do(func() {
		s.cancel()
		s.queue.ShutDown()
		s.srv.Close()
		s.wg.Wait()
		s.factory.Shutdown()
	})
}

// next writes the status of one Ingress: the address once served.
func (s *ingressServer) next(ctx context.Context) bool {
	key, quit := s.queue.Get()
	if quit {
		return false
	}
	defer s.queue.Done(key)
	if err := s.syncStatus(ctx, key); err != nil && ctx.Err() == nil {
		s.logf("ingress: status of %s: %v (retrying)", key, err)
		s.queue.AddRateLimited(key)
		return true
	}
	s.queue.Forget(key)
	return true
}

func (s *ingressServer) syncStatus(ctx context.Context, key string) error {
	ns, name, _ := cache.SplitMetaNamespaceKey(key)
	ing, err := s.ingresses.Ingresses(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	classes, err := s.classes.List(labels.Everything())
	if err != nil {
		return err
	}
	want := []networkingv1.IngressLoadBalancerIngress{{IP: "127.0.0.1"}}
	if !servedIngress(ing, classes) || ing.DeletionTimestamp != nil || equalLB(ing.Status.LoadBalancer.Ingress, want) {
		return nil
	}
	ing = ing.DeepCopy()
	ing.Status.LoadBalancer.Ingress = want
	_, err = s.client.NetworkingV1().Ingresses(ns).UpdateStatus(ctx, ing, metav1.UpdateOptions{})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil // gone, or a newer version that comes through the informer
	}
	return err
}

func equalLB(a, b []networkingv1.IngressLoadBalancerIngress) bool {
	return slices.EqualFunc(a, b, func(x, y networkingv1.IngressLoadBalancerIngress) bool {
		return x.IP == y.IP && x.Hostname == y.Hostname && len(x.Ports) == 0 && len(y.Ports) == 0
	})
}

// servedIngress: ing is of this controller's class (see the doc above).
func servedIngress(ing *networkingv1.Ingress, classes []*networkingv1.IngressClass) bool {
	if ing.Spec.IngressClassName != nil {
		for _, c := range classes {
			if c.Name == *ing.Spec.IngressClassName {
				return c.Spec.Controller == IngressController
			}
		}
		return false
	}
	if a, ok := ing.Annotations[annIngressClass]; ok {
		return a == IngressClassName
	}
	for _, c := range classes {
		if c.Spec.Controller == IngressController && c.Annotations[annDefaultIngressClass] == "true" {
			return true
		}
	}
	return false
}

// ingressRoute is where a request goes: the backend and the path sent to it.
type ingressRoute struct {
	Ingress *networkingv1.Ingress
	Backend networkingv1.IngressBackend
	Path    string // the (rewritten) path
	Rule    string // the matching path, or "defaultBackend", for logs
}

// location is one path of a server (a host), as ingress-nginx makes them.
type location struct {
	ing      *networkingv1.Ingress
	path     string
	pathType networkingv1.PathType
	backend  networkingv1.IngressBackend
	rewrite  string
}

// routeIngress picks the route of a request for host (port dropped) and
// path among the served Ingresses, as ingress-nginx would (see the doc
// above); false: none (404).
func routeIngress(ings []*networkingv1.Ingress, host, reqPath string) (ingressRoute, bool, error) {
	// Oldest first: of two Ingresses with the same path, ingress-nginx
	// keeps the older one's.
	ings = slices.Clone(ings)
	slices.SortStableFunc(ings, func(a, b *networkingv1.Ingress) int {
		if c := a.CreationTimestamp.Compare(b.CreationTimestamp.Time); c != 0 {
			return c
		}
		return strings.Compare(a.Namespace+"/"+a.Name, b.Namespace+"/"+b.Name)
	})
	server := serverFor(ings, strings.ToLower(host))
	var locs []location
	seen := map[string]bool{}
	enforceRegex := false
	for _, ing := range ings {
		for _, rule := range ing.Spec.Rules {
			if strings.ToLower(rule.Host) != server || rule.HTTP == nil {
				continue
			}
			for _, p := range rule.HTTP.Paths {
				path := p.Path
				if path == "" {
					path = "/"
				}
				pt := networkingv1.PathTypeImplementationSpecific
				if p.PathType != nil {
					pt = *p.PathType
				}
				if seen[string(pt)+" "+path] {
					continue
				}
				seen[string(pt)+" "+path] = true
				l := location{ing: ing, path: path, pathType: pt, backend: p.Backend, rewrite: ing.Annotations[annRewriteTarget]}
				if l.rewrite != "" || ing.Annotations[annUseRegex] == "true" {
					enforceRegex = true
				}
				locs = append(locs, l)
			}
		}
	}
	// ingress-nginx's order: longer paths first, then reverse lexical.
	slices.SortStableFunc(locs, func(a, b location) int {
		if len(a.path) != len(b.path) {
			return len(b.path) - len(a.path)
		}
		return strings.Compare(b.path, a.path)
	})
	var match *location
	var re *regexp.Regexp
	if enforceRegex {
		for i := range locs {
			r, err := regexp.Compile("(?i)^" + locs[i].path)
			if err != nil {
				return ingressRoute{}, false, fmt.Errorf("Ingress %s/%s: path %q: %w", locs[i].ing.Namespace, locs[i].ing.Name, locs[i].path, err)
			}
			if r.MatchString(reqPath) {
				match, re = &locs[i], r
				break
			}
		}
	} else {
		best := -1
		for i := range locs {
			l := &locs[i]
			switch {
			case l.pathType == networkingv1.PathTypeExact:
				if reqPath == l.path {
					match, best = l, len(reqPath)+1 // an exact match wins
				}
			case l.pathType == networkingv1.PathTypePrefix:
				p := strings.TrimSuffix(l.path, "/")
				if (p == "" || reqPath == p || strings.HasPrefix(reqPath, p+"/")) && len(p) > best {
					match, best = l, len(p)
				}
			default: // ImplementationSpecific: nginx's prefix location
				if strings.HasPrefix(reqPath, l.path) && len(l.path) > best {
					match, best = l, len(l.path)
				}
			}
		}
	}
	if match == nil {
		for _, ing := range ings {
			if ing.Spec.DefaultBackend == nil {
				continue
			}
			has := len(ing.Spec.Rules) == 0 && server == ""
			for _, rule := range ing.Spec.Rules {
				has = has || strings.ToLower(rule.Host) == server
			}
			if has {
				return ingressRoute{Ingress: ing, Backend: *ing.Spec.DefaultBackend, Path: reqPath, Rule: "defaultBackend"}, true, nil
			}
		}
		return ingressRoute{}, false, nil
	}
	out := reqPath
	if match.rewrite != "" {
		out = rewritePath(re, match.rewrite, reqPath)
	}
	return ingressRoute{Ingress: match.ing, Backend: match.backend, Path: out, Rule: match.path}, true, nil
}

// serverFor is the host whose rules take a request for host: an exact
// rule host, else a wildcard one (*.example.com takes a.example.com, not
// a.b.example.com), else "" (the rules without a host).
func serverFor(ings []*networkingv1.Ingress, host string) string {
	wildcard := ""
	for _, ing := range ings {
		for _, rule := range ing.Spec.Rules {
			h := strings.ToLower(rule.Host)
			if h == "" {
				continue
			}
			if h == host {
				return h
			}
			if suffix, ok := strings.CutPrefix(h, "*."); ok && wildcard == "" {
				if label, ok := strings.CutSuffix(host, "."+suffix); ok && label != "" && !strings.Contains(label, ".") {
					wildcard = h
				}
			}
		}
	}
	return wildcard
}

var nginxGroup = regexp.MustCompile(`\$(\d)`)

// rewritePath is nginx's `rewrite <path> <target> break`: the whole path
// becomes target, with $1..$9 the groups of the location's expression.
func rewritePath(re *regexp.Regexp, target, reqPath string) string {
	m := re.FindStringSubmatchIndex(reqPath)
	if m == nil {
		return reqPath
	}
	// nginx's $2 is Go's ${2} (Go would read "$2abc" as a group "2abc").
	tmpl := nginxGroup.ReplaceAllString(target, "$${$1}")
	out := string(re.ExpandString(nil, tmpl, reqPath, m))
	if !strings.HasPrefix(out, "/") {
		out = "/" + out
	}
	return out
}

// ServeHTTP routes a request to its backend pod.
func (s *ingressServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	routes := s.routes()
	if routes == nil || !routes.synced() || !s.synced() {
		http.Error(w, "503 Service Temporarily Unavailable: the ingress's informers are not synced yet", http.StatusServiceUnavailable)
		return
	}
	ings, err := s.ingresses.List(labels.Everything())
	if err == nil {
		var classes []*networkingv1.IngressClass
		if classes, err = s.classes.List(labels.Everything()); err == nil {
			ings = slices.DeleteFunc(ings, func(ing *networkingv1.Ingress) bool { return !servedIngress(ing, classes) })
		}
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	host := r.Host
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	route, ok, err := routeIngress(ings, host, r.URL.Path)
	if err != nil {
		s.logf("ingress: %s %s%s: %v", r.Method, host, r.URL.Path, err)
		http.Error(w, "500 Internal Server Error: "+err.Error(), http.StatusInternalServerError)
		return
	}
	if !ok {
		http.Error(w, "404 Not Found: no Ingress path of class "+IngressClassName+" matches "+host+r.URL.Path, http.StatusNotFound)
		return
	}
	target, err := s.backend(routes, route)
	if err != nil {
		s.logf("ingress: %s %s%s (Ingress %s/%s, path %s): %v", r.Method, host, r.URL.Path, route.Ingress.Namespace, route.Ingress.Name, route.Rule, err)
		http.Error(w, "503 Service Temporarily Unavailable: "+err.Error(), http.StatusServiceUnavailable)
		return
	}
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetXForwarded()
			pr.Out.URL.Scheme, pr.Out.URL.Host = "http", target
			pr.Out.URL.Path, pr.Out.URL.RawPath = route.Path, ""
			pr.Out.Host = pr.In.Host // nginx passes the client's Host on
			if ip, _, err := net.SplitHostPort(pr.In.RemoteAddr); err == nil {
				pr.Out.Header.Set("X-Real-IP", ip)
			}
		},
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			s.logf("ingress: %s %s -> %s%s: %v", r.Method, r.URL.Path, target, route.Path, err)
			http.Error(w, "502 Bad Gateway: "+err.Error(), http.StatusBadGateway)
		},
	}
	rp.ServeHTTP(w, r)
}

// backend is the pod address (IP:target port) for a route's backend.
func (s *ingressServer) backend(routes *serviceRoutes, route ingressRoute) (string, error) {
	b := route.Backend.Service
	if b == nil {
		return "", errors.New("only Service backends are supported")
	}
	ns := route.Ingress.Namespace
	svc, ok := routes.service(ns, b.Name)
	if !ok {
		return "", fmt.Errorf("Service %s/%s does not exist", ns, b.Name)
	}
	i := slices.IndexFunc(svc.Spec.Ports, func(sp corev1.ServicePort) bool {
		if b.Port.Name != "" {
			return sp.Name == b.Port.Name
		}
		return sp.Port == b.Port.Number
	})
	if i < 0 {
		return "", fmt.Errorf("Service %s/%s has no port %s", ns, b.Name, portString(b.Port))
	}
	return routes.pick(svc, svc.Spec.Ports[i])
}

func portString(p networkingv1.ServiceBackendPort) string {
	if p.Name != "" {
		return strconv.Quote(p.Name)
	}
	return strconv.Itoa(int(p.Number))
}
