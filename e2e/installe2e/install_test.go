package installe2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	flinkjvm "github.com/flinkops/flink-operator/e2e/flink"
	"github.com/flinkops/flink-operator/e2e/framework"
	"github.com/flinkops/flink-operator/e2e/localcluster"
	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/reviewstamp"
)

const (
	opNamespace = "flink-operator"
	opSA        = "system:serviceaccount:flink-operator:flink-operator"
	teamA       = "team-a"
	teamB       = "team-b"
	job         = "orders"
	keys        = 10
)

type suite struct {
	*framework.Env
	t       *testing.T
	version string
	metrics string // the operator's /metrics URL
	image   string
	flinkV  v1beta1.FlinkVersion
	data    string
}

func TestInstallAndCrossNamespace(t *testing.T) {
	if framework.Kind() {
		t.Skip("the kind provider installs the operator itself (e2e/kind/up.sh); this test is the local provider's")
	}
	begin := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 19*time.Minute)
	defer cancel()
	e := framework.Setup(t, ctx, framework.Options{Name: "installe2e", NoOperator: true, NoCRDs: true})
	versions := flinkjvm.Versions()
	v := versions[len(versions)-1] // the newest pinned Flink; the other suites cover both
	s := &suite{Env: e, t: t, version: v, image: "flink:" + majorMinor(v), data: filepath.Join(e.Base, "data")}
	s.flinkV = v1beta1.FlinkVersion("v" + strings.ReplaceAll(majorMinor(v), ".", "_"))
	t.Cleanup(func() {
		if t.Failed() {
			for _, ns := range []string{teamA, teamB} {
				e.Dump(t, ns)
			}
			framework.DumpTail(t, e.OpLog, 300)
		}
	})

	s.install()
	s.checkRBAC()
	s.startOperator()
	s.webhookRejects()
	s.savepointLifecycle()
	s.webhookMatchConditions()
	s.crossNamespace()
	s.checkOperatorLog()
	t.Logf("TestInstallAndCrossNamespace: %s in all", time.Since(begin).Round(time.Second))
}

func majorMinor(v string) string {
	parts := strings.SplitN(v, ".", 3)
	return parts[0] + "." + parts[1]
}

// install applies manifests/ with kustomize, server-side: a dry run, then
// for real, and waits for the CRDs.
func (s *suite) install() {
	t := s.t
	dir := filepath.Join(s.Root, "manifests")
	// A server dry run cannot create the namespace its namespaced objects
	// go into, so that one object is applied first (by the same field
	// manager as the real apply below).
	s.apply(`{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"flink-operator","labels":{"app.kubernetes.io/name":"flink-operator"}}}`)
	out := s.kubectl("apply", "-k", dir, "--server-side", "--dry-run=server")
	if !strings.Contains(out, "serverside-applied (server dry run)") {
		t.Fatalf("server dry run: %s", out)
	}
	out = s.kubectl("apply", "-k", dir, "--server-side")
	for _, want := range []string{"customresourcedefinition.apiextensions.k8s.io/flinkstatesnapshots.flink.apache.org",
		"customresourcedefinition.apiextensions.k8s.io/flinkbluegreendeployments.flink.apache.org",
		"serviceaccount/flink-operator", "deployment.apps/flink-operator", "validatingwebhookconfiguration.admissionregistration.k8s.io/flink-operator",
		"mutatingwebhookconfiguration.admissionregistration.k8s.io/flink-operator"} {
		if !strings.Contains(out, want) {
			t.Errorf("kubectl apply -k: no %s in\n%s", want, out)
		}
	}
	// kubectl wait fails rather than waits while a new CRD has no
	// conditions yet: poll it.
	s.WaitFor(t, time.Minute, "the CRDs Established", func() (bool, string) {
		out, err := s.Kubectl("wait", "--for=condition=Established", "--timeout=5s",
			"crd/flinkdeployments.flink.apache.org", "crd/flinksessionjobs.flink.apache.org", "crd/flinkstatesnapshots.flink.apache.org",
			"crd/flinkbluegreendeployments.flink.apache.org")
		return err == nil, fmt.Sprint(out, err)
	})
	// The node agent runs Flink images only: the operator runs as a local
	// process below, with the same ServiceAccount.
	s.kubectl("scale", "deployment/flink-operator", "-n", opNamespace, "--replicas=0")
	t.Logf("kubectl apply -k manifests/ --server-side: %d objects", strings.Count(out, "\n"))
}

