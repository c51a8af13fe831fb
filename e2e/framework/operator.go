package framework

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Test fault points of the operator's fault-injection build
// (Env.FaultInjectOperatorBinary, pkg/operator/faults_faultinject.go); the
// default build ignores FaultEnv.
const (
	// FaultEnv is the variable that arms a fault point.
	FaultEnv = "FLINKOP_TEST_FAULT"
	// FaultExitAfterSnapshotIntent kills the operator (SIGKILL) right after
	// a snapshot's IN_PROGRESS intent is written, before Flink is called.
	FaultExitAfterSnapshotIntent = "exit-after-snapshot-intent"
	// FaultExitAfterAutoscalerDecision kills the operator right after a
	// job's autoscaler decision is recorded in its ConfigMap, before the
	// decision is applied.
	FaultExitAfterAutoscalerDecision = "exit-after-autoscaler-decision"
	// FaultPointLog starts the line the operator logs at the fault point,
	// right before it kills itself.
	FaultPointLog = "Test fault point: killing the process"
)

// Operator is the operator binary running outside the cluster (local
// provider).
type Operator struct {
	cmd  *exec.Cmd
	done chan struct{}
	err  error
}

// StartOperator runs bin against kubeconfig with pod-IP endpoints and no
// metrics/probe servers, logging to logPath; without --config in extra,
// with artifactConfig's.
func StartOperator(t *testing.T, bin, kubeconfig, logPath string, extra ...string) *Operator {
	t.Helper()
	return StartOperatorWithEnv(t, nil, bin, kubeconfig, logPath, extra...)
}

// StartOperatorWithEnv is StartOperator with extra environment variables
// (NAME=value) for the operator process only, such as a test fault point
// (FaultEnv, with bin = Env.FaultInjectOperatorBinary).
func StartOperatorWithEnv(t *testing.T, env []string, bin, kubeconfig, logPath string, extra ...string) *Operator {
	t.Helper()
	args := append([]string{"--kubeconfig", kubeconfig, "--flink-endpoint=pod-ip",
		"--metrics-bind-address=0", "--health-probe-bind-address=0"}, extra...)
	if !slices.ContainsFunc(extra, func(a string) bool { return a == "--config" || strings.HasPrefix(a, "--config=") }) {
		args = append(args, "--config="+artifactConfig(t))
	}
	cmd := exec.Command(bin, args...)
	if len(env) > 0 {
		cmd.Env = append(os.Environ(), env...)
	}
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &Operator{cmd: cmd, done: make(chan struct{})}
	go func() { p.err = cmd.Wait(); logFile.Close(); close(p.done) }()
	return p
}

// Exited returns an error once the operator has exited.
func (p *Operator) Exited() error {
	select {
	case <-p.done:
		return fmt.Errorf("the operator exited: %v", p.err)
	default:
		return nil
	}
}

// Stop sends SIGTERM and waits (SIGKILL after 15 s).
func (p *Operator) Stop() {
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	// A paused process (Signal(SIGSTOP)) handles SIGTERM only once resumed.
	_ = p.cmd.Process.Signal(syscall.SIGCONT)
	select {
	case <-p.done:
	case <-time.After(15 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// Signaled is the signal that ended the operator, or 0 while it runs or if
// it exited on its own.
func (p *Operator) Signaled() syscall.Signal {
	select {
	case <-p.done:
	default:
		return 0
	}
	if ws, ok := p.cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return ws.Signal()
	}
	return 0
}

// Pid is the operator's process id.
func (p *Operator) Pid() int { return p.cmd.Process.Pid }

// Done is closed once the operator has exited.
func (p *Operator) Done() <-chan struct{} { return p.done }

// Signal sends sig to the operator process alone: SIGSTOP and SIGCONT pause
// and resume it (a frozen replica), SIGKILL crashes it.
func (p *Operator) Signal(sig syscall.Signal) error {
	select {
	case <-p.done:
		return fmt.Errorf("signal %v: the operator already exited: %v", sig, p.err)
	default:
	}
	return p.cmd.Process.Signal(sig)
}

// Kill is kill -9: SIGKILL, then it waits until the process is gone (a
// paused process dies too).
func (p *Operator) Kill() {
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.cmd.Process.Kill()
	<-p.done
}

// artifactConfig writes the operator configuration of an operator started
// without --config: upstream's artifact defaults (https only, no
// restricted hosts, jars staged in /opt/flink/artifacts) relaxed for the
// session jobs of the e2e tests, whose jars ServeHTTP serves over http
// from 127.0.0.1 (the kind gateway on kind, where e2e/kind/up.sh
// configures the in-cluster operator the same way), with a writable
// staging directory.
func artifactConfig(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "operator-config.yaml")
	conf := "kubernetes.operator.user.artifacts.allowed-schemes: http,https\n" +
		"kubernetes.operator.user.artifacts.disallow-restricted-hosts: \"false\"\n" +
		fmt.Sprintf("kubernetes.operator.user.artifacts.base.dir: %q\n", filepath.Join(dir, "artifacts"))
	if err := os.WriteFile(path, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}
