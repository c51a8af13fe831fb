package periodice2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	flinkjvm "github.com/flinkops/flink-operator/e2e/flink"
	"github.com/flinkops/flink-operator/e2e/framework"
	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
)

// flavours are the image and FlinkDeployment spelling of each pinned version.
var flavours = map[string]struct {
	image   string
	version v1beta1.FlinkVersion
}{
	"1.20.5": {"flink:1.20", v1beta1.FlinkVersion1_20},
	"2.3.0":  {"flink:2.3", v1beta1.FlinkVersion2_3},
}

// version is the one pinned Flink version this test runs.
const version = "2.3.0"

const (
	// name is the test job's FlinkDeployment.
	name = "periodic"
	// testJar is the test job in the image (the node agent's private
	// /opt/flink/usrlib holds it).
	testJar = "local:///opt/flink/usrlib/testjob.jar"
	// keys is the test job's --keys.
	keys = 10
	// snapshotCRD is the FlinkStateSnapshot CustomResourceDefinition.
	snapshotCRD = "flinkstatesnapshots.flink.apache.org"
	// crdMissingLog is the start of the operator's error line without the CRD
	// (pkg/operator/snapshotcrd.go).
	crdMissingLog = "FlinkStateSnapshot CRD is not installed"
)

type suite struct {
	*framework.Env
	mu      sync.Mutex
	timings []timing
}

type timing struct {
	version, what string
	d             time.Duration
}

// TestPeriodicSavepoints is issue 8's acceptance test: one local cluster
// and one operator process; a FlinkDeployment of the test job with a 20 s
// periodic savepoint interval, a history of 2 and dispose-on-delete gets
// PERIODIC FlinkStateSnapshots, one at a time, trimmed to 2 with the data of
// the deleted ones gone; a savepointTriggerNonce gives one MANUAL snapshot
// without a restart; then, with the FlinkStateSnapshot CRD deleted and the
// operator restarted, the job runs in legacy mode and a savepoint upgrade
// goes through status.jobStatus.savepointInfo.
func TestPeriodicSavepoints(t *testing.T) {
	if framework.Kind() {
		t.Skip("the test stops and restarts the operator process, which is the local provider's")
	}
	begin := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 19*time.Minute)
	defer cancel()
	if _, ok := flavours[version]; !ok {
		t.Fatalf("Flink %s has no image in this test", version)
	}
	pinned := false
	for _, v := range flinkjvm.Versions() {
		pinned = pinned || v == version
	}
	if !pinned {
		t.Fatalf("Flink %s is not pinned (pinned: %v)", version, flinkjvm.Versions())
	}
	s := &suite{Env: framework.Setup(t, ctx, framework.Options{Name: "periodice2e"})}
	t.Logf("local cluster, CRDs and operator up %s after the start", time.Since(begin).Round(time.Millisecond))

	// A subtest, so that the run's cleanup (a dump on failure) runs while
	// the cluster and the operator are still up.
	crds := filepath.Join(s.Root, "manifests", "crds")
	t.Run(version, func(t *testing.T) { s.newRun(t, version, "periodic-0").scenario(crds) })

	var table strings.Builder
	for _, tm := range s.timings {
		fmt.Fprintf(&table, "\n  %-7s %-60s %s", tm.version, tm.what, tm.d.Round(100*time.Millisecond))
	}
	t.Logf("measured durations:%s", table.String())
	t.Logf("TestPeriodicSavepoints: %s in all", time.Since(begin).Round(time.Second))
}

// run is one version's scenario in one namespace.
type run struct {
	*suite
	t       *testing.T
	version string
	ns      string
}

func (s *suite) newRun(t *testing.T, version, ns string) *run {
	r := &run{suite: s, t: t, version: version, ns: ns}
	s.CreateNamespace(t, ns)
	t.Cleanup(r.cleanup)
	return r
}

