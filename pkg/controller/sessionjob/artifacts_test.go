package sessionjob

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/config"
	"github.com/flinkops/flink-operator/pkg/controller/jobengine"
)

// jarServer serves a jar at every path and records the requests' headers.
type jarServer struct {
	*httptest.Server
	mu      sync.Mutex
	headers []http.Header
}

func newJarServer(t *testing.T, tls bool, h http.HandlerFunc) *jarServer {
	t.Helper()
	s := &jarServer{}
	if h == nil {
		h = func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("PK\x03\x04 jar")) }
	}
	record := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.headers = append(s.headers, r.Header.Clone())
		s.mu.Unlock()
		h(w, r)
	})
	if tls {
		s.Server = httptest.NewTLSServer(record)
	} else {
		s.Server = httptest.NewServer(record)
	}
	t.Cleanup(s.Close)
	return s
}

func (s *jarServer) gets() []http.Header {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]http.Header(nil), s.headers...)
}

// fetcher is the part of a controller fetchJar uses, with the given
// artifact client (nil: the default one).
func fetcher(t *testing.T, client *http.Client) *Controller {
	if client == nil {
		client = &http.Client{Timeout: time.Minute}
	}
	return &Controller{artifactClient: client, submissions: newSubmissions(1, 1<<20, "")}
}

