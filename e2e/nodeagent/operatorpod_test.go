package nodeagent_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes"

	"github.com/flinkops/flink-operator/e2e/localcluster"
	flinkclient "github.com/flinkops/flink-operator/pkg/generated/clientset/versioned"
)

const (
	operatorNS = "flink-operator"
	// operatorSA is the user the operator's pod authenticates as
	// (manifests/base/serviceaccount.yaml).
	operatorSA = "system:serviceaccount:flink-operator:flink-operator"
)

// TestOperatorImage installs the operator as its kustomize manifests
// (manifests/base: the Deployment of ghcr.io/flinkops/flink-operator:latest
// with its flags, ConfigMap volume, emptyDirs, probes, ServiceAccount and
// least-privilege RBAC) on a local cluster whose node agent runs that image
// as the locally built operator, and checks what a pod of it gets: Ready
// through its readinessProbe (the operator's /readyz on the pod IP); its
// listeners on the pod IP (--*-bind-address=:port rewritten); in-cluster
// credentials (the audit log: its Lease created as the pod's
// ServiceAccount, bound to the pod); the pod's hostname (leader-election
// identity, UTS namespace); the pod's hosts file at /etc/hosts, updated
// while it runs (a Service's entry appears once the pod is Ready), the
// machine's left alone; and, with the default --flink-endpoint=service, a
// FlinkDeployment of fake JobManagers reaches RUNNING, the operator
// calling http://<name>-rest.default.svc:8081 through that file.
func TestOperatorImage(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mount namespaces need root")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	machineHosts, _ := os.ReadFile("/etc/hosts")
	auditLog := filepath.Join(t.TempDir(), "audit.log")
	c, err := localcluster.Start(ctx, localcluster.Options{
		NodeAgent: true,
		Audit:     &localcluster.AuditOptions{Path: auditLog, Users: []string{operatorSA}, Verbs: []string{"create"}},
		Out:       testWriter{t},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if t.Failed() {
			dumpLog(t, c.NodeAgent.LogPath, 80)
		}
		if err := c.Stop(); err != nil {
			t.Error(err)
		}
	}()
	begin := time.Now()
	client := kubernetes.NewForConfigOrDie(c.RESTConfig())
	root, err := localcluster.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.InstallCRDs(ctx, filepath.Join(root, "manifests", "crds")); err != nil {
		t.Fatal(err)
	}
	installOperator(t, c, filepath.Join(root, "manifests", "base"))

	var pod corev1.Pod
	waitForf(t, ctx, 90*time.Second, func() string { return "the operator pod Ready: " + fmt.Sprint(statusOf(&pod)) }, func() bool {
		l, err := client.CoreV1().Pods(operatorNS).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=flink-operator"})
		if err != nil || len(l.Items) != 1 {
			return false
		}
		pod = l.Items[0]
		return podReady(&pod)
	})
	ip := pod.Status.PodIP
	t.Logf("operator pod %s Ready on %s %s after the install", pod.Name, ip, time.Since(begin).Round(time.Millisecond))
	cs := pod.Status.ContainerStatuses
	if len(cs) != 1 || cs[0].Name != "operator" || cs[0].RestartCount != 0 || cs[0].Started == nil || !*cs[0].Started {
		t.Errorf("container status: %v", statusOf(&pod))
	}
	// Its servers, on the pod IP (what the probes and Services reach).
	for _, u := range []string{"http://" + ip + ":8081/readyz", "http://" + ip + ":8081/healthz", "http://" + ip + ":8080/metrics"} {
		if code := httpStatus(ctx, u); code != http.StatusOK {
			t.Errorf("GET %s: %d", u, code)
		}
	}

	// The operator's log through the kubelet API.
	logs, err := c.Kubectl("logs", "-n", operatorNS, pod.Name, "-c", "operator")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`"Serving"`,
		`server="probe" address="` + ip + `:8081"`,
		`server="metrics" address="` + ip + `:8080"`,
		`server="webhook" address="` + ip + `:9443"`,
		`"Joining leader election"`,
		`identity="` + pod.Name + `"`, // os.Hostname() in the operator (its UTS namespace's), the Lease holder in a pod
		`"Became leader"`,
		`"Informer caches synced"`,
	} {
		if !strings.Contains(logs, want) {
			t.Errorf("operator log: no %s in\n%s", want, logs)
		}
	}

	// In-cluster: the API server saw the Lease created by the pod's
	// ServiceAccount with a token bound to the pod.
	if ev := findAudit(t, auditLog, "create", "leases", operatorNS); ev == nil {
		t.Errorf("no Lease created as %s in the audit log", operatorSA)
	} else if podName := ev.User.Extra["authentication.kubernetes.io/pod-name"]; len(podName) != 1 || podName[0] != pod.Name ||
		!strings.HasPrefix(ev.UserAgent, "flink-operator") {
		t.Errorf("Lease created by %s %v (user agent %q), want the token of pod %s", ev.User.Username, ev.User.Extra, ev.UserAgent, pod.Name)
	}

	// The process: the image's entrypoint with the rewritten flags, in
	// its own UTS namespace, with the pod's hosts file as /etc/hosts.
	procs := recordedPIDs(t, c, operatorNS+"/"+pod.Name+"/operator")
	if len(procs) != 1 {
		t.Fatalf("agent records %d operator processes", len(procs))
	}
	pid := procs[0].PID
	cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	args := strings.Split(strings.TrimRight(string(cmdline), "\x00"), "\x00")
	if len(args) == 0 || args[0] != "/flink-operator" || !strings.Contains(string(cmdline), "--health-probe-bind-address="+ip+":8081") ||
		!strings.Contains(string(cmdline), "--config=/etc/flink-operator/config.yaml") {
		t.Errorf("operator command line %q", args)
	}
	ownUTS, _ := os.Readlink("/proc/self/ns/uts")
	if uts, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/uts", pid)); err != nil || uts == ownUTS {
		t.Errorf("operator UTS namespace %s (%v), the machine's %s", uts, err, ownUTS)
	}
	environ, _ := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
	if !bytes.Contains(environ, []byte("\x00HOSTNAME="+pod.Name+"\x00")) || bytes.Contains(environ, []byte("\x00KUBECONFIG=")) {
		t.Errorf("operator environment: %q", strings.ReplaceAll(string(environ), "\x00", " "))
	}
	podHosts := filepath.Join(c.NodeAgentDir, "pods", fmt.Sprintf("%s_%s_%s", operatorNS, pod.Name, pod.UID), "hosts")
	containerHosts := fmt.Sprintf("/proc/%d/root/etc/hosts", pid)
	webhookLine := ip + " flink-operator-webhook flink-operator-webhook.flink-operator flink-operator-webhook.flink-operator.svc"
	waitForf(t, ctx, 10*time.Second, func() string {
		b, _ := os.ReadFile(containerHosts)
		return fmt.Sprintf("the webhook Service in the operator's /etc/hosts:\n%s", b)
	}, func() bool {
		b, err := os.ReadFile(containerHosts)
		return err == nil && strings.Contains(string(b), webhookLine)
	})
	inside, err1 := os.ReadFile(containerHosts)
	outside, err2 := os.ReadFile(podHosts)
	if err1 != nil || err2 != nil || !bytes.Equal(inside, outside) || !strings.HasPrefix(string(inside), ip+" localhost "+pod.Name) {
		t.Errorf("the operator's /etc/hosts (%v):\n%s\nthe pod's hosts file (%v):\n%s", err1, inside, err2, outside)
	}

	// --flink-endpoint=service: a fake application cluster reaches RUNNING
	// through <name>-rest.default.svc, which only the hosts file resolves.
	if out, err := c.KubectlInput(strings.NewReader(fakeDeploymentYAML("via-service", "default")), "apply", "-f", "-"); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	flink := flinkclient.NewForConfigOrDie(c.RESTConfig())
	var state, jm string
	waitForf(t, ctx, 90*time.Second, func() string {
		return fmt.Sprintf("FlinkDeployment via-service RUNNING (job %q, JobManager %q)", state, jm)
	}, func() bool {
		fd, err := flink.FlinkV1beta1().FlinkDeployments("default").Get(ctx, "via-service", metav1.GetOptions{})
		if err != nil {
			return false
		}
		state, jm = string(fd.Status.JobStatus.State), string(fd.Status.JobManagerDeploymentStatus)
		return state == "RUNNING" && jm == "READY"
	})
	if b, _ := os.ReadFile(containerHosts); !strings.Contains(string(b), " via-service-rest.default.svc ") {
		t.Errorf("the operator's /etc/hosts has no via-service-rest.default.svc:\n%s", b)
	}
	t.Logf("operator installed, Ready and running a FlinkDeployment through its Service in %s", time.Since(begin).Round(time.Millisecond))

	if b, _ := os.ReadFile("/etc/hosts"); !bytes.Equal(b, machineHosts) {
		t.Errorf("the machine's /etc/hosts changed:\n%s", b)
	}
}

