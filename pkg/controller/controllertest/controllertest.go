// Package controllertest is the test bench the controller tests share: one
// controller on fake clientsets (flink.apache.org and, optionally,
// Kubernetes), informer indexers fed by hand from the fake API servers (so
// every sync sees exactly what they hold), a fake clock, a FakeRecorder,
// in-process fake JobManagers (package fakejm) and a sync loop.
//
// Fixture holds the fakes; Loop adds, for one kind of object, restarting the
// controller, syncing, stepping time and driving an object to a condition.
// A controller package's fixture_test.go embeds a Loop and keeps only what
// is its own: how to build the controller, what the world does after a sync
// and its objects' builders.
//
// Only tests import this package; production code must not.
package controllertest

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	core "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2/ktesting"
	testingclock "k8s.io/utils/clock/testing"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	flinkcache "github.com/flinkops/flink-operator/pkg/cache"
	"github.com/flinkops/flink-operator/pkg/config"
	"github.com/flinkops/flink-operator/pkg/endpoints"
	"github.com/flinkops/flink-operator/pkg/flink"
	"github.com/flinkops/flink-operator/pkg/flink/fakejm"
	"github.com/flinkops/flink-operator/pkg/generated/clientset/versioned/fake"
	informers "github.com/flinkops/flink-operator/pkg/generated/informers/externalversions"
	kubeinformers "github.com/flinkops/flink-operator/pkg/generated/kube/informers"
	kubefake "github.com/flinkops/flink-operator/pkg/generated/kube/kubernetes/fake"
)

// Namespace is where the tests' objects live.
const Namespace = "default"

// T0 is the fake clock's start.
var T0 = time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)

// Options shape a Fixture.
type Options struct {
	// Objects are on the flink.apache.org API server from the start.
	Objects []runtime.Object
	// Kube adds a fake Kubernetes API server (Kube, KubeFactory), whose
	// Deployments, Services and ConfigMaps Refresh feeds to the informers.
	Kube bool
}

// Fixture is the fakes one controller runs on.
type Fixture struct {
	T      testing.TB
	Ctx    context.Context
	Client *fake.Clientset
	// Kube is nil without Options.Kube.
	Kube *kubefake.Clientset
	// Factory, KubeFactory (nil without Options.Kube) and Caches are new at
	// every Loop.Restart, as in a new operator process.
	Factory     informers.SharedInformerFactory
	KubeFactory kubeinformers.SharedInformerFactory
	Caches      *flinkcache.Caches
	Clock       *testingclock.FakeClock
	Recorder    *record.FakeRecorder
	// Config is the operator configuration of the next controller built.
	Config config.Config
	// Dir is the test's temporary directory (savepoints, checkpoints).
	Dir string
	// Fault, when set, is called at every fault point (see FaultPoint).
	Fault func(key, point string)
	// JobManagers are all fake JobManagers StartJobManager started.
	JobManagers []*fakejm.Server
}

// New makes the fakes. Like API servers, the fake ones give a created
// object a UID and a creation time (keeping those the test set, on
// flink.apache.org objects).
func New(t testing.TB, opts Options) *Fixture {
	t.Helper()
	_, ctx := ktesting.NewTestContext(t)
	f := &Fixture{
		T: t, Ctx: ctx,
		Client:   fake.NewSimpleClientset(opts.Objects...),
		Clock:    testingclock.NewFakeClock(T0),
		Recorder: record.NewFakeRecorder(1000),
		Config:   config.Defaults(),
		Dir:      t.TempDir(),
	}
	uids := 0
	stamp := func(prefix string, keep bool) core.ReactionFunc {
		return func(a core.Action) (bool, runtime.Object, error) {
			if obj, ok := a.(core.CreateAction); ok {
				if m, err := meta.Accessor(obj.GetObject()); err == nil {
					uids++
					if !keep || m.GetUID() == "" {
						m.SetUID(types.UID(fmt.Sprintf("%s-uid-%d", prefix, uids)))
					}
					if !keep || m.GetCreationTimestamp().Time.IsZero() {
						m.SetCreationTimestamp(metav1.NewTime(f.Clock.Now()))
					}
				}
			}
			return false, nil, nil
		}
	}
	f.Client.PrependReactor("create", "*", stamp("flink", true))
	if opts.Kube {
		f.Kube = kubefake.NewSimpleClientset()
		f.Kube.PrependReactor("create", "*", stamp("kube", false))
	}
	f.newInformers()
	return f
}

// newInformers makes new informer factories and caches.
func (f *Fixture) newInformers() {
	f.T.Helper()
	f.Factory = informers.NewSharedInformerFactory(f.Client, 0)
	if f.Kube != nil {
		f.KubeFactory = kubeinformers.NewSharedInformerFactory(f.Kube, 0)
		// As the operator's informers (pkg/operator/informers.go).
		if err := f.KubeFactory.Core().V1().Pods().Informer().AddIndexers(cache.Indexers{endpoints.PodsByCluster: endpoints.ClusterIndex}); err != nil {
			f.T.Fatal(err)
		}
	}
	caches, err := flinkcache.New(map[string]informers.SharedInformerFactory{"": f.Factory})
	if err != nil {
		f.T.Fatal(err)
	}
	f.Caches = caches
}

