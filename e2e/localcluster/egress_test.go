package localcluster

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
)

// routeFixture is a fake Service and Pod cache for serviceRoutes.
type routeFixture struct {
	services, pods cache.Indexer
}

func newRouteFixture(t *testing.T) *routeFixture {
	f := &routeFixture{
		services: cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{clusterIPIndex: serviceClusterIPs}),
		pods:     cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}),
	}
	return f
}

func (f *routeFixture) add(t *testing.T, objs ...any) {
	t.Helper()
	for _, o := range objs {
		var err error
		switch o.(type) {
		case *corev1.Service:
			err = f.services.Add(o)
		case *corev1.Pod:
			err = f.pods.Add(o)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

func (f *routeFixture) routes(synced bool) *serviceRoutes {
	return newServiceRoutes(f.services, corelisters.NewPodLister(f.pods), "127.0.0.1:6443", func() bool { return synced })
}

func service(ns, name, ip string, selector map[string]string, ports ...corev1.ServicePort) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       corev1.ServiceSpec{ClusterIP: ip, ClusterIPs: []string{ip}, Selector: selector, Ports: ports},
	}
}

type podOpt func(*corev1.Pod)

func notReady(p *corev1.Pod) { p.Status.Conditions[0].Status = corev1.ConditionFalse }
func terminating(p *corev1.Pod) {
	now := metav1.Now()
	p.DeletionTimestamp = &now
}
func noIP(p *corev1.Pod) { p.Status.PodIP = "" }
func ports(ps ...corev1.ContainerPort) podOpt {
	return func(p *corev1.Pod) { p.Spec.Containers[0].Ports = ps }
}

func pod(ns, name, ip string, labels map[string]string, opts ...podOpt) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "x"}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: ip,
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}},
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

var webLabels = map[string]string{"app": "web"}

func svcPort(port int32, target intstr.IntOrString) corev1.ServicePort {
	return corev1.ServicePort{Port: port, TargetPort: target, Protocol: corev1.ProtocolTCP}
}

func testProxy(routes *serviceRoutes) *egressProxy {
	_, svcNet, _ := net.ParseCIDR(ServiceCIDR)
	p := &egressProxy{svcNet: svcNet}
	if routes != nil {
		p.routes.Store(routes)
	}
	return p
}

func wantUnavailable(t *testing.T, dest string, got string, err error, wantMsg string) {
	t.Helper()
	var ue *unavailableError
	if !errors.As(err, &ue) || !strings.Contains(ue.msg, wantMsg) {
		t.Errorf("route(%s) = %q, %v; want a 503 saying %q", dest, got, err, wantMsg)
	}
}

// TestEgressRouteService: a ClusterIP:port leads to the one pod kube-proxy
// would pick: Ready, selected, in the Service's namespace, with a pod IP,
// not terminating; at its targetPort.
func TestEgressRouteService(t *testing.T) {
	f := newRouteFixture(t)
	f.add(t,
		service("apps", "web", "10.0.0.10", webLabels, svcPort(443, intstr.FromInt32(8443))),
		pod("apps", "web-a-notready", "127.100.0.1", webLabels, notReady),
		pod("apps", "web-b-ready", "127.100.0.2", webLabels),
		pod("apps", "web-c-terminating", "127.100.0.3", webLabels, terminating),
		pod("apps", "web-d-noip", "", webLabels, noIP),
		pod("apps", "web-e-failed", "127.100.0.5", webLabels, func(p *corev1.Pod) { p.Status.Phase = corev1.PodFailed }),
		pod("other", "web-f-othernamespace", "127.100.0.6", webLabels),
		pod("apps", "web-g-otherlabels", "127.100.0.7", map[string]string{"app": "api"}),
	)
	p := testProxy(f.routes(true))
	for range 3 {
		got, err := p.route("10.0.0.10:443")
		if err != nil || got != "127.100.0.2:8443" {
			t.Fatalf("route(10.0.0.10:443) = %q, %v; want 127.100.0.2:8443 (the only serving pod)", got, err)
		}
	}
	got, err := p.route("10.0.0.10:80")
	wantUnavailable(t, "10.0.0.10:80", got, err, "Service apps/web has no TCP port 80")
	got, err = p.route("10.0.0.99:443")
	wantUnavailable(t, "10.0.0.99:443", got, err, "no Service has ClusterIP 10.0.0.99")
}

// TestEgressRouteRoundRobin: with two serving pods, calls alternate.
func TestEgressRouteRoundRobin(t *testing.T) {
	f := newRouteFixture(t)
	f.add(t,
		service("apps", "web", "10.0.0.10", webLabels, svcPort(443, intstr.FromInt32(8443))),
		pod("apps", "web-2", "127.100.0.2", webLabels),
		pod("apps", "web-1", "127.100.0.1", webLabels),
	)
	p := testProxy(f.routes(true))
	var got []string
	for range 4 {
		addr, err := p.route("10.0.0.10:443")
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, addr)
	}
	want := []string{"127.100.0.1:8443", "127.100.0.2:8443", "127.100.0.1:8443", "127.100.0.2:8443"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("routes = %v, want %v", got, want)
	}
}

