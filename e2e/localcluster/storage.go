package localcluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	storagelisters "k8s.io/client-go/listers/storage/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
)

// Dynamic provisioning, as a cluster with a local-path provisioner has it:
// Start creates the default StorageClass DefaultStorageClass (provisioner
// StorageProvisioner, reclaimPolicy Delete, volumeBindingMode Immediate),
// kube-controller-manager's persistentvolume-binder-controller asks for a
// volume (it annotates a pending claim of that class with
// volume.kubernetes.io/storage-provisioner) and binds the claim to it, and
// the provisioner here, in the process that owns the cluster (like the
// egress proxy), makes the volume: a directory <Dir>/volumes/pvc-<claim uid>
// and a hostPath PersistentVolume of it (capacity the claim's request, its
// access modes and volume mode, claimRef to the claim, the class's reclaim
// policy and mount options, annotation pv.kubernetes.io/provisioned-by).
// When the binder reports the volume Released (its claim deleted) and the
// policy is Delete, the provisioner removes the directory and the volume;
// Retain keeps both. The node agent mounts a claim's bound volume at its
// hostPath (e2e/nodeagent/volumes.go).

const (
	// DefaultStorageClass is the default StorageClass Start creates.
	DefaultStorageClass = "standard"
	// StorageProvisioner is the provisioner name of the in-process
	// provisioner: StorageClasses naming it get volumes from it.
	StorageProvisioner = "local.flinkops.io/hostpath"

	annStorageProvisioner     = "volume.kubernetes.io/storage-provisioner"
	annBetaStorageProvisioner = "volume.beta.kubernetes.io/storage-provisioner"
	annProvisionedBy          = "pv.kubernetes.io/provisioned-by"
	annDefaultStorageClass    = "storageclass.kubernetes.io/is-default-class"
)

// StorageControllers are the kube-controller-manager controllers that
// claims and volumes need (in DefaultControllers): binding, the protection
// finalizers that keep a claim (and its volume) while a pod uses it, and
// the claims of generic ephemeral volumes.
var StorageControllers = []string{
	"persistentvolume-binder-controller",
	"persistentvolumeclaim-protection-controller",
	"persistentvolume-protection-controller",
	"ephemeral-volume-controller",
}

// provisioner makes and removes the volumes of StorageProvisioner's classes.
type provisioner struct {
	dir    string // where the volumes' directories are
	client kubernetes.Interface
	logf   func(string, ...any)

	claims  corelisters.PersistentVolumeClaimLister
	volumes corelisters.PersistentVolumeLister
	classes storagelisters.StorageClassLister
	queue   workqueue.TypedRateLimitingInterface[string]

	factory informers.SharedInformerFactory
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	stop    sync.Once
}

// startProvisioner creates the default StorageClass (unless one named so
// exists) and starts the provisioner; it returns once its informers synced.
func startProvisioner(ctx context.Context, cfg *rest.Config, dir string, logf func(string, ...any)) (*provisioner, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.UserAgent = "localcluster-provisioner"
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	if err := createDefaultStorageClass(ctx, client); err != nil {
		return nil, err
	}
	factory := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithTransform(stripManagedFields))
	p := &provisioner{
		dir: dir, client: client, logf: logf, factory: factory,
		claims:  factory.Core().V1().PersistentVolumeClaims().Lister(),
		volumes: factory.Core().V1().PersistentVolumes().Lister(),
		classes: factory.Storage().V1().StorageClasses().Lister(),
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.NewTypedItemExponentialFailureRateLimiter[string](100*time.Millisecond, 10*time.Second),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "localcluster-provisioner"}),
	}
	enqueue := func(prefix string) cache.ResourceEventHandlerFuncs {
		add := func(obj any) {
			if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
				p.queue.Add(prefix + key)
			}
		}
		return cache.ResourceEventHandlerFuncs{AddFunc: add, UpdateFunc: func(_, obj any) { add(obj) }}
	}
	if _, err := factory.Core().V1().PersistentVolumeClaims().Informer().AddEventHandler(enqueue("claim/")); err != nil {
		return nil, err
	}
	if _, err := factory.Core().V1().PersistentVolumes().Informer().AddEventHandler(enqueue("volume/")); err != nil {
		return nil, err
	}
	factory.Storage().V1().StorageClasses().Informer()
	ictx, cancel := context.WithCancel(context.Background())
	p.cancel = cancel
	factory.Start(ictx.Done())
	for typ, ok := range factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			p.close()
			return nil, fmt.Errorf("provisioner: informer %v not synced: %w", typ, ctx.Err())
		}
	}
	p.wg.Go(func() {
		for p.next(ictx) {
		}
	})
	return p, nil
}

