package operator

import (
	"slices"
	"strings"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
)

// The JSON decoder allocates every string of every object anew, and the
// flink.apache.org caches hold thousands of objects whose strings mostly
// repeat: the label keys and values the operator sets on every snapshot, the
// namespace, the finalizer, the job a snapshot refers to, its state, the
// second it ended. internFlinkObject makes the cached copy use one shared
// string for each of these, and one label map for equal label sets: a
// terminal snapshot of make bench-scale costs 1,100 bytes of heap instead
// of 1,720 (BenchmarkCachedSnapshotMemory). Strings are immutable, so the cached
// objects stay complete and equal to what the API server sent: reading them,
// DeepCopying them and writing them back is unchanged.

// internMaxLen is the longest string interned: the repeated ones are short
// (label values are at most 63 bytes); longer ones are mostly unique texts.
const internMaxLen = 64

// internMaxEntries bounds the interner: when it is full it starts over, so
// it never holds more than about internMaxEntries*internMaxLen bytes of its
// own, whatever the objects' strings.
const internMaxEntries = 4096

// stringInterner returns one shared copy of equal strings, and of equal
// label sets.
type stringInterner struct {
	mu      sync.Mutex
	strings map[string]string
	// labels holds shared label maps by labelsKey.
	labels map[string]map[string]string
}

var flinkStrings = newStringInterner()

func newStringInterner() *stringInterner {
	return &stringInterner{strings: map[string]string{}, labels: map[string]map[string]string{}}
}

// intern returns the shared copy of s (s itself when it is too long to be
// worth it).
func (in *stringInterner) intern(s string) string {
	if s == "" || len(s) > internMaxLen {
		return s
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	if v, ok := in.strings[s]; ok {
		return v
	}
	if len(in.strings) >= internMaxEntries {
		clear(in.strings)
	}
	// A copy: s may share the backing array of a larger string.
	s = strings.Clone(s)
	in.strings[s] = s
	return s
}

// internMeta interns the repeated strings of an object's metadata: the
// namespace, label keys and values, annotation keys, finalizers and owner
// references' API versions and kinds. Names, UIDs and resource versions are
// unique and left alone.
func (in *stringInterner) internMeta(m *metav1.ObjectMeta) {
	m.Namespace = in.intern(m.Namespace)
	m.Labels = in.internLabels(m.Labels)
	if len(m.Annotations) > 0 {
		annotations := make(map[string]string, len(m.Annotations))
		for k, v := range m.Annotations {
			annotations[in.intern(k)] = v
		}
		m.Annotations = annotations
	}
	for i := range m.Finalizers {
		m.Finalizers[i] = in.intern(m.Finalizers[i])
	}
	for i := range m.OwnerReferences {
		r := &m.OwnerReferences[i]
		r.APIVersion, r.Kind = in.intern(r.APIVersion), in.intern(r.Kind)
	}
}

// internLabels returns one shared map for equal label sets (the ten
// snapshots of a job in the same state have the same labels), with interned
// keys and values. A cached object is read-only (the controllers DeepCopy it,
// which copies the map, before changing it), so sharing the map is
// invisible; a controller writing into a cached object's labels would
// already corrupt the cache.
func (in *stringInterner) internLabels(labels map[string]string) map[string]string {
	if len(labels) == 0 {
		return labels
	}
	key := labelsKey(labels)
	if len(key) > 16*internMaxLen {
		out := make(map[string]string, len(labels))
		for k, v := range labels {
			out[in.intern(k)] = in.intern(v)
		}
		return out
	}
	in.mu.Lock()
	shared, ok := in.labels[key]
	in.mu.Unlock()
	if ok {
		return shared
	}
	shared = make(map[string]string, len(labels))
	for k, v := range labels {
		shared[in.intern(k)] = in.intern(v)
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	if len(in.labels) >= internMaxEntries {
		clear(in.labels)
	}
	in.labels[key] = shared
	return shared
}

// labelsKey is a map's keys and values, sorted: equal for equal maps only
// (label keys and values hold no NUL).
func labelsKey(labels map[string]string) string {
	keys := make([]string, 0, len(labels))
	n := 0
	for k, v := range labels {
		keys = append(keys, k)
		n += len(k) + len(v) + 2
	}
	slices.Sort(keys)
	var b strings.Builder
	b.Grow(n)
	for _, k := range keys {
		b.WriteString(k)
		b.WriteByte(0)
		b.WriteString(labels[k])
		b.WriteByte(0)
	}
	return b.String()
}

func (in *stringInterner) internJob(j *v1beta1.JobSpec) {
	if j == nil {
		return
	}
	j.JarURI, j.EntryClass = in.intern(j.JarURI), in.intern(j.EntryClass)
	j.State, j.UpgradeMode = v1beta1.JobState(in.intern(string(j.State))), v1beta1.UpgradeMode(in.intern(string(j.UpgradeMode)))
}

func (in *stringInterner) internJobStatus(s *v1beta1.JobStatus, r *v1beta1.ReconciliationStatus) {
	s.State = v1beta1.JobStatusState(in.intern(string(s.State)))
	r.State = v1beta1.ReconciliationState(in.intern(string(r.State)))
}

// internFlinkObject interns the repeated strings of a flink.apache.org
// object in place (see above); other objects are left alone.
func internFlinkObject(obj any) {
	in := flinkStrings
	switch o := obj.(type) {
	case *v1beta1.FlinkStateSnapshot:
		in.internMeta(&o.ObjectMeta)
		if r := o.Spec.JobReference; r != nil {
			r.Kind = v1beta1.JobReferenceKind(in.intern(string(r.Kind)))
			r.Name, r.Namespace = in.intern(r.Name), in.intern(r.Namespace)
		}
		if p := o.Spec.Savepoint; p != nil {
			p.Path, p.FormatType = in.intern(p.Path), v1beta1.SavepointFormatType(in.intern(string(p.FormatType)))
		}
		st := &o.Status
		st.State = v1beta1.SnapshotState(in.intern(string(st.State)))
		st.TriggerTimestamp, st.ResultTimestamp = in.intern(st.TriggerTimestamp), in.intern(st.ResultTimestamp)
	case *v1beta1.FlinkDeployment:
		in.internMeta(&o.ObjectMeta)
		sp := &o.Spec
		sp.Image, sp.ImagePullPolicy, sp.ServiceAccount = in.intern(sp.Image), in.intern(sp.ImagePullPolicy), in.intern(sp.ServiceAccount)
		sp.FlinkVersion, sp.Mode = v1beta1.FlinkVersion(in.intern(string(sp.FlinkVersion))), v1beta1.KubernetesDeploymentMode(in.intern(string(sp.Mode)))
		in.internJob(sp.Job)
		st := &o.Status
		st.LifecycleState = v1beta1.ResourceLifecycleState(in.intern(string(st.LifecycleState)))
		st.JobManagerDeploymentStatus = v1beta1.JobManagerDeploymentStatus(in.intern(string(st.JobManagerDeploymentStatus)))
		in.internJobStatus(&st.JobStatus, &st.ReconciliationStatus)
	case *v1beta1.FlinkSessionJob:
		in.internMeta(&o.ObjectMeta)
		o.Spec.DeploymentName = in.intern(o.Spec.DeploymentName)
		in.internJob(o.Spec.Job)
		st := &o.Status
		st.LifecycleState = v1beta1.ResourceLifecycleState(in.intern(string(st.LifecycleState)))
		in.internJobStatus(&st.JobStatus, &st.ReconciliationStatus)
	}
}