// KubeFactories is KubeFactory as the controllers take it.
func (f *Fixture) KubeFactories() map[string]kubeinformers.SharedInformerFactory {
	return map[string]kubeinformers.SharedInformerFactory{"": f.KubeFactory}
}

// Refresh copies the fake API servers' objects into the informer indexers.
func (f *Fixture) Refresh() {
	f.T.Helper()
	replace := func(store interface{ Replace([]any, string) error }, objs []any, err error) {
		if err == nil {
			err = store.Replace(objs, "")
		}
		if err != nil {
			f.T.Fatal(err)
		}
	}
	all := metav1.ListOptions{}
	v, c := f.Factory.Flink().V1beta1(), f.Client.FlinkV1beta1()
	snaps, err := c.FlinkStateSnapshots("").List(f.Ctx, all)
	replace(v.FlinkStateSnapshots().Informer().GetIndexer(), items(snaps), err)
	deps, err := c.FlinkDeployments("").List(f.Ctx, all)
	replace(v.FlinkDeployments().Informer().GetIndexer(), items(deps), err)
	jobs, err := c.FlinkSessionJobs("").List(f.Ctx, all)
	replace(v.FlinkSessionJobs().Informer().GetIndexer(), items(jobs), err)
	if f.Kube == nil {
		return
	}
	ds, err := f.Kube.AppsV1().Deployments("").List(f.Ctx, all)
	replace(f.KubeFactory.Apps().V1().Deployments().Informer().GetIndexer(), items(ds), err)
	ss, err := f.Kube.CoreV1().Services("").List(f.Ctx, all)
	replace(f.KubeFactory.Core().V1().Services().Informer().GetIndexer(), items(ss), err)
	cms, err := f.Kube.CoreV1().ConfigMaps("").List(f.Ctx, all)
	replace(f.KubeFactory.Core().V1().ConfigMaps().Informer().GetIndexer(), items(cms), err)
	ings, err := f.Kube.NetworkingV1().Ingresses("").List(f.Ctx, all)
	replace(f.KubeFactory.Networking().V1().Ingresses().Informer().GetIndexer(), items(ings), err)
}

// items are a list's items as the indexer takes them.
func items(list runtime.Object) []any {
	objs, _ := meta.ExtractList(list) // a nil list (List failed): none
	out := make([]any, len(objs))
	for i, o := range objs {
		out[i] = o
	}
	return out
}

// FaultPoint is the controllers' FaultPoint option: it calls Fault, if set.
func (f *Fixture) FaultPoint(key, point string) {
	if f.Fault != nil {
		f.Fault(key, point)
	}
}

// Crash is what a fault point panics with, as a kill -9 would stop the
// process there; Loop.StepCrashing survives it.
type Crash struct{}

// JobManagerOptions are the usual fake JobManager's: Flink 1.20 on the
// fake clock, operations done at the first poll, checkpoints in Dir.
func (f *Fixture) JobManagerOptions() fakejm.Options {
	return fakejm.Options{Version: flink.V1_20, Clock: f.Clock, CompletionPolls: 1, CheckpointDir: filepath.Join(f.Dir, "checkpoints")}
}

// StartJobManager starts a fake JobManager, closed when the test ends.
func (f *Fixture) StartJobManager(opt fakejm.Options) *fakejm.Server {
	srv := fakejm.New(opt)
	f.T.Cleanup(srv.Close)
	f.JobManagers = append(f.JobManagers, srv)
	return srv
}

// Endpoints resolves a FlinkDeployment to the URL of its JobManager in jms
// (by name; read at each call).
func Endpoints[S interface{ URL() string }](jms map[string]S) endpoints.Resolver {
	return func(d *v1beta1.FlinkDeployment, _ int) (string, error) {
		jm, ok := jms[d.Name]
		if !ok {
			return "", fmt.Errorf("no JobManager for %s", d.Name)
		}
		return jm.URL(), nil
	}
}

// SeqTriggerIDs gives the trigger ids 000…1, 000…2, and so on.
func SeqTriggerIDs() func() string {
	n := 0
	return func() string {
		n++
		return fmt.Sprintf("%032x", n)
	}
}

// Snapshots are the FlinkStateSnapshots in Namespace.
func (f *Fixture) Snapshots() []v1beta1.FlinkStateSnapshot {
	f.T.Helper()
	list, err := f.Client.FlinkV1beta1().FlinkStateSnapshots(Namespace).List(f.Ctx, metav1.ListOptions{})
	if err != nil {
		f.T.Fatal(err)
	}
	return list.Items
}

// Events drains the recorded events ("<type> <reason> <message>").
func (f *Fixture) Events() []string {
	var out []string
	for {
		select {
		case e := <-f.Recorder.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}
