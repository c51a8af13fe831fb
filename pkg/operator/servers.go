package operator

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"k8s.io/klog/v2"

	"github.com/flinkops/flink-operator/pkg/metrics"
)

// readiness is what /readyz reports: not ready until the informer caches have
// synced, so a probe never routes to (or a script never trusts) a cold cache.
type readiness struct {
	ready  atomic.Bool
	reason atomic.Value // string
}

func (r *readiness) set(ready bool, reason string) {
	r.ready.Store(ready)
	r.reason.Store(reason)
}

func (r *readiness) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	if r.ready.Load() {
		fmt.Fprintln(w, "ok")
		return
	}
	reason, _ := r.reason.Load().(string)
	http.Error(w, "not ready: "+reason, http.StatusServiceUnavailable)
}

// probeMux serves /healthz, the liveness probe: it fails when live does
// (the canary resources of pkg/canary went unreconciled; live always passes
// with kubernetes.operator.health.probe.enabled=false), so the kubelet
// restarts a stalled operator; and /readyz.
func probeMux(ready *readiness, live func() error) *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		if live != nil {
			if err := live(); err != nil {
				http.Error(w, "unhealthy: "+err.Error(), http.StatusServiceUnavailable)
				return
			}
		}
		fmt.Fprintln(w, "ok")
	})
	mux.Handle("/readyz", ready)
	return mux
}

// metricsMux serves /metrics and, with profiling, Go's /debug/pprof/ (as
// the Kubernetes components' --profiling does): heap and CPU profiles of a
// running operator, for the scale benchmark and for users chasing memory.
//
// /metrics is always sent uncompressed: a gzip writer at the level promhttp
// uses holds about 800 KB of tables, which its pool keeps for as long as
// scrapes come (the operator's whole live heap with 11,000 objects cached
// is about 23 MB), to save a few tens of kilobytes on a scrape inside the
// cluster.
func metricsMux(profiling bool) *http.ServeMux {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(metrics.Registry, promhttp.HandlerOpts{DisableCompression: true}))
	if profiling {
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	return mux
}

// server is an HTTP server bound before Run returns, so a bad address fails
// start-up instead of a background goroutine.
type server struct {
	name string
	srv  *http.Server
	ln   net.Listener
}

func listen(name, addr string, handler http.Handler) (*server, error) {
	if addr == "" || addr == "0" {
		return nil, nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("%s server: %w", name, err)
	}
	return &server{name: name, srv: &http.Server{Handler: handler}, ln: ln}, nil
}

func (s *server) serve(logger klog.Logger) {
	logger.Info("Serving", "server", s.name, "address", s.ln.Addr().String())
	if err := s.srv.Serve(s.ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		logger.Error(err, "HTTP server stopped", "server", s.name)
	}
}

func (s *server) shutdown(ctx context.Context) error {
	return s.srv.Shutdown(ctx)
}

// closeListeners releases the ports of servers that will not be served
// (start-up failed after they were bound); nil servers are skipped.
func closeListeners(servers ...*server) {
	for _, s := range servers {
		if s != nil {
			_ = s.ln.Close()
		}
	}
}
