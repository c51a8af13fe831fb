package deployment

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	kubeinformers "k8s.io/client-go/informers"
	kubefake "k8s.io/client-go/kubernetes/fake"
	core "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2/ktesting"
	testingclock "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	flinkcache "github.com/flinkops/flink-operator/pkg/cache"
	"github.com/flinkops/flink-operator/pkg/cluster"
	"github.com/flinkops/flink-operator/pkg/config"
	"github.com/flinkops/flink-operator/pkg/flink"
	"github.com/flinkops/flink-operator/pkg/flink/fakejm"
	"github.com/flinkops/flink-operator/pkg/generated/clientset/versioned/fake"
	informers "github.com/flinkops/flink-operator/pkg/generated/informers/externalversions"
	"github.com/flinkops/flink-operator/pkg/webhook/review"
)

const ns = "default"

var t0 = time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)

// fixture is one controller on fake clientsets (flink.apache.org and
// Kubernetes), informer indexers fed by hand (so every sync sees exactly
// what the API servers hold), a fake clock, and a fake JobManager per
// JobManager Deployment that the test "runs" with kubeTick.
type fixture struct {
	t        *testing.T
	ctx      context.Context
	client   *fake.Clientset
	kube     *kubefake.Clientset
	factory  informers.SharedInformerFactory
	kfactory kubeinformers.SharedInformerFactory
	caches   *flinkcache.Caches
	ctrl     *Controller
	clock    *testingclock.FakeClock
	recorder *record.FakeRecorder
	cfg      config.Config
	dir      string // savepoints and checkpoints live here

	// jms are the running fake JobManagers by FlinkDeployment name; each
	// belongs to one incarnation of the JobManager Deployment.
	jms   map[string]*jmProcess
	all   []*fakejm.Server // every JobManager ever started, for counting operations
	jmOpt fakejm.Options   // options of the next JobManagers

	// broken FlinkDeployments get JobManager pods that never become ready.
	broken map[string]bool

	// fault, when set, is called at every fault point of the controller.
	fault func(key, point string)

	// crdMissing runs the controller as without the FlinkStateSnapshot CRD.
	crdMissing bool

	// reviewKeys verify cross-namespace review stamps (nil: none loaded).
	reviewKeys review.Keys
}

// jmProcess is a running JobManager: the fake server and what it runs.
type jmProcess struct {
	*fakejm.Server
	jobID   string // the application job ("" for a session cluster)
	restore string // --fromSavepoint
	deploy  types.UID
}

func newFixture(t *testing.T, objs ...runtime.Object) *fixture {
	t.Helper()
	_, ctx := ktesting.NewTestContext(t)
	f := &fixture{
		t: t, ctx: ctx,
		client:   fake.NewSimpleClientset(objs...),
		kube:     kubefake.NewSimpleClientset(),
		clock:    testingclock.NewFakeClock(t0),
		recorder: record.NewFakeRecorder(1000),
		cfg:      config.Defaults(),
		dir:      t.TempDir(),
		jms:      map[string]*jmProcess{},
		broken:   map[string]bool{},
	}
	f.jmOpt = fakejm.Options{Version: flink.V1_20, Clock: f.clock, CompletionPolls: 1, CheckpointDir: filepath.Join(f.dir, "checkpoints")}
	// The API server gives every new object a UID and creation time.
	uids := 0
	f.kube.PrependReactor("create", "*", func(a core.Action) (bool, runtime.Object, error) {
		if obj, ok := a.(core.CreateAction); ok {
			if m, err := meta.Accessor(obj.GetObject()); err == nil {
				uids++
				m.SetUID(types.UID(fmt.Sprintf("kube-uid-%d", uids)))
				m.SetCreationTimestamp(metav1.NewTime(f.clock.Now()))
			}
		}
		return false, nil, nil
	})
	// So does the flink.apache.org API server (keeping what a test set).
	f.client.PrependReactor("create", "*", func(a core.Action) (bool, runtime.Object, error) {
		if obj, ok := a.(core.CreateAction); ok {
			if m, err := meta.Accessor(obj.GetObject()); err == nil {
				uids++
				if m.GetUID() == "" {
					m.SetUID(types.UID(fmt.Sprintf("flink-uid-%d", uids)))
				}
				if m.GetCreationTimestamp().Time.IsZero() {
					m.SetCreationTimestamp(metav1.NewTime(f.clock.Now()))
				}
			}
		}
		return false, nil, nil
	})
	f.restart()
	return f
}

