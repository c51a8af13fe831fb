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
	"k8s.io/utils/ptr"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/config"
	"github.com/flinkops/flink-operator/pkg/controller/controllerctx"
	"github.com/flinkops/flink-operator/pkg/controller/controllertest"
	"github.com/flinkops/flink-operator/pkg/flink"
	"github.com/flinkops/flink-operator/pkg/flink/fakejm"
)

const ns = controllertest.Namespace

var t0 = controllertest.T0

// fixture is one controller on the shared test bench (controllertest: a
// fake flink.apache.org API server, hand-fed informers, a fake clock) with
// one fake JobManager per Flink cluster.
type fixture struct {
	controllertest.Loop[*v1beta1.FlinkStateSnapshot]
	ctrl   *Controller
	jms    map[string]*fakejm.Server // by FlinkDeployment name
	jobIDs map[string]string         // by FlinkDeployment name
	// guard plays the operator's admission guard (nil: no webhook).
	guard func(ctx context.Context, s *v1beta1.FlinkStateSnapshot) error
	// httpClient is the operator's HTTP client for Flink REST calls (nil:
	// the controller's default).
	httpClient *http.Client
	// jobBackup keeps a FlinkDeployment a test deleted, to bring it back.
	jobBackup *v1beta1.FlinkDeployment
}

func newFixture(t *testing.T, objs ...runtime.Object) *fixture {
	t.Helper()
	f := &fixture{jms: map[string]*fakejm.Server{}, jobIDs: map[string]string{}}
	f.Loop = controllertest.Loop[*v1beta1.FlinkStateSnapshot]{
		Fixture: controllertest.New(t, controllertest.Options{Objects: objs}),
		Build:   f.build,
		Resource: func(namespace string) controllertest.Resource[*v1beta1.FlinkStateSnapshot] {
			return f.Client.FlinkV1beta1().FlinkStateSnapshots(namespace)
		},
		Status: func(s *v1beta1.FlinkStateSnapshot) string { return fmt.Sprintf("%+v", s.Status) },
		Ready:  func(s *v1beta1.FlinkStateSnapshot) bool { return s.Status.State.IsTerminal() },
	}
	f.Restart()
	return f
}

// build makes the controller (Restart calls it).
func (f *fixture) build() (controllertest.SyncFunc, error) {
	var err error
	f.ctrl, err = New(controllerctx.Context{
		Client:     f.Client,
		Caches:     f.Caches,
		Recorder:   f.Recorder,
		Config:     f.Config,
		Clock:      f.Clock,
		Endpoints:  controllertest.Endpoints(f.jms),
		HTTPClient: f.httpClient,
	}, Options{
		// The fault point of syncCrashing: right after the IN_PROGRESS write.
		AfterIntentWritten: func(key string) { f.FaultPoint(key, "after-intent") },
		AdmissionGuard:     f.guard,
	})
	if err != nil {
		return nil, err
	}
	return f.ctrl.Sync, nil
}

// normalEvents turns on the Normal snapshot events (off by default).
func (f *fixture) normalEvents() {
	f.Config[config.KeySnapshotNormalEventsEnabled] = "true"
	f.Restart()
}

// mustSyncIn syncs a snapshot of another namespace.
func (f *fixture) mustSyncIn(namespace, name string) {
	f.T.Helper()
	f.Refresh()
	if _, err := f.ctrl.Sync(f.Ctx, namespace+"/"+name); err != nil {
		f.T.Fatalf("sync %s/%s: %v", namespace, name, err)
	}
	f.Refresh()
}

// syncCrashing runs a sync that is expected to die at the fault point, as a
// kill -9 would stop the process right after the IN_PROGRESS write.
func (f *fixture) syncCrashing(name string) {
	f.T.Helper()
	f.Fault = func(string, string) { panic(controllertest.Crash{}) }
	defer func() {
		f.Fault = nil
		if r := recover(); r == nil {
			f.T.Fatal("sync did not reach the fault point")
		} else if _, ok := r.(controllertest.Crash); !ok {
			panic(r)
		}
		f.Refresh()
	}()
	_, _ = f.Sync(name)
}

// addCluster creates a FlinkDeployment with a RUNNING job on a fake
// JobManager of the given Flink version.
func (f *fixture) addCluster(name string, version v1beta1.FlinkVersion, conf map[string]string) *fakejm.Server {
	f.T.Helper()
	opts := f.JobManagerOptions()
	opts.Version = flink.MustParseVersion(string(version))
	jm := f.StartJobManager(opts)
	jobID := jm.MustAddJob(fakejm.JobSpec{})
	f.jms[name], f.jobIDs[name] = jm, jobID
	if conf == nil {
		conf = map[string]string{"execution.checkpointing.savepoint-dir": "file://" + filepath.Join(f.Dir, "savepoints")}
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
	if _, err := f.Client.FlinkV1beta1().FlinkDeployments(ns).Create(f.Ctx, dep, metav1.CreateOptions{}); err != nil {
		f.T.Fatal(err)
	}
	return jm
}

// setJobState changes the job state the FlinkDeployment reports.
func (f *fixture) setJobState(name string, state v1beta1.JobStatusState) {
	f.T.Helper()
	dep, err := f.Client.FlinkV1beta1().FlinkDeployments(ns).Get(f.Ctx, name, metav1.GetOptions{})
	if err != nil {
		f.T.Fatal(err)
	}
	dep.Status.JobStatus.State = state
	if _, err := f.Client.FlinkV1beta1().FlinkDeployments(ns).UpdateStatus(f.Ctx, dep, metav1.UpdateOptions{}); err != nil {
		f.T.Fatal(err)
	}
}

// writes counts create/update/patch actions on snapshots since the last reset.
func (f *fixture) writes() (metadata, status int) {
	for _, a := range f.Client.Actions() {
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

func (f *fixture) resetActions() { f.Client.ClearActions() }

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
	f.T.Helper()
	for range n {
		d := f.MustSync(name)
		if s := f.Get(name); s.Status.State.IsTerminal() {
			return s
		}
		f.Clock.Step(max(d, time.Second))
	}
	f.T.Fatalf("snapshot %s not terminal after %d syncs: %+v", name, n, f.Get(name).Status)
	return nil
}

func metadataExists(path string) bool {
	_, err := os.Stat(filepath.Join(strings.TrimPrefix(path, "file:"), "_metadata"))
	return err == nil
}

var _ = sets.New[string]
var _ core.Action
