package bluegreen

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
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
	"github.com/flinkops/flink-operator/pkg/controller/controllerctx"
	"github.com/flinkops/flink-operator/pkg/generated/clientset/versioned/fake"
	informers "github.com/flinkops/flink-operator/pkg/generated/informers/externalversions"
	kubefake "github.com/flinkops/flink-operator/pkg/generated/kube/kubernetes/fake"
)

const ns = "default"

var t0 = time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)

// crash is what a fault point panics with, as a kill -9 there would stop
// the operator.
type crash struct{}

// fixture runs the blue/green controller on fake clientsets, with a
// stand-in for the rest of the operator (world): the FlinkDeployment
// controller (a child's job RUNNING and STABLE at its generation, unless
// broken; SUSPENDED when its spec says so) and the snapshot controller
// (a snapshot COMPLETED at file:/savepoints/<name>, unless failing).
type fixture struct {
	t        *testing.T
	ctx      context.Context
	client   *fake.Clientset
	kube     *kubefake.Clientset
	clock    *testingclock.FakeClock
	recorder *record.FakeRecorder
	factory  informers.SharedInformerFactory
	caches   *flinkcache.Caches
	c        *Controller
	config   config.Config
	fault    func(key, point string)

	// broken children never get ready; failing snapshots fail.
	broken  map[string]bool
	failing bool
}

func newFixture(t *testing.T) *fixture {
	_, ctx := ktesting.NewTestContext(t)
	f := &fixture{t: t, ctx: ctx, client: fake.NewSimpleClientset(), kube: kubefake.NewSimpleClientset(),
		clock: testingclock.NewFakeClock(t0), recorder: record.NewFakeRecorder(1000), config: config.Defaults(),
		broken: map[string]bool{}}
	uids := 0
	f.client.PrependReactor("create", "*", func(a core.Action) (bool, runtime.Object, error) {
		o := a.(core.CreateAction).GetObject().(metav1.Object)
		uids++
		o.SetUID(types.UID(fmt.Sprintf("uid-%d", uids)))
		o.SetCreationTimestamp(metav1.NewTime(f.clock.Now()))
		o.SetGeneration(1)
		return false, nil, nil
	})
	// The API server's generation: +1 on a spec change.
	f.client.PrependReactor("update", "flinkdeployments", func(a core.Action) (bool, runtime.Object, error) {
		u := a.(core.UpdateAction)
		if u.GetSubresource() != "" {
			return false, nil, nil
		}
		d := u.GetObject().(*v1beta1.FlinkDeployment)
		old, err := f.client.Tracker().Get(v1beta1.SchemeGroupVersion.WithResource("flinkdeployments"), d.Namespace, d.Name)
		if err != nil {
			return false, nil, nil
		}
		prev := old.(*v1beta1.FlinkDeployment)
		d.Generation = prev.Generation
		if !equality.Semantic.DeepEqual(prev.Spec, d.Spec) {
			d.Generation++
		}
		return false, nil, nil
	})
	f.restart()
	return f
}

// restart is a new operator process: new informers and controller.
func (f *fixture) restart() {
	f.factory = informers.NewSharedInformerFactory(f.client, 0)
	caches, err := flinkcache.NewWithOptions(map[string]informers.SharedInformerFactory{"": f.factory}, flinkcache.Options{WithBlueGreen: true})
	if err != nil {
		f.t.Fatal(err)
	}
	f.caches = caches
	cc := controllerctx.Context{Client: f.client, Kube: f.kube, Caches: caches, Recorder: f.recorder, Config: f.config, Clock: f.clock}
	if f.c, err = New(cc, Options{Fault: func(key, point string) {
		if f.fault != nil {
			f.fault(key, point)
		}
	}}); err != nil {
		f.t.Fatal(err)
	}
}

// refresh copies the fake API server's objects into the informers.
func (f *fixture) refresh() {
	v, c := f.factory.Flink().V1beta1(), f.client.FlinkV1beta1()
	all := metav1.ListOptions{}
	bgs, err := c.FlinkBlueGreenDeployments("").List(f.ctx, all)
	f.must(err)
	deps, err := c.FlinkDeployments("").List(f.ctx, all)
	f.must(err)
	snaps, err := c.FlinkStateSnapshots("").List(f.ctx, all)
	f.must(err)
	f.must(v.FlinkBlueGreenDeployments().Informer().GetIndexer().Replace(itemsOf(bgs.Items), ""))
	f.must(v.FlinkDeployments().Informer().GetIndexer().Replace(itemsOf(deps.Items), ""))
	f.must(v.FlinkStateSnapshots().Informer().GetIndexer().Replace(itemsOf(snaps.Items), ""))
}