// TestEgressRouteTargetPort: a named targetPort is the container port of
// that name in each pod (pods without it are left out); none means the
// Service port.
func TestEgressRouteTargetPort(t *testing.T) {
	always := corev1.ContainerRestartPolicyAlways
	f := newRouteFixture(t)
	f.add(t,
		service("apps", "web", "10.0.0.10", webLabels,
			svcPort(443, intstr.FromString("https")), svcPort(8081, intstr.IntOrString{})),
		pod("apps", "web-a", "127.100.0.1", webLabels, ports(
			corev1.ContainerPort{Name: "http", ContainerPort: 8080},
			corev1.ContainerPort{Name: "https", ContainerPort: 9443, Protocol: corev1.ProtocolUDP},
		)),
		pod("apps", "web-b", "127.100.0.2", webLabels, ports(corev1.ContainerPort{Name: "https", ContainerPort: 9443})),
	)
	p := testProxy(f.routes(true))
	for range 2 {
		if got, err := p.route("10.0.0.10:443"); err != nil || got != "127.100.0.2:9443" {
			t.Fatalf("named targetPort: route = %q, %v; want 127.100.0.2:9443 (web-a's https port is UDP)", got, err)
		}
	}
	if got, err := p.route("10.0.0.10:8081"); err != nil || (got != "127.100.0.1:8081" && got != "127.100.0.2:8081") {
		t.Errorf("empty targetPort: route = %q, %v; want a pod at 8081", got, err)
	}

	// A sidecar (restartable init container) names ports too.
	f.add(t,
		service("apps", "side", "10.0.0.11", map[string]string{"app": "side"}, svcPort(443, intstr.FromString("proxy"))),
		pod("apps", "side-a", "127.100.0.3", map[string]string{"app": "side"}, func(p *corev1.Pod) {
			p.Spec.InitContainers = []corev1.Container{{Name: "proxy", RestartPolicy: &always,
				Ports: []corev1.ContainerPort{{Name: "proxy", ContainerPort: 15443}}}}
		}),
	)
	if got, err := p.route("10.0.0.11:443"); err != nil || got != "127.100.0.3:15443" {
		t.Errorf("sidecar port: route = %q, %v; want 127.100.0.3:15443", got, err)
	}
}

// TestEgressRouteNoReadyPod: 503 with a message naming the Service, until a
// pod is ready again; publishNotReadyAddresses takes not-ready pods too.
func TestEgressRouteNoReadyPod(t *testing.T) {
	f := newRouteFixture(t)
	web := pod("apps", "web-a", "127.100.0.1", webLabels, notReady)
	f.add(t, service("apps", "web", "10.0.0.10", webLabels, svcPort(443, intstr.FromInt32(8443))), web)
	p := testProxy(f.routes(true))
	got, err := p.route("10.0.0.10:443")
	wantUnavailable(t, "10.0.0.10:443", got, err, "no ready pod of Service apps/web (selector app=web) serves port 443")

	ready := web.DeepCopy()
	ready.Status.Conditions[0].Status = corev1.ConditionTrue
	if err := f.pods.Update(ready); err != nil {
		t.Fatal(err)
	}
	if got, err := p.route("10.0.0.10:443"); err != nil || got != "127.100.0.1:8443" {
		t.Errorf("after the pod is ready: route = %q, %v", got, err)
	}

	notReadySvc := service("apps", "hl", "10.0.0.12", webLabels, svcPort(443, intstr.FromInt32(8443)))
	notReadySvc.Spec.PublishNotReadyAddresses = true
	f.add(t, notReadySvc, pod("apps", "web-b", "127.100.0.2", webLabels, notReady))
	for range 2 {
		if got, err := p.route("10.0.0.12:443"); err != nil || (got != "127.100.0.1:8443" && got != "127.100.0.2:8443") {
			t.Errorf("publishNotReadyAddresses: route = %q, %v", got, err)
		}
	}

	f.add(t, service("apps", "manual", "10.0.0.13", nil, svcPort(443, intstr.FromInt32(8443))))
	got, err = p.route("10.0.0.13:443")
	wantUnavailable(t, "10.0.0.13:443", got, err, "Service apps/manual has no selector")
}

