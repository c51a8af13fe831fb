package nativee2e

import (
	"fmt"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/flinkops/flink-operator/e2e/framework"
	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/cluster"
)

// endedJobNotRerun: a native application without HA whose job has ended
// (FAILED: --fail-after, no restarts) keeps its JobManager for
// jm-deployment.shutdown-ttl; when that JobManager's pod is deleted, the
// pod its ReplicaSet starts must not run the ended job again (it would,
// from the restore path in its configuration: issue 36), nor must the
// container restarted in the same pod after its JVM is killed. The
// operator records the ended job in the cluster's ConfigMap and the
// restarted JobManager comes up as a session JobManager: its REST API
// answers with no job, the resource still reports the ended job, FAILED.
func (r *run) endedJobNotRerun() {
	t := r.t
	const name = "ended"
	y := r.testJobYAML(name, 1, "    restart-strategy.type: none\n", `    args: ["--rate", "20", "--keys", "2", "--fail-after", "20"]
    parallelism: 1
    upgradeMode: stateless
`)
	// Without HA, where nothing of Flink's own says the job has ended.
	y = replaceOnce(t, y, "    high-availability.type: kubernetes\n", "")
	y = replaceOnce(t, y, "    high-availability.storageDir: file://"+r.data+"/ha\n", "")
	t0 := time.Now()
	r.apply(y)
	failed := r.waitDeployment(name, 3*time.Minute, "job FAILED (--fail-after, no restarts)", func(d *v1beta1.FlinkDeployment) bool {
		return d.Status.JobStatus.JobID != "" && d.Status.JobStatus.State == v1beta1.JobStatusFailed
	})
	jobID := failed.Status.JobStatus.JobID
	jm, err := r.Kube.AppsV1().Deployments(r.ns).Get(r.Ctx, cluster.JobManagerDeploymentName(name), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	token := cluster.DeployTokenOf(jm)
	if token == "" {
		t.Fatalf("JobManager Deployment %s without the ended-job guard: %q", jm.Name, jm.Spec.Template.Spec.Containers[0].Args)
	}
	r.WaitFor(t, time.Minute, "the ended job recorded in ConfigMap "+cluster.ConfigMapName(name), func() (bool, string) {
		cm, err := r.Kube.CoreV1().ConfigMaps(r.ns).Get(r.Ctx, cluster.ConfigMapName(name), metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return cm.Data[cluster.EndedJobKey] == token, fmt.Sprintf("%s=%q, want %q", cluster.EndedJobKey, cm.Data[cluster.EndedJobKey], token)
	})
	t.Logf("%s: %s: job %s FAILED and recorded %s after the apply", r.version, name, jobID, time.Since(t0).Round(100*time.Millisecond))

	sel := metav1.ListOptions{LabelSelector: cluster.LabelApp + "=" + name + "," + cluster.LabelComponent + "=" + cluster.ComponentJobManager}
	pods, err := r.Kube.CoreV1().Pods(r.ns).List(r.Ctx, sel)
	if err != nil || len(pods.Items) != 1 {
		t.Fatalf("JobManager pods of %s: %s", name, framework.PodNamesOrErr(pods, err))
	}
	pod := pods.Items[0].Name

	// A container restart in the same pod: the JobManager JVM killed.
	proc := r.onlyProcess(r.ns + "/" + pod + "/")
	if err := syscall.Kill(proc.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	t0 = time.Now()
	r.waitNoJobRuns(name, jobID, sel, func(p *corev1.Pod) bool {
		return p.Name == pod && restarts(p) > 0
	})
	t.Logf("%s: %s: JobManager JVM (pid %d) killed; the restarted container answers with no job %s later", r.version, name, proc.PID, time.Since(t0).Round(100*time.Millisecond))

	// A new pod: the old one deleted.
	t0 = time.Now()
	r.kubectl("delete", "pod", pod, "-n", r.ns)
	r.waitNoJobRuns(name, jobID, sel, func(p *corev1.Pod) bool { return p.Name != pod })
	t.Logf("%s: %s: JobManager pod deleted; the new one answers with no job %s later", r.version, name, time.Since(t0).Round(100*time.Millisecond))

	r.kubectl("delete", "flinkdeployment", name, "-n", r.ns, "--wait=false")
	r.waitGone(name, 2*time.Minute)
	r.waitClusterGone(name, 2*time.Minute)
}

// waitNoJobRuns waits for a Ready JobManager pod that is (the restarted
// one) to answer, then watches it long enough for an application to have
// submitted its job: it must list none, and the resource must still
// report the ended job.
func (r *run) waitNoJobRuns(name, jobID string, sel metav1.ListOptions, is func(*corev1.Pod) bool) {
	t := r.t
	var jobs struct {
		Jobs []struct {
			ID    string `json:"jid"`
			State string `json:"state"`
		} `json:"jobs"`
	}
	r.WaitFor(t, 3*time.Minute, "the restarted JobManager answering", func() (bool, string) {
		l, err := r.Kube.CoreV1().Pods(r.ns).List(r.Ctx, sel)
		if err != nil {
			return false, err.Error()
		}
		for i := range l.Items {
			if p := &l.Items[i]; is(p) && framework.PodReady(p) {
				return r.FlinkREST(t, r.ns, name).Get(r.Ctx, "/jobs/overview", &jobs) == nil, "REST not answering yet"
			}
		}
		return false, framework.PodNames(l.Items)
	})
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(2 * time.Second) {
		if err := r.FlinkREST(t, r.ns, name).Get(r.Ctx, "/jobs/overview", &jobs); err != nil {
			t.Fatalf("restarted JobManager: %v", err)
		}
		if len(jobs.Jobs) > 0 {
			t.Fatalf("the restarted JobManager runs %+v: the ended job %s ran again", jobs.Jobs, jobID)
		}
		d, err := r.Flink.FlinkV1beta1().FlinkDeployments(r.ns).Get(r.Ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if js := d.Status.JobStatus; js.JobID != jobID || js.State != v1beta1.JobStatusFailed {
			t.Fatalf("after the JobManager's restart the resource reports job %s %s, want %s FAILED", js.JobID, js.State, jobID)
		}
	}
}

func restarts(p *corev1.Pod) int32 {
	var n int32
	for _, c := range p.Status.ContainerStatuses {
		n += c.RestartCount
	}
	return n
}
