package sessionjob

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/config"
	"github.com/flinkops/flink-operator/pkg/controller/controllerctx"
	"github.com/flinkops/flink-operator/pkg/controller/controllertest"
	"github.com/flinkops/flink-operator/pkg/flink"
	"github.com/flinkops/flink-operator/pkg/flink/fakejm"
	"github.com/flinkops/flink-operator/pkg/reviewstamp"
)

const ns = controllertest.Namespace

// fixture is one controller on the shared test bench (controllertest: a
// fake flink.apache.org API server, hand-fed informers, a fake clock), one
// fake JobManager playing the session cluster "session", and an HTTP server
// serving the job's jar.
type fixture struct {
	controllertest.Loop[*v1beta1.FlinkSessionJob]
	ctrl    *Controller
	jm      *fakejm.Server
	jars    *httptest.Server
	jarGets atomic.Int32

	crdMissing bool
	// reviewKeys verify cross-namespace review stamps (nil: none loaded).
	reviewKeys reviewstamp.Keys
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	f := &fixture{}
	f.Loop = controllertest.Loop[*v1beta1.FlinkSessionJob]{
		Fixture: controllertest.New(t, controllertest.Options{Kube: true}), // the autoscaler ConfigMap
		Build:   f.build,
		Resource: func(namespace string) controllertest.Resource[*v1beta1.FlinkSessionJob] {
			return f.Client.FlinkV1beta1().FlinkSessionJobs(namespace)
		},
		Status: statusString,
		Ready:  stable,
	}
	// A session cluster keeps Flink's own checkpoint retention default: a
	// job submitted without one loses its checkpoints when cancelled.
	opts := f.JobManagerOptions()
	opts.CheckpointRetention = "NO_EXTERNALIZED_CHECKPOINTS"
	f.jm = f.StartJobManager(opts)
	f.jars = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/jobs/testjob.jar" {
			http.NotFound(w, r)
			return
		}
		f.jarGets.Add(1)
		_, _ = w.Write([]byte("PK\x03\x04 not really a jar"))
	}))
	t.Cleanup(f.jars.Close)
	// The test jar server is http on 127.0.0.1, which upstream's artifact
	// defaults refuse (artifacts_test.go tests them).
	f.Config[config.KeyUserArtifactsAllowedSchemes] = "http,https,file"
	f.Config[config.KeyUserArtifactsDisallowRestrictedHosts] = "false"
	f.Config[config.KeyUserArtifactsBaseDir] = filepath.Join(f.Dir, "artifacts")
	f.Restart()
	return f
}

// build makes the controller (Restart calls it).
func (f *fixture) build() (sync controllertest.SyncFunc, err error) {
	f.ctrl, err = New(controllerctx.Context{
		Client:   f.Client,
		Kube:     f.Kube,
		Caches:   f.Caches,
		Recorder: f.Recorder,
		Config:   f.Config,
		Clock:    f.Clock,
		Endpoints: func(d *v1beta1.FlinkDeployment, _ int) (string, error) {
			if d.Name != "session" {
				return "", fmt.Errorf("no JobManager for %s", d.Name)
			}
			return f.jm.URL(), nil // f.jm, which a test may replace
		},
		NewTriggerID:       controllertest.SeqTriggerIDs(),
		SnapshotCRDMissing: f.crdMissing,
		ReviewKeys:         f.reviewKeys,
	}, Options{FaultPoint: f.FaultPoint})
	if err != nil {
		return nil, err
	}
	return f.syncSettled, nil
}

// syncSettled is the controller's Sync, then the syncs that pick up the
// outcome of the background submission it started: its completion enqueues
// the key (submissions.go). A crash (a panicking fault point) ends the sync,
// not the submission: the restarted controller meets it finished.
func (f *fixture) syncSettled(ctx context.Context, key string) (time.Duration, error) {
	defer f.settleSubmission(key)
	d, err := f.ctrl.Sync(ctx, key)
	for i := 0; err == nil && i < 3 && f.settleSubmission(key); i++ {
		f.Refresh()
		d, err = f.ctrl.Sync(ctx, key)
	}
	return d, err
}

// sessionCluster creates the READY session FlinkDeployment "session".
func (f *fixture) sessionCluster(name string, conf map[string]string) *v1beta1.FlinkDeployment {
	f.T.Helper()
	if conf == nil {
		conf = map[string]string{
			"execution.checkpointing.dir":           "file://" + filepath.Join(f.Dir, "checkpoints"),
			"execution.checkpointing.savepoint-dir": "file://" + filepath.Join(f.Dir, "savepoints"),
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
	created, err := f.Client.FlinkV1beta1().FlinkDeployments(ns).Create(f.Ctx, d, metav1.CreateOptions{})
	if err != nil {
		f.T.Fatal(err)
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

// edit changes the spec as a user would (generation bumped).
func (f *fixture) edit(name string, change func(*v1beta1.FlinkSessionJobSpec)) {
	f.T.Helper()
	f.Edit(name, func(j *v1beta1.FlinkSessionJob) { change(&j.Spec) })
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
	f.T.Helper()
	var out []runRequest
	for _, r := range f.jm.RequestsTo(fakejm.RouteJarRun) {
		var rr runRequest
		if err := json.Unmarshal(r.Body, &rr); err != nil {
			f.T.Fatalf("decoding run request %s: %v", r.Body, err)
		}
		out = append(out, rr)
	}
	return out
}

func (f *fixture) stops() int { return len(f.jm.RequestsTo(fakejm.RouteStop)) }

func hasEvent(events []string, substr string) bool {
	return slices.ContainsFunc(events, func(e string) bool { return strings.Contains(e, substr) })
}

func (f *fixture) jobState(id string) flink.JobStatus {
	f.T.Helper()
	st, ok := f.jm.JobState(id)
	if !ok {
		f.T.Fatalf("JobManager does not know job %s", id)
	}
	return st
}
