package nodeagent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// podWorker runs one pod bound to the node: it prepares the pod (IP,
// volumes, hosts file), runs its containers, writes its status and, when the
// pod is deleted, stops the containers and removes the pod object.
//
// Lock order: Agent.mu before podWorker.mu before container.mu.
type podWorker struct {
	a         *Agent
	uid       types.UID
	namespace string
	name      string
	seq       int64
	dir       string // <Agent.Dir>/pods/<namespace>_<name>_<uid>
	// objects reads the objects of the API data volumes and caches their
	// service-account tokens (see volumesync.go).
	objects *tokenCache

	updated      chan struct{} // a newer pod object arrived
	volumesDirty chan struct{} // an object of an API data volume changed
	statusDirty  chan struct{} // a container changed state
	goneCh       chan struct{} // the pod is gone from the API
	goneOnce     sync.Once
	stopCh       chan struct{} // the agent stops
	stopOnce     sync.Once

	mu         sync.Mutex
	pod        *corev1.Pod
	ip         string
	startTime  metav1.Time
	containers []*container
	// initContainers run before containers (initcontainers.go);
	// initialized once all completed, initFailed when one failed for good.
	initContainers          []*container
	initialized, initFailed bool
	// setupReason/setupMessage describe why the containers have not been
	// created yet (volumes, environment).
	setupReason, setupMessage string
	terminating               bool
	needsHosts                bool // a container runs a JVM or the operator, which read hostsPath
	conditions                map[corev1.PodConditionType]corev1.PodCondition
	written                   *corev1.PodStatus // last status written
}

func newPodWorker(a *Agent, pod *corev1.Pod, seq int64) *podWorker {
	return &podWorker{
		a:            a,
		uid:          pod.UID,
		namespace:    pod.Namespace,
		name:         pod.Name,
		seq:          seq,
		dir:          filepath.Join(a.cfg.Dir, "pods", fmt.Sprintf("%s_%s_%s", pod.Namespace, pod.Name, pod.UID)),
		updated:      make(chan struct{}, 1),
		volumesDirty: make(chan struct{}, 1),
		objects:      newTokenCache(a),
		statusDirty:  make(chan struct{}, 1),
		goneCh:       make(chan struct{}),
		stopCh:       make(chan struct{}),
		pod:          pod,
		conditions:   map[corev1.PodConditionType]corev1.PodCondition{},
		setupReason:  ReasonContainerCreating,
	}
}

func (w *podWorker) key() string { return w.namespace + "/" + w.name }

func (w *podWorker) logf(format string, args ...any) {
	w.a.logf("pod %s: %s", w.key(), fmt.Sprintf(format, args...))
}

// update hands the worker a newer pod object (called with Agent.mu held).
// New labels or annotations reach the downwardAPI volumes.
func (w *podWorker) update(pod *corev1.Pod) {
	w.mu.Lock()
	old := w.pod
	w.pod = pod
	w.mu.Unlock()
	signal(w.updated)
	if !maps.Equal(old.Labels, pod.Labels) || !maps.Equal(old.Annotations, pod.Annotations) {
		signal(w.volumesDirty)
	}
}

func (w *podWorker) gone()          { w.goneOnce.Do(func() { close(w.goneCh) }) }
func (w *podWorker) shutdown()      { w.stopOnce.Do(func() { close(w.stopCh) }) }
func (w *podWorker) statusChanged() { signal(w.statusDirty) }

func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

func (w *podWorker) current() *corev1.Pod {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.pod
}

// run is the worker's goroutine.
func (w *podWorker) run() {
	defer w.a.wg.Done()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-w.stopCh:
		case <-w.goneCh:
		case <-ctx.Done():
		}
		cancel() // ends API calls and preparations in flight
	}()
	defer w.cleanup()

	pod := w.current()
	if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed || pod.DeletionTimestamp != nil {
		// Finished before (an earlier agent ran it) or being deleted:
		// only the deletion is left.
		signal(w.updated)
		w.idle(ctx)
		return
	}
	ip, err := w.a.ips.claim(pod.Status.PodIP)
	if err != nil {
		w.logf("no IP: %v", err)
		w.idle(ctx)
		return
	}
	w.mu.Lock()
	w.ip = ip
	w.startTime = metav1.Now()
	if pod.Status.StartTime != nil {
		w.startTime = *pod.Status.StartTime
	}
	w.mu.Unlock()
	w.a.markDNS()
	if err := os.MkdirAll(filepath.Join(w.dir, "logs"), 0o755); err != nil {
		w.logf("%v", err)
	}
	if err := w.makeHostsDir(); err != nil {
		w.logf("hosts file: %v", err)
	}

	// Prepare volumes and containers; retry while something is missing.
	for backoff := time.Second; ; backoff = min(2*backoff, 10*time.Second) {
		err := w.setup()
		if err == nil {
			break
		}
		w.mu.Lock()
		w.setupReason, w.setupMessage = ReasonContainerCreating, err.Error()
		if ce, ok := err.(configError); ok {
			w.setupReason, w.setupMessage = ReasonCreateConfigError, ce.Error()
		}
		w.mu.Unlock()
		w.logf("not started: %v (retrying)", err)
		w.syncStatus(ctx)
		if !w.waitRetry(ctx, backoff) {
			return
		}
	}
	w.syncHostsNow()
	volumesDone := make(chan struct{})
	go func() {
		defer close(volumesDone)
		w.volumeLoop(ctx)
	}()
	defer func() { // before cleanup removes the pod's directory
		cancel()
		<-volumesDone
	}()
	go w.startContainers() // init containers first
	w.syncStatus(ctx)
	w.loop(ctx)
}

