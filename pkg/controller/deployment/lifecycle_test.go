package deployment

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/cluster"
	"github.com/flinkops/flink-operator/pkg/controller/jobengine"
	"github.com/flinkops/flink-operator/pkg/flink"
	"github.com/flinkops/flink-operator/pkg/lifecycle"
	"github.com/flinkops/flink-operator/pkg/reasons"
)

func TestFirstDeployFromInitialSavepoint(t *testing.T) {
	f := newFixture(t)
	d := f.application("job", v1beta1.UpgradeModeSavepoint)
	d.Spec.Job.InitialSavepointPath = "s3://bucket/savepoints/savepoint-initial"
	f.Create(d)

	f.MustSync("job")
	got := f.Get("job")
	if !slices.Contains(got.Finalizers, Finalizer) {
		t.Errorf("finalizer not added: %v", got.Finalizers)
	}
	st := got.Status
	if st.ReconciliationStatus.State != v1beta1.ReconciliationDeployed || st.LifecycleState != v1beta1.LifecycleDeployed ||
		!flink.IsValidID(st.JobStatus.JobID) || st.JobStatus.State != v1beta1.JobStatusReconciling ||
		st.JobStatus.UpgradeSavepointPath != d.Spec.Job.InitialSavepointPath || st.ObservedGeneration != 1 {
		t.Fatalf("after first sync: %s", statusString(got))
	}
	rec, err := lifecycle.Decode[v1beta1.FlinkDeploymentSpec](st.ReconciliationStatus.LastReconciledSpec)
	if err != nil || !rec.Meta.FirstDeployment || !lifecycle.SameSpec(rec.Spec, d.Spec) {
		t.Errorf("lastReconciledSpec %s (%v)", st.ReconciliationStatus.LastReconciledSpec, err)
	}

	// Every object exists, owned by the FlinkDeployment.
	cm, err := f.Kube.CoreV1().ConfigMaps(ns).Get(f.Ctx, cluster.ConfigMapName("job"), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	svcs, _ := f.Kube.CoreV1().Services(ns).List(f.Ctx, metav1.ListOptions{})
	deps, _ := f.Kube.AppsV1().Deployments(ns).List(f.Ctx, metav1.ListOptions{})
	if len(svcs.Items) != 2 || len(deps.Items) != 2 {
		t.Fatalf("%d services and %d deployments, want 2 and 2", len(svcs.Items), len(deps.Items))
	}
	objs := []metav1.Object{cm, &svcs.Items[0], &svcs.Items[1], &deps.Items[0], &deps.Items[1]}
	for _, o := range objs {
		if !ownedBy(o, got) {
			t.Errorf("%s has owner references %v", o.GetName(), o.GetOwnerReferences())
		}
		if o.GetLabels()[cluster.LabelType] != cluster.TypeStandalone {
			t.Errorf("%s labels %v", o.GetName(), o.GetLabels())
		}
	}
	args := jmArgs(t, f.jmDeployment("job"))
	if i := slices.Index(args, "--fromSavepoint"); i < 0 || args[i+1] != d.Spec.Job.InitialSavepointPath {
		t.Errorf("JobManager args %v, want --fromSavepoint %s", args, d.Spec.Job.InitialSavepointPath)
	}

	// Kubernetes starts the JobManager, Flink runs the job.
	got = f.Until("job", 10, "job running", running)
	if got.Status.JobManagerDeploymentStatus != v1beta1.JobManagerReady || got.Status.JobStatus.JobName == "" ||
		got.Status.JobStatus.StartTime == "" || got.Status.ClusterInfo["flink-version"] == "" {
		t.Errorf("running: %s clusterInfo %v", statusString(got), got.Status.ClusterInfo)
	}
	if got.Status.ReconciliationStatus.LastStableSpec != got.Status.ReconciliationStatus.LastReconciledSpec {
		t.Errorf("stable spec not recorded")
	}
	if tm := got.Status.TaskManager; tm == nil || tm.Replicas != 1 || tm.LabelSelector != cluster.TaskManagerSelector(cluster.Standalone, "job") {
		t.Errorf("taskManager status %+v", tm)
	}
	if c := findCondition(got.Status.Conditions, "Running"); c == nil || c.Status != metav1.ConditionTrue || c.Reason != "Running" {
		t.Errorf("Running condition %+v", c)
	}
	if p := f.jm("job"); p.jobID != got.Status.JobStatus.JobID || p.restore != d.Spec.Job.InitialSavepointPath {
		t.Errorf("JobManager runs job %s from %q", p.jobID, p.restore)
	}
	ev := f.Events()
	if !hasEvent(ev, "Normal", reasons.ReasonSubmit) || !hasEvent(ev, "Normal", reasons.ReasonJobStatusChanged) {
		t.Errorf("events %v", ev)
	}
}

func findCondition(conds []metav1.Condition, typ string) *metav1.Condition {
	for i := range conds {
		if conds[i].Type == typ {
			return &conds[i]
		}
	}
	return nil
}

func TestSessionCluster(t *testing.T) {
	f := newFixture(t)
	d := f.application("session", v1beta1.UpgradeModeStateless)
	d.Spec.Job = nil
	f.Create(d)
	got := f.Until("session", 10, "session ready", func(d *v1beta1.FlinkDeployment) bool {
		return d.Status.JobManagerDeploymentStatus == v1beta1.JobManagerReady && d.Status.LifecycleState == v1beta1.LifecycleStable
	})
	if got.Status.JobStatus.JobID != "" || got.Status.ClusterInfo["flink-version"] == "" {
		t.Errorf("session: %s %v", statusString(got), got.Status.ClusterInfo)
	}
	if c := findCondition(got.Status.Conditions, "Running"); c == nil || c.Status != metav1.ConditionTrue || c.Reason != "JobManagerReady" {
		t.Errorf("Running condition %+v", c)
	}
	if args := jmArgs(t, f.jmDeployment("session")); args[0] != "jobmanager" {
		t.Errorf("JobManager args %v", args)
	}
	// A spec change redeploys the cluster.
	f.edit("session", func(s *v1beta1.FlinkDeploymentSpec) { s.Image = "flink:1.20.1" })
	f.Until("session", 20, "session redeployed", func(d *v1beta1.FlinkDeployment) bool {
		return d.Status.LifecycleState == v1beta1.LifecycleStable && d.Status.ObservedGeneration == 2
	})
	if img := f.jmDeployment("session").Spec.Template.Spec.Containers[0].Image; img != "flink:1.20.1" {
		t.Errorf("image %s", img)
	}
}

// TestSteadyStateIsCheap: a running, stable job costs no API writes and
// one REST call per reconcile interval.
func TestSteadyStateIsCheap(t *testing.T) {
	f := newFixture(t)
	f.Deploy(f.application("job", v1beta1.UpgradeModeSavepoint))
	f.Step("job")
	f.Client.ClearActions()
	f.Kube.ClearActions()
	f.jm("job").ResetRequests()
	for range 3 {
		if d := f.MustSync("job"); d != time.Minute {
			t.Errorf("steady requeue %v, want the reconcile interval", d)
		}
	}
	for _, a := range append(f.Client.Actions(), f.Kube.Actions()...) {
		if a.GetVerb() != "get" && a.GetVerb() != "list" && a.GetVerb() != "watch" {
			t.Errorf("steady state wrote: %s %s/%s", a.GetVerb(), a.GetResource().Resource, a.GetSubresource())
		}
	}
	if n := len(f.jm("job").Requests()); n != 3 {
		t.Errorf("%d REST calls in 3 syncs, want 3", n)
	}
}

// TestCreatedSuspendedCostsOneWrite: a FlinkDeployment created suspended,
// admitted with its finalizer (the webhook's mutating step), costs one
// status write and no event (nothing was suspended); without the finalizer
// the operator writes it first. Then nothing more is written.
func TestCreatedSuspendedCostsOneWrite(t *testing.T) {
	for _, admitted := range []bool{true, false} {
		t.Run(fmt.Sprintf("finalizer at admission=%v", admitted), func(t *testing.T) {
			f := newFixture(t)
			d := f.application("job", v1beta1.UpgradeModeSavepoint)
			d.Spec.Job.State = v1beta1.JobStateSuspended
			if admitted {
				d.Finalizers = []string{Finalizer}
			}
			f.Create(d)
			f.Client.ClearActions()
			f.Kube.ClearActions()
			for range 3 {
				f.MustSync("job")
				f.Refresh()
			}
			var writes []string
			for _, a := range append(f.Client.Actions(), f.Kube.Actions()...) {
				if v := a.GetVerb(); v != "get" && v != "list" && v != "watch" {
					writes = append(writes, v+" "+a.GetResource().Resource+"/"+a.GetSubresource())
				}
			}
			want := []string{"update flinkdeployments/status"}
			if !admitted {
				want = append([]string{"update flinkdeployments/"}, want...)
			}
			if !slices.Equal(writes, want) {
				t.Errorf("writes %v, want %v", writes, want)
			}
			if ev := f.Events(); len(ev) != 0 {
				t.Errorf("events %v, want none", ev)
			}
			if got := f.Get("job"); got.Status.LifecycleState != v1beta1.LifecycleSuspended || got.Status.ReconciliationStatus.State != v1beta1.ReconciliationDeployed {
				t.Errorf("status %s", statusString(got))
			}
		})
	}
}

func TestBadSpecKeepsLastGoodDeployment(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(*v1beta1.FlinkDeploymentSpec)
		want   string
	}{
		{"no image", func(s *v1beta1.FlinkDeploymentSpec) { s.Image = "" }, "spec.image is required"},
		{"bad version", func(s *v1beta1.FlinkDeploymentSpec) { s.FlinkVersion = "v1_13" }, "not supported"},
		{"savepoint without dir", func(s *v1beta1.FlinkDeploymentSpec) {
			s.FlinkConfiguration = v1beta1.NewConfiguration(map[string]string{"execution.checkpointing.dir": "file:///cp"})
		}, "Job could not be upgraded with savepoint"},
		{"last-state without checkpoint dir", func(s *v1beta1.FlinkDeploymentSpec) {
			s.Job.UpgradeMode = v1beta1.UpgradeModeLastState
			s.FlinkConfiguration = v1beta1.NewConfiguration(map[string]string{"execution.checkpointing.savepoint-dir": "file:///sp"})
		}, "Checkpoint directory[execution.checkpointing.dir] must be defined"},
		{"cluster build error", func(s *v1beta1.FlinkDeploymentSpec) { setConf(s, "rest.port", "http") }, "rest.port"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			before := f.Deploy(f.application("job", v1beta1.UpgradeModeSavepoint))
			jm := f.jm("job")
			jmUID := f.jmDeployment("job").UID
			f.Events()
			f.edit("job", tc.change)
			for range 3 {
				f.Step("job")
			}
			got := f.Get("job")
			if !strings.Contains(jobengine.ErrorMessage(got.Status.Error), tc.want) {
				t.Fatalf("error %q, want it to mention %q", got.Status.Error, tc.want)
			}
			if got.Status.LifecycleState != v1beta1.LifecycleStable || got.Status.JobStatus.State != v1beta1.JobStatusRunning ||
				got.Status.ReconciliationStatus.LastReconciledSpec != before.Status.ReconciliationStatus.LastReconciledSpec ||
				got.Status.ObservedGeneration != 2 {
				t.Errorf("status %s", statusString(got))
			}
			if f.jmDeployment("job").UID != jmUID || f.jm("job") != jm || f.stops() != 0 {
				t.Errorf("the running deployment was touched")
			}
			ev := f.Events()
			n := 0
			for _, e := range ev {
				if strings.HasPrefix(e, "Warning "+reasons.ReasonValidationError+" ") {
					n++
				}
			}
			if n != 1 {
				t.Errorf("%d ValidationError events (want 1, not one per sync): %v", n, ev)
			}
			// Fixing the spec upgrades and clears the error.
			f.edit("job", func(s *v1beta1.FlinkDeploymentSpec) {
				*s = *before.Spec.DeepCopy()
				newArgs(s)
			})
			after := f.Until("job", 30, "upgrade after fix", upgradedTo(3))
			if after.Status.Error != "" {
				t.Errorf("error kept: %q", after.Status.Error)
			}
		})
	}
}

