package deployment

import (
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/cluster"
	"github.com/flinkops/flink-operator/pkg/config"
	"github.com/flinkops/flink-operator/pkg/controller/jobengine"
	"github.com/flinkops/flink-operator/pkg/flink"
	"github.com/flinkops/flink-operator/pkg/reasons"
)

// deploymentDeletes are the propagation policies of the Deployment deletes
// the operator made, by Deployment name ("" for none given).
func deploymentDeletes(f *fixture) map[string][]string {
	out := map[string][]string{}
	for _, a := range f.Kube.Actions() {
		d, ok := a.(k8stesting.DeleteActionImpl)
		if !ok || d.GetResource().Resource != "deployments" {
			continue
		}
		p := ""
		if d.DeleteOptions.PropagationPolicy != nil {
			p = string(*d.DeleteOptions.PropagationPolicy)
		}
		out[d.Name] = append(out[d.Name], p)
	}
	return out
}

// clusterPod is a running pod of component of the cluster name, owned by
// a ReplicaSet as a Deployment's pods are.
func clusterPod(name, component string, native bool) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name + "-" + component + "-old", Namespace: ns, Labels: cluster.Labels(cluster.Mode(native), name, component),
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: name + "-rs", UID: "rs-uid",
				Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning},
	}
}

func (f *fixture) createPod(p *corev1.Pod) {
	f.T.Helper()
	if _, err := f.Kube.CoreV1().Pods(ns).Create(f.Ctx, p, metav1.CreateOptions{}); err != nil {
		f.T.Fatal(err)
	}
}

func (f *fixture) jmDeploymentExists(name string) bool {
	_, err := f.Kube.AppsV1().Deployments(ns).Get(f.Ctx, cluster.JobManagerDeploymentName(name), metav1.GetOptions{})
	return err == nil
}

// Every Deployment delete of an upgrade's teardown uses
// kubernetes.operator.resource.deletion.propagation, Foreground by default,
// as upstream; the value is read per resource.
func TestDeletionPropagationOfTeardown(t *testing.T) {
	for _, tc := range []struct{ set, want string }{
		{"", "Foreground"},
		{"Foreground", "Foreground"},
		{"background", "Background"}, // any case, as Flink's enum options
		{"Orphan", "Orphan"},
	} {
		t.Run("propagation "+tc.set, func(t *testing.T) {
			f := newFixture(t)
			d := f.application("job", v1beta1.UpgradeModeStateless)
			if tc.set != "" {
				setConf(&d.Spec, config.KeyResourceDeletionPropagation, tc.set)
			}
			f.Deploy(d)
			f.edit("job", newArgs)
			f.Until("job", 20, "upgrade", upgradedTo(2))
			got := deploymentDeletes(f)
			for _, n := range []string{cluster.JobManagerDeploymentName("job"), cluster.TaskManagerDeploymentName("job")} {
				if len(got[n]) == 0 || slices.ContainsFunc(got[n], func(p string) bool { return p != tc.want }) {
					t.Errorf("deletes of %s: %v, want %s", n, got[n], tc.want)
				}
			}
		})
	}
}

