package deployment

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/cluster"
	"github.com/flinkops/flink-operator/pkg/controller/jobengine"
	"github.com/flinkops/flink-operator/pkg/flink"
	"github.com/flinkops/flink-operator/pkg/flink/fakejm"
	"github.com/flinkops/flink-operator/pkg/reasons"
)

// nativeFixture is the pod fixture where Kubernetes also plays Flink's
// resource manager: every running native JobManager Deployment gets
// tmPods TaskManager pods, labelled and owned as Flink creates them. No
// garbage collector runs: pods of a deleted JobManager stay until someone
// deletes them.
type nativeFixture struct {
	*podFixture
	tmPods int
	// denied are the "verb resource" SubjectAccessReviews deny; the
	// ServiceAccount flink exists and may do everything else.
	denied map[string]bool
	// reviews counts SubjectAccessReviews.
	reviews int
}

func newNativeFixture(t *testing.T) *nativeFixture {
	f := &nativeFixture{podFixture: newPodFixture(t), tmPods: 2, denied: map[string]bool{}}
	f.Kube.PrependReactor("create", "subjectaccessreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		r := a.(k8stesting.CreateAction).GetObject().(*authorizationv1.SubjectAccessReview).DeepCopy()
		f.reviews++
		attr := r.Spec.ResourceAttributes
		r.Status.Allowed = r.Spec.User == "system:serviceaccount:"+ns+":flink" && !f.denied[attr.Verb+" "+attr.Resource]
		return true, r, nil
	})
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "flink", Namespace: ns}}
	if _, err := f.Kube.CoreV1().ServiceAccounts(ns).Create(f.Ctx, sa, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	tick := f.Tick
	f.Tick = func() {
		tick()
		f.garbageCollector()
		f.flinkResourceManager()
		f.flinkHACleanup()
	}
	f.haRestore = f.latestHACheckpoint
	return f
}

// haCheckpoint completes a checkpoint of the running job and records it in
// the job's HA ConfigMap, as Flink's Kubernetes HA does (the value stands
// in for Flink's serialized state handle).
func (f *nativeFixture) haCheckpoint(name string) string {
	f.T.Helper()
	path := f.checkpoint(name)
	jobID := f.jm(name).jobID
	cms := f.Kube.CoreV1().ConfigMaps(ns)
	cm, err := cms.Get(f.Ctx, cluster.HAJobConfigMapName(name, jobID), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		cm, err = cms.Create(f.Ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
			Name: cluster.HAJobConfigMapName(name, jobID), Namespace: ns, Labels: cluster.HAConfigMapLabels(name)}}, metav1.CreateOptions{})
	}
	if err != nil {
		f.T.Fatal(err)
	}
	if cm.Data == nil {
		cm.Data = map[string]string{}
	}
	cm.Data[fmt.Sprintf("checkpointID-%019d", len(cm.Data)+1)] = path
	if _, err := cms.Update(f.Ctx, cm, metav1.UpdateOptions{}); err != nil {
		f.T.Fatal(err)
	}
	return path
}

// latestHACheckpoint is the newest checkpoint in the job's HA ConfigMap.
// A running JobManager read it when it started.
func (f *nativeFixture) latestHACheckpoint(name, jobID string) string {
	if p := f.jms[name]; p != nil && p.jobID == jobID {
		if jm, err := f.Kube.AppsV1().Deployments(ns).Get(f.Ctx, cluster.JobManagerDeploymentName(name), metav1.GetOptions{}); err == nil && jm.UID == p.deploy {
			return p.restore
		}
	}
	cm, err := f.Kube.CoreV1().ConfigMaps(ns).Get(f.Ctx, cluster.HAJobConfigMapName(name, jobID), metav1.GetOptions{})
	if err != nil {
		return ""
	}
	latest := ""
	for k := range cm.Data {
		if strings.HasPrefix(k, "checkpointID-") && k > latest {
			latest = k
		}
	}
	return cm.Data[latest]
}

// flinkHACleanup: Flink deletes a job's HA data once the job is globally
// terminal (a cancelled job cannot be recovered from it).
func (f *nativeFixture) flinkHACleanup() {
	f.T.Helper()
	for name, p := range f.jms {
		if p.jobID == "" {
			continue
		}
		if st, ok := p.JobState(p.jobID); ok && (st == flink.JobCanceled || st == flink.JobFailed || st == flink.JobFinished) {
			err := f.Kube.CoreV1().ConfigMaps(ns).Delete(f.Ctx, cluster.HAJobConfigMapName(name, p.jobID), metav1.DeleteOptions{})
			if err != nil && !apierrors.IsNotFound(err) {
				f.T.Fatal(err)
			}
		}
	}
}

