package nodeagent

import (
	"path/filepath"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// setup prepares the pod's volumes and containers (nothing is started).
func (w *podWorker) setup() error {
	pod := w.current()
	f := w.fields(pod)
	volumes, err := prepareVolumes(pod, w.dir, filepath.Join(w.a.cfg.Dir, "claims"), filepath.Join(w.a.cfg.Dir, "hostpath"), f, w.objects)
	if err != nil {
		return err
	}
	var inits, containers []*container
	for i := range pod.Spec.InitContainers {
		spec := &pod.Spec.InitContainers[i]
		c, err := w.newInitContainer(spec, volumes, f)
		if err != nil {
			return err
		}
		if msg := sidecarMessage(spec); msg != "" {
			c.command, c.waitReason, c.waitMessage = nil, ReasonSidecarNotSupported, msg
			c.state = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: c.waitReason, Message: c.waitMessage}}
		}
		inits = append(inits, c)
	}
	for i := range pod.Spec.Containers {
		c, err := w.newContainer(&pod.Spec.Containers[i], volumes, f)
		if err != nil {
			return err
		}
		if len(inits) > 0 && c.waitReason == "" {
			c.state = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: ReasonPodInitializing}}
		}
		containers = append(containers, c)
	}
	w.mu.Lock()
	w.initContainers, w.containers = inits, containers
	w.mu.Unlock()
	return nil
}

// fields are the downward API's values of pod (its IP as the worker has it).
func (w *podWorker) fields(pod *corev1.Pod) podFields {
	w.mu.Lock()
	defer w.mu.Unlock()
	return podFields{pod: pod, podIP: w.ip, hostIP: HostIP, capacity: w.a.cfg.Capacity, serviceEnv: w.a.serviceEnv}
}

// computeStatus is the pod status as a kubelet would report it now.
func (w *podWorker) computeStatus() corev1.PodStatus {
	w.mu.Lock()
	defer w.mu.Unlock()
	pod := w.pod
	st := corev1.PodStatus{
		HostIP:    HostIP,
		HostIPs:   []corev1.HostIP{{IP: HostIP}},
		QOSClass:  pod.Status.QOSClass,
		StartTime: &w.startTime,
	}
	if w.startTime.IsZero() {
		st.StartTime = nil
	}
	if w.ip != "" {
		st.PodIP = w.ip
		st.PodIPs = []corev1.PodIP{{IP: w.ip}}
	}
	if w.containers == nil {
		// Not set up yet: the first container to run waits with the
		// setup's reason, the others (after init containers) initializing.
		waiting := func(c corev1.Container, first bool) corev1.ContainerStatus {
			f := false
			ws := &corev1.ContainerStateWaiting{Reason: ReasonPodInitializing}
			if first {
				ws = &corev1.ContainerStateWaiting{Reason: w.setupReason, Message: w.setupMessage}
			}
			return corev1.ContainerStatus{Name: c.Name, Image: c.Image, Started: &f, State: corev1.ContainerState{Waiting: ws}}
		}
		for i, c := range pod.Spec.InitContainers {
			st.InitContainerStatuses = append(st.InitContainerStatuses, waiting(c, i == 0))
		}
		for _, c := range pod.Spec.Containers {
			st.ContainerStatuses = append(st.ContainerStatuses, waiting(c, len(pod.Spec.InitContainers) == 0))
		}
	} else {
		for _, c := range w.initContainers {
			st.InitContainerStatuses = append(st.InitContainerStatuses, c.status())
		}
		for _, c := range w.containers {
			st.ContainerStatuses = append(st.ContainerStatuses, c.status())
		}
	}
	st.Phase = podPhase(pod.Spec.RestartPolicy, st.ContainerStatuses)
	if w.initFailed {
		// An init container failed under restartPolicy Never.
		st.Phase = corev1.PodFailed
	}

	allReady := len(st.ContainerStatuses) > 0
	for _, cs := range st.ContainerStatuses {
		allReady = allReady && cs.Ready
	}
	ready := allReady && st.Phase == corev1.PodRunning
	initialized, initMessage := w.initStatusLocked(st.InitContainerStatuses)
	initCondition := w.condition(corev1.PodInitialized, initialized, "ContainersNotInitialized")
	if !initialized {
		initCondition.Message = initMessage
	}
	st.Conditions = []corev1.PodCondition{
		w.condition(corev1.PodScheduled, true, ""),
		initCondition,
		w.condition(corev1.ContainersReady, allReady, "ContainersNotReady"),
		w.condition(corev1.PodReady, ready, "ContainersNotReady"),
	}
	return st
}

// condition returns a condition whose LastTransitionTime changes only when
// its status does (w.mu held).
func (w *podWorker) condition(t corev1.PodConditionType, ok bool, falseReason string) corev1.PodCondition {
	status := corev1.ConditionFalse
	reason := falseReason
	if ok {
		status, reason = corev1.ConditionTrue, ""
	}
	prev, seen := w.conditions[t]
	if seen && prev.Status == status {
		return prev
	}
	c := corev1.PodCondition{Type: t, Status: status, Reason: reason, LastTransitionTime: metav1.Now()}
	w.conditions[t] = c
	return c
}

// podPhase follows the kubelet: Pending while a container has never run,
// Running while any runs or will be restarted, Succeeded/Failed once all
// terminated for good.
func podPhase(policy corev1.RestartPolicy, statuses []corev1.ContainerStatus) corev1.PodPhase {
	var waitingFirst, running, terminated, failed int
	for _, cs := range statuses {
		switch {
		case cs.State.Running != nil:
			running++
		case cs.State.Terminated != nil:
			terminated++
			if cs.State.Terminated.ExitCode != 0 {
				failed++
			}
		case cs.LastTerminationState.Terminated == nil && (cs.Started == nil || !*cs.Started) && cs.RestartCount == 0:
			waitingFirst++
		}
	}
	switch {
	case len(statuses) == 0 || waitingFirst > 0:
		return corev1.PodPending
	case running > 0:
		return corev1.PodRunning
	case terminated == len(statuses):
		if policy == corev1.RestartPolicyAlways || policy == "" {
			return corev1.PodRunning // stopped by the agent; would restart
		}
		if failed > 0 {
			return corev1.PodFailed
		}
		return corev1.PodSucceeded
	}
	return corev1.PodRunning // waiting to restart
}
