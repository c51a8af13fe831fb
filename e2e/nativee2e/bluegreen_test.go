package nativee2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"syscall"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/flinkops/flink-operator/e2e/framework"
	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/reasons"
)

// blueGreen (the last line): a FlinkBlueGreenDeployment of the counting
// test job on real Flink, with an Ingress of upstream's e2e form:
//
//   - created: ACTIVE_BLUE, the blue child RUNNING, the Ingress leading to
//     its JobManager (the local cluster's ingress serves it);
//   - an operator option added: blue patched in place, no transition;
//   - a change that needs state: SAVEPOINTING_BLUE → TRANSITIONING_TO_GREEN
//     (the operator killed with SIGKILL there and started again) →
//     ACTIVE_GREEN: green started from the transition savepoint (a
//     FlinkStateSnapshot), its keyed counter continues blue's, blue
//     deleted, the Ingress on green;
//   - a change to an image the node cannot run: aborted after the grace
//     period, green still active and untouched, the new blue suspended, a
//     Warning and status.error;
//   - fixed, stateless: GREEN → BLUE with no savepoint, the Ingress back
//     on blue.
func (r *run) blueGreen() {
	t := r.t
	const name = "bg"
	good := framework.Flavours[r.version].Image
	// grace is the abort grace period: long enough for a good child to
	// start on a loaded machine, short for the broken change.
	manifest := func(image, mode, slots, extraConf, grace string) string {
		fd := r.testJobYAML(name, 1, fmt.Sprintf(`    state.backend.type: hashmap
    execution.checkpointing.interval: 2 s
    execution.checkpointing.dir: file://%[1]s/checkpoints
    execution.checkpointing.savepoint-dir: file://%[1]s/savepoints
%[2]s`, r.data, extraConf), fmt.Sprintf(`    args: ["--rate", "10", "--keys", "%d"]
    parallelism: 1
    upgradeMode: %s
`, keys, mode))
		fd = strings.Replace(fd, `taskmanager.numberOfTaskSlots: "1"`, `taskmanager.numberOfTaskSlots: "`+slots+`"`, 1)
		fd = strings.Replace(fd, "image: "+good, "image: "+image, 1)
		_, spec, _ := strings.Cut(fd, "\nspec:\n")
		return fmt.Sprintf(`apiVersion: flink.apache.org/v1beta1
kind: FlinkBlueGreenDeployment
metadata:
  name: %s
  namespace: %s
spec:
  configuration:
    kubernetes.operator.bluegreen.abort.grace-period: %s
    kubernetes.operator.bluegreen.reconciliation.reschedule-interval: 2 s
  ingress:
    template: "/{{namespace}}/{{name}}(/|$)(.*)"
    className: nginx
    annotations:
      nginx.ingress.kubernetes.io/rewrite-target: "/$2"
  template:
    spec:
%s`, name, r.ns, grace, indent(spec, "    "))
	}
	state := func(want v1beta1.FlinkBlueGreenDeploymentState, timeout time.Duration) *v1beta1.FlinkBlueGreenDeployment {
		t.Helper()
		var bg *v1beta1.FlinkBlueGreenDeployment
		r.WaitFor(t, timeout, "FlinkBlueGreenDeployment "+name+" "+string(want), func() (bool, string) {
			got, err := r.Flink.FlinkV1beta1().FlinkBlueGreenDeployments(r.ns).Get(r.Ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			bg = got
			return got.Status.BlueGreenState == want, fmt.Sprintf("%s job %s error %q", got.Status.BlueGreenState, got.Status.JobStatus.State, got.Status.Error)
		})
		return bg
	}
	// The job the Ingress leads to.
	ingressJob := func() string {
		t.Helper()
		var jobID string
		r.WaitFor(t, time.Minute, "a job through the Ingress", func() (bool, string) {
			resp, err := http.Get("http://" + r.Local.IngressAddress + "/" + r.ns + "/" + name + "/jobs/overview")
			if err != nil {
				return false, err.Error()
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			var overview struct {
				Jobs []struct {
					JID   string `json:"jid"`
					State string `json:"state"`
				} `json:"jobs"`
			}
			if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &overview) != nil {
				return false, fmt.Sprintf("%d %s", resp.StatusCode, body)
			}
			for _, j := range overview.Jobs {
				if j.State == "RUNNING" {
					jobID = j.JID
					return true, ""
				}
			}
			return false, string(body)
		})
		return jobID
	}
	child := func(side string) *v1beta1.FlinkDeployment {
		return r.getDeployment(name + "-" + side)
	}

	t0 := time.Now()
	r.apply(manifest(good, "savepoint", "1", "", "3 min"))
	bg := state(v1beta1.BlueGreenActiveBlue, 4*time.Minute)
	blue := child("blue")
	if bg.Status.JobStatus.State != v1beta1.JobStatusRunning || bg.Status.JobStatus.JobID != blue.Status.JobStatus.JobID {
		t.Fatalf("ACTIVE_BLUE: job %+v, blue's %+v", bg.Status.JobStatus, blue.Status.JobStatus)
	}
	if got := ingressJob(); got != blue.Status.JobStatus.JobID {
		t.Fatalf("the Ingress leads to job %s, blue runs %s", got, blue.Status.JobStatus.JobID)
	}
	t.Logf("%s: %s ACTIVE_BLUE %s after the apply; the Ingress leads to blue's job", r.version, name, time.Since(t0).Round(time.Second))

	// In place: an operator option.
	const option = "    kubernetes.operator.savepoint.history.max.count: \"7\"\n"
	r.apply(manifest(good, "savepoint", "1", option, "3 min"))
	r.WaitFor(t, time.Minute, "blue patched in place", func() (bool, string) {
		b := child("blue")
		return strings.Contains(string(b.Spec.FlinkConfiguration.Raw), "history.max.count"), string(b.Spec.FlinkConfiguration.Raw)
	})
	if b := child("blue"); b.UID != blue.UID || b.Status.JobStatus.JobID != blue.Status.JobStatus.JobID {
		t.Fatalf("the in-place patch replaced blue or its job: %s", summary(b))
	}
	if _, err := r.Flink.FlinkV1beta1().FlinkDeployments(r.ns).Get(r.Ctx, name+"-green", metav1.GetOptions{}); err == nil {
		t.Fatalf("an in-place patch created a green child")
	}
	blueREST := r.FlinkREST(t, r.ns, name+"-blue")
	before := r.counterAtCheckpoint(blueREST, blue.Status.JobStatus.JobID)

	// A change that needs state, the operator killed mid-transition.
	t0 = time.Now()
	r.apply(manifest(good, "savepoint", "2", option, "3 min"))
	bg = state(v1beta1.BlueGreenTransitioningToGreen, 3*time.Minute)
	if err := r.Op.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-r.Op.Done()
	t.Logf("%s: %s: operator killed (SIGKILL) in TRANSITIONING_TO_GREEN; starting it again", r.version, name)
	r.RestartOperator(t)
	bg = state(v1beta1.BlueGreenActiveGreen, 4*time.Minute)
	green := child("green")
	snaps, err := r.Flink.FlinkV1beta1().FlinkStateSnapshots(r.ns).List(r.Ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var transition []v1beta1.FlinkStateSnapshot
	for _, s := range snaps.Items {
		if s.Spec.JobReference != nil && s.Spec.JobReference.Name == name+"-blue" {
			transition = append(transition, s)
		}
	}
	if len(transition) != 1 || transition[0].Status.State != v1beta1.SnapshotCompleted ||
		green.Spec.Job.InitialSavepointPath != strings.Replace(transition[0].Status.Path, "file:", "", 1) {
		t.Fatalf("green restores from %q; transition savepoints of blue: %+v", green.Spec.Job.InitialSavepointPath, transition)
	}
	r.WaitFor(t, 2*time.Minute, "blue deleted", func() (bool, string) {
		_, err := r.Flink.FlinkV1beta1().FlinkDeployments(r.ns).Get(r.Ctx, name+"-blue", metav1.GetOptions{})
		return err != nil, fmt.Sprint(err)
	})
	r.checkCounterContinued(r.FlinkREST(t, r.ns, name+"-green"), green.Status.JobStatus.JobID, before)
	if got := ingressJob(); got != green.Status.JobStatus.JobID {
		t.Fatalf("the Ingress leads to job %s, green runs %s", got, green.Status.JobStatus.JobID)
	}
	t.Logf("%s: %s ACTIVE_GREEN %s after the change (from savepoint %s); counter continued, blue deleted, Ingress on green",
		r.version, name, time.Since(t0).Round(time.Second), transition[0].Status.Path)

	// A change the node cannot run: aborted after the grace period.
	t0 = time.Now()
	r.apply(manifest("flink:9.9", "savepoint", "3", option, "15 s"))
	state(v1beta1.BlueGreenTransitioningToBlue, 3*time.Minute)
	r.WaitFor(t, 3*time.Minute, "the transition aborted", func() (bool, string) {
		got, err := r.Flink.FlinkV1beta1().FlinkBlueGreenDeployments(r.ns).Get(r.Ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		bg = got
		return got.Status.BlueGreenState == v1beta1.BlueGreenActiveGreen && strings.Contains(got.Status.Error, "Aborting"),
			fmt.Sprintf("%s %q", got.Status.BlueGreenState, got.Status.Error)
	})
	r.waitWarning(name, reasons.ReasonBlueGreenAborted, "Aborting deployment '"+name+"-blue'", time.Minute)
	if g := child("green"); g.UID != green.UID || g.Generation != green.Generation || g.Status.JobStatus.JobID != green.Status.JobStatus.JobID ||
		g.Status.JobStatus.State != v1beta1.JobStatusRunning {
		t.Fatalf("the abort touched green: %s", summary(g))
	}
	r.WaitFor(t, time.Minute, "the aborted blue suspended", func() (bool, string) {
		b := child("blue")
		return b.Spec.Job.State == v1beta1.JobStateSuspended, summary(b)
	})
	t.Logf("%s: %s: a broken change aborted %s after the apply: %s", r.version, name, time.Since(t0).Round(time.Second), bg.Status.Error)

	// Fixed, stateless: back to blue with no savepoint.
	t0 = time.Now()
	r.apply(manifest(good, "stateless", "1", option, "3 min"))
	bg = state(v1beta1.BlueGreenActiveBlue, 4*time.Minute)
	blue = child("blue")
	if bg.Status.Error != "" || blue.Spec.Job.InitialSavepointPath != "" || blue.Spec.Job.State == v1beta1.JobStateSuspended {
		t.Fatalf("stateless transition: error %q, blue %s restore %q", bg.Status.Error, summary(blue), blue.Spec.Job.InitialSavepointPath)
	}
	if got := ingressJob(); got != blue.Status.JobStatus.JobID {
		t.Fatalf("the Ingress leads to job %s, blue runs %s", got, blue.Status.JobStatus.JobID)
	}
	r.WaitFor(t, 2*time.Minute, "green deleted", func() (bool, string) {
		_, err := r.Flink.FlinkV1beta1().FlinkDeployments(r.ns).Get(r.Ctx, name+"-green", metav1.GetOptions{})
		return err != nil, fmt.Sprint(err)
	})
	t.Logf("%s: %s: stateless change ACTIVE_BLUE %s after the apply, Ingress on blue", r.version, name, time.Since(t0).Round(time.Second))
	r.kubectl("delete", "flinkbluegreendeployment", name, "-n", r.ns, "--wait=false")
	r.waitGone(name+"-blue", 2*time.Minute)
}

// indent prefixes every non-empty line of s.
func indent(s, prefix string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		if l != "" {
			lines[i] = prefix + l
		}
	}
	return strings.Join(lines, "\n")
}
