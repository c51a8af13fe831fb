package operator

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"runtime/pprof"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	flinkcache "github.com/flinkops/flink-operator/pkg/cache"
	clientset "github.com/flinkops/flink-operator/pkg/generated/clientset/versioned"
)

// cacheMemoryNamespaces is how many namespaces the measured objects are
// spread over (as make bench-scale's 10).
const cacheMemoryNamespaces = 10

// benchSnapshotJSON is a FlinkStateSnapshot as the API server sends it
// once make bench-scale's suspended scenario settled: the labels and
// finalizer the webhook sets, managedFields of the three writers, the spec
// a user writes, status ABANDONED with its error text and timestamp.
func benchSnapshotJSON(ns string, dep, k, rv int) []byte {
	depName, name := fmt.Sprintf("fd-%05d", dep), fmt.Sprintf("sp-%05d-%02d", dep, k)
	created := time.Date(2026, 12, 4, 18, 52, 0, 0, time.UTC).Add(time.Duration(rv/250) * time.Second).Format(time.RFC3339)
	ended := time.Date(2026, 12, 4, 18, 52, 30, 0, time.UTC).Add(time.Duration(rv/300) * time.Second).Format(time.RFC3339)
	return fmt.Appendf(nil, `{"apiVersion":"flink.apache.org/v1beta1","kind":"FlinkStateSnapshot","metadata":{`+
		`"creationTimestamp":%q,"finalizers":["flinkstatesnapshots.flink.apache.org/finalizer"],"generation":1,`+
		`"labels":{"job-reference.kind":"FlinkDeployment","job-reference.name":%q,"snapshot.state":"ABANDONED","snapshot.trigger-type":"MANUAL","snapshot.type":"SAVEPOINT"},`+
		`"managedFields":[`+
		`{"apiVersion":"flink.apache.org/v1beta1","fieldsType":"FieldsV1","fieldsV1":{"f:spec":{".":{},"f:jobReference":{".":{},"f:kind":{},"f:name":{}},"f:savepoint":{}}},"manager":"benchscale.test","operation":"Update","time":%q},`+
		`{"apiVersion":"flink.apache.org/v1beta1","fieldsType":"FieldsV1","fieldsV1":{"f:metadata":{"f:finalizers":{".":{},"v:\"flinkstatesnapshots.flink.apache.org/finalizer\"":{}},"f:labels":{".":{},"f:job-reference.kind":{},"f:job-reference.name":{},"f:snapshot.state":{},"f:snapshot.trigger-type":{},"f:snapshot.type":{}}}},"manager":"flink-operator","operation":"Update","time":%q},`+
		`{"apiVersion":"flink.apache.org/v1beta1","fieldsType":"FieldsV1","fieldsV1":{"f:status":{".":{},"f:error":{},"f:resultTimestamp":{},"f:state":{}}},"manager":"flink-operator","operation":"Update","subresource":"status","time":%q}],`+
		`"name":%q,"namespace":%q,"resourceVersion":"%d","uid":"%08x-5c1e-4b7a-9d2f-%012x"},`+
		`"spec":{"jobReference":{"kind":"FlinkDeployment","name":%q},"savepoint":{}},`+
		`"status":{"error":"Secondary resource %s (FlinkDeployment) for savepoint %s is not running","resultTimestamp":%q,"state":"ABANDONED"}}`,
		created, depName, created, ended, ended, name, ns, rv, rv, rv*7919, depName, depName, name, ended)
}

// fakeFlinkAPI serves the flink.apache.org resources of a fixed set of
// objects (namespace -> resource -> items), as lists and as watches
// (with sendInitialEvents: the objects, then the initial-events-end
// bookmark; else nothing until the client leaves).
type fakeFlinkAPI struct {
	items map[string]map[string][][]byte
}

func (f *fakeFlinkAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// /apis/flink.apache.org/v1beta1/namespaces/<ns>/<resource>
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	if len(parts) != 6 || parts[3] != "namespaces" {
		http.NotFound(w, r)
		return
	}
	ns, resource := parts[4], parts[5]
	items := f.items[ns][resource]
	kind := map[string]string{"flinkstatesnapshots": "FlinkStateSnapshot", "flinkdeployments": "FlinkDeployment", "flinksessionjobs": "FlinkSessionJob"}[resource]
	w.Header().Set("Content-Type", "application/json")
	q := r.URL.Query()
	if q.Get("watch") != "true" && q.Get("watch") != "1" {
		fmt.Fprintf(w, `{"apiVersion":"flink.apache.org/v1beta1","kind":"%sList","metadata":{"resourceVersion":"100000"},"items":[`, kind)
		for i, it := range items {
			if i > 0 {
				w.Write([]byte(","))
			}
			w.Write(it)
		}
		w.Write([]byte("]}"))
		return
	}
	if q.Get("sendInitialEvents") == "true" {
		for _, it := range items {
			fmt.Fprintf(w, `{"type":"ADDED","object":%s}`+"\n", it)
		}
		fmt.Fprintf(w, `{"type":"BOOKMARK","object":{"apiVersion":"flink.apache.org/v1beta1","kind":%q,"metadata":{"resourceVersion":"100000","annotations":{"k8s.io/initial-events-end":"true"}}}}`+"\n", kind)
	}
	w.(http.Flusher).Flush()
	<-r.Context().Done()
}

