package leadere2e

import (
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// recorder is a transparent reverse proxy between one operator replica and
// the API server that notes every request the replica sends. It is how the
// test tells the replicas' writes apart: they run as the same user with the
// same user agent, as replicas of one Deployment do, so the API server
// cannot. It authenticates upstream as the operator user, so RBAC is the
// operator's own.
type recorder struct {
	name string
	srv  *httptest.Server

	mu   sync.Mutex
	reqs []request
}

// request is one request as the proxy received it.
type request struct {
	at     time.Time
	method string
	path   string
}

// mutating reports whether r changes something on the API server.
func (r request) mutating() bool {
	switch r.method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return false
	}
	return true
}

// lease reports whether r is about a coordination.k8s.io Lease (leader
// election's own traffic).
func (r request) lease() bool { return strings.Contains(r.path, "/leases") }

func (r request) String() string {
	return r.at.Format("15:04:05.000") + " " + r.method + " " + r.path
}

func newRecorder(t *testing.T, name string, upstream *rest.Config) *recorder {
	t.Helper()
	tr, err := rest.TransportFor(upstream)
	if err != nil {
		t.Fatal(err)
	}
	target, err := url.Parse(upstream.Host)
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{name: name}
	proxy := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(target)
			pr.Out.Host = target.Host
		},
		Transport: tr,
		// Watches stream: pass every chunk on at once.
		FlushInterval: -1,
		ErrorLog:      nil,
	}
	rec.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec.mu.Lock()
		rec.reqs = append(rec.reqs, request{at: time.Now(), method: r.Method, path: r.URL.Path})
		rec.mu.Unlock()
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(rec.srv.Close)
	return rec
}

// kubeconfig writes a kubeconfig that reaches the API server through the
// recorder (plain HTTP on loopback; the recorder adds the credentials).
func (r *recorder) kubeconfig(t *testing.T, dir string) string {
	t.Helper()
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["local"] = &clientcmdapi.Cluster{Server: r.srv.URL}
	cfg.AuthInfos["operator"] = &clientcmdapi.AuthInfo{}
	cfg.Contexts["local"] = &clientcmdapi.Context{Cluster: "local", AuthInfo: "operator"}
	cfg.CurrentContext = "local"
	path := filepath.Join(dir, r.name+".kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// requests returns the requests received in [from, to) that match keep.
func (r *recorder) requests(from, to time.Time, keep func(request) bool) []request {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []request
	for _, q := range r.reqs {
		if !q.at.Before(from) && q.at.Before(to) && keep(q) {
			out = append(out, q)
		}
	}
	return out
}