// createDefaultStorageClass creates DefaultStorageClass, the cluster's
// default, unless a class of that name exists.
func createDefaultStorageClass(ctx context.Context, client kubernetes.Interface) error {
	del := corev1.PersistentVolumeReclaimDelete
	immediate := storagev1.VolumeBindingImmediate
	_, err := client.StorageV1().StorageClasses().Create(ctx, &storagev1.StorageClass{
		ObjectMeta: metav1.ObjectMeta{
			Name:        DefaultStorageClass,
			Annotations: map[string]string{annDefaultStorageClass: "true"},
			Labels:      map[string]string{"app.kubernetes.io/managed-by": "localcluster"},
		},
		Provisioner:       StorageProvisioner,
		ReclaimPolicy:     &del,
		VolumeBindingMode: &immediate,
	}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("StorageClass %s: %w", DefaultStorageClass, err)
	}
	return nil
}

// close stops the informers and the worker.
func (p *provisioner) close() {
	if p == nil {
		return
	}
	p.stop.Do(func() {
		p.cancel()
		p.queue.ShutDown()
		p.wg.Wait()
		p.factory.Shutdown()
	})
}

func (p *provisioner) next(ctx context.Context) bool {
	key, quit := p.queue.Get()
	if quit {
		return false
	}
	defer p.queue.Done(key)
	var err error
	if name, ok := strings.CutPrefix(key, "volume/"); ok {
		err = p.syncVolume(ctx, name)
	} else {
		err = p.syncClaim(ctx, strings.TrimPrefix(key, "claim/"))
	}
	if err != nil && ctx.Err() == nil {
		p.logf("provisioner: %s: %v (retrying)", key, err)
		p.queue.AddRateLimited(key)
		return true
	}
	p.queue.Forget(key)
	return true
}

// volumeName is the name of the volume of a claim: the same for every try.
func volumeName(uid types.UID) string { return "pvc-" + string(uid) }

