package sessionjobe2e

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	flinkjvm "github.com/flinkops/flink-operator/e2e/flink"
	"github.com/flinkops/flink-operator/e2e/framework"
	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
)

var flavours = map[string]struct {
	image   string
	version v1beta1.FlinkVersion
}{
	"1.20.5": {"flink:1.20", v1beta1.FlinkVersion1_20},
	"2.3.0":  {"flink:2.3", v1beta1.FlinkVersion2_3},
}

const (
	cluster = "basic-session-deployment-example"
	job1    = "basic-session-job-example"
	job2    = "basic-session-job-example2"
	keys    = 10
)

func TestFlinkSessionJobs(t *testing.T) {
	begin := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 19*time.Minute)
	defer cancel()
	e := framework.Setup(t, ctx, framework.Options{Name: "sessionjobe2e"})
	jars := serveJars(t)
	t.Logf("cluster and operator up %s after the start; jars at %s", time.Since(begin).Round(time.Millisecond), jars)
	example := filepath.Join(e.Root, "pkg", "upstreamtest", "testdata", "examples", "basic-session-deployment-and-job.yaml")
	for i, v := range flinkjvm.Versions() {
		if _, ok := flavours[v]; !ok {
			t.Fatalf("pinned Flink %s has no image in this test", v)
		}
		t.Run(v, func(t *testing.T) {
			r := &run{Env: e, t: t, version: v, ns: fmt.Sprintf("session-%d", i), jars: jars}
			e.CreateNamespace(t, r.ns)
			t.Cleanup(func() {
				if t.Failed() {
					e.Dump(t, r.ns)
				}
				_, _ = e.Kubectl("delete", "namespace", r.ns, "--wait=false")
			})
			r.scenario(example)
		})
	}
	t.Logf("TestFlinkSessionJobs: %s in all", time.Since(begin).Round(time.Second))
}

// serveJars serves each pinned version's test job jar at
// /<version>/testjob.jar, as a user would host a session job's jar.
func serveJars(t *testing.T) string {
	mux := http.NewServeMux()
	for _, v := range flinkjvm.Versions() {
		d, err := flinkjvm.Ensure(context.Background(), v)
		if err != nil {
			t.Fatal(err)
		}
		jar := d.TestJobJar
		mux.HandleFunc("/"+v+"/testjob.jar", func(w http.ResponseWriter, r *http.Request) { http.ServeFile(w, r, jar) })
	}
	return framework.ServeHTTP(t, mux)
}

type run struct {
	*framework.Env
	t       *testing.T
	version string
	ns      string
	jars    string
}

