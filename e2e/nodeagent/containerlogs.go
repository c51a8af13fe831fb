package nodeagent

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"time"
)

// followPoll is how often a follow request looks for new output.
const followPoll = 200 * time.Millisecond

// containerLogs serves the kubelet's
// GET /containerLogs/{namespace}/{pod}/{container}, where the API server
// sends pods/log requests (`kubectl logs`), with the query parameters
// follow, previous, tailLines and limitBytes. timestamps, sinceSeconds and
// sinceTime are accepted and ignored: the files hold no time per line.
type containerLogs struct {
	// find returns the log of the run a request reads, or a *logError.
	find func(namespace, pod, container string, previous bool) (*runLog, error)
	poll time.Duration
}

func (h containerLogs) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	opts, err := parseLogOptions(r.URL.Query())
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	pod := r.PathValue("pod")
	rl, err := h.find(r.PathValue("namespace"), pod, r.PathValue("container"), opts.previous)
	var le *logError
	switch {
	case errors.As(err, &le):
		writeError(w, le.status, le.msg)
		return
	case err != nil:
		writeError(w, http.StatusInternalServerError, err.Error())
		return
	}
	f, err := os.Open(rl.path)
	if errors.Is(err, os.ErrNotExist) {
		// The pod went away between the lookup and here (its directory is
		// removed last).
		writeError(w, http.StatusNotFound, fmt.Sprintf("pod %q does not exist", pod))
		return
	}
	if err != nil {
		writeError(w, http.StatusInternalServerError, err.Error())
		return
	}
	defer f.Close()
	w.Header().Set("Content-Type", "text/plain")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	flush := func() { _ = rc.Flush() }
	// The headers now: a follow of a quiet container must not keep the API
	// server (and kubectl) waiting for them.
	flush()
	// A failure here can only end the response early: the status is sent.
	_ = streamLog(r.Context(), w, flush, f, rl, opts, h.poll)
}

// parseLogOptions reads the query as the kubelet does (PodLogOptions).
func parseLogOptions(q url.Values) (logOptions, error) {
	opts := logOptions{tailLines: -1, limitBytes: -1}
	for name, dst := range map[string]*bool{"follow": &opts.follow, "previous": &opts.previous, "timestamps": new(bool)} {
		if v := q.Get(name); v != "" {
			b, err := strconv.ParseBool(v)
			if err != nil {
				return opts, fmt.Errorf("%s=%q: not a boolean", name, v)
			}
			*dst = b
		}
	}
	for _, p := range []struct {
		name string
		dst  *int64
		min  int64
	}{
		{"tailLines", &opts.tailLines, 0},
		{"limitBytes", &opts.limitBytes, 1},
		{"sinceSeconds", new(int64), 1},
	} {
		if v := q.Get(p.name); v != "" {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n < p.min {
				return opts, fmt.Errorf("%s=%q: must be an integer >= %d", p.name, v, p.min)
			}
			*p.dst = n
		}
	}
	if v := q.Get("sinceTime"); v != "" {
		if _, err := time.Parse(time.RFC3339, v); err != nil {
			return opts, fmt.Errorf("sinceTime=%q: not an RFC 3339 time", v)
		}
	}
	return opts, nil
}

// writeError answers as the kubelet does: the message as plain text, no
// newline (the API server quotes the body in its error to kubectl).
func writeError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, _ = io.WriteString(w, msg)
}

// findLog looks up the run a containerLogs request reads: 404 for a pod
// this agent does not run or a container not in its spec, as the kubelet.
func (a *Agent) findLog(namespace, pod, container string, previous bool) (*runLog, error) {
	w := a.workerNamed(namespace, pod)
	if w == nil {
		return nil, logErrorf(http.StatusNotFound, "pod %q does not exist", pod)
	}
	c, inSpec, waiting := w.containerNamed(container)
	switch {
	case !inSpec:
		return nil, logErrorf(http.StatusNotFound, "container %q not found in pod %q", container, pod)
	case c == nil: // volumes or environment not ready yet
		return nil, logErrorf(http.StatusBadRequest, "container %q in pod %q is waiting to start: %s", container, pod, waiting)
	}
	return c.logFor(pod, previous)
}

// workerNamed is the worker of pod namespace/name; the newest if an old pod
// of the name is still being stopped.
func (a *Agent) workerNamed(namespace, name string) *podWorker {
	a.mu.Lock()
	defer a.mu.Unlock()
	var found *podWorker
	for _, w := range a.workers {
		if w.namespace == namespace && w.name == name && (found == nil || w.seq > found.seq) {
			found = w
		}
	}
	return found
}

// containerNamed returns the pod's container name (nil before the pod's
// containers are set up, then waiting says why), and whether the pod's spec
// has such a container at all.
func (w *podWorker) containerNamed(name string) (c *container, inSpec bool, waiting string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, c := range slices.Concat(w.initContainers, w.containers) {
		if c.spec.Name == name {
			return c, true, ""
		}
	}
	for _, s := range slices.Concat(w.pod.Spec.Containers, w.pod.Spec.InitContainers) {
		if s.Name == name {
			return nil, true, w.setupReason
		}
	}
	return nil, false, ""
}
