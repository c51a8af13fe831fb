package helme2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/flinkops/flink-operator/e2e/framework"
	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/cluster"
)

const (
	release   = "flink-operator"
	opNS      = "flink-operator"
	opLabel   = "app.kubernetes.io/name=flink-operator"
	lease     = "flink-operator-lease"
	jobsNS    = "jobs"
	teamA     = "team-a"
	teamB     = "team-b"
	fakeImage = "flinkops/fake-jobmanager:1.20"
	// leaseDuration is the operator's default (kubernetes.operator.leader-election.lease-duration).
	leaseDuration = 15 * time.Second
)

type suite struct {
	*framework.Env
	t     *testing.T
	helm  string
	env   []string // helm's environment: this cluster, its own config and cache dirs
	chart string
}

func TestHelmChartOnTheLocalCluster(t *testing.T) {
	if framework.Kind() {
		t.Skip("the local provider's test: the node agent runs the chart's operator image")
	}
	begin := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	e := framework.Setup(t, ctx, framework.Options{Name: "helme2e", NoOperator: true, NoCRDs: true})
	s := &suite{Env: e, t: t, chart: filepath.Join(e.Root, "helm", "flink-operator")}
	s.helm = buildHelm(t, e.Root)
	home := filepath.Join(e.Base, "helm")
	s.env = append(os.Environ(), "KUBECONFIG="+e.Local.Kubeconfig,
		"HELM_CONFIG_HOME="+filepath.Join(home, "config"), "HELM_CACHE_HOME="+filepath.Join(home, "cache"),
		"HELM_DATA_HOME="+filepath.Join(home, "data"))
	t.Cleanup(func() {
		if t.Failed() {
			out, _ := e.Kubectl("logs", "-n", opNS, "-l", opLabel, "--all-containers", "--prefix", "--tail=150")
			t.Logf("operator pods' logs:\n%s", out)
			for _, ns := range []string{opNS, jobsNS, teamA, teamB} {
				e.Dump(t, ns)
			}
		}
	})

	step := func(name string, f func()) {
		t.Helper()
		start := time.Now()
		f()
		if t.Failed() {
			t.FailNow()
		}
		t.Logf("step %s: %s", name, time.Since(start).Round(100*time.Millisecond))
	}
	step("install-defaults", s.installDefaults)
	step("upgrade-rolls-operator", s.upgradeKeepsJob)
	step("uninstall", s.uninstall)
	step("install-values-file", s.installValuesFile)
	step("dynamic-config", s.dynamicConfig)
	step("operator-ha", s.operatorHA)
	t.Logf("TestHelmChartOnTheLocalCluster: %s in all", time.Since(begin).Round(time.Second))
}

// buildHelm returns the helm binary hack/build-helm.sh built from the Go module proxy (cached:
// make helm-chart, which make test runs first, has built it).
func buildHelm(t *testing.T, root string) string {
	cmd := exec.Command("bash", filepath.Join(root, "hack", "build-helm.sh"))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("hack/build-helm.sh: %v\n%s", err, stderr.String())
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	return lines[len(lines)-1]
}

