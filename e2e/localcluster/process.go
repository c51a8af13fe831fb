package localcluster

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// ProcessSpec describes a process started and owned by a Cluster.
type ProcessSpec struct {
	Name string   // short name, used for the log file and messages
	Args []string // Args[0] is the program
	Env  []string // added to the owner's environment
	Dir  string   // working directory; default: the owner's
	// Output receives stdout and stderr; default: <Cluster.Dir>/<Name>.log.
	Output io.Writer
	// StopGrace is how long Stop waits after SIGTERM before SIGKILL; default
	// Options.StopGrace. A process that stops children of its own (the node
	// agent) needs more than they do.
	StopGrace time.Duration
}

// Process is a running process owned by a Cluster. It runs in its own process
// group; Cluster.Stop terminates the group.
type Process struct {
	Name    string
	LogPath string // empty when ProcessSpec.Output was given

	cmd   *exec.Cmd
	info  procInfo
	grace time.Duration
	log   *os.File
	done  chan struct{}
	err   error
}

// PID is the process id (and process group id) of p.
func (p *Process) PID() int { return p.info.PID }

// Done is closed when the process has exited.
func (p *Process) Done() <-chan struct{} { return p.done }

// Err is the result of waiting for the process; valid after Done is closed.
func (p *Process) Err() error { return p.err }

// procInfo identifies a process beyond its pid, so that a reused pid is never
// mistaken for one of ours.
type procInfo struct {
	Name      string   `json:"name"`
	PID       int      `json:"pid"`
	StartTime uint64   `json:"startTime"` // field 22 of /proc/<pid>/stat (ticks since boot)
	Cmdline   []string `json:"cmdline"`
}

// runState is the record written to <StateDir>/<owner pid>-<n>.json while a
// cluster runs, and read by StopStale after the owner died without Stop.
type runState struct {
	OwnerPID       int        `json:"ownerPid"`
	OwnerStartTime uint64     `json:"ownerStartTime"`
	Dir            string     `json:"dir,omitempty"` // removed with the stale processes
	Processes      []procInfo `json:"processes"`
}

// startProcess starts spec in its own process group.
func startProcess(spec ProcessSpec, logDir string, parentDeathSignal bool) (*Process, error) {
	p := &Process{Name: spec.Name, grace: spec.StopGrace, done: make(chan struct{})}
	cmd := exec.Command(spec.Args[0], spec.Args[1:]...)
	cmd.Env = append(os.Environ(), spec.Env...)
	cmd.Dir = spec.Dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if parentDeathSignal {
		// The kernel kills the process when its owner dies, even by SIGKILL.
		// StopStale covers what this misses (e.g. owner threads exiting).
		cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	}
	out := spec.Output
	if out == nil {
		p.LogPath = filepath.Join(logDir, spec.Name+".log")
		f, err := os.OpenFile(p.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return nil, err
		}
		p.log, out = f, f
	}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		if p.log != nil {
			p.log.Close()
		}
		return nil, fmt.Errorf("start %s: %w", spec.Name, err)
	}
	p.cmd = cmd
	p.info = procInfo{Name: spec.Name, PID: cmd.Process.Pid, Cmdline: spec.Args}
	// cmd.Start returns after the exec, so /proc shows the new program.
	if _, start, _, err := procStat(p.info.PID); err == nil {
		p.info.StartTime = start
	}
	go func() {
		p.err = cmd.Wait()
		if p.log != nil {
			p.log.Close()
		}
		close(p.done)
	}()
	return p, nil
}

// terminate sends SIGTERM to the process group of pid, then SIGKILL after
// grace, and waits until gone() reports the process has exited.
func terminate(pid int, group bool, grace time.Duration, gone func(time.Duration) bool) error {
	target := pid
	if group {
		target = -pid
	}
	if err := syscall.Kill(target, syscall.SIGTERM); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("SIGTERM %d: %w", target, err)
	}
	if gone(grace) {
		return nil
	}
	if err := syscall.Kill(target, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("SIGKILL %d: %w", target, err)
	}
	if gone(10 * time.Second) {
		return nil
	}
	return fmt.Errorf("pid %d still alive after SIGKILL", pid)
}

