package deployment

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	core "k8s.io/client-go/testing"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/cluster"
	"github.com/flinkops/flink-operator/pkg/controller/controllertest"
	"github.com/flinkops/flink-operator/pkg/controller/jobengine"
	"github.com/flinkops/flink-operator/pkg/reasons"
)

// A Flink log as the JobManager of an application whose entry class is not
// in the jar writes it (Flink 2.x, console appender).
const missingClassLog = `2026-12-04 02:00:01,000 INFO  org.apache.flink.runtime.entrypoint.ClusterEntrypoint        [] - Starting StandaloneApplicationClusterEntryPoint.
2026-12-04 02:00:02,000 ERROR org.apache.flink.runtime.entrypoint.ClusterEntrypoint        [] - Could not create application program.
org.apache.flink.util.FlinkException: Could not load the provided entrypoint class.
	at org.apache.flink.client.program.DefaultPackagedProgramRetriever.getPackagedProgram(DefaultPackagedProgramRetriever.java:215) ~[flink-dist-2.3.0.jar:2.3.0]
	at org.apache.flink.container.entrypoint.StandaloneApplicationClusterEntryPoint.getPackagedProgram(StandaloneApplicationClusterEntryPoint.java:149) ~[flink-dist-2.3.0.jar:2.3.0]
Caused by: org.apache.flink.client.program.ProgramInvocationException: The program's entry point class 'org.example.Missing' was not found in the jar file.
	at org.apache.flink.client.program.PackagedProgram.loadMainClass(PackagedProgram.java:481) ~[flink-dist-2.3.0.jar:2.3.0]
	... 4 more
Caused by: java.lang.ClassNotFoundException: org.example.Missing
	at java.net.URLClassLoader.findClass(URLClassLoader.java:445) ~[?:?]
	... 9 more
2026-12-04 02:00:02,100 INFO  org.apache.flink.runtime.entrypoint.ClusterEntrypoint        [] - Terminating cluster entrypoint process StandaloneApplicationClusterEntryPoint with exit code 1.
`

func TestExceptionLine(t *testing.T) {
	got := exceptionLine(missingClassLog)
	want := "org.apache.flink.util.FlinkException: Could not load the provided entrypoint class.; caused by java.lang.ClassNotFoundException: org.example.Missing"
	if got != want {
		t.Errorf("exceptionLine:\n got %q\nwant %q", got, want)
	}
	if got := exceptionLine("Exception in thread \"main\" nothing here\nplain text\n"); got != "" {
		t.Errorf("no exception: got %q", got)
	}
	if got := exceptionLine("java.lang.OutOfMemoryError: Java heap space\n\tat x.y.Z(Z.java:1)\n"); got != "java.lang.OutOfMemoryError: Java heap space" {
		t.Errorf("single: got %q", got)
	}
	long := "java.lang.IllegalStateException: " + strings.Repeat("x", 1000)
	if got := exceptionLine(long); len(got) != maxLineLen || !strings.HasSuffix(got, "...") {
		t.Errorf("long line kept %d bytes", len(got))
	}
}

var now0 = controllertest.T0

func crashed(exit int32, reason, msg string, finished time.Time) corev1.ContainerState {
	return corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
		ExitCode: exit, Reason: reason, Message: msg, FinishedAt: metav1.NewTime(finished), StartedAt: metav1.NewTime(finished.Add(-2 * time.Second)),
	}}
}

func waiting(reason, msg string) corev1.ContainerState {
	return corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: msg}}
}

var runningState = corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(now0)}}

func flinkPod(component string, cs ...corev1.ContainerStatus) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "app-" + component + "-0", Namespace: ns, Labels: cluster.Labels(cluster.Standalone, "app", component), UID: types.UID("pod-" + component)},
		Status:     corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: cs},
	}
}

func mainStatus(state, last corev1.ContainerState, restarts int32, ready bool) corev1.ContainerStatus {
	return corev1.ContainerStatus{Name: cluster.MainContainerName, Image: "flink:2.3", State: state, LastTerminationState: last, RestartCount: restarts, Ready: ready}
}

