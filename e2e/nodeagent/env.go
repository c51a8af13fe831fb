package nodeagent

import (
	"fmt"
	"math"
	"regexp"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Expand replaces $(VAR) references in s with their values from lookup, as
// the kubelet does in env values, command and args: $$ is a literal $, a
// reference to an undefined variable is left as it is.
func Expand(s string, lookup func(string) (string, bool)) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 >= len(s) {
			b.WriteByte(s[i])
			continue
		}
		switch s[i+1] {
		case '$':
			b.WriteByte('$')
			i++
		case '(':
			end := strings.IndexByte(s[i+2:], ')')
			if end < 0 {
				b.WriteString(s[i:])
				return b.String()
			}
			name := s[i+2 : i+2+end]
			if v, ok := lookup(name); ok {
				b.WriteString(v)
			} else {
				b.WriteString(s[i : i+3+end])
			}
			i += 2 + end
		default:
			b.WriteByte('$')
		}
	}
	return b.String()
}

// objectSource reads the ConfigMaps and Secrets that env and volumes refer
// to, and requests service-account tokens for projected volumes.
type objectSource interface {
	configMap(namespace, name string) (*corev1.ConfigMap, error)
	secret(namespace, name string) (*corev1.Secret, error)
	serviceAccountToken(pod *corev1.Pod, p *corev1.ServiceAccountTokenProjection) (serviceAccountToken, error)
}

// podFields are the values of the downward API that the agent knows.
type podFields struct {
	pod    *corev1.Pod
	podIP  string
	hostIP string
	// capacity stands in for unset resource limits (the node's allocatable).
	capacity corev1.ResourceList
	// serviceEnv are the `kubernetes` Service's variables (see serviceEnv).
	serviceEnv []EnvVar
}

// EnvVar is one entry of a container's environment, in order.
type EnvVar struct{ Name, Value string }

// containerEnv computes the environment of c as the kubelet would (envFrom
// first, then env in order, each value expanded against what is defined
// before it; later entries win), then the API server's Service variables
// (f.serviceEnv) where the container defines no such name; they count in
// the expansion too. Other service-link variables are not added.
// A missing ConfigMap/Secret or key that is not optional is an error.
func containerEnv(c *corev1.Container, f podFields, src objectSource) ([]EnvVar, error) {
	ns := f.pod.Namespace
	values := map[string]string{}
	var order []string
	set := func(name, value string) {
		if _, ok := values[name]; !ok {
			order = append(order, name)
		}
		values[name] = value
	}
	for _, from := range c.EnvFrom {
		switch {
		case from.ConfigMapRef != nil:
			cm, err := src.configMap(ns, from.ConfigMapRef.Name)
			if err != nil {
				if optional(from.ConfigMapRef.Optional) && isNotFound(err) {
					continue
				}
				return nil, fmt.Errorf("envFrom configMap %s: %w", from.ConfigMapRef.Name, err)
			}
			for k, v := range cm.Data {
				set(from.Prefix+k, v)
			}
		case from.SecretRef != nil:
			s, err := src.secret(ns, from.SecretRef.Name)
			if err != nil {
				if optional(from.SecretRef.Optional) && isNotFound(err) {
					continue
				}
				return nil, fmt.Errorf("envFrom secret %s: %w", from.SecretRef.Name, err)
			}
			for k, v := range s.Data {
				set(from.Prefix+k, string(v))
			}
		}
	}
	lookup := func(name string) (string, bool) {
		if v, ok := values[name]; ok {
			return v, ok
		}
		for _, e := range f.serviceEnv {
			if e.Name == name {
				return e.Value, true
			}
		}
		return "", false
	}
	for _, e := range c.Env {
		if e.ValueFrom == nil {
			set(e.Name, Expand(e.Value, lookup))
			continue
		}
		v, ok, err := envValueFrom(c, e.ValueFrom, f, src)
		if err != nil {
			return nil, fmt.Errorf("env %s: %w", e.Name, err)
		}
		if ok {
			set(e.Name, v)
		}
	}
	for _, e := range f.serviceEnv {
		if _, ok := values[e.Name]; !ok {
			set(e.Name, e.Value)
		}
	}
	out := make([]EnvVar, len(order))
	for i, name := range order {
		out[i] = EnvVar{name, values[name]}
	}
	return out, nil
}

func optional(b *bool) bool { return b != nil && *b }