// installOperator applies the kustomize directory dir (kubectl kustomize,
// then apply), with one change for speed: the operator polls a deploying
// cluster every 2 s (kubernetes.operator.observer.progress-check.interval,
// 10 s by default).
func installOperator(t *testing.T, c *localcluster.Cluster, dir string) {
	t.Helper()
	rendered, err := c.Kubectl("kustomize", dir)
	if err != nil {
		t.Fatal(err)
	}
	list := map[string]any{"apiVersion": "v1", "kind": "List"}
	var items []any
	dec := yaml.NewYAMLOrJSONDecoder(strings.NewReader(rendered), 4096)
	for {
		var obj unstructured.Unstructured
		if err := dec.Decode(&obj.Object); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		if obj.Object == nil {
			continue
		}
		if obj.GetKind() == "ConfigMap" && obj.GetName() == "flink-operator-config" {
			conf, _, _ := unstructured.NestedString(obj.Object, "data", "config.yaml")
			if conf == "" {
				t.Fatalf("ConfigMap flink-operator-config has no config.yaml")
			}
			conf += "\nkubernetes.operator.observer.progress-check.interval: 2 s\n"
			if err := unstructured.SetNestedField(obj.Object, conf, "data", "config.yaml"); err != nil {
				t.Fatal(err)
			}
		}
		items = append(items, obj.Object)
	}
	list["items"] = items
	b, err := json.Marshal(list)
	if err != nil {
		t.Fatal(err)
	}
	if out, err := c.KubectlInput(bytes.NewReader(b), "apply", "-f", "-"); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
}

