package cluster

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
)

const (
	kib = int64(1) << 10
	mib = int64(1) << 20
)

// flinkMemoryUnits are Flink's MemorySize units (binary, case-insensitive).
var flinkMemoryUnits = map[string]int64{
	"": 1, "b": 1, "bytes": 1,
	"k": 1 << 10, "kb": 1 << 10, "kibibytes": 1 << 10,
	"m": 1 << 20, "mb": 1 << 20, "mebibytes": 1 << 20,
	"g": 1 << 30, "gb": 1 << 30, "gibibytes": 1 << 30,
	"t": 1 << 40, "tb": 1 << 40, "tebibytes": 1 << 40,
}

// ParseMemory reads a memory size the way upstream's
// FlinkConfigBuilder.parseResourceMemoryString does: Flink's MemorySize
// syntax first ("2048m", "2g", "1024 mb": binary units, case-insensitive,
// integer amounts), then Kubernetes quantity syntax ("2Gi", "1.5G"; after
// upstream's normalisation: blanks removed, upper-cased, a trailing "B"
// dropped). Flink first matters: upstream's own examples put "2048m" in
// resources.requests.memory, meaning 2 GiB, where Kubernetes would read
// 2.048 bytes. The result is in bytes and positive.
func ParseMemory(s string) (int64, error) {
	if n, ok := parseFlinkMemory(s); ok {
		if n <= 0 {
			return 0, fmt.Errorf("memory %q must be positive", s)
		}
		return n, nil
	}
	k := strings.ToUpper(strings.Join(strings.Fields(s), ""))
	k = strings.TrimSuffix(k, "B")
	if strings.HasSuffix(k, "I") {
		k = k[:len(k)-1] + "i"
	}
	q, err := resource.ParseQuantity(k)
	if err != nil {
		return 0, fmt.Errorf("memory %q is neither a Flink memory size (2048m, 2g) nor a Kubernetes quantity (2Gi)", s)
	}
	n := q.Value() // rounds fractions of a byte up
	if n <= 0 {
		return 0, fmt.Errorf("memory %q must be positive", s)
	}
	return n, nil
}

// parseFlinkMemory is Flink's MemorySize.parseBytes; ok is false where Flink
// would throw.
func parseFlinkMemory(s string) (int64, bool) {
	t := strings.TrimSpace(s)
	i := 0
	for i < len(t) && t[i] >= '0' && t[i] <= '9' {
		i++
	}
	if i == 0 {
		return 0, false
	}
	value, err := strconv.ParseInt(t[:i], 10, 64)
	if err != nil {
		return 0, false
	}
	mult, ok := flinkMemoryUnits[strings.ToLower(strings.TrimSpace(t[i:]))]
	if !ok || (value != 0 && value > math.MaxInt64/mult) {
		return 0, false
	}
	return value * mult, true
}

// FormatMemory writes bytes as a Flink memory size in the largest of m, k, b
// that divides it ("2048m"), the form Flink's own config files use.
func FormatMemory(bytes int64) string {
	switch {
	case bytes%mib == 0:
		return strconv.FormatInt(bytes/mib, 10) + "m"
	case bytes%kib == 0:
		return strconv.FormatInt(bytes/kib, 10) + "k"
	}
	return strconv.FormatInt(bytes, 10) + "b"
}

// componentResources is what spec.*.resource and spec.*.resources say for
// one component.
type componentResources struct {
	// processMemory is the Flink process size in bytes; 0 when not given.
	processMemory int64
	// container holds only the resource names the spec sets; they override
	// the pod template's (see doc.go).
	container corev1.ResourceRequirements
}

// limitFactors are kubernetes.<component>.{cpu,memory}.limit-factor.
type limitFactors struct{ cpu, memory float64 }

