package fakejm

import (
	"time"
)

// The request log lets tests assert on what a client actually sent: how
// many triggers, with which JSON fields, in which order.

// maxLoggedBody caps the body kept per request (jar uploads can be big).
const maxLoggedBody = 64 << 10

// Request is one logged request.
type Request struct {
	Method string
	Path   string // without a /v1 prefix
	Query  string
	Route  string // matched route pattern, "" for unknown URLs
	Body   []byte // truncated to 64 KiB
	Status int    // status answered (0 if the connection was dropped)
	Time   time.Time
}

func (s *Server) logRequest(r Request) {
	n := min(len(r.Body), maxLoggedBody)
	r.Body = append([]byte(nil), r.Body[:n]...) // never pin a large upload
	s.log = append(s.log, r)
	// Compacted only once it holds twice the bound: copying the whole log
	// at every request past the bound made a long benchmark's requests cost
	// the log's size each. Readers see the newest MaxRequestLog (logged).
	if len(s.log) >= 2*s.opts.MaxRequestLog {
		s.log = append([]Request(nil), s.logged()...)
	}
}

// logged is the bounded log: its newest MaxRequestLog entries. Callers
// hold s.mu.
func (s *Server) logged() []Request {
	return s.log[max(0, len(s.log)-s.opts.MaxRequestLog):]
}

// Requests returns a copy of the request log, oldest first.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.logged()...)
}

// RequestsTo returns the logged requests that hit route (a Route* constant).
func (s *Server) RequestsTo(route string) []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Request
	for _, r := range s.logged() {
		if r.Route == route {
			out = append(out, r)
		}
	}
	return out
}

// ResetRequests empties the request log.
func (s *Server) ResetRequests() {
	s.mu.Lock()
	s.log = nil
	s.mu.Unlock()
}

// Operations returns the operations that were actually started, oldest
// first. A repeated trigger with a known trigger id adds nothing here,
// which is how tests prove idempotency.
func (s *Server) Operations() []OperationRecord {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]OperationRecord(nil), s.started...)
}

// StartedOperations counts started operations of kind k.
func (s *Server) StartedOperations(k OperationKind) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, r := range s.started {
		if r.Kind == k {
			n++
		}
	}
	return n
}
