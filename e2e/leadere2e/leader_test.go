package leadere2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	flinkjvm "github.com/flinkops/flink-operator/e2e/flink"
	"github.com/flinkops/flink-operator/e2e/framework"
	"github.com/flinkops/flink-operator/e2e/localcluster"
	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
)

var flavours = map[string]struct {
	image   string
	version v1beta1.FlinkVersion
}{
	"1.20.5": {"flink:1.20", v1beta1.FlinkVersion1_20},
	"2.3.0":  {"flink:2.3", v1beta1.FlinkVersion2_3},
}

// Lease timings of the replicas, short so that a takeover takes seconds. The
// gap between lease and renew deadline (2 s) is the margin by which a leader
// stops writing before a standby may start.
const (
	leaseName     = "flink-operator-lease"
	leaseNS       = "default"
	leaseDuration = 8 * time.Second
	renewDeadline = 6 * time.Second
	retryPeriod   = 1 * time.Second
	// takeoverBound is the most a takeover may take from the leader's
	// death: the lease, plus up to two jittered retry periods (the standby
	// sees the last renewal at its next poll and acquires at the first poll
	// after expiry), plus the test's 100 ms polling.
	takeoverBound = leaseDuration + 3*retryPeriod

	name = "counting" // the FlinkDeployment
	ns   = "leader"
)

type suite struct {
	*framework.Env
	t        *testing.T
	config   string // the replicas' --config file
	data     string // checkpoints and savepoints of the job
	replicas []*replica
	takeover []string // measured takeovers, for the summary
}

// replica is one operator process with its own recording proxy.
type replica struct {
	name     string
	op       *framework.Operator
	rec      *recorder
	log      string
	identity string
}