func TestInvalidFirstSpecDeploysNothing(t *testing.T) {
	f := newFixture(t)
	d := f.application("job", v1beta1.UpgradeModeSavepoint)
	d.Spec.Image = ""
	f.Create(d)
	f.Step("job")
	got := f.Get("job")
	if got.Status.LifecycleState != v1beta1.LifecycleFailed || !strings.Contains(jobengine.ErrorMessage(got.Status.Error), "spec.image") ||
		got.Status.ReconciliationStatus.LastReconciledSpec != "" {
		t.Fatalf("status %s", statusString(got))
	}
	deps, _ := f.Kube.AppsV1().Deployments(ns).List(f.Ctx, metav1.ListOptions{})
	if len(deps.Items) != 0 {
		t.Errorf("deployed an invalid spec")
	}
}

func TestDriftRepair(t *testing.T) {
	f := newFixture(t)
	before := f.Deploy(f.application("job", v1beta1.UpgradeModeSavepoint))
	jmUID := f.jmDeployment("job").UID

	// Deleted objects come back.
	if err := f.Kube.CoreV1().Services(ns).Delete(f.Ctx, cluster.RESTServiceName("job"), metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := f.Kube.AppsV1().Deployments(ns).Delete(f.Ctx, cluster.TaskManagerDeploymentName("job"), metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := f.Kube.CoreV1().ConfigMaps(ns).Delete(f.Ctx, cluster.ConfigMapName("job"), metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	f.Step("job")
	for _, get := range []func() error{
		func() error {
			_, err := f.Kube.CoreV1().Services(ns).Get(f.Ctx, cluster.RESTServiceName("job"), metav1.GetOptions{})
			return err
		},
		func() error {
			_, err := f.Kube.AppsV1().Deployments(ns).Get(f.Ctx, cluster.TaskManagerDeploymentName("job"), metav1.GetOptions{})
			return err
		},
		func() error {
			cm, err := f.Kube.CoreV1().ConfigMaps(ns).Get(f.Ctx, cluster.ConfigMapName("job"), metav1.GetOptions{})
			if err == nil && !strings.Contains(cm.Data[cluster.ConfigYAMLFile], before.Status.JobStatus.JobID) {
				t.Errorf("recreated ConfigMap lacks the job id")
			}
			return err
		},
	} {
		if err := get(); err != nil {
			t.Errorf("not recreated: %v", err)
		}
	}
	// An object built differently (here: an older operator's hash) is updated.
	rpc, _ := f.Kube.CoreV1().Services(ns).Get(f.Ctx, cluster.RPCServiceName("job"), metav1.GetOptions{})
	rpc.Annotations[cluster.AnnotationSpecHash] = "older"
	rpc.Spec.Ports = rpc.Spec.Ports[:1]
	if _, err := f.Kube.CoreV1().Services(ns).Update(f.Ctx, rpc, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.Step("job")
	if rpc, _ := f.Kube.CoreV1().Services(ns).Get(f.Ctx, cluster.RPCServiceName("job"), metav1.GetOptions{}); len(rpc.Spec.Ports) != 2 {
		t.Errorf("outdated Service not updated: %v", rpc.Spec.Ports)
	}
	if f.jmDeployment("job").UID != jmUID {
		t.Errorf("JobManager replaced by drift repair")
	}
	if got := f.Get("job"); got.Status.Error != "" || got.Status.JobStatus.JobID != before.Status.JobStatus.JobID {
		t.Errorf("status %s", statusString(got))
	}
}

// TestDeletedJobManagerOfStatefulJob: recreating the JobManager would
// restart the job from its original restore point, older than its last
// checkpoint, so the operator says so instead.
func TestDeletedJobManagerOfStatefulJob(t *testing.T) {
	f := newFixture(t)
	f.Deploy(f.application("job", v1beta1.UpgradeModeSavepoint))
	f.checkpoint("job")
	if err := f.Kube.AppsV1().Deployments(ns).Delete(f.Ctx, cluster.JobManagerDeploymentName("job"), metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	f.kubeTick()
	f.Step("job")
	got := f.Get("job")
	if !strings.Contains(jobengine.ErrorMessage(got.Status.Error), "Manual restore required") || got.Status.LifecycleState != v1beta1.LifecycleFailed ||
		got.Status.JobManagerDeploymentStatus != v1beta1.JobManagerMissing {
		t.Fatalf("status %s", statusString(got))
	}
	if _, err := f.Kube.AppsV1().Deployments(ns).Get(f.Ctx, cluster.JobManagerDeploymentName("job"), metav1.GetOptions{}); err == nil {
		t.Errorf("JobManager recreated from an old restore point")
	}

	// A stateless job's JobManager is simply recreated.
	f2 := newFixture(t)
	f2.Deploy(f2.application("job", v1beta1.UpgradeModeStateless))
	if err := f2.Kube.AppsV1().Deployments(ns).Delete(f2.Ctx, cluster.JobManagerDeploymentName("job"), metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	f2.kubeTick()
	f2.Step("job")
	if _, err := f2.Kube.AppsV1().Deployments(ns).Get(f2.Ctx, cluster.JobManagerDeploymentName("job"), metav1.GetOptions{}); err != nil {
		t.Errorf("stateless JobManager not recreated: %v", err)
	}
}

func TestManualSavepointNonce(t *testing.T) {
	f := newFixture(t)
	f.Deploy(f.application("job", v1beta1.UpgradeModeSavepoint))
	f.edit("job", func(s *v1beta1.FlinkDeploymentSpec) {
		s.Job.SavepointTriggerNonce = new(int64(7))
		s.Job.CheckpointTriggerNonce = new(int64(8))
	})
	f.Step("job")
	snaps := f.Snapshots()
	if len(snaps) != 2 {
		t.Fatalf("%d snapshots, want a manual savepoint and checkpoint", len(snaps))
	}
	for _, s := range snaps {
		if s.Labels[v1beta1.LabelSnapshotTriggerType] != "MANUAL" || s.Spec.JobReference.Name != "job" {
			t.Errorf("snapshot %s: %v %+v", s.Name, s.Labels, s.Spec)
		}
	}
	got := f.Get("job")
	rec, _ := lifecycle.Decode[v1beta1.FlinkDeploymentSpec](got.Status.ReconciliationStatus.LastReconciledSpec)
	if *rec.Spec.Job.SavepointTriggerNonce != 7 || *rec.Spec.Job.CheckpointTriggerNonce != 8 || got.Status.LifecycleState != v1beta1.LifecycleStable {
		t.Errorf("nonces not recorded: %s", statusString(got))
	}
	if n := f.stops(); n != 0 || f.jm("job").jobID != got.Status.JobStatus.JobID {
		t.Errorf("a nonce change restarted the job")
	}
	// Nothing more on the next syncs.
	f.Step("job")
	if n := len(f.Snapshots()); n != 2 {
		t.Errorf("%d snapshots after another sync", n)
	}
}
