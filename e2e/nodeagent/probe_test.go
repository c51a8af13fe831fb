package nodeagent

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

func TestProbeTimings(t *testing.T) {
	got := timingsOf(&corev1.Probe{})
	want := probeTimings{period: 10 * time.Second, timeout: time.Second, success: 1, failure: 3}
	if got != want {
		t.Errorf("defaults %+v, want %+v", got, want)
	}
	got = timingsOf(&corev1.Probe{InitialDelaySeconds: 5, PeriodSeconds: 20, TimeoutSeconds: 4, SuccessThreshold: 2, FailureThreshold: 30})
	want = probeTimings{initialDelay: 5 * time.Second, period: 20 * time.Second, timeout: 4 * time.Second, success: 2, failure: 30}
	if got != want {
		t.Errorf("set %+v, want %+v", got, want)
	}
}

func TestContainerPort(t *testing.T) {
	spec := &corev1.Container{Name: "operator", Ports: []corev1.ContainerPort{{Name: "health", ContainerPort: 8081}, {Name: "metrics", ContainerPort: 8080}}}
	for port, want := range map[intstr.IntOrString]int{
		intstr.FromString("health"): 8081, intstr.FromString("metrics"): 8080, intstr.FromInt32(9443): 9443, intstr.FromString("9000"): 9000,
	} {
		if got, err := containerPort(spec, port); err != nil || got != want {
			t.Errorf("port %v: %d, %v; want %d", port.String(), got, err, want)
		}
	}
	for _, port := range []intstr.IntOrString{intstr.FromString("webhook"), intstr.FromInt32(0), intstr.FromInt32(70000)} {
		if got, err := containerPort(spec, port); err == nil {
			t.Errorf("port %v: %d, want an error", port.String(), got)
		}
	}
}

// TestHTTPAndTCPProbes: 2xx and 3xx succeed, 4xx/5xx fail with the status
// in the message; redirects are followed on the same host (to the final
// status) and not to another (a success); the probe's headers, Host
// included, are sent; a slow answer fails with the timeout; tcpSocket
// succeeds on a listening port only.
func TestHTTPAndTCPProbes(t *testing.T) {
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusInternalServerError)
	}))
	defer other.Close()
	var gotHost, gotHeader, gotUA string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/ok":
			w.WriteHeader(http.StatusNoContent)
		case "/moved":
			w.WriteHeader(http.StatusFound)
		case "/bad":
			http.Error(w, "caches not synced", http.StatusServiceUnavailable)
		case "/to-bad":
			http.Redirect(w, r, "/bad", http.StatusFound)
		case "/elsewhere":
			// Another host name (localhost, not 127.0.0.1) for the same
			// failing server would fail if it were followed.
			u, _ := url.Parse(other.URL)
			http.Redirect(w, r, "http://localhost:"+u.Port()+"/", http.StatusFound)
		case "/headers":
			gotHost, gotHeader, gotUA = r.Host, r.Header.Get("X-Probe"), r.UserAgent()
		case "/slow":
			time.Sleep(time.Second)
		}
	}))
	defer srv.Close()
	u, _ := url.Parse(srv.URL)
	port, _ := strconv.Atoi(u.Port())
	probe := func(path string, headers ...corev1.HTTPHeader) (bool, string) {
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		defer cancel()
		return httpProbe(ctx, "127.0.0.1", port, &corev1.HTTPGetAction{Path: path, HTTPHeaders: headers})
	}
	for path, want := range map[string]bool{"/ok": true, "/moved": true, "/bad": false, "/to-bad": false, "/elsewhere": true, "/slow": false} {
		ok, msg := probe(path)
		if ok != want {
			t.Errorf("GET %s: %v (%s), want %v", path, ok, msg, want)
		}
		if path == "/bad" && (!strings.Contains(msg, "503") || !strings.Contains(msg, "caches not synced")) {
			t.Errorf("GET /bad: message %q", msg)
		}
	}
	if ok, msg := probe("headers", corev1.HTTPHeader{Name: "Host", Value: "operator.local"}, corev1.HTTPHeader{Name: "X-Probe", Value: "1"}); !ok ||
		gotHost != "operator.local" || gotHeader != "1" || !strings.HasPrefix(gotUA, "kube-probe/") {
		t.Errorf("headers: %v %s; host %q, X-Probe %q, User-Agent %q", ok, msg, gotHost, gotHeader, gotUA)
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	open := ln.Addr().(*net.TCPAddr).Port
	ctx := context.Background()
	if ok, msg := tcpProbe(ctx, "127.0.0.1", open); !ok {
		t.Errorf("tcpSocket on a listening port: %s", msg)
	}
	ln.Close()
	if ok, _ := tcpProbe(ctx, "127.0.0.1", open); ok {
		t.Error("tcpSocket on a closed port succeeded")
	}
}

// TestProbeOnce: a probe without a host goes to the pod IP, with a named
// port of the container; exec and grpc probes are not run.
func TestProbeOnce(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer srv.Close()
	u, _ := url.Parse(srv.URL)
	port, _ := strconv.Atoi(u.Port())
	c := &container{ip: "127.0.0.1", spec: &corev1.Container{Name: "c", Ports: []corev1.ContainerPort{{Name: "health", ContainerPort: int32(port)}}}}
	for _, tc := range []struct {
		probe corev1.ProbeHandler
		want  bool
	}{
		{corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/readyz", Port: intstr.FromString("health")}}, true},
		{corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromString("health")}}, true},
		{corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/readyz", Port: intstr.FromString("metrics")}}, false},
		{corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Host: "127.0.0.2", Port: intstr.FromString("health")}}, false},
		{corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"false"}}}, true},
		{corev1.ProbeHandler{GRPC: &corev1.GRPCAction{Port: 1, Service: ptr.To("x")}}, true},
	} {
		if ok, msg := c.probeOnce(context.Background(), &corev1.Probe{ProbeHandler: tc.probe}, time.Second); ok != tc.want {
			t.Errorf("probe %+v: %v (%s), want %v", tc.probe, ok, msg, tc.want)
		}
	}
}
