package nativee2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

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
