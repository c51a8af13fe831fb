package deployment

import (
	"container/heap"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	core "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	testingclock "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	flinkcache "github.com/flinkops/flink-operator/pkg/cache"
	"github.com/flinkops/flink-operator/pkg/config"
	"github.com/flinkops/flink-operator/pkg/controller/controllerctx"
	"github.com/flinkops/flink-operator/pkg/controller/snapshot"
	"github.com/flinkops/flink-operator/pkg/flink"
	"github.com/flinkops/flink-operator/pkg/flink/fakejm"
	"github.com/flinkops/flink-operator/pkg/generated/clientset/versioned/fake"
	informers "github.com/flinkops/flink-operator/pkg/generated/informers/externalversions"
	kubeinformers "github.com/flinkops/flink-operator/pkg/generated/kube/informers"
	kubefake "github.com/flinkops/flink-operator/pkg/generated/kube/kubernetes/fake"
	"github.com/flinkops/flink-operator/pkg/snapshotrules"
)

// The scale simulation runs the FlinkDeployment and FlinkStateSnapshot
// controllers together, through their real Sync paths, over fake clientsets,
// one fake JobManager per FlinkDeployment (served in-process, no sockets) and
// a fake clock. It plays what is not under test deterministically:
//
//   - the informers: after each sync, every object the sync wrote is copied
//     from the fake API server into the shared caches and its add/update/
//     delete event is delivered to both controllers' handlers (the
//     FlinkDeployment controller's real handlers; the snapshot controller's
//     are mirrored, since its queue is not reachable from here);
//   - the workqueues: a min-heap of due times per key, earliest request
//     wins, as AddAfter does; an event is due at once;
//   - the API server's finalizers (a delete of a snapshot with finalizers
//     marks it deleted; removing the last finalizer removes it) and
//     Kubernetes (a JobManager Deployment gets a ready pod, which is a fake
//     JobManager running the job the FlinkDeployment's status names).
//
// Each simulated second, every key whose time has come is synced (events
// raised meanwhile are handled in the same second); then the clock moves on.

type scaleConfig struct {
	jobs     int
	simulate time.Duration // measured, after all jobs run
	// savepointTakes is how long each Flink savepoint (and disposal) takes.
	savepointTakes time.Duration
	conf           map[string]string // the jobs' flinkConfiguration extras
}

type scaleResult struct {
	simulated                 time.Duration
	writes                    int
	writesBy                  map[string]int // "verb resource[/subresource]"
	restDeploy, restSnapshot  int
	syncsDeploy, syncsSnap    int
	created, deleted          int // snapshots
	peakLive, peakDeleting    int
	peakInFlightPerJob        int
	liveSamples               []int // every 30 s
	errors                    int
	firstError                error
	completedSavepoints       int
	warmup, wall              time.Duration
	deploymentsRunningAtStart int
}

func (r scaleResult) perSecond(n int) float64 { return float64(n) / r.simulated.Seconds() }

const (
	ctrlDeploy = iota
	ctrlSnap
)

type simKey struct {
	ctrl int
	key  string
}

type simItem struct {
	due time.Time
	seq int64
	simKey
}

type simHeap []simItem

func (h simHeap) Len() int { return len(h) }
func (h simHeap) Less(i, j int) bool {
	if !h[i].due.Equal(h[j].due) {
		return h[i].due.Before(h[j].due)
	}
	return h[i].seq < h[j].seq
}
func (h simHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *simHeap) Push(x any)   { *h = append(*h, x.(simItem)) }
func (h *simHeap) Pop() any {
	old := *h
	it := old[len(old)-1]
	*h = old[:len(old)-1]
	return it
}

// jmNetwork routes REST calls to the fake JobManagers by host and counts
// them per controller.
type jmNetwork struct {
	servers map[string]*fakejm.Server // host -> JobManager
}

type countingTransport struct {
	net   *jmNetwork
	calls *int
}

func (t countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	srv := t.net.servers[r.URL.Host]
	if srv == nil {
		return nil, fmt.Errorf("dial tcp %s: connection refused", r.URL.Host)
	}
	*t.calls++
	in := r.Clone(r.Context()) // as a server receives it: never a nil body
	if in.Body == nil {
		in.Body = http.NoBody
	}
	rec := httptest.NewRecorder()
	srv.ServeHTTP(rec, in)
	return rec.Result(), nil
}

