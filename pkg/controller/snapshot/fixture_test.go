package snapshot

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	core "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2/ktesting"
	testingclock "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	flinkcache "github.com/flinkops/flink-operator/pkg/cache"
	"github.com/flinkops/flink-operator/pkg/config"
	"github.com/flinkops/flink-operator/pkg/controller/controllerctx"
	"github.com/flinkops/flink-operator/pkg/flink"
	"github.com/flinkops/flink-operator/pkg/flink/fakejm"
	"github.com/flinkops/flink-operator/pkg/generated/clientset/versioned/fake"
	informers "github.com/flinkops/flink-operator/pkg/generated/informers/externalversions"
)

const ns = "default"

var t0 = time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)

// fixture is one controller on a fake clientset, informer indexers fed by
// hand (so every sync sees exactly what the API server holds), a fake clock
// and one fake JobManager per Flink cluster.
type fixture struct {
	t        *testing.T
	ctx      context.Context
	client   *fake.Clientset
	factory  informers.SharedInformerFactory
	caches   *flinkcache.Caches
	ctrl     *Controller
	clock    *testingclock.FakeClock
	recorder *record.FakeRecorder
	cfg      config.Config
	jms      map[string]*fakejm.Server // by FlinkDeployment name
	jobIDs   map[string]string         // by FlinkDeployment name
	dir      string                    // savepoint dir of the default cluster
	// crashAfterIntent makes the fault point panic, as a kill -9 would stop
	// the process right after the IN_PROGRESS write.
	crashAfterIntent bool
	// guard plays the operator's admission guard (nil: no webhook).
	guard func(ctx context.Context, s *v1beta1.FlinkStateSnapshot) error
	// httpClient is the operator's HTTP client for Flink REST calls (nil:
	// the controller's default).
	httpClient *http.Client
	// jobBackup keeps a FlinkDeployment a test deleted, to bring it back.
	jobBackup *v1beta1.FlinkDeployment
}

type crash struct{}

func newFixture(t *testing.T, objs ...runtime.Object) *fixture {
	t.Helper()
	_, ctx := ktesting.NewTestContext(t)
	f := &fixture{
		t: t, ctx: ctx,
		client:   fake.NewSimpleClientset(objs...),
		clock:    testingclock.NewFakeClock(t0),
		recorder: record.NewFakeRecorder(100),
		cfg:      config.Defaults(),
		jms:      map[string]*fakejm.Server{},
		jobIDs:   map[string]string{},
		dir:      t.TempDir(),
	}
	f.restart()
	return f
}

// normalEvents turns on the Normal snapshot events (off by default).
func (f *fixture) normalEvents() {
	f.cfg[config.KeySnapshotNormalEventsEnabled] = "true"
	f.restart()
}

// restart builds a new controller (fresh memory, same API state), as after
// an operator crash.
func (f *fixture) restart() {
	f.factory = informers.NewSharedInformerFactory(f.client, 0)
	caches, err := flinkcache.New(map[string]informers.SharedInformerFactory{"": f.factory})
	if err != nil {
		f.t.Fatal(err)
	}
	f.caches = caches
	f.ctrl, err = New(controllerctx.Context{
		Client:   f.client,
		Caches:   caches,
		Recorder: f.recorder,
		Config:   f.cfg,
		Clock:    f.clock,
		Endpoints: func(cluster *v1beta1.FlinkDeployment, _ int) (string, error) {
			jm, ok := f.jms[cluster.Name]
			if !ok {
				return "", fmt.Errorf("no JobManager for %s", cluster.Name)
			}
			return jm.URL(), nil
		},
		HTTPClient: f.httpClient,
	}, Options{
		AfterIntentWritten: func(string) {
			if f.crashAfterIntent {
				panic(crash{})
			}
		},
		AdmissionGuard: f.guard,
	})
	if err != nil {
		f.t.Fatal(err)
	}
	f.refresh()
}