// native makes d a native-mode FlinkDeployment.
func native(d *v1beta1.FlinkDeployment) *v1beta1.FlinkDeployment {
	d.Spec.Mode = v1beta1.DeploymentModeNative
	return d
}

// flinkResourceManager creates the TaskManager pods of every running
// native JobManager, as Flink would (owner: the JobManager Deployment).
func (f *nativeFixture) flinkResourceManager() {
	f.T.Helper()
	deps, err := f.Kube.AppsV1().Deployments(ns).List(f.Ctx, metav1.ListOptions{LabelSelector: cluster.LabelType + "=" + cluster.TypeNative})
	if err != nil {
		f.T.Fatal(err)
	}
	for _, jm := range deps.Items {
		name := jm.Labels[cluster.LabelApp]
		if f.jms[name] == nil || f.jms[name].deploy != jm.UID {
			continue // not running
		}
		for i := 1; i <= f.tmPods; i++ {
			pod := &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{
					Name: fmt.Sprintf("%s%s-%d", cluster.TaskManagerPodNamePrefix(name), jm.UID, i), Namespace: ns,
					Labels: cluster.Labels(cluster.Native, name, cluster.ComponentTaskManager),
					OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: jm.Name, UID: jm.UID,
						Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}},
				},
				Status: corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{{
					Name: cluster.MainContainerName, Ready: true, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}},
			}
			if _, err := f.Kube.CoreV1().Pods(ns).Create(f.Ctx, pod, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
				f.T.Fatal(err)
			}
		}
	}
}

// garbageCollector deletes the pods whose owner Deployment is gone, as
// Kubernetes' garbage collector does (the fake API server has none).
func (f *nativeFixture) garbageCollector() {
	f.T.Helper()
	deps, err := f.Kube.AppsV1().Deployments(ns).List(f.Ctx, metav1.ListOptions{})
	if err != nil {
		f.T.Fatal(err)
	}
	live := map[types.UID]bool{}
	for _, d := range deps.Items {
		live[d.UID] = true
	}
	pods, err := f.Kube.CoreV1().Pods(ns).List(f.Ctx, metav1.ListOptions{})
	if err != nil {
		f.T.Fatal(err)
	}
	for _, p := range pods.Items {
		if len(p.OwnerReferences) == 0 || live[p.OwnerReferences[0].UID] || len(p.Finalizers) > 0 {
			continue
		}
		if err := f.Kube.CoreV1().Pods(ns).Delete(f.Ctx, p.Name, metav1.DeleteOptions{}); err != nil {
			f.T.Fatal(err)
		}
	}
}

// tmPodsOf lists the TaskManager pods of cluster name in the API.
func (f *nativeFixture) tmPodsOf(name string) []corev1.Pod {
	f.T.Helper()
	list, err := f.Kube.CoreV1().Pods(ns).List(f.Ctx, metav1.ListOptions{LabelSelector: cluster.TaskManagerSelector(cluster.Native, name)})
	if err != nil {
		f.T.Fatal(err)
	}
	return list.Items
}

// haConfigMaps writes the HA ConfigMaps Flink's Kubernetes HA keeps for
// the job of name.
func (f *nativeFixture) haConfigMaps(name, jobID string) {
	f.T.Helper()
	for _, n := range []string{cluster.HAClusterConfigMapName(name), cluster.HAJobConfigMapName(name, jobID)} {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: n, Namespace: ns, Labels: cluster.HAConfigMapLabels(name)},
			Data: map[string]string{"counter": "1"}}
		if _, err := f.Kube.CoreV1().ConfigMaps(ns).Create(f.Ctx, cm, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			f.T.Fatal(err)
		}
	}
}

func (f *nativeFixture) haConfigMapNames(name string) []string {
	f.T.Helper()
	list, err := f.Kube.CoreV1().ConfigMaps(ns).List(f.Ctx, metav1.ListOptions{LabelSelector: cluster.HAConfigMapSelector(name)})
	if err != nil {
		f.T.Fatal(err)
	}
	var out []string
	for _, cm := range list.Items {
		out = append(out, cm.Name)
	}
	slices.Sort(out)
	return out
}

func (f *nativeFixture) deploymentNames() []string {
	f.T.Helper()
	list, err := f.Kube.AppsV1().Deployments(ns).List(f.Ctx, metav1.ListOptions{})
	if err != nil {
		f.T.Fatal(err)
	}
	var out []string
	for _, d := range list.Items {
		out = append(out, d.Name)
	}
	return out
}