// Each failure kind, classified as upstream would (reason, ERROR or not),
// with the message naming the pod, the container and why.
func TestClassifyPod(t *testing.T) {
	line := func(cs *corev1.ContainerStatus, term *corev1.ContainerStateTerminated, previous bool) string {
		if term.Message != "" {
			return exceptionLine(term.Message)
		}
		return ""
	}
	crash := crashed(1, "Error", missingClassLog, now0.Add(-5*time.Second))
	oom := crashed(137, "OOMKilled", "", now0.Add(-5*time.Second))
	none := corev1.ContainerState{}
	unschedulable := flinkPod(cluster.ComponentTaskManager)
	unschedulable.Status.Phase = corev1.PodPending
	unschedulable.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "Unschedulable", Message: "0/3 nodes are available: 3 Insufficient memory."}}
	deleting := flinkPod(cluster.ComponentJobManager, mainStatus(waiting("CrashLoopBackOff", ""), crash, 3, false))
	deleting.DeletionTimestamp = &metav1.Time{Time: now0}
	initFailing := flinkPod(cluster.ComponentJobManager, mainStatus(waiting("PodInitializing", ""), none, 0, false))
	initFailing.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: "fetch-jar", State: waiting("CrashLoopBackOff", "back-off"), LastTerminationState: crashed(2, "Error", "", now0.Add(-time.Second)), RestartCount: 1}}

	for _, tc := range []struct {
		name      string
		pod       *corev1.Pod
		reason    string // "" = not failing
		jmError   bool
		contains  []string
		recheckGT time.Duration
	}{
		{name: "healthy", pod: flinkPod(cluster.ComponentJobManager, mainStatus(runningState, none, 0, true))},
		{name: "starting", pod: flinkPod(cluster.ComponentJobManager, mainStatus(waiting("ContainerCreating", ""), none, 0, false))},
		{name: "crash loop waiting", pod: flinkPod(cluster.ComponentJobManager, mainStatus(waiting("CrashLoopBackOff", "back-off 10s restarting failed container"), crash, 2, false)),
			reason: reasons.ReasonCrashLoopBackOff, jmError: true,
			contains: []string{"JobManager pod app-jobmanager-0", "container flink-main-container", "exit code 1", "org.example.Missing"}},
		{name: "crash loop running again, not ready", pod: flinkPod(cluster.ComponentJobManager, mainStatus(runningState, crash, 2, false)),
			reason: reasons.ReasonCrashLoopBackOff, jmError: true, contains: []string{"org.example.Missing"}},
		{name: "crash loop just terminated", pod: flinkPod(cluster.ComponentJobManager, mainStatus(crash, crash, 2, false)),
			reason: reasons.ReasonCrashLoopBackOff, jmError: true, contains: []string{"org.example.Missing"}},
		{name: "restarted, ready, recently", pod: flinkPod(cluster.ComponentTaskManager, mainStatus(runningState, crash, 1, true)),
			reason: reasons.ReasonCrashLoopBackOff, jmError: true, recheckGT: time.Minute},
		{name: "restarted long ago, ready", pod: flinkPod(cluster.ComponentTaskManager, mainStatus(runningState, crashed(1, "Error", "", now0.Add(-time.Hour)), 1, true))},
		{name: "restarted after a clean exit", pod: flinkPod(cluster.ComponentTaskManager, mainStatus(runningState, crashed(0, "Completed", "", now0.Add(-time.Second)), 1, false))},
		{name: "OOMKilled", pod: flinkPod(cluster.ComponentTaskManager, mainStatus(waiting("CrashLoopBackOff", "back-off"), oom, 4, false)),
			reason: reasons.ReasonOOMKilled, jmError: true, contains: []string{"TaskManager pod app-taskmanager-0", "OOMKilled: exit code 137"}},
		{name: "ErrImagePull", pod: flinkPod(cluster.ComponentJobManager, mainStatus(waiting("ErrImagePull", "rpc error: not found"), none, 0, false)),
			reason: reasons.ReasonImagePull, jmError: true, contains: []string{`image "flink:2.3" cannot be pulled`}},
		{name: "ImagePullBackOff", pod: flinkPod(cluster.ComponentJobManager, mainStatus(waiting("ImagePullBackOff", `Back-off pulling image "flink:2.3"`), none, 0, false)),
			reason: reasons.ReasonImagePull, jmError: true, contains: []string{`image "flink:2.3" cannot be pulled`}},
		{name: "CreateContainerConfigError", pod: flinkPod(cluster.ComponentJobManager, mainStatus(waiting("CreateContainerConfigError", `secret "s3" not found`), none, 0, false)),
			reason: "CreateContainerConfigError", jmError: true, contains: []string{`secret "s3" not found`}},
		{name: "InvalidImageName", pod: flinkPod(cluster.ComponentJobManager, mainStatus(waiting("InvalidImageName", "bad"), none, 0, false)),
			reason: "InvalidImageName", jmError: false},
		{name: "Unschedulable", pod: unschedulable, reason: reasons.ReasonUnschedulable, jmError: false, contains: []string{"cannot be scheduled: 0/3 nodes are available"}},
		{name: "deleting", pod: deleting},
		{name: "init container", pod: initFailing, reason: reasons.ReasonCrashLoopBackOff, jmError: true, contains: []string{"container fetch-jar", "exit code 2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := classifyPod(tc.pod, now0, line)
			if tc.reason == "" {
				if f != nil {
					t.Fatalf("failing: %+v", f)
				}
				return
			}
			if f == nil {
				t.Fatal("not failing")
			}
			if f.reason != tc.reason || f.jmError != tc.jmError {
				t.Errorf("reason %s, jmError %t; want %s, %t", f.reason, f.jmError, tc.reason, tc.jmError)
			}
			for _, s := range tc.contains {
				if !strings.Contains(f.message, s) {
					t.Errorf("message %q lacks %q", f.message, s)
				}
			}
			if f.recheck < tc.recheckGT || (tc.recheckGT == 0 && f.recheck != 0) {
				t.Errorf("recheck %s", f.recheck)
			}
		})
	}
	// The phases of one crash loop give one message: no flapping.
	a := classifyPod(flinkPod(cluster.ComponentJobManager, mainStatus(waiting("CrashLoopBackOff", "back-off 10s"), crash, 2, false)), now0, line)
	b := classifyPod(flinkPod(cluster.ComponentJobManager, mainStatus(runningState, crash, 3, false)), now0, line)
	c := classifyPod(flinkPod(cluster.ComponentJobManager, mainStatus(waiting("CrashLoopBackOff", "back-off 20s"), crash, 3, false)), now0, line)
	if a.message != b.message || b.message != c.message {
		t.Errorf("one crash loop, several messages:\n%s\n%s\n%s", a.message, b.message, c.message)
	}
}

