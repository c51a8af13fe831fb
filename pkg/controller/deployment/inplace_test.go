package deployment

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/cluster"
	"github.com/flinkops/flink-operator/pkg/config"
	"github.com/flinkops/flink-operator/pkg/flink"
	"github.com/flinkops/flink-operator/pkg/flink/fakejm"
	"github.com/flinkops/flink-operator/pkg/reasons"
)

// In-place scaling (kubernetes.operator.job.upgrade.inplace-scaling.enabled,
// default true): a change of only pipeline.jobvertex-parallelism-overrides
// of a job on the adaptive scheduler is a PUT of the job's resource
// requirements, not an upgrade.

var srcVertex, sinkVertex = fakejm.VertexID(0), fakejm.VertexID(1)

// adaptive is an application on the adaptive scheduler with an override
// for the source vertex.
func (f *fixture) adaptive(name string, kv ...string) *v1beta1.FlinkDeployment {
	d := f.application(name, v1beta1.UpgradeModeSavepoint)
	setConf(&d.Spec, append([]string{"jobmanager.scheduler", "adaptive", config.FlinkParallelismOverrides, srcVertex + ":1"}, kv...)...)
	return d
}

func overrides(v string) func(*v1beta1.FlinkDeploymentSpec) {
	return func(spec *v1beta1.FlinkDeploymentSpec) { setConf(spec, config.FlinkParallelismOverrides, v) }
}

func (f *fixture) taskManagerDeployment(name string) *appsv1.Deployment {
	f.T.Helper()
	d, err := f.Kube.AppsV1().Deployments(ns).Get(f.Ctx, cluster.TaskManagerDeploymentName(name), metav1.GetOptions{})
	if err != nil {
		f.T.Fatal(err)
	}
	return d
}

func scaledTo(gen int64) func(*v1beta1.FlinkDeployment) bool {
	return func(d *v1beta1.FlinkDeployment) bool {
		return upgradedTo(gen)(d) && strings.Contains(d.Status.ReconciliationStatus.LastReconciledSpec, config.FlinkParallelismOverrides)
	}
}

func TestInPlaceScaling(t *testing.T) {
	f := newFixture(t)
	before := f.Deploy(f.adaptive("job"))
	jm, tm := f.jm("job"), f.taskManagerDeployment("job")
	jmUID := f.jmDeployment("job").UID

	f.edit("job", overrides(srcVertex+":3"))
	f.Step("job")
	after := f.Get("job")
	if !upgradedTo(2)(after) || !strings.Contains(after.Status.ReconciliationStatus.LastReconciledSpec, srcVertex+":3") {
		t.Fatalf("not recorded as deployed in one sync: %s, spec %s", statusString(after), after.Status.ReconciliationStatus.LastReconciledSpec)
	}
	if after.Status.JobStatus.JobID != before.Status.JobStatus.JobID || f.jm("job") != jm || f.jmDeployment("job").UID != jmUID {
		t.Errorf("the job was redeployed: job %s -> %s", before.Status.JobStatus.JobID, after.Status.JobStatus.JobID)
	}
	if n := f.stops(); n != 0 {
		t.Errorf("%d stop-with-savepoint operations", n)
	}
	got, err := jm.ResourceRequirements(jm.jobID)
	if err != nil {
		t.Fatal(err)
	}
	if src, sink := got[srcVertex].Parallelism, got[sinkVertex].Parallelism; src != (flink.Parallelism{LowerBound: 1, UpperBound: 3}) || sink != (flink.Parallelism{LowerBound: 1, UpperBound: 1}) {
		t.Errorf("resource requirements: source %+v, sink %+v", src, sink)
	}
	if n := countEvents(f.Events(), "Normal "+reasons.ReasonScaling+" In-place scaling triggered"); n != 1 {
		t.Errorf("%d Scaling events: %v", n, f.Events())
	}

	// The steady state keeps the job and its TaskManagers: the ConfigMap
	// follows the recorded spec, the TaskManager pods are not rolled.
	for range 3 {
		f.Step("job")
	}
	if d := f.Get("job"); d.Status.JobStatus.JobID != before.Status.JobStatus.JobID || !running(d) {
		t.Errorf("after the scale: %s", statusString(d))
	}
	if now := f.taskManagerDeployment("job"); now.Annotations[cluster.AnnotationSpecHash] != tm.Annotations[cluster.AnnotationSpecHash] {
		t.Errorf("the TaskManager Deployment was changed (its pods roll)")
	}
	cm, err := f.Kube.CoreV1().ConfigMaps(ns).Get(f.Ctx, cluster.ConfigMapName("job"), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(mapValues(cm.Data), "\n"), srcVertex+":3") {
		t.Errorf("the ConfigMap does not carry the new overrides")
	}
	if n := len(jm.RequestsTo(fakejm.RouteResourceRequirementsUpdate)); n != 1 {
		t.Errorf("%d PUTs, want 1", n)
	}
}

