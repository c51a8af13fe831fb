package deployment

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/cluster"
	"github.com/flinkops/flink-operator/pkg/config"
	"github.com/flinkops/flink-operator/pkg/controller/controllerctx"
	"github.com/flinkops/flink-operator/pkg/controller/controllertest"
	"github.com/flinkops/flink-operator/pkg/flink/fakejm"
	"github.com/flinkops/flink-operator/pkg/reviewstamp"
)

const ns = controllertest.Namespace

var t0 = controllertest.T0

// fixture is one controller on the shared test bench (controllertest: fake
// flink.apache.org and Kubernetes API servers, hand-fed informers, a fake
// clock) with a fake JobManager per JobManager Deployment, which the test
// "runs" with kubeTick.
type fixture struct {
	controllertest.Loop[*v1beta1.FlinkDeployment]
	ctrl *Controller

	// jms are the running fake JobManagers by FlinkDeployment name; each
	// belongs to one incarnation of the JobManager Deployment.
	jms   map[string]*jmProcess
	jmOpt fakejm.Options // options of the next JobManagers

	// broken FlinkDeployments get JobManager pods that never become ready.
	broken map[string]bool

	// crdMissing runs the controller as without the FlinkStateSnapshot CRD.
	crdMissing bool

	// reviewKeys verify cross-namespace review stamps (nil: none loaded).
	reviewKeys reviewstamp.Keys

	// live is the operator configuration in use, as the operator's
	// dynamic configuration keeps it: each build starts it from Config;
	// Store in it is a reloaded config file.
	live *controllerctx.LiveConfig

	// haRestore, when set, is the checkpoint a native JobManager with
	// Kubernetes HA recovers its job from ("" = none), before the
	// configured restore path, as Flink does.
	haRestore func(name, jobID string) string
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
	f := &fixture{jms: map[string]*jmProcess{}, broken: map[string]bool{}}
	f.Loop = controllertest.Loop[*v1beta1.FlinkDeployment]{
		Fixture: controllertest.New(t, controllertest.Options{Objects: objs, Kube: true}),
		Build:   f.build,
		Resource: func(namespace string) controllertest.Resource[*v1beta1.FlinkDeployment] {
			return f.Client.FlinkV1beta1().FlinkDeployments(namespace)
		},
		Status: statusString,
		Ready:  running,
		Tick:   f.kubeTick,
	}
	f.jmOpt = f.JobManagerOptions()
	f.Restart()
	return f
}

// build makes the controller (Restart calls it).
func (f *fixture) build() (sync controllertest.SyncFunc, err error) {
	f.live = controllerctx.NewLiveConfig(f.Config)
	f.ctrl, err = New(controllerctx.Context{
		Client:             f.Client,
		Kube:               f.Kube,
		Caches:             f.Caches,
		Recorder:           f.Recorder,
		Config:             f.Config,
		Clock:              f.Clock,
		Endpoints:          controllertest.Endpoints(f.jms),
		SnapshotCRDMissing: f.crdMissing,
		ReviewKeys:         f.reviewKeys,
		Live:               f.live,
	}, f.KubeFactories(), Options{FaultPoint: f.FaultPoint})
	if err != nil {
		return nil, err
	}
	return f.ctrl.Sync, nil
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
	f.T.Helper()
	deps, _ := f.Client.FlinkV1beta1().FlinkDeployments(ns).List(f.Ctx, metav1.ListOptions{})
	for _, d := range deps.Items {
		jm, err := f.Kube.AppsV1().Deployments(ns).Get(f.Ctx, cluster.JobManagerDeploymentName(d.Name), metav1.GetOptions{})
		if err != nil || f.broken[d.Name] {
			delete(f.jms, d.Name) // the process dies with its Deployment
			continue
		}
		jobID, restore := f.jobOf(d.Name, jm)
		if p := f.jms[d.Name]; p == nil || p.deploy != jm.UID || p.jobID != jobID || p.restore != restore {
			srv := f.StartJobManager(f.jmOpt)
			if jobID != "" {
				srv.MustAddJob(fakejm.JobSpec{ID: jobID, RestoredFrom: restore})
			}
			f.jms[d.Name] = &jmProcess{Server: srv, jobID: jobID, restore: restore, deploy: jm.UID}
		}
		if p := f.jms[d.Name]; p.jobID != "" {
			if st, ok := p.JobState(p.jobID); ok && st.IsGloballyTerminal() {
				// Flink's cleanup of a globally terminal job drops its HA
				// metadata, the job's HA ConfigMap (and records its result).
				_ = f.Kube.CoreV1().ConfigMaps(ns).Delete(f.Ctx, cluster.HAJobConfigMapName(d.Name, p.jobID), metav1.DeleteOptions{})
			}
		}
		if jm.Status.ReadyReplicas != 1 {
			jm.Status.Replicas, jm.Status.ReadyReplicas = 1, 1
			if _, err := f.Kube.AppsV1().Deployments(ns).UpdateStatus(f.Ctx, jm, metav1.UpdateOptions{}); err != nil {
				f.T.Fatal(err)
			}
		}
		if tm, err := f.Kube.AppsV1().Deployments(ns).Get(f.Ctx, cluster.TaskManagerDeploymentName(d.Name), metav1.GetOptions{}); err == nil &&
			tm.Status.Replicas != *tm.Spec.Replicas {
			tm.Status.Replicas, tm.Status.ReadyReplicas = *tm.Spec.Replicas, *tm.Spec.Replicas
			if _, err := f.Kube.AppsV1().Deployments(ns).UpdateStatus(f.Ctx, tm, metav1.UpdateOptions{}); err != nil {
				f.T.Fatal(err)
			}
		}
	}
}

