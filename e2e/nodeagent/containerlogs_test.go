package nodeagent

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
)

// testCA is a throwaway CA that issues certificates for the tests.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

func newTestCA(t *testing.T, name string) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: true, IsCA: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	return &testCA{cert: cert, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// issue returns a certificate and key (PEM) for cn with usage.
func (ca *testCA) issue(t *testing.T, cn string, usage x509.ExtKeyUsage) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, _ := x509.MarshalECPrivateKey(key)
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})
}

func (ca *testCA) keyPair(t *testing.T, cn string, usage x509.ExtKeyUsage) tls.Certificate {
	t.Helper()
	c, k := ca.issue(t, cn, usage)
	kp, err := tls.X509KeyPair(c, k)
	if err != nil {
		t.Fatal(err)
	}
	return kp
}

// logsFixture is an Agent (no API server: its pods are set up by hand)
// serving its kubelet API through httptest, and a client with the
// cluster CA's client certificate.
type logsFixture struct {
	a      *Agent
	ca     *testCA
	srv    *httptest.Server
	client *http.Client
	active atomic.Int32 // requests being served
}

func newLogsFixture(t *testing.T) *logsFixture {
	dir := t.TempDir()
	ca := newTestCA(t, "cluster-ca")
	servingCert, servingKey := ca.issue(t, "system:node:local-node", x509.ExtKeyUsageServerAuth)
	files := map[string][]byte{"ca.crt": ca.pem, "kubelet.crt": servingCert, "kubelet.key": servingKey}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	a, err := New(Config{
		RESTConfig:  &rest.Config{Host: "https://127.0.0.1:1"}, // never called
		Dir:         filepath.Join(dir, "agent"),
		Log:         testLog{t},
		TLSCertFile: filepath.Join(dir, "kubelet.crt"), TLSKeyFile: filepath.Join(dir, "kubelet.key"),
		ClientCAFile: filepath.Join(dir, "ca.crt"),
	})
	if err != nil {
		t.Fatal(err)
	}
	f := &logsFixture{a: a, ca: ca, client: ca.client(t, ca.keyPair(t, "kube-apiserver-kubelet-client", x509.ExtKeyUsageClientAuth))}
	handler := a.kubeletHandler()
	f.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.active.Add(1)
		defer f.active.Add(-1)
		handler.ServeHTTP(w, r)
	}))
	f.srv.TLS = a.kubeletTLS.config()
	f.srv.StartTLS()
	t.Cleanup(f.srv.Close)
	return f
}

// client trusts ca's serving certificates and presents cert (if any).
func (ca *testCA) client(t *testing.T, cert ...tls.Certificate) *http.Client {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca.pem)
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, Certificates: cert}}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: 20 * time.Second}
}

// pod adds a running pod with one container, "main", that runs script with
// sh in its own directory (where the script may keep state between runs).
func (f *logsFixture) pod(t *testing.T, name string, policy corev1.RestartPolicy, script string) *container {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID(name + "-uid")},
		Spec:       corev1.PodSpec{RestartPolicy: policy, Containers: []corev1.Container{{Name: "main", Image: "test"}}},
	}
	w := newPodWorker(f.a, pod, int64(len(f.a.workers)+1))
	c := w.baseContainer(&pod.Spec.Containers[0])
	state := t.TempDir()
	c.command = func(context.Context) (*exec.Cmd, error) {
		cmd := exec.Command("sh", "-c", script)
		cmd.Dir = state
		return cmd, nil
	}
	w.containers = []*container{c}
	f.a.mu.Lock()
	f.a.workers[pod.UID] = w
	f.a.mu.Unlock()
	t.Cleanup(func() { c.stop(0) })
	return c
}

func (f *logsFixture) get(t *testing.T, path string) (int, string) {
	t.Helper()
	return get(t, f.client, f.srv.URL+path)
}

func get(t *testing.T, client *http.Client, url string) (int, string) {
	t.Helper()
	resp, err := client.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: body: %v", url, err)
	}
	return resp.StatusCode, string(body)
}

// expect GETs path until it answers status with body want (the container
// runs meanwhile), or fails after 10 s with the last answer.
func (f *logsFixture) expect(t *testing.T, path string, status int, want string) {
	t.Helper()
	var code int
	var body string
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if code, body = f.get(t, path); code == status && body == want {
			return
		}
	}
	t.Fatalf("GET %s = %d %q, want %d %q", path, code, body, status, want)
}