// refresh copies the fake API server's objects into the informer indexers.
func (f *fixture) refresh() {
	f.t.Helper()
	v := f.factory.Flink().V1beta1()
	replace := func(store interface{ Replace([]any, string) error }, objs []any) {
		if err := store.Replace(objs, ""); err != nil {
			f.t.Fatal(err)
		}
	}
	snaps, _ := f.client.FlinkV1beta1().FlinkStateSnapshots("").List(f.ctx, metav1.ListOptions{})
	deps, _ := f.client.FlinkV1beta1().FlinkDeployments("").List(f.ctx, metav1.ListOptions{})
	jobs, _ := f.client.FlinkV1beta1().FlinkSessionJobs("").List(f.ctx, metav1.ListOptions{})
	var s, d, j []any
	for i := range snaps.Items {
		s = append(s, &snaps.Items[i])
	}
	for i := range deps.Items {
		d = append(d, &deps.Items[i])
	}
	for i := range jobs.Items {
		j = append(j, &jobs.Items[i])
	}
	replace(v.FlinkStateSnapshots().Informer().GetIndexer(), s)
	replace(v.FlinkDeployments().Informer().GetIndexer(), d)
	replace(v.FlinkSessionJobs().Informer().GetIndexer(), j)
}

// sync runs one Sync of a snapshot against fresh caches.
func (f *fixture) sync(name string) (time.Duration, error) {
	f.t.Helper()
	f.refresh()
	d, err := f.ctrl.Sync(f.ctx, ns+"/"+name)
	f.refresh()
	return d, err
}

// mustSyncIn syncs a snapshot of another namespace.
func (f *fixture) mustSyncIn(namespace, name string) {
	f.t.Helper()
	f.refresh()
	if _, err := f.ctrl.Sync(f.ctx, namespace+"/"+name); err != nil {
		f.t.Fatalf("sync %s/%s: %v", namespace, name, err)
	}
	f.refresh()
}

func (f *fixture) getIn(namespace, name string) *v1beta1.FlinkStateSnapshot {
	f.t.Helper()
	s, err := f.client.FlinkV1beta1().FlinkStateSnapshots(namespace).Get(f.ctx, name, metav1.GetOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	return s
}

func (f *fixture) mustSync(name string) time.Duration {
	f.t.Helper()
	d, err := f.sync(name)
	if err != nil {
		f.t.Fatalf("sync %s: %v", name, err)
	}
	return d
}

// syncCrashing runs a sync that is expected to die at the fault point.
func (f *fixture) syncCrashing(name string) {
	f.t.Helper()
	f.crashAfterIntent = true
	defer func() {
		f.crashAfterIntent = false
		if r := recover(); r == nil {
			f.t.Fatal("sync did not reach the fault point")
		} else if _, ok := r.(crash); !ok {
			panic(r)
		}
		f.refresh()
	}()
	_, _ = f.sync(name)
}

// addCluster creates a FlinkDeployment with a RUNNING job on a fake
// JobManager of the given Flink version.
func (f *fixture) addCluster(name string, version v1beta1.FlinkVersion, conf map[string]string) *fakejm.Server {
	f.t.Helper()
	jm := fakejm.New(fakejm.Options{
		Version:         flink.MustParseVersion(string(version)),
		Clock:           f.clock,
		CompletionPolls: 1,
		CheckpointDir:   filepath.Join(f.dir, "checkpoints"),
	})
	f.t.Cleanup(jm.Close)
	jobID := jm.MustAddJob(fakejm.JobSpec{})
	f.jms[name], f.jobIDs[name] = jm, jobID
	if conf == nil {
		conf = map[string]string{"execution.checkpointing.savepoint-dir": "file://" + filepath.Join(f.dir, "savepoints")}
	}
	dep := &v1beta1.FlinkDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: v1beta1.FlinkDeploymentSpec{
			FlinkVersion:       version,
			FlinkConfiguration: v1beta1.NewConfiguration(conf),
			Job:                &v1beta1.JobSpec{JarURI: "local:///opt/flink/job.jar", UpgradeMode: v1beta1.UpgradeModeSavepoint},
		},
		Status: v1beta1.FlinkDeploymentStatus{JobStatus: v1beta1.JobStatus{JobID: jobID, State: v1beta1.JobStatusRunning}},
	}
	if _, err := f.client.FlinkV1beta1().FlinkDeployments(ns).Create(f.ctx, dep, metav1.CreateOptions{}); err != nil {
		f.t.Fatal(err)
	}
	return jm
}

