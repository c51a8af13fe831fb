package nodeagent

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
)

func TestClassifyOperator(t *testing.T) {
	args := []string{"--leader-elect", "--metrics-bind-address=:8080"}
	for _, tc := range []struct {
		name    string
		image   string
		command []string
		kind    Kind
	}{
		{"manifest image", "ghcr.io/flinkops/flink-operator:latest", nil, Operator},
		{"entrypoint as command", "ghcr.io/flinkops/flink-operator:v1.2.3", []string{"/flink-operator"}, Operator},
		{"no registry", "flinkops/flink-operator", nil, Operator},
		{"registry with port and digest", "localhost:5000/flinkops/flink-operator@sha256:0123", nil, Operator},
		{"tag and digest", "ghcr.io/flinkops/flink-operator:dev@sha256:0123", nil, Operator},
		{"other command", "ghcr.io/flinkops/flink-operator:latest", []string{"sh", "-c", "sleep 1"}, Unsupported},
		{"entrypoint with more", "ghcr.io/flinkops/flink-operator:latest", []string{"/flink-operator", "--x"}, Unsupported},
		{"other owner", "ghcr.io/someone/flink-operator:latest", nil, Unsupported},
		{"longer owner", "ghcr.io/notflinkops/flink-operator:latest", nil, Unsupported},
		{"longer name", "ghcr.io/flinkops/flink-operator-tools:latest", nil, Unsupported},
		{"upstream's operator", "ghcr.io/apache/flink-kubernetes-operator:1.13.0", nil, Unsupported},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Classify(&corev1.Container{Image: tc.image}, tc.command, args)
			if got.Kind != tc.kind {
				t.Fatalf("Classify(%q, %q) = %v (%s), want %v", tc.image, tc.command, got.Kind, got.Message, tc.kind)
			}
			if tc.kind == Operator && !slices.Equal(got.Args, args) {
				t.Errorf("args %q, want %q", got.Args, args)
			}
			if tc.kind == Unsupported && !strings.Contains(got.Message, tc.image) {
				t.Errorf("message %q does not name the image", got.Message)
			}
			if tc.name == "other command" && !strings.Contains(got.Message, "/flink-operator") {
				t.Errorf("message %q does not say which command runs", got.Message)
			}
		})
	}
}

func TestPodBindAddresses(t *testing.T) {
	const ip = "127.100.3.4"
	for _, tc := range []struct{ in, want []string }{
		{ // the manifest's flags
			[]string{"--leader-elect", "--webhook-bind-address=:9443", "--metrics-bind-address=:8080",
				"--health-probe-bind-address=:8081", "--config=/etc/flink-operator/config.yaml"},
			[]string{"--leader-elect", "--webhook-bind-address=" + ip + ":9443", "--metrics-bind-address=" + ip + ":8080",
				"--health-probe-bind-address=" + ip + ":8081", "--config=/etc/flink-operator/config.yaml"},
		},
		{ // the separate value form
			[]string{"--metrics-bind-address", ":8080", "--health-probe-bind-address", ":8085"},
			[]string{"--metrics-bind-address", ip + ":8080", "--health-probe-bind-address", ip + ":8085"},
		},
		{ // disabled, explicit hosts, empty
			[]string{"--webhook-bind-address=0", "--metrics-bind-address=127.0.0.1:8080", "--health-probe-bind-address", "0.0.0.0:8081",
				"--x-bind-address=", "--y-bind-address", "[::1]:1"},
			[]string{"--webhook-bind-address=0", "--metrics-bind-address=127.0.0.1:8080", "--health-probe-bind-address", "0.0.0.0:8081",
				"--x-bind-address=", "--y-bind-address", "[::1]:1"},
		},
		{ // other flags with such values, a flag without its value, after --
			[]string{"--webhook-extra-hosts=:1", "-metrics-bind-address=:1", "--config", ":8080", "--", "--metrics-bind-address=:1"},
			[]string{"--webhook-extra-hosts=:1", "-metrics-bind-address=:1", "--config", ":8080", "--", "--metrics-bind-address=:1"},
		},
		{[]string{"--metrics-bind-address"}, []string{"--metrics-bind-address"}},
		{nil, nil},
	} {
		in := slices.Clone(tc.in)
		if diff := cmp.Diff(tc.want, podBindAddresses(tc.in, ip)); diff != "" {
			t.Errorf("podBindAddresses(%q) (-want +got):\n%s", tc.in, diff)
		}
		if !slices.Equal(in, tc.in) {
			t.Errorf("podBindAddresses changed its input: %q", tc.in)
		}
	}
}