func (r *run) scenario(crds string) {
	t := r.t
	fl := flavours[r.version]
	data := filepath.Join(r.Base, r.ns)
	if err := os.MkdirAll(data, 0o755); err != nil {
		t.Fatal(err)
	}
	savepointDir := filepath.Join(data, "savepoints")
	start := time.Now()

	// 1. kubectl apply: the job runs.
	t0 := time.Now()
	r.apply(deploymentYAML(r.ns, fl.image, fl.version, data, 2, v1beta1.JobStateRunning))
	dep := r.waitDeployment(4*time.Minute, "job RUNNING, lifecycle STABLE", func(d *v1beta1.FlinkDeployment) bool {
		return d.Status.JobStatus.JobID != "" && d.Status.JobStatus.State == v1beta1.JobStatusRunning &&
			d.Status.LifecycleState == v1beta1.LifecycleStable
	})
	jobID := dep.Status.JobStatus.JobID
	rest := r.waitJobRunning(jobID)
	r.record("apply → RUNNING/STABLE", time.Since(t0))
	t.Logf("%s: job %s RUNNING at %s", r.version, jobID, rest.URL())

	// 2. Periodic savepoints: one in flight at a time, history trimmed to 2,
	// the deleted ones' data disposed.
	// The later steps do not depend on a clean periodic run: they run
	// anyway (a failed step stops its own subtest only).
	t.Run("periodic", func(t *testing.T) { r.periodic(t, savepointDir, jobID) })

	// 3. savepointTriggerNonce: one MANUAL snapshot, no restart.
	t.Run("manual", func(t *testing.T) { r.manual(t, savepointDir, jobID) })

	// 4. Legacy mode: the CRD deleted, the operator restarted.
	t.Run("legacy", func(t *testing.T) { r.legacy(t, crds, jobID) })
	r.record("whole scenario", time.Since(start))
}

