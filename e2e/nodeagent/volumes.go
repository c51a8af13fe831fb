package nodeagent

import (
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// volume is a prepared volume of a pod.
type volume struct {
	// Path is the host directory (or, for a hostPath, file) of the volume.
	Path string
	// APIData: a configMap, secret, downwardAPI or projected volume, which
	// the kubelet mounts read-only.
	APIData bool
}

// prepareVolumes writes the pod's volumes below podDir/volumes and returns
// them by name:
//
//   - configMap, secret, downwardAPI, projected ("API data" volumes): the
//     keys as files (items, paths, defaultMode and modes honoured), written
//     as the kubelet's atomic writer does (see atomicwriter.go); the pod
//     worker keeps them in step with their objects afterwards (see
//     syncAPIVolumes). A projected serviceAccountToken is a token from the
//     TokenRequest API bound to the pod (src caches and refreshes it, see
//     tokenCache);
//   - emptyDir: an empty directory of the pod;
//   - hostPath: the host path itself when it exists (the node is this
//     machine); a missing one is never created on the machine: it is
//     hostPathDir/<path> (created for DirectoryOrCreate, FileOrCreate and
//     an unset type, else the pod waits as with a kubelet's type check);
//   - persistentVolumeClaim: claimDir/<namespace>/<claim>, which outlives
//     the pod (so a new pod of the same claim sees the data).
//
// Other volume types get an empty directory. A missing ConfigMap or Secret
// that is not optional is an error (the pod waits, as with a kubelet).
func prepareVolumes(pod *corev1.Pod, podDir, claimDir, hostPathDir string, f podFields, src objectSource) (map[string]volume, error) {
	out := map[string]volume{}
	for i := range pod.Spec.Volumes {
		v := &pod.Spec.Volumes[i]
		dir := volumeDir(podDir, v.Name)
		switch {
		case v.HostPath != nil:
			p, err := hostPathSource(v.HostPath, hostPathDir)
			if err != nil {
				return nil, configError{fmt.Errorf("volume %s: %w", v.Name, err)}
			}
			out[v.Name] = volume{Path: p}
			continue
		case v.PersistentVolumeClaim != nil:
			dir = filepath.Join(claimDir, pod.Namespace, v.PersistentVolumeClaim.ClaimName)
		case isAPIData(v):
			if _, err := writeAPIVolume(pod, v, dir, f, src); err != nil {
				return nil, err
			}
			out[v.Name] = volume{Path: dir, APIData: true}
			continue
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
		out[v.Name] = volume{Path: dir}
	}
	return out, nil
}

func volumeDir(podDir, name string) string { return filepath.Join(podDir, "volumes", name) }

// isAPIData: a configMap, secret, downwardAPI or projected volume, which the
// kubelet writes with its atomic writer, keeps up to date and mounts
// read-only.
func isAPIData(v *corev1.Volume) bool {
	return v.ConfigMap != nil || v.Secret != nil || v.DownwardAPI != nil || v.Projected != nil
}

// apiVolumeFiles are the files of an API data volume as its objects are now.
func apiVolumeFiles(pod *corev1.Pod, v *corev1.Volume, f podFields, src objectSource) (map[string]fileProjection, error) {
	switch {
	case v.ConfigMap != nil:
		return configMapFiles(pod.Namespace, v.ConfigMap.Name, v.ConfigMap.Items, v.ConfigMap.Optional,
			fileMode(v.ConfigMap.DefaultMode, defaultFileMode), src)
	case v.Secret != nil:
		return secretFiles(pod.Namespace, v.Secret.SecretName, v.Secret.Items, v.Secret.Optional,
			fileMode(v.Secret.DefaultMode, defaultFileMode), src)
	case v.DownwardAPI != nil:
		return downwardFiles(v.DownwardAPI.Items, f, fileMode(v.DownwardAPI.DefaultMode, defaultFileMode))
	case v.Projected != nil:
		return projectedFiles(pod, v.Projected.Sources, f, fileMode(v.Projected.DefaultMode, defaultFileMode), src)
	}
	return nil, fmt.Errorf("volume %s holds no API data", v.Name)
}

// writeAPIVolume writes an API data volume's files as they are now into dir
// (atomically, only when they changed).
func writeAPIVolume(pod *corev1.Pod, v *corev1.Volume, dir string, f podFields, src objectSource) (changed bool, err error) {
	files, err := apiVolumeFiles(pod, v, f, src)
	if err == nil {
		changed, err = writeAtomicDir(dir, files)
	}
	if err != nil {
		return false, fmt.Errorf("volume %s: %w", v.Name, err)
	}
	return changed, nil
}

// volumeRefersTo: v shows the ConfigMap (kind "configmap") or Secret (kind
// "secret") name, itself or in a projection.
func volumeRefersTo(v *corev1.Volume, kind, name string) bool {
	switch {
	case v.ConfigMap != nil:
		return kind == "configmap" && v.ConfigMap.Name == name
	case v.Secret != nil:
		return kind == "secret" && v.Secret.SecretName == name
	case v.Projected != nil:
		for _, s := range v.Projected.Sources {
			if (kind == "configmap" && s.ConfigMap != nil && s.ConfigMap.Name == name) ||
				(kind == "secret" && s.Secret != nil && s.Secret.Name == name) {
				return true
			}
		}
	}
	return false
}

// hostPathSource is where a hostPath volume's files are: the path itself if
// it exists on this machine, else below hostPathDir (see prepareVolumes).
func hostPathSource(hp *corev1.HostPathVolumeSource, hostPathDir string) (string, error) {
	p := filepath.Clean(hp.Path)
	if !filepath.IsAbs(p) {
		return "", fmt.Errorf("hostPath %q is not absolute", hp.Path)
	}
	if _, err := os.Stat(p); err == nil {
		return p, nil
	}
	local := filepath.Join(hostPathDir, p)
	typ := corev1.HostPathUnset
	if hp.Type != nil {
		typ = *hp.Type
	}
	fi, err := os.Stat(local)
	switch {
	case err == nil && typ == corev1.HostPathDirectory && !fi.IsDir():
		return "", fmt.Errorf("hostPath %s is not a directory", p)
	case err == nil:
		return local, nil
	case typ == corev1.HostPathUnset, typ == corev1.HostPathDirectoryOrCreate:
		return local, os.MkdirAll(local, 0o755)
	case typ == corev1.HostPathFileOrCreate:
		if err := os.MkdirAll(filepath.Dir(local), 0o755); err != nil {
			return "", err
		}
		return local, placeholder(local, false)
	}
	return "", fmt.Errorf("hostPath %s (type %s) does not exist on this machine nor in %s", p, typ, hostPathDir)
}

// keyFiles selects the files of a ConfigMap or Secret volume: every key, or
// the listed items at their paths, with mode unless an item has its own.
func keyFiles(data map[string][]byte, items []corev1.KeyToPath, what string, optionalRef *bool, mode os.FileMode) (map[string]fileProjection, error) {
	out := map[string]fileProjection{}
	if len(items) == 0 {
		for k, v := range data {
			out[k] = fileProjection{Data: v, Mode: mode}
		}
		return out, nil
	}
	for _, it := range items {
		v, ok := data[it.Key]
		if !ok {
			if optional(optionalRef) {
				continue
			}
			return nil, fmt.Errorf("%s has no key %q", what, it.Key)
		}
		out[cleanRel(it.Path)] = fileProjection{Data: v, Mode: fileMode(it.Mode, mode)}
	}
	return out, nil
}

func configMapFiles(ns, name string, items []corev1.KeyToPath, opt *bool, mode os.FileMode, src objectSource) (map[string]fileProjection, error) {
	cm, err := src.configMap(ns, name)
	if err != nil {
		if optional(opt) && isNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("configMap %s: %w", name, err)
	}
	data := map[string][]byte{}
	for k, v := range cm.Data {
		data[k] = []byte(v)
	}
	for k, v := range cm.BinaryData {
		data[k] = v
	}
	return keyFiles(data, items, "configMap "+name, opt, mode)
}

func secretFiles(ns, name string, items []corev1.KeyToPath, opt *bool, mode os.FileMode, src objectSource) (map[string]fileProjection, error) {
	s, err := src.secret(ns, name)
	if err != nil {
		if optional(opt) && isNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("secret %s: %w", name, err)
	}
	return keyFiles(s.Data, items, "secret "+name, opt, mode)
}

func downwardFiles(items []corev1.DownwardAPIVolumeFile, f podFields, mode os.FileMode) (map[string]fileProjection, error) {
	out := map[string]fileProjection{}
	for _, it := range items {
		var v string
		var err error
		switch {
		case it.FieldRef != nil:
			v, err = fieldValue(it.FieldRef.FieldPath, f)
		case it.ResourceFieldRef != nil:
			c := containerByName(f.pod, it.ResourceFieldRef.ContainerName)
			if c == nil {
				return nil, fmt.Errorf("downwardAPI %s: no container %q", it.Path, it.ResourceFieldRef.ContainerName)
			}
			v, err = resourceValue(c, it.ResourceFieldRef, f.capacity)
		}
		if err != nil {
			return nil, fmt.Errorf("downwardAPI %s: %w", it.Path, err)
		}
		out[cleanRel(it.Path)] = fileProjection{Data: []byte(v), Mode: fileMode(it.Mode, mode)}
	}
	return out, nil
}

func projectedFiles(pod *corev1.Pod, sources []corev1.VolumeProjection, f podFields, mode os.FileMode, src objectSource) (map[string]fileProjection, error) {
	ns := pod.Namespace
	out := map[string]fileProjection{}
	for _, s := range sources {
		var files map[string]fileProjection
		var err error
		switch {
		case s.ConfigMap != nil:
			files, err = configMapFiles(ns, s.ConfigMap.Name, s.ConfigMap.Items, s.ConfigMap.Optional, mode, src)
		case s.Secret != nil:
			files, err = secretFiles(ns, s.Secret.Name, s.Secret.Items, s.Secret.Optional, mode, src)
		case s.DownwardAPI != nil:
			files, err = downwardFiles(s.DownwardAPI.Items, f, mode)
		case s.ServiceAccountToken != nil:
			var tok serviceAccountToken
			if tok, err = src.serviceAccountToken(pod, s.ServiceAccountToken); err == nil {
				files = map[string]fileProjection{cleanRel(s.ServiceAccountToken.Path): {Data: []byte(tok.Token), Mode: mode}}
			}
		}
		if err != nil {
			return nil, err
		}
		for k, v := range files {
			out[k] = v
		}
	}
	return out, nil
}

// cleanRel keeps a volume file path inside its volume.
func cleanRel(p string) string {
	return strings.TrimPrefix(path.Clean("/"+p), "/")
}

func containerByName(pod *corev1.Pod, name string) *corev1.Container {
	if name == "" && len(pod.Spec.Containers) > 0 {
		return &pod.Spec.Containers[0]
	}
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Name == name {
			return &pod.Spec.Containers[i]
		}
	}
	return nil
}

// containerMounts are the container's volume mounts: the host path of each
// (the volume, or a file or directory in it for a subPath, created in the
// volume as a directory when missing, as the kubelet does) at its mount
// path. API data volumes are read-only, as the kubelet mounts them.
func containerMounts(c *corev1.Container, volumes map[string]volume) ([]mountSpec, error) {
	var out []mountSpec
	for _, m := range c.VolumeMounts {
		v, ok := volumes[m.Name]
		if !ok {
			return nil, fmt.Errorf("volumeMount %s: no volume %q", m.MountPath, m.Name)
		}
		host := v.Path
		if m.SubPath != "" {
			host = filepath.Join(host, cleanRel(m.SubPath))
			if _, err := os.Stat(host); errors.Is(err, os.ErrNotExist) {
				if err := os.MkdirAll(host, 0o755); err != nil {
					return nil, err
				}
			}
		}
		out = append(out, mountSpec{Source: host, Target: path.Clean("/" + m.MountPath), ReadOnly: m.ReadOnly || v.APIData})
	}
	return out, nil
}

// mountPaths maps the container's mount points to host paths.
func mountPaths(mounts []mountSpec) map[string]string {
	out := map[string]string{}
	for _, m := range mounts {
		out[m.Target] = m.Source
	}
	return out
}