func (r *run) scenario(examplePath string) {
	t := r.t
	fl := flavours[r.version]
	data := filepath.Join(r.Base, r.ns)
	savepointDir := filepath.Join(data, "savepoints")
	raw, err := os.ReadFile(examplePath)
	if err != nil {
		t.Fatal(err)
	}
	y := string(raw)
	// The edits: standalone mode (the sample's unset mode is native, which
	// e2e/nativee2e runs), the image (the node agent runs the images it knows), the
	// Flink version for 1.x, the jars (the test job, served by the test) and
	// their entry class and arguments, and the options a stateful job needs
	// (checkpoint and savepoint directories, enough slots for 4 + 2).
	y = replaceOnce(t, y, "spec:\n  image: flink:2.2\n", "spec:\n  mode: standalone\n  image: flink:2.2\n")
	y = replaceOnce(t, y, "  image: flink:2.2\n", "  image: "+framework.FlinkImage(t, r.version)+"\n"+r.PodTemplateYAML()+fmt.Sprintf(`  flinkConfiguration:
    taskmanager.numberOfTaskSlots: "6"
    state.backend.type: hashmap
    execution.checkpointing.interval: 2 s
    execution.checkpointing.dir: file://%s/checkpoints
    execution.checkpointing.savepoint-dir: file://%s
    heartbeat.interval: "1000"
    heartbeat.timeout: "10000"
`, data, savepointDir))
	if !strings.HasPrefix(r.version, "2.") {
		y = replaceOnce(t, y, "flinkVersion: v2_2", "flinkVersion: "+string(fl.version))
	}
	jar := r.jars + "/" + r.version + "/testjob.jar"
	jobArgs := fmt.Sprintf("\n    entryClass: %s\n    args: [\"--rate\", \"10\", \"--keys\", \"%d\"]", flinkjvm.TestJobClass, keys)
	y = replaceOnce(t, y, "    jarURI: https://repo1.maven.org/maven2/org/apache/flink/flink-examples-streaming/2.2.0/flink-examples-streaming-2.2.0-TopSpeedWindowing.jar",
		"    jarURI: "+jar+jobArgs)
	y = replaceOnce(t, y, "    jarURI: https://repo1.maven.org/maven2/org/apache/flink/flink-examples-streaming/2.2.0/flink-examples-streaming-2.2.0.jar",
		"    jarURI: "+jar)
	y = replaceOnce(t, y, "    entryClass: org.apache.flink.streaming.examples.statemachine.StateMachineExample",
		strings.TrimPrefix(jobArgs, "\n"))
	if _, err := r.Kube.CoreV1().ServiceAccounts(r.ns).Create(r.Ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "flink"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	// 1. kubectl apply: one session cluster, two jobs on it.
	t0 := time.Now()
	r.kubectlInput(y, "apply", "-n", r.ns, "-f", "-")
	one := r.waitSessionJob(job1, 5*time.Minute, "RUNNING, STABLE", stableJob)
	two := r.waitSessionJob(job2, 2*time.Minute, "RUNNING, STABLE", stableJob)
	rest := r.FlinkREST(t, r.ns, cluster)
	if j := rest.WaitJobRunning(t, one.Status.JobStatus.JobID); j.MaxParallelism() != 4 {
		t.Errorf("%s runs with parallelism %d, want 4", job1, j.MaxParallelism())
	}
	if j := rest.WaitJobRunning(t, two.Status.JobStatus.JobID); j.MaxParallelism() != 2 {
		t.Errorf("%s runs with parallelism %d, want 2", job2, j.MaxParallelism())
	}
	r.checkJobsOnCluster(rest, one.Status.JobStatus.JobID, two.Status.JobStatus.JobID)
	r.checkNoJarsLeft(rest)
	t.Logf("%s: apply → two session jobs RUNNING on one session cluster in %s (jobs %s, %s at %s)", r.version,
		time.Since(t0).Round(100*time.Millisecond), one.Status.JobStatus.JobID, two.Status.JobStatus.JobID, rest.URL())
	r.logKubectl("get", "flinkdeployment,flinksessionjob", "-n", r.ns)

	// 2. A FlinkStateSnapshot of a session job completes.
	t0 = time.Now()
	r.kubectlInput(fmt.Sprintf(`apiVersion: flink.apache.org/v1beta1
kind: FlinkStateSnapshot
metadata:
  name: session-savepoint
spec:
  backoffLimit: 0
  jobReference:
    kind: FlinkSessionJob
    name: %s
  savepoint:
    disposeOnDelete: true
`, job1), "apply", "-n", r.ns, "-f", "-")
	snap := r.waitSnapshot("session-savepoint", 2*time.Minute)
	checkMetadata(t, snap.Status.Path, savepointDir)
	t.Logf("%s: FlinkStateSnapshot of FlinkSessionJob %s COMPLETED at %s in %s", r.version, job1, snap.Status.Path, time.Since(t0).Round(100*time.Millisecond))

	// 3. Savepoint upgrade of job 2 (parallelism 2 → 1); job 1 untouched.
	oldTwo := two.Status.JobStatus.JobID
	acc := rest.WaitAccumulators(t, oldTwo, "max-count >= 5", func(a framework.Accumulators) bool { return a.MaxCount >= 5 })
	t0 = time.Now()
	r.kubectl("patch", "flinksessionjob", job2, "-n", r.ns, "--type=merge", "-p", `{"spec":{"job":{"parallelism":1,"upgradeMode":"savepoint"}}}`)
	two = r.waitSessionJob(job2, 3*time.Minute, "upgraded, RUNNING, STABLE", func(j *v1beta1.FlinkSessionJob) bool {
		return stableJob(j) && j.Status.JobStatus.JobID != oldTwo
	})
	newTwo := two.Status.JobStatus.JobID
	path := two.Status.JobStatus.UpgradeSavepointPath
	if path == "" {
		t.Fatalf("upgraded session job has no upgradeSavepointPath")
	}
	if j := rest.WaitJobRunning(t, newTwo); j.MaxParallelism() != 1 {
		t.Errorf("upgraded %s runs with parallelism %d, want 1", job2, j.MaxParallelism())
	}
	restored := rest.WaitRestored(t, newTwo)
	if !restored.IsSavepoint || !framework.SameLocation(t, restored.ExternalPath, path) {
		t.Errorf("upgraded job restored from %+v, want the savepoint %s", restored, path)
	}
	checkMetadata(t, path, savepointDir)
	after := rest.WaitAccumulators(t, newTwo, "records >= 5", func(a framework.Accumulators) bool { return a.Records >= 5 })
	if after.Mismatches != 0 || after.MaxCount < acc.MaxCount || after.MaxCount <= (after.Records+keys-1)/keys {
		t.Errorf("keyed state not restored: %+v, max-count before the stop %d", after, acc.MaxCount)
	}
	if st, err := rest.JobState(oldTwo); err != nil || st != "FINISHED" {
		t.Errorf("old job %s is %q (%v), want FINISHED (stopped with a savepoint)", oldTwo, st, err)
	}
	upgrades := r.upgradeSnapshots(job2)
	if len(upgrades) != 1 || upgrades[0].Status.State != v1beta1.SnapshotCompleted || !framework.SameLocation(t, upgrades[0].Status.Path, path) {
		t.Errorf("UPGRADE snapshots of %s: %+v, want one COMPLETED at %s", job2, upgrades, path)
	}
	if cur := r.getSessionJob(job1); cur.Status.JobStatus.JobID != one.Status.JobStatus.JobID || cur.Status.JobStatus.State != v1beta1.JobStatusRunning {
		t.Errorf("%s changed during the upgrade of %s: %s", job1, job2, summary(cur))
	}
	if st, err := rest.JobState(one.Status.JobStatus.JobID); err != nil || st != "RUNNING" {
		t.Errorf("%s's job is %q (%v) after the upgrade of %s, want RUNNING", job1, st, err, job2)
	}
	t.Logf("%s: savepoint upgrade of %s in %s: job %s → %s restored from %s (%+v), %s still RUNNING", r.version, job2,
		time.Since(t0).Round(100*time.Millisecond), oldTwo, newTwo, path, after, job1)
	r.logKubectl("get", "flinksessionjob,flinkstatesnapshot", "-n", r.ns)

	// 4. The manual savepoint is disposed of on deletion (disposeOnDelete),
	// through the session cluster.
	r.kubectl("delete", "flinkstatesnapshot", "session-savepoint", "-n", r.ns, "--wait=false")
	r.WaitFor(t, time.Minute, "snapshot session-savepoint deleted", func() (bool, string) {
		_, err := r.Flink.FlinkV1beta1().FlinkStateSnapshots(r.ns).Get(r.Ctx, "session-savepoint", metav1.GetOptions{})
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})
	if _, err := os.Stat(framework.LocalPath(t, snap.Status.Path)); !os.IsNotExist(err) {
		t.Errorf("disposed savepoint %s still on disk (%v)", snap.Status.Path, err)
	}

	// 5. kubectl delete of the session jobs cancels their jobs.
	t0 = time.Now()
	r.kubectl("delete", "flinksessionjob", job1, job2, "-n", r.ns, "--wait=false")
	for _, name := range []string{job1, job2} {
		r.WaitFor(t, 2*time.Minute, "FlinkSessionJob "+name+" deleted", func() (bool, string) {
			j, err := r.Flink.FlinkV1beta1().FlinkSessionJobs(r.ns).Get(r.Ctx, name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return true, ""
			}
			if err != nil {
				return false, err.Error()
			}
			return false, summary(j)
		})
	}
	for _, id := range []string{one.Status.JobStatus.JobID, newTwo} {
		// GET /jobs/{id} is served from Flink's execution graph cache
		// (web.refresh-interval, 3 s), so it may lag the cancel briefly.
		r.WaitFor(t, 15*time.Second, "job "+id+" CANCELED in Flink", func() (bool, string) {
			st, err := rest.JobState(id)
			return err == nil && st == "CANCELED", fmt.Sprintf("%s %v", st, err)
		})
	}
	t.Logf("%s: session jobs deleted, their jobs CANCELED, in %s", r.version, time.Since(t0).Round(100*time.Millisecond))
	r.kubectl("delete", "flinkstatesnapshot,flinkdeployment", "--all", "-n", r.ns, "--wait=false")
	r.WaitFor(t, 2*time.Minute, "every pod of "+r.ns+" gone", func() (bool, string) {
		l, err := r.Kube.CoreV1().Pods(r.ns).List(r.Ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		return len(l.Items) == 0, fmt.Sprintf("%d pods", len(l.Items))
	})
}

func stableJob(j *v1beta1.FlinkSessionJob) bool {
	return j.Status.JobStatus.JobID != "" && j.Status.JobStatus.State == v1beta1.JobStatusRunning &&
		j.Status.LifecycleState == v1beta1.LifecycleStable
}

func summary(j *v1beta1.FlinkSessionJob) string {
	s := j.Status
	return fmt.Sprintf("{lifecycle=%s job=%s/%s restore=%q error=%q finalizers=%v}", s.LifecycleState, s.JobStatus.JobID,
		s.JobStatus.State, s.JobStatus.UpgradeSavepointPath, s.Error, j.Finalizers)
}

func (r *run) getSessionJob(name string) *v1beta1.FlinkSessionJob {
	r.t.Helper()
	j, err := r.Flink.FlinkV1beta1().FlinkSessionJobs(r.ns).Get(r.Ctx, name, metav1.GetOptions{})
	if err != nil {
		r.t.Fatal(err)
	}
	return j
}

func (r *run) waitSessionJob(name string, timeout time.Duration, what string, ok func(*v1beta1.FlinkSessionJob) bool) *v1beta1.FlinkSessionJob {
	r.t.Helper()
	var got *v1beta1.FlinkSessionJob
	r.WaitFor(r.t, timeout, "FlinkSessionJob "+name+": "+what, func() (bool, string) {
		j, err := r.Flink.FlinkV1beta1().FlinkSessionJobs(r.ns).Get(r.Ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		got = j
		return ok(j), summary(j)
	})
	return got
}

func (r *run) waitSnapshot(name string, timeout time.Duration) *v1beta1.FlinkStateSnapshot {
	r.t.Helper()
	var got *v1beta1.FlinkStateSnapshot
	r.WaitFor(r.t, timeout, "FlinkStateSnapshot "+name+" COMPLETED", func() (bool, string) {
		s, err := r.Flink.FlinkV1beta1().FlinkStateSnapshots(r.ns).Get(r.Ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		got = s
		if s.Status.State == v1beta1.SnapshotFailed || s.Status.State == v1beta1.SnapshotAbandoned {
			r.t.Fatalf("snapshot %s ended %s: %s", name, s.Status.State, s.Status.Error)
		}
		return s.Status.State == v1beta1.SnapshotCompleted && s.Status.Path != "", fmt.Sprintf("%+v", s.Status)
	})
	return got
}

// upgradeSnapshots are the UPGRADE snapshots of a session job.
func (r *run) upgradeSnapshots(job string) []v1beta1.FlinkStateSnapshot {
	r.t.Helper()
	var out []v1beta1.FlinkStateSnapshot
	r.WaitFor(r.t, 30*time.Second, "UPGRADE snapshot of "+job+" COMPLETED", func() (bool, string) {
		l, err := r.Flink.FlinkV1beta1().FlinkStateSnapshots(r.ns).List(r.Ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		out = out[:0]
		done := true
		for _, s := range l.Items {
			if ref := s.Spec.JobReference; ref != nil && ref.Kind == v1beta1.JobReferenceKindSessionJob && ref.Name == job &&
				strings.Contains(s.Name, "-upgrade-") {
				out = append(out, s)
				done = done && s.Status.State == v1beta1.SnapshotCompleted
			}
		}
		return len(out) > 0 && done, fmt.Sprintf("%d upgrade snapshots", len(out))
	})
	return out
}

// checkJobsOnCluster checks that both jobs run on the one session cluster.
func (r *run) checkJobsOnCluster(rest *framework.Flink, ids ...string) {
	var overview struct {
		Jobs []struct {
			ID    string `json:"jid"`
			State string `json:"state"`
		} `json:"jobs"`
	}
	if err := rest.Get(r.Ctx, "/jobs/overview", &overview); err != nil {
		r.t.Fatal(err)
	}
	running := map[string]bool{}
	for _, j := range overview.Jobs {
		running[j.ID] = j.State == "RUNNING"
	}
	for _, id := range ids {
		if !running[id] {
			r.t.Errorf("job %s is not RUNNING on the session cluster: %+v", id, overview.Jobs)
		}
	}
}

// checkNoJarsLeft: the operator deletes the jars it uploaded.
func (r *run) checkNoJarsLeft(rest *framework.Flink) {
	var jars struct {
		Files []struct {
			ID string `json:"id"`
		} `json:"files"`
	}
	if err := rest.Get(r.Ctx, "/jars", &jars); err != nil {
		r.t.Fatal(err)
	}
	if len(jars.Files) != 0 {
		r.t.Errorf("uploaded jars left on the session cluster: %+v", jars.Files)
	}
}

func checkMetadata(t *testing.T, path, dir string) {
	t.Helper()
	p := framework.LocalPath(t, path)
	if !strings.HasPrefix(p, dir+string(filepath.Separator)) {
		t.Errorf("savepoint %s is not under %s", p, dir)
	}
	if _, err := os.Stat(filepath.Join(p, "_metadata")); err != nil {
		t.Errorf("savepoint %s: %v", path, err)
	}
}

func (r *run) kubectlInput(stdin string, args ...string) {
	r.t.Helper()
	out, err := r.KubectlInput(strings.NewReader(stdin), args...)
	if err != nil {
		r.t.Fatal(err)
	}
	r.t.Logf("kubectl %s: %s", strings.Join(args, " "), strings.TrimSpace(out))
}

func (r *run) kubectl(args ...string) {
	r.t.Helper()
	out, err := r.Kubectl(args...)
	if err != nil {
		r.t.Fatal(err)
	}
	r.t.Logf("kubectl %s: %s", strings.Join(args, " "), strings.TrimSpace(out))
}

func (r *run) logKubectl(args ...string) {
	out, err := r.Kubectl(args...)
	if err != nil {
		r.t.Errorf("%v", err)
		return
	}
	r.t.Logf("%s: kubectl %s\n%s", r.version, strings.Join(args, " "), strings.TrimRight(out, "\n"))
}

func replaceOnce(t *testing.T, s, old, repl string) string {
	t.Helper()
	if n := strings.Count(s, old); n != 1 {
		t.Fatalf("upstream example has %q %d times, want once", old, n)
	}
	return strings.Replace(s, old, repl, 1)
}