// periodicSnapshots are the job's PERIODIC savepoint snapshots, oldest first
// (their names end in the slot time in milliseconds).
func (r *run) snapshots(trigger v1beta1.SnapshotTriggerType) ([]v1beta1.FlinkStateSnapshot, error) {
	l, err := r.Flink.FlinkV1beta1().FlinkStateSnapshots(r.ns).List(r.Ctx, metav1.ListOptions{
		LabelSelector: v1beta1.LabelSnapshotTriggerType + "=" + string(trigger) + "," + v1beta1.LabelJobReferenceName + "=" + name,
	})
	if err != nil {
		return nil, err
	}
	var out []v1beta1.FlinkStateSnapshot
	for _, s := range l.Items {
		if s.Spec.Savepoint != nil {
			out = append(out, s)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

func (r *run) periodic(t *testing.T, savepointDir, jobID string) {
	defer func(parent *testing.T) { r.t = parent }(r.t)
	r.t = t
	const (
		watch   = 110 * time.Second // the window
		maxWait = 4 * time.Minute   // hard limit while waiting for 4 created
	)
	prefix := name + "-savepoint-periodic-"
	type seenSnap struct {
		state   v1beta1.SnapshotState
		path    string
		first   time.Time
		done    time.Time
		deleted time.Time
	}
	seen := map[string]*seenSnap{}
	var order []string
	maxPresent, maxInFlight, polls := 0, 0, 0
	var firstCompleted time.Duration
	t0 := time.Now()
	for {
		snaps, err := r.snapshots(v1beta1.SnapshotTriggerPeriodic)
		if err != nil {
			t.Fatal(err)
		}
		if err := r.OperatorExited(); err != nil {
			t.Fatal(err)
		}
		polls++
		now := time.Now()
		present := map[string]bool{}
		inFlight := []string{}
		for _, s := range snaps {
			present[s.Name] = true
			x := seen[s.Name]
			if x == nil {
				x = &seenSnap{first: now}
				seen[s.Name] = x
				order = append(order, s.Name)
				t.Logf("+%5.1fs %s created (%s)", now.Sub(t0).Seconds(), s.Name, s.Status.State)
				if !strings.HasPrefix(s.Name, prefix) {
					t.Errorf("PERIODIC snapshot named %s, want %s<millis>", s.Name, prefix)
				} else if _, err := strconv.ParseInt(strings.TrimPrefix(s.Name, prefix), 10, 64); err != nil {
					t.Errorf("PERIODIC snapshot %s: suffix is not milliseconds: %v", s.Name, err)
				}
			}
			if x.state != s.Status.State {
				if s.Status.State == v1beta1.SnapshotCompleted {
					x.done = now
					if firstCompleted == 0 {
						firstCompleted = now.Sub(t0)
					}
					t.Logf("+%5.1fs %s COMPLETED: %s", now.Sub(t0).Seconds(), s.Name, s.Status.Path)
				} else if s.Status.State.IsTerminal() {
					t.Errorf("PERIODIC snapshot %s ended %s: %s", s.Name, s.Status.State, s.Status.Error)
				}
				x.state = s.Status.State
			}
			if s.Status.Path != "" {
				x.path = s.Status.Path
			}
			if !s.Status.State.IsTerminal() && s.DeletionTimestamp == nil {
				inFlight = append(inFlight, s.Name)
			}
		}
		for n, x := range seen {
			if !present[n] && x.deleted.IsZero() {
				x.deleted = now
				t.Logf("+%5.1fs %s deleted (was %s, %s)", now.Sub(t0).Seconds(), n, x.state, x.path)
			}
		}
		maxPresent = max(maxPresent, len(snaps))
		maxInFlight = max(maxInFlight, len(inFlight))
		if len(inFlight) > 1 {
			t.Errorf("+%.1fs: %d PERIODIC savepoints in flight at once: %v", now.Sub(t0).Seconds(), len(inFlight), inFlight)
		}
		if len(snaps) > 3 {
			t.Errorf("+%.1fs: %d PERIODIC snapshots at once (want ≤ 3: 2 kept + 1 in flight): %v",
				now.Sub(t0).Seconds(), len(snaps), snapshotNames(snaps))
		}
		completed := 0
		for _, s := range snaps {
			if s.Status.State == v1beta1.SnapshotCompleted && s.DeletionTimestamp == nil {
				completed++
			}
		}
		// Settled: the window is over, at least 4 were created, exactly 2
		// completed ones kept and nothing else but one in flight.
		settled := len(order) >= 4 && completed == 2 && len(snaps)-completed == len(inFlight) && len(inFlight) <= 1
		if now.Sub(t0) >= watch && settled {
			break
		}
		if now.Sub(t0) > maxWait {
			t.Fatalf("after %s: %d PERIODIC snapshots created (want ≥ 4), now %d present, %d COMPLETED: %v",
				maxWait, len(order), len(snaps), completed, snapshotNames(snaps))
		}
		time.Sleep(500 * time.Millisecond)
	}
	r.record("RUNNING → first PERIODIC savepoint COMPLETED", firstCompleted)
	r.record("periodic watch (until ≥ 4 created and settled at 2)", time.Since(t0))
	r.logKubectl("get", "flinkstatesnapshot", "-n", r.ns, "-o", "wide")

	// The job never restarted.
	d, err := r.Flink.FlinkV1beta1().FlinkDeployments(r.ns).Get(r.Ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if d.Status.JobStatus.JobID != jobID || d.Status.JobStatus.State != v1beta1.JobStatusRunning {
		t.Errorf("after the periodic savepoints: %s, want job %s RUNNING", summary(d), jobID)
	}

	// Kept ones: COMPLETED with _metadata under the savepoint directory;
	// deleted ones: their directories gone (the finalizer disposes them).
	snaps, err := r.snapshots(v1beta1.SnapshotTriggerPeriodic)
	if err != nil {
		t.Fatal(err)
	}
	kept := map[string]bool{}
	for _, s := range snaps {
		// A snapshot the cleanup is deleting (the one in flight when the
		// watch settled may have completed since, pushing out the oldest)
		// has its savepoint disposed before the finalizer lets it go: it is
		// not kept.
		if s.Status.State != v1beta1.SnapshotCompleted || s.DeletionTimestamp != nil {
			continue
		}
		kept[s.Name] = true
		dir := framework.LocalPath(t, s.Status.Path)
		if !strings.HasPrefix(dir, savepointDir+"/") {
			t.Errorf("kept snapshot %s: %s is not under %s", s.Name, dir, savepointDir)
		}
		if _, err := os.Stat(filepath.Join(dir, "_metadata")); err != nil {
			t.Errorf("kept snapshot %s: %v", s.Name, err)
		}
	}
	var deleted []string
	for _, n := range order {
		x := seen[n]
		if kept[n] || x.deleted.IsZero() {
			continue
		}
		if x.state != v1beta1.SnapshotCompleted || x.path == "" {
			t.Logf("deleted PERIODIC snapshot %s was %s (path %q): no data to check", n, x.state, x.path)
			continue
		}
		deleted = append(deleted, n)
		dir := framework.LocalPath(t, x.path)
		r.WaitFor(t, 30*time.Second, "savepoint of deleted "+n+" disposed ("+dir+")", func() (bool, string) {
			_, err := os.Stat(dir)
			return os.IsNotExist(err), fmt.Sprint(err)
		})
	}
	if len(deleted) < 2 {
		t.Errorf("only %d PERIODIC snapshots deleted by the history cleanup (%v), want ≥ 2 of %d created", len(deleted), deleted, len(order))
	}
	if entries, err := os.ReadDir(savepointDir); err == nil {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Logf("%s now holds %v", savepointDir, names)
	}
	t.Logf("%s: PERIODIC snapshots: %d created in %s (%d polls), at most %d present and %d in flight at once; kept %v; deleted and disposed %v",
		r.version, len(order), time.Since(t0).Round(time.Second), polls, maxPresent, maxInFlight, keys2(kept), deleted)
}

func keys2(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func (r *run) manual(t *testing.T, savepointDir, jobID string) {
	defer func(parent *testing.T) { r.t = parent }(r.t)
	r.t = t
	t0 := time.Now()
	r.kubectl("patch", "flinkdeployment", name, "-n", r.ns, "--type=merge", "-p", `{"spec":{"job":{"savepointTriggerNonce":1}}}`)
	snapName := name + "-savepoint-manual-1"
	var snap *v1beta1.FlinkStateSnapshot
	r.WaitFor(t, 2*time.Minute, "FlinkStateSnapshot "+snapName+" COMPLETED", func() (bool, string) {
		s, err := r.Flink.FlinkV1beta1().FlinkStateSnapshots(r.ns).Get(r.Ctx, snapName, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		snap = s
		if s.Status.State.IsTerminal() && s.Status.State != v1beta1.SnapshotCompleted {
			t.Fatalf("snapshot %s ended %s: %s", snapName, s.Status.State, s.Status.Error)
		}
		return s.Status.State == v1beta1.SnapshotCompleted, fmt.Sprintf("%+v", s.Status)
	})
	r.record("savepointTriggerNonce → MANUAL snapshot COMPLETED", time.Since(t0))
	if snap.Status.Path == "" {
		t.Fatalf("MANUAL snapshot %s COMPLETED without a path: %+v", snapName, snap.Status)
	}
	dir := framework.LocalPath(t, snap.Status.Path)
	if !strings.HasPrefix(dir, savepointDir+"/") {
		t.Errorf("MANUAL snapshot %s: %s is not under %s", snapName, dir, savepointDir)
	}
	if _, err := os.Stat(filepath.Join(dir, "_metadata")); err != nil {
		t.Errorf("MANUAL snapshot %s: %v", snapName, err)
	}
	// Exactly one, even a while later.
	time.Sleep(5 * time.Second)
	manual, err := r.snapshots(v1beta1.SnapshotTriggerManual)
	if err != nil {
		t.Fatal(err)
	}
	if len(manual) != 1 || manual[0].Name != snapName {
		t.Errorf("MANUAL savepoint snapshots %v, want exactly [%s]", snapshotNames(manual), snapName)
	}
	d, err := r.Flink.FlinkV1beta1().FlinkDeployments(r.ns).Get(r.Ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if d.Status.JobStatus.JobID != jobID || d.Status.JobStatus.State != v1beta1.JobStatusRunning {
		t.Errorf("after the manual savepoint: %s, want the same job %s RUNNING (no restart)", summary(d), jobID)
	}
	r.waitJobRunning(jobID) // Flink agrees
	t.Logf("%s: MANUAL snapshot %s COMPLETED at %s; job %s still RUNNING", r.version, snapName, snap.Status.Path, jobID)
}

func (r *run) legacy(t *testing.T, crds, jobID string) {
	defer func(parent *testing.T) { r.t = parent }(r.t)
	r.t = t
	// Stop the operator; take the finalizers off the snapshots (nobody
	// would remove them now) and delete the CRD.
	t0 := time.Now()
	stopped := r.Op
	r.Op = nil // stopped on purpose: WaitFor does not fail on its exit
	defer func() {
		if r.Op == nil {
			r.Op = stopped // for framework.Setup's cleanup, which stops r.Op
		}
	}()
	stopped.Stop()
	t.Logf("operator stopped: %v", stopped.Exited())
	all, err := r.Flink.FlinkV1beta1().FlinkStateSnapshots(r.ns).List(r.Ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range all.Items {
		if len(s.Finalizers) > 0 {
			r.kubectl("patch", "flinkstatesnapshot", s.Name, "-n", r.ns, "--type=merge", "-p", `{"metadata":{"finalizers":null}}`)
		}
	}
	r.kubectl("delete", "crd", snapshotCRD, "--wait=false")
	r.WaitFor(t, 2*time.Minute, "CRD "+snapshotCRD+" gone", func() (bool, string) {
		out, err := r.Kubectl("get", "crd", snapshotCRD, "-o", "name")
		if err != nil && strings.Contains(err.Error(), "NotFound") {
			return true, ""
		}
		return false, fmt.Sprintf("%s %v", strings.TrimSpace(out), err)
	})
	r.record("operator stopped, CRD deleted", time.Since(t0))

	// Restart the operator: it starts, logs the CRD-missing line, runs the job.
	logStart := fileSize(r.OpLog)
	t0 = time.Now()
	r.Op = framework.StartOperator(t, r.OperatorBinary(), r.Local.OperatorKubeconfig, r.OpLog)
	var line string
	r.WaitFor(t, time.Minute, "the operator's CRD-missing log line", func() (bool, string) {
		line = findLine(r.OpLog, logStart, crdMissingLog)
		return line != "", "not logged yet"
	})
	r.record("operator restart → CRD-missing log line", time.Since(t0))
	t.Logf("operator without the CRD logged: %s", line)
	r.WaitFor(t, time.Minute, "a SnapshotResourcesDisabled Warning event on "+name, func() (bool, string) {
		l, err := r.Kube.CoreV1().Events(r.ns).List(r.Ctx, metav1.ListOptions{
			FieldSelector: "reason=SnapshotResourcesDisabled,involvedObject.name=" + name})
		if err != nil {
			return false, err.Error()
		}
		for _, e := range l.Items {
			if e.Type == "Warning" && e.InvolvedObject.Kind == "FlinkDeployment" {
				t.Logf("event %s %s: %s", e.Type, e.Reason, e.Message)
				return true, ""
			}
		}
		return false, fmt.Sprintf("%d matching events", len(l.Items))
	})
	d, err := r.Flink.FlinkV1beta1().FlinkDeployments(r.ns).Get(r.Ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if d.Status.JobStatus.JobID != jobID {
		t.Errorf("after the operator restart without the CRD: %s, want job %s still", summary(d), jobID)
	}

	// Savepoint upgrade in legacy mode: parallelism 2 → 1.
	t0 = time.Now()
	r.kubectl("patch", "flinkdeployment", name, "-n", r.ns, "--type=merge", "-p", `{"spec":{"job":{"parallelism":1}}}`)
	var upgrade *v1beta1.Savepoint
	dep := r.waitDeployment(5*time.Minute, "legacy-mode upgraded job RUNNING with an UPGRADE savepoint in savepointInfo", func(d *v1beta1.FlinkDeployment) bool {
		js := d.Status.JobStatus
		if js.JobID == "" || js.JobID == jobID || js.State != v1beta1.JobStatusRunning || d.Status.LifecycleState != v1beta1.LifecycleStable {
			return false
		}
		upgrade = legacyUpgradeSavepoint(d)
		return upgrade != nil
	})
	newID := dep.Status.JobStatus.JobID
	rest := r.waitJobRunning(newID)
	r.record("legacy upgrade parallelism 2→1 (patch → RUNNING/STABLE)", time.Since(t0))
	path := dep.Status.JobStatus.UpgradeSavepointPath
	if path == "" || !framework.SameLocation(t, path, upgrade.Location) {
		t.Errorf("upgradeSavepointPath %q, want the UPGRADE savepoint of savepointInfo %s", path, upgrade.Location)
	}
	if _, err := os.Stat(filepath.Join(framework.LocalPath(t, upgrade.Location), "_metadata")); err != nil {
		t.Errorf("UPGRADE savepoint: %v", err)
	}
	r.checkRestored(rest, newID, upgrade.Location)
	r.checkParallelism(rest, newID, 1)
	t.Logf("%s: legacy upgrade: job %s → %s restored from %s; savepointInfo %s", r.version, jobID, newID, upgrade.Location, savepointInfo(dep))
	r.logKubectl("get", "flinkdeployment", "-n", r.ns)

	// Reinstall the CRD; the operator notices it and switches to snapshot
	// resources in-process (no restart), so it stays up.
	t0 = time.Now()
	if _, err := r.Local.InstallCRDs(r.Ctx, crds); err != nil {
		t.Fatal(err)
	}
	switched := ""
	for deadline := time.Now().Add(90 * time.Second); time.Now().Before(deadline) && switched == ""; time.Sleep(time.Second) {
		switched = findLine(r.OpLog, logStart, "Restarting the controllers with FlinkStateSnapshot resources enabled")
	}
	if switched == "" {
		t.Fatalf("the operator did not switch to snapshot resources within 90 s of the CRD's reinstall")
	}
	r.record("CRD reinstalled → snapshot resources on (same process)", time.Since(t0))
	if err := r.OperatorExited(); err != nil {
		t.Errorf("operator exited after the CRD came back: %v", err)
	}
	// Snapshot resources work again: a savepoint of the job completes.
	snap := &v1beta1.FlinkStateSnapshot{
		ObjectMeta: metav1.ObjectMeta{Name: "after-crd", Namespace: r.ns},
		Spec: v1beta1.FlinkStateSnapshotSpec{
			JobReference: &v1beta1.JobReference{Kind: v1beta1.JobReferenceKindDeployment, Name: name},
			Savepoint:    &v1beta1.SavepointSpec{},
		},
	}
	if _, err := r.Flink.FlinkV1beta1().FlinkStateSnapshots(r.ns).Create(r.Ctx, snap, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var after *v1beta1.FlinkStateSnapshot
	for deadline := time.Now().Add(90 * time.Second); time.Now().Before(deadline); time.Sleep(time.Second) {
		if after, err = r.Flink.FlinkV1beta1().FlinkStateSnapshots(r.ns).Get(r.Ctx, "after-crd", metav1.GetOptions{}); err == nil && after.Status.State.IsTerminal() {
			break
		}
	}
	if after == nil || after.Status.State != v1beta1.SnapshotCompleted {
		t.Errorf("savepoint after the CRD came back: %+v", after)
	}
	d, err = r.Flink.FlinkV1beta1().FlinkDeployments(r.ns).Get(r.Ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if d.Status.JobStatus.JobID != newID || d.Status.JobStatus.State != v1beta1.JobStatusRunning {
		t.Errorf("after the restart into snapshot-resource mode: %s, want job %s RUNNING", summary(d), newID)
	}
	if _, err := r.Flink.FlinkV1beta1().FlinkStateSnapshots(r.ns).List(r.Ctx, metav1.ListOptions{}); err != nil && !apierrors.IsNotFound(err) {
		t.Errorf("listing FlinkStateSnapshots after the reinstall: %v", err)
	}
	r.logKubectl("get", "flinkdeployment,flinkstatesnapshot", "-n", r.ns)
}

// legacyUpgradeSavepoint is the UPGRADE savepoint of savepointInfo
// (lastSavepoint or history) at upgradeSavepointPath.
func legacyUpgradeSavepoint(d *v1beta1.FlinkDeployment) *v1beta1.Savepoint {
	js := d.Status.JobStatus
	if js.SavepointInfo == nil || js.UpgradeSavepointPath == "" {
		return nil
	}
	cands := append([]v1beta1.Savepoint{}, js.SavepointInfo.SavepointHistory...)
	if js.SavepointInfo.LastSavepoint != nil {
		cands = append(cands, *js.SavepointInfo.LastSavepoint)
	}
	for i := range cands {
		sp := cands[i]
		if sp.TriggerType == v1beta1.SnapshotTriggerUpgrade && strings.TrimRight(sp.Location, "/") == strings.TrimRight(js.UpgradeSavepointPath, "/") {
			return &sp
		}
	}
	return nil
}

func savepointInfo(d *v1beta1.FlinkDeployment) string {
	si := d.Status.JobStatus.SavepointInfo
	if si == nil {
		return "<nil>"
	}
	var b strings.Builder
	if si.LastSavepoint != nil {
		fmt.Fprintf(&b, "lastSavepoint={%s %s} ", si.LastSavepoint.TriggerType, si.LastSavepoint.Location)
	}
	b.WriteString("history=[")
	for i, sp := range si.SavepointHistory {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s %s", sp.TriggerType, sp.Location)
	}
	b.WriteString("]")
	return b.String()
}

func fileSize(path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return fi.Size()
}

// findLine is the first line of path after offset that contains s.
func findLine(path string, offset int64, s string) string {
	data, err := os.ReadFile(path)
	if err != nil || int64(len(data)) < offset {
		return ""
	}
	for _, l := range strings.Split(string(data[offset:]), "\n") {
		if strings.Contains(l, s) {
			return l
		}
	}
	return ""
}