// jobOf reads the job id from the ConfigMap and the restore path from the
// JobManager's arguments, as the official image's entrypoint does.
func (f *fixture) jobOf(name string, jm *appsv1.Deployment) (jobID, restore string) {
	f.T.Helper()
	cm, err := f.Kube.CoreV1().ConfigMaps(ns).Get(f.Ctx, cluster.ConfigMapName(name), metav1.GetOptions{})
	if err != nil {
		f.T.Fatalf("JobManager Deployment without ConfigMap: %v", err)
	}
	file, ok := cm.Data[cluster.ConfigYAMLFile]
	if !ok { // Flink < 1.19: flat "key: value" lines, which YAML reads too
		file = cm.Data[cluster.LegacyConfigFile]
	}
	conf, err := config.FlattenYAML([]byte(file))
	if err != nil {
		f.T.Fatal(err)
	}
	switch conf["execution.target"] {
	case cluster.TargetSession: // native mode: everything is in the configuration
		return "", ""
	case cluster.TargetApplication:
		jobID = conf["$internal.pipeline.job-id"]
		if token := cluster.DeployTokenOf(jm); token != "" && cm.Data[cluster.EndedJobKey] == token {
			// The guard of its command (pkg/cluster endedjob.go): a session
			// JobManager, no job.
			return "", ""
		}
		if f.haRestore != nil && conf["high-availability.type"] == "kubernetes" {
			if p := f.haRestore(name, jobID); p != "" {
				return jobID, p
			}
		}
		return jobID, conf["execution.savepoint.path"]
	}
	args := jmArgs(f.T, jm)
	if i := slices.Index(args, "--fromSavepoint"); i >= 0 {
		restore = args[i+1]
	}
	if args[0] == "jobmanager" {
		return "", ""
	}
	jobID = conf["$internal.pipeline.job-id"]
	if f.haRestore != nil && conf["high-availability.type"] == "kubernetes" {
		// A standalone JobManager with Kubernetes HA recovers its job from
		// the HA metadata first, as a native one does.
		if p := f.haRestore(name, jobID); p != "" {
			return jobID, p
		}
	}
	return jobID, restore
}

func jmArgs(t testing.TB, jm *appsv1.Deployment) []string {
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
	f.T.Helper()
	p := f.jms[name]
	if p == nil {
		f.T.Fatalf("no JobManager running for %s", name)
	}
	return p
}

// stops counts stop-with-savepoint operations over every JobManager.
func (f *fixture) stops() int {
	n := 0
	for _, s := range f.JobManagers {
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
				config.FlinkSavepointDir:  "file://" + filepath.Join(f.Dir, "savepoints"),
				config.FlinkCheckpointDir: "file://" + filepath.Join(f.Dir, "checkpoints"),
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

// edit changes the spec as a user would (the generation moves).
func (f *fixture) edit(name string, change func(*v1beta1.FlinkDeploymentSpec)) {
	f.T.Helper()
	f.Edit(name, func(d *v1beta1.FlinkDeployment) { change(&d.Spec) })
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
	f.T.Helper()
	d, err := f.Kube.AppsV1().Deployments(ns).Get(f.Ctx, cluster.JobManagerDeploymentName(name), metav1.GetOptions{})
	if err != nil {
		f.T.Fatalf("JobManager Deployment of %s: %v", name, err)
	}
	return d
}

func hasEvent(events []string, typ, reason string) bool {
	return slices.ContainsFunc(events, func(e string) bool { return strings.HasPrefix(e, typ+" "+reason+" ") })
}

// checkpoint completes a checkpoint of the running job and returns its path.
func (f *fixture) checkpoint(name string) string {
	f.T.Helper()
	p := f.jm(name)
	_, path, err := p.CompleteCheckpoint(p.jobID)
	if err != nil {
		f.T.Fatal(err)
	}
	return path
}

// restoredFrom returns the snapshot the running job restored from and the
// job that wrote it.
func (f *fixture) restoredFrom(name string) (path string, meta fakejm.Metadata) {
	f.T.Helper()
	p := f.jm(name)
	if p.restore == "" {
		return "", fakejm.Metadata{}
	}
	m, err := fakejm.ReadMetadata(p.restore)
	if err != nil {
		f.T.Fatalf("reading %s: %v", p.restore, err)
	}
	return p.restore, m
}

func readMeta(t *testing.T, path string) (string, fakejm.Metadata) {
	t.Helper()
	m, err := fakejm.ReadMetadata(path)
	if err != nil {
		t.Fatalf("reading %s: %v", path, err)
	}
	return path, m
}