// stop terminates an owned process and reaps it.
func (p *Process) stop(grace time.Duration) error {
	select {
	case <-p.done:
		return nil
	default:
	}
	return terminate(p.info.PID, true, grace, func(d time.Duration) bool {
		select {
		case <-p.done:
			return true
		case <-time.After(d):
			return false
		}
	})
}

// procStat reads state, start time and process group of pid from /proc.
func procStat(pid int) (state byte, startTime uint64, pgrp int, err error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, 0, 0, err
	}
	// Fields after the command name, which is in parentheses and may contain
	// spaces: state(3) ppid(4) pgrp(5) ... starttime(22).
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, 0, 0, fmt.Errorf("malformed /proc/%d/stat", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 20 {
		return 0, 0, 0, fmt.Errorf("malformed /proc/%d/stat", pid)
	}
	startTime, err = strconv.ParseUint(f[19], 10, 64)
	if err != nil {
		return 0, 0, 0, err
	}
	pgrp, err = strconv.Atoi(f[2])
	return f[0][0], startTime, pgrp, err
}

func procCmdline(pid int) ([]string, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil {
		return nil, err
	}
	return strings.Split(strings.TrimSuffix(string(b), "\x00"), "\x00"), nil
}

// running reports whether pid is a live (not zombie) process started at startTime.
func running(pid int, startTime uint64) bool {
	state, start, _, err := procStat(pid)
	return err == nil && state != 'Z' && state != 'X' && start == startTime
}

// isSame reports whether the recorded process is still the one running under
// its pid: same start time and same command line.
func (pi procInfo) isSame() bool {
	if !running(pi.PID, pi.StartTime) {
		return false
	}
	cmdline, err := procCmdline(pi.PID)
	return err == nil && slices.Equal(cmdline, pi.Cmdline)
}

// alivePIDs lists the processes recorded in the state file at path that are
// still running (same pid, start time and command line).
func alivePIDs(path string) ([]int, error) {
	st, err := readState(path)
	if err != nil {
		return nil, err
	}
	var pids []int
	for _, p := range st.Processes {
		if p.isSame() {
			pids = append(pids, p.PID)
		}
	}
	return pids, nil
}

func readState(path string) (runState, error) {
	var st runState
	b, err := os.ReadFile(path)
	if err != nil {
		return st, err
	}
	if err := json.Unmarshal(b, &st); err != nil {
		return st, fmt.Errorf("%s: %w", path, err)
	}
	return st, nil
}

func writeState(path string, st runState) error {
	b, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

func selfStartTime() uint64 {
	_, start, _, _ := procStat(os.Getpid())
	return start
}

// StopStale stops the processes recorded by earlier runs whose owner process
// is gone (killed before it could call Stop), and removes their work dirs and
// records. A recorded pid is only signalled if its start time and command line
// still match, so an unrelated process that reused the pid is never touched.
// Records of live owners (other test runs) are left alone. It returns the
// number of processes stopped.
func StopStale(stateDir string, out io.Writer) (int, error) {
	if out == nil {
		out = io.Discard
	}
	files, err := filepath.Glob(filepath.Join(stateDir, "*.json"))
	if err != nil {
		return 0, err
	}
	stopped := 0
	var errs []error
	for _, path := range files {
		st, err := readState(path)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if running(st.OwnerPID, st.OwnerStartTime) {
			continue
		}
		failed := false
		for _, p := range slices.Backward(st.Processes) {
			if !p.isSame() {
				continue
			}
			group := false
			if _, _, pgrp, err := procStat(p.PID); err == nil && pgrp == p.PID {
				group = true
			}
			fmt.Fprintf(out, "localcluster: stopping stale %s (pid %d) of dead owner pid %d\n", p.Name, p.PID, st.OwnerPID)
			err := terminate(p.PID, group, 5*time.Second, func(d time.Duration) bool {
				for deadline := time.Now().Add(d); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
					if !p.isSame() {
						return true
					}
				}
				return !p.isSame()
			})
			if err != nil {
				errs = append(errs, fmt.Errorf("stale %s: %w", p.Name, err))
				failed = true
				continue
			}
			stopped++
		}
		if failed {
			continue
		}
		if st.Dir != "" {
			os.RemoveAll(st.Dir)
		}
		os.Remove(path)
		fmt.Fprintf(out, "localcluster: removed record %s of dead owner pid %d\n", filepath.Base(path), st.OwnerPID)
	}
	return stopped, errors.Join(errs...)
}