// TestLeaderFailover runs two operator replicas with leader election against
// the real API server and a real Flink job, and checks doc.go's claims.
func TestLeaderFailover(t *testing.T) {
	if framework.Kind() {
		t.Skip("the test kills, pauses and restarts operator processes, which is the local provider's")
	}
	begin := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	versions := flinkjvm.Versions()
	version := versions[len(versions)-1] // one version: failover does not depend on it
	fl, ok := flavours[version]
	if !ok {
		t.Fatalf("pinned Flink %s has no image in this test", version)
	}
	e := framework.Setup(t, ctx, framework.Options{Name: "leadere2e", NoOperator: true})
	if err := e.Local.GrantClusterAdmin(ctx, localcluster.OperatorUser); err != nil {
		t.Fatal(err)
	}
	s := &suite{Env: e, t: t, data: filepath.Join(e.Base, ns)}
	s.config = filepath.Join(e.Base, "operator-config.yaml")
	if err := os.WriteFile(s.config, []byte(fmt.Sprintf(`kubernetes.operator.leader-election.enabled: "true"
kubernetes.operator.leader-election.lease-name: %s
kubernetes.operator.leader-election.lease-duration: %d s
kubernetes.operator.leader-election.renew-deadline: %d s
kubernetes.operator.leader-election.retry-period: %d s
kubernetes.operator.observer.progress-check.interval: 2 s
`, leaseName, int(leaseDuration.Seconds()), int(renewDeadline.Seconds()), int(retryPeriod.Seconds()))), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			s.Dump(t, ns)
			for _, r := range s.replicas {
				framework.DumpTail(t, r.log, 80)
			}
		}
	})

	// Two replicas; the first leads.
	a := s.startReplica("a")
	s.waitHolder(a, 30*time.Second)
	b := s.startReplica("b")

	// A job under the operator.
	s.CreateNamespace(t, ns)
	if err := os.MkdirAll(s.data, 0o755); err != nil {
		t.Fatal(err)
	}
	s.apply(deploymentYAML(fl.image, fl.version, s.data, 2))
	dep := s.waitDeployment(4*time.Minute, "job RUNNING, lifecycle STABLE", func(d *v1beta1.FlinkDeployment) bool {
		return d.Status.JobStatus.JobID != "" && d.Status.JobStatus.State == v1beta1.JobStatusRunning &&
			d.Status.LifecycleState == v1beta1.LifecycleStable
	})
	firstJob := dep.Status.JobStatus.JobID
	s.FlinkREST(t, ns, name).WaitJobRunning(t, firstJob)
	t.Logf("job %s RUNNING under leader %s", firstJob, a.name)

	// 1. kill -9 the leader while a snapshot is IN_PROGRESS (two more wait
	// behind it, one per job at a time): the standby finishes all three,
	// one savepoint each.
	s.checkSavepointDirs(0)
	snaps := []string{"sp-1", "sp-2", "sp-3"}
	for _, n := range snaps {
		s.createSnapshot(n)
	}
	s.waitAnySnapshot(time.Minute, v1beta1.SnapshotInProgress)
	s.killAndTakeOver(a, b, "leader killed with a snapshot IN_PROGRESS")
	for _, n := range snaps {
		s.waitSnapshot(n, 2*time.Minute)
	}
	s.checkSavepointDirs(len(snaps))
	s.checkOnlyJob(firstJob)

	// 2. kill -9 the new leader once the upgrade's stop-with-savepoint
	// intent is recorded: the other (restarted) replica finishes the
	// upgrade with one savepoint and one new job.
	a2 := s.startReplica("a2")
	s.waitJoined(a2)
	s.apply(deploymentYAML(fl.image, fl.version, s.data, 1))
	s.waitDeployment(2*time.Minute, "the upgrade's savepoint intent recorded", func(d *v1beta1.FlinkDeployment) bool {
		si := d.Status.JobStatus.SavepointInfo
		return si != nil && si.TriggerID != "" && si.TriggerType == v1beta1.SnapshotTriggerUpgrade
	})
	s.killAndTakeOver(b, a2, "leader killed with the upgrade's stop-with-savepoint in flight")
	dep = s.waitDeployment(4*time.Minute, "upgraded job RUNNING, lifecycle STABLE", func(d *v1beta1.FlinkDeployment) bool {
		js := d.Status.JobStatus
		return js.JobID != "" && js.JobID != firstJob && js.State == v1beta1.JobStatusRunning &&
			d.Status.LifecycleState == v1beta1.LifecycleStable
	})
	upgradedJob := dep.Status.JobStatus.JobID
	rest := s.FlinkREST(t, ns, name)
	rest.WaitJobRunning(t, upgradedJob)
	upgrades := s.snapshots(v1beta1.LabelSnapshotTriggerType + "=" + string(v1beta1.SnapshotTriggerUpgrade))
	if len(upgrades) != 1 {
		t.Fatalf("%d UPGRADE FlinkStateSnapshots, want 1: %v", len(upgrades), snapshotNames(upgrades))
	}
	up := s.waitSnapshot(upgrades[0].Name, time.Minute)
	if !framework.SameLocation(t, up.Status.Path, dep.Status.JobStatus.UpgradeSavepointPath) {
		t.Errorf("UPGRADE snapshot at %s, upgradeSavepointPath %s", up.Status.Path, dep.Status.JobStatus.UpgradeSavepointPath)
	}
	if got := rest.WaitRestored(t, upgradedJob); !got.IsSavepoint || !framework.SameLocation(t, got.ExternalPath, up.Status.Path) {
		t.Errorf("job %s restored from %+v, want the upgrade savepoint %s", upgradedJob, got, up.Status.Path)
	}
	s.checkSavepointDirs(len(snaps) + 1)
	s.checkOnlyJob(upgradedJob)
	t.Logf("upgrade finished by %s: job %s → %s from %s", a2.name, firstJob, upgradedJob, up.Status.Path)

	// 3. A paused leader loses its lease and, resumed, stops at once.
	b2 := s.startReplica("b2")
	s.waitJoined(b2)
	s.pausedLeaderStops(a2, b2)

	t.Logf("takeovers (kill or SIGSTOP of the leader → the standby's lease acquireTime; bound %v):\n  %s", takeoverBound, strings.Join(s.takeover, "\n  "))
	t.Logf("TestLeaderFailover: %s in all", time.Since(begin).Round(time.Second))
}