// restart builds a new controller (fresh memory, same API state), as after
// an operator crash.
func (f *fixture) restart() {
	f.factory = informers.NewSharedInformerFactory(f.client, 0)
	f.kfactory = kubeinformers.NewSharedInformerFactory(f.kube, 0)
	caches, err := flinkcache.New(map[string]informers.SharedInformerFactory{"": f.factory})
	if err != nil {
		f.t.Fatal(err)
	}
	f.caches = caches
	f.ctrl, err = New(f.client, f.kube, caches, map[string]kubeinformers.SharedInformerFactory{"": f.kfactory}, f.recorder, Options{
		Config: f.cfg,
		Clock:  f.clock,
		Endpoints: func(d *v1beta1.FlinkDeployment, _ int) (string, error) {
			jm, ok := f.jms[d.Name]
			if !ok {
				return "", fmt.Errorf("no JobManager for %s", d.Name)
			}
			return jm.URL(), nil
		},
		FaultPoint: func(key, point string) {
			if f.fault != nil {
				f.fault(key, point)
			}
		},
		SnapshotCRDMissing: f.crdMissing,
		ReviewKeys:         f.reviewKeys,
	})
	if err != nil {
		f.t.Fatal(err)
	}
	f.refresh()
}

// refresh copies the fake API servers' objects into the informer indexers.
func (f *fixture) refresh() {
	f.t.Helper()
	replace := func(store interface{ Replace([]any, string) error }, objs []any) {
		if err := store.Replace(objs, ""); err != nil {
			f.t.Fatal(err)
		}
	}
	v := f.factory.Flink().V1beta1()
	snaps, _ := f.client.FlinkV1beta1().FlinkStateSnapshots("").List(f.ctx, metav1.ListOptions{})
	deps, _ := f.client.FlinkV1beta1().FlinkDeployments("").List(f.ctx, metav1.ListOptions{})
	replace(v.FlinkStateSnapshots().Informer().GetIndexer(), items(snaps.Items))
	replace(v.FlinkDeployments().Informer().GetIndexer(), items(deps.Items))
	jobs, _ := f.client.FlinkV1beta1().FlinkSessionJobs("").List(f.ctx, metav1.ListOptions{})
	replace(v.FlinkSessionJobs().Informer().GetIndexer(), items(jobs.Items))

	ds, _ := f.kube.AppsV1().Deployments("").List(f.ctx, metav1.ListOptions{})
	ss, _ := f.kube.CoreV1().Services("").List(f.ctx, metav1.ListOptions{})
	cms, _ := f.kube.CoreV1().ConfigMaps("").List(f.ctx, metav1.ListOptions{})
	replace(f.kfactory.Apps().V1().Deployments().Informer().GetIndexer(), items(ds.Items))
	replace(f.kfactory.Core().V1().Services().Informer().GetIndexer(), items(ss.Items))
	replace(f.kfactory.Core().V1().ConfigMaps().Informer().GetIndexer(), items(cms.Items))
}

func items[T any](list []T) []any {
	out := make([]any, 0, len(list))
	for i := range list {
		out = append(out, &list[i])
	}
	return out
}

// sync runs one Sync against fresh caches.
func (f *fixture) sync(name string) (time.Duration, error) {
	f.t.Helper()
	f.refresh()
	d, err := f.ctrl.Sync(f.ctx, ns+"/"+name)
	f.refresh()
	return d, err
}

func (f *fixture) mustSync(name string) time.Duration {
	f.t.Helper()
	d, err := f.sync(name)
	if err != nil {
		f.t.Fatalf("sync %s: %v", name, err)
	}
	return d
}

// step is one turn of the world: a sync, then Kubernetes and Flink react
// (kubeTick), then time passes (the requeue delay, at least a second).
func (f *fixture) step(name string) {
	f.t.Helper()
	d := f.mustSync(name)
	f.kubeTick()
	f.clock.Step(max(min(d, 30*time.Second), time.Second))
}

// until steps until cond holds, at most n times.
func (f *fixture) until(name string, n int, what string, cond func(*v1beta1.FlinkDeployment) bool) *v1beta1.FlinkDeployment {
	f.t.Helper()
	for range n {
		f.step(name)
		if d := f.get(name); cond(d) {
			return d
		}
	}
	d := f.get(name)
	f.t.Fatalf("%s: not reached after %d steps; status %s", what, n, statusString(d))
	return nil
}

func statusString(d *v1beta1.FlinkDeployment) string {
	s := d.Status
	return fmt.Sprintf("{lifecycle=%s reconciliation=%s jm=%s job=%s/%s restore=%q savepointInfo=%+v error=%q}",
		s.LifecycleState, s.ReconciliationStatus.State, s.JobManagerDeploymentStatus, s.JobStatus.JobID, s.JobStatus.State,
		s.JobStatus.UpgradeSavepointPath, s.JobStatus.SavepointInfo, s.Error)
}

