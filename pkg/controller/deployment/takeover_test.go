package deployment

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/cluster"
	"github.com/flinkops/flink-operator/pkg/controller/jobengine"
	"github.com/flinkops/flink-operator/pkg/flink"
	"github.com/flinkops/flink-operator/pkg/reasons"
)

// Switching in place from the Apache Flink Kubernetes Operator (issue 38):
// this operator starts where upstream's stopped, on the resources and
// cluster objects upstream left.
//
// The cluster is deployed by this operator first (the fake JobManager runs
// its job), then made what upstream leaves: the status of
// testdata/takeover (upstream's lastReconciledSpec, written by hand from
// its serializer), and the owner references Flink's native client writes
// when upstream deploys: the JobManager Deployment owned by the
// FlinkDeployment through kubernetes.jobmanager.owner.reference, which
// upstream's AbstractFlinkResourceReconciler.setOwnerReference sets with
// controller false and blockOwnerDeletion true (Flink's
// KubernetesOwnerReference.fromMap reads them), and the Services and
// ConfigMaps controlled by that Deployment
// (Fabric8FlinkKubeClient.createJobManagerComponent: controller and
// blockOwnerDeletion true). None of the operator's annotations are left on
// them: Flink writes none.

// takeoverFixture is the native fixture with the garbage collector
// deleting the Services and ConfigMaps of a deleted Deployment too, as
// Kubernetes does for those Flink's client owns through the JobManager.
type takeoverFixture struct {
	*nativeFixture
}

func newTakeoverFixture(t *testing.T) *takeoverFixture {
	f := &takeoverFixture{nativeFixture: newNativeFixture(t)}
	tick := f.Tick
	f.Tick = func() {
		tick()
		f.collectDependents()
	}
	return f
}

// collectDependents deletes the Services and ConfigMaps whose controller is
// a Deployment that is gone.
func (f *takeoverFixture) collectDependents() {
	f.T.Helper()
	deps, err := f.Kube.AppsV1().Deployments(ns).List(f.Ctx, metav1.ListOptions{})
	if err != nil {
		f.T.Fatal(err)
	}
	live := map[types.UID]bool{}
	for _, d := range deps.Items {
		live[d.UID] = true
	}
	gone := func(o metav1.Object) bool {
		ref := metav1.GetControllerOf(o)
		return ref != nil && ref.Kind == "Deployment" && !live[ref.UID]
	}
	svcs, err := f.Kube.CoreV1().Services(ns).List(f.Ctx, metav1.ListOptions{})
	if err != nil {
		f.T.Fatal(err)
	}
	for _, s := range svcs.Items {
		if gone(&s) {
			if err := f.Kube.CoreV1().Services(ns).Delete(f.Ctx, s.Name, metav1.DeleteOptions{}); err != nil {
				f.T.Fatal(err)
			}
		}
	}
	cms, err := f.Kube.CoreV1().ConfigMaps(ns).List(f.Ctx, metav1.ListOptions{})
	if err != nil {
		f.T.Fatal(err)
	}
	for _, cm := range cms.Items {
		if gone(&cm) {
			if err := f.Kube.CoreV1().ConfigMaps(ns).Delete(f.Ctx, cm.Name, metav1.DeleteOptions{}); err != nil {
				f.T.Fatal(err)
			}
		}
	}
}

// upstreamResource reads testdata/takeover/file with its ${...} filled in.
func (f *takeoverFixture) upstreamResource(file string, vars map[string]string) *v1beta1.FlinkDeployment {
	f.T.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "takeover", file))
	if err != nil {
		f.T.Fatal(err)
	}
	text := os.Expand(string(b), func(k string) string {
		if v, ok := vars[k]; ok {
			return v
		}
		return "0"
	})
	d := &v1beta1.FlinkDeployment{}
	if err := yaml.Unmarshal([]byte(text), d); err != nil {
		f.T.Fatal(err)
	}
	d.Namespace = ns
	return d
}

// deployAsUpstream deploys the resource of file, running, and returns it.
func (f *takeoverFixture) deployAsUpstream(file string) *v1beta1.FlinkDeployment {
	f.T.Helper()
	d := f.upstreamResource(file, map[string]string{"DIR": f.Dir})
	d.Status = v1beta1.FlinkDeploymentStatus{}
	d.Generation = 1
	d.Spec.Job.State = ""
	return f.Deploy(d)
}

