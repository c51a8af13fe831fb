package workers

import (
	"context"
	"net/http"
	"sync/atomic"
)

// A sync "changes something" when it sends a request that is not a read:
// an API write or a state-changing Flink REST call. The per-resource rate
// limit (Pacing) counts only such syncs. Upstream's limit counts
// reconciliations, and its framework never runs one for an event that only
// echoes the resource's own status write; here such an echo is a sync that
// finds nothing to do, costs no request, and must not use up the budget
// that protects the API server and Flink from a resource caught in a loop
// of writes.

type changeMarkKey struct{}

// changeMark is the sync's record of whether it changed something.
type changeMark struct{ changed atomic.Bool }

// withChangeMark returns ctx carrying a fresh mark for one sync.
func withChangeMark(ctx context.Context) (context.Context, *changeMark) {
	m := &changeMark{}
	return context.WithValue(ctx, changeMarkKey{}, m), m
}

// MarkChange records that the sync running with ctx changed something. A
// no-op outside a sync.
func MarkChange(ctx context.Context) {
	if m, ok := ctx.Value(changeMarkKey{}).(*changeMark); ok {
		m.changed.Store(true)
	}
}

// MarkingTransport wraps rt so that every request other than a read (GET,
// HEAD, OPTIONS) marks the sync whose context it carries as a change. The
// operator's API clients and its Flink REST client use it, so every write
// a sync makes is seen without the controllers reporting them.
func MarkingTransport(rt http.RoundTripper) http.RoundTripper {
	return markingTransport{next: rt}
}

type markingTransport struct{ next http.RoundTripper }

func (t markingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	switch req.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
	default:
		MarkChange(req.Context())
	}
	return t.next.RoundTrip(req)
}
