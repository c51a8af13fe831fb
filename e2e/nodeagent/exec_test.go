package nodeagent

import (
	"bytes"
	"context"
	"crypto/x509"
	"errors"
	"net/http"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"
	utilexec "k8s.io/utils/exec"
)

// restConfig is a client of the fixture's kubelet API with the cluster CA's
// client certificate, as the API server has.
func (f *logsFixture) restConfig(t *testing.T) *rest.Config {
	t.Helper()
	cert, key := f.ca.issue(t, "kube-apiserver-kubelet-client", x509.ExtKeyUsageClientAuth)
	return &rest.Config{Host: f.srv.URL, TLSClientConfig: rest.TLSClientConfig{CAData: f.ca.pem, CertData: cert, KeyData: key}}
}

// execSPDY runs argv in ns/pod/main through the kubelet API with SPDY
// (v4.channel.k8s.io, as the API server talks to a kubelet).
func (f *logsFixture) execSPDY(t *testing.T, pod string, argv []string, opts remotecommand.StreamOptions) error {
	t.Helper()
	q := url.Values{"command": argv}
	for name, on := range map[string]bool{"input": opts.Stdin != nil, "output": opts.Stdout != nil, "error": opts.Stderr != nil, "tty": opts.Tty} {
		if on {
			q.Set(name, "1")
		}
	}
	u, _ := url.Parse(f.srv.URL + "/exec/ns/" + pod + "/main?" + q.Encode())
	e, err := remotecommand.NewSPDYExecutor(f.restConfig(t), http.MethodPost, u)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	return e.StreamWithContext(ctx, opts)
}

