package lifecycle

import (
	"encoding/json"
	"reflect"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/cluster"
	"github.com/flinkops/flink-operator/pkg/config"
)

// SameSpec reports whether two specs mean the same to the operator: they
// would build the same cluster and run the same job. Only the form may
// differ, and each difference of form below is one a recorded spec really
// has, because upstream's operator wrote it (its SpecUtils.writeSpecWithMeta
// serializes the spec with a default Jackson ObjectMapper) or because the
// API server and this operator write the same thing differently:
//
//   - key order, and a field that is absent, null, an empty list or an
//     empty object (upstream writes every null field, "args": [] and, from
//     release 1.13, "flinkConfiguration": {} for an unset one; an empty
//     object means the same as none in a Kubernetes object, an emptyDir
//     volume too, which is what a volume without a source defaults to),
//     except job, ingress and job.initialStateSnapshotRef, where an empty
//     object is not none (an application, an error);
//   - the defaults upstream's Java types carry, written as values:
//     job.state "running", job.upgradeMode "stateless", job.parallelism 0
//     (unset: the job runs at parallelism.default), jobManager.replicas 1;
//   - flinkConfiguration as Flink reads it (config.Flatten of
//     Configuration.Values, as the cluster is built): nested or dotted keys,
//     and numbers or booleans versus their strings (upstream releases before
//     1.13 kept it as a map of strings, so 2 was recorded as "2");
//   - jobManager/taskManager.resource.memory, and the memory of their
//     resources, in bytes as cluster.ParseMemory reads them, Flink's syntax
//     first ("1024m" is 1 GiB, as "1g" and "1Gi"; Kubernetes would read
//     "1024m" as 1.024 bytes), resource.ephemeralStorage and every other
//     quantity (podTemplate's, resources' CPU) by value, as Kubernetes
//     reads them ("0.5", 0.5 and "500m"; "1Gi" and "1073741824").
//
// Anything else is a difference: a spec upstream reconciled is redeployed on
// takeover only when it really changed.
func SameSpec[T any](a, b T) bool {
	return reflect.DeepEqual(canonical(a), canonical(b))
}

// canonical is spec in one form per meaning, as a generic JSON tree (nil
// when it does not encode, which no spec type does).
func canonical[T any](spec T) any {
	raw, err := json.Marshal(spec)
	if err != nil {
		return nil
	}
	// A deep copy to rewrite: a decoded quantity is in Kubernetes'
	// canonical form already (0.5 -> 500m, 1024Mi -> 1Gi).
	var c T
	if err := json.Unmarshal(raw, &c); err == nil {
		canonicalFields(&c)
		canonicalQuantities(reflect.ValueOf(&c).Elem())
		if b, err := json.Marshal(c); err == nil {
			raw = b
		}
	}
	var tree any
	if err := json.Unmarshal(raw, &tree); err != nil {
		return nil
	}
	// Where an empty object means something else than none, it stays: a
	// job, even with nothing but defaults (its jar in the image's usrlib),
	// makes an application of what would be a session cluster; an empty
	// ingress or snapshot reference is an error to report, not nothing.
	root, _ := tree.(map[string]any)
	job, _ := root["job"].(map[string]any)
	kept := present(root, "job", "ingress")
	keptInJob := present(job, "initialStateSnapshotRef")
	pruned(tree)
	restore(root, kept)
	restore(job, keptInJob)
	return tree
}

// present lists which of keys m holds as objects.
func present(m map[string]any, keys ...string) []string {
	var out []string
	for _, k := range keys {
		if _, ok := m[k].(map[string]any); ok {
			out = append(out, k)
		}
	}
	return out
}

// restore puts back, empty, the objects of keys that pruning removed.
func restore(m map[string]any, keys []string) {
	for _, k := range keys {
		if _, ok := m[k]; !ok {
			m[k] = map[string]any{}
		}
	}
}

// canonicalFields rewrites the fields whose meaning the operator reads
// from their value rather than their form.
func canonicalFields(spec any) {
	switch s := spec.(type) {
	case *v1beta1.FlinkDeploymentSpec:
		canonicalJob(s.Job)
		s.FlinkConfiguration = canonicalConfiguration(s.FlinkConfiguration)
		if jm := s.JobManager; jm != nil {
			if jm.Replicas != nil && *jm.Replicas == 1 {
				jm.Replicas = nil // cluster's jobManagerReplicas: 1 by default
			}
			canonicalResource(jm.Resource)
			canonicalMemory(jm.Resources)
		}
		if tm := s.TaskManager; tm != nil {
			canonicalResource(tm.Resource)
			canonicalMemory(tm.Resources)
		}
	case *v1beta1.FlinkSessionJobSpec:
		canonicalJob(s.Job)
		s.FlinkConfiguration = canonicalConfiguration(s.FlinkConfiguration)
	}
}