// leaveAsUpstream gives the resource upstream's spec and status of file
// and its cluster objects Flink's owner references, then restarts the
// operator (a new process takes over).
func (f *takeoverFixture) leaveAsUpstream(file string, vars map[string]string) *v1beta1.FlinkDeployment {
	f.T.Helper()
	vars["DIR"] = f.Dir
	up := f.upstreamResource(file, vars)
	cur := f.Get(up.Name)
	cur.Spec, cur.Generation = up.Spec, up.Generation
	cur, err := f.Client.FlinkV1beta1().FlinkDeployments(ns).Update(f.Ctx, cur, metav1.UpdateOptions{})
	if err != nil {
		f.T.Fatal(err)
	}
	cur.Status = up.Status
	if _, err := f.Client.FlinkV1beta1().FlinkDeployments(ns).UpdateStatus(f.Ctx, cur, metav1.UpdateOptions{}); err != nil {
		f.T.Fatal(err)
	}
	f.flinkOwnerReferences(cur)
	f.Restart()
	return f.Get(up.Name)
}

// flinkOwnerReferences makes dep's cluster objects owned as Flink's native
// client owns them when upstream deploys.
func (f *takeoverFixture) flinkOwnerReferences(dep *v1beta1.FlinkDeployment) {
	f.T.Helper()
	jm := f.jmDeployment(dep.Name)
	jm.Annotations = nil
	jm.OwnerReferences = []metav1.OwnerReference{{
		APIVersion: "flink.apache.org/v1beta1", Kind: "FlinkDeployment", Name: dep.Name, UID: dep.UID,
		Controller: ptr.To(false), BlockOwnerDeletion: ptr.To(true),
	}}
	jm, err := f.Kube.AppsV1().Deployments(ns).Update(f.Ctx, jm, metav1.UpdateOptions{})
	if err != nil {
		f.T.Fatal(err)
	}
	byJM := []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: jm.Name, UID: jm.UID,
		Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}}
	for _, name := range []string{cluster.RPCServiceName(dep.Name), cluster.RESTServiceName(dep.Name)} {
		svc, err := f.Kube.CoreV1().Services(ns).Get(f.Ctx, name, metav1.GetOptions{})
		if err != nil {
			f.T.Fatal(err)
		}
		svc.Annotations, svc.OwnerReferences = nil, byJM
		if _, err := f.Kube.CoreV1().Services(ns).Update(f.Ctx, svc, metav1.UpdateOptions{}); err != nil {
			f.T.Fatal(err)
		}
	}
	for _, name := range []string{cluster.ConfigMapName(dep.Name), cluster.PodTemplateConfigMapName(dep.Name)} {
		cm, err := f.Kube.CoreV1().ConfigMaps(ns).Get(f.Ctx, name, metav1.GetOptions{})
		if err != nil {
			continue // no pod template: no pod-template-<name>
		}
		cm.Annotations, cm.OwnerReferences = nil, byJM
		if _, err := f.Kube.CoreV1().ConfigMaps(ns).Update(f.Ctx, cm, metav1.UpdateOptions{}); err != nil {
			f.T.Fatal(err)
		}
	}
}

// step is Step that returns the delete requests the operator's sync sent
// (not those of the world: Flink's own clean-up, the garbage collector).
func (f *takeoverFixture) step(name string) []string {
	f.T.Helper()
	f.Kube.ClearActions()
	d := f.MustSync(name)
	deleted := f.deletes()
	f.Tick()
	f.Clock.Step(max(min(d, 30*time.Second), time.Second))
	return deleted
}

// deletes are the delete requests sent to Kubernetes since the actions
// were last cleared.
func (f *takeoverFixture) deletes() []string {
	var out []string
	for _, a := range f.Kube.Actions() {
		if d, ok := a.(k8stesting.DeleteAction); ok {
			out = append(out, d.GetResource().Resource+"/"+d.GetName())
		}
		if a.GetVerb() == "delete-collection" {
			out = append(out, a.GetResource().Resource+"/*")
		}
	}
	return out
}