func mapValues(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for _, v := range m {
		out = append(out, v)
	}
	return out
}

// Whenever in-place scaling does not apply, the change is an upgrade: a
// new job from a savepoint.
func TestInPlaceScalingFallsBackToUpgrade(t *testing.T) {
	for _, tc := range []struct {
		name   string
		deploy []string // extra configuration
		change func(*v1beta1.FlinkDeploymentSpec)
		pre    func(*fixture, *v1beta1.FlinkDeployment) // before the deploy
		jm     func(*fixture)                           // once deployed
		puts   int
	}{
		{name: "disabled", deploy: []string{config.KeyJobUpgradeInPlaceScalingEnabled, "false"}, change: overrides(srcVertex + ":3")},
		{name: "default scheduler", deploy: []string{"jobmanager.scheduler", "default"}, change: overrides(srcVertex + ":3")},
		{name: "override removed", change: overrides(sinkVertex + ":2")},
		{name: "other change too", change: func(spec *v1beta1.FlinkDeploymentSpec) { overrides(srcVertex + ":3")(spec); newArgs(spec) }},
		{name: "Flink 1.17", change: overrides(srcVertex + ":3"), pre: func(f *fixture, d *v1beta1.FlinkDeployment) {
			d.Spec.FlinkVersion, d.Spec.Image, f.jmOpt.Version = v1beta1.FlinkVersion1_17, "flink:1.17", flink.V1_17
		}},
		{name: "PUT fails", puts: 1, change: overrides(srcVertex + ":3"), jm: func(f *fixture) {
			f.jm("job").InjectFault(fakejm.Fault{Route: fakejm.RouteResourceRequirementsUpdate, Status: http.StatusInternalServerError, Times: 1})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			d := f.adaptive("job", tc.deploy...)
			if tc.pre != nil {
				tc.pre(f, d)
			}
			before := f.Deploy(d)
			jm := f.jm("job")
			if tc.jm != nil {
				tc.jm(f)
			}
			f.checkpoint("job")
			f.edit("job", tc.change)
			after := f.Until("job", 30, "upgrade", upgradedTo(2))
			if after.Status.JobStatus.JobID == before.Status.JobStatus.JobID {
				t.Errorf("job id kept: no upgrade")
			}
			if n := f.stops(); n != 1 {
				t.Errorf("%d stop-with-savepoint operations, want 1", n)
			}
			if n := len(jm.RequestsTo(fakejm.RouteResourceRequirementsUpdate)); n != tc.puts {
				t.Errorf("%d PUTs, want %d", n, tc.puts)
			}
			if n := countEvents(f.Events(), "Normal "+reasons.ReasonScaling+" "); n != 0 {
				t.Errorf("%d Scaling events", n)
			}
		})
	}
}

// A crash between the PUT and the status write that records the new spec
// (here: the status write fails) leaves the spec unrecorded; the next sync
// finds the job already scaled and records it, without a second PUT or a
// restart.
func TestInPlaceScalingStatusWriteLost(t *testing.T) {
	f := newFixture(t)
	before := f.Deploy(f.adaptive("job"))
	jm := f.jm("job")
	f.edit("job", overrides(srcVertex+":2"))
	failed := false
	f.Client.PrependReactor("update", "flinkdeployments", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if u, ok := a.(k8stesting.UpdateAction); ok && u.GetSubresource() == "status" && !failed {
			failed = true
			return true, nil, errors.New("connection lost")
		}
		return false, nil, nil
	})
	if _, err := f.Sync("job"); err == nil || !failed {
		t.Fatalf("the status write did not fail: %v", err)
	}
	if d := f.Get("job"); d.Status.ObservedGeneration != 1 {
		t.Fatalf("recorded although the write failed: %s", statusString(d))
	}
	after := f.Until("job", 5, "scaled", scaledTo(2))
	if after.Status.JobStatus.JobID != before.Status.JobStatus.JobID || f.jm("job") != jm || f.stops() != 0 {
		t.Errorf("redeployed: %s", statusString(after))
	}
	if n := len(jm.RequestsTo(fakejm.RouteResourceRequirementsUpdate)); n != 1 {
		t.Errorf("%d PUTs, want 1 (the bounds were already set)", n)
	}
	if got, _ := jm.ResourceRequirements(jm.jobID); got[srcVertex].Parallelism.UpperBound != 2 {
		t.Errorf("requirements %+v", got)
	}
}
