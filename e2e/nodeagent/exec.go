package nodeagent

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
	"k8s.io/cri-streaming/pkg/streaming/remotecommand"
	utilexec "k8s.io/utils/exec"
)

// The kubelet's defaults for its streaming server
// (streamingConnectionIdleTimeout; the CRI streaming server's stream
// creation timeout).
const (
	streamIdleTimeout     = 4 * time.Hour
	streamCreationTimeout = remotecommand.DefaultStreamCreationTimeout
)

// nsenter enters a running container's namespaces for exec
// (util-linux; /usr/bin/nsenter on Debian).
const nsenter = "/usr/bin/nsenter"

// execOutputDrain bounds how long an exec waits, once its command has
// exited, for output still held open by processes the command left behind.
const execOutputDrain = time.Second

// serveExec serves the kubelet's /exec/{namespace}/{pod}[/{uid}]/{container}
// (GET or POST, the query's command=... once per argument and
// input/output/error/tty=1), where the API server sends pods/exec
// (`kubectl exec`): the streams are the CRI streaming server's
// (k8s.io/cri-streaming: SPDY channel.k8s.io v1-v4, and WebSocket
// channel.k8s.io), the command runs in the container's namespaces
// (execInContainer) and its exit code goes back in the v4 status as the
// kubelet reports it.
func (a *Agent) serveExec(w http.ResponseWriter, r *http.Request) {
	opts, err := remotecommand.NewOptions(r)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	namespace, pod, name := r.PathValue("namespace"), r.PathValue("pod"), r.PathValue("container")
	command := r.URL.Query()["command"]
	a.logf("kubelet API: exec %s/%s/%s %q (stdin %v, stdout %v, stderr %v, tty %v; %s)", namespace, pod, name, command,
		opts.Stdin, opts.Stdout, opts.Stderr, opts.TTY, streamProtocols(r))
	if len(command) == 0 {
		writeError(w, http.StatusBadRequest, "you must specify a command (command=...)")
		return
	}
	c, status, msg := a.runningContainer(namespace, pod, r.PathValue("uid"), name)
	if c == nil {
		writeError(w, status, msg)
		return
	}
	defer closeWithServer(r)()
	remotecommand.ServeExec(w, r, containerExec{c}, pod, r.PathValue("uid"), name, command, opts,
		streamIdleTimeout, streamCreationTimeout, remotecommand.SupportedStreamingProtocols)
}

// serveAttach serves the kubelet's
// /attach/{namespace}/{pod}[/{uid}]/{container}, where the API server sends
// pods/attach (`kubectl attach`), with the same streams as exec: the
// container's output from now on (stdout and stderr together, as the run's
// log file has them, on the stdout stream, or stderr's without one) until
// the run ends or the agent's kubelet API closes. The agent gives no
// container a stdin or a terminal: input from the client is read and
// dropped, a terminal is not allocated.
func (a *Agent) serveAttach(w http.ResponseWriter, r *http.Request) {
	opts, err := remotecommand.NewOptions(r)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	namespace, pod, name := r.PathValue("namespace"), r.PathValue("pod"), r.PathValue("container")
	a.logf("kubelet API: attach %s/%s/%s (stdin %v, stdout %v, stderr %v, tty %v; %s)", namespace, pod, name,
		opts.Stdin, opts.Stdout, opts.Stderr, opts.TTY, streamProtocols(r))
	c, status, msg := a.runningContainer(namespace, pod, r.PathValue("uid"), name)
	if c == nil {
		writeError(w, status, msg)
		return
	}
	defer closeWithServer(r)()
	remotecommand.ServeAttach(w, r, containerAttach{c}, pod, r.PathValue("uid"), name, opts,
		streamIdleTimeout, streamCreationTimeout, remotecommand.SupportedStreamingProtocols)
}

// containerAttach is the remotecommand.Attacher of one container.
type containerAttach struct{ c *container }

