package nativee2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/flinkops/flink-operator/e2e/framework"
	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/cluster"
	"github.com/flinkops/flink-operator/pkg/reasons"
)

// recordedUpstream holds what upstream's operator 1.15.0 left on a cluster,
// recorded from real runs (its SOURCES.md says how), with the savepoints
// the objects name under flink-data.
const recordedUpstream = "pkg/controller/deployment/testdata/upstream-1.15.0"

// takeOverUpstreamSuspended (Flink 1.20, the line upstream's recording
// ran): the FlinkDeployment upstream's operator suspended with a savepoint,
// and the upgrade FlinkStateSnapshot it recorded, are created exactly as
// upstream left them (status included; the savepoint copied to the path the
// objects name, under this test's data directory) while this operator is
// stopped, as a user switching operators does. This operator then takes
// it over: it stays SUSPENDED with no error and no upgrade; resumed, the
// job restores from upstream's savepoint with its keyed state (the
// counter continues); a spec change afterwards upgrades it with a
// savepoint as usual.
func (r *run) takeOverUpstreamSuspended() {
	t := r.t
	const name = "suspended"
	dir := filepath.Join(r.Root, recordedUpstream)
	upstreamData := filepath.Join(r.data, "upstream")
	if err := os.MkdirAll(upstreamData, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("cp", "-r", filepath.Join(dir, "flink-data", "suspended"), upstreamData).CombinedOutput(); err != nil {
		t.Fatalf("copying upstream's savepoint: %v: %s", err, out)
	}
	read := func(file string, into any) {
		t.Helper()
		raw, err := os.ReadFile(filepath.Join(dir, "native-suspended-savepoint", file))
		if err != nil {
			t.Fatal(err)
		}
		text := strings.ReplaceAll(string(raw), "/tmp/flink-data-upstream", upstreamData)
		if err := yaml.Unmarshal([]byte(text), into); err != nil {
			t.Fatal(err)
		}
	}
	dep := &v1beta1.FlinkDeployment{}
	read("flinkdeployment-suspended.yaml", dep)
	snaps, err := filepath.Glob(filepath.Join(dir, "native-suspended-savepoint", "flinkstatesnapshot-*.yaml"))
	if err != nil || len(snaps) != 1 {
		t.Fatalf("upstream's upgrade snapshot: %v %v", snaps, err)
	}
	snap := &v1beta1.FlinkStateSnapshot{}
	read(filepath.Base(snaps[0]), snap)
	savepoint := dep.Status.JobStatus.UpgradeSavepointPath
	if savepoint == "" || snap.Status.Path != savepoint {
		t.Fatalf("recorded savepoint %q, snapshot path %q", savepoint, snap.Status.Path)
	}
	for _, o := range []metav1.Object{dep, snap} {
		o.SetNamespace(r.ns)
		o.SetUID("")
		o.SetResourceVersion("")
		o.SetCreationTimestamp(metav1.Time{})
	}
	t0 := time.Now()
	r.WhileOperatorStopped(t, func() {
		created, err := r.Flink.FlinkV1beta1().FlinkDeployments(r.ns).Create(r.Ctx, dep, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		created.Status = dep.Status
		if _, err := r.Flink.FlinkV1beta1().FlinkDeployments(r.ns).UpdateStatus(r.Ctx, created, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		cs, err := r.Flink.FlinkV1beta1().FlinkStateSnapshots(r.ns).Create(r.Ctx, snap, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		cs.Status = snap.Status
		if _, err := r.Flink.FlinkV1beta1().FlinkStateSnapshots(r.ns).UpdateStatus(r.Ctx, cs, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	})
	// Taken over: still suspended, nothing deployed, no error, no upgrade.
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		d, err := r.Flink.FlinkV1beta1().FlinkDeployments(r.ns).Get(r.Ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if d.Status.LifecycleState != v1beta1.LifecycleSuspended || d.Status.Error != "" ||
			d.Status.ReconciliationStatus.LastReconciledSpec != dep.Status.ReconciliationStatus.LastReconciledSpec {
			t.Fatalf("taken over: %s, error %q; want upstream's SUSPENDED record kept", summary(d), d.Status.Error)
		}
		if _, err := r.Kube.AppsV1().Deployments(r.ns).Get(r.Ctx, cluster.JobManagerDeploymentName(name), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Fatalf("a JobManager Deployment while suspended (%v)", err)
		}
		time.Sleep(2 * time.Second)
	}
	r.noEvent(name, reasons.ReasonSpecChanged)
	t.Logf("%s: %s: upstream's suspended FlinkDeployment taken over, still SUSPENDED %s after the operator's start", r.version, name, time.Since(t0).Round(100*time.Millisecond))

	// Resumed from upstream's savepoint, with its keyed state.
	t0 = time.Now()
	r.kubectl("patch", "flinkdeployment", name, "-n", r.ns, "--type=merge", "-p", `{"spec":{"job":{"state":"running"}}}`)
	resumed := r.waitDeployment(name, 4*time.Minute, "resumed: RUNNING, STABLE", func(d *v1beta1.FlinkDeployment) bool {
		return d.Status.JobStatus.State == v1beta1.JobStatusRunning && d.Status.LifecycleState == v1beta1.LifecycleStable
	})
	rest := r.FlinkREST(t, r.ns, name)
	jobID := resumed.Status.JobStatus.JobID
	restored := rest.WaitRestored(t, jobID)
	if !restored.IsSavepoint || strings.TrimPrefix(restored.ExternalPath, "file:") != strings.TrimPrefix(savepoint, "file:") {
		t.Fatalf("resumed job %s restored from %+v, want upstream's savepoint %s", jobID, restored, savepoint)
	}
	// The counter continues from upstream's state: a fresh start could not
	// count above ceil(records/keys) (upstream's job ran with --keys 10).
	r.checkCounterContinued(rest, jobID, 0)
	t.Logf("%s: %s: resumed from upstream's savepoint as job %s %s after the patch", r.version, name, jobID, time.Since(t0).Round(100*time.Millisecond))

	// A spec change afterwards: an upgrade with a savepoint, as usual.
	t0 = time.Now()
	r.kubectl("patch", "flinkdeployment", name, "-n", r.ns, "--type=merge", "-p", `{"spec":{"job":{"args":["--rate","10","--keys","10","--upgraded"]}}}`)
	upgraded := r.waitDeployment(name, 4*time.Minute, "upgraded: RUNNING, STABLE, a new job", func(d *v1beta1.FlinkDeployment) bool {
		return d.Status.JobStatus.JobID != jobID && d.Status.JobStatus.State == v1beta1.JobStatusRunning && d.Status.LifecycleState == v1beta1.LifecycleStable
	})
	rest = r.FlinkREST(t, r.ns, name)
	if restored := rest.WaitRestored(t, upgraded.Status.JobStatus.JobID); !restored.IsSavepoint {
		t.Errorf("upgrade after the takeover restored from %+v, want a savepoint", restored)
	}
	t.Logf("%s: %s: upgraded with a savepoint as job %s %s after the patch", r.version, name, upgraded.Status.JobStatus.JobID, time.Since(t0).Round(100*time.Millisecond))

	r.kubectl("delete", "flinkdeployment", name, "-n", r.ns, "--wait=false")
	r.waitGone(name, 2*time.Minute)
}

// noEvent fails on an event of reason about object name.
func (r *run) noEvent(name, reason string) {
	r.t.Helper()
	l, err := r.Kube.CoreV1().Events(r.ns).List(r.Ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + name})
	if err != nil {
		r.t.Fatal(err)
	}
	for _, ev := range l.Items {
		if ev.Reason == reason {
			r.t.Fatalf("event %s %s: %s", ev.Type, ev.Reason, ev.Message)
		}
	}
}

// takeOverUpstreamRunning (Flink 1.20): the running native application
// upstream's operator deployed, as it left it (recorded: the
// FlinkDeployment with its status, the JobManager Deployment Flink's client
// made, its Services and ConfigMaps, the savepoint and checkpoint
// FlinkStateSnapshots upstream took), created while this operator is
// stopped: the JobManager Deployment's pod starts the job under upstream's
// job id. Flink's HA ConfigMaps are left out (they point at checkpoints of
// the recording machine, which a restarted JobManager would fail to
// recover); UIDs in owner references are the new objects'. Taken over, the
// job keeps its id and its JobManager pod and stays STABLE, with no
// upgrade or error; a new savepoint of it completes. (The recording's
// namespace, in the objects and in Flink's kubernetes.namespace, and its
// data directory are this test's.)
func (r *run) takeOverUpstreamRunning() {
	t := r.t
	const name = "run"
	dir := filepath.Join(r.Root, recordedUpstream, "native-running-with-snapshots")
	upstreamData := filepath.Join(r.data, "upstream")
	if err := os.MkdirAll(upstreamData, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("cp", "-r", filepath.Join(r.Root, recordedUpstream, "flink-data", "run"), upstreamData).CombinedOutput(); err != nil {
		t.Fatalf("copying upstream's savepoints: %v: %s", err, out)
	}
	uids := map[string]string{} // recorded UID -> the new object's
	read := func(file string, into metav1.Object) {
		t.Helper()
		raw, err := os.ReadFile(filepath.Join(dir, file))
		if err != nil {
			t.Fatal(err)
		}
		text := strings.ReplaceAll(string(raw), "/tmp/flink-data-upstream", upstreamData)
		// The namespace Flink's configuration names (the recording's).
		text = strings.ReplaceAll(text, "kubernetes.namespace: default", "kubernetes.namespace: "+r.ns)
		for old, cur := range uids {
			if old != "" && cur != "" {
				text = strings.ReplaceAll(text, old, cur)
			}
		}
		if err := yaml.Unmarshal([]byte(text), into); err != nil {
			t.Fatal(err)
		}
		if _, ok := uids[string(into.GetUID())]; !ok {
			uids[string(into.GetUID())] = ""
		}
		into.SetNamespace(r.ns)
		into.SetUID("")
		into.SetResourceVersion("")
		into.SetCreationTimestamp(metav1.Time{})
	}
	created := func(recorded string, o metav1.Object) { uids[recorded] = string(o.GetUID()) }
	var jobID string
	t0 := time.Now()
	r.WhileOperatorStopped(t, func() {
		dep := &v1beta1.FlinkDeployment{}
		read("flinkdeployment-run.yaml", dep)
		recordedUID := lastRecorded(uids)
		c, err := r.Flink.FlinkV1beta1().FlinkDeployments(r.ns).Create(r.Ctx, dep, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		c.Status = dep.Status
		if _, err := r.Flink.FlinkV1beta1().FlinkDeployments(r.ns).UpdateStatus(r.Ctx, c, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		created(recordedUID, c)
		jobID = dep.Status.JobStatus.JobID

		jm := &appsv1.Deployment{}
		read("deployment-run.yaml", jm)
		recordedUID = lastRecorded(uids)
		cj, err := r.Kube.AppsV1().Deployments(r.ns).Create(r.Ctx, jm, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		created(recordedUID, cj)
		for _, file := range []string{"configmap-flink-config-run.yaml", "configmap-autoscaler-run.yaml"} {
			cm := &corev1.ConfigMap{}
			read(file, cm)
			if _, err := r.Kube.CoreV1().ConfigMaps(r.ns).Create(r.Ctx, cm, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		svc := &corev1.Service{}
		read("service-run-rest.yaml", svc)
		svc.Spec.ClusterIP, svc.Spec.ClusterIPs = "", nil // allocated anew
		if _, err := r.Kube.CoreV1().Services(r.ns).Create(r.Ctx, svc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		for _, file := range []string{"flinkstatesnapshot-run-savepoint.yaml", "flinkstatesnapshot-run-checkpoint.yaml"} {
			s := &v1beta1.FlinkStateSnapshot{}
			read(file, s)
			cs, err := r.Flink.FlinkV1beta1().FlinkStateSnapshots(r.ns).Create(r.Ctx, s, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			cs.Status = s.Status
			if _, err := r.Flink.FlinkV1beta1().FlinkStateSnapshots(r.ns).UpdateStatus(r.Ctx, cs, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		// Running, as upstream left it, before this operator starts (no
		// framework wait: it stops at an operator that is not running).
		r.waitJobRunningWithoutOperator(name, jobID, 3*time.Minute)
	})
	pods := r.ComponentPods(t, r.ns, name, cluster.ComponentJobManager)
	t.Logf("%s: %s: upstream's running application recreated, job %s RUNNING on %v before this operator started, %s after the apply", r.version, name, jobID, pods, time.Since(t0).Round(100*time.Millisecond))

	// Taken over: the same job on the same JobManager pod, STABLE, no
	// upgrade, no error.
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(3 * time.Second) {
		d, err := r.Flink.FlinkV1beta1().FlinkDeployments(r.ns).Get(r.Ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if d.Status.LifecycleState != v1beta1.LifecycleStable || d.Status.Error != "" || d.Status.JobStatus.JobID != jobID ||
			d.Status.JobStatus.State != v1beta1.JobStatusRunning {
			t.Fatalf("taken over: %s, error %q; want job %s RUNNING, STABLE", summary(d), d.Status.Error, jobID)
		}
		if now := r.ComponentPods(t, r.ns, name, cluster.ComponentJobManager); !slices.Equal(now, pods) {
			t.Fatalf("JobManager pods %v, were %v: the JobManager was replaced", now, pods)
		}
	}
	r.noEvent(name, reasons.ReasonSpecChanged)
	r.noEvent(name, reasons.ReasonDeploymentError)

	// A new savepoint of the job taken over.
	r.apply(`apiVersion: flink.apache.org/v1beta1
kind: FlinkStateSnapshot
metadata:
  name: run-after-takeover
  namespace: ` + r.ns + `
spec:
  backoffLimit: 1
  jobReference:
    kind: FlinkDeployment
    name: run
  savepoint:
    disposeOnDelete: false
`)
	r.WaitFor(t, 2*time.Minute, "the savepoint after the takeover COMPLETED", func() (bool, string) {
		s, err := r.Flink.FlinkV1beta1().FlinkStateSnapshots(r.ns).Get(r.Ctx, "run-after-takeover", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return s.Status.State == v1beta1.SnapshotCompleted && s.Status.Path != "", fmt.Sprintf("%+v", s.Status)
	})
	t.Logf("%s: %s: taken over without a restart (same job, same JobManager pod, STABLE), a new savepoint COMPLETED %s after the apply", r.version, name, time.Since(t0).Round(100*time.Millisecond))

	r.kubectl("delete", "flinkdeployment", name, "-n", r.ns, "--wait=false")
	r.waitGone(name, 2*time.Minute)
}

// lastRecorded is the recorded UID read last (the one read maps to "").
func lastRecorded(uids map[string]string) string {
	for old, cur := range uids {
		if cur == "" {
			return old
		}
	}
	return ""
}

// waitJobRunningWithoutOperator waits for the job to run on all its tasks
// on the cluster's Ready JobManager pod, asking its REST API directly.
func (r *run) waitJobRunningWithoutOperator(name, jobID string, timeout time.Duration) {
	r.t.Helper()
	sel := metav1.ListOptions{LabelSelector: cluster.LabelApp + "=" + name + "," + cluster.LabelComponent + "=" + cluster.ComponentJobManager}
	client := &http.Client{Timeout: 3 * time.Second}
	last := ""
	for deadline := time.Now().Add(timeout); time.Now().Before(deadline); time.Sleep(time.Second) {
		l, err := r.Kube.CoreV1().Pods(r.ns).List(r.Ctx, sel)
		if err != nil {
			last = err.Error()
			continue
		}
		for i := range l.Items {
			p := &l.Items[i]
			if !framework.PodReady(p) || p.Status.PodIP == "" {
				continue
			}
			resp, err := client.Get("http://" + p.Status.PodIP + ":8081/jobs/" + jobID)
			if err != nil {
				last = err.Error()
				continue
			}
			var job struct {
				State    string `json:"state"`
				Vertices []struct {
					Status string `json:"status"`
				} `json:"vertices"`
			}
			err = json.NewDecoder(resp.Body).Decode(&job)
			resp.Body.Close()
			running := err == nil && job.State == "RUNNING" && len(job.Vertices) > 0
			for _, v := range job.Vertices {
				running = running && v.Status == "RUNNING"
			}
			if running {
				return
			}
			last = fmt.Sprintf("job %s %+v %v", jobID, job, err)
		}
	}
	r.t.Fatalf("job %s of %s not RUNNING within %s: %s", jobID, name, timeout, last)
}