// podFixture is the deployment fixture with pods: the test writes pods to
// the fake API server and every sync sees them through the pod informer.
type podFixture struct {
	*fixture
	logReads int
}

func newPodFixture(t *testing.T) *podFixture {
	f := &podFixture{fixture: newFixture(t)}
	build := f.build
	f.Build = func() (controllertest.SyncFunc, error) {
		sync, err := build()
		if err != nil {
			return nil, err
		}
		f.ctrl.podLogs = func(context.Context, string, string, string, bool) (string, error) {
			f.logReads++
			return missingClassLog, nil
		}
		return func(ctx context.Context, key string) (time.Duration, error) {
			f.refreshPods()
			return sync(ctx, key)
		}, nil
	}
	f.Restart()
	return f
}

func (f *podFixture) refreshPods() {
	f.T.Helper()
	list, err := f.Kube.CoreV1().Pods("").List(f.Ctx, metav1.ListOptions{})
	if err != nil {
		f.T.Fatal(err)
	}
	objs := make([]any, len(list.Items))
	for i := range list.Items {
		objs[i] = &list.Items[i]
	}
	if err := f.KubeFactory.Core().V1().Pods().Informer().GetIndexer().Replace(objs, ""); err != nil {
		f.T.Fatal(err)
	}
}

// setPod writes the pod of a component of dep with the given main
// container status.
func (f *podFixture) setPod(dep, component string, cs corev1.ContainerStatus) {
	f.T.Helper()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: dep + "-" + component + "-0", Namespace: ns, Labels: cluster.Labels(cluster.Standalone, dep, component), UID: types.UID(dep + "-" + component)},
		Status:     corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{cs}},
	}
	_, err := f.Kube.CoreV1().Pods(ns).Update(f.Ctx, pod, metav1.UpdateOptions{})
	if apierrors.IsNotFound(err) {
		_, err = f.Kube.CoreV1().Pods(ns).Create(f.Ctx, pod, metav1.CreateOptions{})
	}
	if err != nil {
		f.T.Fatal(err)
	}
}