// setJobState changes the job state the FlinkDeployment reports.
func (f *fixture) setJobState(name string, state v1beta1.JobStatusState) {
	f.t.Helper()
	dep, err := f.client.FlinkV1beta1().FlinkDeployments(ns).Get(f.ctx, name, metav1.GetOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	dep.Status.JobStatus.State = state
	if _, err := f.client.FlinkV1beta1().FlinkDeployments(ns).UpdateStatus(f.ctx, dep, metav1.UpdateOptions{}); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) create(s *v1beta1.FlinkStateSnapshot) {
	f.t.Helper()
	namespace := s.Namespace
	if namespace == "" {
		namespace = ns
	}
	if _, err := f.client.FlinkV1beta1().FlinkStateSnapshots(namespace).Create(f.ctx, s, metav1.CreateOptions{}); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) get(name string) *v1beta1.FlinkStateSnapshot {
	f.t.Helper()
	s, err := f.client.FlinkV1beta1().FlinkStateSnapshots(ns).Get(f.ctx, name, metav1.GetOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	return s
}

// writes counts create/update/patch actions on snapshots since the last reset.
func (f *fixture) writes() (metadata, status int) {
	for _, a := range f.client.Actions() {
		if a.GetResource().Resource != "flinkstatesnapshots" {
			continue
		}
		switch a.GetVerb() {
		case "update", "patch":
			if a.GetSubresource() == "status" {
				status++
			} else {
				metadata++
			}
		}
	}
	return metadata, status
}

func (f *fixture) resetActions() { f.client.ClearActions() }

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

func countEvents(events []string, reason string) int {
	n := 0
	for _, e := range events {
		if strings.Contains(e, " "+reason+" ") {
			n++
		}
	}
	return n
}

func savepointSnap(name, job string) *v1beta1.FlinkStateSnapshot {
	return &v1beta1.FlinkStateSnapshot{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, CreationTimestamp: metav1.NewTime(t0)},
		Spec: v1beta1.FlinkStateSnapshotSpec{
			JobReference: &v1beta1.JobReference{Kind: v1beta1.JobReferenceKindDeployment, Name: job},
			Savepoint:    &v1beta1.SavepointSpec{},
		},
	}
}

func checkpointSnap(name, job string) *v1beta1.FlinkStateSnapshot {
	s := savepointSnap(name, job)
	s.Spec.Savepoint, s.Spec.Checkpoint = nil, &v1beta1.CheckpointSpec{}
	return s
}

func withBackoff(s *v1beta1.FlinkStateSnapshot, limit int32) *v1beta1.FlinkStateSnapshot {
	s.Spec.BackoffLimit = ptr.To(limit)
	return s
}

// drive syncs until the snapshot is terminal (advancing the clock by each
// requeue), at most n times.
func (f *fixture) drive(name string, n int) *v1beta1.FlinkStateSnapshot {
	f.t.Helper()
	for range n {
		d := f.mustSync(name)
		if s := f.get(name); s.Status.State.IsTerminal() {
			return s
		}
		f.clock.Step(max(d, time.Second))
	}
	f.t.Fatalf("snapshot %s not terminal after %d syncs: %+v", name, n, f.get(name).Status)
	return nil
}

func metadataExists(path string) bool {
	_, err := os.Stat(filepath.Join(strings.TrimPrefix(path, "file:"), "_metadata"))
	return err == nil
}

var _ = sets.New[string]
var _ core.Action