// cachedBytesPerSnapshot starts the operator's flink.apache.org informers
// (NewInformersWithSelector: the production transform; flinkcache.New: the
// production indexes) on n snapshots served as JSON, and returns the Go
// heap they keep after a full collection, per snapshot: HeapAlloc (live
// objects) and HeapInuse (their spans).
func cachedBytesPerSnapshot(tb testing.TB, n int) (alloc, inuse float64) {
	tb.Helper()
	api := &fakeFlinkAPI{items: map[string]map[string][][]byte{}}
	// As make bench-scale: n/10 deployments, each with its ten snapshots in
	// its namespace.
	deployments := max(1, n/10)
	for i := range n {
		dep, k := i%deployments, i/deployments
		ns := fmt.Sprintf("bench-%02d", dep%cacheMemoryNamespaces)
		if api.items[ns] == nil {
			api.items[ns] = map[string][][]byte{}
		}
		api.items[ns]["flinkstatesnapshots"] = append(api.items[ns]["flinkstatesnapshots"], benchSnapshotJSON(ns, dep, k, 1000+i))
	}
	var namespaces []string
	for ns := range api.items {
		namespaces = append(namespaces, ns)
	}
	srv := httptest.NewServer(api)
	defer srv.Close()
	flink, err := clientset.NewForConfig(&rest.Config{Host: srv.URL, QPS: -1})
	if err != nil {
		tb.Fatal(err)
	}

	before := heapAfterGC()
	inf, err := NewInformersWithSelector(nil, flink, namespaces, 0, "")
	if err != nil {
		tb.Fatal(err)
	}
	inf.SnapshotsWithoutNamespaceIndex() // as newControllers
	caches, err := flinkcache.New(inf.Flink)
	if err != nil {
		tb.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	for _, f := range inf.Flink {
		f.Start(ctx.Done())
	}
	defer func() {
		cancel()
		for _, f := range inf.Flink {
			f.Shutdown()
		}
	}()
	for _, f := range inf.Flink {
		for typ, ok := range f.WaitForCacheSync(ctx.Done()) {
			if !ok {
				tb.Fatalf("%v did not sync", typ)
			}
		}
	}
	if got := len(caches.AllSnapshots()); got != n {
		tb.Fatalf("cached %d snapshots, want %d", got, n)
	}
	after := heapAfterGC()
	if p := os.Getenv("FLINKOP_CACHEMEM_PROFILE"); p != "" {
		// go tool pprof -sample_index=inuse_space of what the cache holds
		if f, err := os.Create(p); err == nil {
			_ = pprof.Lookup("heap").WriteTo(f, 0)
			f.Close()
		}
	}
	runtime.KeepAlive(caches)
	return float64(after.HeapAlloc-before.HeapAlloc) / float64(n), float64(after.HeapInuse-before.HeapInuse) / float64(n)
}

func heapAfterGC() runtime.MemStats {
	var m runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&m)
	return m
}

// BenchmarkCachedSnapshotMemory reports the Go heap a cached
// FlinkStateSnapshot costs (make bench-scale's terminal snapshots):
//
//	go test ./pkg/operator -run '^$' -bench CachedSnapshotMemory -benchtime 1x
func BenchmarkCachedSnapshotMemory(b *testing.B) {
	const n = 10000
	var alloc, inuse float64
	for b.Loop() {
		alloc, inuse = cachedBytesPerSnapshot(b, n)
	}
	b.ReportMetric(alloc, "live-B/snapshot")
	b.ReportMetric(inuse, "inuse-B/snapshot")
}

// The fake API server's objects decode into the types the cache expects
// (a check of the benchmark's JSON, which would otherwise measure objects
// the operator never sees).
func TestBenchSnapshotJSONDecodes(t *testing.T) {
	var v map[string]any
	if err := json.Unmarshal(benchSnapshotJSON("ns", 1, 2, 3), &v); err != nil {
		t.Fatal(err)
	}
	if alloc, _ := cachedBytesPerSnapshot(t, 200); alloc <= 0 {
		t.Errorf("cached snapshots cost %v bytes each", alloc)
	}
}
