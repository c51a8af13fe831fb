package nodeagent

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"time"

	"k8s.io/cri-streaming/pkg/streaming/portforward"
)

// portDialTimeout bounds the connection to a pod's port.
const portDialTimeout = 5 * time.Second

// servePortForward serves the kubelet's
// /portForward/{namespace}/{pod}[/{uid}], where the API server sends
// pods/portforward (`kubectl port-forward`): the streams are the CRI
// streaming server's (k8s.io/cri-streaming: SPDY portforward.k8s.io, and
// WebSocket with ?port=), each data stream connected to the requested port
// of the pod's IP. There are no network namespaces (see README): a pod's
// processes listen on its IP, which is where a kubelet's port-forward into
// the pod's network namespace would lead too; what listens on 127.0.0.1
// only is the machine's, not the pod's, and is not reached.
func (a *Agent) servePortForward(w http.ResponseWriter, r *http.Request) {
	opts, err := portforward.NewV4Options(r)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	namespace, pod, uid := r.PathValue("namespace"), r.PathValue("pod"), r.PathValue("uid")
	a.logf("kubelet API: port-forward %s/%s (%s)", namespace, pod, streamProtocols(r))
	wk := a.workerNamed(namespace, pod)
	if wk == nil {
		writeError(w, http.StatusNotFound, "pod does not exist")
		return
	}
	if uid != "" && string(wk.uid) != uid {
		writeError(w, http.StatusNotFound, "pod not found")
		return
	}
	ip := wk.podIP()
	if ip == "" {
		writeError(w, http.StatusInternalServerError, fmt.Sprintf("pod not found (%q)", namespace+"/"+pod))
		return
	}
	defer closeWithServer(r)()
	portforward.ServePortForward(w, r, podPorts{ip: ip, logf: a.logf}, pod, string(wk.uid), opts,
		streamIdleTimeout, streamCreationTimeout, portforward.SupportedProtocols)
}

// podIP is the pod's IP once assigned.
func (w *podWorker) podIP() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.ip
}

// podPorts is the portforward.PortForwarder of a pod at ip.
type podPorts struct {
	ip   string
	logf func(format string, args ...any)
}

// PortForward connects stream to the pod's port and copies both ways: the
// stream's end half-closes the connection, and the forward ends when the
// pod's side is done (or ctx ends). An error goes to the client on the
// stream pair's error stream, as the kubelet's.
func (p podPorts) PortForward(ctx context.Context, pod, _ string, port int32, stream io.ReadWriteCloser) error {
	defer stream.Close()
	addr := net.JoinHostPort(p.ip, strconv.Itoa(int(port)))
	d := net.Dialer{Timeout: portDialTimeout}
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return fmt.Errorf("failed to connect to port %d of pod %s at %s: %w", port, pod, addr, err)
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	go func() {
		_, _ = io.Copy(conn, stream)
		_ = conn.(*net.TCPConn).CloseWrite()
	}()
	if _, err := io.Copy(stream, conn); err != nil && ctx.Err() == nil {
		p.logf("port-forward to %s of pod %s: %v", addr, pod, err)
	}
	return nil
}