// envValueFrom resolves one valueFrom; ok is false for an optional reference
// that is missing (the variable is then not set).
func envValueFrom(c *corev1.Container, from *corev1.EnvVarSource, f podFields, src objectSource) (string, bool, error) {
	ns := f.pod.Namespace
	switch {
	case from.FieldRef != nil:
		v, err := fieldValue(from.FieldRef.FieldPath, f)
		return v, err == nil, err
	case from.ResourceFieldRef != nil:
		v, err := resourceValue(c, from.ResourceFieldRef, f.capacity)
		return v, err == nil, err
	case from.ConfigMapKeyRef != nil:
		ref := from.ConfigMapKeyRef
		cm, err := src.configMap(ns, ref.Name)
		if err != nil {
			if optional(ref.Optional) && isNotFound(err) {
				return "", false, nil
			}
			return "", false, fmt.Errorf("configMap %s: %w", ref.Name, err)
		}
		if v, ok := cm.Data[ref.Key]; ok {
			return v, true, nil
		}
		if v, ok := cm.BinaryData[ref.Key]; ok {
			return string(v), true, nil
		}
		if optional(ref.Optional) {
			return "", false, nil
		}
		return "", false, fmt.Errorf("configMap %s has no key %q", ref.Name, ref.Key)
	case from.SecretKeyRef != nil:
		ref := from.SecretKeyRef
		s, err := src.secret(ns, ref.Name)
		if err != nil {
			if optional(ref.Optional) && isNotFound(err) {
				return "", false, nil
			}
			return "", false, fmt.Errorf("secret %s: %w", ref.Name, err)
		}
		if v, ok := s.Data[ref.Key]; ok {
			return string(v), true, nil
		}
		if optional(ref.Optional) {
			return "", false, nil
		}
		return "", false, fmt.Errorf("secret %s has no key %q", ref.Name, ref.Key)
	}
	return "", false, fmt.Errorf("unsupported valueFrom")
}

var fieldSubscript = regexp.MustCompile(`^metadata\.(labels|annotations)\['(.*)'\]$`)

// fieldValue is the downward API's value of path.
func fieldValue(path string, f podFields) (string, error) {
	p := f.pod
	switch path {
	case "metadata.name":
		return p.Name, nil
	case "metadata.namespace":
		return p.Namespace, nil
	case "metadata.uid":
		return string(p.UID), nil
	case "metadata.labels":
		return formatMap(p.Labels), nil
	case "metadata.annotations":
		return formatMap(p.Annotations), nil
	case "spec.nodeName":
		return p.Spec.NodeName, nil
	case "spec.serviceAccountName":
		return p.Spec.ServiceAccountName, nil
	case "status.hostIP", "status.hostIPs":
		return f.hostIP, nil
	case "status.podIP", "status.podIPs":
		return f.podIP, nil
	}
	if m := fieldSubscript.FindStringSubmatch(path); m != nil {
		if m[1] == "labels" {
			return p.Labels[m[2]], nil
		}
		return p.Annotations[m[2]], nil
	}
	return "", fmt.Errorf("unsupported fieldRef %q", path)
}

// formatMap renders labels or annotations as the downward API's volume files
// do: key="value" lines, sorted.
func formatMap(m map[string]string) string {
	var lines []string
	for _, k := range sortedKeys(m) {
		lines = append(lines, fmt.Sprintf("%s=%q", k, m[k]))
	}
	return strings.Join(lines, "\n")
}

// resourceValue is the downward API's value of a resourceFieldRef: the
// container's limit (or request), the node's allocatable when the limit is
// unset, divided by the divisor and rounded up.
func resourceValue(c *corev1.Container, ref *corev1.ResourceFieldSelector, capacity corev1.ResourceList) (string, error) {
	kind, name, ok := strings.Cut(ref.Resource, ".")
	if !ok || (kind != "limits" && kind != "requests") {
		return "", fmt.Errorf("unsupported resourceFieldRef %q", ref.Resource)
	}
	list := c.Resources.Limits
	if kind == "requests" {
		list = c.Resources.Requests
	}
	q, ok := list[corev1.ResourceName(name)]
	if !ok && kind == "requests" {
		q, ok = c.Resources.Limits[corev1.ResourceName(name)]
	}
	if !ok {
		if kind == "requests" {
			return "0", nil
		}
		if q, ok = capacity[corev1.ResourceName(name)]; !ok {
			return "", fmt.Errorf("unsupported resourceFieldRef %q", ref.Resource)
		}
	}
	divisor := ref.Divisor
	if divisor.IsZero() {
		divisor = resource.MustParse("1")
	}
	if name == "cpu" {
		return fmt.Sprint(int64(math.Ceil(float64(q.MilliValue()) / float64(divisor.MilliValue())))), nil
	}
	return fmt.Sprint(int64(math.Ceil(float64(q.Value()) / float64(divisor.Value())))), nil
}