// checkRBAC asks the API server what the manifest's ServiceAccount may do.
func (s *suite) checkRBAC() {
	t := s.t
	for _, c := range []struct {
		args []string
		want bool
	}{
		{[]string{"get", "secrets", "-n", "default"}, false},
		{[]string{"list", "secrets", "--all-namespaces"}, false},
		{[]string{"get", "secrets", "-n", opNamespace}, false},
		{[]string{"get", "secrets/flink-operator-webhook-cert", "-n", opNamespace}, true},
		{[]string{"create", "pods", "-n", "default"}, false},
		{[]string{"delete", "pods", "-n", "default"}, false},
		{[]string{"create", "pods/exec", "-n", "default"}, false},
		{[]string{"list", "nodes"}, false},
		{[]string{"create", "clusterrolebindings"}, false},
		{[]string{"update", "validatingwebhookconfigurations/other"}, false},
		{[]string{"update", "validatingwebhookconfigurations/flink-operator"}, true},
		{[]string{"update", "mutatingwebhookconfigurations/flink-operator"}, true},
		{[]string{"update", "mutatingwebhookconfigurations/other"}, false},
		{[]string{"get", "secrets/flink-operator-review-key", "-n", opNamespace}, true},
		{[]string{"update", "secrets/flink-operator-review-key", "-n", opNamespace}, false},
		{[]string{"update", "flinkdeployments/status", "-n", "default"}, true},
		{[]string{"create", "flinkstatesnapshots", "-n", "default"}, true},
		{[]string{"watch", "flinkbluegreendeployments", "-n", "default"}, true},
		{[]string{"patch", "flinkbluegreendeployments/status", "-n", "default"}, true},
		{[]string{"update", "flinkbluegreendeployments/finalizers", "-n", "default"}, true},
		{[]string{"create", "flinkbluegreendeployments", "-n", "default"}, false},
		{[]string{"delete", "flinkbluegreendeployments", "-n", "default"}, false},
		{[]string{"create", "flinkdeployments", "-n", "default"}, true},
		{[]string{"delete", "flinkdeployments", "-n", "default"}, true},
		{[]string{"patch", "ingresses.networking.k8s.io", "-n", "default"}, true},
		{[]string{"create", "deployments.apps", "-n", "default"}, true},
		{[]string{"create", "subjectaccessreviews.authorization.k8s.io"}, true},
	} {
		out, _ := s.Kubectl(append([]string{"auth", "can-i", "--as", opSA}, c.args...)...)
		got := strings.TrimSpace(out) == "yes"
		if got != c.want {
			t.Errorf("kubectl auth can-i %s as the operator: %q, want %v", strings.Join(c.args, " "), strings.TrimSpace(out), c.want)
		}
	}
	t.Logf("kubectl auth can-i: the operator's ServiceAccount cannot read Secrets (other than its webhook certificate), create or delete Pods, or exec")
}

