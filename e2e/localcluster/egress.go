package localcluster

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
)

// The API server's "cluster" egress (webhooks configured by Service,
// aggregated APIs, the kubelet API, the proxy subresources) goes through an
// HTTP CONNECT proxy served here, on a Unix socket, in the process that owns
// the cluster. It plays kube-proxy for the API server alone: a
// ClusterIP:port is sent to a pod of the Service, everything else is dialed
// as asked. Webhooks configured by URL take the "controlplane" egress, left
// direct. Pods do not go through the proxy (the node agent gives them hosts
// files instead), so the loopback pod IPs never need an EndpointSlice.

const (
	// maxSocketPath keeps the socket path under the kernel's limit
	// (sun_path: 108 bytes with the NUL), with room to spare.
	maxSocketPath = 100
	// egressDialTimeout bounds a dial to a destination; the webhook's own
	// timeout (10 s by default) usually ends the attempt first.
	egressDialTimeout = 10 * time.Second
	// egressHeaderTimeout bounds the read of a CONNECT request.
	egressHeaderTimeout = 30 * time.Second
	// clusterIPIndex indexes Services by each of their ClusterIPs.
	clusterIPIndex = "clusterIP"
)

// egressProxy is the HTTP CONNECT proxy behind the API server's "cluster"
// egress selection.
type egressProxy struct {
	socket    string // the Unix socket the API server dials
	removeDir string // a short directory made for the socket, removed by close
	svcNet    *net.IPNet
	logf      func(format string, args ...any)
	ln        net.Listener

	// routes resolves ClusterIPs once the informers run; nil before.
	routes   atomic.Pointer[serviceRoutes]
	informer struct {
		sync.Mutex
		cancel  context.CancelFunc
		factory informers.SharedInformerFactory
		stopped bool
	}

	ctx    context.Context // cancelled by close: ends pending dials
	cancel context.CancelFunc
	mu     sync.Mutex
	conns  map[net.Conn]struct{} // open connections, both sides, closed by close
	closed bool
	wg     sync.WaitGroup // the accept loop and one per connection
}

// startEgressProxy listens on a Unix socket (dir/egress.sock, or a short
// temporary path if that one is too long for a socket) and serves CONNECT
// requests until close. ClusterIPs in svcNet answer 503 until
// startInformers.
func startEgressProxy(dir string, svcNet *net.IPNet, logf func(string, ...any)) (*egressProxy, error) {
	p := &egressProxy{svcNet: svcNet, logf: logf, conns: map[net.Conn]struct{}{}}
	p.socket = filepath.Join(dir, "egress.sock")
	if len(p.socket) > maxSocketPath {
		short, err := shortSocketDir()
		if err != nil {
			return nil, err
		}
		p.removeDir, p.socket = short, filepath.Join(short, "egress.sock")
	} else {
		// A work dir given by Options.Dir may hold the socket of a killed run.
		os.Remove(p.socket)
	}
	ln, err := net.Listen("unix", p.socket)
	if err != nil {
		if p.removeDir != "" {
			os.RemoveAll(p.removeDir)
		}
		return nil, fmt.Errorf("egress proxy: %w", err)
	}
	p.ln = ln
	p.ctx, p.cancel = context.WithCancel(context.Background())
	p.wg.Go(p.acceptLoop)
	return p, nil
}

// shortSocketDir makes a private directory whose socket path fits.
func shortSocketDir() (string, error) {
	for _, base := range []string{os.TempDir(), "/tmp"} {
		if len(filepath.Join(base, "flinkop-egress-0123456789", "egress.sock")) > maxSocketPath {
			continue
		}
		return os.MkdirTemp(base, "flinkop-egress-")
	}
	return "", errors.New("egress proxy: no directory short enough for a Unix socket")
}