func itemsOf[T any](items []T) []any {
	out := make([]any, len(items))
	for i := range items {
		out[i] = &items[i]
	}
	return out
}

func (f *fixture) must(err error) {
	f.t.Helper()
	if err != nil {
		f.t.Fatal(err)
	}
}

// sync runs one sync of the blue/green deployment name.
func (f *fixture) sync(name string) (time.Duration, error) {
	f.refresh()
	return f.c.sync(f.ctx, ns+"/"+name)
}

// step is a sync that survives a crash (a new controller takes over), then
// the world's reaction, then the clock moves to the requeue (at most 15 s).
func (f *fixture) step(name string) (crashed bool) {
	f.t.Helper()
	d, err := func() (d time.Duration, err error) {
		defer func() {
			if r := recover(); r != nil {
				if _, ok := r.(crash); !ok {
					panic(r)
				}
				crashed = true
			}
		}()
		return f.sync(name)
	}()
	if crashed {
		f.restart()
	} else if err != nil {
		f.t.Logf("sync error (retried): %v", err)
	}
	f.world()
	if d <= 0 || d > 15*time.Second {
		d = 15 * time.Second
	}
	f.clock.Step(d)
	return crashed
}

// world is the rest of the operator reacting to what the API server holds.
func (f *fixture) world() {
	f.t.Helper()
	c := f.client.FlinkV1beta1()
	deps, err := c.FlinkDeployments(ns).List(f.ctx, metav1.ListOptions{})
	f.must(err)
	for i := range deps.Items {
		d := deps.Items[i].DeepCopy()
		want := d.Status.DeepCopy()
		switch {
		case d.Spec.Job != nil && d.Spec.Job.State == v1beta1.JobStateSuspended:
			want.JobStatus.State, want.LifecycleState = v1beta1.JobStatusSuspended, v1beta1.LifecycleSuspended
		case f.broken[d.Name]:
			want.JobStatus.State, want.LifecycleState = v1beta1.JobStatusReconciling, v1beta1.LifecycleDeployed
			want.Error = "the image does not exist"
		default:
			want.JobStatus.State, want.LifecycleState = v1beta1.JobStatusRunning, v1beta1.LifecycleStable
			want.JobStatus.JobID = "job-of-" + string(d.UID)
		}
		want.ObservedGeneration = d.Generation
		if !equality.Semantic.DeepEqual(*want, d.Status) {
			d.Status = *want
			_, err := c.FlinkDeployments(ns).UpdateStatus(f.ctx, d, metav1.UpdateOptions{})
			f.must(err)
		}
	}
	snaps, err := c.FlinkStateSnapshots(ns).List(f.ctx, metav1.ListOptions{})
	f.must(err)
	for i := range snaps.Items {
		s := snaps.Items[i].DeepCopy()
		if s.Status.State.IsTerminal() {
			continue
		}
		if f.failing {
			s.Status.State, s.Status.Error = v1beta1.SnapshotFailed, "savepoint failed: disk full"
		} else {
			s.Status.State, s.Status.Path, s.Status.TriggerID = v1beta1.SnapshotCompleted, "file:/savepoints/"+s.Name, "trigger-"+s.Name
		}
		_, err := c.FlinkStateSnapshots(ns).UpdateStatus(f.ctx, s, metav1.UpdateOptions{})
		f.must(err)
	}
}

// until steps name until cond holds (at most n steps).
func (f *fixture) until(name string, n int, what string, cond func(*v1beta1.FlinkBlueGreenDeployment) bool) *v1beta1.FlinkBlueGreenDeployment {
	f.t.Helper()
	for range n {
		f.step(name)
		if bg := f.get(name); cond(bg) {
			return bg
		}
	}
	bg := f.get(name)
	f.t.Fatalf("%s: not reached in %d steps: state %s, error %q, children %v", what, n, bg.Status.BlueGreenState, bg.Status.Error, f.childNames())
	return nil
}

