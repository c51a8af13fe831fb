package nodeagent

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// runLog is the output (stdout and stderr) of one run of a container,
// <pod dir>/logs/<container>/<n>.log with n the run's restartCount, as the
// kubelet keeps /var/log/pods/<ns>_<pod>_<uid>/<container>/<n>.log: a file
// per run is what lets `kubectl logs --previous` show the run before.
type runLog struct {
	path string
	// start is where the process's output begins, after the agent's header
	// line (the command line, for whoever reads the file itself).
	start int64
	// ended is closed once the run's processes are gone and the file is
	// complete: a follow request stops there, as the kubelet's does.
	ended chan struct{}
}

// createRunLog creates the log file of run n (truncating what a failed
// start of the same run left) and writes the header line.
func (c *container) createRunLog(n int32, args []string) (*os.File, *runLog, error) {
	if err := os.MkdirAll(c.logDir, 0o755); err != nil {
		return nil, nil, fmt.Errorf("container %s: log dir: %w", c.spec.Name, err)
	}
	path := filepath.Join(c.logDir, strconv.Itoa(int(n))+".log")
	out, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, nil, fmt.Errorf("container %s: log of run %d: %w", c.spec.Name, n, err)
	}
	header, err := fmt.Fprintf(out, "=== %s node agent: starting %s\n", time.Now().Format(time.RFC3339), commandLine(args))
	if err != nil {
		out.Close()
		return nil, nil, fmt.Errorf("container %s: log of run %d: %w", c.spec.Name, n, err)
	}
	return out, &runLog{path: path, start: int64(header), ended: make(chan struct{})}, nil
}

// commandLine renders args on one line, quoting those with spaces, quotes
// or control characters (a script given to sh -c, say).
func commandLine(args []string) string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = a
		if a == "" || strings.ContainsFunc(a, func(r rune) bool { return r <= ' ' || r == '"' || r == '\'' || r == '\\' }) {
			out[i] = strconv.Quote(a)
		}
	}
	return strings.Join(out, " ")
}

// linkCurrentLog points <pod dir>/logs/<container>.log, where all runs were
// appended before there was a file per run, at the current run's file: what
// reads that path (the e2e tests' dumps, people) sees the current run.
func (c *container) linkCurrentLog(rl *runLog) error {
	link := c.logDir + ".log"
	target, err := filepath.Rel(filepath.Dir(link), rl.path)
	if err != nil {
		return err
	}
	// Replaced atomically: a reader never finds the link missing.
	tmp := link + ".tmp"
	os.Remove(tmp)
	if err := os.Symlink(target, tmp); err != nil {
		return fmt.Errorf("container %s: link current log: %w", c.spec.Name, err)
	}
	if err := os.Rename(tmp, link); err != nil {
		return fmt.Errorf("container %s: link current log: %w", c.spec.Name, err)
	}
	return nil
}

// logError is a failed containerLogs lookup: the HTTP status and the
// kubelet's message for the case (the API server passes both on to kubectl).
type logError struct {
	status int
	msg    string
}

func (e *logError) Error() string { return e.msg }

func logErrorf(status int, format string, args ...any) error {
	return &logError{status: status, msg: fmt.Sprintf(format, args...)}
}

// logFor picks the run whose log a request for pod's container reads, from
// the container's state as the kubelet does: with previous, the run in
// lastState (the run before the current one, or the one that just ended
// while the container waits to restart); otherwise the running or
// terminated run, or the last terminated one while the container waits.
func (c *container) logFor(pod string, previous bool) (*runLog, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	name := c.spec.Name
	switch {
	case previous:
		if c.last.Terminated == nil || c.lastLog == nil {
			return nil, logErrorf(http.StatusBadRequest, "previous terminated container %q in pod %q not found", name, pod)
		}
		return c.lastLog, nil
	case (c.state.Running != nil || c.state.Terminated != nil) && c.curLog != nil:
		return c.curLog, nil
	case c.last.Terminated != nil && c.lastLog != nil:
		return c.lastLog, nil
	case c.state.Waiting != nil && c.state.Waiting.Reason != "":
		return nil, logErrorf(http.StatusBadRequest, "container %q in pod %q is waiting to start: %s", name, pod, c.state.Waiting.Reason)
	}
	return nil, logErrorf(http.StatusBadRequest, "container %q in pod %q is waiting to start - no logs yet", name, pod)
}