func (f *podFixture) deletePods() {
	f.T.Helper()
	if err := f.Kube.CoreV1().Pods(ns).DeleteCollection(f.Ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
		f.T.Fatal(err)
	}
}

// breakJobManager makes the JobManager Deployment of dep unready (its
// process gone).
func (f *podFixture) breakJobManager(dep string) {
	f.T.Helper()
	f.broken[dep] = true
	jm := f.jmDeployment(dep)
	jm.Status.ReadyReplicas, jm.Status.AvailableReplicas = 0, 0
	if _, err := f.Kube.AppsV1().Deployments(ns).UpdateStatus(f.Ctx, jm, metav1.UpdateOptions{}); err != nil {
		f.T.Fatal(err)
	}
}

func (f *podFixture) statusWrites() int {
	n := 0
	for _, a := range f.Client.Actions() {
		if u, ok := a.(core.UpdateAction); ok && u.GetSubresource() == "status" && u.GetResource().Resource == "flinkdeployments" {
			n++
		}
	}
	return n
}

// A JobManager whose entry class is missing crash-loops from its first
// start: jobManagerDeploymentStatus ERROR, status.error naming the class
// (from the container's log), one Warning event. The crash loop goes on
// (waiting, running again, ended, waiting...) without another status write
// or event; the log of each run is read once. A fixed spec is then deployed
// at once (the job never ran: nothing to save, no savepoint attempted) and
// runs, and status.error clears.
func TestJobManagerCrashLoopAndFixedSpec(t *testing.T) {
	f := newPodFixture(t)
	app := f.application("app", v1beta1.UpgradeModeSavepoint)
	app.Spec.Job.EntryClass = "org.example.Missing"
	f.broken["app"] = true
	f.Create(app)
	f.Step("app") // deploys
	if jm := f.Get("app").Status.JobManagerDeploymentStatus; jm != v1beta1.JobManagerDeploying {
		t.Fatalf("after deploy: %s", jm)
	}
	f.Events()

	finished := f.Clock.Now()
	crash := crashed(1, "Error", "", finished)
	f.setPod("app", cluster.ComponentJobManager, mainStatus(waiting("CrashLoopBackOff", "back-off 1s restarting failed container"), crash, 1, false))
	f.MustSync("app")
	d := f.Get("app")
	if d.Status.JobManagerDeploymentStatus != v1beta1.JobManagerError || !strings.Contains(jobengine.ErrorMessage(d.Status.Error), "org.example.Missing") ||
		!strings.Contains(jobengine.ErrorMessage(d.Status.Error), "CrashLoopBackOff") {
		t.Fatalf("crash loop not surfaced: %s", statusString(d))
	}
	if d.Status.JobStatus.State != v1beta1.JobStatusReconciling {
		t.Errorf("job state %s, want RECONCILING (never seen)", d.Status.JobStatus.State)
	}
	if ev := f.Events(); countEvents(ev, "Warning CrashLoopBackOff ") != 1 || !strings.Contains(strings.Join(ev, "\n"), "org.example.Missing") {
		t.Errorf("events %q, want one Warning CrashLoopBackOff naming the class", ev)
	}

	// The crash loop goes on: no status write, no event.
	writes, reads := f.statusWrites(), f.logReads
	for i := int32(1); i <= 6; i++ {
		var st corev1.ContainerState
		switch i % 3 {
		case 0:
			st = waiting("CrashLoopBackOff", "back-off 8s restarting failed container")
		case 1:
			st = runningState
		case 2:
			st = crashed(1, "Error", "", f.Clock.Now())
		}
		f.setPod("app", cluster.ComponentJobManager, mainStatus(st, crash, 1+i/3, false))
		f.Clock.Step(3 * time.Second)
		f.MustSync("app")
	}
	if w := f.statusWrites() - writes; w != 0 {
		t.Errorf("%d status writes during a steady crash loop, want 0; status %s", w, statusString(f.Get("app")))
	}
	if ev := f.Events(); len(ev) != 0 {
		t.Errorf("events during a steady crash loop: %q", ev)
	}
	if r := f.logReads - reads; r > 3 {
		t.Errorf("%d log reads for 3 runs", r)
	}

	// The fix: a new entry class. The crash-looping cluster is torn down and
	// the fixed one deployed without a savepoint attempt.
	f.edit("app", func(s *v1beta1.FlinkDeploymentSpec) { s.Job.EntryClass = "org.example.Job" })
	old := f.jmDeployment("app").UID
	for i := 0; i < 10; i++ {
		f.Step("app")
		if jm, err := f.Kube.AppsV1().Deployments(ns).Get(f.Ctx, cluster.JobManagerDeploymentName("app"), metav1.GetOptions{}); err == nil && jm.UID != old {
			f.deletePods() // gone with their Deployment
			delete(f.broken, "app")
			break
		}
	}
	d = f.Until("app", 10, "fixed spec runs", running)
	if f.stops() != 0 {
		t.Errorf("%d stop-with-savepoint attempts on a job that never ran", f.stops())
	}
	if d.Status.Error != "" || d.Status.JobManagerDeploymentStatus != v1beta1.JobManagerReady {
		t.Errorf("after the fix: %s", statusString(d))
	}
	if p := f.jm("app"); p.restore != "" {
		t.Errorf("fixed job restored from %q, want its initial (empty) state", p.restore)
	}
}