// A native application: the operator creates the JobManager side only
// (Deployment running kubernetes-jobmanager.sh kubernetes-application,
// both Services, the ConfigMap), no TaskManager Deployment; the
// TaskManager pods Flink creates are counted in status.taskManager.
func TestNativeApplicationDeploy(t *testing.T) {
	f := newNativeFixture(t)
	got := f.Deploy(native(f.application("job", v1beta1.UpgradeModeSavepoint)))
	if deps := f.deploymentNames(); !slices.Equal(deps, []string{cluster.JobManagerDeploymentName("job")}) {
		t.Fatalf("Deployments %v, want only the JobManager's", deps)
	}
	jm := f.jmDeployment("job")
	if jm.Labels[cluster.LabelType] != cluster.TypeNative || !ownedBy(jm, got) {
		t.Errorf("JobManager Deployment labels %v, owners %v", jm.Labels, jm.OwnerReferences)
	}
	if args := jmArgs(t, jm); len(args) != 3 || args[0] != "bash" || !strings.HasSuffix(args[2], "exec "+cluster.KubernetesJobManagerScript+" "+cluster.TargetApplication+" ") {
		t.Errorf("JobManager args %q", args)
	}
	for _, svc := range []string{cluster.RPCServiceName("job"), cluster.RESTServiceName("job")} {
		if _, err := f.Kube.CoreV1().Services(ns).Get(f.Ctx, svc, metav1.GetOptions{}); err != nil {
			t.Errorf("Service %s: %v", svc, err)
		}
	}
	if p := f.jm("job"); p.jobID != got.Status.JobStatus.JobID || p.restore != "" {
		t.Errorf("JobManager runs job %s from %q, want %s from empty state", p.jobID, p.restore, got.Status.JobStatus.JobID)
	}
	f.Step("job")
	got = f.Get("job")
	if tm := got.Status.TaskManager; tm == nil || tm.Replicas != 2 || tm.LabelSelector != cluster.TaskManagerSelector(cluster.Native, "job") {
		t.Errorf("status.taskManager %+v, want Flink's 2 pods", tm)
	}
	if len(f.tmPodsOf("job")) != 2 {
		t.Errorf("the operator changed Flink's TaskManager pods")
	}
}

func TestNativeSessionDeploy(t *testing.T) {
	f := newNativeFixture(t)
	d := native(f.application("session", v1beta1.UpgradeModeStateless))
	d.Spec.Job = nil
	f.Create(d)
	got := f.Until("session", 10, "session ready", func(d *v1beta1.FlinkDeployment) bool {
		return d.Status.JobManagerDeploymentStatus == v1beta1.JobManagerReady && d.Status.LifecycleState == v1beta1.LifecycleStable
	})
	if deps := f.deploymentNames(); !slices.Equal(deps, []string{cluster.JobManagerDeploymentName("session")}) {
		t.Fatalf("Deployments %v, want only the JobManager's", deps)
	}
	if args := jmArgs(t, f.jmDeployment("session")); len(args) != 3 || !strings.HasPrefix(args[2], cluster.KubernetesJobManagerScript+" "+cluster.TargetSession) {
		t.Errorf("JobManager args %q", args)
	}
	if got.Status.JobStatus.JobID != "" {
		t.Errorf("session: %s", statusString(got))
	}
}

// A TaskManager pod template is the pod-template-<name> ConfigMap, mounted
// into the JobManager for Flink's resource manager.
func TestNativePodTemplateConfigMap(t *testing.T) {
	f := newNativeFixture(t)
	d := native(f.application("job", v1beta1.UpgradeModeSavepoint))
	d.Spec.TaskManager = &v1beta1.TaskManagerSpec{PodTemplate: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"team": "a"}}}}
	f.Deploy(d)
	cm, err := f.Kube.CoreV1().ConfigMaps(ns).Get(f.Ctx, cluster.PodTemplateConfigMapName("job"), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(cm.Data[cluster.TaskManagerPodTemplateFile], "team: a") {
		t.Errorf("pod template %q", cm.Data[cluster.TaskManagerPodTemplateFile])
	}
	jm := f.jmDeployment("job")
	if !slices.ContainsFunc(jm.Spec.Template.Spec.Volumes, func(v corev1.Volume) bool { return v.Name == cluster.PodTemplateVolumeName }) {
		t.Errorf("JobManager does not mount the pod template")
	}
}

