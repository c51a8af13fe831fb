package nodeagent

// Init containers (spec.initContainers) run as the kubelet runs them: one
// after the other, each to completion (exit 0) before the next starts and
// before any of the pod's containers. A failed one is restarted with the
// containers' back-off (CrashLoopBackOff) unless the pod's restartPolicy is
// Never, which fails the pod (kubectl shows Init:Error) and starts nothing
// more. They get the pod's volumes, environment, a mount and PID namespace
// each, logs (kubectl logs -c <init>) and no probes. Sidecars (an init
// container with restartPolicy Always) are not supported: such a container
// waits, saying so, and the pod does not get past it.

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// ReasonPodInitializing is the waiting reason of a pod's containers while
// its init containers run.
const ReasonPodInitializing = "PodInitializing"

// restartPolicy is the container's: the pod's, and for an init container
// OnFailure unless the pod's is Never (an init container that completed is
// never run again).
func (c *container) restartPolicy() corev1.RestartPolicy {
	policy := c.w.current().Spec.RestartPolicy
	if c.init && policy != corev1.RestartPolicyNever {
		return corev1.RestartPolicyOnFailure
	}
	return policy
}

// completed: the container's last run exited 0 and it is not restarted.
func (c *container) completed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.state.Terminated != nil && c.state.Terminated.ExitCode == 0
}

// sidecarMessage says why an init container with a restartPolicy of its own
// does not run ("" for a plain init container).
func sidecarMessage(spec *corev1.Container) string {
	if spec.RestartPolicy == nil {
		return ""
	}
	return fmt.Sprintf("init container %s has restartPolicy %s (a sidecar): the local node agent runs init containers "+
		"to completion only, not sidecars", spec.Name, *spec.RestartPolicy)
}

// startContainers runs the init containers in order, each to completion,
// then starts the containers. It returns early, starting nothing more, when
// an init container fails for good (restartPolicy Never: the pod fails),
// cannot run (it stays waiting) or is stopped (the pod is deleted or the
// agent stops; stopped containers never start).
func (w *podWorker) startContainers() {
	for _, c := range w.initContainerList() {
		if c.command == nil {
			w.logf("init container %s cannot run: %s", c.spec.Name, c.waitMessage)
			return // waits, as its status says
		}
		c.start()
		<-c.done
		if c.ctx.Err() != nil {
			return
		}
		if !c.completed() {
			w.logf("init container %s failed (restartPolicy %s): the pod failed", c.spec.Name, c.restartPolicy())
			w.mu.Lock()
			w.initFailed = true
			w.mu.Unlock()
			w.statusChanged()
			return
		}
		w.logf("init container %s completed", c.spec.Name)
	}
	w.mu.Lock()
	w.initialized = true
	w.mu.Unlock()
	for _, c := range w.containerList() {
		c.setState(func() {
			if c.waitReason == "" && c.state.Waiting != nil {
				c.state = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: ReasonContainerCreating}}
			}
		})
		c.start()
	}
	w.statusChanged()
}

func (w *podWorker) initContainerList() []*container {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.initContainers
}

// allContainers are the init containers and the containers.
func (w *podWorker) allContainers() []*container {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append(append([]*container(nil), w.initContainers...), w.containers...)
}

// initStatus is the Initialized condition (w.mu held): true once every init
// container completed, else the names of those that have not.
func (w *podWorker) initStatusLocked(statuses []corev1.ContainerStatus) (ok bool, message string) {
	if w.initialized || len(w.pod.Spec.InitContainers) == 0 {
		return true, ""
	}
	var pending []string
	for _, cs := range statuses {
		if cs.State.Terminated == nil || cs.State.Terminated.ExitCode != 0 {
			pending = append(pending, cs.Name)
		}
	}
	if len(pending) == 0 {
		return true, ""
	}
	return false, fmt.Sprintf("containers with incomplete status: [%s]", strings.Join(pending, " "))
}
