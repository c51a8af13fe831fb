package cache

import (
	"context"
	"slices"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/generated/clientset/versioned/fake"
	flinkinformers "github.com/flinkops/flink-operator/pkg/generated/informers/externalversions"
	"github.com/flinkops/flink-operator/pkg/snapshotrules"
)

// Without the FlinkStateSnapshot CRD the snapshot informer is never
// requested (it would never sync), and snapshot reads find nothing.
func TestWithoutSnapshots(t *testing.T) {
	client := fake.NewSimpleClientset(&v1beta1.FlinkDeployment{ObjectMeta: metav1.ObjectMeta{Name: "job", Namespace: "ns"}})
	factory := flinkinformers.NewSharedInformerFactory(client, 0)
	c, err := NewWithOptions(map[string]flinkinformers.SharedInformerFactory{"": factory}, Options{WithoutSnapshots: true})
	if err != nil {
		t.Fatal(err)
	}
	if c.HasSnapshots() {
		t.Fatal("HasSnapshots")
	}
	if err := c.AddEventHandlers(Handlers{Snapshots: cache.ResourceEventHandlerFuncs{}, Deployments: cache.ResourceEventHandlerFuncs{}}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	factory.Start(ctx.Done())
	defer func() { cancel(); factory.Shutdown() }()
	synced := factory.WaitForCacheSync(ctx.Done())
	for typ, ok := range synced {
		if !ok {
			t.Fatalf("%v did not sync", typ)
		}
	}
	for typ := range synced {
		if typ.Name() == "FlinkStateSnapshot" {
			t.Fatal("the snapshot informer was requested")
		}
	}
	if !c.HasSynced() {
		t.Fatal("HasSynced false")
	}
	if _, err := c.Deployment("ns", "job"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Snapshot("ns", "s"); !apierrors.IsNotFound(err) {
		t.Fatalf("Snapshot: %v", err)
	}
	if list, err := c.SnapshotsOfJob(snapshotrules.JobKeyFor(v1beta1.JobReferenceKindDeployment, "ns", "job")); err != nil || len(list) != 0 {
		t.Fatalf("SnapshotsOfJob: %v %v", list, err)
	}
	if list, err := c.SnapshotsInState(v1beta1.SnapshotInProgress); err != nil || len(list) != 0 {
		t.Fatalf("SnapshotsInState: %v %v", list, err)
	}
	if len(c.AllSnapshots()) != 0 {
		t.Fatal("AllSnapshots")
	}
}

func TestWithSnapshotsByDefault(t *testing.T) {
	factory := flinkinformers.NewSharedInformerFactory(fake.NewSimpleClientset(), 0)
	c, err := New(map[string]flinkinformers.SharedInformerFactory{"ns": factory})
	if err != nil || !c.HasSnapshots() {
		t.Fatalf("%v %v", c.HasSnapshots(), err)
	}
}

// countingInformer counts the handlers registered on it.
type countingInformer struct {
	cache.SharedIndexInformer
	handlers []cache.ResourceEventHandler
	synced   bool
}

func (i *countingInformer) AddEventHandler(h cache.ResourceEventHandler) (cache.ResourceEventHandlerRegistration, error) {
	i.handlers = append(i.handlers, h)
	return nil, nil
}

func (i *countingInformer) HasSynced() bool { return i.synced }

// The controllers' handlers share one listener per informer (each listener
// costs two goroutines and a buffer), and each handler still sees every
// notification, in the order the handlers were added; a handler added once
// the informer synced gets a listener of its own (it must be told of the
// objects already cached).
func TestAddEventHandlersShareOneListener(t *testing.T) {
	snaps, deps, jobs := &countingInformer{}, &countingInformer{}, &countingInformer{}
	c := &Caches{}
	c.informers.Set("ns", &nsInformers{snapshots: snaps, deployments: deps, sessionJobs: jobs})
	var got []string
	record := func(name string) cache.ResourceEventHandler {
		return cache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj any) { got = append(got, name+" add "+obj.(string)) },
			UpdateFunc: func(o, n any) { got = append(got, name+" update "+o.(string)+">"+n.(string)) },
			DeleteFunc: func(obj any) { got = append(got, name+" delete "+obj.(string)) },
		}
	}
	for _, h := range []Handlers{
		{Snapshots: record("a"), Deployments: record("a")},
		{Snapshots: record("b"), SessionJobs: record("b")},
		{Snapshots: record("c")},
	} {
		if err := c.AddEventHandlers(h); err != nil {
			t.Fatal(err)
		}
	}
	if len(snaps.handlers) != 1 || len(deps.handlers) != 1 || len(jobs.handlers) != 1 {
		t.Fatalf("listeners: %d on snapshots, %d on deployments, %d on session jobs; want 1 each", len(snaps.handlers), len(deps.handlers), len(jobs.handlers))
	}
	h := snaps.handlers[0]
	h.OnAdd("s1", true)
	h.OnUpdate("s1", "s2")
	h.OnDelete("s2")
	deps.handlers[0].OnAdd("d", false)
	want := []string{"a add s1", "b add s1", "c add s1", "a update s1>s2", "b update s1>s2", "c update s1>s2", "a delete s2", "b delete s2", "c delete s2", "a add d"}
	if !slices.Equal(got, want) {
		t.Errorf("notifications:\n got %q\nwant %q", got, want)
	}

	snaps.synced = true
	if err := c.AddEventHandlers(Handlers{Snapshots: record("late")}); err != nil {
		t.Fatal(err)
	}
	if len(snaps.handlers) != 2 {
		t.Errorf("a handler added after the sync shares the listener (%d listeners)", len(snaps.handlers))
	}
}

