package snapshot

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	testingclock "k8s.io/utils/clock/testing"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	flinkcache "github.com/flinkops/flink-operator/pkg/cache"
	"github.com/flinkops/flink-operator/pkg/config"
	"github.com/flinkops/flink-operator/pkg/controller/controllerctx"
	"github.com/flinkops/flink-operator/pkg/flink"
	"github.com/flinkops/flink-operator/pkg/flink/fakejm"
	"github.com/flinkops/flink-operator/pkg/generated/clientset/versioned/fake"
	informers "github.com/flinkops/flink-operator/pkg/generated/informers/externalversions"
)

// BenchmarkSnapshotsToCompletion drives 1,000 savepoints over 100 jobs to
// COMPLETED through the real Sync path, with the fake clientset and one fake
// JobManager serving all jobs. The cache is updated from each write, as the
// informer would, so every sync sees its own previous write.
func BenchmarkSnapshotsToCompletion(b *testing.B) {
	const jobs, perJob = 100, 10
	klog.SetLogger(klog.Background().V(10)) // keep logging out of the figures
	var peakHeap uint64
	for b.Loop() {
		b.StopTimer()
		h := newBenchHarness(b, jobs, perJob)
		runtime.GC()
		var before runtime.MemStats
		runtime.ReadMemStats(&before)
		b.StartTimer()

		syncs := h.run(b)

		b.StopTimer()
		var after runtime.MemStats
		runtime.ReadMemStats(&after)
		peakHeap = max(peakHeap, h.peakHeap)
		n := float64(jobs * perJob)
		b.ReportMetric(float64(after.Mallocs-before.Mallocs)/n, "allocs/snapshot")
		b.ReportMetric(float64(syncs)/n, "syncs/snapshot")
		h.close()
		b.StartTimer()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*jobs*perJob), "ns/snapshot")
	b.ReportMetric(float64(peakHeap)/(1<<20), "peak-heap-MiB")
}

type benchHarness struct {
	ctx     context.Context
	client  *fake.Clientset
	ctrl    *Controller
	factory informers.SharedInformerFactory
	clock   *testingclock.FakeClock
	jm      *fakejm.Server
	keys    []string
	// peakHeap is the largest HeapInuse seen between rounds.
	peakHeap uint64
}

func newBenchHarness(b *testing.B, jobs, perJob int) *benchHarness {
	ctx := context.Background()
	h := &benchHarness{ctx: ctx, client: fake.NewSimpleClientset(), clock: testingclock.NewFakeClock(t0)}
	h.jm = fakejm.New(fakejm.Options{Version: flink.V1_20, Clock: h.clock, CompletionPolls: 1})
	dir := b.TempDir()
	for j := range jobs {
		name := fmt.Sprintf("job-%03d", j)
		id := h.jm.MustAddJob(fakejm.JobSpec{})
		dep := &v1beta1.FlinkDeployment{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Spec: v1beta1.FlinkDeploymentSpec{FlinkVersion: v1beta1.FlinkVersion1_20,
				FlinkConfiguration: v1beta1.NewConfiguration(map[string]string{"execution.checkpointing.savepoint-dir": "file://" + dir})},
			Status: v1beta1.FlinkDeploymentStatus{JobStatus: v1beta1.JobStatus{JobID: id, State: v1beta1.JobStatusRunning}},
		}
		if _, err := h.client.FlinkV1beta1().FlinkDeployments(ns).Create(ctx, dep, metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
		for i := range perJob {
			s := savepointSnap(fmt.Sprintf("%s-sp-%d", name, i), name)
			if _, err := h.client.FlinkV1beta1().FlinkStateSnapshots(ns).Create(ctx, s, metav1.CreateOptions{}); err != nil {
				b.Fatal(err)
			}
			h.keys = append(h.keys, ns+"/"+s.Name)
		}
	}
	h.factory = informers.NewSharedInformerFactory(h.client, 0)
	caches, err := flinkcache.New(map[string]informers.SharedInformerFactory{"": h.factory})
	if err != nil {
		b.Fatal(err)
	}
	url := h.jm.URL()
	h.ctrl, err = New(controllerctx.Context{
		Client:    h.client,
		Caches:    caches,
		Recorder:  &record.FakeRecorder{},
		Config:    config.Defaults(),
		Clock:     h.clock,
		Endpoints: func(*v1beta1.FlinkDeployment, int) (string, error) { return url, nil },
	}, Options{})
	if err != nil {
		b.Fatal(err)
	}
	v := h.factory.Flink().V1beta1()
	deps, _ := h.client.FlinkV1beta1().FlinkDeployments(ns).List(ctx, metav1.ListOptions{})
	for i := range deps.Items {
		_ = v.FlinkDeployments().Informer().GetIndexer().Add(&deps.Items[i])
	}
	snaps, _ := h.client.FlinkV1beta1().FlinkStateSnapshots(ns).List(ctx, metav1.ListOptions{})
	for i := range snaps.Items {
		_ = v.FlinkStateSnapshots().Informer().GetIndexer().Add(&snaps.Items[i])
	}
	return h
}

// run syncs every non-terminal snapshot once per simulated second until all
// are terminal; it returns the number of syncs.
func (h *benchHarness) run(b *testing.B) int {
	indexer := h.factory.Flink().V1beta1().FlinkStateSnapshots().Informer().GetIndexer()
	pending := h.keys
	syncs := 0
	for round := 0; len(pending) > 0; round++ {
		if round > 1000 {
			b.Fatalf("%d snapshots not completed", len(pending))
		}
		next := pending[:0]
		for _, key := range pending {
			if _, err := h.ctrl.Sync(h.ctx, key); err != nil {
				b.Fatal(err)
			}
			syncs++
			obj, err := h.client.FlinkV1beta1().FlinkStateSnapshots(ns).Get(h.ctx, key[len(ns)+1:], metav1.GetOptions{})
			if err != nil {
				b.Fatal(err)
			}
			_ = indexer.Update(obj)
			if obj.Status.State != v1beta1.SnapshotCompleted {
				if obj.Status.State.IsTerminal() {
					b.Fatalf("%s ended %s: %s", key, obj.Status.State, obj.Status.Error)
				}
				next = append(next, key)
			}
		}
		pending = next
		h.clock.Step(time.Second)
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		h.peakHeap = max(h.peakHeap, m.HeapInuse)
	}
	return syncs
}

func (h *benchHarness) close() { h.jm.Close() }
