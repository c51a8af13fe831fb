package webhook

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// File names in a certificate directory, as a kubernetes.io/tls Secret (and
// so cert-manager) mounts them.
const (
	CertFile = "tls.crt"
	KeyFile  = "tls.key"
)

// DefaultFilePollInterval is how often FileCertificates re-reads its files.
const DefaultFilePollInterval = 5 * time.Second

// CertificateSource gives the serving certificate at each TLS handshake
// (tls.Config.GetCertificate), so a renewed certificate is served at once.
type CertificateSource interface {
	GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error)
}

// FileCertificates serves tls.crt/tls.key from a directory and re-reads
// them when they change. It compares contents, not modification times:
// a mounted Secret is updated by swapping a symlink, which leaves the
// files' own times unreliable, and the files are small.
type FileCertificates struct {
	dir      string
	interval time.Duration
	clock    clock.WithTicker

	mu            sync.Mutex // serialises reloads
	lastCert      []byte
	lastKey       []byte
	current       atomic.Pointer[tls.Certificate]
	failingReload bool
}

// NewFileCertificates loads the certificate in dir; it fails when there is
// none, so a missing mount is a start-up error, not a TLS error later.
// interval <= 0 means DefaultFilePollInterval; a nil clock the real one.
func NewFileCertificates(dir string, interval time.Duration, clk clock.WithTicker) (*FileCertificates, error) {
	if interval <= 0 {
		interval = DefaultFilePollInterval
	}
	if clk == nil {
		clk = clock.RealClock{}
	}
	f := &FileCertificates{dir: dir, interval: interval, clock: clk}
	if _, err := f.Reload(); err != nil {
		return nil, err
	}
	return f, nil
}

// GetCertificate returns the current certificate.
func (f *FileCertificates) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	return f.current.Load(), nil
}

// Reload re-reads the files and switches to them if they changed and form
// a valid pair; otherwise the current certificate stays. changed says
// whether a new certificate is now served.
func (f *FileCertificates) Reload() (changed bool, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	certPEM, err := os.ReadFile(filepath.Join(f.dir, CertFile))
	if err != nil {
		return false, fmt.Errorf("reading webhook certificate: %w", err)
	}
	keyPEM, err := os.ReadFile(filepath.Join(f.dir, KeyFile))
	if err != nil {
		return false, fmt.Errorf("reading webhook certificate key: %w", err)
	}
	if f.current.Load() != nil && bytes.Equal(certPEM, f.lastCert) && bytes.Equal(keyPEM, f.lastKey) {
		return false, nil
	}
	// A writer that is not atomic can leave a new certificate next to the
	// old key for a moment; the pair is then refused and retried later.
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return false, fmt.Errorf("webhook certificate in %s: %w", f.dir, err)
	}
	f.lastCert, f.lastKey = certPEM, keyPEM
	f.current.Store(&pair)
	return true, nil
}

// Run re-reads the files every interval until ctx ends.
func (f *FileCertificates) Run(ctx context.Context) {
	logger := klog.FromContext(ctx).WithValues("dir", f.dir)
	ticker := f.clock.NewTicker(f.interval)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C():
		}
		changed, err := f.Reload()
		switch {
		case err != nil:
			if !f.failingReload { // once per failure, not every few seconds
				logger.Error(err, "Cannot reload the webhook certificate; serving the previous one")
			}
			f.failingReload = true
		case changed:
			f.failingReload = false
			logger.Info("Reloaded the webhook serving certificate", certLogValues(f.current.Load())...)
		default:
			f.failingReload = false
		}
	}
}

// certLogValues describes a certificate for logs: never the key.
func certLogValues(c *tls.Certificate) []any {
	if c == nil || c.Leaf == nil {
		return nil
	}
	return []any{"serial", c.Leaf.SerialNumber.Text(16), "notAfter", c.Leaf.NotAfter.UTC(), "hosts", certHosts(c.Leaf)}
}