// resolveResources combines the Flink-form resource and the Kubernetes-form
// resources of a component. resources wins per resource name: a name it
// mentions (in requests or limits) takes both its request and its limit
// from it only, so the two forms never mix within one resource.
func resolveResources(field string, res *v1beta1.ResourceSpec, reqs *corev1.ResourceRequirements, f limitFactors) (componentResources, error) {
	var out componentResources
	requests, limits := corev1.ResourceList{}, corev1.ResourceList{}

	if res != nil {
		if res.CPU != nil {
			cpu := *res.CPU
			if cpu < 0 || math.IsNaN(cpu) || math.IsInf(cpu, 0) {
				return out, fmt.Errorf("%s.resource.cpu: %v is not a valid CPU amount", field, cpu)
			}
			if cpu > 0 {
				requests[corev1.ResourceCPU] = milliCPU(cpu)
				limits[corev1.ResourceCPU] = milliCPU(cpu * f.cpu)
			}
		}
		if strings.TrimSpace(res.Memory) != "" {
			n, err := ParseMemory(res.Memory)
			if err != nil {
				return out, fmt.Errorf("%s.resource.memory: %w", field, err)
			}
			out.processMemory = n
			requests[corev1.ResourceMemory] = *resource.NewQuantity(n, resource.BinarySI)
			limits[corev1.ResourceMemory] = *resource.NewQuantity(int64(math.Ceil(float64(n)*f.memory)), resource.BinarySI)
		}
		if strings.TrimSpace(res.EphemeralStorage) != "" {
			q, err := resource.ParseQuantity(strings.TrimSpace(res.EphemeralStorage))
			if err != nil {
				return out, fmt.Errorf("%s.resource.ephemeralStorage: %w", field, err)
			}
			requests[corev1.ResourceEphemeralStorage] = q
			limits[corev1.ResourceEphemeralStorage] = q
		}
	}

	if reqs != nil {
		for name := range reqs.Requests {
			delete(requests, name)
			delete(limits, name)
		}
		for name := range reqs.Limits {
			delete(requests, name)
			delete(limits, name)
		}
		for _, side := range []struct {
			in   corev1.ResourceList
			out  corev1.ResourceList
			path string
		}{{reqs.Requests, requests, "requests"}, {reqs.Limits, limits, "limits"}} {
			for name, q := range side.in {
				if name == corev1.ResourceMemory {
					n, err := ParseMemory(q.String())
					if err != nil {
						return out, fmt.Errorf("%s.resources.%s.memory: %w", field, side.path, err)
					}
					q = *resource.NewQuantity(n, resource.BinarySI)
				}
				side.out[name] = q.DeepCopy()
			}
		}
		// Flink's process size follows the request, as upstream; a limit
		// alone is also the request in Kubernetes.
		if _, ok := reqs.Requests[corev1.ResourceMemory]; ok {
			q := requests[corev1.ResourceMemory]
			out.processMemory = q.Value()
		} else if _, ok := reqs.Limits[corev1.ResourceMemory]; ok {
			q := limits[corev1.ResourceMemory]
			out.processMemory = q.Value()
		}
		out.container.Claims = append(out.container.Claims, reqs.Claims...)
	}
	if len(requests) > 0 {
		out.container.Requests = requests
	}
	if len(limits) > 0 {
		out.container.Limits = limits
	}
	return out, nil
}

// milliCPU renders cores as a milli-CPU quantity ("1", "500m").
func milliCPU(cores float64) resource.Quantity {
	return *resource.NewMilliQuantity(int64(math.Round(cores*1000)), resource.DecimalSI)
}

// parseLimitFactor reads a kubernetes.*.limit-factor key (default 1; Flink
// requires at least 1).
func parseLimitFactor(conf map[string]string, key string) (float64, error) {
	v := strings.TrimSpace(conf[key])
	if v == "" {
		return 1, nil
	}
	f, err := strconv.ParseFloat(v, 64)
	if err == nil && (f < 1 || math.IsInf(f, 0) || math.IsNaN(f)) {
		err = errors.New("must be a number of at least 1")
	}
	if err != nil {
		return 0, fmt.Errorf("config key %s: invalid value %q: %v", key, v, err)
	}
	return f, nil
}