func TestContainerHostname(t *testing.T) {
	long := strings.Repeat("a", 62) + "-bcdefgh" // cut at 63 characters: a trailing -
	for _, tc := range []struct {
		pod       corev1.Pod
		host, uts string
	}{
		{corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "op-1", Namespace: "ns"}}, "op-1", "op-1"},
		{corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "op-1", Namespace: "ns"}, Spec: corev1.PodSpec{Hostname: "h"}}, "h", "h"},
		{corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: long, Namespace: "ns"}}, strings.Repeat("a", 62), strings.Repeat("a", 62)},
		{corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "op-1", Namespace: "ns"},
			Spec: corev1.PodSpec{Hostname: "h", Subdomain: "sub", SetHostnameAsFQDN: ptr.To(true)}}, "h", "h.sub.ns.svc.cluster.local"},
		{corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "op-1", Namespace: "ns"},
			Spec: corev1.PodSpec{SetHostnameAsFQDN: ptr.To(true)}}, "op-1", "op-1"},
	} {
		if got := podHostname(&tc.pod); got != tc.host {
			t.Errorf("podHostname(%s) = %q, want %q", tc.pod.Name, got, tc.host)
		}
		if got := containerHostname(&tc.pod); got != tc.uts {
			t.Errorf("containerHostname(%s) = %q, want %q", tc.pod.Name, got, tc.uts)
		}
	}
}

// operatorWorker is a pod worker of an agent that is never run, with pod IP
// ip, for newContainer.
func operatorWorker(t *testing.T, cfg Config, pod *corev1.Pod, ip string) *podWorker {
	t.Helper()
	cfg.RESTConfig = &rest.Config{Host: "https://127.0.0.1:6443"} // never called
	cfg.Dir = t.TempDir()
	cfg.Log = testLog{t}
	a, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	w := newPodWorker(a, pod, 1)
	w.ip = ip
	if err := os.MkdirAll(w.dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := w.makeHostsDir(); err != nil {
		t.Fatal(err)
	}
	return w
}

func operatorPod() *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "flink-operator", Name: "flink-operator-5d9c-x2x", UID: types.UID("op-uid")},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name:  "operator",
			Image: "ghcr.io/flinkops/flink-operator:latest",
			Args:  []string{"--leader-elect", "--health-probe-bind-address=:8081", "--config=/etc/flink-operator/config.yaml"},
			Env: []corev1.EnvVar{{Name: "POD_NAMESPACE", ValueFrom: &corev1.EnvVarSource{
				FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}}},
			VolumeMounts: []corev1.VolumeMount{{Name: "config", MountPath: "/etc/flink-operator", ReadOnly: true}},
		}}},
	}
}

