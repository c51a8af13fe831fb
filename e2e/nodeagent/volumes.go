package nodeagent

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// placeholderToken is what a projected service-account token file holds:
// the agent requests no tokens (nothing in the pods calls the API server).
const placeholderToken = "local-node-agent-issues-no-service-account-tokens"

// prepareVolumes writes the pod's volumes below podDir/volumes and returns
// the host directory (or, for hostPath, path) of each volume by name:
//
//   - configMap, secret, downwardAPI, projected: the keys as files (items
//     and paths honoured), written once when the pod starts;
//   - emptyDir: an empty directory of the pod;
//   - hostPath: the host path itself (created for DirectoryOrCreate);
//   - persistentVolumeClaim: claimDir/<namespace>/<claim>, which outlives
//     the pod (so a new pod of the same claim sees the data).
//
// Other volume types get an empty directory. A missing ConfigMap or Secret
// that is not optional is an error (the pod waits, as with a kubelet).
func prepareVolumes(pod *corev1.Pod, podDir, claimDir string, f podFields, src objectSource) (map[string]string, error) {
	out := map[string]string{}
	for _, v := range pod.Spec.Volumes {
		dir := filepath.Join(podDir, "volumes", v.Name)
		var files map[string][]byte
		var err error
		switch {
		case v.HostPath != nil:
			if t := v.HostPath.Type; t != nil && *t == corev1.HostPathDirectoryOrCreate {
				if err := os.MkdirAll(v.HostPath.Path, 0o755); err != nil {
					return nil, err
				}
			}
			out[v.Name] = v.HostPath.Path
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
			files, err = projectedFiles(pod.Namespace, v.Projected.Sources, f, src)
		}
		if err != nil {
			return nil, fmt.Errorf("volume %s: %w", v.Name, err)
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
		for _, name := range sortedKeys(files) {
			p := filepath.Join(dir, filepath.FromSlash(name))
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				return nil, err
			}
			if err := os.WriteFile(p, files[name], 0o644); err != nil {
				return nil, err
			}
		}
		out[v.Name] = dir
	}
	return out, nil
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

func projectedFiles(ns string, sources []corev1.VolumeProjection, f podFields, src objectSource) (map[string][]byte, error) {
	out := map[string][]byte{}
	for _, s := range sources {
		var files map[string][]byte
		var err error
		switch {
		case s.ConfigMap != nil:
			files, err = configMapFiles(ns, s.ConfigMap.Name, s.ConfigMap.Items, s.ConfigMap.Optional, src)
			if err != nil && isNotFound(err) && s.ConfigMap.Name == "kube-root-ca.crt" {
				// The local control plane runs no root-ca-cert-publisher; the
				// default token volume must not block every pod.
				files, err = nil, nil
			}
		case s.Secret != nil:
			files, err = secretFiles(ns, s.Secret.Name, s.Secret.Items, s.Secret.Optional, src)
		case s.DownwardAPI != nil:
			files, err = downwardFiles(s.DownwardAPI.Items, f)
		case s.ServiceAccountToken != nil:
			files = map[string][]byte{cleanRel(s.ServiceAccountToken.Path): []byte(placeholderToken)}
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

// mountPaths maps the container's mount points to host paths (the volume
// directory, or a file or directory in it for a subPath).
func mountPaths(c *corev1.Container, volumes map[string]string) (map[string]string, error) {
	out := map[string]string{}
	for _, m := range c.VolumeMounts {
		host, ok := volumes[m.Name]
		if !ok {
			return nil, fmt.Errorf("volumeMount %s: no volume %q", m.MountPath, m.Name)
		}
		if m.SubPath != "" {
			host = filepath.Join(host, cleanRel(m.SubPath))
		}
		out[path.Clean(m.MountPath)] = host
	}
	return out, nil
}