func (a containerAttach) AttachContainer(ctx context.Context, _, _, _ string, in io.Reader, out, errOut io.WriteCloser,
	_ bool, resize <-chan remotecommand.TerminalSize) error {
	a.c.mu.Lock()
	rl := a.c.curLog
	running := a.c.state.Running != nil
	a.c.mu.Unlock()
	if !running || rl == nil {
		return fmt.Errorf("container not found (%q)", a.c.spec.Name)
	}
	f, err := os.Open(rl.path)
	if err != nil {
		return err
	}
	defer f.Close()
	done := make(chan struct{})
	defer close(done)
	if in != nil {
		go func() { _, _ = io.Copy(io.Discard, in) }()
	}
	if resize != nil {
		go func() {
			for {
				select {
				case _, ok := <-resize:
					if !ok {
						return
					}
				case <-done:
					return
				}
			}
		}()
	}
	var w io.Writer = io.Discard
	if out != nil {
		w = out
	} else if errOut != nil {
		w = errOut
	}
	return streamLog(ctx, w, func() {}, f, rl, logOptions{follow: true, tailLines: 0, limitBytes: -1}, followPoll)
}

// streamProtocols describes the upgrade a streaming request asks for (for
// the agent's log: what the API server sends).
func streamProtocols(r *http.Request) string {
	var parts []string
	for _, h := range []string{"Upgrade", "X-Stream-Protocol-Version", "Sec-Websocket-Protocol"} {
		if v := r.Header.Values(h); len(v) > 0 {
			parts = append(parts, h+": "+strings.Join(v, ", "))
		}
	}
	if len(parts) == 0 {
		return "no upgrade"
	}
	return strings.Join(parts, "; ")
}

// runningContainer finds the container an exec is for, answering as the
// kubelet does when it cannot: 404 "pod does not exist" for a pod this
// agent does not run (or of another uid), 500 `container not found
// ("<name>")` for a container that is not running (not in the spec, not
// started yet, between restarts, ended).
func (a *Agent) runningContainer(namespace, pod, uid, name string) (c *container, status int, msg string) {
	w := a.workerNamed(namespace, pod)
	if w == nil || (uid != "" && string(w.uid) != uid) {
		return nil, http.StatusNotFound, "pod does not exist"
	}
	c, _, _ = w.containerNamed(name)
	if c == nil || c.runningProc() == nil {
		return nil, http.StatusInternalServerError, fmt.Sprintf("container not found (%q)", name)
	}
	return c, 0, ""
}

// runningProc is the container's process while it runs, else nil.
func (c *container) runningProc() *proc {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.state.Running == nil {
		return nil
	}
	return c.proc
}

// connKey is the request context's key of the request's connection (see
// kubeletServer).
type connKey struct{}

// closeWithServer closes the request's connection, which a streaming
// request hijacks (the server's Close leaves such connections alone), when
// the request's context ends before the returned function is called: when
// the agent's kubelet API closes, its sessions end.
func closeWithServer(r *http.Request) (stop func()) {
	conn, ok := r.Context().Value(connKey{}).(net.Conn)
	if !ok {
		return func() {}
	}
	s := context.AfterFunc(r.Context(), func() { conn.Close() })
	return func() { s() }
}

// containerExec is the remotecommand.Executor of one container.
type containerExec struct{ c *container }

func (e containerExec) ExecInContainer(ctx context.Context, _, _, _ string, cmd []string, in io.Reader, out, errOut io.WriteCloser,
	tty bool, resize <-chan remotecommand.TerminalSize, _ time.Duration) error {
	return e.c.execInContainer(ctx, cmd, in, out, errOut, tty, resize)
}

// exitCode is a command's exit code as the kubelet reports it
// (utilexec.ExitError: the v4 status carries it to kubectl, which exits
// with it): the exit status, or 128 + the signal that killed it.
type exitCode int

var _ utilexec.ExitError = exitCode(0)

func (e exitCode) Error() string   { return "exit status " + strconv.Itoa(int(e)) }
func (e exitCode) String() string  { return e.Error() }
func (e exitCode) Exited() bool    { return true }
func (e exitCode) ExitStatus() int { return int(e) }