// TestEgressRoutePassThrough: what is not in the service range is dialed as
// asked (the kubelet API at 127.0.0.1, pod IPs, names), even before
// the informers run; a ClusterIP before they have synced is a 503.
func TestEgressRoutePassThrough(t *testing.T) {
	f := newRouteFixture(t)
	f.add(t, service("default", "kubernetes", "10.0.0.1", nil, svcPort(443, intstr.FromInt32(6443))))
	for _, p := range []*egressProxy{testProxy(nil), testProxy(f.routes(false)), testProxy(f.routes(true))} {
		for _, dest := range []string{"127.0.0.1:10250", "127.100.3.4:8081", "localhost:9443", "[::1]:443", "10.0.1.1:443"} {
			if got, err := p.route(dest); err != nil || got != dest {
				t.Errorf("route(%s) = %q, %v; want it unchanged", dest, got, err)
			}
		}
	}
	for _, p := range []*egressProxy{testProxy(nil), testProxy(f.routes(false))} {
		got, err := p.route("10.0.0.1:443")
		wantUnavailable(t, "10.0.0.1:443", got, err, "not synced yet")
	}
	// default/kubernetes has no selector: its endpoint is the API server.
	if got, err := testProxy(f.routes(true)).route("10.0.0.1:443"); err != nil || got != "127.0.0.1:6443" {
		t.Errorf("route(kubernetes) = %q, %v; want the API server", got, err)
	}
}

// connect speaks to the proxy as the API server's egress dialer does
// (k8s.io/apiserver/pkg/server/egressselector tunnelHTTPConnect): CONNECT,
// one response, and no byte after it before the client speaks.
func connect(t *testing.T, socket, dest string) (net.Conn, *http.Response, string) {
	t.Helper()
	conn, err := net.Dial("unix", socket)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(conn, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", dest, "127.0.0.1")
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		conn.Close()
		t.Fatalf("CONNECT %s: %v", dest, err)
	}
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(resp.Body)
		conn.Close()
		return nil, resp, string(body)
	}
	if br.Buffered() > 0 {
		t.Fatalf("CONNECT %s: %d bytes after the response (the API server refuses that)", dest, br.Buffered())
	}
	return conn, resp, ""
}

// get sends one HTTP request over a tunnel and returns the body.
func get(t *testing.T, conn net.Conn) string {
	t.Helper()
	fmt.Fprintf(conn, "GET /hello HTTP/1.1\r\nHost: x\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// TestEgressProxy: the proxy on its socket tunnels to a Service's pod and
// to a direct destination, answers 503/502/405 with the reason in the
// status line, and close ends open tunnels and every goroutine.
func TestEgressProxy(t *testing.T) {
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "hello from %s", r.Host)
	}))
	defer backend.Close()
	backendPort := backend.Listener.Addr().(*net.TCPAddr).Port
	baseline := runtime.NumGoroutine()

	_, svcNet, _ := net.ParseCIDR(ServiceCIDR)
	var logs lockedBuilder
	logf := func(format string, args ...any) { logs.printf(format+"\n", args...) }
	p, err := startEgressProxy(t.TempDir(), svcNet, logf)
	if err != nil {
		t.Fatal(err)
	}
	defer p.close()
	f := newRouteFixture(t)
	f.add(t,
		service("apps", "web", "10.0.0.10", webLabels, svcPort(443, intstr.FromInt32(int32(backendPort)))),
		pod("apps", "web-a", "127.0.0.1", webLabels),
		service("apps", "down", "10.0.0.11", map[string]string{"app": "down"}, svcPort(443, intstr.FromInt32(8443))),
	)

	// Before the informers: a ClusterIP is a 503, a direct address works.
	if _, resp, _ := connect(t, p.socket, "10.0.0.10:443"); resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("ClusterIP before the informers: %s, want 503", resp.Status)
	}
	p.routes.Store(f.routes(true))

	conn, resp, body := connect(t, p.socket, "10.0.0.10:443")
	if conn == nil {
		t.Fatalf("CONNECT to the Service: %s: %s", resp.Status, body)
	}
	if got := get(t, conn); got != "hello from x" {
		t.Errorf("through the Service: %q", got)
	}
	conn.Close()

	direct := "127.0.0.1:" + strconv.Itoa(backendPort)
	conn, resp, body = connect(t, p.socket, direct)
	if conn == nil {
		t.Fatalf("CONNECT %s: %s: %s", direct, resp.Status, body)
	}
	if got := get(t, conn); got != "hello from x" {
		t.Errorf("direct: %q", got)
	}

	_, resp, body = connect(t, p.socket, "10.0.0.11:443")
	if resp.StatusCode != http.StatusServiceUnavailable ||
		!strings.Contains(resp.Status, "no ready pod of Service apps/down") || !strings.Contains(body, "no ready pod of Service apps/down") {
		t.Errorf("no ready pod: %s: %q", resp.Status, body)
	}

	refused, err := FreePort()
	if err != nil {
		t.Fatal(err)
	}
	if _, resp, body := connect(t, p.socket, "127.0.0.1:"+strconv.Itoa(refused)); resp.StatusCode != http.StatusBadGateway || !strings.Contains(body, "refused") {
		t.Errorf("refused: %s: %q", resp.Status, body)
	}

	raw, err := net.Dial("unix", p.socket)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(raw, "GET http://example.com/ HTTP/1.1\r\nHost: example.com\r\n\r\n")
	if resp, err := http.ReadResponse(bufio.NewReader(raw), nil); err != nil || resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("GET through the proxy: %v, %v; want 405", resp, err)
	}
	raw.Close()

	for _, want := range []string{"CONNECT 10.0.0.11:443: no ready pod", "CONNECT 127.0.0.1:" + strconv.Itoa(refused) + ": dial tcp", "GET http://example.com/: only CONNECT"} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("log lacks %q:\n%s", want, logs.String())
		}
	}

	// The tunnel still open is closed by close, which returns once every
	// goroutine of the proxy is done.
	done := make(chan struct{})
	go func() { p.close(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("close did not return with a tunnel open")
	}
	conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	if n, err := conn.Read(make([]byte, 1)); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("open tunnel after close: read %d, %v; want it closed", n, err)
	}
	conn.Close()
	if _, err := os.Stat(p.socket); !os.IsNotExist(err) {
		t.Errorf("socket %s left after close: %v", p.socket, err)
	}
	backend.CloseClientConnections()
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > baseline && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > baseline {
		buf := make([]byte, 1<<16)
		t.Errorf("%d goroutines after close, %d before the proxy:\n%s", n, baseline, buf[:runtime.Stack(buf, true)])
	}
}

