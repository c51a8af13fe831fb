package nodeagent

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// defaultTokenSeconds is a projected token's lifetime when the projection
// names none (the API's default, one hour).
const defaultTokenSeconds = 3600

// serviceAccountToken is a token of a projected serviceAccountToken volume
// source: requested from the TokenRequest API as the kubelet does.
type serviceAccountToken struct {
	Token string
	// RefreshAt is when the kubelet would replace it: after 80% of its
	// lifetime (the requested one, or less if the API server issued less).
	RefreshAt time.Time
}

// refreshAt is 80% into the lifetime of a token issued at issued: the
// requested seconds, or up to its expiry if that is sooner.
func refreshAt(issued time.Time, requested int64, expires time.Time) time.Time {
	life := time.Duration(requested) * time.Second
	if d := expires.Sub(issued); d > 0 && d < life {
		life = d
	}
	return issued.Add(life * 8 / 10)
}

// serviceAccountToken implements objectSource: a TokenRequest for the
// pod's ServiceAccount, bound to the pod (name and UID), for the
// projection's audience (the API server's when empty) and lifetime.
func (a *Agent) serviceAccountToken(pod *corev1.Pod, p *corev1.ServiceAccountTokenProjection) (serviceAccountToken, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	seconds := int64(defaultTokenSeconds)
	if p.ExpirationSeconds != nil {
		seconds = *p.ExpirationSeconds
	}
	tr := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
		ExpirationSeconds: &seconds,
		BoundObjectRef:    &authenticationv1.BoundObjectReference{APIVersion: "v1", Kind: "Pod", Name: pod.Name, UID: pod.UID},
	}}
	if p.Audience != "" {
		tr.Spec.Audiences = []string{p.Audience}
	}
	sa := pod.Spec.ServiceAccountName
	if sa == "" {
		sa = "default"
	}
	issued := time.Now()
	tr, err := a.client.CoreV1().ServiceAccounts(pod.Namespace).CreateToken(ctx, sa, tr, metav1.CreateOptions{})
	if err != nil {
		return serviceAccountToken{}, fmt.Errorf("token of ServiceAccount %s: %w", sa, err)
	}
	return serviceAccountToken{Token: tr.Status.Token, RefreshAt: refreshAt(issued, seconds, tr.Status.ExpirationTimestamp.Time)}, nil
}

// tokenCache is the pod's objectSource for its API data volumes: ConfigMaps
// and Secrets as the agent reads them, and service-account tokens requested
// once and then reused until they are due for refresh (as the kubelet's
// token manager does, by audience and lifetime), so that rewriting a
// projected volume does not request a token each time. The pod worker
// rewrites the volumes when the next token is due (nextRefresh).
type tokenCache struct {
	objectSource
	mu     sync.Mutex
	tokens map[tokenKey]serviceAccountToken
}

type tokenKey struct {
	audience string
	seconds  int64
}

func newTokenCache(src objectSource) *tokenCache {
	return &tokenCache{objectSource: src, tokens: map[tokenKey]serviceAccountToken{}}
}

func (c *tokenCache) serviceAccountToken(pod *corev1.Pod, p *corev1.ServiceAccountTokenProjection) (serviceAccountToken, error) {
	key := tokenKey{audience: p.Audience, seconds: defaultTokenSeconds}
	if p.ExpirationSeconds != nil {
		key.seconds = *p.ExpirationSeconds
	}
	c.mu.Lock()
	tok, ok := c.tokens[key]
	c.mu.Unlock()
	if ok && time.Now().Before(tok.RefreshAt) {
		return tok, nil
	}
	tok, err := c.objectSource.serviceAccountToken(pod, p)
	if err != nil {
		return tok, err
	}
	c.mu.Lock()
	c.tokens[key] = tok
	c.mu.Unlock()
	return tok, nil
}

// nextRefresh is when the first token is due; false without tokens.
func (c *tokenCache) nextRefresh() (time.Time, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var next time.Time
	for _, t := range c.tokens {
		if next.IsZero() || t.RefreshAt.Before(next) {
			next = t.RefreshAt
		}
	}
	return next, !next.IsZero()
}

// writeFileAtomic replaces path by a file with data (a rename in its
// directory: a reader sees the old or the new content, and a bind mount of
// the directory sees the new one).
func writeFileAtomic(path string, data []byte, perm os.FileMode) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Chmod(perm)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		os.Remove(f.Name())
	}
	return err
}

// serviceEnv are the variables of the API server's `kubernetes` Service that
// the kubelet gives every container, pointing here at the API server itself
// (its ClusterIP would lead nowhere: there is no kube-proxy), so that an
// in-cluster client (client-go's, fabric8's in Flink) finds it:
// KUBERNETES_SERVICE_HOST, KUBERNETES_SERVICE_PORT(_HTTPS) and the
// KUBERNETES_PORT* service-link variables. Empty when host is no URL with a
// port.
func serviceEnv(host string) []EnvVar {
	if !strings.Contains(host, "://") {
		host = "https://" + host
	}
	u, err := url.Parse(host)
	if err != nil || u.Hostname() == "" {
		return nil
	}
	port := u.Port()
	if port == "" {
		port = "443"
	}
	h := u.Hostname()
	addr := "tcp://" + net.JoinHostPort(h, port)
	return []EnvVar{
		{"KUBERNETES_SERVICE_HOST", h},
		{"KUBERNETES_SERVICE_PORT", port},
		{"KUBERNETES_SERVICE_PORT_HTTPS", port},
		{"KUBERNETES_PORT", addr},
		{"KUBERNETES_PORT_" + port + "_TCP", addr},
		{"KUBERNETES_PORT_" + port + "_TCP_PROTO", "tcp"},
		{"KUBERNETES_PORT_" + port + "_TCP_PORT", port},
		{"KUBERNETES_PORT_" + port + "_TCP_ADDR", h},
	}
}