// TestExec runs commands in a running sh container through the kubelet
// API's exec (the SPDY streams of the API server's side): stdout and
// stderr apart, stdin, the exit code (and 128 + signal), a terminal with
// its size, the container's environment and working directory; and the
// errors before any stream: unknown pod, a container that does not run,
// no stream asked for, no command, no client certificate.
func TestExec(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("nsenter needs root")
	}
	f := newLogsFixture(t)
	web := f.pod(t, "web", corev1.RestartPolicyAlways, `sleep 600`)
	const base = "/exec/ns/web/main"

	// Before the container runs: as the kubelet, before any upgrade.
	for _, tc := range []struct {
		path   string
		status int
		want   string
	}{
		{base + "?command=true&output=1", http.StatusInternalServerError, `container not found ("main")`},
		{"/exec/ns/nope/main?command=true&output=1", http.StatusNotFound, "pod does not exist"},
		{"/exec/ns/web/web-uid/main?command=true&output=1", http.StatusInternalServerError, `container not found ("main")`},
		{"/exec/ns/web/other-uid/main?command=true&output=1", http.StatusNotFound, "pod does not exist"},
		{"/exec/ns/web/nope?command=true&output=1", http.StatusInternalServerError, `container not found ("nope")`},
		{base + "?command=true", http.StatusBadRequest, "you must specify at least 1 of stdin, stdout, stderr"},
		{base + "?output=1", http.StatusBadRequest, "you must specify a command (command=...)"},
	} {
		if code, body := f.get(t, tc.path); code != tc.status || body != tc.want {
			t.Errorf("GET %s = %d %q, want %d %q", tc.path, code, body, tc.status, tc.want)
		}
	}
	if code, _ := get(t, f.ca.client(t), f.srv.URL+base+"?command=true&output=1"); code != http.StatusUnauthorized {
		t.Errorf("exec without a client certificate: %d, want 401", code)
	}

	// The container starts with a variable the agent then no longer has.
	t.Setenv("EXEC_TEST_VAR", "from the container's start")
	web.start()
	waitRunning(t, web)
	os.Unsetenv("EXEC_TEST_VAR")

	t.Run("stdout, stderr and exit code", func(t *testing.T) {
		var out, errOut bytes.Buffer
		err := f.execSPDY(t, "web", []string{"sh", "-c", "echo out; echo err >&2; exit 3"},
			remotecommand.StreamOptions{Stdout: &out, Stderr: &errOut})
		var exit utilexec.ExitError
		if !errors.As(err, &exit) || exit.ExitStatus() != 3 {
			t.Errorf("exec: %v, want exit code 3", err)
		}
		if out.String() != "out\n" || errOut.String() != "err\n" {
			t.Errorf("stdout %q, stderr %q", out.String(), errOut.String())
		}
		if err := f.execSPDY(t, "web", []string{"true"}, remotecommand.StreamOptions{Stdout: &out}); err != nil {
			t.Errorf("exec true: %v", err)
		}
		err = f.execSPDY(t, "web", []string{"sh", "-c", "kill -9 $$"}, remotecommand.StreamOptions{Stdout: &out})
		if !errors.As(err, &exit) || exit.ExitStatus() != 137 {
			t.Errorf("exec of a command killed by SIGKILL: %v, want exit code 137", err)
		}
	})

	t.Run("stdin", func(t *testing.T) {
		in := bytes.Repeat([]byte("0123456789abcdef"), 64<<10) // 1 MiB
		var out bytes.Buffer
		err := f.execSPDY(t, "web", []string{"wc", "-c"}, remotecommand.StreamOptions{Stdin: bytes.NewReader(in), Stdout: &out})
		if err != nil || strings.TrimSpace(out.String()) != "1048576" {
			t.Errorf("wc -c of 1 MiB on stdin: %q, %v", out.String(), err)
		}
	})

	t.Run("terminal", func(t *testing.T) {
		var out bytes.Buffer
		// Waits for the size the client sends after the start.
		err := f.execSPDY(t, "web", []string{"sh", "-c",
			`while [ "$(stty size)" = "0 0" ]; do sleep 0.02; done; tty; stty size; [ -t 0 ] && [ -t 1 ] && echo terminal; exit 4`},
			remotecommand.StreamOptions{Stdout: &out, Tty: true, TerminalSizeQueue: &sizes{{Width: 100, Height: 40}}})
		var exit utilexec.ExitError
		if !errors.As(err, &exit) || exit.ExitStatus() != 4 {
			t.Errorf("exec -t: %v, want exit code 4", err)
		}
		lines := strings.Split(strings.TrimRight(strings.ReplaceAll(out.String(), "\r\n", "\n"), "\n"), "\n")
		if len(lines) != 3 || !strings.HasPrefix(lines[0], "/dev/pts/") || lines[1] != "40 100" || lines[2] != "terminal" {
			t.Errorf("exec -t: output %q, want the terminal's name, 40 100 and terminal", out.String())
		}
	})

	t.Run("environment and working directory", func(t *testing.T) {
		var out bytes.Buffer
		err := f.execSPDY(t, "web", []string{"sh", "-c", `pwd; echo "$EXEC_TEST_VAR"`}, remotecommand.StreamOptions{Stdout: &out})
		want := web.stateDir(t) + "\nfrom the container's start\n"
		if err != nil || out.String() != want {
			t.Errorf("exec: %q, %v; want %q", out.String(), err, want)
		}
	})

	t.Run("UTS namespace", func(t *testing.T) {
		// A container with a hostname of its own (as the operator's image
		// gets): the exec sees it, the machine keeps its own.
		uts := f.pod(t, "uts", corev1.RestartPolicyAlways, `exec unshare --uts sh -c 'hostname exec-uts-test && exec sleep 600'`)
		uts.start()
		waitRunning(t, uts)
		var out bytes.Buffer
		var err error
		for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			out.Reset()
			err = f.execSPDY(t, "uts", []string{"hostname"}, remotecommand.StreamOptions{Stdout: &out})
			if out.String() == "exec-uts-test\n" || time.Now().After(deadline) {
				break
			}
		}
		machine, _ := os.Hostname()
		if err != nil || out.String() != "exec-uts-test\n" || machine == "exec-uts-test" {
			t.Errorf("hostname in the container: %q, %v (the machine's: %q)", out.String(), err, machine)
		}
	})

	web.stop(0)
	if code, body := f.get(t, base+"?command=true&output=1"); code != http.StatusInternalServerError || body != `container not found ("main")` {
		t.Errorf("exec in a stopped container: %d %q", code, body)
	}
}

// sizes is a TerminalSizeQueue that gives its sizes, then ends.
type sizes []remotecommand.TerminalSize

func (s *sizes) Next() *remotecommand.TerminalSize {
	if len(*s) == 0 {
		return nil
	}
	next := (*s)[0]
	*s = (*s)[1:]
	return &next
}

func waitRunning(t *testing.T, c *container) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); c.runningProc() == nil; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("container %s not running after 10s", c.spec.Name)
		}
	}
}