var (
	gvrSnapshots   = v1beta1.SchemeGroupVersion.WithResource("flinkstatesnapshots")
	gvrDeployments = v1beta1.SchemeGroupVersion.WithResource("flinkdeployments")
	gvrKube        = map[string]schema.GroupVersionResource{
		"deployments": appsv1.SchemeGroupVersion.WithResource("deployments"),
		"services":    corev1.SchemeGroupVersion.WithResource("services"),
		"configmaps":  corev1.SchemeGroupVersion.WithResource("configmaps"),
	}
)

type scaleSim struct {
	tb       testing.TB
	cfg      scaleConfig
	ctx      context.Context
	clock    *testingclock.FakeClock
	client   *fake.Clientset
	kube     *kubefake.Clientset
	factory  informers.SharedInformerFactory
	kfactory kubeinformers.SharedInformerFactory
	caches   *flinkcache.Caches
	deps     *Controller
	snaps    *snapshot.Controller
	net      *jmNetwork
	dir      string

	heap    simHeap
	pending map[simKey]time.Time
	seq     int64

	measuring bool
	res       scaleResult
}

func newScaleSim(tb testing.TB, cfg scaleConfig) *scaleSim {
	s := &scaleSim{
		tb: tb, cfg: cfg,
		// Controllers log through the context; keep it quiet.
		ctx:     klog.NewContext(context.Background(), klog.Background().V(10)),
		clock:   testingclock.NewFakeClock(t0),
		client:  fake.NewSimpleClientset(),
		kube:    kubefake.NewSimpleClientset(),
		net:     &jmNetwork{servers: map[string]*fakejm.Server{}},
		dir:     tb.TempDir(),
		pending: map[simKey]time.Time{},
		res:     scaleResult{writesBy: map[string]int{}},
	}
	uids := 0
	stamp := func(a core.Action) (bool, runtime.Object, error) {
		if c, ok := a.(core.CreateAction); ok {
			if m, err := meta.Accessor(c.GetObject()); err == nil {
				uids++
				if m.GetUID() == "" {
					m.SetUID(types.UID(fmt.Sprintf("uid-%d", uids)))
				}
				m.SetCreationTimestamp(metav1.NewTime(s.clock.Now()))
			}
		}
		return false, nil, nil
	}
	s.client.PrependReactor("create", "*", stamp)
	s.kube.PrependReactor("create", "*", stamp)
	s.client.PrependReactor("delete", "flinkstatesnapshots", s.deleteSnapshot)
	s.client.PrependReactor("update", "flinkstatesnapshots", s.updateSnapshot)

	s.factory = informers.NewSharedInformerFactory(s.client, 0)
	s.kfactory = kubeinformers.NewSharedInformerFactory(s.kube, 0)
	var err error
	if s.caches, err = flinkcache.New(map[string]informers.SharedInformerFactory{"": s.factory}); err != nil {
		tb.Fatal(err)
	}
	opConf := config.Defaults()
	endpoints := func(d *v1beta1.FlinkDeployment, _ int) (string, error) { return "http://" + d.Name + ".jm", nil }
	cc := controllerctx.Context{Client: s.client, Kube: s.kube, Caches: s.caches, Recorder: &record.FakeRecorder{},
		Config: opConf, Clock: s.clock, Endpoints: endpoints}
	deployCtx := cc
	deployCtx.HTTPClient = &http.Client{Transport: countingTransport{s.net, &s.res.restDeploy}}
	s.deps, err = New(deployCtx, map[string]kubeinformers.SharedInformerFactory{"": s.kfactory}, Options{})
	if err != nil {
		tb.Fatal(err)
	}
	snapCtx := cc
	snapCtx.HTTPClient = &http.Client{Transport: countingTransport{s.net, &s.res.restSnapshot}}
	s.snaps, err = snapshot.New(snapCtx, snapshot.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	// Indexers are fed by hand; make sure every informer exists first.
	s.kfactory.Apps().V1().Deployments().Informer()
	return s
}

// deleteSnapshot emulates the API server for a snapshot with finalizers:
// the delete only marks it. A UID precondition that does not match is a
// conflict.
func (s *scaleSim) deleteSnapshot(a core.Action) (bool, runtime.Object, error) {
	d := a.(core.DeleteActionImpl)
	obj, err := s.client.Tracker().Get(gvrSnapshots, d.Namespace, d.Name)
	if err != nil {
		return false, nil, nil // the default reactor answers NotFound
	}
	snap := obj.(*v1beta1.FlinkStateSnapshot)
	if p := d.DeleteOptions.Preconditions; p != nil && p.UID != nil && *p.UID != snap.UID {
		return true, nil, apierrors.NewConflict(gvrSnapshots.GroupResource(), d.Name, fmt.Errorf("UID precondition failed"))
	}
	if len(snap.Finalizers) == 0 {
		return false, nil, nil
	}
	if snap.DeletionTimestamp == nil {
		snap.DeletionTimestamp = ptr.To(metav1.NewTime(s.clock.Now()))
		if err := s.client.Tracker().Update(gvrSnapshots, snap, d.Namespace); err != nil {
			return true, nil, err
		}
	}
	return true, nil, nil
}

// updateSnapshot removes a deleted snapshot once its last finalizer goes.
func (s *scaleSim) updateSnapshot(a core.Action) (bool, runtime.Object, error) {
	u := a.(core.UpdateAction)
	if u.GetSubresource() != "" {
		return false, nil, nil
	}
	snap := u.GetObject().(*v1beta1.FlinkStateSnapshot)
	if snap.DeletionTimestamp == nil || len(snap.Finalizers) > 0 {
		return false, nil, nil
	}
	return true, snap, s.client.Tracker().Delete(gvrSnapshots, snap.Namespace, snap.Name)
}

func (s *scaleSim) push(ctrl int, key string, due time.Time) {
	k := simKey{ctrl, key}
	if cur, ok := s.pending[k]; ok && !cur.After(due) {
		return
	}
	s.pending[k] = due
	s.seq++
	heap.Push(&s.heap, simItem{due: due, seq: s.seq, simKey: k})
}

// next pops the earliest key due now.
func (s *scaleSim) next() (simKey, bool) {
	now := s.clock.Now()
	for len(s.heap) > 0 {
		top := s.heap[0]
		if top.due.After(now) {
			return simKey{}, false
		}
		heap.Pop(&s.heap)
		if due, ok := s.pending[top.simKey]; !ok || !due.Equal(top.due) {
			continue // superseded by an earlier request
		}
		delete(s.pending, top.simKey)
		return top.simKey, true
	}
	return simKey{}, false
}

func (s *scaleSim) sync(k simKey) {
	var d time.Duration
	var err error
	if k.ctrl == ctrlDeploy {
		s.res.syncsDeploy++
		d, err = s.deps.Sync(s.ctx, k.key)
	} else {
		s.res.syncsSnap++
		d, err = s.snaps.Sync(s.ctx, k.key)
	}
	s.apply()
	switch {
	case err != nil:
		s.res.errors++
		if s.res.firstError == nil {
			s.res.firstError = fmt.Errorf("%s: %w", k.key, err)
		}
		s.push(k.ctrl, k.key, s.clock.Now().Add(time.Second)) // rate-limited retry
	case d > 0:
		s.push(k.ctrl, k.key, s.clock.Now().Add(d))
	}
}

type objRef struct {
	kube               bool
	resource, ns, name string
}

// apply plays the informers for what the last sync wrote.
func (s *scaleSim) apply() {
	var touched []objRef
	seen := map[objRef]bool{}
	collect := func(actions []core.Action, kube bool) {
		for _, a := range actions {
			verb := a.GetVerb()
			switch verb {
			case "create", "update", "patch", "delete", "delete-collection":
			default:
				continue
			}
			what := verb + " " + a.GetResource().Resource
			if sub := a.GetSubresource(); sub != "" {
				what += "/" + sub
			}
			if s.measuring {
				s.res.writes++
				s.res.writesBy[what]++
			}
			if verb == "create" && a.GetResource().Resource == "flinkstatesnapshots" && s.measuring {
				s.res.created++
			}
			var name string
			switch a := a.(type) {
			case core.DeleteAction:
				name = a.GetName()
			case core.PatchAction:
				name = a.GetName()
			case core.CreateAction: // also matches updates (same methods)
				if m, err := meta.Accessor(a.GetObject()); err == nil {
					name = m.GetName()
				}
			}
			r := objRef{kube, a.GetResource().Resource, a.GetNamespace(), name}
			if name != "" && !seen[r] {
				seen[r] = true
				touched = append(touched, r)
			}
		}
	}
	collect(s.client.Actions(), false)
	s.client.ClearActions()
	collect(s.kube.Actions(), true)
	s.kube.ClearActions()
	for _, r := range touched {
		s.refresh(r)
	}
	for s.deps.queue.Len() > 0 {
		key, _ := s.deps.queue.Get()
		s.deps.queue.Done(key)
		s.push(ctrlDeploy, key, s.clock.Now())
	}
}

// refresh copies one object from the fake API server into its cache and
// delivers the event.
func (s *scaleSim) refresh(r objRef) {
	var tracker core.ObjectTracker
	var gvr schema.GroupVersionResource
	var indexer cache.Indexer
	v := s.factory.Flink().V1beta1()
	switch {
	case !r.kube && r.resource == "flinkstatesnapshots":
		tracker, gvr, indexer = s.client.Tracker(), gvrSnapshots, v.FlinkStateSnapshots().Informer().GetIndexer()
	case !r.kube && r.resource == "flinkdeployments":
		tracker, gvr, indexer = s.client.Tracker(), gvrDeployments, v.FlinkDeployments().Informer().GetIndexer()
	case r.kube && r.resource == "deployments":
		tracker, gvr, indexer = s.kube.Tracker(), gvrKube[r.resource], s.kfactory.Apps().V1().Deployments().Informer().GetIndexer()
	case r.kube && r.resource == "services":
		tracker, gvr, indexer = s.kube.Tracker(), gvrKube[r.resource], s.kfactory.Core().V1().Services().Informer().GetIndexer()
	case r.kube && r.resource == "configmaps":
		tracker, gvr, indexer = s.kube.Tracker(), gvrKube[r.resource], s.kfactory.Core().V1().ConfigMaps().Informer().GetIndexer()
	default:
		return
	}
	old, existed, _ := indexer.GetByKey(r.ns + "/" + r.name)
	obj, err := tracker.Get(gvr, r.ns, r.name)
	if apierrors.IsNotFound(err) {
		if existed {
			_ = indexer.Delete(old)
			s.event(r, old, nil)
		}
		return
	} else if err != nil {
		s.tb.Fatal(err)
	}
	if r.kube && r.resource == "deployments" && !existed {
		obj = s.startPod(obj.(*appsv1.Deployment))
	}
	if existed {
		_ = indexer.Update(obj)
	} else {
		_ = indexer.Add(obj)
	}
	s.event(r, old, obj)
}

// startPod plays Kubernetes for a new Deployment: its pods are ready at
// once, and a JobManager runs the job its FlinkDeployment's status names.
func (s *scaleSim) startPod(d *appsv1.Deployment) *appsv1.Deployment {
	d = d.DeepCopy()
	replicas := ptr.Deref(d.Spec.Replicas, 1)
	d.Status.Replicas, d.Status.ReadyReplicas, d.Status.AvailableReplicas = replicas, replicas, replicas
	if err := s.kube.Tracker().Update(gvrKube["deployments"], d, d.Namespace); err != nil {
		s.tb.Fatal(err)
	}
	owner := metav1.GetControllerOf(d)
	if owner == nil || d.Name != owner.Name { // TaskManagers
		return d
	}
	obj, err := s.client.Tracker().Get(gvrDeployments, d.Namespace, owner.Name)
	if err != nil {
		s.tb.Fatal(err)
	}
	dep := obj.(*v1beta1.FlinkDeployment)
	jm := fakejm.NewUnstarted(fakejm.Options{Version: flink.V1_20, Clock: s.clock, CompletionDelay: s.cfg.savepointTakes,
		CheckpointDir: filepath.Join(s.dir, "checkpoints")})
	jm.MustAddJob(fakejm.JobSpec{ID: dep.Status.JobStatus.JobID})
	s.net.servers[dep.Name+".jm"] = jm
	return d
}

// event delivers an informer event to both controllers.
func (s *scaleSim) event(r objRef, old, cur any) {
	if r.kube {
		obj := cur
		if obj == nil {
			obj = old
		}
		s.deps.enqueueOwner(obj)
		return
	}
	switch r.resource {
	case "flinkdeployments":
		switch {
		case old == nil:
			s.deps.resourceHandler().OnAdd(cur, false)
		case cur == nil:
			s.deps.resourceHandler().OnDelete(old)
		default:
			s.deps.resourceHandler().OnUpdate(old, cur)
		}
		// Mirror of the snapshot controller's job handler: a job whose
		// status changed wakes its in-flight snapshots.
		obj := cur
		if obj == nil {
			obj = old
		}
		d := obj.(*v1beta1.FlinkDeployment)
		if old == nil || cur == nil || !sameJobStatus(old.(*v1beta1.FlinkDeployment), cur.(*v1beta1.FlinkDeployment)) {
			s.wakeSnapshotsOf(snapshotrules.JobKeyFor(v1beta1.JobReferenceKindDeployment, d.Namespace, d.Name))
		}
	case "flinkstatesnapshots":
		h := s.deps.snapshotHandler()
		switch {
		case old == nil:
			h.OnAdd(cur, false)
		case cur == nil:
			h.OnDelete(old)
		default:
			h.OnUpdate(old, cur)
		}
		// Mirror of the snapshot controller's snapshot handlers.
		switch {
		case cur == nil:
			s.wakeSnapshotsOf(snapshotrules.JobKey(old.(*v1beta1.FlinkStateSnapshot)))
		default:
			c := cur.(*v1beta1.FlinkStateSnapshot)
			s.push(ctrlSnap, c.Namespace+"/"+c.Name, s.clock.Now())
			if old != nil && old.(*v1beta1.FlinkStateSnapshot).Status.State == v1beta1.SnapshotInProgress && c.Status.State != v1beta1.SnapshotInProgress {
				s.wakeSnapshotsOf(snapshotrules.JobKey(c))
			}
			if s.measuring && c.Status.State == v1beta1.SnapshotCompleted && (old == nil || old.(*v1beta1.FlinkStateSnapshot).Status.State != v1beta1.SnapshotCompleted) {
				s.res.completedSavepoints++
			}
		}
	}
}

func sameJobStatus(a, b *v1beta1.FlinkDeployment) bool {
	x, y := a.Status.JobStatus, b.Status.JobStatus
	x.SavepointInfo, x.CheckpointInfo, x.UpdateTime = nil, nil, ""
	y.SavepointInfo, y.CheckpointInfo, y.UpdateTime = nil, nil, ""
	return x == y
}

func (s *scaleSim) wakeSnapshotsOf(jobKey string) {
	if jobKey == "" {
		return
	}
	snaps, _ := s.caches.SnapshotsOfJob(jobKey)
	for _, sn := range snaps {
		if snapshotrules.InFlight(sn) || sn.DeletionTimestamp != nil {
			s.push(ctrlSnap, sn.Namespace+"/"+sn.Name, s.clock.Now())
		}
	}
}

// round syncs whatever is due this second, then samples.
func (s *scaleSim) round() {
	for n := 0; ; n++ {
		k, ok := s.next()
		if !ok {
			break
		}
		if n > 100*s.cfg.jobs+1000 {
			s.tb.Fatalf("at %v: more than %d syncs in one second: a hot loop (last %v)", s.clock.Now().Sub(t0), n, k)
		}
		s.sync(k)
	}
	if !s.measuring {
		return
	}
	all := s.caches.AllSnapshots()
	live, deleting := len(all), 0
	inFlight := map[string]int{}
	for _, sn := range all {
		if sn.DeletionTimestamp != nil {
			deleting++
			continue
		}
		if snapshotrules.InFlight(sn) {
			inFlight[snapshotrules.JobKey(sn)+"/"+snapshotrules.Type(sn)]++
		}
	}
	s.res.peakLive = max(s.res.peakLive, live)
	s.res.peakDeleting = max(s.res.peakDeleting, deleting)
	for _, n := range inFlight {
		s.res.peakInFlightPerJob = max(s.res.peakInFlightPerJob, n)
	}
}

func (s *scaleSim) running() int {
	n := 0
	for _, obj := range s.factory.Flink().V1beta1().FlinkDeployments().Informer().GetStore().List() {
		if d := obj.(*v1beta1.FlinkDeployment); running(d) {
			n++
		}
	}
	return n
}

// runScale creates the jobs, runs until they all run (at most 2 simulated
// minutes), then measures cfg.simulate.
func runScale(tb testing.TB, cfg scaleConfig) scaleResult {
	start := time.Now()
	s := newScaleSim(tb, cfg)
	conf := map[string]string{
		config.FlinkSavepointDir:  "file://" + filepath.Join(s.dir, "savepoints"),
		config.FlinkCheckpointDir: "file://" + filepath.Join(s.dir, "checkpoints"),
	}
	for k, v := range cfg.conf {
		conf[k] = v
	}
	for i := range cfg.jobs {
		d := &v1beta1.FlinkDeployment{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("job-%03d", i), Namespace: ns, Generation: 1},
			Spec: v1beta1.FlinkDeploymentSpec{
				Image: "flink:1.20", FlinkVersion: v1beta1.FlinkVersion1_20, ServiceAccount: "flink",
				Mode:               v1beta1.DeploymentModeStandalone,
				FlinkConfiguration: v1beta1.NewConfiguration(conf),
				Job: &v1beta1.JobSpec{JarURI: "local:///opt/flink/usrlib/job.jar", Parallelism: ptr.To[int32](1),
					UpgradeMode: v1beta1.UpgradeModeSavepoint, State: v1beta1.JobStateRunning},
			},
		}
		if _, err := s.client.FlinkV1beta1().FlinkDeployments(ns).Create(s.ctx, d, metav1.CreateOptions{}); err != nil {
			tb.Fatal(err)
		}
		s.clock.Step(10 * time.Millisecond) // spread creation, hence periodic slots, a little
	}
	s.apply()
	for range 120 {
		s.round()
		s.clock.Step(time.Second)
		if s.running() == cfg.jobs {
			break
		}
	}
	s.res.deploymentsRunningAtStart = s.running()
	if s.res.deploymentsRunningAtStart != cfg.jobs {
		tb.Fatalf("only %d of %d jobs running after the warm-up (errors %d, first %v)", s.res.deploymentsRunningAtStart, cfg.jobs, s.res.errors, s.res.firstError)
	}
	s.res.warmup = s.clock.Now().Sub(t0)
	s.res.restDeploy, s.res.restSnapshot, s.res.syncsDeploy, s.res.syncsSnap = 0, 0, 0, 0
	s.measuring = true
	deletedBefore := s.countDeletes()
	for sec := range int(cfg.simulate / time.Second) {
		s.round()
		if sec%30 == 0 {
			s.res.liveSamples = append(s.res.liveSamples, len(s.caches.AllSnapshots()))
		}
		s.clock.Step(time.Second)
	}
	s.res.simulated = cfg.simulate
	s.res.deleted = s.res.writesBy["delete flinkstatesnapshots"] - deletedBefore
	s.res.wall = time.Since(start)
	return s.res
}

