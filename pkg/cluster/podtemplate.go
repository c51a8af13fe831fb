package cluster

import (
	"maps"
	"reflect"
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
)

// mergePodTemplate lays a user pod template over the operator-built pod,
// field by field, the template winning (see the package doc for the rules).
// tmpl is not modified.
func mergePodTemplate(dst *corev1.PodTemplateSpec, tmpl *corev1.Pod) {
	if tmpl == nil {
		return
	}
	src := tmpl.DeepCopy()
	dst.Labels = mergeMap(dst.Labels, src.Labels)
	dst.Annotations = mergeMap(dst.Annotations, src.Annotations)
	mergePodSpec(&dst.Spec, &src.Spec)
}

// podSpecMerged are the PodSpec fields mergePodSpec merges element-wise;
// every other field is replaced when the template sets it. Listing the
// special ones (rather than the plain ones) means a field added to PodSpec
// in a later Kubernetes release is taken from the template without a code
// change.
var podSpecMerged = map[string]bool{
	"Volumes": true, "InitContainers": true, "Containers": true, "ImagePullSecrets": true,
	"ResourceClaims": true, "SchedulingGates": true, "Tolerations": true, "HostAliases": true,
	"TopologySpreadConstraints": true, "ReadinessGates": true, "NodeSelector": true, "Overhead": true,
}

func mergePodSpec(dst, src *corev1.PodSpec) {
	dst.Volumes = mergeByKey(dst.Volumes, src.Volumes, func(v corev1.Volume) string { return v.Name }, nil)
	dst.InitContainers = mergeByKey(dst.InitContainers, src.InitContainers, containerName, mergeContainer)
	dst.Containers = mergeByKey(dst.Containers, src.Containers, containerName, mergeContainer)
	dst.ImagePullSecrets = mergeByKey(dst.ImagePullSecrets, src.ImagePullSecrets,
		func(r corev1.LocalObjectReference) string { return r.Name }, nil)
	dst.ResourceClaims = mergeByKey(dst.ResourceClaims, src.ResourceClaims,
		func(c corev1.PodResourceClaim) string { return c.Name }, nil)
	dst.SchedulingGates = mergeByKey(dst.SchedulingGates, src.SchedulingGates,
		func(g corev1.PodSchedulingGate) string { return g.Name }, nil)
	dst.Tolerations = appendUnique(dst.Tolerations, src.Tolerations)
	dst.HostAliases = appendUnique(dst.HostAliases, src.HostAliases)
	dst.TopologySpreadConstraints = appendUnique(dst.TopologySpreadConstraints, src.TopologySpreadConstraints)
	dst.ReadinessGates = appendUnique(dst.ReadinessGates, src.ReadinessGates)
	dst.NodeSelector = mergeMap(dst.NodeSelector, src.NodeSelector)
	dst.Overhead = mergeResourceList(dst.Overhead, src.Overhead)
	overlay(reflect.ValueOf(dst).Elem(), reflect.ValueOf(src).Elem(), podSpecMerged)
}

// containerMerged are the Container fields mergeContainer merges
// element-wise (Name is the merge key itself).
var containerMerged = map[string]bool{
	"Name": true, "Env": true, "EnvFrom": true, "Ports": true, "VolumeMounts": true,
	"VolumeDevices": true, "Resources": true, "ResizePolicy": true,
}

func containerName(c corev1.Container) string { return c.Name }

// mergeContainer lays src over dst (same name): env by name, mounts by
// path, ports by number and protocol, resources per resource name.
func mergeContainer(dst *corev1.Container, src corev1.Container) {
	dst.Env = mergeByKey(dst.Env, src.Env, func(e corev1.EnvVar) string { return e.Name }, nil)
	dst.EnvFrom = appendUnique(dst.EnvFrom, src.EnvFrom)
	dst.Ports = mergeByKey(dst.Ports, src.Ports, portKey, nil)
	dst.VolumeMounts = mergeByKey(dst.VolumeMounts, src.VolumeMounts,
		func(m corev1.VolumeMount) string { return m.MountPath }, nil)
	dst.VolumeDevices = mergeByKey(dst.VolumeDevices, src.VolumeDevices,
		func(d corev1.VolumeDevice) string { return d.DevicePath }, nil)
	dst.ResizePolicy = mergeByKey(dst.ResizePolicy, src.ResizePolicy,
		func(r corev1.ContainerResizePolicy) string { return string(r.ResourceName) }, nil)
	mergeResources(&dst.Resources, src.Resources)
	overlay(reflect.ValueOf(dst).Elem(), reflect.ValueOf(&src).Elem(), containerMerged)
}

// portKey identifies a container port as Kubernetes does (number and
// protocol, TCP when unset).
func portKey(p corev1.ContainerPort) string {
	proto := p.Protocol
	if proto == "" {
		proto = corev1.ProtocolTCP
	}
	return strconv.Itoa(int(p.ContainerPort)) + "/" + string(proto)
}

// mergeResources lays src's requests, limits and claims over dst's per
// resource name.
func mergeResources(dst *corev1.ResourceRequirements, src corev1.ResourceRequirements) {
	dst.Requests = mergeResourceList(dst.Requests, src.Requests)
	dst.Limits = mergeResourceList(dst.Limits, src.Limits)
	dst.Claims = mergeByKey(dst.Claims, src.Claims, func(c corev1.ResourceClaim) string { return c.Name }, nil)
}

func mergeResourceList(dst, src corev1.ResourceList) corev1.ResourceList {
	if len(src) == 0 {
		return dst
	}
	if dst == nil {
		dst = corev1.ResourceList{}
	}
	for k, v := range src {
		dst[k] = v.DeepCopy()
	}
	return dst
}

// mergeMap returns dst with src's entries on top (src wins).
func mergeMap(dst, src map[string]string) map[string]string {
	if len(src) == 0 {
		return dst
	}
	if dst == nil {
		dst = make(map[string]string, len(src))
	}
	maps.Copy(dst, src)
	return dst
}

// mergeByKey merges src into dst by key: an element whose key is already in
// dst is merged into it (or replaces it when merge is nil), others are
// appended in src's order.
func mergeByKey[T any](dst, src []T, key func(T) string, merge func(*T, T)) []T {
	for _, s := range src {
		k := key(s)
		i := slices.IndexFunc(dst, func(d T) bool { return key(d) == k })
		switch {
		case i < 0:
			dst = append(dst, s)
		case merge != nil:
			merge(&dst[i], s)
		default:
			dst[i] = s
		}
	}
	return dst
}

// appendUnique appends the elements of src that dst does not already hold.
func appendUnique[T any](dst, src []T) []T {
	for _, s := range src {
		if !slices.ContainsFunc(dst, func(d T) bool { return equality.Semantic.DeepEqual(d, s) }) {
			dst = append(dst, s)
		}
	}
	return dst
}

// overlay copies every field of src that is set (non-zero) onto dst, except
// the fields named in skip. dst and src are addressable structs of one type.
func overlay(dst, src reflect.Value, skip map[string]bool) {
	t := src.Type()
	for i := range t.NumField() {
		if skip[t.Field(i).Name] || !t.Field(i).IsExported() {
			continue
		}
		if f := src.Field(i); !f.IsZero() {
			dst.Field(i).Set(f)
		}
	}
}
