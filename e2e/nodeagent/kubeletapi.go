package nodeagent

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"time"
)

// kubeletTLS is the agent's side of the kubelet API's TLS: its serving
// certificate and the CA whose client certificates it accepts (the API
// server's --kubelet-client-certificate).
type kubeletTLS struct {
	cert      tls.Certificate
	clientCAs *x509.CertPool
}

// loadKubeletTLS reads Config.TLSCertFile, TLSKeyFile and ClientCAFile.
func loadKubeletTLS(certFile, keyFile, clientCAFile string) (*kubeletTLS, error) {
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("kubelet API serving certificate: %w", err)
	}
	caPEM, err := os.ReadFile(clientCAFile)
	if err != nil {
		return nil, fmt.Errorf("kubelet API client CA: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return nil, fmt.Errorf("kubelet API client CA %s: no PEM certificate", clientCAFile)
	}
	return &kubeletTLS{cert: cert, clientCAs: pool}, nil
}

// config asks every client for a certificate but leaves checking it to
// authenticate: a caller without a good one gets an HTTP 401, as from the
// kubelet, rather than a failed handshake.
func (k *kubeletTLS) config() *tls.Config {
	return &tls.Config{
		Certificates: []tls.Certificate{k.cert},
		ClientAuth:   tls.RequestClientCert,
		ClientCAs:    k.clientCAs, // sent as the acceptable CAs
		MinVersion:   tls.VersionTLS12,
	}
}

// authenticate passes on requests whose client certificate chains to
// clientCAs for client authentication; others get 401.
func authenticate(clientCAs *x509.CertPool, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.TLS == nil || len(r.TLS.PeerCertificates) == 0 {
			writeError(w, http.StatusUnauthorized, "Unauthorized: a client certificate of the cluster CA is required")
			return
		}
		intermediates := x509.NewCertPool()
		for _, c := range r.TLS.PeerCertificates[1:] {
			intermediates.AddCert(c)
		}
		_, err := r.TLS.PeerCertificates[0].Verify(x509.VerifyOptions{
			Roots:         clientCAs,
			Intermediates: intermediates,
			KeyUsages:     []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		})
		if err != nil {
			writeError(w, http.StatusUnauthorized, "Unauthorized: client certificate: "+err.Error())
			return
		}
		next.ServeHTTP(w, r)
	})
}

// kubeletHandler is the agent's part of the kubelet API: container logs,
// exec and attach (exec.go) and port-forward (portforward.go).
func (a *Agent) kubeletHandler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /containerLogs/{namespace}/{pod}/{container}", containerLogs{find: a.findLog, poll: followPoll})
	for _, method := range []string{http.MethodGet, http.MethodPost} {
		mux.HandleFunc(method+" /exec/{namespace}/{pod}/{container}", a.serveExec)
		mux.HandleFunc(method+" /exec/{namespace}/{pod}/{uid}/{container}", a.serveExec)
		mux.HandleFunc(method+" /attach/{namespace}/{pod}/{container}", a.serveAttach)
		mux.HandleFunc(method+" /attach/{namespace}/{pod}/{uid}/{container}", a.serveAttach)
		mux.HandleFunc(method+" /portForward/{namespace}/{pod}", a.servePortForward)
		mux.HandleFunc(method+" /portForward/{namespace}/{pod}/{uid}", a.servePortForward)
	}
	return authenticate(a.kubeletTLS.clientCAs, mux)
}

// kubeletServer is the agent's kubelet API on HostIP and a free port (one
// per agent: test clusters run side by side), published in the Node's
// status.daemonEndpoints.kubeletEndpoint.
type kubeletServer struct {
	port   int
	srv    *http.Server
	cancel context.CancelFunc
	served chan struct{}
}

func (a *Agent) startKubeletServer() (*kubeletServer, error) {
	ln, err := net.Listen("tcp", net.JoinHostPort(HostIP, "0"))
	if err != nil {
		return nil, fmt.Errorf("kubelet API: %w", err)
	}
	// Requests' contexts end with the server, so follow requests and
	// exec and port-forward sessions do too.
	ctx, cancel := context.WithCancel(context.Background())
	s := &kubeletServer{
		port: ln.Addr().(*net.TCPAddr).Port,
		srv: &http.Server{
			Handler:           a.kubeletHandler(),
			ReadHeaderTimeout: 10 * time.Second,
			BaseContext:       func(net.Listener) context.Context { return ctx },
			// exec and port-forward hijack their connections: they
			// close them when ctx ends (closeWithServer).
			ConnContext: func(ctx context.Context, c net.Conn) context.Context { return context.WithValue(ctx, connKey{}, c) },
		},
		cancel: cancel,
		served: make(chan struct{}),
	}
	go func() {
		defer close(s.served)
		if err := s.srv.Serve(tls.NewListener(ln, a.kubeletTLS.config())); !errors.Is(err, http.ErrServerClosed) {
			a.logf("kubelet API: %v", err)
		}
	}()
	return s, nil
}

// close ends the server and the requests in flight.
func (s *kubeletServer) close() {
	s.cancel()
	_ = s.srv.Close()
	<-s.served
}