// running reports a deployed, running, stable job.
func running(d *v1beta1.FlinkDeployment) bool {
	return d.Status.JobStatus.State == v1beta1.JobStatusRunning && d.Status.LifecycleState == v1beta1.LifecycleStable
}

// kubeTick plays Kubernetes and the Flink processes: a JobManager
// Deployment gets a ready pod, which is a fresh fake JobManager running the
// job the ConfigMap names (restoring from --fromSavepoint); a deleted
// JobManager Deployment stops its JobManager.
func (f *fixture) kubeTick() {
	f.t.Helper()
	deps, _ := f.client.FlinkV1beta1().FlinkDeployments(ns).List(f.ctx, metav1.ListOptions{})
	for _, d := range deps.Items {
		jm, err := f.kube.AppsV1().Deployments(ns).Get(f.ctx, cluster.JobManagerDeploymentName(d.Name), metav1.GetOptions{})
		if err != nil || f.broken[d.Name] {
			delete(f.jms, d.Name) // the process dies with its Deployment
			continue
		}
		jobID, restore := f.jobOf(d.Name, jm)
		if p := f.jms[d.Name]; p == nil || p.deploy != jm.UID || p.jobID != jobID || p.restore != restore {
			srv := fakejm.New(f.jmOpt)
			f.t.Cleanup(srv.Close)
			f.all = append(f.all, srv)
			if jobID != "" {
				srv.MustAddJob(fakejm.JobSpec{ID: jobID, RestoredFrom: restore})
			}
			f.jms[d.Name] = &jmProcess{Server: srv, jobID: jobID, restore: restore, deploy: jm.UID}
		}
		if jm.Status.ReadyReplicas != 1 {
			jm.Status.Replicas, jm.Status.ReadyReplicas = 1, 1
			if _, err := f.kube.AppsV1().Deployments(ns).UpdateStatus(f.ctx, jm, metav1.UpdateOptions{}); err != nil {
				f.t.Fatal(err)
			}
		}
		if tm, err := f.kube.AppsV1().Deployments(ns).Get(f.ctx, cluster.TaskManagerDeploymentName(d.Name), metav1.GetOptions{}); err == nil &&
			tm.Status.Replicas != *tm.Spec.Replicas {
			tm.Status.Replicas, tm.Status.ReadyReplicas = *tm.Spec.Replicas, *tm.Spec.Replicas
			if _, err := f.kube.AppsV1().Deployments(ns).UpdateStatus(f.ctx, tm, metav1.UpdateOptions{}); err != nil {
				f.t.Fatal(err)
			}
		}
	}
}

// jobOf reads the job id from the ConfigMap and the restore path from the
// JobManager's arguments, as the official image's entrypoint does.
func (f *fixture) jobOf(name string, jm *appsv1.Deployment) (jobID, restore string) {
	f.t.Helper()
	cm, err := f.kube.CoreV1().ConfigMaps(ns).Get(f.ctx, cluster.ConfigMapName(name), metav1.GetOptions{})
	if err != nil {
		f.t.Fatalf("JobManager Deployment without ConfigMap: %v", err)
	}
	file, ok := cm.Data[cluster.ConfigYAMLFile]
	if !ok { // Flink < 1.19: flat "key: value" lines, which YAML reads too
		file = cm.Data[cluster.LegacyConfigFile]
	}
	conf, err := config.FlattenYAML([]byte(file))
	if err != nil {
		f.t.Fatal(err)
	}
	args := jmArgs(f.t, jm)
	if i := slices.Index(args, "--fromSavepoint"); i >= 0 {
		restore = args[i+1]
	}
	if args[0] == "jobmanager" {
		return "", ""
	}
	return conf["$internal.pipeline.job-id"], restore
}

func jmArgs(t *testing.T, jm *appsv1.Deployment) []string {
	t.Helper()
	for _, c := range jm.Spec.Template.Spec.Containers {
		if c.Name == cluster.MainContainerName {
			return c.Args
		}
	}
	t.Fatalf("no main container in %s", jm.Name)
	return nil
}

// jm is the running JobManager of a FlinkDeployment.
func (f *fixture) jm(name string) *jmProcess {
	f.t.Helper()
	p := f.jms[name]
	if p == nil {
		f.t.Fatalf("no JobManager running for %s", name)
	}
	return p
}

// stops counts stop-with-savepoint operations over every JobManager.
func (f *fixture) stops() int {
	n := 0
	for _, s := range f.all {
		n += s.StartedOperations(fakejm.OpStopWithSavepoint)
	}
	return n
}