// syncClaim provisions a volume for a pending claim that the binder handed
// to StorageProvisioner.
func (p *provisioner) syncClaim(ctx context.Context, key string) error {
	ns, name, _ := cache.SplitMetaNamespaceKey(key)
	claim, err := p.claims.PersistentVolumeClaims(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	asked := claim.Annotations[annStorageProvisioner]
	if asked == "" {
		asked = claim.Annotations[annBetaStorageProvisioner]
	}
	if asked != StorageProvisioner || claim.Spec.VolumeName != "" || claim.DeletionTimestamp != nil ||
		claim.Status.Phase != corev1.ClaimPending {
		return nil
	}
	pvName := volumeName(claim.UID)
	if _, err := p.volumes.Get(pvName); err == nil {
		return nil // made before; the binder binds it
	}
	className := ""
	if claim.Spec.StorageClassName != nil {
		className = *claim.Spec.StorageClassName
	}
	class, err := p.classes.Get(className)
	if err != nil {
		return fmt.Errorf("StorageClass %q of claim %s: %w", className, key, err)
	}
	if class.Provisioner != StorageProvisioner {
		return nil
	}
	if claim.Spec.Selector != nil {
		p.event(ctx, claim, corev1.EventTypeWarning, "ProvisioningFailed", "claim selector is not supported")
		return nil
	}
	if claim.Spec.DataSource != nil || claim.Spec.DataSourceRef != nil {
		p.event(ctx, claim, corev1.EventTypeWarning, "ProvisioningFailed", "data sources are not supported")
		return nil
	}
	size, ok := claim.Spec.Resources.Requests[corev1.ResourceStorage]
	if !ok {
		p.event(ctx, claim, corev1.EventTypeWarning, "ProvisioningFailed", "claim requests no storage")
		return nil
	}
	dir := filepath.Join(p.dir, pvName)
	// 0777, as local-path provisioners make them: a pod's user may not be
	// the agent's on a real node (it is here).
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return err
	}
	os.Chmod(dir, 0o777)
	reclaim := corev1.PersistentVolumeReclaimDelete
	if class.ReclaimPolicy != nil {
		reclaim = *class.ReclaimPolicy
	}
	dirType := corev1.HostPathDirectory
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{
			Name:        pvName,
			Annotations: map[string]string{annProvisionedBy: StorageProvisioner},
		},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:    corev1.ResourceList{corev1.ResourceStorage: size},
			AccessModes: claim.Spec.AccessModes,
			VolumeMode:  claim.Spec.VolumeMode,
			ClaimRef: &corev1.ObjectReference{
				Kind: "PersistentVolumeClaim", APIVersion: "v1",
				Namespace: claim.Namespace, Name: claim.Name, UID: claim.UID,
			},
			PersistentVolumeReclaimPolicy: reclaim,
			StorageClassName:              class.Name,
			MountOptions:                  class.MountOptions,
			PersistentVolumeSource: corev1.PersistentVolumeSource{
				HostPath: &corev1.HostPathVolumeSource{Path: dir, Type: &dirType},
			},
		},
	}
	if _, err := p.client.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	p.logf("provisioner: volume %s (%s, %s) for claim %s", pvName, size.String(), dir, key)
	p.event(ctx, claim, corev1.EventTypeNormal, "ProvisioningSucceeded", "Successfully provisioned volume "+pvName)
	return nil
}

// syncVolume deletes a Released volume of ours whose policy is Delete,
// directory first.
func (p *provisioner) syncVolume(ctx context.Context, name string) error {
	pv, err := p.volumes.Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if pv.Annotations[annProvisionedBy] != StorageProvisioner || pv.Status.Phase != corev1.VolumeReleased ||
		pv.Spec.PersistentVolumeReclaimPolicy != corev1.PersistentVolumeReclaimDelete || pv.DeletionTimestamp != nil {
		return nil
	}
	if hp := pv.Spec.HostPath; hp != nil {
		dir := filepath.Clean(hp.Path)
		// Only what this provisioner made: a volume edited to point
		// elsewhere keeps its files.
		if filepath.Dir(dir) != filepath.Clean(p.dir) || filepath.Base(dir) != pv.Name {
			return fmt.Errorf("volume %s: path %s is not a volume of this provisioner (%s); not deleting it", name, dir, p.dir)
		}
		if err := os.RemoveAll(dir); err != nil {
			return err
		}
	}
	uid := pv.UID
	err = p.client.CoreV1().PersistentVolumes().Delete(ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	p.logf("provisioner: volume %s deleted with its directory (claim released, reclaimPolicy Delete)", name)
	return nil
}

// event records an Event on the claim, as a provisioner does; failures are
// only logged.
func (p *provisioner) event(ctx context.Context, claim *corev1.PersistentVolumeClaim, typ, reason, msg string) {
	now := metav1.NewTime(time.Now())
	_, err := p.client.CoreV1().Events(claim.Namespace).Create(ctx, &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{GenerateName: claim.Name + ".", Namespace: claim.Namespace},
		InvolvedObject: corev1.ObjectReference{
			Kind: "PersistentVolumeClaim", APIVersion: "v1",
			Namespace: claim.Namespace, Name: claim.Name, UID: claim.UID, ResourceVersion: claim.ResourceVersion,
		},
		Reason: reason, Message: msg, Type: typ,
		Source:         corev1.EventSource{Component: StorageProvisioner},
		FirstTimestamp: now, LastTimestamp: now, Count: 1,
	}, metav1.CreateOptions{})
	if err != nil && !errors.Is(ctx.Err(), context.Canceled) {
		p.logf("provisioner: event %s on claim %s/%s: %v", reason, claim.Namespace, claim.Name, err)
	}
}