// A failing TaskManager pod Flink created shows in status.error, as in
// standalone mode.
func TestNativeTaskManagerPodFailure(t *testing.T) {
	f := newNativeFixture(t)
	f.tmPods = 0
	f.Deploy(native(f.application("job", v1beta1.UpgradeModeSavepoint)))
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "job-taskmanager-1-1", Namespace: ns, Labels: cluster.Labels(cluster.Native, "job", cluster.ComponentTaskManager)},
		Status: corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: []corev1.ContainerStatus{{
			Name: cluster.MainContainerName, Image: "flink:nope",
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff"}}}}},
	}
	if _, err := f.Kube.CoreV1().Pods(ns).Create(f.Ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.Step("job")
	got := f.Get("job")
	if !strings.Contains(jobengine.ErrorMessage(got.Status.Error), "TaskManager pod job-taskmanager-1-1") || !strings.Contains(jobengine.ErrorMessage(got.Status.Error), reasons.ReasonImagePull) {
		t.Fatalf("status %s", statusString(got))
	}
	if !hasEvent(f.Events(), "Warning", reasons.ReasonImagePull) {
		t.Errorf("no %s event", reasons.ReasonImagePull)
	}
}

// A savepoint upgrade of a native application: the old JobManager
// Deployment and every TaskManager pod Flink created are gone before the
// new JobManager is created, which restores from the stop's savepoint
// (execution.savepoint.path in its configuration). HA ConfigMaps go
// too (savepoint mode does not keep them).
func TestNativeSavepointUpgrade(t *testing.T) {
	f := newNativeFixture(t)
	d := native(f.application("job", v1beta1.UpgradeModeSavepoint))
	setConf(&d.Spec, "high-availability.type", "kubernetes", "high-availability.storageDir", "file:///tmp/ha")
	before := f.Deploy(d)
	oldJM := f.jmDeployment("job").UID
	f.Step("job")
	f.haConfigMaps("job", before.Status.JobStatus.JobID)
	f.edit("job", newArgs)
	after := f.Until("job", 30, "savepoint upgrade", upgradedTo(2))
	path := after.Status.JobStatus.UpgradeSavepointPath
	if restored, meta := f.restoredFrom("job"); restored == "" || restored != path || !meta.Savepoint || meta.JobID != before.Status.JobStatus.JobID {
		t.Errorf("restored from %q (%+v), want the stop savepoint %s", restored, meta, path)
	}
	for _, p := range f.tmPodsOf("job") {
		if p.OwnerReferences[0].UID == oldJM {
			t.Errorf("TaskManager pod %s of the old JobManager left", p.Name)
		}
	}
	if names := f.haConfigMapNames("job"); len(names) != 0 {
		t.Errorf("HA ConfigMaps %v kept by a savepoint upgrade", names)
	}
	if deps := f.deploymentNames(); len(deps) != 1 {
		t.Errorf("Deployments %v", deps)
	}
}

// A last-state suspend keeps the HA ConfigMaps (upstream: the JobManager
// recovers the job through them); a stateless one deletes them.
func TestNativeSuspendHAConfigMaps(t *testing.T) {
	for _, tc := range []struct {
		mode v1beta1.UpgradeMode
		kept bool
	}{{v1beta1.UpgradeModeLastState, true}, {v1beta1.UpgradeModeStateless, false}} {
		t.Run(string(tc.mode), func(t *testing.T) {
			f := newNativeFixture(t)
			d := native(f.application("job", tc.mode))
			setConf(&d.Spec, "high-availability.type", "kubernetes", "high-availability.storageDir", "file:///tmp/ha")
			before := f.Deploy(d)
			f.haConfigMaps("job", before.Status.JobStatus.JobID)
			f.haCheckpoint("job")
			f.edit("job", func(s *v1beta1.FlinkDeploymentSpec) { s.Job.State = v1beta1.JobStateSuspended })
			f.Until("job", 30, "suspended", func(d *v1beta1.FlinkDeployment) bool {
				return d.Status.LifecycleState == v1beta1.LifecycleSuspended
			})
			if deps := f.deploymentNames(); len(deps) != 0 {
				t.Errorf("Deployments %v left while suspended", deps)
			}
			if pods := f.tmPodsOf("job"); len(pods) != 0 {
				t.Errorf("%d TaskManager pods left while suspended", len(pods))
			}
			names := f.haConfigMapNames("job")
			if kept := len(names) == 2; kept != tc.kept {
				t.Errorf("HA ConfigMaps after a %s suspend: %v", tc.mode, names)
			}
		})
	}
}

// Deleting a native FlinkDeployment deletes the JobManager Deployment, the
// TaskManager pods and the HA ConfigMaps before the finalizer goes.
func TestNativeDeletion(t *testing.T) {
	f := newNativeFixture(t)
	d := native(f.application("job", v1beta1.UpgradeModeLastState))
	setConf(&d.Spec, "high-availability.type", "kubernetes", "high-availability.storageDir", "file:///tmp/ha")
	before := f.Deploy(d)
	f.Step("job")
	f.haConfigMaps("job", before.Status.JobStatus.JobID)
	if len(f.tmPodsOf("job")) == 0 {
		t.Fatal("no TaskManager pods before the deletion")
	}
	f.markDeleted("job")
	got := f.Until("job", 10, "finalizer removed", finalized)
	if deps := f.deploymentNames(); len(deps) != 0 {
		t.Errorf("Deployments %v left", deps)
	}
	if pods := f.tmPodsOf("job"); len(pods) != 0 {
		t.Errorf("%d TaskManager pods left", len(pods))
	}
	if names := f.haConfigMapNames("job"); len(names) != 0 {
		t.Errorf("HA ConfigMaps %v left", names)
	}
	if got.Status.LifecycleState != v1beta1.LifecycleDeleting || !hasEvent(f.Events(), "Normal", reasons.ReasonCleanup) {
		t.Errorf("%s", statusString(got))
	}
}

// A TaskManager pod that never goes (stuck terminating) does not hold the
// deletion past kubernetes.operator.resource.cleanup.timeout (default 5 min):
// the finalizer goes with a Warning.
func TestNativeDeletionNeverHangs(t *testing.T) {
	f := newNativeFixture(t)
	f.Deploy(native(f.application("job", v1beta1.UpgradeModeSavepoint)))
	f.Step("job")
	stuck := f.tmPodsOf("job")[0]
	now := metav1.NewTime(f.Clock.Now())
	stuck.DeletionTimestamp = &now
	stuck.Finalizers = []string{"example.com/never"}
	if _, err := f.Kube.CoreV1().Pods(ns).Update(f.Ctx, &stuck, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.markDeleted("job")
	f.Step("job")
	if finalized(f.Get("job")) {
		t.Fatalf("finalizer removed while the cluster is still there")
	}
	f.Until("job", 200, "finalizer removed", finalized)
	if f.Clock.Now().Sub(now.Time) > defaultCleanupTimeout+time.Minute {
		t.Errorf("deletion took %s", f.Clock.Now().Sub(now.Time))
	}
	if !hasEvent(f.Events(), "Warning", reasons.ReasonCleanup) {
		t.Errorf("no Warning Cleanup event")
	}
}

// Switching an existing deployment between standalone and native is an
// upgrade: the old cluster is torn down (its TaskManager Deployment too)
// and the new one restores from the stop's savepoint; and back.
func TestSwitchStandaloneNative(t *testing.T) {
	f := newNativeFixture(t)
	before := f.Deploy(f.application("job", v1beta1.UpgradeModeSavepoint))
	if _, err := f.Kube.AppsV1().Deployments(ns).Get(f.Ctx, cluster.TaskManagerDeploymentName("job"), metav1.GetOptions{}); err != nil {
		t.Fatalf("standalone TaskManager Deployment: %v", err)
	}
	f.edit("job", func(s *v1beta1.FlinkDeploymentSpec) { s.Mode = v1beta1.DeploymentModeNative })
	after := f.Until("job", 30, "switch to native", upgradedTo(2))
	if deps := f.deploymentNames(); !slices.Equal(deps, []string{cluster.JobManagerDeploymentName("job")}) {
		t.Fatalf("Deployments %v after the switch", deps)
	}
	if jm := f.jmDeployment("job"); jm.Labels[cluster.LabelType] != cluster.TypeNative {
		t.Errorf("JobManager labels %v", jm.Labels)
	}
	if restored, meta := f.restoredFrom("job"); restored != after.Status.JobStatus.UpgradeSavepointPath || meta.JobID != before.Status.JobStatus.JobID {
		t.Errorf("restored from %q (%+v)", restored, meta)
	}
	f.Step("job")
	f.edit("job", func(s *v1beta1.FlinkDeploymentSpec) { s.Mode = v1beta1.DeploymentModeStandalone })
	f.Until("job", 30, "switch back", upgradedTo(3))
	if pods := f.tmPodsOf("job"); len(pods) != 0 {
		t.Errorf("%d native TaskManager pods left after the switch back", len(pods))
	}
	if _, err := f.Kube.AppsV1().Deployments(ns).Get(f.Ctx, cluster.TaskManagerDeploymentName("job"), metav1.GetOptions{}); err != nil {
		t.Errorf("standalone TaskManager Deployment after the switch back: %v", err)
	}
}

// A native FlinkDeployment whose ServiceAccount does not exist, or may not
// create pods, fails at its deploy with status.error and a Warning event
// naming what is missing, creates nothing, and deploys once it is fixed;
// another FlinkDeployment is served meanwhile.
func TestNativeServiceAccountChecked(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(*nativeFixture, *v1beta1.FlinkDeployment)
		want  string
		fix   func(*nativeFixture)
	}{
		{"missing", func(f *nativeFixture, d *v1beta1.FlinkDeployment) { d.Spec.ServiceAccount = "nobody" },
			"ServiceAccount " + ns + "/nobody does not exist", func(f *nativeFixture) {
				sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "nobody", Namespace: ns}}
				if _, err := f.Kube.CoreV1().ServiceAccounts(ns).Create(f.Ctx, sa, metav1.CreateOptions{}); err != nil {
					f.T.Fatal(err)
				}
				f.Kube.PrependReactor("create", "subjectaccessreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
					r := a.(k8stesting.CreateAction).GetObject().(*authorizationv1.SubjectAccessReview).DeepCopy()
					r.Status.Allowed = true
					return true, r, nil
				})
			}},
		{"may not create pods", func(f *nativeFixture, d *v1beta1.FlinkDeployment) { f.denied["create pods"] = true },
			"ServiceAccount " + ns + "/flink may not create pods in namespace " + ns, func(f *nativeFixture) { f.denied = map[string]bool{} }},
		{"HA without configmaps", func(f *nativeFixture, d *v1beta1.FlinkDeployment) {
			setConf(&d.Spec, "high-availability.type", "kubernetes", "high-availability.storageDir", "file:///tmp/ha")
			f.denied["update configmaps"] = true
		}, "may not update configmaps in namespace " + ns + ", which Flink's resource manager and Kubernetes HA needs", func(f *nativeFixture) { f.denied = map[string]bool{} }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newNativeFixture(t)
			f.Deploy(f.application("other", v1beta1.UpgradeModeSavepoint))
			d := native(f.application("job", v1beta1.UpgradeModeSavepoint))
			tc.setup(f, d)
			f.Create(d)
			f.Step("job")
			f.Step("job")
			got := f.Get("job")
			if !strings.Contains(jobengine.ErrorMessage(got.Status.Error), tc.want) {
				t.Fatalf("status.error %q, want %q", got.Status.Error, tc.want)
			}
			if !hasEvent(f.Events(), "Warning", reasons.ReasonServiceAccount) {
				t.Errorf("no Warning %s event: %v", reasons.ReasonServiceAccount, f.Events())
			}
			if _, err := f.Kube.AppsV1().Deployments(ns).Get(f.Ctx, cluster.JobManagerDeploymentName("job"), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				t.Errorf("JobManager Deployment created: %v", err)
			}
			// The operator keeps serving the others.
			f.edit("other", newArgs)
			f.Until("other", 30, "other upgraded", upgradedTo(2))
			tc.fix(f)
			f.Until("job", 10, "deployed after the fix", running)
		})
	}
}