// TestOperatorContainer: a container of the operator's image is not
// supported without Config.OperatorBinary, saying so; with it, it runs that
// binary at /flink-operator in its mount namespace with the container's
// args on the pod IP, the image's environment and the container's (not the
// agent's), the pod's hostname and hosts file.
func TestOperatorContainer(t *testing.T) {
	pod := operatorPod()
	configDir := t.TempDir()
	volumes := map[string]volume{"config": {Path: configDir, APIData: true}}
	f := func(w *podWorker) podFields { return w.fields(pod) }

	w := operatorWorker(t, Config{}, pod, "127.100.0.7")
	c, err := w.newContainer(&pod.Spec.Containers[0], volumes, f(w))
	if err != nil {
		t.Fatal(err)
	}
	if c.class.Kind != Unsupported || c.command != nil || c.waitReason != ReasonImageNotSupported ||
		!strings.Contains(c.waitMessage, "--operator-binary") {
		t.Errorf("without an operator binary: %v, %s: %q", c.class.Kind, c.waitReason, c.waitMessage)
	}

	bin := filepath.Join(t.TempDir(), "flink-operator")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("KUBECONFIG", "/machine/kubeconfig") // the agent's: never the operator's
	w = operatorWorker(t, Config{OperatorBinary: bin}, pod, "127.100.0.7")
	c, err = w.newContainer(&pod.Spec.Containers[0], volumes, f(w))
	if err != nil {
		t.Fatal(err)
	}
	if c.class.Kind != Operator || !c.kubeletProbes || !w.hasHosts() {
		t.Fatalf("kind %v, kubelet probes %v, hosts file %v", c.class.Kind, c.kubeletProbes, w.hasHosts())
	}
	cmd, err := c.command(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if cmd.SysProcAttr == nil || cmd.SysProcAttr.Unshareflags&(syscall.CLONE_NEWNS|syscall.CLONE_NEWUTS) != syscall.CLONE_NEWNS|syscall.CLONE_NEWUTS {
		t.Errorf("namespaces: %+v", cmd.SysProcAttr)
	}
	b, err := os.ReadFile(filepath.Join(w.dir, "containers", "operator", "container.json"))
	if err != nil {
		t.Fatal(err)
	}
	var spec helperSpec
	if err := json.Unmarshal(b, &spec); err != nil {
		t.Fatal(err)
	}
	wantArgs := []string{"/flink-operator", "--leader-elect", "--health-probe-bind-address=127.100.0.7:8081", "--config=/etc/flink-operator/config.yaml"}
	if spec.Path != "/flink-operator" || !slices.Equal(spec.Args, wantArgs) || spec.Dir != "" {
		t.Errorf("command %s %q in %q, want %q", spec.Path, spec.Args, spec.Dir, wantArgs)
	}
	if spec.Hostname != "flink-operator-5d9c-x2x" || spec.HostsDir != w.hostsDir() {
		t.Errorf("identity %+v, want hostname flink-operator-5d9c-x2x and hosts dir %s", spec.containerIdentity, w.hostsDir())
	}
	wantMounts := []mountSpec{
		{Source: bin, Target: "/flink-operator", ReadOnly: true},
		{Source: configDir, Target: "/etc/flink-operator", ReadOnly: true},
	}
	if diff := cmp.Diff(wantMounts, spec.Mounts); diff != "" {
		t.Errorf("mounts (-want +got):\n%s", diff)
	}
	env := map[string]string{}
	for _, kv := range spec.Env {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	for k, want := range map[string]string{
		"POD_NAMESPACE":           "flink-operator",
		"HOSTNAME":                "flink-operator-5d9c-x2x",
		"HOME":                    "/home/nonroot",
		"PATH":                    "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
		"KUBERNETES_SERVICE_HOST": "127.0.0.1",
		"KUBERNETES_SERVICE_PORT": "6443",
	} {
		if env[k] != want {
			t.Errorf("env %s=%q, want %q", k, env[k], want)
		}
	}
	if v, ok := env["KUBECONFIG"]; ok {
		t.Errorf("the agent's KUBECONFIG reached the operator: %q", v)
	}

	// A volume at /etc/hosts wins over the pod's hosts file.
	hostsPod := operatorPod()
	ctr := &hostsPod.Spec.Containers[0]
	ctr.VolumeMounts = append(ctr.VolumeMounts, corev1.VolumeMount{Name: "hosts", MountPath: "/etc/hosts", SubPath: "hosts"})
	hostsVol := t.TempDir()
	if err := os.WriteFile(filepath.Join(hostsVol, "hosts"), []byte("127.0.0.1 mine\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	w = operatorWorker(t, Config{OperatorBinary: bin}, hostsPod, "127.100.0.8")
	volumes["hosts"] = volume{Path: hostsVol}
	c, err = w.newContainer(ctr, volumes, w.fields(hostsPod))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.command(context.Background()); err != nil {
		t.Fatal(err)
	}
	b, _ = os.ReadFile(filepath.Join(w.dir, "containers", "operator", "container.json"))
	spec = helperSpec{}
	if err := json.Unmarshal(b, &spec); err != nil || spec.HostsDir != "" {
		t.Errorf("with a volume at /etc/hosts: hosts dir %q (%v)", spec.HostsDir, err)
	}
}

// syncBuffer is a bytes.Buffer for a writer and a reader in two goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestContainerIdentity runs a process as the agent runs an Operator
// container: it has the pod's hostname (the machine keeps its own) and
// the pod's hosts file at /etc/hosts, and sees a new version of it that the
// agent writes (by rename) while it runs; the machine's /etc/hosts is
// untouched. Once with a volume below /etc (which mirrors /etc before the
// hosts file is placed) and once without.
func TestContainerIdentity(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("namespaces need root")
	}
	machineHosts, _ := os.ReadFile("/etc/hosts")
	machineName, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	for _, withEtcVolume := range []bool{true, false} {
		dir := t.TempDir()
		hostsDir := filepath.Join(dir, "dns")
		if err := os.MkdirAll(hostsDir, 0o755); err != nil {
			t.Fatal(err)
		}
		hosts := filepath.Join(hostsDir, "hosts")
		v1 := "127.100.0.5 localhost op-pod\n"
		if _, err := writeFileIfChanged(hosts, []byte(v1)); err != nil {
			t.Fatal(err)
		}
		var mounts []mountSpec
		if withEtcVolume {
			conf := filepath.Join(dir, "conf")
			if err := os.MkdirAll(conf, 0o755); err != nil {
				t.Fatal(err)
			}
			mounts = append(mounts, mountSpec{Source: conf, Target: "/etc/flink-operator", ReadOnly: true})
		}
		next := filepath.Join(dir, "next")
		script := `set -e
hostname
cat /etc/hosts
echo ---
while [ ! -e ` + next + ` ]; do sleep 0.02; done
cat /etc/hosts
echo ---
if (echo x >> /etc/hosts) 2>/dev/null; then echo hosts file written; fi
`
		cmd := exec.Command("sh", "-c", script)
		cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
		h, err := inContainerNamespaces(cmd, filepath.Join(dir, "c"), mounts, containerIdentity{Hostname: "op-pod", HostsDir: hostsDir})
		if err != nil {
			t.Fatal(err)
		}
		var out syncBuffer
		h.Stdout, h.Stderr = &out, &out
		if err := h.Start(); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(10 * time.Second)
		for strings.Count(out.String(), "---") < 1 && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		v2 := v1 + "127.100.0.9 demo-rest demo-rest.jobs demo-rest.jobs.svc demo-rest.jobs.svc.cluster.local\n"
		if _, err := writeFileIfChanged(hosts, []byte(v2)); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(next, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		err = h.Wait()
		if want := "op-pod\n" + v1 + "---\n" + v2 + "---\n"; out.String() != want || err != nil {
			t.Errorf("with a volume below /etc %v: %v, output\n%s\nwant\n%s", withEtcVolume, err, out.String(), want)
		}
	}
	if b, _ := os.ReadFile("/etc/hosts"); !bytes.Equal(b, machineHosts) {
		t.Errorf("the machine's /etc/hosts changed:\n%s", b)
	}
	if name, _ := os.Hostname(); name != machineName {
		t.Errorf("the machine's hostname changed: %q, was %q", name, machineName)
	}
}
