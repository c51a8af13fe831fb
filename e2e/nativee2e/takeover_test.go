package nativee2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
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
	const scenario = "native-suspended-savepoint"
	snaps, err := filepath.Glob(filepath.Join(r.Root, recordedUpstream, scenario, "flinkstatesnapshot-*.yaml"))
	if err != nil || len(snaps) != 1 {
		t.Fatalf("upstream's upgrade snapshot: %v %v", snaps, err)
	}
	var dep *v1beta1.FlinkDeployment
	var savepoint string
	t0 := time.Now()
	r.WhileOperatorStopped(t, func() {
		objs := r.createRecorded(scenario, name, nil, "flinkdeployment-suspended.yaml", filepath.Base(snaps[0]))
		dep = objs["flinkdeployment-suspended.yaml"].(*v1beta1.FlinkDeployment)
		savepoint = dep.Status.JobStatus.UpgradeSavepointPath
		if snap := objs[filepath.Base(snaps[0])].(*v1beta1.FlinkStateSnapshot); savepoint == "" || snap.Status.Path != savepoint {
			t.Fatalf("recorded savepoint %q, snapshot path %q", savepoint, snap.Status.Path)
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
// job id. Taken over, the job keeps its id and its JobManager pod and
// stays STABLE, with no upgrade or error; a new savepoint of it completes.
func (r *run) takeOverUpstreamRunning() {
	r.takeOverUpstreamApplication("native-running-with-snapshots", "run",
		"deployment-run.yaml", "configmap-flink-config-run.yaml", "configmap-autoscaler-run.yaml", "service-run-rest.yaml",
		"flinkstatesnapshot-run-savepoint.yaml", "flinkstatesnapshot-run-checkpoint.yaml")
}

// takeOverUpstreamStandalone (Flink 1.20): the running standalone
// application upstream deployed (its JobManager and TaskManager
// Deployments, both with upstream's non-controller owner reference to the
// FlinkDeployment, Services and ConfigMaps controlled by the JobManager
// Deployment, its savepoint FlinkStateSnapshot), created as it was while
// this operator is stopped; the JobManager runs the job under upstream's
// job id ($internal.pipeline.job-id in upstream's configuration). Taken
// over, the job keeps its id, the JobManager and TaskManager pods stay (the
// TaskManager Deployment is not rewritten under the running job), STABLE;
// a new savepoint completes.
func (r *run) takeOverUpstreamStandalone() {
	r.takeOverUpstreamApplication("standalone-application-running", "standalone",
		"deployment-standalone.yaml", "deployment-standalone-taskmanager.yaml", "configmap-flink-config-standalone.yaml",
		"configmap-autoscaler-standalone.yaml", "service-standalone.yaml", "service-standalone-rest.yaml",
		"flinkstatesnapshot-standalone-savepoint.yaml")
}

// takeOverUpstreamApplication recreates the running application name of
// scenario (its FlinkDeployment, then the recorded files given, owners
// first) while this operator is stopped, waits for the job to run under
// upstream's job id, and checks the takeover (checkTakenOver) and a new
// savepoint.
func (r *run) takeOverUpstreamApplication(scenario, name string, files ...string) {
	var jobID string
	t0 := time.Now()
	r.WhileOperatorStopped(r.t, func() {
		dep := "flinkdeployment-" + name + ".yaml"
		objs := r.createRecorded(scenario, name, nil, append([]string{dep}, files...)...)
		jobID = objs[dep].(*v1beta1.FlinkDeployment).Status.JobStatus.JobID
		// Running, as upstream left it, before this operator starts (no
		// framework wait: it stops at an operator that is not running).
		r.waitJobRunningWithoutOperator(name, jobID, 3*time.Minute)
	})
	r.checkTakenOver(name, jobID, t0, nil, cluster.ComponentJobManager, cluster.ComponentTaskManager)
	r.savepointAfterTakeover(name, "FlinkDeployment", name, t0)
	r.kubectl("delete", "flinkdeployment", name, "-n", r.ns, "--wait=false")
	r.waitGone(name, 2*time.Minute)
}

// takeOverUpstreamSession (Flink 1.20): the native session cluster upstream
// deployed and the FlinkSessionJob it submitted there, as upstream left
// them (the FlinkDeployment and FlinkSessionJob with their status, the
// JobManager Deployment, its Service and ConfigMap, the session job's
// savepoint FlinkStateSnapshot), created while this operator is stopped;
// the test then submits the job to the fresh session cluster as upstream
// did, under upstream's job id (the HA ConfigMaps that would recover it
// name the recording machine's files). Taken over, the session cluster
// keeps its JobManager pod, the session job keeps its job id, both STABLE
// with no resubmission or error; a new savepoint of the session job
// completes.
func (r *run) takeOverUpstreamSession() {
	const session, job = "session", "session-job"
	t := r.t
	var jobID string
	t0 := time.Now()
	r.WhileOperatorStopped(t, func() {
		// Upstream's operator fetched the jar from a file:// URI of the
		// recording machine; this test's is served over HTTP (the spec
		// and upstream's record of it name the same one).
		objs := r.createRecorded("native-session-with-sessionjob", session,
			map[string]string{"file:///root/.cache/flink-operator/flink/1.20.5/testjob.jar": r.jar},
			"flinkdeployment-session.yaml", "deployment-session.yaml", "configmap-flink-config-session.yaml",
			"service-session-rest.yaml", "flinksessionjob-session-job.yaml", "flinkstatesnapshot-session-job-savepoint.yaml")
		sj := objs["flinksessionjob-session-job.yaml"].(*v1beta1.FlinkSessionJob)
		jobID = sj.Status.JobStatus.JobID
		r.submitAsUpstream(session, jobID, sj.Spec.Job)
		r.waitJobRunningWithoutOperator(session, jobID, 3*time.Minute)
	})
	r.checkTakenOver(session, "", t0, func() {
		j, err := r.Flink.FlinkV1beta1().FlinkSessionJobs(r.ns).Get(r.Ctx, job, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !stableSessionJob(j) || j.Status.JobStatus.JobID != jobID || j.Status.Error != "" {
			t.Fatalf("session job taken over: %s; want job %s RUNNING, STABLE", sessionJobSummary(j), jobID)
		}
	}, cluster.ComponentJobManager, cluster.ComponentTaskManager)
	r.noEvent(job, reasons.ReasonSpecChanged)
	if jobs := r.liveJobs(r.FlinkREST(t, r.ns, session)); !slices.Equal(jobs, []string{jobID}) {
		t.Fatalf("session cluster runs %v, want only upstream's job %s (no resubmission)", jobs, jobID)
	}
	r.savepointAfterTakeover(job, "FlinkSessionJob", job, t0)
	r.kubectl("delete", "flinksessionjob", job, "-n", r.ns, "--wait=false")
	r.WaitFor(t, 2*time.Minute, "FlinkSessionJob "+job+" deleted", func() (bool, string) {
		_, err := r.Flink.FlinkV1beta1().FlinkSessionJobs(r.ns).Get(r.Ctx, job, metav1.GetOptions{})
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})
	r.kubectl("delete", "flinkdeployment", session, "-n", r.ns, "--wait=false")
	r.waitGone(session, 2*time.Minute)
}

// createRecorded creates the recorded objects of one scenario of
// upstream's recording, in the order given (owners first), as upstream
// left them: the resources with their status, the others as recorded but
// for what the API server assigns (UID, resourceVersion, creation time, a
// Service's cluster IP), owner references pointing at the new UIDs, this
// test's namespace (in the objects and in Flink's configuration:
// kubernetes.namespace, a standalone cluster's jobmanager.rpc.address) and
// data directory (the scenario's savepoints are copied there), and the
// extra replacements given. It returns the objects as read, by file.
func (r *run) createRecorded(scenario, name string, replace map[string]string, files ...string) map[string]metav1.Object {
	t := r.t
	t.Helper()
	upstreamData := filepath.Join(r.data, "upstream")
	if err := os.MkdirAll(upstreamData, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("cp", "-r", filepath.Join(r.Root, recordedUpstream, "flink-data", name), upstreamData).CombinedOutput(); err != nil {
		t.Fatalf("copying upstream's savepoints: %v: %s", err, out)
	}
	uids := map[string]string{} // recorded UID -> the new object's
	objs := map[string]metav1.Object{}
	for _, file := range files {
		raw, err := os.ReadFile(filepath.Join(r.Root, recordedUpstream, scenario, file))
		if err != nil {
			t.Fatal(err)
		}
		text := strings.ReplaceAll(string(raw), "/tmp/flink-data-upstream", upstreamData)
		text = strings.ReplaceAll(text, "kubernetes.namespace: default", "kubernetes.namespace: "+r.ns)
		text = rpcAddressNamespace.ReplaceAllString(text, "${1}."+r.ns)
		for old, cur := range replace {
			text = strings.ReplaceAll(text, old, cur)
		}
		for old, cur := range uids {
			text = strings.ReplaceAll(text, old, cur)
		}
		var head struct {
			Kind string `json:"kind"`
		}
		if err := yaml.Unmarshal([]byte(text), &head); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		var o metav1.Object
		switch head.Kind {
		case "FlinkDeployment":
			o = &v1beta1.FlinkDeployment{}
		case "FlinkSessionJob":
			o = &v1beta1.FlinkSessionJob{}
		case "FlinkStateSnapshot":
			o = &v1beta1.FlinkStateSnapshot{}
		case "Deployment":
			o = &appsv1.Deployment{}
		case "ConfigMap":
			o = &corev1.ConfigMap{}
		case "Service":
			o = &corev1.Service{}
		default:
			t.Fatalf("%s: kind %q is not created here", file, head.Kind)
		}
		if err := yaml.Unmarshal([]byte(text), o); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		recorded := string(o.GetUID())
		objs[file] = o
		in := o.(interface{ DeepCopyObject() runtime.Object }).DeepCopyObject().(metav1.Object)
		in.SetNamespace(r.ns)
		in.SetUID("")
		in.SetResourceVersion("")
		in.SetCreationTimestamp(metav1.Time{})
		var created metav1.Object
		switch in := in.(type) {
		case *v1beta1.FlinkDeployment:
			created, err = createWithStatus(r.Ctx, r.Flink.FlinkV1beta1().FlinkDeployments(r.ns), in,
				func(c *v1beta1.FlinkDeployment) { c.Status = in.Status })
		case *v1beta1.FlinkSessionJob:
			created, err = createWithStatus(r.Ctx, r.Flink.FlinkV1beta1().FlinkSessionJobs(r.ns), in,
				func(c *v1beta1.FlinkSessionJob) { c.Status = in.Status })
		case *v1beta1.FlinkStateSnapshot:
			created, err = createWithStatus(r.Ctx, r.Flink.FlinkV1beta1().FlinkStateSnapshots(r.ns), in,
				func(c *v1beta1.FlinkStateSnapshot) { c.Status = in.Status })
		case *appsv1.Deployment:
			created, err = r.Kube.AppsV1().Deployments(r.ns).Create(r.Ctx, in, metav1.CreateOptions{})
		case *corev1.ConfigMap:
			created, err = r.Kube.CoreV1().ConfigMaps(r.ns).Create(r.Ctx, in, metav1.CreateOptions{})
		case *corev1.Service:
			in.Spec.ClusterIP, in.Spec.ClusterIPs = "", nil // allocated anew
			created, err = r.Kube.CoreV1().Services(r.ns).Create(r.Ctx, in, metav1.CreateOptions{})
		}
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		if recorded != "" {
			uids[recorded] = string(created.GetUID())
		}
	}
	return objs
}

// statusWriter is a typed client of a resource with a status subresource.
type statusWriter[T any] interface {
	Create(context.Context, T, metav1.CreateOptions) (T, error)
	UpdateStatus(context.Context, T, metav1.UpdateOptions) (T, error)
}

// createWithStatus creates in, then writes the status setStatus gives the
// created object (a create ignores the status of a resource with a status
// subresource).
func createWithStatus[T any](ctx context.Context, w statusWriter[T], in T, setStatus func(T)) (T, error) {
	c, err := w.Create(ctx, in, metav1.CreateOptions{})
	if err != nil {
		return c, err
	}
	setStatus(c)
	return w.UpdateStatus(ctx, c, metav1.UpdateOptions{})
}

// rpcAddressNamespace matches a standalone cluster's JobManager address
// in the recording's namespace, default.
var rpcAddressNamespace = regexp.MustCompile(`(jobmanager\.rpc\.address: [a-z0-9-]+)\.default\b`)

// checkTakenOver checks, for 30 s after this operator started, that the
// FlinkDeployment upstream left is STABLE with no error, still runs jobID
// (unless empty: a session cluster), that the pods of the components
// given are the ones upstream's cluster ran (no new JobManager, no rolled
// TaskManagers) and that also (if not nil) holds; and that no SpecChanged
// or DeploymentError was recorded.
func (r *run) checkTakenOver(name, jobID string, t0 time.Time, also func(), components ...string) {
	t := r.t
	t.Helper()
	pods := map[string][]string{}
	for _, c := range components {
		pods[c] = r.ComponentPods(t, r.ns, name, c)
	}
	t.Logf("%s: %s: upstream's cluster recreated (job %q RUNNING; pods %v) before this operator started, %s after the apply", r.version, name, jobID, pods, time.Since(t0).Round(100*time.Millisecond))
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(3 * time.Second) {
		d, err := r.Flink.FlinkV1beta1().FlinkDeployments(r.ns).Get(r.Ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if d.Status.LifecycleState != v1beta1.LifecycleStable || d.Status.Error != "" ||
			jobID != "" && (d.Status.JobStatus.JobID != jobID || d.Status.JobStatus.State != v1beta1.JobStatusRunning) {
			t.Fatalf("taken over: %s, error %q; want job %q RUNNING, STABLE", summary(d), d.Status.Error, jobID)
		}
		for _, c := range components {
			if now := r.ComponentPods(t, r.ns, name, c); !slices.Equal(now, pods[c]) {
				t.Fatalf("%s pods %v, were %v: replaced after the takeover", c, now, pods[c])
			}
		}
		if also != nil {
			also()
		}
	}
	r.noEvent(name, reasons.ReasonSpecChanged)
	r.noEvent(name, reasons.ReasonDeploymentError)
	t.Logf("%s: %s: taken over without a restart (same job, same pods, STABLE for 30 s), %s after the apply", r.version, name, time.Since(t0).Round(100*time.Millisecond))
}

// savepointAfterTakeover takes a savepoint of the resource taken over by a
// new FlinkStateSnapshot and waits for it to complete.
func (r *run) savepointAfterTakeover(snapshot, kind, target string, t0 time.Time) {
	name := snapshot + "-after-takeover"
	r.apply(`apiVersion: flink.apache.org/v1beta1
kind: FlinkStateSnapshot
metadata:
  name: ` + name + `
  namespace: ` + r.ns + `
spec:
  backoffLimit: 1
  jobReference:
    kind: ` + kind + `
    name: ` + target + `
  savepoint:
    disposeOnDelete: false
`)
	r.WaitFor(r.t, 2*time.Minute, "the savepoint after the takeover COMPLETED", func() (bool, string) {
		s, err := r.Flink.FlinkV1beta1().FlinkStateSnapshots(r.ns).Get(r.Ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return s.Status.State == v1beta1.SnapshotCompleted && s.Status.Path != "", fmt.Sprintf("%+v", s.Status)
	})
	r.t.Logf("%s: %s %s: a new savepoint COMPLETED %s after the apply", r.version, kind, target, time.Since(t0).Round(100*time.Millisecond))
}

// submitAsUpstream submits job to the session cluster's JobManager as
// upstream's operator does: the jar uploaded, then run under the job id
// upstream chose.
func (r *run) submitAsUpstream(session, jobID string, job *v1beta1.JobSpec) {
	t := r.t
	t.Helper()
	base := r.jobManagerURL(session, 3*time.Minute)
	jar, err := http.Get(job.JarURI)
	if err != nil {
		t.Fatal(err)
	}
	defer jar.Body.Close()
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	part, err := mw.CreateFormFile("jarfile", "testjob.jar")
	if err == nil {
		_, err = io.Copy(part, jar.Body)
	}
	if err == nil {
		err = mw.Close()
	}
	if err != nil {
		t.Fatal(err)
	}
	var uploaded struct {
		Filename string `json:"filename"`
	}
	r.postJSON(base+"/jars/upload", mw.FormDataContentType(), &body, &uploaded)
	run, err := json.Marshal(map[string]any{
		"entryClass": job.EntryClass, "programArgsList": job.Args, "parallelism": job.Parallelism, "jobId": jobID,
	})
	if err != nil {
		t.Fatal(err)
	}
	var started struct {
		JobID string `json:"jobid"`
	}
	r.postJSON(base+"/jars/"+filepath.Base(uploaded.Filename)+"/run", "application/json", bytes.NewReader(run), &started)
	if started.JobID != jobID {
		t.Fatalf("submitted as job %q, want upstream's %s", started.JobID, jobID)
	}
}

func (r *run) postJSON(url, contentType string, body io.Reader, into any) {
	r.t.Helper()
	resp, err := (&http.Client{Timeout: time.Minute}).Post(url, contentType, body)
	if err != nil {
		r.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		r.t.Fatalf("POST %s: %s: %s", url, resp.Status, raw)
	}
	if err := json.Unmarshal(raw, into); err != nil {
		r.t.Fatalf("POST %s: %v: %s", url, err, raw)
	}
}

// jobManagerURL is the REST address of the cluster's Ready JobManager pod,
// found without the operator.
func (r *run) jobManagerURL(name string, timeout time.Duration) string {
	r.t.Helper()
	return r.untilJobManager(name, "a JobManager answering", timeout, func(base string, client *http.Client) (bool, string) {
		resp, err := client.Get(base + "/overview")
		if err != nil {
			return false, err.Error()
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, base + ": " + resp.Status
	})
}

// waitJobRunningWithoutOperator waits for the job to run on all its tasks
// on the cluster's Ready JobManager pod, asking its REST API directly.
func (r *run) waitJobRunningWithoutOperator(name, jobID string, timeout time.Duration) {
	r.t.Helper()
	r.untilJobManager(name, "job "+jobID+" RUNNING", timeout, func(base string, client *http.Client) (bool, string) {
		resp, err := client.Get(base + "/jobs/" + jobID)
		if err != nil {
			return false, err.Error()
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
		return running, fmt.Sprintf("job %s %+v %v", jobID, job, err)
	})
}

// untilJobManager polls the Ready JobManager pods of cluster name, found
// without the operator, every second until ok holds for one (given its
// REST address), and returns that address; it fails the test after
// timeout with ok's last word.
func (r *run) untilJobManager(name, what string, timeout time.Duration, ok func(base string, client *http.Client) (bool, string)) string {
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
			base := "http://" + p.Status.PodIP + ":8081"
			var done bool
			if done, last = ok(base, client); done {
				return base
			}
		}
	}
	r.t.Fatalf("%s of %s: not within %s: %s", what, name, timeout, last)
	return ""
}