// withHA turns on Flink's Kubernetes HA.
func withHA(d *v1beta1.FlinkDeployment) *v1beta1.FlinkDeployment {
	setConf(&d.Spec, "high-availability.type", "kubernetes", "high-availability.storageDir", "file:///tmp/ha")
	return d
}

// A last-state upgrade of a cluster with Kubernetes HA, native or
// standalone, as upstream's: the job is not cancelled, the HA ConfigMaps
// are kept, and the new JobManager recovers the job (same id) from the
// latest checkpoint they point to, including one completed after the
// upgrade started.
func TestLastStateUpgradeFromHA(t *testing.T) {
	for _, mode := range []v1beta1.KubernetesDeploymentMode{v1beta1.DeploymentModeNative, v1beta1.DeploymentModeStandalone} {
		t.Run(string(mode), func(t *testing.T) { testLastStateUpgradeFromHA(t, mode) })
	}
}

func testLastStateUpgradeFromHA(t *testing.T, mode v1beta1.KubernetesDeploymentMode) {
	f := newNativeFixture(t)
	d := withHA(f.application("job", v1beta1.UpgradeModeLastState))
	d.Spec.Mode = mode
	before := f.Deploy(d)
	oldJM := f.jm("job")
	f.haCheckpoint("job")
	f.edit("job", newArgs)
	f.MustSync("job")
	latest := f.haCheckpoint("job") // newer than what the intent recorded
	after := f.Until("job", 30, "last-state upgrade", upgradedTo(2))
	if after.Status.JobStatus.JobID != before.Status.JobStatus.JobID {
		t.Errorf("last-state upgrade changed the job id")
	}
	if restored, _ := f.restoredFrom("job"); restored != latest {
		t.Errorf("restored from %q, want the latest checkpoint %s (HA)", restored, latest)
	}
	if st, _ := oldJM.JobState(before.Status.JobStatus.JobID); st == flink.JobCanceled {
		t.Errorf("the job was cancelled, which deletes its HA data")
	}
	if names := f.haConfigMapNames("job"); len(names) == 0 {
		t.Errorf("HA ConfigMaps deleted by a last-state upgrade")
	}
}