// TestEgressProxyHalfClose: a side that ends its stream is seen ending by
// the other, which can still answer (a request sent in full, then the reply).
func TestEgressProxyHalfClose(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		b, _ := io.ReadAll(c) // until the client's half-close
		c.Write([]byte("got " + string(b)))
	}()
	_, svcNet, _ := net.ParseCIDR(ServiceCIDR)
	p, err := startEgressProxy(t.TempDir(), svcNet, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	defer p.close()
	conn, resp, body := connect(t, p.socket, ln.Addr().String())
	if conn == nil {
		t.Fatalf("CONNECT: %s: %s", resp.Status, body)
	}
	defer conn.Close()
	conn.Write([]byte("ping"))
	if err := conn.(*net.UnixConn).CloseWrite(); err != nil {
		t.Fatal(err)
	}
	conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	if b, err := io.ReadAll(conn); err != nil || string(b) != "got ping" {
		t.Errorf("after a half-close: %q, %v; want %q", b, err, "got ping")
	}
}

// lockedBuilder collects the proxy's log lines from its goroutines.
type lockedBuilder struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuilder) printf(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	fmt.Fprintf(&l.b, format, args...)
}

func (l *lockedBuilder) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestEgressSocketPath: a work dir too long for a socket path gets a short
// private directory, removed by close; the configuration names the socket.
func TestEgressSocketPath(t *testing.T) {
	long := filepath.Join(t.TempDir(), strings.Repeat("d", 120))
	if err := os.MkdirAll(long, 0o755); err != nil {
		t.Fatal(err)
	}
	_, svcNet, _ := net.ParseCIDR(ServiceCIDR)
	p, err := startEgressProxy(long, svcNet, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.socket) > maxSocketPath || p.removeDir == "" || !strings.HasPrefix(p.socket, p.removeDir) {
		t.Errorf("socket %q (dir %q) for work dir of %d bytes", p.socket, p.removeDir, len(long))
	}
	cfgPath := filepath.Join(long, "egress-selector.yaml")
	if err := p.writeConfig(cfgPath); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		APIVersion       string `json:"apiVersion"`
		Kind             string `json:"kind"`
		EgressSelections []struct {
			Name       string `json:"name"`
			Connection struct {
				ProxyProtocol string `json:"proxyProtocol"`
				Transport     struct {
					UDS struct {
						UDSName string `json:"udsName"`
					} `json:"uds"`
				} `json:"transport"`
			} `json:"connection"`
		} `json:"egressSelections"`
	}
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&cfg); err != nil {
		t.Fatalf("%v:\n%s", err, b)
	}
	if cfg.APIVersion != "apiserver.k8s.io/v1beta1" || cfg.Kind != "EgressSelectorConfiguration" || len(cfg.EgressSelections) != 1 ||
		cfg.EgressSelections[0].Name != "cluster" || cfg.EgressSelections[0].Connection.ProxyProtocol != "HTTPConnect" ||
		cfg.EgressSelections[0].Connection.Transport.UDS.UDSName != p.socket {
		t.Errorf("configuration:\n%s", b)
	}
	p.close()
	if _, err := os.Stat(p.removeDir); !os.IsNotExist(err) {
		t.Errorf("short socket dir %s left after close: %v", p.removeDir, err)
	}
}