// application is a FlinkDeployment with a job on Flink 1.20 whose
// savepoint and checkpoint directories are in the test's temp dir.
func (f *fixture) application(name string, mode v1beta1.UpgradeMode) *v1beta1.FlinkDeployment {
	return &v1beta1.FlinkDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, UID: types.UID("uid-" + name), Generation: 1},
		Spec: v1beta1.FlinkDeploymentSpec{
			Image:          "flink:1.20",
			FlinkVersion:   v1beta1.FlinkVersion1_20,
			ServiceAccount: "flink",
			Mode:           v1beta1.DeploymentModeStandalone,
			FlinkConfiguration: v1beta1.NewConfiguration(map[string]string{
				config.FlinkSavepointDir:  "file://" + filepath.Join(f.dir, "savepoints"),
				config.FlinkCheckpointDir: "file://" + filepath.Join(f.dir, "checkpoints"),
			}),
			Job: &v1beta1.JobSpec{
				JarURI:      "local:///opt/flink/usrlib/job.jar",
				EntryClass:  "org.example.Job",
				Parallelism: ptr.To[int32](1),
				UpgradeMode: mode,
				State:       v1beta1.JobStateRunning,
			},
		},
	}
}

func (f *fixture) create(d *v1beta1.FlinkDeployment) {
	f.t.Helper()
	if _, err := f.client.FlinkV1beta1().FlinkDeployments(ns).Create(f.ctx, d, metav1.CreateOptions{}); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) get(name string) *v1beta1.FlinkDeployment {
	f.t.Helper()
	d, err := f.client.FlinkV1beta1().FlinkDeployments(ns).Get(f.ctx, name, metav1.GetOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	return d
}

// edit changes the spec as a user would (the generation moves).
func (f *fixture) edit(name string, change func(*v1beta1.FlinkDeploymentSpec)) {
	f.t.Helper()
	d := f.get(name)
	change(&d.Spec)
	d.Generation++
	if _, err := f.client.FlinkV1beta1().FlinkDeployments(ns).Update(f.ctx, d, metav1.UpdateOptions{}); err != nil {
		f.t.Fatal(err)
	}
}

// setConf sets Flink configuration keys of a FlinkDeployment.
func setConf(spec *v1beta1.FlinkDeploymentSpec, kv ...string) {
	values := map[string]string{}
	if v, err := spec.FlinkConfiguration.Values(); err == nil {
		for k, x := range v {
			values[k] = fmt.Sprint(x)
		}
	}
	for i := 0; i+1 < len(kv); i += 2 {
		values[kv[i]] = kv[i+1]
	}
	spec.FlinkConfiguration = v1beta1.NewConfiguration(values)
}

func (f *fixture) jmDeployment(name string) *appsv1.Deployment {
	f.t.Helper()
	d, err := f.kube.AppsV1().Deployments(ns).Get(f.ctx, cluster.JobManagerDeploymentName(name), metav1.GetOptions{})
	if err != nil {
		f.t.Fatalf("JobManager Deployment of %s: %v", name, err)
	}
	return d
}

func (f *fixture) snapshots() []v1beta1.FlinkStateSnapshot {
	list, err := f.client.FlinkV1beta1().FlinkStateSnapshots(ns).List(f.ctx, metav1.ListOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	return list.Items
}

// events drains the recorded events ("<type> <reason> <message>").
func (f *fixture) events() []string {
	var out []string
	for {
		select {
		case e := <-f.recorder.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

func hasEvent(events []string, typ, reason string) bool {
	return slices.ContainsFunc(events, func(e string) bool { return strings.HasPrefix(e, typ+" "+reason+" ") })
}

// deploy creates an application and drives it to RUNNING/STABLE.
func (f *fixture) deploy(d *v1beta1.FlinkDeployment) *v1beta1.FlinkDeployment {
	f.t.Helper()
	f.create(d)
	return f.until(d.Name, 10, "first deploy", running)
}

// checkpoint completes a checkpoint of the running job and returns its path.
func (f *fixture) checkpoint(name string) string {
	f.t.Helper()
	p := f.jm(name)
	_, path, err := p.CompleteCheckpoint(p.jobID)
	if err != nil {
		f.t.Fatal(err)
	}
	return path
}

// restoredFrom returns the snapshot the running job restored from and the
// job that wrote it.
func (f *fixture) restoredFrom(name string) (path string, meta fakejm.Metadata) {
	f.t.Helper()
	p := f.jm(name)
	if p.restore == "" {
		return "", fakejm.Metadata{}
	}
	m, err := fakejm.ReadMetadata(p.restore)
	if err != nil {
		f.t.Fatalf("reading %s: %v", p.restore, err)
	}
	return p.restore, m
}

var _ = corev1.ConfigMap{}

func readMeta(t *testing.T, path string) (string, fakejm.Metadata) {
	t.Helper()
	m, err := fakejm.ReadMetadata(path)
	if err != nil {
		t.Fatalf("reading %s: %v", path, err)
	}
	return path, m
}