// noTakeoverTrouble fails the test on what issue 38 saw at takeover: an
// upgrade started (SpecChanged) or a DeploymentError.
func noTakeoverTrouble(t *testing.T, f *takeoverFixture, when string) {
	t.Helper()
	events := f.Events()
	for _, reason := range []string{reasons.ReasonSpecChanged, reasons.ReasonDeploymentError} {
		for _, e := range events {
			if strings.Contains(e, " "+reason+" ") {
				t.Fatalf("%s: event %q", when, e)
			}
		}
	}
	if msg := jobengine.ErrorMessage(f.Get("run").Status.Error); msg != "" {
		t.Fatalf("%s: status.error %q", when, msg)
	}
}

// TestTakeOverRunningApplicationFromUpstream: a running native application
// that upstream's operator deployed is kept running as it is: the first
// syncs record no spec change, start no upgrade (no stop, the same
// JobManager Deployment and process, the same job), delete nothing and
// report no DeploymentError, although upstream's lastReconciledSpec has
// another form (job.state "running", jobManager.replicas 1, nulls) and the
// JobManager Deployment's owner reference to the FlinkDeployment is not a
// controller reference.
func TestTakeOverRunningApplicationFromUpstream(t *testing.T) {
	f := newTakeoverFixture(t)
	deployed := f.deployAsUpstream("running.yaml")
	jobID := deployed.Status.JobStatus.JobID
	now := strconv.FormatInt(f.Clock.Now().UnixMilli(), 10)
	up := f.leaveAsUpstream("running.yaml", map[string]string{"JOBID": jobID, "NOW_MS": now})
	record := up.Status.ReconciliationStatus.LastReconciledSpec
	if !strings.Contains(record, `"state":"running"`) || !strings.Contains(record, `"replicas":1`) {
		t.Fatalf("not upstream's record: %s", record)
	}
	jmUID, process := f.jmDeployment("run").UID, f.jm("run")
	f.Events() // drained: what the takeover syncs record is looked at

	for i := range 10 {
		deleted := f.step("run")
		when := "sync " + strconv.Itoa(i+1)
		noTakeoverTrouble(t, f, when)
		got := f.Get("run")
		rs := got.Status.ReconciliationStatus
		if rs.State != v1beta1.ReconciliationDeployed || rs.LastReconciledSpec != record {
			t.Fatalf("%s: reconciliation %s, lastReconciledSpec %s; want upstream's record kept", when, rs.State, rs.LastReconciledSpec)
		}
		if js := got.Status.JobStatus; js.JobID != jobID || js.State != v1beta1.JobStatusRunning {
			t.Fatalf("%s: %s", when, statusString(got))
		}
		if jm := f.jmDeployment("run"); jm.UID != jmUID || f.jm("run") != process || f.stops() != 0 {
			t.Fatalf("%s: the JobManager was replaced or the job stopped (%d stops)", when, f.stops())
		}
		if len(deleted) != 0 {
			t.Fatalf("%s: deleted %v", when, deleted)
		}
	}
	if got := f.Get("run"); !running(got) || got.Status.JobManagerDeploymentStatus != v1beta1.JobManagerReady {
		t.Errorf("after the takeover: %s", statusString(got))
	}
	if owners := f.jmDeployment("run").OwnerReferences; len(owners) != 1 || owners[0].Controller == nil || *owners[0].Controller {
		t.Errorf("the JobManager Deployment's owner references changed: %+v", owners)
	}
}

