package nodeagent

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"
)

// API data volumes (configMap, secret, downwardAPI, projected) follow their
// objects while the pod runs, as with a kubelet: the agent's informers on
// ConfigMaps and Secrets tell the workers of the pods whose volumes show
// the object that changed (Agent.objectChanged), a pod's new labels or
// annotations its downwardAPI volumes (podWorker.update), and each worker
// rewrites its API data volumes then (volumeLoop): within about a second of
// the change. The kubelet itself takes up to its sync period plus its
// cache's delay (about a minute); an event that the informer misses is
// caught by the worker's periodic resync, every volumeResyncPeriod, the
// kubelet's sync period. Files are rewritten only when their content or
// mode changed, with the atomic writer (atomicwriter.go), so a reader sees
// the old or the new version, never a mix within ..data. A subPath mount
// keeps the file it was mounted from (the mount resolved the key's symlink
// when the container started), as with a kubelet; the next start of the
// container mounts the current one.

// volumeResyncPeriod: how often a worker rewrites its API data volumes
// without an event (the kubelet's default sync period).
const volumeResyncPeriod = time.Minute

// volumeRetryPeriod: how soon a failed update is tried again (an object
// gone, a token request refused).
const volumeRetryPeriod = 10 * time.Second

// volumeLoop keeps the pod's API data volumes up to date until ctx ends:
// on a change of their objects (volumesDirty), when a service-account token
// is due for refresh (80% of its lifetime), every volumeResyncPeriod, and
// volumeRetryPeriod after a failure. A volume that cannot be updated keeps
// its files (a ConfigMap that is not optional deleted, as with a kubelet).
func (w *podWorker) volumeLoop(ctx context.Context) {
	if !hasAPIData(w.current()) {
		return
	}
	period := time.NewTicker(volumeResyncPeriod)
	defer period.Stop()
	var retry <-chan time.Time
	for {
		var tokenDue <-chan time.Time
		var timer *time.Timer
		if at, ok := w.objects.nextRefresh(); ok && retry == nil { // after a failure: the retry
			timer = time.NewTimer(time.Until(at))
			tokenDue = timer.C
		}
		select {
		case <-ctx.Done():
		case <-w.volumesDirty:
		case <-period.C:
		case <-tokenDue:
		case <-retry:
		}
		if timer != nil {
			timer.Stop()
		}
		if ctx.Err() != nil {
			return
		}
		retry = nil
		if !w.syncAPIVolumes(ctx) {
			retry = time.After(volumeRetryPeriod)
		}
	}
}

// syncAPIVolumes rewrites the API data volumes whose content changed,
// logging each; false when one could not be updated.
func (w *podWorker) syncAPIVolumes(ctx context.Context) bool {
	pod := w.current()
	f := w.fields(pod)
	ok := true
	for i := range pod.Spec.Volumes {
		v := &pod.Spec.Volumes[i]
		if !isAPIData(v) || ctx.Err() != nil {
			continue
		}
		changed, err := writeAPIVolume(pod, v, volumeDir(w.dir, v.Name), f, w.objects)
		switch {
		case err != nil:
			ok = false
			if ctx.Err() == nil {
				w.logf("not updated: %v (keeps its files; retrying)", err)
			}
		case changed:
			w.logf("volume %s updated", v.Name)
		}
	}
	return ok
}

func hasAPIData(pod *corev1.Pod) bool {
	for i := range pod.Spec.Volumes {
		if isAPIData(&pod.Spec.Volumes[i]) {
			return true
		}
	}
	return false
}

// refersTo: a volume of the worker's pod shows the ConfigMap or Secret
// (kind "configmap" or "secret") namespace/name.
func (w *podWorker) refersTo(kind, namespace, name string) bool {
	if namespace != w.namespace {
		return false
	}
	pod := w.current()
	for i := range pod.Spec.Volumes {
		if volumeRefersTo(&pod.Spec.Volumes[i], kind, name) {
			return true
		}
	}
	return false
}

// objectHandler tells the workers of the pods that show a ConfigMap or
// Secret (kind) when it is added, changed or deleted.
func (a *Agent) objectHandler(kind string) cache.ResourceEventHandler {
	changed := func(obj any) {
		key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
		if err != nil {
			return
		}
		ns, name, _ := cache.SplitMetaNamespaceKey(key)
		a.objectChanged(kind, ns, name)
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc: changed,
		UpdateFunc: func(old, obj any) {
			if o, ok := old.(interface{ GetResourceVersion() string }); ok {
				if n, ok := obj.(interface{ GetResourceVersion() string }); ok && o.GetResourceVersion() == n.GetResourceVersion() {
					return
				}
			}
			changed(obj)
		},
		DeleteFunc: changed,
	}
}

// objectChanged asks the workers of the pods whose volumes show the object
// to update them.
func (a *Agent) objectChanged(kind, namespace, name string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, w := range a.workers {
		if w.refersTo(kind, namespace, name) {
			signal(w.volumesDirty)
		}
	}
}
