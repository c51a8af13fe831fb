package deploymente2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	flinkjvm "github.com/flinkops/flink-operator/e2e/flink"
	"github.com/flinkops/flink-operator/e2e/framework"
	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/controller/jobengine"
)

// TestFailureSurfaced is issue 18 item 1's acceptance test: a
// FlinkDeployment whose entry class is not in its jar. Its JobManager
// crash-loops (the node agent restarts it per restartPolicy and reports
// CrashLoopBackOff); within 30 s of kubectl apply the operator reports
// jobManagerDeploymentStatus ERROR, status.error naming the class, and a
// Warning event saying the same. Then the spec is fixed with kubectl apply:
// the job never ran, so the fixed spec is deployed at once (no savepoint to
// wait for), runs, and status.error clears. Newest pinned Flink only.
func TestFailureSurfaced(t *testing.T) {
	if framework.Kind() {
		t.Skip("local provider only, as TestFlinkDeploymentLifecycle")
	}
	begin := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	versions := flinkjvm.Versions()
	version := versions[len(versions)-1]
	s := &suite{Env: framework.Setup(t, ctx, framework.Options{Name: "failuree2e"})}
	r := s.newRun(t, version, "missing-class")
	fl := flavours[version]
	data := filepath.Join(r.Base, r.ns)
	if err := os.MkdirAll(data, 0o755); err != nil {
		t.Fatal(err)
	}
	fixed := deploymentYAML(r.ns, fl.image, fl.version, data, 1, v1beta1.JobStateRunning)
	const missing = "org.flinkops.e2e.NoSuchJob"
	broken := replaceOnce(t, fixed, "entryClass: "+flinkjvm.TestJobClass, "entryClass: "+missing)

	t0 := time.Now()
	r.apply(broken)
	dep := r.waitDeployment(30*time.Second, "status.error naming the missing class, JobManager ERROR", func(d *v1beta1.FlinkDeployment) bool {
		return strings.Contains(jobengine.ErrorMessage(d.Status.Error), missing) && d.Status.JobManagerDeploymentStatus == v1beta1.JobManagerError
	})
	r.record("apply (missing entry class) → status.error", time.Since(t0))
	t.Logf("status.error: %s", dep.Status.Error)
	var warning *corev1.Event
	r.WaitFor(t, max(30*time.Second-time.Since(t0), time.Second), "a Warning event naming the missing class", func() (bool, string) {
		evs, err := r.Kube.CoreV1().Events(r.ns).List(r.Ctx, metav1.ListOptions{FieldSelector: "involvedObject.kind=FlinkDeployment,involvedObject.name=" + name})
		if err != nil {
			return false, err.Error()
		}
		var seen []string
		for i, e := range evs.Items {
			seen = append(seen, fmt.Sprintf("%s %s: %s", e.Type, e.Reason, e.Message))
			if e.Type == corev1.EventTypeWarning && strings.Contains(e.Message, missing) {
				warning = &evs.Items[i]
				return true, ""
			}
		}
		return false, strings.Join(seen, "; ")
	})
	r.record("apply (missing entry class) → Warning event", time.Since(t0))
	t.Logf("event: %s %s: %s", warning.Type, warning.Reason, warning.Message)
	if warning.Reason != "CrashLoopBackOff" {
		t.Errorf("event reason %s, want CrashLoopBackOff", warning.Reason)
	}
	r.logKubectl("get", "flinkdeployment", "-n", r.ns)

	// The fix: the job never ran, so it is redeployed at once and runs.
	t0 = time.Now()
	r.apply(fixed)
	dep = r.waitDeployment(4*time.Minute, "fixed job RUNNING, lifecycle STABLE, no error", func(d *v1beta1.FlinkDeployment) bool {
		return d.Status.JobStatus.State == v1beta1.JobStatusRunning && d.Status.LifecycleState == v1beta1.LifecycleStable &&
			d.Status.Error == "" && d.Status.JobManagerDeploymentStatus == v1beta1.JobManagerReady
	})
	r.record("apply (fixed) → RUNNING/STABLE", time.Since(t0))
	if p := dep.Status.JobStatus.UpgradeSavepointPath; p != "" {
		t.Errorf("fixed job restored from %q, want its initial (empty) state", p)
	}
	t.Logf("TestFailureSurfaced: %s in all", time.Since(begin).Round(time.Second))
}
