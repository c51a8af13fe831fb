package webhook

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

// serveTLS serves the validator with certs on a local port until the test ends.
func serveTLS(t *testing.T, certs CertificateSource) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := NewServer(t.Context(), newValidator(newLookup(), nil), certs)
	go func() { _ = srv.ServeTLS(ln, "", "") }()
	t.Cleanup(func() { _ = srv.Close() })
	return ln.Addr().String()
}

// handshake connects, verifying the server against roots for serverName,
// and returns the serial of the certificate the server presented.
func handshake(t *testing.T, addr string, roots *x509.CertPool, serverName string) string {
	t.Helper()
	return handshakeAt(t, addr, roots, serverName, time.Now)
}

// handshakeAt is handshake verifying validity at now (a fake clock's).
func handshakeAt(t *testing.T, addr string, roots *x509.CertPool, serverName string, now func() time.Time) string {
	t.Helper()
	conn, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: roots, ServerName: serverName, MinVersion: tls.VersionTLS12, Time: now})
	if err != nil {
		t.Fatalf("TLS handshake with %s as %s: %v", addr, serverName, err)
	}
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates[0].SerialNumber.String()
}

// eventually retries cond for up to 2 s of real time (short steps): the
// goroutine under test reacts to a fake clock step asynchronously.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// writePair writes a certificate and key the way a Secret volume changes:
// new files renamed into place.
func writePair(t *testing.T, dir string, pair *keyPair) {
	t.Helper()
	for name, data := range map[string][]byte{CertFile: pair.certPEM, KeyFile: pair.keyPEM} {
		tmp := filepath.Join(dir, "."+name+".tmp")
		if err := os.WriteFile(tmp, data, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
}

func testCA(t *testing.T, now time.Time) *keyPair {
	t.Helper()
	ca, err := newCA("test-ca", now, 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	return ca
}

func testServing(t *testing.T, ca *keyPair, now time.Time, hosts ...string) *keyPair {
	t.Helper()
	pair, err := newServing(ca, hosts, now, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	return pair
}

func TestFileCertificatesReloadWithoutRestart(t *testing.T) {
	now := time.Now()
	ca := testCA(t, now)
	roots := x509.NewCertPool()
	roots.AddCert(ca.cert)
	first, second := testServing(t, ca, now, "webhook.example", "127.0.0.1"), testServing(t, ca, now, "webhook.example", "127.0.0.1")
	dir := t.TempDir()
	writePair(t, dir, first)

	clk := clocktesting.NewFakeClock(now)
	certs, err := NewFileCertificates(dir, 5*time.Second, clk)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	go certs.Run(ctx)
	addr := serveTLS(t, certs)

	if got := handshake(t, addr, roots, "webhook.example"); got != first.cert.SerialNumber.String() {
		t.Fatalf("first handshake saw serial %s, want %s", got, first.cert.SerialNumber)
	}
	writePair(t, dir, second)
	// Nothing is re-read before the poll interval.
	if got := handshake(t, addr, roots, "webhook.example"); got != first.cert.SerialNumber.String() {
		t.Fatalf("serial %s before the poll, want still %s", got, first.cert.SerialNumber)
	}
	eventually(t, "the reload loop to wait on its ticker", clk.HasWaiters)
	clk.Step(5 * time.Second)
	eventually(t, "the new certificate to be served", func() bool {
		return handshake(t, addr, roots, "webhook.example") == second.cert.SerialNumber.String()
	})
	// Clients without SNI (an IP address) get it too.
	if got := handshake(t, addr, roots, "127.0.0.1"); got != second.cert.SerialNumber.String() {
		t.Errorf("by IP: serial %s, want %s", got, second.cert.SerialNumber)
	}
}

func TestFileCertificatesKeepServingOnBadFiles(t *testing.T) {
	now := time.Now()
	ca := testCA(t, now)
	first, second := testServing(t, ca, now, "a"), testServing(t, ca, now, "a")
	dir := t.TempDir()
	writePair(t, dir, first)
	certs, err := NewFileCertificates(dir, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	if changed, err := certs.Reload(); changed || err != nil {
		t.Errorf("unchanged files: changed=%v err=%v", changed, err)
	}
	// The new certificate with the old key: refused, old pair kept.
	if err := os.WriteFile(filepath.Join(dir, CertFile), second.certPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	if changed, err := certs.Reload(); changed || err == nil {
		t.Errorf("mismatched pair: changed=%v err=%v, want an error", changed, err)
	}
	cur, _ := certs.GetCertificate(nil)
	if !cur.Leaf.Equal(first.cert) {
		t.Errorf("serving %s after a bad reload, want the previous certificate", cur.Leaf.SerialNumber)
	}
	// The key arrives: switched.
	if err := os.WriteFile(filepath.Join(dir, KeyFile), second.keyPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	if changed, err := certs.Reload(); !changed || err != nil {
		t.Errorf("completed pair: changed=%v err=%v", changed, err)
	}
	if cur, _ := certs.GetCertificate(nil); !cur.Leaf.Equal(second.cert) {
		t.Errorf("serving %s, want the new certificate", cur.Leaf.SerialNumber)
	}
}

func TestFileCertificatesMissing(t *testing.T) {
	if _, err := NewFileCertificates(filepath.Join(t.TempDir(), "nope"), 0, nil); err == nil {
		t.Error("no error for a missing certificate directory")
	}
}