// A last-state upgrade with Kubernetes HA removes the job graph Flink keeps
// in its HA ConfigMaps (Flink 1.x's jobGraph-, Flink 2's executionPlan-)
// before the new JobManager is created, keeping the checkpoint pointers:
// otherwise the new JobManager recovers the old graph and the upgrade's
// changes (parallelism, say) are silently lost.
func TestNativeLastStateUpgradeDropsHAJobGraph(t *testing.T) {
	f := newNativeFixture(t)
	before := f.Deploy(withHA(native(f.application("job", v1beta1.UpgradeModeLastState))))
	jobID := before.Status.JobStatus.JobID
	latest := f.haCheckpoint("job")
	cms := f.Kube.CoreV1().ConfigMaps(ns)
	clusterCM := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: cluster.HAClusterConfigMapName("job"), Namespace: ns, Labels: cluster.HAConfigMapLabels("job")},
		Data: map[string]string{"jobGraph-" + jobID: "old graph", "executionPlan-" + jobID: "old plan", "counter": "3"}}
	if _, err := cms.Create(f.Ctx, clusterCM, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.edit("job", newArgs)
	f.Kube.ClearActions()
	f.Until("job", 30, "last-state upgrade", upgradedTo(2))
	got, err := cms.Get(f.Ctx, clusterCM.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]string{"counter": "3"}; !maps.Equal(got.Data, want) {
		t.Errorf("cluster HA ConfigMap data %v, want %v (job graphs removed, the rest kept)", got.Data, want)
	}
	jobCM, err := cms.Get(f.Ctx, cluster.HAJobConfigMapName("job", jobID), metav1.GetOptions{})
	if err != nil || !slices.Contains(slices.Collect(maps.Values(jobCM.Data)), latest) {
		t.Errorf("job HA ConfigMap lost its checkpoint pointer: %v, %v", jobCM, err)
	}
	if restored, _ := f.restoredFrom("job"); restored != latest {
		t.Errorf("restored from %q, want %s", restored, latest)
	}
	// The graph was gone before the new JobManager was created.
	removed, created := -1, -1
	for i, a := range f.Kube.Actions() {
		switch {
		case a.Matches("update", "configmaps") && a.(k8stesting.UpdateAction).GetObject().(metav1.Object).GetName() == clusterCM.Name && removed < 0:
			removed = i
		case a.Matches("create", "deployments") && a.(k8stesting.CreateAction).GetObject().(metav1.Object).GetName() == cluster.JobManagerDeploymentName("job"):
			created = i
		}
	}
	if removed < 0 || created < 0 || removed > created {
		t.Errorf("job graph removed at action %d, new JobManager created at %d; want the removal first", removed, created)
	}
}