// The state index holds the snapshots still in flight, by state; terminal
// ones (most of a cluster's snapshots) are left out, and asking for a
// terminal state is an error rather than a silently empty answer.
func TestSnapshotsInStateIndexesOnlyInFlight(t *testing.T) {
	snap := func(name string, state v1beta1.SnapshotState) *v1beta1.FlinkStateSnapshot {
		return &v1beta1.FlinkStateSnapshot{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"}, Status: v1beta1.FlinkStateSnapshotStatus{State: state}}
	}
	client := fake.NewSimpleClientset(
		snap("new", ""), snap("pending", v1beta1.SnapshotTriggerPending), snap("running", v1beta1.SnapshotInProgress),
		snap("done", v1beta1.SnapshotCompleted), snap("failed", v1beta1.SnapshotFailed), snap("abandoned", v1beta1.SnapshotAbandoned))
	factory := flinkinformers.NewSharedInformerFactory(client, 0)
	c, err := New(map[string]flinkinformers.SharedInformerFactory{"ns": factory})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	factory.Start(ctx.Done())
	defer func() { cancel(); factory.Shutdown() }()
	for typ, ok := range factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			t.Fatalf("%v did not sync", typ)
		}
	}
	for state, want := range map[v1beta1.SnapshotState]string{"": "new", v1beta1.SnapshotTriggerPending: "pending", v1beta1.SnapshotInProgress: "running"} {
		list, err := c.SnapshotsInState(state)
		if err != nil || len(list) != 1 || list[0].Name != want {
			t.Errorf("SnapshotsInState(%q) = %v, %v; want only %s", state, list, err, want)
		}
	}
	indexed, err := c.forNamespace("ns").snapshots.GetIndexer().IndexKeys(IndexByState, string(v1beta1.SnapshotCompleted))
	if err != nil || len(indexed) != 0 {
		t.Errorf("COMPLETED snapshots in the state index: %v %v", indexed, err)
	}
	for _, state := range []v1beta1.SnapshotState{v1beta1.SnapshotCompleted, v1beta1.SnapshotFailed, v1beta1.SnapshotAbandoned} {
		if list, err := c.SnapshotsInState(state); err == nil {
			t.Errorf("SnapshotsInState(%s) = %v without an error", state, list)
		}
	}
	if got := len(c.AllSnapshots()); got != 6 {
		t.Errorf("AllSnapshots: %d, want 6 (terminal ones are cached, only not indexed by state)", got)
	}
}