// A job seen running whose JobManager then crash-loops (OOMKilled): ERROR
// and status.error, but jobStatus.state stays as last seen, so an upgrade
// does not take the job for one that never ran. Recovery clears both.
func TestJobManagerOOMAfterRunning(t *testing.T) {
	f := newPodFixture(t)
	f.Deploy(f.application("app", v1beta1.UpgradeModeSavepoint))
	f.setPod("app", cluster.ComponentJobManager, mainStatus(runningState, corev1.ContainerState{}, 0, true))
	f.MustSync("app")
	f.Events()

	f.breakJobManager("app")
	f.setPod("app", cluster.ComponentJobManager, mainStatus(waiting("CrashLoopBackOff", "back-off"), crashed(137, "OOMKilled", "", f.Clock.Now()), 1, false))
	f.MustSync("app")
	d := f.Get("app")
	if d.Status.JobManagerDeploymentStatus != v1beta1.JobManagerError || !strings.Contains(jobengine.ErrorMessage(d.Status.Error), "OOMKilled") {
		t.Fatalf("OOMKilled JobManager: %s", statusString(d))
	}
	if d.Status.JobStatus.State != v1beta1.JobStatusRunning {
		t.Errorf("job state %s, want RUNNING as last seen", d.Status.JobStatus.State)
	}
	if ev := f.Events(); countEvents(ev, "Warning OOMKilled ") != 1 {
		t.Errorf("events %q", ev)
	}
	if neverRan(&syncState{State: mustState(t, f, d)}) {
		t.Error("a job seen running counts as never ran")
	}

	// Recovered: ready for longer than the restart window.
	delete(f.broken, "app")
	f.setPod("app", cluster.ComponentJobManager, mainStatus(runningState, crashed(137, "OOMKilled", "", f.Clock.Now()), 1, true))
	f.Clock.Step(restartWindow)
	f.kubeTick()
	d = f.Until("app", 5, "recovered", func(d *v1beta1.FlinkDeployment) bool {
		return d.Status.JobManagerDeploymentStatus == v1beta1.JobManagerReady && d.Status.Error == ""
	})
	if d.Status.JobStatus.State != v1beta1.JobStatusRunning {
		t.Errorf("after recovery: %s", statusString(d))
	}
}