// TestTakeOverSuspendedApplicationFromUpstream: an application upstream's
// operator suspended with a savepoint still has its JobManager Deployment
// (the job FINISHED in it, until upstream's shutdown-ttl), owned as Flink's
// client owns it. Taken over, it stays suspended without an error and
// without anything deleted, and resumes when asked: the old JobManager
// Deployment goes (with the Services and ConfigMaps it owns) and the new
// job restores from upstream's suspend savepoint.
func TestTakeOverSuspendedApplicationFromUpstream(t *testing.T) {
	f := newTakeoverFixture(t)
	deployed := f.deployAsUpstream("suspended.yaml")
	jobID := deployed.Status.JobStatus.JobID

	// Upstream's suspend: stop-with-savepoint, the cluster kept.
	client, err := flink.New(flink.Config{BaseURL: f.jm("run").URL(), Version: flink.V1_20})
	if err != nil {
		t.Fatal(err)
	}
	trigger, err := client.StopWithSavepoint(f.Ctx, jobID, flink.StopRequest{TargetDirectory: "file://" + filepath.Join(f.Dir, "savepoints")})
	if err != nil {
		t.Fatal(err)
	}
	var res flink.SavepointResult
	for range 5 {
		if res, err = client.SavepointStatus(f.Ctx, jobID, trigger); err != nil || !res.Pending() {
			break
		}
	}
	if err != nil || !res.Succeeded() {
		t.Fatalf("stop-with-savepoint: %+v, %v", res, err)
	}
	savepoint := res.Value
	if st, _ := f.jm("run").JobState(jobID); st != flink.JobFinished {
		t.Fatalf("job %s after the stop", st)
	}
	now := strconv.FormatInt(f.Clock.Now().UnixMilli(), 10)
	f.leaveAsUpstream("suspended.yaml", map[string]string{"JOBID": jobID, "NOW_MS": now, "SAVEPOINT": savepoint})
	oldJM := f.jmDeployment("run").UID
	f.Events() // drained: what the takeover syncs record is looked at

	for i := range 5 {
		deleted := f.step("run")
		when := "suspended, sync " + strconv.Itoa(i+1)
		noTakeoverTrouble(t, f, when)
		got := f.Get("run")
		if got.Status.LifecycleState != v1beta1.LifecycleSuspended || got.Status.ReconciliationStatus.State != v1beta1.ReconciliationDeployed {
			t.Fatalf("%s: %s", when, statusString(got))
		}
		if len(deleted) != 0 {
			t.Fatalf("%s: deleted %v", when, deleted)
		}
	}

	f.edit("run", func(s *v1beta1.FlinkDeploymentSpec) { s.Job.State = v1beta1.JobStateRunning })
	resumed := f.Until("run", 30, "resumed", func(d *v1beta1.FlinkDeployment) bool {
		for _, e := range f.Events() {
			if strings.Contains(e, " "+reasons.ReasonDeploymentError+" ") {
				t.Fatalf("resuming: event %q", e)
			}
		}
		return running(d)
	})
	if restored, meta := f.restoredFrom("run"); restored != savepoint || !meta.Savepoint || meta.JobID != jobID {
		t.Errorf("resumed from %q (%+v), want upstream's suspend savepoint %s", restored, meta, savepoint)
	}
	jm := f.jmDeployment("run")
	if jm.UID == oldJM || !ownedBy(jm, resumed) {
		t.Errorf("JobManager Deployment %s (owners %+v) after the resume; old %s", jm.UID, jm.OwnerReferences, oldJM)
	}
	if resumed.Status.JobStatus.JobID == jobID {
		t.Errorf("resumed under the stopped job's id %s", jobID)
	}
}