// killAndTakeOver kills the leader with SIGKILL and checks that the standby
// holds the lease within takeoverBound, and that the standby wrote nothing
// but its lease before.
func (s *suite) killAndTakeOver(leader, standby *replica, what string) {
	t := s.t
	s.checkHolder(leader)
	killed := time.Now()
	leader.op.Kill()
	s.waitHolder(standby, 2*takeoverBound)
	acquired := s.acquireTime()
	took := acquired.Sub(killed)
	s.record(what, took)
	if took > takeoverBound {
		t.Errorf("%s: %s took over %v after the kill, want at most %v", what, standby.name, took, takeoverBound)
	}
	// Same machine, same clock: the standby stamps acquireTime before it
	// sends the acquiring update, so none of its writes may come earlier.
	if w := standby.rec.requests(time.Time{}, acquired, func(q request) bool { return q.mutating() && !q.lease() }); len(w) > 0 {
		t.Errorf("standby %s (lease acquired %s) wrote before it led:\n%s", standby.name, acquired.Format("15:04:05.000"), requestList(w))
	}
}

// pausedLeaderStops pauses the leader past its lease (SIGSTOP) so that the
// standby takes over, then gives the old leader a reason to act (a new
// snapshot, created while the new leader is itself paused for a moment so
// that it cannot win the race) and resumes it: it must write nothing and
// exit.
func (s *suite) pausedLeaderStops(leader, standby *replica) {
	t := s.t
	s.checkHolder(leader)
	if w := leader.rec.requests(time.Time{}, time.Now(), func(q request) bool { return q.mutating() }); len(w) == 0 {
		t.Fatalf("the recorder saw no write of leader %s: it would prove nothing", leader.name)
	}
	paused := time.Now()
	if err := leader.op.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	s.waitHolder(standby, 2*takeoverBound)
	took := s.acquireTime().Sub(paused)
	s.record("leader paused (SIGSTOP)", took)
	if took > takeoverBound {
		t.Errorf("%s took over %v after the leader was paused, want at most %v", standby.name, took, takeoverBound)
	}

	// The new leader is paused well within its renew deadline (it renews
	// every second, the fence lasts 6 s), so it keeps leading.
	if err := standby.op.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	s.createSnapshot("probe")
	resumed := time.Now()
	if err := leader.op.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	var exited time.Duration
	select {
	case <-leader.op.Done():
		exited = time.Since(resumed)
	case <-time.After(1500 * time.Millisecond):
	}
	if err := standby.op.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	standbyPause := time.Since(resumed)
	if exited == 0 {
		select {
		case <-leader.op.Done():
			t.Errorf("old leader %s exited only %v after it was resumed, want at once", leader.name, time.Since(resumed))
		case <-time.After(10 * time.Second):
			t.Errorf("old leader %s still runs 10 s after it was resumed without its lease", leader.name)
			leader.op.Kill()
		}
	} else {
		t.Logf("old leader %s exited %v after SIGCONT: %v", leader.name, exited.Round(time.Millisecond), leader.op.Exited())
		s.record("old leader resumed (SIGCONT) → exited", exited)
	}
	if w := leader.rec.requests(resumed, time.Now().Add(time.Hour), request.mutating); len(w) > 0 {
		t.Errorf("old leader %s wrote after it was resumed without its lease:\n%s", leader.name, requestList(w))
	}
	if all := leader.rec.requests(resumed, time.Now().Add(time.Hour), func(request) bool { return true }); len(all) > 0 {
		t.Logf("old leader %s sent after SIGCONT:\n%s", leader.name, requestList(all))
	}
	t.Logf("new leader %s was paused %v while the old one resumed", standby.name, standbyPause.Round(time.Millisecond))

	// The new leader, resumed, still leads and takes the probe snapshot:
	// exactly one savepoint for it.
	s.checkHolder(standby)
	probe := s.waitSnapshot("probe", 2*time.Minute)
	s.checkSavepointDirs(5)
	if w := standby.rec.requests(resumed, time.Now(), func(q request) bool {
		return q.mutating() && strings.Contains(q.path, "/flinkstatesnapshots/probe")
	}); len(w) == 0 {
		t.Errorf("the probe snapshot was not written through the new leader %s", standby.name)
	}
	t.Logf("probe snapshot COMPLETED by %s at %s", standby.name, probe.Status.Path)
}