// writeConfig writes the API server's --egress-selector-config-file: only
// the "cluster" egress goes through the proxy; control-plane and etcd
// traffic stay direct.
func (p *egressProxy) writeConfig(path string) error {
	cfg := map[string]any{
		"apiVersion": "apiserver.k8s.io/v1beta1",
		"kind":       "EgressSelectorConfiguration",
		"egressSelections": []any{map[string]any{
			"name": "cluster",
			"connection": map[string]any{
				"proxyProtocol": "HTTPConnect",
				"transport":     map[string]any{"uds": map[string]any{"udsName": p.socket}},
			},
		}},
	}
	b, err := json.MarshalIndent(cfg, "", "  ") // JSON is YAML
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// startInformers watches Services and Pods through the API server (ready by
// now) and routes ClusterIPs once both are synced; it waits for that, within
// ctx. apiserver (host:port) is where the default/kubernetes Service leads.
func (p *egressProxy) startInformers(ctx context.Context, cfg *rest.Config, apiserver string) error {
	cfg = rest.CopyConfig(cfg)
	cfg.UserAgent = "localcluster-egress-proxy"
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	// Only selectors, IPs, ports and conditions are read: managed fields
	// would only cost memory in scale tests with thousands of pods.
	factory := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithTransform(stripManagedFields))
	svcInformer := factory.Core().V1().Services().Informer()
	if err := svcInformer.AddIndexers(cache.Indexers{clusterIPIndex: serviceClusterIPs}); err != nil {
		return err
	}
	podInformer := factory.Core().V1().Pods().Informer()
	routes := newServiceRoutes(svcInformer.GetIndexer(), corelisters.NewPodLister(podInformer.GetIndexer()), apiserver,
		func() bool { return svcInformer.HasSynced() && podInformer.HasSynced() })

	p.informer.Lock()
	if p.informer.factory != nil || p.informer.stopped {
		p.informer.Unlock()
		return errors.New("egress proxy: informers already started, or stopped")
	}
	ictx, cancel := context.WithCancel(context.Background())
	p.informer.factory, p.informer.cancel = factory, cancel
	factory.Start(ictx.Done())
	p.routes.Store(routes)
	p.informer.Unlock()

	// Not under the lock, and ended by stopInformers too: a Stop during
	// Start must not wait for a sync that will never come.
	wctx, wcancel := context.WithCancel(ctx)
	defer wcancel()
	defer context.AfterFunc(ictx, wcancel)()
	if !cache.WaitForCacheSync(wctx.Done(), svcInformer.HasSynced, podInformer.HasSynced) {
		return fmt.Errorf("egress proxy: Service and Pod informers not synced: %w", context.Cause(wctx))
	}
	return nil
}

func stripManagedFields(obj any) (any, error) {
	if a, err := meta.Accessor(obj); err == nil {
		a.SetManagedFields(nil)
	}
	return obj, nil
}

func serviceClusterIPs(obj any) ([]string, error) {
	svc, ok := obj.(*corev1.Service)
	if !ok {
		return nil, nil
	}
	ips := svc.Spec.ClusterIPs
	if len(ips) == 0 && svc.Spec.ClusterIP != "" {
		ips = []string{svc.Spec.ClusterIP}
	}
	var out []string
	for _, s := range ips {
		// Normalised, as destinations are: "None" and junk are left out.
		if ip := net.ParseIP(s); ip != nil {
			out = append(out, ip.String())
		}
	}
	return out, nil
}

// stopInformers ends the watches. Stop calls it before the API server goes,
// so that the reflectors do not log its disappearance.
func (p *egressProxy) stopInformers() {
	if p == nil {
		return
	}
	p.informer.Lock()
	defer p.informer.Unlock()
	p.informer.stopped = true
	if p.informer.factory != nil {
		p.informer.cancel()
		p.informer.factory.Shutdown()
	}
}

// close stops accepting, closes every open connection and waits for all of
// the proxy's goroutines.
func (p *egressProxy) close() {
	if p == nil {
		return
	}
	p.stopInformers()
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	p.closed = true
	p.ln.Close()
	p.cancel()
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
	if p.removeDir != "" {
		os.RemoveAll(p.removeDir)
	}
}

// track registers an open connection; false (and the connection closed)
// once the proxy is closing.
func (p *egressProxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		c.Close()
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *egressProxy) untrack(c net.Conn) {
	c.Close()
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
}

func (p *egressProxy) isClosed() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.closed
}

func (p *egressProxy) acceptLoop() {
	for {
		conn, err := p.ln.Accept()
		if err != nil {
			if !p.isClosed() {
				p.logf("egress proxy: accept: %v", err)
			}
			return
		}
		if !p.track(conn) {
			return
		}
		p.wg.Go(func() {
			defer p.untrack(conn)
			p.serve(conn)
		})
	}
}

