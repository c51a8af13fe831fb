package nodeagent

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/transport/spdy"
)

// TestPortForward forwards local ports to a pod's ports through the
// kubelet API's portForward (SPDY portforward.k8s.io, as the API server
// talks to a kubelet): an HTTP server on the pod's IP answers through it,
// on several connections; a port nothing listens on gives the client the
// error; unknown pods and callers without a client certificate are
// refused before any stream.
func TestPortForward(t *testing.T) {
	f := newLogsFixture(t)
	web := f.pod(t, "web", corev1.RestartPolicyAlways, `sleep 600`)
	for _, tc := range []struct {
		path   string
		status int
		want   string
	}{
		{"/portForward/ns/nope", http.StatusNotFound, "pod does not exist"},
		{"/portForward/ns/web/other-uid", http.StatusNotFound, "pod not found"},
		{"/portForward/ns/web", http.StatusInternalServerError, `pod not found ("ns/web")`}, // no IP yet
	} {
		if code, body := f.get(t, tc.path); code != tc.status || body != tc.want {
			t.Errorf("GET %s = %d %q, want %d %q", tc.path, code, body, tc.status, tc.want)
		}
	}
	if code, _ := get(t, f.ca.client(t), f.srv.URL+"/portForward/ns/web"); code != http.StatusUnauthorized {
		t.Errorf("port-forward without a client certificate: %d, want 401", code)
	}

	// The pod's IP: a loopback address of its own, as the agent assigns.
	const podIP = "127.100.254.7"
	web.w.mu.Lock()
	web.w.ip = podIP
	web.w.mu.Unlock()
	ln, err := net.Listen("tcp", podIP+":0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "pod answers %s", r.URL.Path)
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	port := ln.Addr().(*net.TCPAddr).Port
	closed := freePort(t, podIP) // nothing listens there

	rt, upgrader, err := spdy.RoundTripperFor(f.restConfig(t))
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(f.srv.URL + "/portForward/ns/web")
	dialer := spdy.NewDialer(upgrader, &http.Client{Transport: rt}, http.MethodPost, u)
	stop, ready := make(chan struct{}), make(chan struct{})
	var out, errOut bytes.Buffer // read after ForwardPorts returned
	pf, err := portforward.NewOnAddresses(dialer, []string{"127.0.0.1"},
		[]string{"0:" + strconv.Itoa(port), "0:" + strconv.Itoa(closed)}, stop, ready, &out, &errOut)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- pf.ForwardPorts() }()
	select {
	case <-ready:
	case err := <-done:
		t.Fatalf("ForwardPorts: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("port forward not ready after 10s")
	}
	ports, err := pf.GetPorts()
	if err != nil || len(ports) != 2 {
		t.Fatalf("ports %v, %v", ports, err)
	}
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	for i := range 3 {
		code, body := get(t, client, fmt.Sprintf("http://127.0.0.1:%d/%d", ports[0].Local, i))
		if want := fmt.Sprintf("pod answers /%d", i); code != http.StatusOK || body != want {
			t.Errorf("GET through the forward: %d %q, want %q", code, body, want)
		}
	}

	// Nothing listens: the connection ends, and the error the agent sends
	// makes the client end the forward (client-go's port forwarder, and
	// so kubectl port-forward, give up on an error from the pod's side).
	conn, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", ports[1].Local), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	if n, err := io.Copy(io.Discard, conn); err != nil || n != 0 {
		t.Errorf("forward to a closed port: read %d bytes, %v; want the connection closed", n, err)
	}
	conn.Close()
	select {
	case err := <-done:
		if !errors.Is(err, portforward.ErrLostConnectionToPod) {
			t.Errorf("ForwardPorts after the error: %v, want %v", err, portforward.ErrLostConnectionToPod)
		}
	case <-time.After(10 * time.Second):
		close(stop)
		t.Errorf("ForwardPorts still forwarding 10s after the error; ended with %v", <-done)
	}
}

// freePort is a port of ip that nothing listens on (just now).
func freePort(t *testing.T, ip string) int {
	t.Helper()
	ln, err := net.Listen("tcp", ip+":0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}