func (s *suite) record(what string, d time.Duration) {
	s.t.Logf("%s: %v", what, d.Round(time.Millisecond))
	s.takeover = append(s.takeover, fmt.Sprintf("%-62s %v", what, d.Round(time.Millisecond)))
}

var identityRE = regexp.MustCompile(`"Joining leader election".* identity="([^"]+)"`)

// startReplica runs one operator replica, production flags plus the
// recorder's kubeconfig, all controllers, leader election from --config.
func (s *suite) startReplica(name string) *replica {
	t := s.t
	r := &replica{name: name, rec: newRecorder(t, name, s.Local.OperatorRESTConfig()), log: filepath.Join(s.Base, "operator-"+name+".log")}
	r.op = framework.StartOperator(t, s.OperatorBinary(), r.rec.kubeconfig(t, s.Base), r.log,
		"--config", s.config, "--leader-election-namespace", leaseNS)
	t.Cleanup(r.op.Stop)
	s.replicas = append(s.replicas, r)
	s.waitJoined(r)
	return r
}

// waitJoined waits until the replica has joined the election with its
// caches synced, and learns its identity from its log.
func (s *suite) waitJoined(r *replica) {
	if r.identity != "" {
		return
	}
	s.WaitFor(s.t, time.Minute, "replica "+r.name+" joined the election", func() (bool, string) {
		if err := r.op.Exited(); err != nil {
			s.t.Fatalf("replica %s: %v", r.name, err)
		}
		raw, _ := os.ReadFile(r.log)
		if m := identityRE.FindSubmatch(raw); m != nil {
			r.identity = string(m[1])
			return true, ""
		}
		return false, "no \"Joining leader election\" line in " + r.log
	})
}

// holder is the Lease's holder identity.
func (s *suite) holder() (string, error) {
	l, err := s.Kube.CoordinationV1().Leases(leaseNS).Get(s.Ctx, leaseName, metav1.GetOptions{})
	if err != nil {
		return "", err
	}
	return ptr.Deref(l.Spec.HolderIdentity, ""), nil
}

