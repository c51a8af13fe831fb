package fakejm

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"time"

	"github.com/flinkops/flink-operator/pkg/flink"
)

// Server is a fake JobManager. All exported methods are safe for
// concurrent use with each other and with requests being served.
type Server struct {
	opts Options
	mux  *http.ServeMux
	ts   *httptest.Server

	mu              sync.Mutex
	jobs            map[string]*job
	jobOrder        []string
	ops             map[opKey]*operation
	started         []OperationRecord
	snapshots       map[string]snapshotRecord
	jars            map[string]*jarRecord
	uploadDir       string
	faults          []*faultRule
	nextFaultID     int
	log             []Request
	failSavepoints  map[string]string // job id ("" = all) -> cause
	failCheckpoints map[string]string
	completionPolls int
	completionDelay time.Duration
	statsCacheTTL   time.Duration             // see SetCheckpointStatsCache
	statsCache      map[string]*statsSnapshot // by job id: what its statistics endpoints last answered
}

// maxRequestBody caps request bodies; jar uploads in tests are small.
const maxRequestBody = 256 << 20

// New starts a fake JobManager on a loopback port. Call Close when done.
func New(opts Options) *Server {
	s := NewUnstarted(opts)
	s.ts = httptest.NewServer(s)
	return s
}

// NewUnstarted returns a fake that is not listening; serve it with any
// http.Server (cmd/fake-jobmanager does). URL returns "" for it.
func NewUnstarted(opts Options) *Server {
	opts = opts.withDefaults()
	s := &Server{
		opts:            opts,
		mux:             http.NewServeMux(),
		jobs:            map[string]*job{},
		ops:             map[opKey]*operation{},
		snapshots:       map[string]snapshotRecord{},
		jars:            map[string]*jarRecord{},
		uploadDir:       "/tmp/flink-web-" + newUUID() + "/flink-web-upload",
		failSavepoints:  map[string]string{},
		failCheckpoints: map[string]string{},
		completionPolls: opts.CompletionPolls,
		completionDelay: opts.CompletionDelay,
		statsCache:      map[string]*statsSnapshot{},
	}
	s.routes()
	return s
}

// URL is the base URL of a started fake, e.g. "http://127.0.0.1:34567".
func (s *Server) URL() string {
	if s.ts == nil {
		return ""
	}
	return s.ts.URL
}

// Close stops a started fake, waiting for requests in flight.
func (s *Server) Close() {
	if s.ts != nil {
		s.ts.Close()
	}
}

// Version is the emulated Flink version.
func (s *Server) Version() flink.Version { return s.opts.Version }

func (s *Server) now() time.Time { return s.opts.Clock.Now() }

// ServeHTTP serves the REST API. Like Flink, every path is also served
// under the /v1 prefix.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if p := r.URL.Path; strings.HasPrefix(p, "/v1/") {
		r2 := r.Clone(r.Context())
		r2.URL.Path = strings.TrimPrefix(p, "/v1")
		r2.URL.RawPath = ""
		r = r2
	}
	s.mux.ServeHTTP(w, r)
}

// inbound is a request as handlers see it: the body is already read.
type inbound struct {
	r    *http.Request
	body []byte
}

func (in *inbound) pathValue(name string) string { return in.r.PathValue(name) }

type handler func(in *inbound) reply

// handle registers h for route with logging, fault injection and the
// time-driven progress of jobs and operations around it.
func (s *Server) handle(route string, h handler) {
	s.mux.HandleFunc(route, func(w http.ResponseWriter, r *http.Request) {
		s.serve(route, h, w, r)
	})
}

func (s *Server) serve(route string, h handler, w http.ResponseWriter, r *http.Request) {
	raw, _ := io.ReadAll(io.LimitReader(r.Body, maxRequestBody))
	entry := Request{Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery, Route: route, Body: raw}

	s.mu.Lock()
	entry.Time = s.now()
	latency, fault := s.matchFaults(route, r.URL.Path)
	s.mu.Unlock()

	if latency > 0 {
		t := time.NewTimer(latency)
		select {
		case <-t.C:
		case <-r.Context().Done():
			t.Stop()
			s.finishLog(entry, 0)
			return
		}
	}

	var rep reply
	switch {
	case fault != nil && fault.Drop:
		s.finishLog(entry, 0)
		dropConnection(w)
		return
	case fault != nil:
		errs := fault.Errors
		if len(errs) == 0 {
			errs = defaultFaultErrors(fault.Status)
		}
		rep = reply{status: fault.Status, body: errorBody{Errors: errs}}
	default:
		s.mu.Lock()
		s.progressJobs()
		s.progressOps()
		rep = h(&inbound{r: r, body: raw})
		s.mu.Unlock()
	}
	s.finishLog(entry, rep.status)
	writeReply(w, rep)
}

func (s *Server) finishLog(entry Request, status int) {
	s.mu.Lock()
	entry.Status = status
	s.logRequest(entry)
	s.mu.Unlock()
	if s.opts.Logf != nil {
		s.opts.Logf("%s %s -> %d", entry.Method, entry.Path, status)
	}
}

// writeReply writes rep as Flink does: JSON with an explicit charset.
func writeReply(w http.ResponseWriter, rep reply) {
	if rep.body == nil {
		w.WriteHeader(rep.status)
		return
	}
	b, err := json.Marshal(rep.body)
	if err != nil {
		rep = internalError("java.lang.RuntimeException: fakejm cannot encode response: " + err.Error())
		b, _ = json.Marshal(rep.body)
	}
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	w.WriteHeader(rep.status)
	_, _ = w.Write(b)
}

// dropConnection closes the TCP connection without an HTTP answer, like
// a JobManager pod that dies mid-request.
func dropConnection(w http.ResponseWriter) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		panic(http.ErrAbortHandler)
	}
	conn, _, err := hj.Hijack()
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	_ = conn.Close()
}

// okReply and acceptedReply are the two success statuses Flink uses.
func okReply(body any) reply       { return reply{status: http.StatusOK, body: body} }
func acceptedReply(body any) reply { return reply{status: http.StatusAccepted, body: body} }