func (s *suite) runHelm(args ...string) string {
	s.t.Helper()
	cmd := exec.CommandContext(s.Ctx, s.helm, args...)
	cmd.Env = s.env
	out, err := cmd.CombinedOutput()
	if err != nil {
		s.t.Fatalf("helm %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

func (s *suite) kubectl(args ...string) string {
	s.t.Helper()
	out, err := s.Kubectl(args...)
	if err != nil {
		s.t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

func (s *suite) apply(yaml string) {
	s.t.Helper()
	s.MustKubectl(s.t, yaml, "apply", "-f", "-")
}

// installDefaults: helm install with the chart's default values (upstream's), the operator a pod
// of the node agent; its webhook answers through the Service, and a job runs and takes a savepoint.
func (s *suite) installDefaults() {
	t := s.t
	out := s.runHelm("install", release, s.chart, "-n", opNS, "--create-namespace")
	if !strings.Contains(out, "STATUS: deployed") {
		t.Fatalf("helm install:\n%s", out)
	}
	for _, crd := range []string{"flinkdeployments", "flinksessionjobs", "flinkstatesnapshots", "flinkbluegreendeployments"} {
		s.kubectl("wait", "--for=condition=Established", "--timeout=60s", "crd/"+crd+".flink.apache.org")
	}
	pods := s.waitOperatorPods(1)
	leader := s.waitLeader(pods)
	s.waitLog(leader, "Became leader")
	// The pod is the operator in-cluster: the chart's ServiceAccount, the chart's image run by
	// the node agent.
	var p corev1.Pod
	s.getPod(leader, &p)
	if p.Spec.ServiceAccountName != "flink-operator" || !strings.HasPrefix(p.Spec.Containers[0].Image, "ghcr.io/flinkops/flink-operator:") {
		t.Errorf("operator pod %s: ServiceAccount %q, image %q", leader, p.Spec.ServiceAccountName, p.Spec.Containers[0].Image)
	}

	// The API server reaches the webhook through its Service (flink-operator-webhook-service).
	out, err := s.KubectlInput(strings.NewReader(snapshotYAML(opNS, "of-nothing", "missing")), "apply", "-f", "-")
	if err == nil || !strings.Contains(fmt.Sprint(out, err), `admission webhook "validate.flink.apache.org" denied`) {
		t.Fatalf("a snapshot of a job that does not exist: want the webhook's denial, got %v\n%s", err, out)
	}

	s.CreateNamespace(t, jobsNS)
	s.apply(deploymentYAML(jobsNS, "orders", s.savepointDir("orders"), ""))
	s.waitJobRunning(jobsNS, "orders")
	s.apply(snapshotYAML(jobsNS, "orders-sp-1", "orders"))
	s.waitSnapshot(jobsNS, "orders-sp-1", v1beta1.SnapshotCompleted, time.Minute)
	if n := s.savepoints("orders"); n != 1 {
		t.Errorf("%d savepoints of orders, want 1", n)
	}
}

// upgradeKeepsJob: helm upgrade changing a value rolls the operator; the job keeps running.
func (s *suite) upgradeKeepsJob() {
	t := s.t
	before := s.waitOperatorPods(1)
	jm := s.jobManagerPod(jobsNS, "orders")
	jobID := s.deployment(jobsNS, "orders").Status.JobStatus.JobID
	out := s.runHelm("upgrade", release, s.chart, "-n", opNS, "--reuse-values",
		"--set-string", "operatorPod.annotations.helme2e/revision=2")
	if !strings.Contains(out, "STATUS: deployed") || !strings.Contains(out, "REVISION: 2") {
		t.Fatalf("helm upgrade:\n%s", out)
	}
	s.kubectl("rollout", "status", "deploy/flink-operator", "-n", opNS, "--timeout=120s")
	after := s.waitOperatorPods(1)
	if after[0] == before[0] {
		t.Fatalf("helm upgrade changed the pod template, but pod %s still runs", before[0])
	}
	var p corev1.Pod
	s.getPod(after[0], &p)
	if p.Annotations["helme2e/revision"] != "2" {
		t.Errorf("new operator pod %s lacks the upgraded annotation: %v", after[0], p.Annotations)
	}
	s.waitLeader(after)
	// The job was never touched: same JobManager pod, same job, still running; the new
	// operator takes the next savepoint.
	s.apply(snapshotYAML(jobsNS, "orders-sp-2", "orders"))
	s.waitSnapshot(jobsNS, "orders-sp-2", v1beta1.SnapshotCompleted, time.Minute)
	d := s.deployment(jobsNS, "orders")
	if got := s.jobManagerPod(jobsNS, "orders"); got != jm || d.Status.JobStatus.JobID != jobID || d.Status.JobStatus.State != "RUNNING" {
		t.Errorf("after the operator's upgrade: JobManager pod %s (was %s), job %s %s (was %s RUNNING)",
			got, jm, d.Status.JobStatus.JobID, d.Status.JobStatus.State, jobID)
	}
	if n := s.savepoints("orders"); n != 2 {
		t.Errorf("%d savepoints of orders, want 2", n)
	}
}

// uninstall: helm uninstall leaves none of the chart's objects and no webhook certificate; the
// CRDs stay (Helm never deletes them), and so do the user's resources.
func (s *suite) uninstall() {
	t := s.t
	s.runHelm("uninstall", release, "-n", opNS, "--wait", "--timeout", "2m")
	s.WaitFor(t, 2*time.Minute, "the operator's pods and certificate gone", func() (bool, string) {
		left := s.leftovers()
		return len(left) == 0, strings.Join(left, ", ")
	})
	for _, crd := range []string{"flinkdeployments", "flinksessionjobs", "flinkstatesnapshots", "flinkbluegreendeployments"} {
		s.kubectl("get", "crd/"+crd+".flink.apache.org")
	}
	if _, err := s.Flink.FlinkV1beta1().FlinkDeployments(jobsNS).Get(s.Ctx, "orders", metav1.GetOptions{}); err != nil {
		t.Errorf("FlinkDeployment orders after helm uninstall: %v", err)
	}
}

// leftovers lists the operator's objects still there: everything the chart renders, and the
// certificate Secret the operator created. The Lease stays (as upstream's), released; so do the
// job ServiceAccount and its Role (helm.sh/resource-policy: keep, as upstream's chart).
func (s *suite) leftovers() []string {
	var left []string
	add := func(kind string, names []string) {
		for _, n := range names {
			left = append(left, kind+" "+n)
		}
	}
	ns := func(resource string, skip ...string) {
		out, err := s.Kubectl("get", resource, "-n", opNS, "-o", "name")
		if err != nil {
			left = append(left, fmt.Sprintf("%s: %v", resource, err))
			return
		}
		for _, n := range strings.Fields(out) {
			if !slices.Contains(skip, n) {
				left = append(left, n)
			}
		}
	}
	ns("deployments")
	ns("pods")
	ns("services")
	ns("configmaps", "configmap/kube-root-ca.crt")
	ns("secrets")
	ns("serviceaccounts", "serviceaccount/default", "serviceaccount/flink")
	ns("roles", "role.rbac.authorization.k8s.io/flink")
	ns("rolebindings", "rolebinding.rbac.authorization.k8s.io/flink-role-binding")
	for _, kind := range []string{"clusterroles", "clusterrolebindings", "validatingwebhookconfigurations", "mutatingwebhookconfigurations"} {
		out, err := s.Kubectl("get", kind, "-o", "name")
		if err != nil {
			left = append(left, fmt.Sprintf("%s: %v", kind, err))
			continue
		}
		var mine []string
		for _, n := range strings.Fields(out) {
			if strings.Contains(n, "/flink-operator") {
				mine = append(mine, n)
			}
		}
		add("", mine)
	}
	return left
}

// installValuesFile: helm install with a values file as a user switching from upstream would
// write it: watchNamespaces, replicas: 2, no webhook, defaultConfiguration.
func (s *suite) installValuesFile() {
	t := s.t
	for _, ns := range []string{teamA, teamB} {
		s.CreateNamespace(t, ns)
	}
	values := filepath.Join(s.Base, "values.yaml")
	conf := "kubernetes.operator.dynamic.namespaces.enabled: true\n" +
		"kubernetes.operator.dynamic.config.check.interval: 5 s\n"
	if err := os.WriteFile(values, []byte(fmt.Sprintf(`watchNamespaces: [%s]
replicas: 2
webhook:
  create: false
defaultConfiguration:
  create: true
  append: true
  config.yaml: |
%s  flink-conf.yaml: |
%s`, teamA, indent(conf, "    "), indent(conf, "    "))), 0o644); err != nil {
		t.Fatal(err)
	}
	out := s.runHelm("install", release, s.chart, "-n", opNS, "-f", values)
	if !strings.Contains(out, "STATUS: deployed") {
		t.Fatalf("helm install -f values.yaml:\n%s", out)
	}
	s.kubectl("rollout", "status", "deploy/flink-operator", "-n", opNS, "--timeout=120s")
	pods := s.waitOperatorPods(2)
	leader := s.waitLeader(pods)
	s.waitLog(leader, "Became leader")
	if out, _ := s.Kubectl("get", "validatingwebhookconfigurations,mutatingwebhookconfigurations", "-o", "name"); strings.Contains(out, "flink-operator") {
		t.Errorf("webhook.create: false, but webhook configurations exist:\n%s", out)
	}

	s.apply(deploymentYAML(teamA, "clicks", s.savepointDir("clicks"), "20s"))
	s.apply(deploymentYAML(teamB, "views", s.savepointDir("views"), ""))
	s.waitJobRunning(teamA, "clicks")
	// team-b is not watched: nothing reconciles views (checked once more after the watched job
	// ran, which shows the operator at work).
	if d := s.deployment(teamB, "views"); d.Status.LifecycleState != "" || len(d.Finalizers) != 0 {
		t.Errorf("views in unwatched namespace %s was reconciled: lifecycle %q, finalizers %v", teamB, d.Status.LifecycleState, d.Finalizers)
	}
}

// dynamicConfig: editing kubernetes.operator.watched.namespaces in the operator's ConfigMap
// (upstream's test_dynamic_config.sh) reaches the running leader within the check interval; the
// job in the newly watched namespace runs; no operator container restarted.
func (s *suite) dynamicConfig() {
	t := s.t
	pods := s.waitOperatorPods(2)
	leader := s.waitLeader(pods)
	// The operator's rights in team-b, as the chart grants them in each watched namespace (an
	// administrator adding a namespace does this, or a helm upgrade with the new list would).
	role, err := s.Kube.RbacV1().Roles(teamA).Get(s.Ctx, "flink-operator", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Kube.RbacV1().Roles(teamB).Create(s.Ctx, &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: role.Name, Namespace: teamB}, Rules: role.Rules,
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	s.kubectl("create", "rolebinding", "flink-operator-role-binding", "-n", teamB, "--role=flink-operator",
		"--serviceaccount="+opNS+":flink-operator")

	var cm corev1.ConfigMap
	got, err := s.Kube.CoreV1().ConfigMaps(opNS).Get(s.Ctx, "flink-operator-config", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cm = *got.DeepCopy()
	for _, file := range []string{"config.yaml", "flink-conf.yaml"} {
		old := "kubernetes.operator.watched.namespaces: " + teamA
		if !strings.Contains(cm.Data[file], old) {
			t.Fatalf("ConfigMap flink-operator-config %s lacks %q:\n%s", file, old, cm.Data[file])
		}
		cm.Data[file] = strings.Replace(cm.Data[file], old, old+","+teamB, 1)
	}
	edited := time.Now()
	if _, err := s.Kube.CoreV1().ConfigMaps(opNS).Update(s.Ctx, &cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	s.waitLog(leader, "Watched namespaces changed: restarting the informers and controllers on the new namespaces")
	applied := time.Since(edited)
	s.waitJobRunning(teamB, "views")
	t.Logf("the watched namespaces' edit applied by the running operator %s after the ConfigMap update (check interval 5 s, volume sync about 1 s)",
		applied.Round(100*time.Millisecond))
	if applied > 20*time.Second {
		t.Errorf("the edit took %s to apply: want it within the 5 s check interval plus the volume sync", applied)
	}
	for _, name := range pods {
		var p corev1.Pod
		s.getPod(name, &p)
		if n := p.Status.ContainerStatuses[0].RestartCount; n != 0 {
			t.Errorf("operator pod %s restarted %d times: the edit must apply without a restart", name, n)
		}
	}
	if now := s.waitOperatorPods(2); !slices.Equal(now, pods) {
		t.Errorf("operator pods %v, were %v: the edit must apply without new pods", now, pods)
	}
}

// operatorHA: the leader pod deleted while a savepoint is in flight (the fake JobManager takes
// 20 s per savepoint); the standby leads within the lease duration and completes the savepoint,
// which Flink took once.
func (s *suite) operatorHA() {
	t := s.t
	pods := s.waitOperatorPods(2)
	leader := s.waitLeader(pods)
	s.apply(snapshotYAML(teamA, "clicks-sp", "clicks"))
	snap := s.waitSnapshot(teamA, "clicks-sp", v1beta1.SnapshotInProgress, time.Minute)
	trigger := snap.Status.TriggerID
	deleted := time.Now()
	s.kubectl("delete", "pod", leader, "-n", opNS, "--wait=false")
	var next string
	s.WaitFor(t, leaseDuration+10*time.Second, "another replica holding the Lease", func() (bool, string) {
		// The standby, or the pod the Deployment starts in the deleted one's place: whichever
		// asks first once the Lease is released or expires.
		holder := s.leaseHolder()
		if holder != "" && holder != leader {
			next = holder
			return true, ""
		}
		return false, "holder " + holder
	})
	handover := time.Since(deleted)
	t.Logf("leader %s deleted; %s leads %s later (lease duration %s)", leader, next, handover.Round(100*time.Millisecond), leaseDuration)
	if handover > leaseDuration {
		t.Errorf("handover took %s, more than the lease duration %s", handover, leaseDuration)
	}
	done := s.waitSnapshot(teamA, "clicks-sp", v1beta1.SnapshotCompleted, 2*time.Minute)
	if done.Status.TriggerID != trigger {
		t.Errorf("savepoint completed under trigger %s, but %s was in flight at the handover: triggered twice", done.Status.TriggerID, trigger)
	}
	if n := s.savepoints("clicks"); n != 1 {
		t.Errorf("Flink wrote %d savepoints of clicks, want exactly 1", n)
	}
	s.waitLog(next, "Became leader")
	if d := s.deployment(teamA, "clicks"); d.Status.JobStatus.State != "RUNNING" {
		t.Errorf("clicks after the handover: job %s", d.Status.JobStatus.State)
	}
}

// waitOperatorPods waits for exactly n Ready operator pods, none terminating, and returns their
// names, sorted.
func (s *suite) waitOperatorPods(n int) []string {
	var names []string
	s.WaitFor(s.t, 2*time.Minute, fmt.Sprintf("%d Ready operator pods", n), func() (bool, string) {
		l, err := s.Kube.CoreV1().Pods(opNS).List(s.Ctx, metav1.ListOptions{LabelSelector: opLabel})
		if err != nil {
			return false, err.Error()
		}
		names = names[:0]
		for _, p := range l.Items {
			if p.DeletionTimestamp != nil {
				return false, "pod " + p.Name + " terminating; " + framework.PodNames(l.Items)
			}
			if framework.PodReady(&p) {
				names = append(names, p.Name)
			}
		}
		return len(names) == n && len(l.Items) == n, framework.PodNames(l.Items)
	})
	slices.Sort(names)
	return names
}

// leaseHolder is the Lease's holder identity: the operator pod's name (its hostname), as
// upstream's operator holds it.
func (s *suite) leaseHolder() string {
	l, err := s.Kube.CoordinationV1().Leases(opNS).Get(s.Ctx, lease, metav1.GetOptions{})
	if err != nil || l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}

// waitLeader waits until one of pods holds the Lease and returns it.
func (s *suite) waitLeader(pods []string) string {
	var leader string
	s.WaitFor(s.t, leaseDuration+30*time.Second, "an operator pod holding the Lease", func() (bool, string) {
		holder := s.leaseHolder()
		for _, p := range pods {
			if holder == p {
				leader = p
				return true, ""
			}
		}
		return false, fmt.Sprintf("holder %q, pods %v", holder, pods)
	})
	return leader
}

// waitLog waits for line in the operator pod's log, read through the API server (kubectl logs,
// the node agent's kubelet API).
func (s *suite) waitLog(pod, line string) {
	s.WaitFor(s.t, time.Minute, fmt.Sprintf("%q in the log of %s", line, pod), func() (bool, string) {
		out, err := s.Kubectl("logs", "-n", opNS, pod)
		if err != nil {
			return false, err.Error()
		}
		return strings.Contains(out, line), "not yet"
	})
}

func (s *suite) getPod(name string, into *corev1.Pod) {
	p, err := s.Kube.CoreV1().Pods(opNS).Get(s.Ctx, name, metav1.GetOptions{})
	if err != nil {
		s.t.Fatal(err)
	}
	*into = *p
}

func (s *suite) deployment(ns, name string) *v1beta1.FlinkDeployment {
	d, err := s.Flink.FlinkV1beta1().FlinkDeployments(ns).Get(s.Ctx, name, metav1.GetOptions{})
	if err != nil {
		s.t.Fatal(err)
	}
	return d
}

func (s *suite) waitJobRunning(ns, name string) {
	s.WaitFor(s.t, 2*time.Minute, ns+"/"+name+" RUNNING and STABLE", func() (bool, string) {
		d, err := s.Flink.FlinkV1beta1().FlinkDeployments(ns).Get(s.Ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		st := d.Status
		return st.JobStatus.State == "RUNNING" && st.LifecycleState == "STABLE",
			fmt.Sprintf("job %q lifecycle %q error %q", st.JobStatus.State, st.LifecycleState, st.Error)
	})
}

func (s *suite) waitSnapshot(ns, name string, state v1beta1.SnapshotState, timeout time.Duration) *v1beta1.FlinkStateSnapshot {
	var snap *v1beta1.FlinkStateSnapshot
	s.WaitFor(s.t, timeout, ns+"/"+name+" "+string(state), func() (bool, string) {
		got, err := s.Flink.FlinkV1beta1().FlinkStateSnapshots(ns).Get(s.Ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) || err != nil {
			return false, fmt.Sprint(err)
		}
		snap = got
		if got.Status.State.IsTerminal() && got.Status.State != state {
			s.t.Fatalf("%s/%s ended %s (%s), want %s", ns, name, got.Status.State, got.Status.Error, state)
		}
		return got.Status.State == state, fmt.Sprintf("state %q trigger %q", got.Status.State, got.Status.TriggerID)
	})
	return snap
}

// jobManagerPod is the name and UID of the deployment's one JobManager pod.
func (s *suite) jobManagerPod(ns, name string) string {
	sel := cluster.LabelApp + "=" + name + "," + cluster.LabelComponent + "=" + cluster.ComponentJobManager
	l, err := s.Kube.CoreV1().Pods(ns).List(s.Ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil || len(l.Items) != 1 {
		s.t.Fatalf("JobManager pods of %s/%s: %v %s", ns, name, err, framework.PodNamesOrErr(l, err))
	}
	return l.Items[0].Name + "/" + string(l.Items[0].UID)
}

// savepointDir is where the fake JobManager of job writes its savepoints (a directory each).
func (s *suite) savepointDir(job string) string { return filepath.Join(s.Base, "savepoints", job) }

func (s *suite) savepoints(job string) int {
	entries, err := os.ReadDir(s.savepointDir(job))
	if err != nil && !os.IsNotExist(err) {
		s.t.Fatal(err)
	}
	n := 0
	for _, e := range entries {
		if e.IsDir() {
			n++
		}
	}
	return n
}

// deploymentYAML is an application FlinkDeployment run by a fake JobManager; savepointDelay, if
// set, is how long each of its savepoints takes.
func deploymentYAML(ns, name, savepointDir, savepointDelay string) string {
	podTemplate := ""
	if savepointDelay != "" {
		podTemplate = fmt.Sprintf(`
    podTemplate:
      spec:
        containers:
          - name: flink-main-container
            env:
              - name: FAKE_JOBMANAGER_SAVEPOINT_DELAY
                value: %q`, savepointDelay)
	}
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
    execution.checkpointing.savepoint-dir: file://%s
    execution.checkpointing.dir: file://%[4]s-checkpoints
  jobManager:
    resource: {memory: 1024m, cpu: 0.1}%s
  taskManager:
    resource: {memory: 1024m, cpu: 0.1}
  job:
    jarURI: local:///opt/flink/usrlib/job.jar
    parallelism: 1
    upgradeMode: savepoint
`, name, ns, fakeImage, savepointDir, podTemplate)
}

func snapshotYAML(ns, name, job string) string {
	return fmt.Sprintf(`apiVersion: flink.apache.org/v1beta1
kind: FlinkStateSnapshot
metadata:
  name: %s
  namespace: %s
spec:
  backoffLimit: 0
  jobReference: {kind: FlinkDeployment, name: %s}
  savepoint: {}
`, name, ns, job)
}

func indent(s, prefix string) string {
	var b strings.Builder
	for _, l := range strings.SplitAfter(s, "\n") {
		if l != "" {
			b.WriteString(prefix + l)
		}
	}
	return b.String()
}