// canonicalJob drops the values that mean the same as none: job.state
// running and job.upgradeMode stateless (jobengine's JobSuspended and
// UpgradeMode), and job.parallelism 0, which upstream writes for an unset
// one and which the cluster reads as unset (validation refuses an explicit
// one below 1).
func canonicalJob(job *v1beta1.JobSpec) {
	if job == nil {
		return
	}
	if job.State == v1beta1.JobStateRunning {
		job.State = ""
	}
	if job.UpgradeMode == v1beta1.UpgradeModeStateless {
		job.UpgradeMode = ""
	}
	if job.Parallelism != nil && *job.Parallelism == 0 {
		job.Parallelism = nil
	}
}

// canonicalConfiguration is the configuration as flat keys and string
// values, as the cluster is built from it; one that does not flatten (a
// key given twice, which validation reports) is compared as written.
func canonicalConfiguration(c *v1beta1.Configuration) *v1beta1.Configuration {
	values, err := c.Values()
	if err != nil {
		return c
	}
	flat, err := config.Flatten(values)
	if err != nil {
		return c
	}
	if len(flat) == 0 {
		return nil
	}
	return v1beta1.NewConfiguration(flat)
}

// canonicalResource writes memory in bytes and ephemeralStorage by value,
// as cluster's resolveResources reads them (a value it cannot read is left
// as written: validation reports it).
func canonicalResource(r *v1beta1.ResourceSpec) {
	if r == nil {
		return
	}
	if strings.TrimSpace(r.Memory) != "" {
		if n, err := cluster.ParseMemory(r.Memory); err == nil {
			r.Memory = strconv.FormatInt(n, 10)
		}
	}
	if s := strings.TrimSpace(r.EphemeralStorage); s != "" {
		if q, err := resource.ParseQuantity(s); err == nil {
			c := canonicalQuantity(q)
			r.EphemeralStorage = c.String()
		}
	}
}

// canonicalMemory writes the memory of jobManager/taskManager.resources in
// bytes as cluster's resolveResources reads it, Flink's syntax first: its
// meaning is not the quantity's Kubernetes value ("1000Ki" is 1024000
// bytes, "1024k" 1048576).
func canonicalMemory(r *corev1.ResourceRequirements) {
	if r == nil {
		return
	}
	for _, list := range []corev1.ResourceList{r.Requests, r.Limits} {
		q, ok := list[corev1.ResourceMemory]
		if !ok {
			continue
		}
		if n, err := cluster.ParseMemory(q.String()); err == nil {
			list[corev1.ResourceMemory] = *resource.NewQuantity(n, resource.DecimalSI)
		}
	}
}

var quantityType = reflect.TypeOf(resource.Quantity{})

// canonicalQuantities writes every quantity under v by value.
func canonicalQuantities(v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer:
		if !v.IsNil() {
			canonicalQuantities(v.Elem())
		}
	case reflect.Struct:
		if v.Type() == quantityType {
			if v.CanSet() {
				v.Set(reflect.ValueOf(canonicalQuantity(v.Interface().(resource.Quantity))))
			}
			return
		}
		for i := range v.NumField() {
			if f := v.Field(i); f.CanSet() {
				canonicalQuantities(f)
			}
		}
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			canonicalQuantities(v.Index(i))
		}
	case reflect.Map:
		switch v.Type().Elem().Kind() {
		case reflect.Struct, reflect.Pointer, reflect.Slice, reflect.Map:
		default:
			return // no quantity in a map of strings
		}
		for _, k := range v.MapKeys() {
			e := reflect.New(v.Type().Elem()).Elem()
			e.Set(v.MapIndex(k))
			canonicalQuantities(e)
			v.SetMapIndex(k, e)
		}
	}
}

// canonicalQuantity is q in decimal SI form, one form per value ("1Gi" and
// "1073741824" alike).
func canonicalQuantity(q resource.Quantity) resource.Quantity {
	return *resource.NewDecimalQuantity(*q.AsDec(), resource.DecimalSI)
}

// pruned drops, from every object, the members that are null, empty lists
// or empty objects (once pruned themselves); list items stay where they are.
func pruned(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			p := pruned(e)
			if empty(p) {
				delete(x, k)
			} else {
				x[k] = p
			}
		}
	case []any:
		for i, e := range x {
			x[i] = pruned(e)
		}
	}
	return v
}

func empty(v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case map[string]any:
		return len(x) == 0
	case []any:
		return len(x) == 0
	}
	return false
}
