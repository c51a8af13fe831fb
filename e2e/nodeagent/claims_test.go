package nodeagent

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// claimObjects is fakeObjects that also looks claims and volumes up, as
// the Agent does.
type claimObjects struct {
	fakeObjects
	claims  map[string]*corev1.PersistentVolumeClaim
	volumes map[string]*corev1.PersistentVolume
}

func (c claimObjects) persistentVolumeClaim(ns, name string) (*corev1.PersistentVolumeClaim, error) {
	if pvc, ok := c.claims[ns+"/"+name]; ok {
		return pvc, nil
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "persistentvolumeclaims"}, name)
}

func (c claimObjects) persistentVolume(name string) (*corev1.PersistentVolume, error) {
	if pv, ok := c.volumes[name]; ok {
		return pv, nil
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "persistentvolumes"}, name)
}

// TestClaimVolumes: a persistentVolumeClaim (or ephemeral) volume is the
// bound volume's path; until the claim is Bound to a volume that names it,
// the pod waits with a message saying what for (an error, not a
// configError: ContainerCreating).
func TestClaimVolumes(t *testing.T) {
	dir := t.TempDir()
	pvDir, localDir := filepath.Join(dir, "pv"), dir
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", UID: "pod-uid"},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "c", VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}}},
			Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "state", ReadOnly: true},
			}}},
		},
	}
	claim := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "state", UID: "claim-uid"},
		Spec:       corev1.PersistentVolumeClaimSpec{VolumeName: "pvc-claim-uid"},
		Status:     corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound},
	}
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: "pvc-claim-uid"},
		Spec: corev1.PersistentVolumeSpec{
			ClaimRef:               &corev1.ObjectReference{Namespace: "ns", Name: "state", UID: "claim-uid"},
			PersistentVolumeSource: corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: pvDir}},
		},
	}
	src := claimObjects{fakeObjects: testObjects(), claims: map[string]*corev1.PersistentVolumeClaim{}, volumes: map[string]*corev1.PersistentVolume{}}
	prepare := func() (map[string]volume, error) {
		// Under a tokenCache, as a pod worker has it.
		return prepareVolumes(pod, filepath.Join(dir, "pod"), filepath.Join(dir, "claims"), filepath.Join(dir, "hostpath"), podFields{pod: pod}, newTokenCache(src))
	}
	wantWait := func(what, msg string) {
		t.Helper()
		_, err := prepare()
		if err == nil || !strings.Contains(err.Error(), msg) {
			t.Fatalf("%s: error %v, want one with %q", what, err, msg)
		}
		if _, ok := err.(configError); ok {
			t.Errorf("%s: a configError (CreateContainerConfigError); the kubelet waits ContainerCreating", what)
		}
	}
	wantWait("no claim", `volume data: waiting for persistentvolumeclaim "state": not found`)
	pending := claim.DeepCopy()
	pending.Spec.VolumeName, pending.Status.Phase = "", corev1.ClaimPending
	src.claims["ns/state"] = pending
	wantWait("claim pending", `not bound yet (phase Pending, storageClassName the cluster's default)`)
	src.claims["ns/state"] = claim
	wantWait("no volume", `its volume pvc-claim-uid: persistentvolumes "pvc-claim-uid" not found`)
	other := pv.DeepCopy()
	other.Spec.ClaimRef.UID = "an-older-claim"
	src.volumes[pv.Name] = other
	wantWait("volume of another claim", "is bound to another claim")
	src.volumes[pv.Name] = pv
	vols, err := prepare()
	if err != nil {
		t.Fatal(err)
	}
	// The volume's path does not exist: as a hostPath volume's, below
	// hostPathDir.
	if want := filepath.Join(dir, "hostpath", pvDir); vols["data"].Path != want || !vols["data"].ReadOnly {
		t.Errorf("volume %+v, want path %s, read-only (the claim's readOnly)", vols["data"], want)
	}
	mounts, err := containerMounts(&pod.Spec.Containers[0], vols)
	if err != nil || len(mounts) != 1 || !mounts[0].ReadOnly {
		t.Errorf("mounts %+v, %v: want one, read-only", mounts, err)
	}
	local := pv.DeepCopy()
	local.Spec.HostPath, local.Spec.Local = nil, &corev1.LocalVolumeSource{Path: localDir}
	src.volumes[pv.Name] = local
	if vols, err := prepare(); err != nil || vols["data"].Path != localDir {
		t.Errorf("local volume: %+v, %v; want %s", vols["data"], err, localDir)
	}
	local.Spec.Local.Path = filepath.Join(dir, "missing")
	wantWait("local volume's path missing", "is not a directory on this machine")
	src.volumes[pv.Name] = pv
	deleting := claim.DeepCopy()
	now := metav1.NewTime(time.Now())
	deleting.DeletionTimestamp = &now
	src.claims["ns/state"] = deleting
	wantWait("claim being deleted", "it is being deleted")

	// An ephemeral volume: the claim <pod>-<volume>, the pod's own.
	pod.Spec.Volumes[0].VolumeSource = corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{}}
	eph := claim.DeepCopy()
	eph.Name = "p-data"
	src.claims["ns/p-data"] = eph
	pv.Spec.ClaimRef.Name = "p-data"
	wantWait("ephemeral claim of no pod", "it was not created for this pod")
	yes := true
	eph.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: "p", UID: types.UID("pod-uid"), Controller: &yes}}
	if vols, err := prepare(); err != nil || vols["data"].Path != filepath.Join(dir, "hostpath", pvDir) || vols["data"].ReadOnly {
		t.Errorf("ephemeral volume: %+v, %v", vols["data"], err)
	}
}