// TestOwnedBy pins which objects are a FlinkDeployment's: an owner
// reference to it with or without the controller flag (the operator's, or
// Flink's client's as upstream configures it), and no other controller;
// the Services and ConfigMaps Flink's client makes controlled by a
// JobManager Deployment that is the FlinkDeployment's.
func TestOwnedBy(t *testing.T) {
	dep := &v1beta1.FlinkDeployment{ObjectMeta: metav1.ObjectMeta{Name: "run", Namespace: ns, UID: "dep-uid"}}
	ref := func(apiVersion, kind, name, uid string, controller *bool) metav1.OwnerReference {
		return metav1.OwnerReference{APIVersion: apiVersion, Kind: kind, Name: name, UID: types.UID(uid), Controller: controller, BlockOwnerDeletion: ptr.To(true)}
	}
	upstreams := ref("flink.apache.org/v1beta1", "FlinkDeployment", "run", "dep-uid", ptr.To(false))
	for _, tc := range []struct {
		name   string
		owners []metav1.OwnerReference
		want   bool
	}{
		{"the operator's controller reference", []metav1.OwnerReference{ref("flink.apache.org/v1beta1", "FlinkDeployment", "run", "dep-uid", ptr.To(true))}, true},
		{"upstream's reference, controller false", []metav1.OwnerReference{upstreams}, true},
		{"a reference without the controller flag", []metav1.OwnerReference{ref("flink.apache.org/v1beta1", "FlinkDeployment", "run", "dep-uid", nil)}, true},
		{"no owner", nil, false},
		{"a FlinkDeployment of the same name created before (another UID)", []metav1.OwnerReference{ref("flink.apache.org/v1beta1", "FlinkDeployment", "run", "old-uid", ptr.To(false))}, false},
		{"another FlinkDeployment", []metav1.OwnerReference{ref("flink.apache.org/v1beta1", "FlinkDeployment", "other", "dep-uid", ptr.To(false))}, false},
		{"another group's FlinkDeployment kind", []metav1.OwnerReference{ref("example.com/v1", "FlinkDeployment", "run", "dep-uid", ptr.To(false))}, false},
		{"ours, but controlled by something else", []metav1.OwnerReference{upstreams, ref("argoproj.io/v1alpha1", "Rollout", "run", "x", ptr.To(true))}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obj := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "run", Namespace: ns, OwnerReferences: tc.owners}}
			if got := ownedBy(obj, dep); got != tc.want {
				t.Errorf("ownedBy = %v, want %v", got, tc.want)
			}
		})
	}

	jm := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "run", Namespace: ns, UID: "jm-uid", OwnerReferences: []metav1.OwnerReference{upstreams}}}
	strangerJM := jm.DeepCopy()
	strangerJM.OwnerReferences = nil
	byJM := []metav1.OwnerReference{ref("apps/v1", "Deployment", "run", "jm-uid", ptr.To(true))}
	deployment := func(owners []metav1.OwnerReference) metav1.Object {
		return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "run-taskmanager", Namespace: ns, OwnerReferences: owners}}
	}
	for _, tc := range []struct {
		name string
		obj  metav1.Object
		jm   *appsv1.Deployment
		want bool
	}{
		{"a Service controlled by the JobManager Deployment", serviceOwned(byJM), jm, true},
		{"a ConfigMap controlled by the JobManager Deployment", configMapOwned(byJM), jm, true},
		{"a Service controlled by a JobManager Deployment that is not the FlinkDeployment's", serviceOwned(byJM), strangerJM, false},
		{"a Service of a JobManager Deployment since deleted", serviceOwned(byJM), nil, false},
		{"a Service controlled by an earlier JobManager Deployment", serviceOwned([]metav1.OwnerReference{ref("apps/v1", "Deployment", "run", "old-jm", ptr.To(true))}), jm, false},
		{"a Deployment controlled by the JobManager Deployment (not Flink's)", deployment(byJM), jm, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ownedThroughJobManager(tc.obj, dep, tc.jm); got != tc.want {
				t.Errorf("ownedThroughJobManager = %v, want %v", got, tc.want)
			}
		})
	}
}

func serviceOwned(owners []metav1.OwnerReference) metav1.Object {
	return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "run-rest", Namespace: ns, OwnerReferences: owners}}
}

func configMapOwned(owners []metav1.OwnerReference) metav1.Object {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "flink-config-run", Namespace: ns, OwnerReferences: owners}}
}

// TestOwningDeployment: events on an object wake the FlinkDeployment that
// owns it by ownedBy's rule, so a JobManager Deployment upstream's operator
// made (an owner reference with controller false) is watched as the
// operator's own are.
func TestOwningDeployment(t *testing.T) {
	ref := func(apiVersion, kind, name string, controller *bool) metav1.OwnerReference {
		return metav1.OwnerReference{APIVersion: apiVersion, Kind: kind, Name: name, UID: "u", Controller: controller}
	}
	for _, tc := range []struct {
		name   string
		owners []metav1.OwnerReference
		want   string // "" none
	}{
		{"the operator's controller reference", []metav1.OwnerReference{ref("flink.apache.org/v1beta1", "FlinkDeployment", "run", ptr.To(true))}, "run"},
		{"upstream's reference, controller false", []metav1.OwnerReference{ref("flink.apache.org/v1beta1", "FlinkDeployment", "run", ptr.To(false))}, "run"},
		{"no owner", nil, ""},
		{"controlled by a Deployment", []metav1.OwnerReference{ref("apps/v1", "Deployment", "run", ptr.To(true))}, ""},
		{"ours, but controlled by something else", []metav1.OwnerReference{
			ref("flink.apache.org/v1beta1", "FlinkDeployment", "run", ptr.To(false)), ref("argoproj.io/v1alpha1", "Rollout", "run", ptr.To(true))}, ""},
		{"another group's kind", []metav1.OwnerReference{ref("example.com/v1", "FlinkDeployment", "run", ptr.To(false))}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obj := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "run", Namespace: ns, OwnerReferences: tc.owners}}
			name, ok := owningDeployment(obj)
			if got := map[bool]string{true: name, false: ""}[ok]; got != tc.want {
				t.Errorf("owningDeployment = %q (%v), want %q", name, ok, tc.want)
			}
		})
	}
}