// waitHolder polls the Lease every 100 ms until r holds it, and returns when
// that was first seen.
func (s *suite) waitHolder(r *replica, timeout time.Duration) time.Time {
	s.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		h, err := s.holder()
		if err == nil && h == r.identity {
			return time.Now()
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("%s does not hold the lease after %v: holder %q (%v)", r.name, timeout, h, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// acquireTime is when the Lease's holder acquired it, by its own clock (the
// replicas and the test share this machine's).
func (s *suite) acquireTime() time.Time {
	s.t.Helper()
	l, err := s.Kube.CoordinationV1().Leases(leaseNS).Get(s.Ctx, leaseName, metav1.GetOptions{})
	if err != nil {
		s.t.Fatal(err)
	}
	if l.Spec.AcquireTime == nil {
		s.t.Fatalf("lease %s has no acquireTime: %+v", leaseName, l.Spec)
	}
	return l.Spec.AcquireTime.Time
}

func (s *suite) checkHolder(r *replica) {
	s.t.Helper()
	if h, err := s.holder(); err != nil || h != r.identity {
		s.t.Fatalf("lease holder %q (%v), want %s (%s)", h, err, r.name, r.identity)
	}
}

func (s *suite) apply(manifest string) {
	s.t.Helper()
	out, err := s.KubectlInput(strings.NewReader(manifest), "apply", "-f", "-")
	if err != nil {
		s.t.Fatal(err)
	}
	s.t.Logf("kubectl apply: %s", strings.TrimSpace(out))
}

func (s *suite) waitDeployment(timeout time.Duration, what string, ok func(*v1beta1.FlinkDeployment) bool) *v1beta1.FlinkDeployment {
	s.t.Helper()
	var got *v1beta1.FlinkDeployment
	s.WaitFor(s.t, timeout, "FlinkDeployment "+name+": "+what, func() (bool, string) {
		d, err := s.Flink.FlinkV1beta1().FlinkDeployments(ns).Get(s.Ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		got = d
		st := d.Status
		return ok(d), fmt.Sprintf("lifecycle=%s job=%s state=%s savepointInfo=%+v error=%q",
			st.LifecycleState, st.JobStatus.JobID, st.JobStatus.State, st.JobStatus.SavepointInfo, st.Error)
	})
	return got
}

func (s *suite) createSnapshot(n string) {
	s.t.Helper()
	snap := &v1beta1.FlinkStateSnapshot{
		ObjectMeta: metav1.ObjectMeta{Name: n, Namespace: ns},
		Spec: v1beta1.FlinkStateSnapshotSpec{
			JobReference: &v1beta1.JobReference{Kind: v1beta1.JobReferenceKindDeployment, Name: name},
			// No retry: a failed attempt must show, not be hidden by a
			// second savepoint.
			BackoffLimit: ptr.To[int32](0),
			Savepoint:    &v1beta1.SavepointSpec{DisposeOnDelete: ptr.To(false)},
		},
	}
	if _, err := s.Flink.FlinkV1beta1().FlinkStateSnapshots(ns).Create(s.Ctx, snap, metav1.CreateOptions{}); err != nil {
		s.t.Fatal(err)
	}
}

// waitAnySnapshot polls every 50 ms until some snapshot of the namespace is
// in state want.
func (s *suite) waitAnySnapshot(timeout time.Duration, want v1beta1.SnapshotState) {
	s.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		l, err := s.Flink.FlinkV1beta1().FlinkStateSnapshots(ns).List(s.Ctx, metav1.ListOptions{})
		if err == nil {
			for _, x := range l.Items {
				if x.Status.State == want {
					s.t.Logf("snapshot %s is %s (trigger id %q)", x.Name, want, x.Status.TriggerID)
					return
				}
			}
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("no snapshot %s after %v (%v)", want, timeout, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// waitSnapshot waits for COMPLETED and checks the savepoint's files.
func (s *suite) waitSnapshot(n string, timeout time.Duration) *v1beta1.FlinkStateSnapshot {
	s.t.Helper()
	var got *v1beta1.FlinkStateSnapshot
	s.WaitFor(s.t, timeout, "snapshot "+n+" COMPLETED", func() (bool, string) {
		x, err := s.Flink.FlinkV1beta1().FlinkStateSnapshots(ns).Get(s.Ctx, n, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		got = x
		if x.Status.State.IsTerminal() && x.Status.State != v1beta1.SnapshotCompleted {
			s.t.Fatalf("snapshot %s ended %s: %s", n, x.Status.State, x.Status.Error)
		}
		return x.Status.State == v1beta1.SnapshotCompleted, fmt.Sprintf("%+v", x.Status)
	})
	if _, err := os.Stat(filepath.Join(framework.LocalPath(s.t, got.Status.Path), "_metadata")); err != nil {
		s.t.Fatalf("snapshot %s: no savepoint at %s: %v", n, got.Status.Path, err)
	}
	return got
}

func (s *suite) snapshots(selector string) []v1beta1.FlinkStateSnapshot {
	s.t.Helper()
	l, err := s.Flink.FlinkV1beta1().FlinkStateSnapshots(ns).List(s.Ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		s.t.Fatal(err)
	}
	sort.Slice(l.Items, func(i, j int) bool { return l.Items[i].Name < l.Items[j].Name })
	return l.Items
}

// checkSavepointDirs counts the savepoints Flink wrote on disk against the
// COMPLETED savepoint resources: each resource names its own directory, and
// there is no directory no resource names (a savepoint taken twice).
func (s *suite) checkSavepointDirs(want int) {
	t := s.t
	t.Helper()
	dir := filepath.Join(s.data, "savepoints")
	entries, err := os.ReadDir(dir)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	onDisk := map[string]bool{}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "savepoint-") {
			onDisk[filepath.Join(dir, e.Name())] = true
		}
	}
	named := map[string]string{}
	for _, x := range s.snapshots("") {
		if x.Spec.Savepoint == nil || x.Status.State != v1beta1.SnapshotCompleted {
			continue
		}
		p := framework.LocalPath(t, x.Status.Path)
		if other, dup := named[p]; dup {
			t.Errorf("snapshots %s and %s name the same savepoint %s", other, x.Name, p)
		}
		named[p] = x.Name
		if !onDisk[p] {
			t.Errorf("snapshot %s names %s, which is not a savepoint directory on disk", x.Name, p)
		}
	}
	var unnamed []string
	for p := range onDisk {
		if _, ok := named[p]; !ok {
			unnamed = append(unnamed, p)
		}
	}
	if len(onDisk) != want || len(unnamed) > 0 {
		t.Fatalf("%d savepoint directories on disk, want %d; named by no snapshot: %v", len(onDisk), want, unnamed)
	}
	t.Logf("%d savepoints on disk, one per COMPLETED savepoint snapshot", len(onDisk))
}

// checkOnlyJob checks Flink's own job list: the cluster runs exactly the job
// the operator recorded, and never ran another (a job submitted twice would
// show as a second id).
func (s *suite) checkOnlyJob(jobID string) {
	t := s.t
	t.Helper()
	var overview struct {
		Jobs []struct {
			JID   string `json:"jid"`
			State string `json:"state"`
		} `json:"jobs"`
	}
	if err := s.FlinkREST(t, ns, name).Get(s.Ctx, "/jobs/overview", &overview); err != nil {
		t.Fatal(err)
	}
	if len(overview.Jobs) != 1 || overview.Jobs[0].JID != jobID || overview.Jobs[0].State != "RUNNING" {
		t.Fatalf("Flink's jobs: %+v, want only %s RUNNING", overview.Jobs, jobID)
	}
	d, err := s.Flink.FlinkV1beta1().FlinkDeployments(ns).Get(s.Ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if d.Status.JobStatus.JobID != jobID {
		t.Fatalf("the operator records job %s, Flink runs %s", d.Status.JobStatus.JobID, jobID)
	}
}

func snapshotNames(s []v1beta1.FlinkStateSnapshot) []string {
	var out []string
	for _, x := range s {
		out = append(out, x.Name)
	}
	return out
}

func requestList(reqs []request) string {
	var b strings.Builder
	for _, q := range reqs {
		b.WriteString("  " + q.String() + "\n")
	}
	return b.String()
}

// deploymentYAML is the stateful test job, savepoint upgrades.
func deploymentYAML(image string, version v1beta1.FlinkVersion, data string, parallelism int) string {
	return fmt.Sprintf(`apiVersion: flink.apache.org/v1beta1
kind: FlinkDeployment
metadata:
  name: %s
  namespace: %s
spec:
  mode: standalone
  image: %s
  flinkVersion: %s
  flinkConfiguration:
    jobmanager.memory.process.size: 768m
    taskmanager.memory.process.size: 1024m
    taskmanager.memory.managed.size: 64m
    taskmanager.numberOfTaskSlots: "2"
    state.backend.type: hashmap
    execution.checkpointing.interval: 2 s
    execution.checkpointing.dir: file://%s/checkpoints
    execution.checkpointing.savepoint-dir: file://%s/savepoints
    heartbeat.interval: "1000"
    heartbeat.timeout: "10000"
  jobManager:
    replicas: 1
  job:
    jarURI: local:///opt/flink/usrlib/testjob.jar
    entryClass: %s
    args: ["--rate", "10", "--keys", "10"]
    parallelism: %d
    upgradeMode: savepoint
    state: running
`, name, ns, image, version, data, data, flinkjvm.TestJobClass, parallelism)
}