// waitRetry waits d, returning false when the worker must end (the pod is
// gone or being deleted before it started, or the agent stops).
func (w *podWorker) waitRetry(ctx context.Context, d time.Duration) bool {
	timer := time.NewTimer(d)
	defer timer.Stop()
	for {
		select {
		case <-timer.C:
			return true
		case <-w.updated:
			if w.current().DeletionTimestamp != nil {
				w.terminate(ctx)
				w.waitGone(ctx)
				return false
			}
		case <-w.goneCh:
			return false
		case <-w.stopCh:
			return false
		}
	}
}

// loop runs while the containers do.
func (w *podWorker) loop(ctx context.Context) {
	resync := time.NewTicker(10 * time.Second)
	defer resync.Stop()
	for {
		select {
		case <-w.updated:
			if w.current().DeletionTimestamp != nil {
				w.terminate(ctx)
				w.waitGone(ctx)
				return
			}
			w.syncStatus(ctx) // e.g. the binding's PodScheduled arrived
		case <-w.statusDirty:
			w.syncStatus(ctx)
		case <-resync.C:
			w.syncStatus(ctx)
		case <-w.goneCh:
			// Removed without a graceful deletion (force delete): kill.
			w.stopContainers(0)
			return
		case <-w.stopCh:
			w.stopContainers(w.gracePeriod())
			return
		}
	}
}

// idle waits for the pod's deletion (or the agent's stop) without running it.
func (w *podWorker) idle(ctx context.Context) {
	for {
		select {
		case <-w.updated:
			if w.current().DeletionTimestamp != nil {
				w.terminate(ctx)
				w.waitGone(ctx)
				return
			}
		case <-w.goneCh:
			return
		case <-w.stopCh:
			return
		}
	}
}

// waitGone waits after the pod object was deleted until the informer sees
// it gone (finalizers may hold it) or the agent stops; it repeats the
// deletion every few seconds in case it failed.
func (w *podWorker) waitGone(ctx context.Context) {
	retry := time.NewTicker(5 * time.Second)
	defer retry.Stop()
	for {
		select {
		case <-w.goneCh:
			return
		case <-w.stopCh:
			return
		case <-retry.C:
			w.deletePod(ctx)
		}
	}
}

// gracePeriod is the pod's termination grace period, capped.
func (w *podWorker) gracePeriod() time.Duration {
	pod := w.current()
	secs := int64(corev1.DefaultTerminationGracePeriodSeconds)
	if pod.DeletionGracePeriodSeconds != nil {
		secs = *pod.DeletionGracePeriodSeconds
	} else if pod.Spec.TerminationGracePeriodSeconds != nil {
		secs = *pod.Spec.TerminationGracePeriodSeconds
	}
	return min(time.Duration(secs)*time.Second, w.a.cfg.MaxGracePeriod)
}

// terminate is what the kubelet does for a pod with a deletionTimestamp:
// stop its containers (SIGTERM, SIGKILL after the grace period), report
// their final state, then delete the object for good (grace period 0).
func (w *podWorker) terminate(ctx context.Context) {
	w.mu.Lock()
	w.terminating = true
	w.mu.Unlock()
	w.a.markDNS()
	grace := w.gracePeriod()
	begin := time.Now()
	w.stopContainers(grace)
	w.logf("containers stopped in %s (grace %s)", time.Since(begin).Round(time.Millisecond), grace)
	w.syncStatus(ctx)
	w.deletePod(ctx)
}

// deletePod removes the pod object for good (grace period 0, this pod's UID).
func (w *podWorker) deletePod(ctx context.Context) {
	err := w.a.client.CoreV1().Pods(w.namespace).Delete(ctx, w.name, metav1.DeleteOptions{
		GracePeriodSeconds: new(int64),
		Preconditions:      &metav1.Preconditions{UID: &w.uid},
	})
	if err != nil && !isNotFound(err) && ctx.Err() == nil {
		w.logf("delete: %v", err)
	}
}