func (s *scaleSim) countDeletes() int { return s.res.writesBy["delete flinkstatesnapshots"] }

func (r scaleResult) report(logf func(string, ...any), jobs int) {
	logf("%d jobs, %v simulated after a %v warm-up, %v wall", jobs, r.simulated, r.warmup, r.wall.Round(time.Millisecond))
	logf("API writes: %d = %.1f/s", r.writes, r.perSecond(r.writes))
	var kinds []string
	for k := range r.writesBy {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	for _, k := range kinds {
		logf("  %-45s %6d  %6.2f/s", k, r.writesBy[k], r.perSecond(r.writesBy[k]))
	}
	logf("REST calls: %.1f/s (FlinkDeployment controller %.1f/s, snapshot controller %.1f/s)",
		r.perSecond(r.restDeploy+r.restSnapshot), r.perSecond(r.restDeploy), r.perSecond(r.restSnapshot))
	logf("syncs: FlinkDeployment %.1f/s, FlinkStateSnapshot %.1f/s", r.perSecond(r.syncsDeploy), r.perSecond(r.syncsSnap))
	logf("snapshots: %d created, %d deleted, %d completed (%.2f/s); live peak %d (%.2f per job, %d being deleted at peak), samples every 30 s %v; peak in flight per job %d",
		r.created, r.deleted, r.completedSavepoints, r.perSecond(r.completedSavepoints), r.peakLive, float64(r.peakLive)/float64(jobs), r.peakDeleting, r.liveSamples, r.peakInFlightPerJob)
}

func (r scaleResult) check(tb testing.TB, cfg scaleConfig, maxCount int) {
	tb.Helper()
	if r.errors > 0 {
		tb.Errorf("%d sync errors, first: %v", r.errors, r.firstError)
	}
	if bound := cfg.jobs * (maxCount + 2); r.peakLive > bound {
		tb.Errorf("peak %d live snapshots, want <= %d (%d jobs × (max.count %d + 1 in flight + newest completed))", r.peakLive, bound, cfg.jobs, maxCount)
	}
	if r.peakInFlightPerJob > 1 {
		tb.Errorf("%d savepoints of one job in flight at once", r.peakInFlightPerJob)
	}
	// Every job keeps taking savepoints, and history cleanup keeps up.
	interval, _ := config.ParseDuration(cfg.conf[config.KeyPeriodicSavepointInterval])
	// A savepoint is seen complete at the first poll after it is (polls
	// back off to half the elapsed time), and the next one is due at the
	// newest slot by then.
	period := max(interval, cfg.savepointTakes*3/2+time.Second)
	if want := cfg.jobs * int(cfg.simulate/period) * 3 / 4; r.completedSavepoints < want {
		tb.Errorf("%d savepoints completed, want >= %d", r.completedSavepoints, want)
	}
	if r.deleted < r.completedSavepoints/2 {
		tb.Errorf("%d snapshots deleted for %d completed: cleanup does not keep up", r.deleted, r.completedSavepoints)
	}
}

func scaleConf(jobs int, simulate, takes time.Duration, extra ...string) scaleConfig {
	cfg := scaleConfig{jobs: jobs, simulate: simulate, savepointTakes: takes, conf: map[string]string{
		config.KeyPeriodicSavepointInterval: "10 s",
		config.KeySavepointHistoryMaxCount:  "2",
	}}
	for i := 0; i+1 < len(extra); i += 2 {
		cfg.conf[extra[i]] = extra[i+1]
	}
	return cfg
}

// TestScalePeriodicSavepoints is the quick form of the scale benchmark: 20
// jobs with a 10 s savepoint interval and history max.count 2 for 2
// simulated minutes, once with savepoints shorter than the interval and once
// longer, and once with dispose-on-delete (cleanup through the finalizer).
func TestScalePeriodicSavepoints(t *testing.T) {
	for i, c := range []struct {
		name string
		cfg  scaleConfig
	}{
		{"savepoint 3s", scaleConf(20, 2*time.Minute, 3*time.Second)},
		{"savepoint 25s", scaleConf(20, 2*time.Minute, 25*time.Second)},
		{"savepoint 3s, dispose on delete", scaleConf(20, 2*time.Minute, 3*time.Second, config.KeySavepointDisposeOnDelete, "true")},
	} {
		if testing.Short() && i > 0 {
			continue // -short: the first case only
		}
		t.Run(strings.ReplaceAll(c.name, " ", "_"), func(t *testing.T) {
			r := runScale(t, c.cfg)
			r.report(t.Logf, c.cfg.jobs)
			r.check(t, c.cfg, 2)
		})
	}
}

// BenchmarkScalePeriodicSavepoints: 200 jobs, 10 s savepoint interval,
// history max.count 2, 5 simulated minutes through both controllers.
//
//	go test ./pkg/controller/deployment -run '^$' -bench ScalePeriodicSavepoints -benchtime 1x -v
func BenchmarkScalePeriodicSavepoints(b *testing.B) {
	for _, c := range []struct {
		name string
		cfg  scaleConfig
	}{
		{"savepoint=3s", scaleConf(200, 5*time.Minute, 3*time.Second)},
		{"savepoint=3s,dispose", scaleConf(200, 5*time.Minute, 3*time.Second, config.KeySavepointDisposeOnDelete, "true")},
	} {
		b.Run(c.name, func(b *testing.B) {
			var r scaleResult
			for b.Loop() {
				r = runScale(b, c.cfg)
			}
			r.report(b.Logf, c.cfg.jobs)
			r.check(b, c.cfg, 2)
			b.ReportMetric(r.perSecond(r.writes), "writes/s")
			b.ReportMetric(r.perSecond(r.restDeploy+r.restSnapshot), "rest/s")
			b.ReportMetric(r.perSecond(r.syncsDeploy+r.syncsSnap), "syncs/s")
			b.ReportMetric(float64(r.peakLive), "peak-live-snapshots")
			b.ReportMetric(r.perSecond(r.completedSavepoints), "savepoints/s")
		})
	}
}
