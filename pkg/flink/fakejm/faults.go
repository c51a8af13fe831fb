package fakejm

import (
	"time"
)

// Fault injection lets tests reproduce what a real JobManager does under
// stress: slow answers, 503 during leader election, 5xx, spurious 404s,
// connections dropped without an answer.

// Fault describes an injected misbehaviour. A request matches when Route
// (if set) equals the route pattern it hits and Path (if set) equals its
// path (without a /v1 prefix).
type Fault struct {
	// Route is a route pattern such as RouteSavepointTrigger; empty
	// matches every route, including unknown URLs.
	Route string
	// Path matches one concrete path, e.g. "/jobs/<id>/savepoints".
	Path string
	// Latency delays the answer (wall-clock time, so client timeouts fire).
	Latency time.Duration
	// Status, when non-zero, answers with this status instead of handling
	// the request (after Latency).
	Status int
	// Errors is the errors[] body for Status; default a Flink-like text.
	Errors []string
	// Drop closes the connection without answering (after Latency).
	Drop bool
	// Times limits the fault to the next N matching requests; 0 = until
	// removed.
	Times int
}

type faultRule struct {
	Fault
	id   int
	used int
}

// InjectFault adds f and returns a function that removes it again.
func (s *Server) InjectFault(f Fault) (remove func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.nextFaultID++
	id := s.nextFaultID
	s.faults = append(s.faults, &faultRule{Fault: f, id: id})
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		for i, r := range s.faults {
			if r.id == id {
				s.faults = append(s.faults[:i], s.faults[i+1:]...)
				return
			}
		}
	}
}

// ClearFaults removes every injected fault.
func (s *Server) ClearFaults() {
	s.mu.Lock()
	s.faults = nil
	s.mu.Unlock()
}

// matchFaults returns the total latency and the first status/drop fault
// for a request, consuming one use of each matching fault. Caller holds s.mu.
func (s *Server) matchFaults(route, path string) (latency time.Duration, hit *Fault) {
	kept := s.faults[:0]
	for _, r := range s.faults {
		matches := (r.Route == "" || r.Route == route) && (r.Path == "" || r.Path == path)
		terminal := r.Status != 0 || r.Drop
		// Latency-only faults always apply; of the answering faults only
		// the first one does (and only it is used up).
		if matches && (!terminal || hit == nil) {
			latency += r.Latency
			if terminal {
				f := r.Fault
				hit = &f
			}
			r.used++
		}
		if r.Times == 0 || r.used < r.Times {
			kept = append(kept, r)
		}
	}
	s.faults = kept
	return latency, hit
}
