package webhook

import (
	"context"
	"crypto/tls"
	"log"
	"net"
	"net/http"
	"strings"
	"time"

	"k8s.io/klog/v2"
)

// TLSConfig serves the certificate certs gives at each handshake.
func TLSConfig(certs CertificateSource) *tls.Config {
	return &tls.Config{
		MinVersion:     tls.VersionTLS12,
		GetCertificate: certs.GetCertificate,
	}
}

// NewServer returns the webhook's HTTPS server: the Validator's handler,
// TLS from certs, and the logger of ctx in every request's context. Serve
// it with ServeTLS(ln, "", "") or Serve(tls.NewListener(ln, srv.TLSConfig)).
func NewServer(ctx context.Context, v *Validator, certs CertificateSource) *http.Server {
	logger := klog.FromContext(ctx)
	return &http.Server{
		Handler:   v.Handler(),
		TLSConfig: TLSConfig(certs),
		// The API server sends one small request per admission and waits
		// at most its webhook timeout (default 10 s) for the answer.
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       2 * time.Minute,
		// TLS handshake errors (scanners, probes, a caBundle out of date)
		// go to the structured log, at a level that needs asking for.
		ErrorLog: log.New(logWriter{logger}, "", 0),
		BaseContext: func(net.Listener) context.Context {
			// Not ctx itself: a shutdown must let running reviews finish.
			return klog.NewContext(context.Background(), logger)
		},
	}
}

// logWriter turns net/http's log lines into structured log entries.
type logWriter struct{ logger klog.Logger }

func (w logWriter) Write(p []byte) (int, error) {
	w.logger.V(2).Info("HTTP server", "message", strings.TrimSpace(string(p)))
	return len(p), nil
}
