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
// them by name, with the projected service-account tokens to keep fresh:
//
//   - configMap, secret, downwardAPI, projected: the keys as files (items
//     and paths honoured), written once when the pod starts; a projected
//     serviceAccountToken is a token from the TokenRequest API bound to the
//     pod, refreshed by the pod worker (see refreshTokens);
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
func prepareVolumes(pod *corev1.Pod, podDir, claimDir, hostPathDir string, f podFields, src objectSource) (map[string]volume, []tokenFile, error) {
	out := map[string]volume{}
	var tokens []tokenFile
	for _, v := range pod.Spec.Volumes {
		dir := filepath.Join(podDir, "volumes", v.Name)
		var files map[string][]byte
		var toks []tokenFile
		var err error
		switch {
		case v.HostPath != nil:
			p, err := hostPathSource(v.HostPath, hostPathDir)
			if err != nil {
				return nil, nil, configError{fmt.Errorf("volume %s: %w", v.Name, err)}
			}
			out[v.Name] = volume{Path: p}
			continue
		case v.PersistentVolumeClaim != nil:
			dir = filepath.Join(claimDir, pod.Namespace, v.PersistentVolumeClaim.ClaimName)
		case v.ConfigMap != nil:
			files, err = configMapFiles(pod.Namespace, v.ConfigMap.Name, v.ConfigMap.Items, v.ConfigMap.Optional, src)
		case v.Secret != nil:
			files, err = secretFiles(pod.Namespace, v.Secret.SecretName, v.Secret.Items, v.Secret.Optional, src)
		case v.DownwardAPI != nil:
			files, err = downwardFiles(v.DownwardAPI.Items, f)
		case v.Projected != nil:
			files, toks, err = projectedFiles(pod, v.Projected.Sources, f, src)
		}
		if err != nil {
			return nil, nil, fmt.Errorf("volume %s: %w", v.Name, err)
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, nil, err
		}
		for _, name := range sortedKeys(files) {
			p := filepath.Join(dir, filepath.FromSlash(name))
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				return nil, nil, err
			}
			if err := writeFileAtomic(p, files[name], 0o644); err != nil {
				return nil, nil, err
			}
		}
		for _, t := range toks {
			t.Path = filepath.Join(dir, filepath.FromSlash(t.Path))
			tokens = append(tokens, t)
		}
		out[v.Name] = volume{Path: dir, APIData: v.ConfigMap != nil || v.Secret != nil || v.DownwardAPI != nil || v.Projected != nil}
	}
	return out, tokens, nil
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
// the listed items at their paths.
func keyFiles(data map[string][]byte, items []corev1.KeyToPath, what string, optionalRef *bool) (map[string][]byte, error) {
	if len(items) == 0 {
		return data, nil
	}
	out := map[string][]byte{}
	for _, it := range items {
		v, ok := data[it.Key]
		if !ok {
			if optional(optionalRef) {
				continue
			}
			return nil, fmt.Errorf("%s has no key %q", what, it.Key)
		}
		out[cleanRel(it.Path)] = v
	}
	return out, nil
}

func configMapFiles(ns, name string, items []corev1.KeyToPath, opt *bool, src objectSource) (map[string][]byte, error) {
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
	return keyFiles(data, items, "configMap "+name, opt)
}

func secretFiles(ns, name string, items []corev1.KeyToPath, opt *bool, src objectSource) (map[string][]byte, error) {
	s, err := src.secret(ns, name)
	if err != nil {
		if optional(opt) && isNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("secret %s: %w", name, err)
	}
	return keyFiles(s.Data, items, "secret "+name, opt)
}

func downwardFiles(items []corev1.DownwardAPIVolumeFile, f podFields) (map[string][]byte, error) {
	out := map[string][]byte{}
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
		out[cleanRel(it.Path)] = []byte(v)
	}
	return out, nil
}

func projectedFiles(pod *corev1.Pod, sources []corev1.VolumeProjection, f podFields, src objectSource) (map[string][]byte, []tokenFile, error) {
	ns := pod.Namespace
	out := map[string][]byte{}
	var tokens []tokenFile
	for _, s := range sources {
		var files map[string][]byte
		var err error
		switch {
		case s.ConfigMap != nil:
			files, err = configMapFiles(ns, s.ConfigMap.Name, s.ConfigMap.Items, s.ConfigMap.Optional, src)
		case s.Secret != nil:
			files, err = secretFiles(ns, s.Secret.Name, s.Secret.Items, s.Secret.Optional, src)
		case s.DownwardAPI != nil:
			files, err = downwardFiles(s.DownwardAPI.Items, f)
		case s.ServiceAccountToken != nil:
			var tok serviceAccountToken
			if tok, err = src.serviceAccountToken(pod, s.ServiceAccountToken); err == nil {
				p := cleanRel(s.ServiceAccountToken.Path)
				files = map[string][]byte{p: []byte(tok.Token)}
				tokens = append(tokens, tokenFile{Path: p, Source: *s.ServiceAccountToken, RefreshAt: tok.RefreshAt})
			}
		}
		if err != nil {
			return nil, nil, err
		}
		for k, v := range files {
			out[k] = v
		}
	}
	return out, tokens, nil
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
