package sessionjob

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	core "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2/ktesting"
	testingclock "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	flinkcache "github.com/flinkops/flink-operator/pkg/cache"
	"github.com/flinkops/flink-operator/pkg/config"
	"github.com/flinkops/flink-operator/pkg/flink"
	"github.com/flinkops/flink-operator/pkg/flink/fakejm"
	"github.com/flinkops/flink-operator/pkg/generated/clientset/versioned/fake"
	informers "github.com/flinkops/flink-operator/pkg/generated/informers/externalversions"
	"github.com/flinkops/flink-operator/pkg/webhook/review"
)

const ns = "default"

var t0 = time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)

// fixture is one controller on a fake flink.apache.org clientset, informer
// indexers fed by hand (every sync sees exactly what the API server
// holds), a fake clock, one fake JobManager playing the session cluster
// "session", and an HTTP server serving the job's jar.
type fixture struct {
	t        *testing.T
	ctx      context.Context
	client   *fake.Clientset
	factory  informers.SharedInformerFactory
	ctrl     *Controller
	clock    *testingclock.FakeClock
	recorder *record.FakeRecorder
	cfg      config.Config
	dir      string
	jm       *fakejm.Server
	jars     *httptest.Server
	jarGets  atomic.Int32

	fault      func(key, point string)
	crdMissing bool
	// reviewKeys verify cross-namespace review stamps (nil: none loaded).
	reviewKeys review.Keys
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	_, ctx := ktesting.NewTestContext(t)
	f := &fixture{
		t: t, ctx: ctx,
		client:   fake.NewSimpleClientset(),
		clock:    testingclock.NewFakeClock(t0),
		recorder: record.NewFakeRecorder(1000),
		cfg:      config.Defaults(),
		dir:      t.TempDir(),
	}
	f.jm = fakejm.New(fakejm.Options{Version: flink.V1_20, Clock: f.clock, CompletionPolls: 1, CheckpointDir: filepath.Join(f.dir, "checkpoints")})
	t.Cleanup(f.jm.Close)
	f.jars = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/jobs/testjob.jar" {
			http.NotFound(w, r)
			return
		}
		f.jarGets.Add(1)
		_, _ = w.Write([]byte("PK\x03\x04 not really a jar"))
	}))
	t.Cleanup(f.jars.Close)
	uids := 0
	f.client.PrependReactor("create", "*", func(a core.Action) (bool, runtime.Object, error) {
		if obj, ok := a.(core.CreateAction); ok {
			if m, err := meta.Accessor(obj.GetObject()); err == nil {
				uids++
				if m.GetUID() == "" {
					m.SetUID(types.UID(fmt.Sprintf("uid-%d", uids)))
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
	caches, err := flinkcache.New(map[string]informers.SharedInformerFactory{"": f.factory})
	if err != nil {
		f.t.Fatal(err)
	}
	f.ctrl, err = New(f.client, caches, f.recorder, Options{
		Config: f.cfg,
		Clock:  f.clock,
		Endpoints: func(d *v1beta1.FlinkDeployment, _ int) (string, error) {
			if d.Name != "session" {
				return "", fmt.Errorf("no JobManager for %s", d.Name)
			}
			return f.jm.URL(), nil
		},
		FaultPoint: func(key, point string) {
			if f.fault != nil {
				f.fault(key, point)
			}
		},
		NewTriggerID:       newSeqTriggerIDs(),
		SnapshotCRDMissing: f.crdMissing,
		ReviewKeys:         f.reviewKeys,
	})
	if err != nil {
		f.t.Fatal(err)
	}
	f.refresh()
}

func newSeqTriggerIDs() func() string {
	n := 0
	return func() string {
		n++
		return fmt.Sprintf("%032x", n)
	}
}

func (f *fixture) refresh() {
	f.t.Helper()
	v := f.factory.Flink().V1beta1()
	snaps, _ := f.client.FlinkV1beta1().FlinkStateSnapshots("").List(f.ctx, metav1.ListOptions{})
	deps, _ := f.client.FlinkV1beta1().FlinkDeployments("").List(f.ctx, metav1.ListOptions{})
	jobs, _ := f.client.FlinkV1beta1().FlinkSessionJobs("").List(f.ctx, metav1.ListOptions{})
	for _, r := range []struct {
		store interface{ Replace([]any, string) error }
		objs  []any
	}{
		{v.FlinkStateSnapshots().Informer().GetIndexer(), items(snaps.Items)},
		{v.FlinkDeployments().Informer().GetIndexer(), items(deps.Items)},
		{v.FlinkSessionJobs().Informer().GetIndexer(), items(jobs.Items)},
	} {
		if err := r.store.Replace(r.objs, ""); err != nil {
			f.t.Fatal(err)
		}
	}
}

func items[T any](list []T) []any {
	out := make([]any, 0, len(list))
	for i := range list {
		out = append(out, &list[i])
	}
	return out
}

// sessionCluster creates the READY session FlinkDeployment "session".
func (f *fixture) sessionCluster(name string, conf map[string]string) *v1beta1.FlinkDeployment {
	f.t.Helper()
	if conf == nil {
		conf = map[string]string{
			"execution.checkpointing.dir":           "file://" + filepath.Join(f.dir, "checkpoints"),
			"execution.checkpointing.savepoint-dir": "file://" + filepath.Join(f.dir, "savepoints"),
		}
	}
	raw, _ := json.Marshal(conf)
	d := &v1beta1.FlinkDeployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1beta1.FlinkDeploymentSpec{
			Image: "flink:1.20", FlinkVersion: v1beta1.FlinkVersion1_20, ServiceAccount: "flink",
			Mode: v1beta1.DeploymentModeStandalone, FlinkConfiguration: &v1beta1.Configuration{Raw: raw},
		},
	}
	d.Status.JobManagerDeploymentStatus = v1beta1.JobManagerReady
	d.Status.ReconciliationStatus.State = v1beta1.ReconciliationDeployed
	d.Status.ReconciliationStatus.LastReconciledSpec = `{"spec":{"flinkVersion":"v1_20"},"resource_metadata":{"apiVersion":"flink.apache.org/v1beta1","firstDeployment":true}}`
	created, err := f.client.FlinkV1beta1().FlinkDeployments(ns).Create(f.ctx, d, metav1.CreateOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	return created
}

// sessionJob is a FlinkSessionJob on "session" running the test jar.
func (f *fixture) sessionJob(name string, mode v1beta1.UpgradeMode) *v1beta1.FlinkSessionJob {
	return &v1beta1.FlinkSessionJob{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Generation: 1},
		Spec: v1beta1.FlinkSessionJobSpec{
			DeploymentName: "session",
			Job: &v1beta1.JobSpec{
				JarURI:      f.jars.URL + "/jobs/testjob.jar",
				EntryClass:  "org.example.Main",
				Args:        []string{"--rate", "10"},
				Parallelism: ptr.To[int32](2),
				UpgradeMode: mode,
			},
		},
	}
}

func (f *fixture) create(j *v1beta1.FlinkSessionJob) {
	f.t.Helper()
	if _, err := f.client.FlinkV1beta1().FlinkSessionJobs(ns).Create(f.ctx, j, metav1.CreateOptions{}); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) get(name string) *v1beta1.FlinkSessionJob {
	f.t.Helper()
	j, err := f.client.FlinkV1beta1().FlinkSessionJobs(ns).Get(f.ctx, name, metav1.GetOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	return j
}

// edit changes the spec as a user would (generation bumped).
func (f *fixture) edit(name string, change func(*v1beta1.FlinkSessionJobSpec)) {
	f.t.Helper()
	j := f.get(name)
	change(&j.Spec)
	j.Generation++
	if _, err := f.client.FlinkV1beta1().FlinkSessionJobs(ns).Update(f.ctx, j, metav1.UpdateOptions{}); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) sync(name string) (time.Duration, error) {
	f.t.Helper()
	key := ns + "/" + name
	// A crash (a panicking fault point) ends the sync, not a submission it
	// started: the restarted controller meets it finished.
	defer f.settleSubmission(key)
	f.refresh()
	d, err := f.ctrl.Sync(f.ctx, key)
	f.refresh()
	// A background submission's completion enqueues its key: the sync that
	// follows at once picks up its outcome (submissions.go).
	for i := 0; err == nil && i < 3 && f.settleSubmission(key); i++ {
		d, err = f.ctrl.Sync(f.ctx, key)
		f.refresh()
	}
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

// step is a sync, then time passes (the requeue delay, 1 s to 30 s).
func (f *fixture) step(name string) {
	f.t.Helper()
	d := f.mustSync(name)
	f.clock.Step(max(min(d, 30*time.Second), time.Second))
}

func (f *fixture) until(name string, n int, what string, cond func(*v1beta1.FlinkSessionJob) bool) *v1beta1.FlinkSessionJob {
	f.t.Helper()
	for range n {
		f.step(name)
		if j := f.get(name); cond(j) {
			return j
		}
	}
	f.t.Fatalf("%s: not reached after %d steps; status %s", what, n, statusString(f.get(name)))
	return nil
}

func statusString(j *v1beta1.FlinkSessionJob) string {
	s := j.Status
	return fmt.Sprintf("{lifecycle=%s reconciliation=%s job=%s/%s restore=%q savepointInfo=%+v error=%q}",
		s.LifecycleState, s.ReconciliationStatus.State, s.JobStatus.JobID, s.JobStatus.State,
		s.JobStatus.UpgradeSavepointPath, s.JobStatus.SavepointInfo, s.Error)
}

func stable(j *v1beta1.FlinkSessionJob) bool {
	return j.Status.JobStatus.State == v1beta1.JobStatusRunning && j.Status.LifecycleState == v1beta1.LifecycleStable
}

// deploy creates a session job and runs it until it is stable.
func (f *fixture) deploy(j *v1beta1.FlinkSessionJob) *v1beta1.FlinkSessionJob {
	f.t.Helper()
	f.create(j)
	return f.until(j.Name, 10, "job running", stable)
}

// runs are the /jars/:id/run requests the JobManager got, decoded.
type runRequest struct {
	EntryClass            string            `json:"entryClass"`
	ProgramArgsList       []string          `json:"programArgsList"`
	Parallelism           int               `json:"parallelism"`
	JobID                 string            `json:"jobId"`
	AllowNonRestoredState bool              `json:"allowNonRestoredState"`
	SavepointPath         string            `json:"savepointPath"`
	FlinkConfiguration    map[string]string `json:"flinkConfiguration"`
}

func (f *fixture) runs() []runRequest {
	f.t.Helper()
	var out []runRequest
	for _, r := range f.jm.RequestsTo(fakejm.RouteJarRun) {
		var rr runRequest
		if err := json.Unmarshal(r.Body, &rr); err != nil {
			f.t.Fatalf("decoding run request %s: %v", r.Body, err)
		}
		out = append(out, rr)
	}
	return out
}

func (f *fixture) stops() int { return len(f.jm.RequestsTo(fakejm.RouteStop)) }

func (f *fixture) snapshots() []v1beta1.FlinkStateSnapshot {
	f.t.Helper()
	l, err := f.client.FlinkV1beta1().FlinkStateSnapshots(ns).List(f.ctx, metav1.ListOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	return l.Items
}

// events drains the recorded events.
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

func hasEvent(events []string, substr string) bool {
	for _, e := range events {
		if strings.Contains(e, substr) {
			return true
		}
	}
	return false
}

func (f *fixture) jobState(id string) flink.JobStatus {
	f.t.Helper()
	st, ok := f.jm.JobState(id)
	if !ok {
		f.t.Fatalf("JobManager does not know job %s", id)
	}
	return st
}