// With the JobManager unreachable, a native last-state upgrade goes on
// when the HA metadata holds the job's latest checkpoint (upstream), and
// the new JobManager recovers from it.
func TestNativeLastStateUpgradeUnreachableFromHA(t *testing.T) {
	f := newNativeFixture(t)
	f.Deploy(withHA(native(f.application("job", v1beta1.UpgradeModeLastState))))
	latest := f.haCheckpoint("job")
	f.jm("job").InjectFault(fakejm.Fault{Status: 503})
	f.Step("job")
	f.edit("job", newArgs)
	f.Until("job", 30, "last-state upgrade", upgradedTo(2))
	if restored, _ := f.restoredFrom("job"); restored != latest {
		t.Errorf("restored from %q, want %s", restored, latest)
	}
}

// Without HA metadata for the job (no checkpoint pointer), a native
// last-state upgrade cancels the job and restores from its latest
// checkpoint read through the REST API, as in standalone mode.
func TestNativeLastStateUpgradeWithoutHAMetadata(t *testing.T) {
	f := newNativeFixture(t)
	before := f.Deploy(withHA(native(f.application("job", v1beta1.UpgradeModeLastState))))
	oldJM := f.jm("job")
	latest := f.checkpoint("job") // not in an HA ConfigMap
	f.edit("job", newArgs)
	f.Until("job", 30, "last-state upgrade", upgradedTo(2))
	if restored, _ := f.restoredFrom("job"); restored != latest {
		t.Errorf("restored from %q, want %s", restored, latest)
	}
	if st, _ := oldJM.JobState(before.Status.JobStatus.JobID); st != flink.JobCanceled {
		t.Errorf("old job %s, want CANCELED", st)
	}
}