func (f *fixture) get(name string) *v1beta1.FlinkBlueGreenDeployment {
	f.t.Helper()
	bg, err := f.client.FlinkV1beta1().FlinkBlueGreenDeployments(ns).Get(f.ctx, name, metav1.GetOptions{})
	f.must(err)
	return bg
}

func (f *fixture) child(name string) *v1beta1.FlinkDeployment {
	f.t.Helper()
	d, err := f.client.FlinkV1beta1().FlinkDeployments(ns).Get(f.ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	f.must(err)
	return d
}

func (f *fixture) childNames() []string {
	deps, err := f.client.FlinkV1beta1().FlinkDeployments(ns).List(f.ctx, metav1.ListOptions{})
	f.must(err)
	var out []string
	for _, d := range deps.Items {
		out = append(out, d.Name)
	}
	slices.Sort(out)
	return out
}

func (f *fixture) snapshots() []v1beta1.FlinkStateSnapshot {
	l, err := f.client.FlinkV1beta1().FlinkStateSnapshots(ns).List(f.ctx, metav1.ListOptions{})
	f.must(err)
	return l.Items
}

func (f *fixture) ingress(name string) *networkingv1.Ingress {
	ing, err := f.kube.NetworkingV1().Ingresses(ns).Get(f.ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	f.must(err)
	return ing
}

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

// edit changes the blue/green deployment's spec on the API server.
func (f *fixture) edit(name string, change func(*v1beta1.FlinkBlueGreenDeployment)) {
	f.t.Helper()
	bg := f.get(name)
	change(bg)
	_, err := f.client.FlinkV1beta1().FlinkBlueGreenDeployments(ns).Update(f.ctx, bg, metav1.UpdateOptions{})
	f.must(err)
}

// newBlueGreen is upstream's e2e data's shape: a native application of
// StateMachineExample with its upgrade mode.
func newBlueGreen(name string, mode v1beta1.UpgradeMode, conf map[string]string) *v1beta1.FlinkBlueGreenDeployment {
	return &v1beta1.FlinkBlueGreenDeployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1beta1.SchemeGroupVersion.String(), Kind: "FlinkBlueGreenDeployment"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: v1beta1.FlinkBlueGreenDeploymentSpec{
			Configuration: conf,
			Template: v1beta1.FlinkDeploymentTemplateSpec{Spec: v1beta1.FlinkDeploymentSpec{
				Image: "flink:1.20", FlinkVersion: v1beta1.FlinkVersion1_20, ServiceAccount: "flink",
				Mode:               v1beta1.DeploymentModeNative,
				FlinkConfiguration: v1beta1.NewConfiguration(flinkConf("1", nil)),
				Job: &v1beta1.JobSpec{JarURI: "local:///opt/flink/examples/streaming/StateMachineExample.jar",
					Parallelism: ptr.To(int32(1)), UpgradeMode: mode},
			}},
		},
	}
}

func (f *fixture) create(bg *v1beta1.FlinkBlueGreenDeployment) {
	f.t.Helper()
	_, err := f.client.FlinkV1beta1().FlinkBlueGreenDeployments(ns).Create(f.ctx, bg, metav1.CreateOptions{})
	f.must(err)
}

// setSlots is the e2e scripts' change: taskmanager.numberOfTaskSlots.
func setSlots(n string) func(*v1beta1.FlinkBlueGreenDeployment) {
	return func(bg *v1beta1.FlinkBlueGreenDeployment) {
		bg.Spec.Template.Spec.FlinkConfiguration = v1beta1.NewConfiguration(flinkConf(n, nil))
	}
}

// flinkConf is the template's configuration with slots task slots (what
// the e2e scripts change) and extra keys.
func flinkConf(slots string, extra map[string]string) map[string]string {
	c := map[string]string{"taskmanager.numberOfTaskSlots": slots, "state.savepoints.dir": "file:///savepoints",
		"execution.checkpointing.dir": "file:///checkpoints", "high-availability.type": "kubernetes",
		"high-availability.storageDir": "file:///ha"}
	maps.Copy(c, extra)
	return c
}

func countPrefix(events []string, prefix string) int {
	n := 0
	for _, e := range events {
		if strings.HasPrefix(e, prefix) {
			n++
		}
	}
	return n
}