// policy is the artifact policy of the default configuration with the
// given keys set, staging in a test directory.
func policy(t *testing.T, kv ...string) artifactPolicy {
	t.Helper()
	cfg := config.Defaults()
	cfg[config.KeyUserArtifactsBaseDir] = filepath.Join(t.TempDir(), "artifacts")
	for i := 0; i+1 < len(kv); i += 2 {
		cfg[kv[i]] = kv[i+1]
	}
	p, err := artifactPolicyFrom(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func fetch(c *Controller, p artifactPolicy, uri string) (*localJar, error) {
	jar, err := c.fetchJar(withArtifactPolicy(context.Background(), p), uri)
	if err == nil {
		jar.close()
	}
	return jar, err
}

// The defaults: https only (file:// and http:// refused), restricted hosts
// refused before any connection, and the policy of a submission without
// one is the defaults.
func TestArtifactDefaults(t *testing.T) {
	p, err := artifactPolicyFrom(config.Defaults())
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(p.schemes, ",") != "https" || p.baseDir != "/opt/flink/artifacts" || !p.restricted || p.headers != nil {
		t.Errorf("default policy %+v, want https only, /opt/flink/artifacts, restricted hosts refused, no headers", p)
	}
	if got := artifactPolicyOf(context.Background()); strings.Join(got.schemes, ",") != "https" || !got.restricted {
		t.Errorf("policy without one in the context %+v, want the defaults", got)
	}

	srv := newJarServer(t, false, nil)
	tlsSrv := newJarServer(t, true, nil)
	jarFile := filepath.Join(t.TempDir(), "job.jar")
	if err := os.WriteFile(jarFile, []byte("PK"), 0o600); err != nil {
		t.Fatal(err)
	}
	c := fetcher(t, tlsSrv.Client())
	for _, tc := range []struct{ uri, want string }{
		{srv.URL + "/job.jar", "jarURI scheme 'http' is not in the allowlist [https]. Configure 'kubernetes.operator.user.artifacts.allowed-schemes' to extend the allowlist."},
		{"file://" + jarFile, "jarURI scheme 'file' is not in the allowlist [https]"},
		{tlsSrv.URL + "/job.jar", "is a restricted address"},
		{"https://169.254.169.254/job.jar", "jar host 169.254.169.254 is a restricted address"},
	} {
		_, err := fetch(c, policy(t), tc.uri)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("fetch %s: %v, want an error with %q", tc.uri, err, tc.want)
		}
	}
	if n := len(srv.gets()) + len(tlsSrv.gets()); n != 0 {
		t.Errorf("%d requests reached the jar servers, want none", n)
	}
}

// Each option's non-default value.
func TestArtifactOptions(t *testing.T) {
	srv := newJarServer(t, false, nil)
	tlsSrv := newJarServer(t, true, nil)
	jarFile := filepath.Join(t.TempDir(), "job.jar")
	if err := os.WriteFile(jarFile, []byte("PK"), 0o600); err != nil {
		t.Fatal(err)
	}
	open := []string{config.KeyUserArtifactsDisallowRestrictedHosts, "false"}

	// disallow-restricted-hosts false: 127.0.0.1 over https.
	c := fetcher(t, tlsSrv.Client())
	if _, err := fetch(c, policy(t, open...), tlsSrv.URL+"/job.jar"); err != nil {
		t.Errorf("https on 127.0.0.1 with restricted hosts allowed: %v", err)
	}
	// allowed-schemes with http and file (any case).
	c = fetcher(t, nil)
	p := policy(t, append(open, config.KeyUserArtifactsAllowedSchemes, "HTTP,File")...)
	if _, err := fetch(c, p, srv.URL+"/job.jar"); err != nil {
		t.Errorf("http with http allowed: %v", err)
	}
	if jar, err := fetch(c, p, "file://"+jarFile); err != nil || jar.size != 2 {
		t.Errorf("file with file allowed: %v", err)
	}
	// allowed-schemes without https.
	if _, err := fetch(fetcher(t, tlsSrv.Client()), p, tlsSrv.URL+"/job.jar"); err == nil || !strings.Contains(err.Error(), "jarURI scheme 'https' is not in the allowlist [file, http]") {
		t.Errorf("https with only http and file allowed: %v", err)
	}
	if got := len(srv.gets()) + len(tlsSrv.gets()); got != 2 {
		t.Errorf("%d downloads, want 2", got)
	}
}

// base.dir: downloads are staged there, the directory made when missing;
// one that cannot be made fails the fetch naming the key.
func TestArtifactBaseDir(t *testing.T) {
	srv := newJarServer(t, false, nil)
	c := fetcher(t, nil)
	dir := filepath.Join(t.TempDir(), "a", "b")
	p := policy(t, config.KeyUserArtifactsAllowedSchemes, "http", config.KeyUserArtifactsDisallowRestrictedHosts, "false",
		config.KeyUserArtifactsBaseDir, dir)
	jar, err := c.fetchJar(withArtifactPolicy(context.Background(), p), srv.URL+"/job.jar")
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(dir)
	if err != nil || !st.IsDir() || st.Mode().Perm() != 0o700 {
		t.Errorf("base.dir %s: %v %v, want a directory made with mode 0700", dir, st, err)
	}
	jar.close()
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Errorf("base.dir holds %d files after the upload, want none", len(left))
	}

	notDir := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(notDir, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	p.baseDir = filepath.Join(notDir, "sub")
	_, err = fetch(c, p, srv.URL+"/job.jar")
	if err == nil || !strings.Contains(err.Error(), config.KeyUserArtifactsBaseDir) {
		t.Errorf("unusable base.dir: %v, want an error naming %s", err, config.KeyUserArtifactsBaseDir)
	}
}

// http.header: sent with the download, never in an error message, and not
// carried to another host by a redirect.
func TestArtifactHTTPHeaders(t *testing.T) {
	other := newJarServer(t, false, nil)
	srv := newJarServer(t, false, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/missing.jar":
			http.NotFound(w, r)
		case "/moved.jar":
			http.Redirect(w, r, other.URL+"/job.jar", http.StatusFound)
		default:
			_, _ = w.Write([]byte("PK"))
		}
	})
	c := fetcher(t, nil)
	p := policy(t, config.KeyUserArtifactsAllowedSchemes, "http", config.KeyUserArtifactsDisallowRestrictedHosts, "false",
		config.KeyUserArtifactsHTTPHeader, "X-Token:s3cret-value,Authorization:Bearer tok3n")
	if _, err := fetch(c, p, srv.URL+"/job.jar"); err != nil {
		t.Fatal(err)
	}
	_, err := fetch(c, p, srv.URL+"/missing.jar")
	if err == nil || strings.Contains(err.Error(), "s3cret") || strings.Contains(err.Error(), "tok3n") {
		t.Errorf("failed download: %v, want an error without the header values", err)
	}
	if _, err := fetch(c, p, srv.URL+"/moved.jar"); err != nil {
		t.Fatal(err)
	}
	got := srv.gets()
	if len(got) != 3 {
		t.Fatalf("%d requests, want 3", len(got))
	}
	for i, h := range got {
		if h.Get("X-Token") != "s3cret-value" || h.Get("Authorization") != "Bearer tok3n" {
			t.Errorf("request %d headers %v, want the configured ones", i, h)
		}
	}
	if o := other.gets(); len(o) != 1 || o[0].Get("X-Token") != "" || o[0].Get("Authorization") != "" {
		t.Errorf("redirected request headers %v, want one request without the configured headers", o)
	}
	// Without the option no header is added.
	p.headers = nil
	if _, err := fetch(c, p, srv.URL+"/job.jar"); err != nil {
		t.Fatal(err)
	}
	if h := srv.gets()[3]; h.Get("X-Token") != "" {
		t.Errorf("headers %v without the option", h)
	}
}