type testLog struct{ t *testing.T }

func (l testLog) Write(p []byte) (int, error) {
	l.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// TestContainerLogs runs containers (sh scripts) under the agent's restart
// logic and reads their logs as the API server would: current and previous
// run, tailLines, limitBytes, follow until the run ends, unknown pods and
// containers, callers without the cluster CA's client certificate.
func TestContainerLogs(t *testing.T) {
	f := newLogsFixture(t)
	// Run 0 fails (restarted: OnFailure); run 1 prints a line, another
	// when the file "go" appears, and succeeds when "stop" does.
	web := f.pod(t, "web", corev1.RestartPolicyOnFailure, `
		run=$(cat count 2>/dev/null || echo 0); echo $((run+1)) > count
		if [ "$run" = 0 ]; then printf 'one\ntwo\nthree\n'; echo oops >&2; exit 3; fi
		echo "run $run"
		while [ ! -e go ]; do sleep 0.05; done
		echo late
		while [ ! -e stop ]; do sleep 0.05; done`)
	const base = "/containerLogs/ns/web/main"
	const run0 = "one\ntwo\nthree\noops\n"

	f.expect(t, base, http.StatusBadRequest, `container "main" in pod "web" is waiting to start: ContainerCreating`)
	web.start()
	f.expect(t, base, http.StatusOK, "run 1\n") // after run 0 and the 1 s back-off
	if st := web.status(); st.RestartCount != 1 || st.State.Running == nil {
		t.Fatalf("status %+v, want running after one restart", st)
	}

	for _, tc := range []struct{ query, want string }{
		{"previous=true", run0},
		{"previous=true&tailLines=2", "three\noops\n"},
		{"previous=true&tailLines=0", ""},
		{"previous=true&tailLines=100", run0},
		{"previous=true&limitBytes=5", "one\nt"},
		{"previous=true&tailLines=2&limitBytes=3", "thr"},
		{"previous=false&timestamps=true&sinceSeconds=10", "run 1\n"}, // accepted, not applied
	} {
		if code, body := f.get(t, base+"?"+tc.query); code != http.StatusOK || body != tc.want {
			t.Errorf("?%s: %d %q, want %q", tc.query, code, body, tc.want)
		}
	}

	t.Run("follow until the request ends", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, f.srv.URL+base+"?follow=true", nil)
		resp, err := f.client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		line, err := bufio.NewReader(resp.Body).ReadString('\n')
		if err != nil || line != "run 1\n" {
			t.Fatalf("follow: first line %q, %v", line, err)
		}
		if f.active.Load() != 1 {
			t.Fatalf("%d requests served while following, want 1", f.active.Load())
		}
		cancel() // the run goes on; the handler must end with the request
		resp.Body.Close()
		for deadline := time.Now().Add(5 * time.Second); f.active.Load() != 0; time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatal("follow handler still running 5s after the client went away")
			}
		}
	})

	t.Run("follow until the run ends", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, f.srv.URL+base+"?follow=true", nil)
		resp, err := f.client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		lines := make(chan string)
		go func() {
			defer close(lines)
			sc := bufio.NewScanner(resp.Body)
			for sc.Scan() {
				select {
				case lines <- sc.Text():
				case <-ctx.Done():
					return
				}
			}
		}()
		next := func(what string) (string, bool) {
			t.Helper()
			select {
			case l, ok := <-lines:
				return l, ok
			case <-time.After(10 * time.Second):
				t.Fatalf("follow: no %s within 10s", what)
				return "", false
			}
		}
		if l, _ := next("first line"); l != "run 1" {
			t.Fatalf("follow: first line %q", l)
		}
		dir := web.stateDir(t)
		touch(t, filepath.Join(dir, "go")) // written after the request began
		if l, _ := next("line written later"); l != "late" {
			t.Fatalf("follow: second line %q, want late", l)
		}
		touch(t, filepath.Join(dir, "stop")) // run 1 succeeds: not restarted
		if l, ok := next("end of the stream"); ok {
			t.Fatalf("follow: unexpected line %q, want the end", l)
		}
	})

	// Run 1 has ended (exit 0, OnFailure: terminated for good).
	f.expect(t, base, http.StatusOK, "run 1\nlate\n")
	f.expect(t, base+"?follow=true", http.StatusOK, "run 1\nlate\n") // returns at once
	f.expect(t, base+"?previous=true", http.StatusOK, run0)

	// Files: one per run, and <container>.log naming the current one.
	podDir := filepath.Join(f.a.cfg.Dir, "pods", "ns_web_web-uid", "logs")
	for file, want := range map[string]string{"main/0.log": run0, "main/1.log": "run 1\nlate\n", "main.log": "run 1\nlate\n"} {
		data, err := os.ReadFile(filepath.Join(podDir, file))
		header, rest, _ := strings.Cut(string(data), "\n")
		if err != nil || !strings.HasPrefix(header, "=== ") || !strings.Contains(header, "starting sh -c") || rest != want {
			t.Errorf("%s: %q, %v; want a header line, then %q", file, data, err, want)
		}
	}

	once := f.pod(t, "once", corev1.RestartPolicyNever, `echo only`)
	once.start()
	f.expect(t, "/containerLogs/ns/once/main", http.StatusOK, "only\n")
	f.expect(t, "/containerLogs/ns/once/main?previous=true", http.StatusBadRequest,
		`previous terminated container "main" in pod "once" not found`)

	for _, tc := range []struct {
		path   string
		status int
		want   string
	}{
		{"/containerLogs/ns/nope/main", http.StatusNotFound, `pod "nope" does not exist`},
		{"/containerLogs/other/web/main", http.StatusNotFound, `pod "web" does not exist`},
		{"/containerLogs/ns/web/nope", http.StatusNotFound, `container "nope" not found in pod "web"`},
		{base + "?tailLines=-1", http.StatusBadRequest, `tailLines="-1": must be an integer >= 0`},
		{base + "?limitBytes=0", http.StatusBadRequest, `limitBytes="0": must be an integer >= 1`},
		{base + "?follow=maybe", http.StatusBadRequest, `follow="maybe": not a boolean`},
	} {
		if code, body := f.get(t, tc.path); code != tc.status || body != tc.want {
			t.Errorf("GET %s = %d %q, want %d %q", tc.path, code, body, tc.status, tc.want)
		}
	}

	t.Run("unauthenticated callers", func(t *testing.T) {
		other := newTestCA(t, "other-ca")
		for name, client := range map[string]*http.Client{
			"no client certificate":           f.ca.client(t),
			"another CA's certificate":        f.ca.client(t, other.keyPair(t, "kube-apiserver-kubelet-client", x509.ExtKeyUsageClientAuth)),
			"a serving certificate of the CA": f.ca.client(t, f.ca.keyPair(t, "kube-apiserver", x509.ExtKeyUsageServerAuth)),
		} {
			code, body := get(t, client, f.srv.URL+base)
			if code != http.StatusUnauthorized || !strings.HasPrefix(body, "Unauthorized") || strings.Contains(body, "run 1") {
				t.Errorf("%s: %d %q, want 401", name, code, body)
			}
		}
	})
}