// With Background propagation the Deployment goes at once and its pods
// later: the teardown waits for the old JobManager pod itself before the
// new JobManager Deployment is created, past the cleanup timeout too (with
// a Warning naming the timeout), never starting a second JobManager.
func TestTeardownWaitsForJobManagerPods(t *testing.T) {
	f := newPodFixture(t)
	d := f.application("job", v1beta1.UpgradeModeStateless)
	setConf(&d.Spec, config.KeyResourceDeletionPropagation, "Background")
	f.Config[config.KeyResourceCleanupTimeout] = "1 min" // operator-wide, as upstream
	f.Restart()
	f.Deploy(d)
	old := clusterPod("job", cluster.ComponentJobManager, false)
	now := metav1.NewTime(f.Clock.Now())
	old.DeletionTimestamp, old.Finalizers = &now, []string{"example.com/slow"} // terminating, slowly
	f.createPod(old)
	f.edit("job", newArgs)
	for range 60 { // 2 min of 2 s polls
		f.Step("job")
	}
	if f.jmDeploymentExists("job") {
		t.Fatal("new JobManager Deployment created while the old JobManager pod runs")
	}
	got := f.Get("job")
	if got.Status.ReconciliationStatus.State != v1beta1.ReconciliationUpgrading ||
		!strings.Contains(jobengine.ErrorMessage(got.Status.Error), config.KeyResourceCleanupTimeout) || !strings.Contains(jobengine.ErrorMessage(got.Status.Error), old.Name) {
		t.Fatalf("status %s", statusString(got))
	}
	if !hasEvent(f.Events(), "Warning", reasons.ReasonCleanup) {
		t.Errorf("no Warning Cleanup event: %v", f.Events())
	}
	if err := f.Kube.CoreV1().Pods(ns).Delete(f.Ctx, old.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	f.Until("job", 20, "upgrade", upgradedTo(2))
}

// Orphan leaves the old JobManager running: the upgrade says so at once in
// status.error and waits until it is deleted; it never starts the new
// cluster beside it.
func TestTeardownOrphanWaitsForOrphanedPods(t *testing.T) {
	f := newPodFixture(t)
	d := f.application("job", v1beta1.UpgradeModeStateless)
	setConf(&d.Spec, config.KeyResourceDeletionPropagation, "Orphan")
	f.Deploy(d)
	old := clusterPod("job", cluster.ComponentJobManager, false)
	f.createPod(old)
	f.edit("job", newArgs)
	for range 10 {
		f.Step("job")
	}
	if f.jmDeploymentExists("job") {
		t.Fatal("new JobManager Deployment created beside the orphaned JobManager pod")
	}
	got := f.Get("job")
	if !strings.Contains(jobengine.ErrorMessage(got.Status.Error), "Orphan") || !strings.Contains(jobengine.ErrorMessage(got.Status.Error), old.Name) {
		t.Fatalf("status %s", statusString(got))
	}
	if err := f.Kube.CoreV1().Pods(ns).Delete(f.Ctx, old.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	f.Until("job", 20, "upgrade", upgradedTo(2))
}

// The deletion of a native cluster waits for its pods up to
// kubernetes.operator.resource.cleanup.timeout (default 5 min), then the
// finalizer goes with a Warning; its deletes use the configured
// propagation.
func TestDeletionCleanupTimeout(t *testing.T) {
	for _, tc := range []struct {
		name, timeout, propagation string
		still, gone                time.Duration // still waiting at, gone by
	}{
		{name: "defaults", still: 4 * time.Minute, gone: 6 * time.Minute},
		{name: "1 min, Background", timeout: "1 min", propagation: "Background", still: 40 * time.Second, gone: 2 * time.Minute},
		{name: "deprecated key", timeout: "deprecated", still: 80 * time.Second, gone: 3 * time.Minute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newNativeFixture(t)
			d := native(f.application("job", v1beta1.UpgradeModeSavepoint))
			switch tc.timeout {
			case "":
			case "deprecated":
				delete(f.Config, config.KeyResourceCleanupTimeout) // the fixture's defaults name every key
				f.Config["kubernetes.operator.reconciler.flink.cluster.shutdown.timeout"] = "2 min"
			default:
				f.Config[config.KeyResourceCleanupTimeout] = tc.timeout // operator-wide, as upstream
			}
			f.Restart()
			if tc.propagation != "" {
				setConf(&d.Spec, config.KeyResourceDeletionPropagation, tc.propagation)
			}
			f.Deploy(d)
			f.Step("job")
			stuck := f.tmPodsOf("job")[0]
			stuck.Finalizers = []string{"example.com/never"} // never goes
			if _, err := f.Kube.CoreV1().Pods(ns).Update(f.Ctx, &stuck, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
			deletedAt := f.Clock.Now()
			f.markDeleted("job")
			for f.Clock.Now().Sub(deletedAt) < tc.still {
				f.Step("job")
			}
			if finalized(f.Get("job")) {
				t.Fatalf("finalizer removed %s after the deletion", f.Clock.Now().Sub(deletedAt))
			}
			f.Until("job", 200, "finalizer removed", finalized)
			if took := f.Clock.Now().Sub(deletedAt); took > tc.gone {
				t.Errorf("deletion took %s", took)
			}
			if !hasEvent(f.Events(), "Warning", reasons.ReasonCleanup) {
				t.Errorf("no Warning Cleanup event")
			}
			want := tc.propagation
			if want == "" {
				want = "Foreground"
			}
			if got := deploymentDeletes(f.fixture)[cluster.JobManagerDeploymentName("job")]; len(got) == 0 || got[0] != want {
				t.Errorf("JobManager Deployment deletes %v, want %s", got, want)
			}
		})
	}
}

// Orphan on deletion leaves the cluster's pods running on purpose: the
// finalizer does not wait for them, and the HA ConfigMaps the running
// JobManager uses stay; the others delete them after the pods are gone.
func TestDeletionOrphanLeavesCluster(t *testing.T) {
	for _, propagation := range []string{"Orphan", "Foreground"} {
		t.Run(propagation, func(t *testing.T) {
			f := newNativeFixture(t)
			d := native(f.application("job", v1beta1.UpgradeModeLastState))
			setConf(&d.Spec, "high-availability.type", "kubernetes", "high-availability.storageDir", "file:///tmp/ha",
				config.KeyResourceDeletionPropagation, propagation)
			before := f.Deploy(d)
			f.Step("job")
			f.haConfigMaps("job", before.Status.JobStatus.JobID)
			jm := clusterPod("job", cluster.ComponentJobManager, true)
			jm.Finalizers = []string{"example.com/keep"} // the fake garbage collector leaves it: an orphaned ReplicaSet's pod
			f.createPod(jm)
			f.Step("job") // the caches see them
			if names := f.haConfigMapNames("job"); len(names) != 2 {
				t.Fatalf("HA ConfigMaps %v before the deletion", names)
			}
			f.markDeleted("job")
			f.Step("job")
			f.Step("job")
			got := f.Get("job")
			switch propagation {
			case "Orphan":
				if !finalized(got) {
					t.Fatalf("finalizer kept for orphaned pods: %s", statusString(got))
				}
				if names := f.haConfigMapNames("job"); len(names) != 2 {
					t.Errorf("HA ConfigMaps %v, want them kept", names)
				}
			default:
				if finalized(got) {
					t.Fatalf("finalizer removed while the JobManager pod runs")
				}
				if names := f.haConfigMapNames("job"); len(names) != 2 {
					t.Errorf("HA ConfigMaps %v deleted while the JobManager pod runs", names)
				}
			}
		})
	}
}

// The shutdown of a terminal application after the TTL deletes with the
// configured propagation.
func TestShutdownTTLPropagation(t *testing.T) {
	f := newFixture(t)
	d := f.application("job", v1beta1.UpgradeModeSavepoint)
	setConf(&d.Spec, config.KeyJMDeploymentShutdownTTL, "1 min", config.KeyResourceDeletionPropagation, "Background")
	f.Deploy(d)
	f.endJob("job", flink.JobFinished)
	f.Clock.Step(2 * time.Minute)
	f.Until("job", 10, "shut down", func(d *v1beta1.FlinkDeployment) bool { return !f.jmDeploymentExists("job") })
	if got := deploymentDeletes(f)[cluster.JobManagerDeploymentName("job")]; len(got) == 0 || got[0] != "Background" {
		t.Errorf("JobManager Deployment deletes %v, want Background", got)
	}
}
