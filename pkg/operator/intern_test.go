package operator

import (
	"fmt"
	"testing"
	"unsafe"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/generated/clientset/versioned/scheme"
)

// decodeSnapshot decodes as the informers' client does: every string its
// own allocation.
func decodeSnapshot(t *testing.T, data []byte) *v1beta1.FlinkStateSnapshot {
	t.Helper()
	obj, _, err := scheme.Codecs.UniversalDeserializer().Decode(data, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return obj.(*v1beta1.FlinkStateSnapshot)
}

func sameString(a, b string) bool { return unsafe.StringData(a) == unsafe.StringData(b) }

// The cached objects stay equal to what the API server sent (writes from a
// cached copy are unchanged); only their repeated strings and equal label
// sets are shared.
func TestTrimFlinkObjectInterns(t *testing.T) {
	a := decodeSnapshot(t, benchSnapshotJSON("bench-01", 1, 0, 100))
	b := decodeSnapshot(t, benchSnapshotJSON("bench-01", 1, 1, 101))
	c := decodeSnapshot(t, benchSnapshotJSON("bench-02", 2, 0, 102))
	wantA, wantB, wantC := a.DeepCopy(), b.DeepCopy(), c.DeepCopy()
	for _, o := range []*v1beta1.FlinkStateSnapshot{wantA, wantB, wantC} {
		o.ManagedFields = nil
	}
	for _, o := range []runtime.Object{a, b, c} {
		if _, err := trimFlinkObject(o); err != nil {
			t.Fatal(err)
		}
	}
	for i, pair := range [][2]*v1beta1.FlinkStateSnapshot{{a, wantA}, {b, wantB}, {c, wantC}} {
		if !equality.Semantic.DeepEqual(pair[0], pair[1]) {
			t.Errorf("object %d changed by the transform:\n got %+v\nwant %+v", i, pair[0], pair[1])
		}
	}

	shared := []struct {
		name string
		x, y string
	}{
		{"namespace", a.Namespace, b.Namespace},
		{"finalizer", a.Finalizers[0], c.Finalizers[0]},
		{"state", string(a.Status.State), string(c.Status.State)},
		{"job reference kind", string(a.Spec.JobReference.Kind), string(c.Spec.JobReference.Kind)},
		{"job reference name", a.Spec.JobReference.Name, b.Spec.JobReference.Name},
		{"label value", a.Labels[v1beta1.LabelSnapshotType], c.Labels[v1beta1.LabelSnapshotType]},
		{"job reference name and its label", a.Spec.JobReference.Name, a.Labels[v1beta1.LabelJobReferenceName]},
	}
	for _, s := range shared {
		if !sameString(s.x, s.y) {
			t.Errorf("%s %q: not shared", s.name, s.x)
		}
	}
	if unsafe.Pointer(&a.Labels) == unsafe.Pointer(&b.Labels) || fmt.Sprintf("%p", a.Labels) != fmt.Sprintf("%p", b.Labels) {
		t.Errorf("equal label sets of two snapshots of a job are not one map")
	}
	if fmt.Sprintf("%p", a.Labels) == fmt.Sprintf("%p", c.Labels) {
		t.Errorf("different label sets share a map")
	}
	if sameString(a.Name, b.Name) || sameString(a.Status.Error, b.Status.Error) {
		t.Errorf("unique strings interned")
	}

	// A DeepCopy (what a controller changes) has a map of its own.
	cp := a.DeepCopy()
	cp.Labels[v1beta1.LabelSnapshotState] = string(v1beta1.SnapshotInProgress)
	if b.Labels[v1beta1.LabelSnapshotState] != string(v1beta1.SnapshotAbandoned) {
		t.Errorf("changing a copy's labels changed a cached object's: %v", b.Labels)
	}
}

// The interner never holds more than internMaxEntries strings or label
// sets, nor strings longer than internMaxLen, and still returns equal
// values once it started over.
func TestStringInternerBounded(t *testing.T) {
	in := newStringInterner()
	for i := range 3 * internMaxEntries {
		s := fmt.Sprintf("value-%d", i)
		if got := in.intern(s); got != s {
			t.Fatalf("intern(%q) = %q", s, got)
		}
		if got := in.internLabels(map[string]string{"k": s}); len(got) != 1 || got["k"] != s {
			t.Fatalf("internLabels(k=%q) = %v", s, got)
		}
	}
	if len(in.strings) > internMaxEntries || len(in.labels) > internMaxEntries {
		t.Errorf("interner holds %d strings and %d label sets, want at most %d", len(in.strings), len(in.labels), internMaxEntries)
	}
	long := string(make([]byte, internMaxLen+1))
	in.intern(long)
	if _, ok := in.strings[long]; ok {
		t.Errorf("a %d-byte string was interned", len(long))
	}
}