// stateDir is the directory the test container's script runs in.
func (c *container) stateDir(t *testing.T) string {
	t.Helper()
	cmd, err := c.command(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return cmd.Dir
}

func touch(t *testing.T, path string) {
	t.Helper()
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestTailStart(t *testing.T) {
	const text = "hdr\na\nbb\nccc\n"
	for _, tc := range []struct {
		text string
		from int64
		n    int64
		want string
	}{
		{text, 4, 1, "ccc\n"},
		{text, 4, 2, "bb\nccc\n"},
		{text, 4, 3, "a\nbb\nccc\n"},
		{text, 4, 9, "a\nbb\nccc\n"}, // never before from
		{text, 4, 0, ""},
		{"a\nbb\npartial", 0, 1, "partial"}, // a last line without newline counts
		{"a\nbb\npartial", 0, 2, "bb\npartial"},
		{"\n\n", 0, 1, "\n"},
		{"", 0, 3, ""},
	} {
		start, err := tailStart(strings.NewReader(tc.text), tc.from, int64(len(tc.text)), tc.n)
		if err != nil || tc.text[start:] != tc.want {
			t.Errorf("tailStart(%q, from %d, %d) = %d (%q), %v; want %q", tc.text, tc.from, tc.n, start, tc.text[min(start, int64(len(tc.text))):], err, tc.want)
		}
	}
}