// serve answers one CONNECT request and then splices the connection to its
// destination until either side is done.
func (p *egressProxy) serve(conn net.Conn) {
	conn.SetReadDeadline(time.Now().Add(egressHeaderTimeout))
	br := bufio.NewReader(conn)
	req, err := http.ReadRequest(br)
	if err != nil {
		if !errors.Is(err, io.EOF) && !p.isClosed() {
			p.logf("egress proxy: reading a CONNECT request: %v", err)
		}
		return
	}
	if req.Method != http.MethodConnect {
		p.logf("egress proxy: %s %s: only CONNECT is served", req.Method, req.RequestURI)
		reply(conn, http.StatusMethodNotAllowed, "only CONNECT is served here")
		return
	}
	dest := req.RequestURI // authority form, host:port
	target, err := p.route(dest)
	if err != nil {
		p.logf("egress proxy: CONNECT %s: %v", dest, err)
		reply(conn, http.StatusServiceUnavailable, err.Error())
		return
	}
	d := net.Dialer{Timeout: egressDialTimeout}
	upstream, err := d.DialContext(p.ctx, "tcp", target)
	if err != nil {
		if !p.isClosed() {
			p.logf("egress proxy: CONNECT %s: %v", dest, err)
		}
		reply(conn, http.StatusBadGateway, err.Error())
		return
	}
	if !p.track(upstream) {
		return
	}
	defer p.untrack(upstream)
	conn.SetReadDeadline(time.Time{})
	if _, err := io.WriteString(conn, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		return
	}
	// br may already hold what the client sent after the request (its TLS
	// ClientHello): read on from it, not from conn.
	splice(conn, br, upstream)
}

// reply answers with status and msg, which is also the reason phrase: the
// API server's error for a failed CONNECT quotes the status line only
// ("proxy error from ... code 503: 503 <msg>"), so that is where a webhook
// failure shows why.
func reply(conn net.Conn, status int, msg string) {
	reason := strings.Join(strings.Fields(msg), " ") // one line
	body := msg + "\n"
	conn.SetWriteDeadline(time.Now().Add(5 * time.Second))
	fmt.Fprintf(conn, "HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s",
		status, reason, len(body), body)
}

// splice copies both ways. When one side ends its stream, the other side's
// write half is closed (TLS and HTTP need the half-close to see the end); an
// error on either side closes both, so that neither copy outlives the
// connection.
func splice(client net.Conn, clientReader io.Reader, upstream net.Conn) {
	var wg sync.WaitGroup
	one := func(dst net.Conn, src io.Reader, srcConn net.Conn) {
		if _, err := io.Copy(dst, src); err != nil {
			dst.Close()
			srcConn.Close()
			return
		}
		if cw, ok := dst.(interface{ CloseWrite() error }); ok {
			cw.CloseWrite()
		} else {
			dst.Close()
		}
	}
	wg.Go(func() { one(upstream, clientReader, client) })
	wg.Go(func() { one(client, upstream, upstream) })
	wg.Wait()
}

// unavailableError is a destination the proxy cannot serve (503).
type unavailableError struct{ msg string }

func (e *unavailableError) Error() string { return e.msg }

func unavailable(format string, args ...any) error {
	return &unavailableError{msg: fmt.Sprintf(format, args...)}
}

// route returns the address to dial for a CONNECT destination: a pod of the
// Service for a ClusterIP, the destination itself for anything outside the
// service range (the node agent's kubelet API at 127.0.0.1, a pod IP).
func (p *egressProxy) route(dest string) (string, error) {
	host, portStr, err := net.SplitHostPort(dest)
	if err != nil {
		return "", unavailable("bad destination %q: %v", dest, err)
	}
	ip := net.ParseIP(host)
	if ip == nil || p.svcNet == nil || !p.svcNet.Contains(ip) {
		return dest, nil
	}
	port, err := strconv.Atoi(portStr)
	if err != nil {
		return "", unavailable("bad port in %q", dest)
	}
	routes := p.routes.Load()
	if routes == nil || !routes.synced() {
		return "", unavailable("ClusterIP %s: the proxy's Service and Pod informers are not synced yet", host)
	}
	return routes.resolve(ip, int32(port))
}

// serviceRoutes picks a pod for a Service port, as kube-proxy would from the
// Service's endpoints: Ready pods that match the selector, have a pod IP and
// are not terminating, taken in turn (round-robin, as kube-proxy's IPVS
// mode; its iptables mode picks at random). Round-robin rather than always
// the same pod: with two replicas of a webhook, both get calls, as on a real
// cluster.
type serviceRoutes struct {
	services  cache.Indexer // Services, indexed by clusterIPIndex
	pods      corelisters.PodLister
	apiserver string // host:port for default/kubernetes
	synced    func() bool

	mu   sync.Mutex
	next map[string]int // next pod, per namespace/name:port
}

