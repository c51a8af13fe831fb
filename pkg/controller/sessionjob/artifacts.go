package sessionjob

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/flinkops/flink-operator/pkg/config"
	"github.com/flinkops/flink-operator/pkg/validation"
)

// artifactPolicy is what the kubernetes.operator.user.artifacts.* options
// say about fetching one session job's jar, read from the job's effective
// configuration when the submission starts:
//
//   - allowed-schemes: the jarURI's scheme must be listed (default https;
//     file:// too must be listed, as upstream). Checked by the webhook and
//     validation, and again here for every fetch and every redirect, so a
//     job recorded before the admin narrowed the list, or an https server
//     redirecting to http, is refused too.
//   - base.dir: the directory downloads are staged in before the upload
//     (created when missing). file:// jars are read where they are.
//   - disallow-restricted-hosts: no connection to a restricted address
//     (validation.RestrictedAddr), checked on the address actually
//     dialled, after DNS resolution and for every redirect, so a name that
//     resolves to a public address when checked and to 169.254.169.254
//     when fetched (DNS rebinding) gets nowhere.
//   - http.header: headers sent with the download (values never logged).
type artifactPolicy struct {
	schemes    []string
	baseDir    string
	restricted bool
	headers    map[string]string
}

// artifactPolicyFrom reads the policy from cfg.
func artifactPolicyFrom(cfg config.Config) (artifactPolicy, error) {
	p := artifactPolicy{
		schemes: cfg.List(config.KeyUserArtifactsAllowedSchemes),
		baseDir: cfg.String(config.KeyUserArtifactsBaseDir),
	}
	var err error
	if p.restricted, err = cfg.Bool(config.KeyUserArtifactsDisallowRestrictedHosts); err != nil {
		return p, err
	}
	if p.headers, err = cfg.Map(config.KeyUserArtifactsHTTPHeader); err != nil {
		return p, err
	}
	return p, nil
}

type artifactPolicyKey struct{}

// withArtifactPolicy gives the submission task (which starts from the
// sync's context, submissions.go) the policy of the job it submits.
func withArtifactPolicy(ctx context.Context, p artifactPolicy) context.Context {
	return context.WithValue(ctx, artifactPolicyKey{}, p)
}

// artifactPolicyOf is the policy withArtifactPolicy gave ctx; without one,
// the defaults (the strictest settings: https only, restricted hosts
// refused).
func artifactPolicyOf(ctx context.Context) artifactPolicy {
	if p, ok := ctx.Value(artifactPolicyKey{}).(artifactPolicy); ok {
		return p
	}
	p, _ := artifactPolicyFrom(config.Defaults())
	return p
}

// stagingDir is where downloads go: the controller's JarDir when set
// (tests), else base.dir, created when missing as upstream's
// ArtifactManager does.
func (c *Controller) stagingDir(p artifactPolicy) (string, error) {
	dir := c.submissions.jarDir
	if dir == "" {
		dir = p.baseDir
	}
	if dir == "" {
		return os.TempDir(), nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("creating %s %s for the download: %w (set it to a directory the operator can write)",
			config.KeyUserArtifactsBaseDir, dir, err)
	}
	return dir, nil
}

// restrictedAddrError is a connection refused by disallow-restricted-hosts.
type restrictedAddrError struct {
	host string // the name asked for, or the address dialled
	addr string
}

func (e *restrictedAddrError) Error() string {
	what := "jar host " + e.host
	if e.addr != "" && e.addr != e.host {
		what += " resolves to " + e.addr + ", which"
	}
	return fmt.Sprintf("%s is a restricted address (loopback, link-local, private, unspecified or multicast); the operator does not fetch jars from such addresses while %s is true",
		what, config.KeyUserArtifactsDisallowRestrictedHosts)
}

// redirectRefused is a redirect to a scheme allowed-schemes does not list.
type redirectRefused struct {
	to  string
	err error
}

func (e *redirectRefused) Error() string { return "redirected to " + e.to + ": " + e.err.Error() }

