package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/spf13/pflag"

	"github.com/flinkops/flink-operator/pkg/operator"
)

// buildOperator compiles the real binary once per test run, so the tests see
// exactly what users run (exit codes, stderr), not a function call.
func buildOperator(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "flink-operator")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

func runBinary(t *testing.T, bin string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	var exitErr *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exitErr):
		code = exitErr.ExitCode()
	default:
		t.Fatalf("running %s: %v", bin, err)
	}
	return o.String(), e.String(), code
}

func TestHelpDocumentsEveryFlag(t *testing.T) {
	bin := buildOperator(t)
	stdout, stderr, code := runBinary(t, bin, "--help")
	if code != 0 {
		t.Fatalf("--help exited %d; stderr:\n%s", code, stderr)
	}
	help := stdout + stderr

	fs, _ := newFlags()
	count := 0
	fs.VisitAll(func(f *pflag.Flag) {
		count++
		if strings.TrimSpace(f.Usage) == "" {
			t.Errorf("flag --%s has no usage text", f.Name)
		}
		if !strings.Contains(help, "--"+f.Name+" ") && !strings.Contains(help, "--"+f.Name+"[") {
			t.Errorf("--help does not mention --%s", f.Name)
		}
	})
	for _, required := range []string{"kubeconfig", "namespaces", "leader-elect", "metrics-bind-address", "health-probe-bind-address", "config",
		"webhook-bind-address", "webhook-cert-mode", "webhook-cert-dir", "webhook-namespace", "webhook-secret-name",
		"webhook-service-name", "webhook-config-name", "webhook-extra-hosts"} {
		if fs.Lookup(required) == nil {
			t.Errorf("flag --%s is missing", required)
		}
	}
	if count < 6 {
		t.Fatalf("only %d flags registered", count)
	}
}

func TestUnreachableAPIServerIsOneClearLine(t *testing.T) {
	bin := buildOperator(t)
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	// Port 1 on loopback: nothing listens there, the connection is refused.
	if err := os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters:
- name: c
  cluster: {server: "https://127.0.0.1:1", insecure-skip-tls-verify: true}
users:
- name: u
  user: {token: test}
contexts:
- name: x
  context: {cluster: c, user: u}
current-context: x
`), 0o600); err != nil {
		t.Fatal(err)
	}
	_, stderr, code := runBinary(t, bin, "--kubeconfig", kubeconfig, "--connect-timeout", "5s",
		"--metrics-bind-address", "0", "--health-probe-bind-address", "0")
	if code != 1 {
		t.Fatalf("exit code = %d, want 1; stderr:\n%s", code, stderr)
	}
	lines := strings.Split(strings.TrimRight(stderr, "\n"), "\n")
	if len(lines) != 1 {
		t.Fatalf("want exactly one line on stderr, got %d:\n%s", len(lines), stderr)
	}
	want := "flink-operator: cannot reach the Kubernetes API server at https://127.0.0.1:1"
	if !strings.HasPrefix(lines[0], want) {
		t.Fatalf("stderr = %q, want prefix %q", lines[0], want)
	}
	if strings.Contains(stderr, "goroutine ") || strings.Contains(stderr, "panic") {
		t.Fatalf("stderr looks like a stack trace:\n%s", stderr)
	}
}

func TestRejectsUnknownFlagAndArguments(t *testing.T) {
	if err := run([]string{"--no-such-flag"}); err == nil {
		t.Error("unknown flag accepted")
	}
	if err := run([]string{"extra"}); err == nil || !strings.Contains(err.Error(), "unexpected arguments") {
		t.Errorf("positional argument: err = %v", err)
	}
}

// TestWebhookFlags: the webhook is off unless asked for (so `make run` and
// the tests are unaffected), and the flags reach the options.
func TestWebhookFlags(t *testing.T) {
	fs, s := newFlags()
	if err := fs.Parse(nil); err != nil {
		t.Fatal(err)
	}
	want := operator.WebhookOptions{BindAddress: "0", CertMode: operator.WebhookCertSelfManaged,
		SecretName: "flink-operator-webhook-cert", ServiceName: "flink-operator-webhook", ConfigName: "flink-operator"}
	if diff := cmp.Diff(want, s.opts.Webhook); diff != "" {
		t.Errorf("defaults (-want +got):\n%s", diff)
	}

	fs, s = newFlags()
	if err := fs.Parse([]string{"--webhook-bind-address=:9443", "--webhook-cert-mode=files", "--webhook-cert-dir=/certs",
		"--webhook-namespace=flink", "--webhook-secret-name=s", "--webhook-service-name=svc", "--webhook-config-name=cfg",
		"--webhook-extra-hosts=127.0.0.1,webhook.local"}); err != nil {
		t.Fatal(err)
	}
	want = operator.WebhookOptions{BindAddress: ":9443", CertMode: operator.WebhookCertFiles, CertDir: "/certs", Namespace: "flink",
		SecretName: "s", ServiceName: "svc", ConfigName: "cfg", ExtraHosts: []string{"127.0.0.1", "webhook.local"}}
	if diff := cmp.Diff(want, s.opts.Webhook); diff != "" {
		t.Errorf("parsed (-want +got):\n%s", diff)
	}
}