func newServiceRoutes(services cache.Indexer, pods corelisters.PodLister, apiserver string, synced func() bool) *serviceRoutes {
	return &serviceRoutes{services: services, pods: pods, apiserver: apiserver, synced: synced, next: map[string]int{}}
}

func (r *serviceRoutes) resolve(ip net.IP, port int32) (string, error) {
	objs, err := r.services.ByIndex(clusterIPIndex, ip.String())
	if err != nil {
		return "", err
	}
	if len(objs) == 0 {
		return "", unavailable("no Service has ClusterIP %s", ip)
	}
	svc := objs[0].(*corev1.Service)
	name := svc.Namespace + "/" + svc.Name
	i := slices.IndexFunc(svc.Spec.Ports, func(sp corev1.ServicePort) bool {
		return sp.Port == port && (sp.Protocol == "" || sp.Protocol == corev1.ProtocolTCP)
	})
	if i < 0 {
		return "", unavailable("Service %s has no TCP port %d", name, port)
	}
	sp := svc.Spec.Ports[i]
	if len(svc.Spec.Selector) == 0 && name == "default/kubernetes" && r.apiserver != "" {
		// Its endpoints are the API server's own, which it does not
		// publish here (--endpoint-reconciler-type=none).
		return r.apiserver, nil
	}
	return r.pick(svc, sp)
}

// service is the Service namespace/name, if the informer has it.
func (r *serviceRoutes) service(namespace, name string) (*corev1.Service, bool) {
	obj, ok, err := r.services.GetByKey(namespace + "/" + name)
	if err != nil || !ok {
		return nil, false
	}
	return obj.(*corev1.Service), true
}

// pick returns pod IP:target port of the next Ready pod (round-robin) that
// serves port sp of svc; an unavailableError when there is none. The
// ingress (ingress.go) sends requests the same way.
func (r *serviceRoutes) pick(svc *corev1.Service, sp corev1.ServicePort) (string, error) {
	name := svc.Namespace + "/" + svc.Name
	if len(svc.Spec.Selector) == 0 {
		return "", unavailable("Service %s has no selector: its endpoints are not tracked here", name)
	}
	sel := labels.SelectorFromSet(svc.Spec.Selector)
	pods, err := r.pods.Pods(svc.Namespace).List(sel)
	if err != nil {
		return "", err
	}
	// Listers return pods in no particular order; round-robin needs one.
	slices.SortFunc(pods, func(a, b *corev1.Pod) int { return strings.Compare(a.Name, b.Name) })
	var addrs []string
	for _, pod := range pods {
		if !podServes(pod, svc.Spec.PublishNotReadyAddresses) {
			continue
		}
		target, ok := targetPort(pod, sp)
		if !ok {
			continue // as the EndpointSlice controller: no such named port in this pod
		}
		addrs = append(addrs, net.JoinHostPort(pod.Status.PodIP, strconv.Itoa(int(target))))
	}
	if len(addrs) == 0 {
		return "", unavailable("no ready pod of Service %s (selector %s) serves port %d", name, sel, sp.Port)
	}
	key := name + ":" + strconv.Itoa(int(sp.Port))
	r.mu.Lock()
	n := r.next[key]
	r.next[key] = n + 1
	r.mu.Unlock()
	return addrs[n%len(addrs)], nil
}

// podServes: the pod would be a ready endpoint of its Service.
func podServes(pod *corev1.Pod, publishNotReady bool) bool {
	if pod.Status.PodIP == "" || pod.DeletionTimestamp != nil ||
		pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		return false
	}
	if publishNotReady {
		return true
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// targetPort resolves a Service port's targetPort for a pod: a number as
// is, a name from the pod's container ports (sidecars' too), none as the
// Service port.
func targetPort(pod *corev1.Pod, sp corev1.ServicePort) (int32, bool) {
	tp := sp.TargetPort
	if tp.Type == intstr.Int {
		if tp.IntVal == 0 {
			return sp.Port, true
		}
		return tp.IntVal, true
	}
	if tp.StrVal == "" {
		return sp.Port, true
	}
	proto := sp.Protocol
	if proto == "" {
		proto = corev1.ProtocolTCP
	}
	containers := slices.Clone(pod.Spec.Containers)
	for _, c := range pod.Spec.InitContainers {
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			containers = append(containers, c)
		}
	}
	for _, c := range containers {
		for _, cp := range c.Ports {
			if cp.Name == tp.StrVal && (cp.Protocol == proto || (cp.Protocol == "" && proto == corev1.ProtocolTCP)) {
				return cp.ContainerPort, true
			}
		}
	}
	return 0, false
}