// A teardown waits for the TaskManager pods of the old JobManager to be
// gone (the garbage collector deletes them with it) before the new
// JobManager is created, so old and new TaskManagers never run together.
func TestNativeTeardownWaitsForTaskManagerPods(t *testing.T) {
	f := newNativeFixture(t)
	f.Deploy(native(f.application("job", v1beta1.UpgradeModeStateless)))
	f.Step("job")
	slow := f.tmPodsOf("job")[0]
	slow.Finalizers = []string{"example.com/slow"} // the garbage collector waits for it
	if _, err := f.Kube.CoreV1().Pods(ns).Update(f.Ctx, &slow, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.edit("job", newArgs)
	for range 5 {
		f.Step("job")
	}
	if deps := f.deploymentNames(); len(deps) != 0 {
		t.Fatalf("Deployments %v created while a TaskManager pod of the old JobManager is left", deps)
	}
	if got := f.Get("job"); got.Status.ReconciliationStatus.State != v1beta1.ReconciliationUpgrading {
		t.Fatalf("status %s", statusString(got))
	}
	if err := f.Kube.CoreV1().Pods(ns).Delete(f.Ctx, slow.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	f.Until("job", 20, "upgrade", upgradedTo(2))
}

// legacyStandalone deploys job standalone and then makes it what an
// operator version before native mode left of a FlinkDeployment with mode
// unset (then standalone): mode unset in the spec and the recorded specs.
func legacyStandalone(t *testing.T) (*nativeFixture, *v1beta1.FlinkDeployment) {
	f := newNativeFixture(t)
	before := f.Deploy(f.application("job", v1beta1.UpgradeModeSavepoint))
	d := f.Get("job")
	d.Spec.Mode = ""
	rs := &d.Status.ReconciliationStatus
	for _, s := range []*string{&rs.LastReconciledSpec, &rs.LastStableSpec} {
		if !strings.Contains(*s, `,"mode":"standalone"`) {
			t.Fatalf("recorded spec without mode: %s", *s)
		}
		*s = strings.Replace(*s, `,"mode":"standalone"`, "", 1)
	}
	fd := f.Client.FlinkV1beta1().FlinkDeployments(ns)
	u, err := fd.Update(f.Ctx, d, metav1.UpdateOptions{})
	if err == nil {
		u.Status = d.Status
		_, err = fd.UpdateStatus(f.Ctx, u, metav1.UpdateOptions{})
	}
	if err != nil {
		t.Fatal(err)
	}
	return f, before
}

// untouched: three syncs write nothing to the cluster's objects and the
// job before keeps running standalone.
func (f *nativeFixture) untouched(before *v1beta1.FlinkDeployment, what string) {
	t := f.T
	t.Helper()
	f.Kube.ClearActions()
	for range 3 {
		f.Step("job")
	}
	for _, a := range f.Kube.Actions() {
		if v := a.GetVerb(); v != "get" && v != "list" && v != "watch" && a.GetResource().Resource != "events" {
			t.Errorf("%s: %s %s", what, v, a.GetResource().Resource)
		}
	}
	if got := f.Get("job"); got.Status.JobStatus.JobID != before.Status.JobStatus.JobID || got.Status.JobStatus.State != v1beta1.JobStatusRunning {
		t.Fatalf("%s: job %s %s, want %s still running", what, got.Status.JobStatus.JobID, got.Status.JobStatus.State, before.Status.JobStatus.JobID)
	}
	if jm := f.jmDeployment("job"); jm.Labels[cluster.LabelType] != cluster.TypeStandalone {
		t.Errorf("%s: JobManager labels %v", what, jm.Labels)
	}
}

// A cluster an operator version before native mode deployed with mode unset
// (then standalone) keeps running standalone: the syncs after the operator
// upgrade change none of its objects and restart nothing; its next deploy
// (here a parallelism change) is native, as upstream reads unset, with the
// state the upgrade took.
func TestUnsetModeKeepsLiveStandaloneUntilRedeploy(t *testing.T) {
	f, before := legacyStandalone(t)
	f.untouched(before, "mode unset, live standalone cluster")

	f.edit("job", func(s *v1beta1.FlinkDeploymentSpec) { s.Job.Parallelism = ptr.To[int32](2) })
	after := f.Until("job", 30, "upgrade", upgradedTo(2))
	if deps := f.deploymentNames(); !slices.Equal(deps, []string{cluster.JobManagerDeploymentName("job")}) {
		t.Fatalf("Deployments %v after the upgrade, want the native JobManager only", deps)
	}
	if jm := f.jmDeployment("job"); jm.Labels[cluster.LabelType] != cluster.TypeNative {
		t.Errorf("JobManager labels %v after the upgrade", jm.Labels)
	}
	if restored, meta := f.restoredFrom("job"); restored != after.Status.JobStatus.UpgradeSavepointPath || restored == "" || meta.JobID != before.Status.JobStatus.JobID {
		t.Errorf("restored from %q (%+v)", restored, meta)
	}
}

// Marking such a cluster mode: standalone is no change (nothing restarts),
// and its next deploy stays standalone.
func TestUnsetModeMarkedStandaloneIsNoChange(t *testing.T) {
	f, before := legacyStandalone(t)
	f.edit("job", func(s *v1beta1.FlinkDeploymentSpec) { s.Mode = v1beta1.DeploymentModeStandalone })
	f.untouched(before, "mode unset → standalone")
	f.edit("job", func(s *v1beta1.FlinkDeploymentSpec) { s.Job.Parallelism = ptr.To[int32](2) })
	f.Until("job", 30, "upgrade", upgradedTo(3))
	if jm := f.jmDeployment("job"); jm.Labels[cluster.LabelType] != cluster.TypeStandalone {
		t.Errorf("JobManager labels %v after the upgrade", jm.Labels)
	}
}
