package nodeagent

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// volume is a prepared volume of a pod.
type volume struct {
	// Path is the host directory (or, for a hostPath, file) of the volume.
	Path string
	// APIData: a configMap, secret, downwardAPI or projected volume, which
	// the kubelet mounts read-only.
	APIData bool
	// ReadOnly: mounted read-only in every container (a
	// persistentVolumeClaim volume's readOnly).
	ReadOnly bool
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
//   - persistentVolumeClaim, and ephemeral (the claim <pod>-<volume> that
//     kube-controller-manager's ephemeral-volume-controller makes for the
//     pod): the path of the claim's bound PersistentVolume (hostPath, as
//     localcluster's provisioner makes them, or local), which outlives the
//     pod and goes with the claim (see claimVolume). Until the claim is
//     Bound the pod waits (ContainerCreating, retried), as the kubelet
//     waits to mount it. Only a source that cannot look claims up (the
//     unit tests' fixed objects) gets claimDir/<namespace>/<claim>
//     instead.
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
		case v.PersistentVolumeClaim != nil || v.Ephemeral != nil:
			claim, readOnly := ephemeralClaimName(pod, v), false
			if v.PersistentVolumeClaim != nil {
				claim, readOnly = v.PersistentVolumeClaim.ClaimName, v.PersistentVolumeClaim.ReadOnly
			}
			cs, ok := claimLookup(src)
			if !ok {
				dir = filepath.Join(claimDir, pod.Namespace, claim)
				break
			}
			vol, err := claimVolume(pod, v, claim, cs, hostPathDir)
			if err != nil {
				return nil, err
			}
			vol.ReadOnly = vol.ReadOnly || readOnly
			out[v.Name] = vol
			continue
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

// claimSource looks up claims and volumes (the Agent does, from the API
// server).
type claimSource interface {
	persistentVolumeClaim(namespace, name string) (*corev1.PersistentVolumeClaim, error)
	persistentVolume(name string) (*corev1.PersistentVolume, error)
}

// claimLookup is src's claimSource: the agent's, under a pod's tokenCache.
func claimLookup(src objectSource) (claimSource, bool) {
	if tc, ok := src.(*tokenCache); ok {
		src = tc.objectSource
	}
	cs, ok := src.(claimSource)
	return cs, ok
}

// persistentVolumeClaim and persistentVolume implement claimSource with
// direct reads, as configMap and secret do: a pod that waits for its claim
// reads it again at each retry of its setup.
func (a *Agent) persistentVolumeClaim(ns, name string) (*corev1.PersistentVolumeClaim, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return a.client.CoreV1().PersistentVolumeClaims(ns).Get(ctx, name, metav1.GetOptions{})
}

func (a *Agent) persistentVolume(name string) (*corev1.PersistentVolume, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return a.client.CoreV1().PersistentVolumes().Get(ctx, name, metav1.GetOptions{})
}

// ephemeralClaimName is the claim of an ephemeral volume: <pod>-<volume>.
func ephemeralClaimName(pod *corev1.Pod, v *corev1.Volume) string { return pod.Name + "-" + v.Name }

// claimVolume is the volume of a pod's claim, as the kubelet finds it
// before it mounts it: the claim must exist, not be being deleted, be
// Bound to a PersistentVolume whose claimRef is this claim (and, for an
// ephemeral volume, be owned by this pod); the volume's hostPath (a missing
// path as a hostPath volume's, see hostPathSource) or local path is the
// directory. Otherwise an error that keeps the pod ContainerCreating, its
// message saying what is awaited; the worker retries.
func claimVolume(pod *corev1.Pod, v *corev1.Volume, claimName string, cs claimSource, hostPathDir string) (volume, error) {
	wait := func(format string, args ...any) (volume, error) {
		return volume{}, fmt.Errorf("volume %s: waiting for persistentvolumeclaim %q: %s", v.Name, claimName, fmt.Sprintf(format, args...))
	}
	claim, err := cs.persistentVolumeClaim(pod.Namespace, claimName)
	if isNotFound(err) {
		return wait("not found")
	}
	if err != nil {
		return wait("%v", err)
	}
	if claim.DeletionTimestamp != nil {
		return wait("it is being deleted")
	}
	if v.Ephemeral != nil && !metav1.IsControlledBy(claim, pod) {
		return wait("it was not created for this pod (an ephemeral volume's claim is the pod's)")
	}
	if claim.Status.Phase != corev1.ClaimBound || claim.Spec.VolumeName == "" {
		class := "the cluster's default"
		if claim.Spec.StorageClassName != nil {
			class = strconv.Quote(*claim.Spec.StorageClassName)
		}
		return wait("not bound yet (phase %s, storageClassName %s)", claim.Status.Phase, class)
	}
	pv, err := cs.persistentVolume(claim.Spec.VolumeName)
	if err != nil {
		return wait("its volume %s: %v", claim.Spec.VolumeName, err)
	}
	if ref := pv.Spec.ClaimRef; ref == nil || ref.Namespace != claim.Namespace || ref.Name != claim.Name || ref.UID != claim.UID {
		return wait("its volume %s is bound to another claim", pv.Name)
	}
	switch {
	case pv.Spec.HostPath != nil:
		p, err := hostPathSource(pv.Spec.HostPath, hostPathDir)
		if err != nil {
			return wait("its volume %s: %v", pv.Name, err)
		}
		return volume{Path: p}, nil
	case pv.Spec.Local != nil:
		p := filepath.Clean(pv.Spec.Local.Path)
		if fi, err := os.Stat(p); err != nil || !fi.IsDir() {
			return wait("its local volume %s: path %s is not a directory on this machine", pv.Name, p)
		}
		return volume{Path: p}, nil
	}
	return wait("its volume %s is neither hostPath nor local, which the local node agent cannot mount", pv.Name)
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
		out = append(out, mountSpec{Source: host, Target: path.Clean("/" + m.MountPath), ReadOnly: m.ReadOnly || v.APIData || v.ReadOnly})
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
