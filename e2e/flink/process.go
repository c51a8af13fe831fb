package flink

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Process is a running Flink JVM, leader of its own process group.
type Process struct {
	*Launch
	Started     time.Time     // when the JVM was started (after Prepare)
	PrepareTime time.Duration // how long Prepare took (mostly BashJavaUtils)

	out  io.Closer
	done chan struct{}
	err  error
}

// Start prepares opts and starts the JVM. Its stdout and stderr (the container
// log) go to out, or to <LogDir>/flink-<daemon>.out when out is nil. ctx bounds
// only the preparation; stop the process with Stop or Kill.
func Start(ctx context.Context, opts LaunchOptions, out io.Writer) (*Process, error) {
	t0 := time.Now()
	l, err := Prepare(ctx, opts)
	if err != nil {
		return nil, err
	}
	p := &Process{Launch: l, PrepareTime: time.Since(t0), done: make(chan struct{})}
	if out == nil {
		f, err := os.Create(strings.TrimSuffix(l.LogFile, ".log") + ".out")
		if err != nil {
			return nil, err
		}
		p.out, out = f, f
	}
	l.Cmd.Stdout, l.Cmd.Stderr = out, out
	p.Started = time.Now()
	if err := l.Cmd.Start(); err != nil {
		if p.out != nil {
			p.out.Close()
		}
		return nil, err
	}
	go func() {
		p.err = l.Cmd.Wait()
		if p.out != nil {
			p.out.Close()
		}
		close(p.done)
	}()
	return p, nil
}

// PID is the JVM's process id, also its process group id.
func (p *Process) PID() int { return p.Cmd.Process.Pid }

// Done is closed when the JVM has exited.
func (p *Process) Done() <-chan struct{} { return p.done }

// Err is the JVM's exit error; valid once Done is closed.
func (p *Process) Err() error { return p.err }

// OutFile is where Start sent stdout and stderr when it was given no writer.
func (p *Process) OutFile() string { return strings.TrimSuffix(p.LogFile, ".log") + ".out" }

// Stop sends SIGTERM to the process group (Flink shuts down gracefully), waits up
// to grace for the JVM to exit, then SIGKILLs the group. It returns once no
// process of the group is left.
func (p *Process) Stop(grace time.Duration) error {
	_ = syscall.Kill(-p.PID(), syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(grace):
	}
	return p.Kill()
}

// Kill SIGKILLs the process group and waits until it is gone.
func (p *Process) Kill() error {
	pgid := p.PID()
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	<-p.done
	deadline := time.Now().Add(10 * time.Second)
	for GroupAlive(pgid) {
		if time.Now().After(deadline) {
			return fmt.Errorf("process group %d still alive after SIGKILL", pgid)
		}
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		time.Sleep(50 * time.Millisecond)
	}
	return nil
}

// GroupAlive reports whether any process (zombies included) is in group pgid.
func GroupAlive(pgid int) bool {
	err := syscall.Kill(-pgid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// RSS is the JVM's resident set size in bytes (VmRSS of /proc/<pid>/status).
func (p *Process) RSS() (int64, error) { return ProcessRSS(p.PID()) }

// ProcessRSS is the resident set size of pid in bytes.
func ProcessRSS(pid int) (int64, error) {
	f, err := os.Open(filepath.Join("/proc", strconv.Itoa(pid), "status"))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if v, ok := strings.CutPrefix(s.Text(), "VmRSS:"); ok {
			f := strings.Fields(v) // "123456 kB"
			if len(f) != 2 || f[1] != "kB" {
				break
			}
			kb, err := strconv.ParseInt(f[0], 10, 64)
			return kb * 1024, err
		}
	}
	return 0, fmt.Errorf("no VmRSS for pid %d", pid)
}