// execInContainer runs argv in the running container c as `kubectl exec`
// runs a command in a pod's container: nsenter enters the namespaces of
// the container's main process (mount, with its root and working
// directory; PID and UTS when the container has its own), with the
// environment that process started with (the container's: its env, the
// API server's variables, the image's), stdin/stdout/stderr as given, or a
// terminal (a pty, resized as asked) with tty. The command ends when it
// exits, when ctx ends or when the container's process ends (its process
// group is killed then, as a container's exec processes die with it); a
// non-zero exit is an exitCode.
func (c *container) execInContainer(ctx context.Context, argv []string, in io.Reader, out, errOut io.WriteCloser,
	tty bool, resize <-chan remotecommand.TerminalSize) error {
	p, env, err := c.execTarget(ctx)
	if err != nil {
		return err
	}
	pid := p.pid()
	args := []string{"--target", strconv.Itoa(pid), "--mount", "--root", "--wd"}
	for _, ns := range []struct{ name, flag string }{{"pid", "--pid"}, {"uts", "--uts"}} {
		own, err := ownNamespace(pid, ns.name)
		if err != nil {
			return fmt.Errorf("container %s: %w", c.spec.Name, err)
		}
		if own {
			args = append(args, ns.flag)
		}
	}
	cmd := exec.Command(nsenter, append(append(args, "--"), argv...)...)
	cmd.Env = env
	// The agent's death takes nsenter with it (the command, in the
	// container's PID namespace, dies with the container).
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	var finish func() // after the command exited: the output is complete
	if tty {
		if finish, err = startInTerminal(cmd, in, out, resize); err != nil {
			return fmt.Errorf("exec in container %s: %w", c.spec.Name, err)
		}
	} else {
		cmd.SysProcAttr.Setpgid = true
		cmd.Stdin, cmd.Stdout, cmd.Stderr = in, out, errOut
		// Output a process left behind keeps open, or stdin the client
		// keeps open, must not hold the exec past the command.
		cmd.WaitDelay = execOutputDrain
		if err := cmd.Start(); err != nil {
			return fmt.Errorf("exec in container %s: %w", c.spec.Name, err)
		}
		finish = func() {}
	}
	group := cmd.Process.Pid
	exited := make(chan struct{})
	go func() {
		select {
		case <-exited:
			return
		case <-ctx.Done():
		case <-p.done:
		}
		_ = syscall.Kill(-group, syscall.SIGKILL)
	}()
	err = cmd.Wait()
	close(exited)
	finish()
	if errors.Is(err, exec.ErrWaitDelay) {
		err = nil
	}
	if st := cmd.ProcessState; st != nil {
		if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return exitCode(128 + int(ws.Signal()))
		}
		if code := st.ExitCode(); code != 0 {
			return exitCode(code)
		}
		return nil
	}
	return err
}

