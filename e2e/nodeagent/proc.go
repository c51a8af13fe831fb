package nodeagent

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// proc is one started container process: the leader of its own process
// group, killed by the kernel if the agent dies (parent-death signal).
type proc struct {
	cmd     *exec.Cmd
	started time.Time
	done    chan struct{}
	err     error // Wait's result, valid once done is closed
	out     *os.File
}

// startProc starts cmd (whose Stdout/Stderr are set to out) in its own
// process group with SIGKILL as parent-death signal.
func startProc(cmd *exec.Cmd, out *os.File) (*proc, error) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	// The kernel kills the JVM when the agent dies, even by SIGKILL; the
	// agent's record (see localcluster.Recorder) covers what this misses.
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	cmd.Stdout, cmd.Stderr = out, out
	p := &proc{cmd: cmd, done: make(chan struct{}), out: out}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p.started = time.Now()
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

func (p *proc) pid() int { return p.cmd.Process.Pid }

// exitCode is what a container runtime reports: the exit status, or 128 +
// the signal number for a process killed by a signal.
func (p *proc) exitCode() int32 {
	st := p.cmd.ProcessState
	if st == nil {
		return -1
	}
	if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int32(ws.Signal())
	}
	return int32(st.ExitCode())
}

// stop sends SIGTERM to the process group, SIGKILL after grace, and returns
// once the leader is reaped and no process of the group is left.
func (p *proc) stop(grace time.Duration) error {
	pgid := p.pid()
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(grace):
	}
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	<-p.done
	for deadline := time.Now().Add(10 * time.Second); groupAlive(pgid); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			return fmt.Errorf("process group %d still alive after SIGKILL", pgid)
		}
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
	}
	return nil
}

// groupAlive reports whether any process (zombies included) is in group pgid.
func groupAlive(pgid int) bool {
	err := syscall.Kill(-pgid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