// The restricted-host check is on the address the transport dials (so a
// name resolving to a restricted address at fetch time, DNS rebinding, is
// caught too) and on every redirect; a redirect to a scheme not allowed is
// refused.
func TestArtifactDialGuard(t *testing.T) {
	srv := newJarServer(t, false, nil)
	u, _ := url.Parse(srv.URL)
	c := fetcher(t, nil)
	p := policy(t, config.KeyUserArtifactsAllowedSchemes, "http")
	client, done, err := c.artifactHTTPClient(p, u)
	if err != nil {
		t.Fatal(err)
	}
	defer done()
	_, err = client.Get(srv.URL + "/job.jar")
	var re *restrictedAddrError
	if !errors.As(err, &re) || len(srv.gets()) != 0 {
		t.Errorf("GET %s with restricted hosts refused: %v (%d requests reached it), want the dial refused", srv.URL, err, len(srv.gets()))
	}

	// A redirect from an allowed https server to http, with http not allowed.
	tlsSrv := newJarServer(t, true, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, srv.URL+"/job.jar", http.StatusFound)
	})
	_, err = fetch(fetcher(t, tlsSrv.Client()), policy(t, config.KeyUserArtifactsDisallowRestrictedHosts, "false"), tlsSrv.URL+"/job.jar")
	if err == nil || !strings.Contains(err.Error(), "redirected to "+srv.URL+"/job.jar: jarURI scheme 'http' is not in the allowlist [https]") {
		t.Errorf("redirect from https to http: %v, want it refused", err)
	}
	if len(srv.gets()) != 0 {
		t.Errorf("the redirect reached the http server")
	}

	// A transport the guard cannot wrap fails closed.
	c = fetcher(t, &http.Client{Transport: roundTripFunc(func(*http.Request) (*http.Response, error) { return nil, errors.New("unused") })})
	if _, _, err := c.artifactHTTPClient(p, u); err == nil {
		t.Error("custom transport with restricted hosts refused: no error, want one")
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// Through an HTTP proxy (the admin's, on a private address here) the
// proxy is connected to, and the jar's host is checked before the request
// is sent.
func TestArtifactProxy(t *testing.T) {
	proxy := newJarServer(t, false, nil) // answers every proxied GET with the jar
	pu, _ := url.Parse(proxy.URL)
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.Proxy = http.ProxyURL(pu)
	c := fetcher(t, &http.Client{Transport: tr})
	p := policy(t, config.KeyUserArtifactsAllowedSchemes, "http")
	if _, err := fetch(c, p, "http://203.0.113.7/job.jar"); err != nil {
		t.Errorf("public host through the proxy: %v", err)
	}
	u, _ := url.Parse("http://10.0.0.1/job.jar")
	client, done, err := c.artifactHTTPClient(p, u)
	if err != nil {
		t.Fatal(err)
	}
	defer done()
	_, err = client.Get(u.String())
	var re *restrictedAddrError
	if !errors.As(err, &re) {
		t.Errorf("private host through the proxy: %v, want it refused", err)
	}
	if got := proxy.gets(); len(got) != 1 {
		t.Errorf("the proxy got %d requests, want 1", len(got))
	}
}

// In the controller: a jarURI the defaults refuse is a ValidationError in
// status with a Warning event, nothing fetched or submitted; a refusal at
// fetch time (the job recorded before the admin restricted hosts) is a
// SubmitFailed error and event, retried slowly, never in a hot loop.
func TestArtifactRefusalsReported(t *testing.T) {
	f := newFixture(t)
	f.Config = config.Defaults()
	f.Restart()
	f.sessionCluster("session", nil)
	f.Create(f.sessionJob("job", v1beta1.UpgradeModeStateless))
	f.MustSync("job")
	got := f.Get("job")
	if !strings.Contains(jobengine.ErrorMessage(got.Status.Error), "jarURI scheme 'http' is not in the allowlist [https]") || got.Status.JobStatus.JobID != "" {
		t.Errorf("status %s, want the scheme refused", statusString(got))
	}
	if ev := f.Events(); !hasEvent(ev, "Warning ValidationError jarURI scheme 'http'") {
		t.Errorf("events %v, want a Warning ValidationError", ev)
	}
	// A bad spec waits for a change (of the spec, or of the operator
	// configuration, which restarts the operator).
	f.MustSync("job")
	if n := f.jarGets.Load(); n != 0 || len(f.runs()) != 0 {
		t.Errorf("%d jar downloads, %d runs, want none", n, len(f.runs()))
	}

	g := newFixture(t)
	g.sessionCluster("session", nil)
	g.Create(g.sessionJob("job", v1beta1.UpgradeModeStateless))
	g.MustSync("job") // recorded under the permissive configuration
	g.Config[config.KeyUserArtifactsDisallowRestrictedHosts] = "true"
	g.Restart()
	d := g.MustSync("job")
	got = g.Get("job")
	if !strings.Contains(jobengine.ErrorMessage(got.Status.Error), "restricted address") || !strings.Contains(jobengine.ErrorMessage(got.Status.Error), config.KeyUserArtifactsDisallowRestrictedHosts) {
		t.Errorf("status %s, want the restricted host reported", statusString(got))
	}
	if ev := g.Events(); !hasEvent(ev, "Warning SubmitFailed") {
		t.Errorf("events %v, want a Warning SubmitFailed", ev)
	}
	if d < 30*time.Second {
		t.Errorf("retry after %s, want a pause", d)
	}
	g.Clock.Step(time.Second)
	g.MustSync("job")
	if n := g.jarGets.Load(); n != 0 || len(g.runs()) != 0 {
		t.Errorf("%d jar downloads, %d runs, want none", n, len(g.runs()))
	}
}