// execTarget is the container's running process and the environment it
// started with. Right after a (re)start the process may still be the
// agent's helper setting up the mount namespace (mountns.go), whose
// environment is only the helper's variable: it waits (up to 5 s) for the
// container's command to replace it.
func (c *container) execTarget(ctx context.Context) (*proc, []string, error) {
	deadline := time.Now().Add(5 * time.Second)
	for {
		p := c.runningProc()
		if p == nil {
			return nil, nil, fmt.Errorf("container not found (%q)", c.spec.Name)
		}
		environ, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", p.pid()))
		if err != nil {
			select {
			case <-p.done:
				return nil, nil, fmt.Errorf("container not found (%q)", c.spec.Name)
			default:
				return nil, nil, fmt.Errorf("container %s: environment: %w", c.spec.Name, err)
			}
		}
		env := splitEnviron(environ)
		if !isHelperEnv(env) {
			return p, env, nil
		}
		if time.Now().After(deadline) {
			return nil, nil, fmt.Errorf("container %s: still being set up", c.spec.Name)
		}
		select {
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func splitEnviron(b []byte) []string {
	var env []string
	for _, kv := range bytes.Split(b, []byte{0}) {
		if len(kv) > 0 {
			env = append(env, string(kv))
		}
	}
	return env
}

// isHelperEnv reports whether env is that of the mount namespace helper
// (before it exec'd the container's command).
func isHelperEnv(env []string) bool {
	for _, kv := range env {
		if strings.HasPrefix(kv, containerHelperEnv+"=") {
			return true
		}
	}
	return false
}

// ownNamespace reports whether process pid is in another namespace of type
// ns ("pid", "uts", ...) than the agent.
func ownNamespace(pid int, ns string) (bool, error) {
	theirs, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/%s", pid, ns))
	if err != nil {
		return false, err
	}
	ours, err := os.Readlink("/proc/self/ns/" + ns)
	if err != nil {
		return false, err
	}
	return theirs != ours, nil
}

// startInTerminal starts cmd on a new pseudo-terminal, as the leader of a
// session whose controlling terminal it is: in is copied to the terminal,
// the terminal's output to out, and each size from resize sets its window
// size. finish, to call once cmd was waited for, waits (up to
// execOutputDrain) for the output.
func startInTerminal(cmd *exec.Cmd, in io.Reader, out io.Writer, resize <-chan remotecommand.TerminalSize) (finish func(), err error) {
	ptm, pts, err := openPTY()
	if err != nil {
		return nil, err
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = pts, pts, pts
	cmd.SysProcAttr.Setsid = true
	cmd.SysProcAttr.Setctty = true
	cmd.SysProcAttr.Ctty = 0 // the child's stdin
	err = cmd.Start()
	pts.Close() // the command has it; the terminal hangs up when it is gone
	if err != nil {
		ptm.Close()
		return nil, err
	}
	stopResize := make(chan struct{})
	if resize != nil {
		go func() {
			for {
				select {
				case size, ok := <-resize:
					if !ok {
						return
					}
					_ = withFd(ptm, func(fd int) error {
						return unix.IoctlSetWinsize(fd, unix.TIOCSWINSZ, &unix.Winsize{Row: size.Height, Col: size.Width})
					})
				case <-stopResize:
					return
				}
			}
		}()
	}
	if in != nil {
		// Ends with the client's stdin or, once ptm is closed, at the
		// next write.
		go func() { _, _ = io.Copy(ptm, in) }()
	}
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		if out != nil {
			_, _ = io.Copy(out, ptm) // until EIO: no process has the terminal open
		} else {
			_, _ = io.Copy(io.Discard, ptm)
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			close(stopResize)
			select {
			case <-copied:
			case <-time.After(execOutputDrain):
			}
			ptm.Close()
		})
	}, nil
}

// openPTY opens a new pseudo-terminal pair: the master (ptmx) and its
// slave. The few ioctls of the kernel's Unix 98 ptys; see pty(7).
func openPTY() (ptm, pts *os.File, err error) {
	ptm, err = os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, nil, err
	}
	var n uint32
	err = withFd(ptm, func(fd int) error {
		if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil { // unlockpt
			return fmt.Errorf("unlock pty: %w", err)
		}
		n, err = unix.IoctlGetUint32(fd, unix.TIOCGPTN) // ptsname
		if err != nil {
			return fmt.Errorf("pty number: %w", err)
		}
		return nil
	})
	if err != nil {
		ptm.Close()
		return nil, nil, err
	}
	pts, err = os.OpenFile("/dev/pts/"+strconv.FormatUint(uint64(n), 10), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		ptm.Close()
		return nil, nil, err
	}
	return ptm, pts, nil
}

// withFd calls f with f's descriptor without putting it in blocking mode
// (as File.Fd would): a read blocked on the master ends when it is closed.
func withFd(file *os.File, f func(fd int) error) error {
	rc, err := file.SyscallConn()
	if err != nil {
		return err
	}
	var ferr error
	if err := rc.Control(func(fd uintptr) { ferr = f(int(fd)) }); err != nil {
		return err
	}
	return ferr
}