// auditEvent is what the test reads of an audit.k8s.io/v1 Event.
type auditEvent struct {
	Verb      string `json:"verb"`
	UserAgent string `json:"userAgent"`
	User      struct {
		Username string              `json:"username"`
		Extra    map[string][]string `json:"extra"`
	} `json:"user"`
	ObjectRef struct {
		Resource  string `json:"resource"`
		Namespace string `json:"namespace"`
	} `json:"objectRef"`
	ResponseStatus struct {
		Code int `json:"code"`
	} `json:"responseStatus"`
}

// findAudit returns the first successful request of verb on resource in
// namespace by operatorSA in the audit log at path, or nil.
func findAudit(t *testing.T, path, verb, resource, namespace string) *auditEvent {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var ev auditEvent
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatalf("audit log: %v", err)
		}
		if ev.Verb == verb && ev.ObjectRef.Resource == resource && ev.ObjectRef.Namespace == namespace &&
			ev.User.Username == operatorSA && ev.ResponseStatus.Code < 300 {
			return &ev
		}
	}
	return nil
}

func httpStatus(ctx context.Context, url string) int {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

// fakeDeploymentYAML is an application FlinkDeployment run by fake
// JobManagers.
func fakeDeploymentYAML(name, ns string) string {
	return fmt.Sprintf(`apiVersion: flink.apache.org/v1beta1
kind: FlinkDeployment
metadata:
  name: %s
  namespace: %s
spec:
  image: %s
  flinkVersion: v1_20
  mode: standalone
  serviceAccount: default
  flinkConfiguration:
    taskmanager.numberOfTaskSlots: "1"
  jobManager:
    resource: {memory: 1024m, cpu: 0.1}
  taskManager:
    resource: {memory: 1024m, cpu: 0.1}
  job:
    jarURI: local:///opt/flink/usrlib/job.jar
    parallelism: 1
    upgradeMode: stateless
`, name, ns, fakeImage)
}