func mustState(t *testing.T, f *podFixture, d *v1beta1.FlinkDeployment) *jobengine.State[*v1beta1.FlinkDeployment, v1beta1.FlinkDeploymentSpec] {
	t.Helper()
	s, err := f.ctrl.engine.NewState(f.Ctx, ns+"/"+d.Name, d, f.Clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// A TaskManager that keeps failing while the job runs: status.error and a
// Warning (the JobManager stays READY), one write per change; the error
// clears once the TaskManager has run for the restart window.
func TestTaskManagerFailures(t *testing.T) {
	f := newPodFixture(t)
	f.Deploy(f.application("app", v1beta1.UpgradeModeSavepoint))
	f.Events()
	crash := crashed(1, "Error", "java.lang.IllegalConfigurationException: bad memory settings\n", f.Clock.Now())
	f.setPod("app", cluster.ComponentTaskManager, mainStatus(waiting("CrashLoopBackOff", "back-off"), crash, 1, false))
	f.MustSync("app")
	d := f.Get("app")
	if d.Status.JobManagerDeploymentStatus != v1beta1.JobManagerReady || !strings.Contains(jobengine.ErrorMessage(d.Status.Error), "TaskManager pod app-taskmanager-0") ||
		!strings.Contains(jobengine.ErrorMessage(d.Status.Error), "bad memory settings") {
		t.Fatalf("TaskManager crash loop: %s", statusString(d))
	}
	if ev := f.Events(); countEvents(ev, "Warning CrashLoopBackOff ") != 1 {
		t.Errorf("events %q", ev)
	}
	writes := f.statusWrites()
	f.setPod("app", cluster.ComponentTaskManager, mainStatus(runningState, crash, 2, true))
	f.MustSync("app")
	if w := f.statusWrites() - writes; w != 0 || f.Get("app").Status.Error == "" {
		t.Errorf("restarted TaskManager, ready for a moment: %d writes, status %s", w, statusString(f.Get("app")))
	}
	d = f.Until("app", 20, "TaskManager recovered", func(d *v1beta1.FlinkDeployment) bool { return d.Status.Error == "" })
	if d.Status.JobStatus.State != v1beta1.JobStatusRunning || d.Status.LifecycleState != v1beta1.LifecycleStable {
		t.Errorf("after recovery: %s", statusString(d))
	}

	// Unschedulable TaskManager: reported, not ERROR.
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "app-taskmanager-1", Namespace: ns, Labels: cluster.Labels(cluster.Standalone, "app", cluster.ComponentTaskManager)},
		Status: corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{
			Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "Unschedulable", Message: "0/1 nodes are available: 1 Insufficient cpu."}}},
	}
	if _, err := f.Kube.CoreV1().Pods(ns).Create(f.Ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.MustSync("app")
	d = f.Get("app")
	if !strings.Contains(jobengine.ErrorMessage(d.Status.Error), "cannot be scheduled: 0/1 nodes are available: 1 Insufficient cpu.") || d.Status.JobManagerDeploymentStatus != v1beta1.JobManagerReady {
		t.Errorf("unschedulable TaskManager: %s", statusString(d))
	}
	if ev := f.Events(); countEvents(ev, "Warning Unschedulable ") != 1 {
		t.Errorf("events %q", ev)
	}
}

// Pods of a Flink cluster wake their FlinkDeployment (by the app label),
// but not on changes that observe does not read.
func TestPodHandlerEnqueues(t *testing.T) {
	f := newPodFixture(t)
	h := f.ctrl.podHandler()
	pod := flinkPod(cluster.ComponentJobManager, mainStatus(runningState, corev1.ContainerState{}, 0, false))
	h.OnAdd(pod, false)
	if f.ctrl.queue.Len() != 1 {
		t.Fatalf("queue length %d after a pod add", f.ctrl.queue.Len())
	}
	key, _ := f.ctrl.queue.Get()
	if key != ns+"/app" {
		t.Errorf("enqueued %q", key)
	}
	f.ctrl.queue.Done(key)
	same := pod.DeepCopy()
	same.ResourceVersion = "2"
	same.Status.ContainerStatuses[0].State.Running.StartedAt = metav1.NewTime(now0.Add(time.Second))
	h.OnUpdate(pod, same)
	if f.ctrl.queue.Len() != 0 {
		t.Errorf("enqueued on a change observe does not read")
	}
	ready := same.DeepCopy()
	ready.Status.ContainerStatuses[0].Ready = true
	h.OnUpdate(same, ready)
	if f.ctrl.queue.Len() != 1 {
		t.Errorf("not enqueued when the pod became ready")
	}
	other := pod.DeepCopy()
	other.Labels = map[string]string{"app": "x"}
	before := f.ctrl.queue.Len()
	h.OnAdd(other, false)
	if f.ctrl.queue.Len() != before {
		t.Errorf("enqueued a pod that is not a Flink cluster's")
	}
}