// startOperator runs the operator binary with a token of the manifest's
// ServiceAccount, its webhook on 127.0.0.1, and cross-namespace references
// enabled; the webhook configuration is pointed at it.
func (s *suite) startOperator() {
	t := s.t
	port, err := localcluster.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	token := strings.TrimSpace(s.kubectl("create", "token", "flink-operator", "-n", opNamespace, "--duration=2h"))
	kubeconfig := filepath.Join(s.Base, "operator-sa.kubeconfig")
	if err := s.Local.WriteKubeconfig(kubeconfig, token); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(s.Base, "operator-config.yaml")
	if err := os.WriteFile(cfg, []byte("kubernetes.operator.snapshot.cross-namespace-references.enabled: \"true\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	url := fmt.Sprintf("https://127.0.0.1:%d/validate", port)
	metricsPort, err := localcluster.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	s.metrics = fmt.Sprintf("http://127.0.0.1:%d/metrics", metricsPort)
	s.kubectl("patch", "validatingwebhookconfiguration", "flink-operator", "--type=json",
		"-p", `[{"op":"replace","path":"/webhooks/0/clientConfig","value":{"url":"`+url+`"}}]`)
	// The mutating step that stamps reviewed cross-namespace references:
	// same server, same self-managed CA (patched in by the operator).
	s.kubectl("patch", "mutatingwebhookconfiguration", "flink-operator", "--type=json",
		"-p", `[{"op":"replace","path":"/webhooks/0/clientConfig","value":{"url":"`+strings.TrimSuffix(url, "/validate")+`/mutate"}}]`)
	s.Op = framework.StartOperator(t, s.OperatorBinary(), kubeconfig, s.OpLog,
		"--config", cfg, "--leader-elect", "--leader-election-namespace", opNamespace,
		"--webhook-bind-address", "127.0.0.1:"+strconv.Itoa(port), "--webhook-namespace", opNamespace,
		"--webhook-extra-hosts", "127.0.0.1", "--metrics-bind-address", fmt.Sprintf("127.0.0.1:%d", metricsPort))
	t.Cleanup(s.Op.Stop)

	for _, ns := range []string{teamA, teamB} {
		s.CreateNamespace(t, ns)
	}
	// The webhook is up once the API server gets an answer from it: the CA
	// is in the configuration and the server's certificate verifies.
	s.WaitFor(t, time.Minute, "the API server calling the webhook", func() (bool, string) {
		_, err := s.KubectlInput(strings.NewReader(snapshotYAML(teamB, "probe", "does-not-exist", "", "")), "create", "--dry-run=server", "-f", "-")
		if err == nil {
			return false, "a snapshot of a missing job was admitted"
		}
		return strings.Contains(err.Error(), "was not found"), err.Error()
	})
	t.Logf("operator running as %s; webhook at %s", opSA, url)
}

// webhookRejects: the API server calls the webhook, which rejects what the
// CRD schema cannot: a missing target, a savepoint without a directory.
func (s *suite) webhookRejects() {
	t := s.t
	_, err := s.KubectlInput(strings.NewReader(snapshotYAML(teamB, "no-target", "does-not-exist", "", "")), "create", "-f", "-")
	if err == nil || !strings.Contains(err.Error(), "admission webhook") || !strings.Contains(err.Error(), "Target for snapshot team-b/does-not-exist was not found") {
		t.Errorf("snapshot of a missing job: %v", err)
	} else {
		t.Logf("rejected: %s", lastLine(err.Error()))
	}
	// A suspended job without any savepoint directory: nothing runs.
	s.apply(deploymentYAML(teamB, "no-dir", s.image, s.flinkV, "", 1, "stateless", "suspended", ""))
	_, err = s.KubectlInput(strings.NewReader(snapshotYAML(teamB, "no-dir-sp", "no-dir", "", "")), "create", "-f", "-")
	if err == nil || !strings.Contains(err.Error(), "execution.checkpointing.savepoint-dir") {
		t.Errorf("savepoint without a directory: %v", err)
	} else {
		t.Logf("rejected: %s", lastLine(err.Error()))
	}
	s.kubectl("delete", "flinkdeployment", "no-dir", "-n", teamB)
}

// savepointLifecycle runs a job under the ServiceAccount's RBAC: RUNNING, a
// manual savepoint, a savepoint upgrade, disposal on delete.
func (s *suite) savepointLifecycle() {
	t := s.t
	t0 := time.Now()
	s.apply(deploymentYAML(teamB, job, s.image, s.flinkV, s.data, 2, "savepoint", "running", ""))
	dep := s.waitDeployment(teamB, job, 4*time.Minute, "RUNNING, STABLE", stable)
	rest := s.FlinkREST(t, teamB, job)
	rest.WaitJobRunning(t, dep.Status.JobStatus.JobID)
	t.Logf("job %s RUNNING %s after apply", dep.Status.JobStatus.JobID, time.Since(t0).Round(100*time.Millisecond))

	s.apply(snapshotYAML(teamB, "manual", job, "", "true"))
	manual := s.waitSnapshot(teamB, "manual")
	checkMetadata(t, manual.Status.Path, true)

	oldID := dep.Status.JobStatus.JobID
	before := rest.WaitAccumulators(t, oldID, "max-count >= 5", func(a framework.Accumulators) bool { return a.MaxCount >= 5 })
	s.apply(deploymentYAML(teamB, job, s.image, s.flinkV, s.data, 1, "savepoint", "running", ""))
	dep = s.waitDeployment(teamB, job, 4*time.Minute, "upgraded, RUNNING, STABLE", func(d *v1beta1.FlinkDeployment) bool {
		return stable(d) && d.Status.JobStatus.JobID != oldID
	})
	rest = s.FlinkREST(t, teamB, job)
	rest.WaitJobRunning(t, dep.Status.JobStatus.JobID)
	restored := rest.WaitRestored(t, dep.Status.JobStatus.JobID)
	if !restored.IsSavepoint || !framework.SameLocation(t, restored.ExternalPath, dep.Status.JobStatus.UpgradeSavepointPath) {
		t.Errorf("upgraded job restored from %+v, want its UPGRADE savepoint %s", restored, dep.Status.JobStatus.UpgradeSavepointPath)
	}
	after := rest.WaitAccumulators(t, dep.Status.JobStatus.JobID, "records >= 5", func(a framework.Accumulators) bool { return a.Records >= 5 })
	if after.MaxCount < before.MaxCount || after.Mismatches != 0 {
		t.Errorf("keyed state not restored: %+v (max-count before %d)", after, before.MaxCount)
	}

	s.kubectl("delete", "flinkstatesnapshot", "manual", "-n", teamB)
	s.WaitFor(t, time.Minute, "snapshot manual gone", func() (bool, string) {
		_, err := s.Flink.FlinkV1beta1().FlinkStateSnapshots(teamB).Get(s.Ctx, "manual", metav1.GetOptions{})
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})
	checkMetadata(t, manual.Status.Path, false)
	t.Logf("savepoint lifecycle under the ServiceAccount's RBAC: manual savepoint %s completed and disposed, upgrade restored from %s",
		manual.Status.Path, dep.Status.JobStatus.UpgradeSavepointPath)
}

// crossNamespace: only a user who may update team-b's FlinkDeployment may
// snapshot it from team-a; a job in team-a then starts from that snapshot
// by reference.
func (s *suite) crossNamespace() {
	t := s.t
	// Two users with rights in team-a; bob may also update orders in team-b.
	s.apply(fmt.Sprintf(`apiVersion: v1
kind: ServiceAccount
metadata: {name: alice, namespace: %[1]s}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: bob, namespace: %[1]s}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: flink-editor, namespace: %[1]s}
rules:
  - apiGroups: [flink.apache.org]
    resources: [flinkdeployments, flinksessionjobs, flinkstatesnapshots]
    verbs: [get, list, watch, create, update, patch, delete]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: team-a-editors, namespace: %[1]s}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: flink-editor}
subjects:
  - {kind: ServiceAccount, name: alice, namespace: %[1]s}
  - {kind: ServiceAccount, name: bob, namespace: %[1]s}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: snapshot-orders, namespace: %[2]s}
rules:
  - apiGroups: [flink.apache.org]
    resources: [flinkdeployments]
    resourceNames: [%[3]s]
    verbs: [update]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: bob-snapshots-orders, namespace: %[2]s}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: snapshot-orders}
subjects:
  - {kind: ServiceAccount, name: bob, namespace: %[1]s}
`, teamA, teamB, job))
	alice := s.userKubeconfig(teamA, "alice")
	bob := s.userKubeconfig(teamA, "bob")

	cross := snapshotYAML(teamA, "from-b", job, teamB, "false")
	_, err := s.KubectlInput(strings.NewReader(cross), "--kubeconfig", alice, "create", "-f", "-")
	if err == nil || !strings.Contains(err.Error(), "alice") || !strings.Contains(err.Error(), "update") {
		t.Fatalf("alice's snapshot of team-b's job: %v, want a denial naming her and the update right", err)
	}
	t.Logf("alice denied: %s", lastLine(err.Error()))
	if _, err := s.KubectlInput(strings.NewReader(cross), "--kubeconfig", bob, "create", "-f", "-"); err != nil {
		t.Fatalf("bob's snapshot of team-b's job: %v", err)
	}
	snap := s.waitSnapshot(teamA, "from-b")
	if st, err := reviewstamp.Parse(snap.Annotations[reviewstamp.Annotation]); err != nil || !strings.HasSuffix(st.User, ":bob") {
		t.Errorf("bob's snapshot carries stamp %q (%v), want one reviewed for bob", snap.Annotations[reviewstamp.Annotation], err)
	}
	checkMetadata(t, snap.Status.Path, true)
	if snap.Labels[v1beta1.LabelJobReferenceNamespace] != teamB {
		t.Errorf("snapshot labels %v, want job-reference.namespace=%s", snap.Labels, teamB)
	}
	t.Logf("bob's cross-namespace snapshot COMPLETED at %s", snap.Status.Path)

	// A new job in team-a starts from it by reference.
	s.apply(deploymentYAML(teamA, "orders-clone", s.image, s.flinkV, s.data, 1, "savepoint", "running", "from-b"))
	clone := s.waitDeployment(teamA, "orders-clone", 4*time.Minute, "RUNNING, STABLE", stable)
	if !framework.SameLocation(t, clone.Status.JobStatus.UpgradeSavepointPath, snap.Status.Path) {
		t.Errorf("clone's upgradeSavepointPath %q, want the snapshot's path %s", clone.Status.JobStatus.UpgradeSavepointPath, snap.Status.Path)
	}
	rest := s.FlinkREST(t, teamA, "orders-clone")
	rest.WaitJobRunning(t, clone.Status.JobStatus.JobID)
	restored := rest.WaitRestored(t, clone.Status.JobStatus.JobID)
	if !restored.IsSavepoint || !framework.SameLocation(t, restored.ExternalPath, snap.Status.Path) {
		t.Errorf("clone restored from %+v, want the snapshot %s", restored, snap.Status.Path)
	}
	acc := rest.WaitAccumulators(t, clone.Status.JobStatus.JobID, "records >= 5", func(a framework.Accumulators) bool { return a.Records >= 5 })
	if acc.MaxCount <= (acc.Records+keys-1)/keys {
		t.Errorf("clone's keyed state does not continue the snapshot's: %+v", acc)
	}
	t.Logf("orders-clone started from snapshot team-a/from-b (%s), Flink latest.restored %s", snap.Status.Path, restored.ExternalPath)
}

// checkOperatorLog: the RBAC was sufficient, so nothing the operator did
// under its ServiceAccount was refused.
func (s *suite) checkOperatorLog() {
	raw, err := os.ReadFile(s.OpLog)
	if err != nil {
		s.t.Fatal(err)
	}
	var refused []string
	for _, line := range strings.Split(string(raw), "\n") {
		if strings.Contains(strings.ToLower(line), "forbidden") {
			refused = append(refused, line)
		}
	}
	if len(refused) > 0 {
		s.t.Errorf("the operator was refused %d times under its ServiceAccount's RBAC:\n%s", len(refused), strings.Join(refused, "\n"))
	}
	s.t.Logf("operator log: %d lines, no request refused by RBAC", strings.Count(string(raw), "\n"))
}

func (s *suite) userKubeconfig(ns, sa string) string {
	token := strings.TrimSpace(s.kubectl("create", "token", sa, "-n", ns, "--duration=1h"))
	path := filepath.Join(s.Base, sa+".kubeconfig")
	if err := s.Local.WriteKubeconfig(path, token); err != nil {
		s.t.Fatal(err)
	}
	return path
}

func stable(d *v1beta1.FlinkDeployment) bool {
	return d.Status.JobStatus.JobID != "" && d.Status.JobStatus.State == v1beta1.JobStatusRunning && d.Status.LifecycleState == v1beta1.LifecycleStable
}

func (s *suite) waitDeployment(ns, name string, timeout time.Duration, what string, ok func(*v1beta1.FlinkDeployment) bool) *v1beta1.FlinkDeployment {
	s.t.Helper()
	var got *v1beta1.FlinkDeployment
	s.WaitFor(s.t, timeout, "FlinkDeployment "+ns+"/"+name+": "+what, func() (bool, string) {
		d, err := s.Flink.FlinkV1beta1().FlinkDeployments(ns).Get(s.Ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		got = d
		st := d.Status
		return ok(d), fmt.Sprintf("{lifecycle=%s job=%s/%s restore=%q error=%q}", st.LifecycleState, st.JobStatus.JobID, st.JobStatus.State,
			st.JobStatus.UpgradeSavepointPath, st.Error)
	})
	return got
}

func (s *suite) waitSnapshot(ns, name string) *v1beta1.FlinkStateSnapshot {
	s.t.Helper()
	var got *v1beta1.FlinkStateSnapshot
	s.WaitFor(s.t, 2*time.Minute, "FlinkStateSnapshot "+ns+"/"+name+" COMPLETED", func() (bool, string) {
		snap, err := s.Flink.FlinkV1beta1().FlinkStateSnapshots(ns).Get(s.Ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		got = snap
		if snap.Status.State == v1beta1.SnapshotFailed || snap.Status.State == v1beta1.SnapshotAbandoned {
			s.t.Fatalf("snapshot %s/%s ended %s: %s", ns, name, snap.Status.State, snap.Status.Error)
		}
		return snap.Status.State == v1beta1.SnapshotCompleted && snap.Status.Path != "", fmt.Sprintf("%+v", snap.Status)
	})
	return got
}

func checkMetadata(t *testing.T, path string, exists bool) {
	t.Helper()
	_, err := os.Stat(filepath.Join(framework.LocalPath(t, path), "_metadata"))
	if exists && err != nil {
		t.Errorf("savepoint %s: %v", path, err)
	}
	if !exists && !os.IsNotExist(err) {
		t.Errorf("savepoint %s still on disk (%v)", path, err)
	}
}

func snapshotYAML(ns, name, job, jobNamespace, dispose string) string {
	ref := ""
	if jobNamespace != "" {
		ref = "\n    namespace: " + jobNamespace
	}
	if dispose == "" {
		dispose = "true"
	}
	return fmt.Sprintf(`apiVersion: flink.apache.org/v1beta1
kind: FlinkStateSnapshot
metadata:
  name: %s
  namespace: %s
spec:
  backoffLimit: 0
  jobReference:
    kind: FlinkDeployment
    name: %s%s
  savepoint:
    disposeOnDelete: %s
`, name, ns, job, ref, dispose)
}

// deploymentYAML is the test job's FlinkDeployment; data "" leaves out the
// checkpoint and savepoint directories; from names a snapshot to start from.
func deploymentYAML(ns, name, image string, version v1beta1.FlinkVersion, data string, parallelism int, mode, state, from string) string {
	dirs := ""
	if data != "" {
		dirs = fmt.Sprintf("\n    execution.checkpointing.dir: file://%s/checkpoints\n    execution.checkpointing.savepoint-dir: file://%s/savepoints", data, data)
	}
	ref := ""
	if from != "" {
		ref = "\n    initialStateSnapshotRef:\n      name: " + from
	}
	return fmt.Sprintf(`apiVersion: flink.apache.org/v1beta1
kind: FlinkDeployment
metadata:
  name: %s
  namespace: %s
spec:
  mode: standalone
  image: %s
  flinkVersion: %s
  serviceAccount: default
  flinkConfiguration:
    jobmanager.memory.process.size: 768m
    taskmanager.memory.process.size: 1024m
    taskmanager.memory.managed.size: 64m
    taskmanager.numberOfTaskSlots: "2"
    state.backend.type: hashmap
    execution.checkpointing.interval: 2 s%s
    heartbeat.interval: "1000"
    heartbeat.timeout: "10000"
  job:
    jarURI: local:///opt/flink/usrlib/testjob.jar
    entryClass: %s
    args: ["--rate", "10", "--keys", "%d"]
    parallelism: %d
    upgradeMode: %s
    state: %s%s
`, name, ns, image, version, dirs, flinkjvm.TestJobClass, keys, parallelism, mode, state, ref)
}

func (s *suite) kubectl(args ...string) string {
	s.t.Helper()
	out, err := s.Kubectl(args...)
	if err != nil {
		s.t.Fatal(err)
	}
	return out
}

func (s *suite) apply(manifest string) {
	s.t.Helper()
	if _, err := s.KubectlInput(strings.NewReader(manifest), "apply", "-f", "-"); err != nil {
		s.t.Fatal(err)
	}
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}