// stopContainers stops all containers (init containers too) at once and
// waits for them; those not started yet never start.
func (w *podWorker) stopContainers(grace time.Duration) {
	var wg sync.WaitGroup
	for _, c := range w.allContainers() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.stop(grace)
		}()
	}
	wg.Wait()
}

// cleanup runs when the worker ends: processes are gone by now.
func (w *podWorker) cleanup() {
	w.stopContainers(0) // no-op unless run returned early
	w.mu.Lock()
	ip := w.ip
	w.ip = ""
	w.mu.Unlock()
	w.a.removeWorker(w)
	if ip != "" {
		w.a.ips.release(ip)
	}
	if err := os.RemoveAll(w.dir); err != nil {
		w.logf("remove %s: %v", w.dir, err)
	}
}

func (w *podWorker) containerList() []*container {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.containers
}

// endpoint describes the pod for name resolution; false before it has an IP.
func (w *podWorker) endpoint() (Endpoint, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ip == "" {
		return Endpoint{}, false
	}
	return Endpoint{
		Namespace:   w.namespace,
		Name:        w.name,
		Labels:      w.pod.Labels,
		Hostname:    podHostname(w.pod),
		Subdomain:   w.pod.Spec.Subdomain,
		IP:          w.ip,
		Ready:       w.readyLocked(),
		Terminating: w.terminating || w.pod.DeletionTimestamp != nil,
		Seq:         w.seq,
	}, true
}

// hostsDir holds the pod's hosts file, and nothing else: Operator
// containers see the directory mounted (mountns.go), so that each new
// version of the file, which replaces it by rename, reaches them.
func (w *podWorker) hostsDir() string { return filepath.Join(w.dir, "dns") }

// hostsPath is the pod's hosts file, the JVMs' name resolution and the
// operator's /etc/hosts; <pod dir>/hosts links to it.
func (w *podWorker) hostsPath() string { return filepath.Join(w.hostsDir(), "hosts") }

// makeHostsDir creates hostsDir and the link <pod dir>/hosts -> dns/hosts
// (for readers outside the pods: the file's place before it had a
// directory of its own). Before the containers are set up, and not on each
// write: the DNS loop may write after the pod's directory was removed, and
// must not create it again.
func (w *podWorker) makeHostsDir() error {
	if err := os.MkdirAll(w.hostsDir(), 0o755); err != nil {
		return err
	}
	err := os.Symlink(filepath.Join("dns", "hosts"), filepath.Join(w.dir, "hosts"))
	if errors.Is(err, os.ErrExist) {
		return nil
	}
	return err
}

func (w *podWorker) setNeedsHosts() {
	w.mu.Lock()
	w.needsHosts = true
	w.mu.Unlock()
}

func (w *podWorker) hasHosts() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.needsHosts
}

// writeHosts rewrites the pod's hosts file if it has one.
func (w *podWorker) writeHosts(endpoints []Endpoint, services []*corev1.Service) {
	if !w.hasHosts() {
		return
	}
	self, ok := w.endpoint()
	if !ok {
		return
	}
	if _, err := writeFileIfChanged(w.hostsPath(), HostsFile(self, w.a.hostname, endpoints, services)); err != nil {
		w.logf("hosts file: %v", err)
	}
}

// syncHostsNow writes the hosts file before the containers start, so that a
// JVM resolves its own Services (Flink's JobManager its RPC address) at once.
func (w *podWorker) syncHostsNow() {
	if !w.hasHosts() {
		return
	}
	self, ok := w.endpoint()
	if !ok {
		return
	}
	if _, err := writeFileIfChanged(w.hostsPath(), w.a.hostsFor(self)); err != nil {
		w.logf("hosts file: %v", err)
	}
}

// readyLocked: every container ready (w.mu held).
func (w *podWorker) readyLocked() bool {
	if len(w.containers) == 0 {
		return false
	}
	for _, c := range w.containers {
		if !c.isReady() {
			return false
		}
	}
	return true
}

// syncStatus writes the pod's status if it changed since the last write.
func (w *podWorker) syncStatus(ctx context.Context) {
	st := w.computeStatus()
	w.mu.Lock()
	same := w.written != nil && equality.Semantic.DeepEqual(*w.written, st)
	w.mu.Unlock()
	if same || ctx.Err() != nil {
		return
	}
	patch, err := json.Marshal(map[string]any{
		"metadata": map[string]any{"uid": w.uid}, // a precondition: never another pod of this name
		"status":   st,
	})
	if err != nil {
		panic(err)
	}
	_, err = w.a.client.CoreV1().Pods(w.namespace).Patch(ctx, w.name, types.MergePatchType, patch, metav1.PatchOptions{}, "status")
	if err != nil {
		if !isNotFound(err) && ctx.Err() == nil {
			w.logf("status: %v", err)
		}
		return
	}
	w.mu.Lock()
	w.written = &st
	w.mu.Unlock()
}