// podsOf finds the pods of one cluster by its app label, standalone or
// native, and nothing else.
func TestPodsOf(t *testing.T) {
	f := newPodFixture(t)
	mk := func(name, app, typ string) {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{cluster.LabelApp: app, cluster.LabelType: typ}}}
		if _, err := f.Kube.CoreV1().Pods(ns).Create(f.Ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	mk("a-jm", "a", cluster.TypeStandalone)
	mk("a-tm-native", "a", "flink-native-kubernetes")
	mk("a-other", "a", "something-else")
	mk("b-jm", "b", cluster.TypeStandalone)
	f.refreshPods()
	pods, err := f.ctrl.owned.podsOf(&v1beta1.FlinkDeployment{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: ns}})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range pods {
		names = append(names, p.Name)
	}
	slices.Sort(names)
	if !slices.Equal(names, []string{"a-jm", "a-tm-native"}) {
		t.Errorf("pods of a: %v", names)
	}
}

// A savepoint upgrade of a running job to a spec whose JobManager
// crash-loops, then a fix: the broken job never ran, so the fix is
// deployed without another stop, from the upgrade's savepoint (the job's
// state is not lost, nor replaced by an older one).
func TestUpgradeToCrashLoopThenFix(t *testing.T) {
	f := newPodFixture(t)
	f.Deploy(f.application("app", v1beta1.UpgradeModeSavepoint))
	f.checkpoint("app")
	first := f.jmDeployment("app").UID
	// The world: the JobManager Deployment the upgrade creates crash-loops.
	f.Tick = func() {
		if jm, err := f.Kube.AppsV1().Deployments(ns).Get(f.Ctx, cluster.JobManagerDeploymentName("app"), metav1.GetOptions{}); err == nil &&
			jm.UID != first && f.Get("app").Spec.Job.EntryClass == "org.example.Missing" {
			f.broken["app"] = true
			f.setPod("app", cluster.ComponentJobManager, mainStatus(waiting("CrashLoopBackOff", "back-off"), crashed(1, "Error", "", f.Clock.Now()), 1, false))
		}
		f.kubeTick()
	}
	f.edit("app", func(s *v1beta1.FlinkDeploymentSpec) { s.Job.EntryClass = "org.example.Missing" })
	d := f.Until("app", 20, "upgraded to the broken spec, JobManager ERROR", func(d *v1beta1.FlinkDeployment) bool {
		return d.Status.JobManagerDeploymentStatus == v1beta1.JobManagerError
	})
	savepoint := d.Status.JobStatus.UpgradeSavepointPath
	if savepoint == "" || f.stops() != 1 || !strings.Contains(jobengine.ErrorMessage(d.Status.Error), "org.example.Missing") {
		t.Fatalf("after the upgrade: %d stops, status %s", f.stops(), statusString(d))
	}

	broken := f.jmDeployment("app").UID
	f.Tick = func() {
		if jm, err := f.Kube.AppsV1().Deployments(ns).Get(f.Ctx, cluster.JobManagerDeploymentName("app"), metav1.GetOptions{}); err != nil || jm.UID != broken {
			f.deletePods()
			delete(f.broken, "app")
		}
		f.kubeTick()
	}
	f.edit("app", func(s *v1beta1.FlinkDeploymentSpec) { s.Job.EntryClass = "org.example.Job" })
	d = f.Until("app", 20, "fixed spec runs", running)
	if f.stops() != 1 {
		t.Errorf("%d stops, want only the first upgrade's", f.stops())
	}
	if got, _ := f.restoredFrom("app"); got != savepoint {
		t.Errorf("fixed job restored from %q, want the upgrade savepoint %s", got, savepoint)
	}
	if d.Status.Error != "" {
		t.Errorf("after the fix: %s", statusString(d))
	}
}
