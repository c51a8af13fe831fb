package localcluster

import (
	"fmt"
	"os"
	"slices"
	"sync"
)

// Recorder keeps a record of processes started by a helper of the cluster
// (the node agent's Flink JVMs and fake JobManagers) in the state-file format
// of the cluster's own record, with the helper as owner. If the helper dies
// without stopping them (and the parent-death signal missed them), the next
// Start or StopStale stops them: it reads every record in the state dir.
//
// Recorder is safe for concurrent use.
type Recorder struct {
	mu    sync.Mutex
	path  string
	state runState
}

// NewRecorder creates the record file at path (in a cluster's state dir, so
// that StopStale finds it) owned by the calling process. dir, if not empty, is
// removed by StopStale together with the stale processes.
func NewRecorder(path, dir string) (*Recorder, error) {
	r := &Recorder{path: path, state: runState{OwnerPID: os.Getpid(), OwnerStartTime: selfStartTime(), Dir: dir}}
	if err := writeState(path, r.state); err != nil {
		return nil, err
	}
	return r, nil
}

// Path is the record file.
func (r *Recorder) Path() string { return r.path }

// Add records the running process pid (a process group leader, as the
// helper's processes must be) under name, with its argv (exec.Cmd.Args).
// Call it right after the process started; its start time is read from
// /proc. (Not its command line: right after a vfork-based start the kernel
// may not have set up the new program's arguments yet.)
func (r *Recorder) Add(name string, pid int, argv []string) error {
	_, start, _, err := procStat(pid)
	if err != nil {
		return fmt.Errorf("record %s (pid %d): %w", name, pid, err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.state.Processes = append(r.state.Processes, procInfo{Name: name, PID: pid, StartTime: start, Cmdline: slices.Clone(argv)})
	return writeState(r.path, r.state)
}

// Remove drops pid from the record (after the process was reaped).
func (r *Recorder) Remove(pid int) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.state.Processes = slices.DeleteFunc(r.state.Processes, func(p procInfo) bool { return p.PID == pid })
	return writeState(r.path, r.state)
}

// Close removes the record file; call it once every recorded process is gone.
func (r *Recorder) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := os.Remove(r.path); err != nil && !os.IsNotExist(err) {
		return err
	}
	return nil
}

// RecordedProcess is one process listed in a record file.
type RecordedProcess struct {
	Name string
	PID  int
	info procInfo
}

// Alive reports whether the recorded process is still the one running under
// its pid (same start time and command line).
func (p RecordedProcess) Alive() bool { return p.info.isSame() }

// ReadRecord lists the processes in a record file written by a Cluster or a
// Recorder, with the owner's pid.
func ReadRecord(path string) (owner int, procs []RecordedProcess, err error) {
	st, err := readState(path)
	if err != nil {
		return 0, nil, err
	}
	for _, p := range st.Processes {
		procs = append(procs, RecordedProcess{Name: p.Name, PID: p.PID, info: p})
	}
	return st.OwnerPID, procs, nil
}