// artifactHTTPClient is the HTTP client one download uses: the controller's
// (timeout, transport settings) with the policy's redirect rules and, when
// restricted hosts are refused, a transport that checks every address it
// connects to. done releases the transport's idle connections.
func (c *Controller) artifactHTTPClient(p artifactPolicy, origin *url.URL) (cl *http.Client, done func(), err error) {
	base := c.artifactClient
	cl = &http.Client{Transport: base.Transport, Jar: base.Jar, Timeout: base.Timeout}
	cl.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if err := validation.JarSchemeAllowed(req.URL.Scheme, p.schemes); err != nil {
			return &redirectRefused{to: redact(req.URL), err: err}
		}
		if !strings.EqualFold(req.URL.Host, origin.Host) {
			// The configured headers (credentials, often) are for the
			// jarURI's host, not for wherever it redirects to.
			for name := range p.headers {
				req.Header.Del(name)
			}
		}
		if base.CheckRedirect != nil {
			return base.CheckRedirect(req, via)
		}
		if len(via) >= 10 {
			return errors.New("stopped after 10 redirects")
		}
		return nil
	}
	if !p.restricted {
		return cl, func() {}, nil
	}
	tr, err := guardedTransport(base.Transport)
	if err != nil {
		return nil, nil, err
	}
	cl.Transport = tr
	return cl, tr.CloseIdleConnections, nil
}

// guardedTransport clones rt (an *http.Transport, or the default one) so
// that it connects to no restricted address. The check is the dialer's
// Control hook, which sees the resolved address of every connection
// attempt. An HTTP proxy from the environment is the admin's and is
// connected to as it is; the jar's host, which the proxy then connects to,
// is checked by resolving it here first (best effort: the proxy resolves
// it again).
func guardedTransport(rt http.RoundTripper) (*http.Transport, error) {
	if rt == nil {
		rt = http.DefaultTransport
	}
	t, ok := rt.(*http.Transport)
	if !ok {
		return nil, fmt.Errorf("%s is true, but the artifact client's transport (%T) cannot be made to check the addresses it connects to",
			config.KeyUserArtifactsDisallowRestrictedHosts, rt)
	}
	t = t.Clone()
	plain := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
	guarded := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second, Control: refuseRestricted}
	var proxies sync.Map // host:port of the proxies in use
	if proxy := t.Proxy; proxy != nil {
		t.Proxy = func(req *http.Request) (*url.URL, error) {
			pu, err := proxy(req)
			if err != nil || pu == nil {
				return pu, err
			}
			if err := checkHostResolves(req.Context(), req.URL.Hostname()); err != nil {
				return nil, err
			}
			proxies.Store(canonicalHostPort(pu), true)
			return pu, nil
		}
	}
	t.DialTLSContext = nil // TLS then runs over DialContext's connection
	t.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		if _, ok := proxies.Load(addr); ok {
			return plain.DialContext(ctx, network, addr)
		}
		return guarded.DialContext(ctx, network, addr)
	}
	return t, nil
}

// refuseRestricted is the dialer's Control hook: address is the resolved
// ip:port about to be connected to.
func refuseRestricted(_, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return &restrictedAddrError{host: address}
	}
	if validation.RestrictedAddr(ap.Addr()) {
		return &restrictedAddrError{host: ap.Addr().String()}
	}
	return nil
}

// checkHostResolves refuses a host that is, or resolves to, a restricted
// address (for a request sent through a proxy).
func checkHostResolves(ctx context.Context, host string) error {
	if ip, err := netip.ParseAddr(host); err == nil {
		if validation.RestrictedAddr(ip) {
			return &restrictedAddrError{host: host}
		}
		return nil
	}
	ips, err := net.DefaultResolver.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return err
	}
	for _, ip := range ips {
		if validation.RestrictedAddr(ip) {
			return &restrictedAddrError{host: host, addr: ip.String()}
		}
	}
	return nil
}

// canonicalHostPort is a proxy URL's host:port as the transport dials it.
func canonicalHostPort(u *url.URL) string {
	port := u.Port()
	if port == "" {
		switch strings.ToLower(u.Scheme) {
		case "https":
			port = "443"
		case "socks5", "socks5h":
			port = "1080"
		default:
			port = "80"
		}
	}
	return net.JoinHostPort(u.Hostname(), port)
}
