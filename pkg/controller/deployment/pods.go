package deployment

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"

	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/cluster"
	"github.com/flinkops/flink-operator/pkg/endpoints"
	kubescheme "github.com/flinkops/flink-operator/pkg/generated/kube/kubernetes/scheme"
	"github.com/flinkops/flink-operator/pkg/reasons"
)

// Pod failures: the pods of a Flink cluster (JobManager and TaskManagers)
// are watched through a label-filtered informer (pkg/operator/informers.go:
// type=flink-standalone-kubernetes, or flink-native-kubernetes for native
// clusters and the TaskManager pods Flink creates), so a pod that cannot start shows in
// status.error, with a Warning event, as soon as its status changes
// instead of after the readiness timeout.
//
// Upstream (AbstractFlinkDeploymentObserver, DeploymentFailedException)
// turns a waiting JobManager container in one of its container error
// reasons into jobManagerDeploymentStatus ERROR, with the event reason the
// waiting reason and the message "[container] CrashLoop - <last termination
// message>". The same reasons do so here; a failing TaskManager pod and an
// unschedulable pod are reported in status.error only (upstream does not
// look at them), and the message also carries the Flink exception line of
// the container's last run.

// jmErrorReasons are upstream's DeploymentFailedException.CONTAINER_ERROR_REASONS:
// a JobManager container waiting for one of them makes the JobManager
// deployment ERROR.
var jmErrorReasons = []string{
	reasons.ReasonCrashLoopBackOff, "ImagePullBackOff", "ErrImagePull", "RunContainerError", "CreateContainerConfigError", reasons.ReasonOOMKilled,
}

// otherWaitingErrors are waiting reasons that will not resolve by waiting
// either, though upstream does not count them: status.error only.
var otherWaitingErrors = []string{"InvalidImageName", "CreateContainerError", "PreCreateHookError", "PostStartHookError", "StartError"}

// restartWindow: a container that failed and was restarted counts as still
// failing until it is ready and its failed run ended this long ago, so that
// a crash loop reads as one steady failure, not a failure and a recovery
// per restart.
const restartWindow = 2 * time.Minute

// podFailure is why one pod of a Flink cluster does not run.
type podFailure struct {
	reason  string // event reason
	message string
	// jmError: upstream's reasons, which make a JobManager ERROR.
	jmError bool
	// recheck > 0: the verdict expires then unless the pod changes (a
	// restarted container that keeps running): look again.
	recheck time.Duration
}

// classifyPod says whether pod is failing at now, and why; line gives the
// explaining line of a container's failed run (its termination message or
// log), asked only for failures.
func classifyPod(pod *corev1.Pod, now time.Time, line func(cs *corev1.ContainerStatus, t *corev1.ContainerStateTerminated, previous bool) string) *podFailure {
	if pod.DeletionTimestamp != nil || pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		return nil
	}
	where := fmt.Sprintf("%s pod %s", componentTitle(pod.Labels[cluster.LabelComponent]), pod.Name)
	for _, cond := range pod.Status.Conditions {
		if cond.Type == corev1.PodScheduled && cond.Status == corev1.ConditionFalse && cond.Reason == corev1.PodReasonUnschedulable {
			return &podFailure{reason: reasons.ReasonUnschedulable, message: fmt.Sprintf("[%s] cannot be scheduled: %s", where, oneLine(cond.Message, 300))}
		}
	}
	for _, list := range [][]corev1.ContainerStatus{pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses} {
		for i := range list {
			if f := classifyContainer(&list[i], where, now, line); f != nil {
				return f
			}
		}
	}
	return nil
}

func classifyContainer(cs *corev1.ContainerStatus, where string, now time.Time,
	line func(cs *corev1.ContainerStatus, t *corev1.ContainerStateTerminated, previous bool) string) *podFailure {
	where = fmt.Sprintf("[%s, container %s]", where, cs.Name)
	// The failed run: the current state when the container just ended,
	// else the last one when it was restarted.
	var last *corev1.ContainerStateTerminated
	previous := false
	if t := cs.State.Terminated; t != nil && failedRun(t) {
		last = t
	} else if t := cs.LastTerminationState.Terminated; t != nil && failedRun(t) && cs.RestartCount > 0 {
		last, previous = t, true
	}
	crash := func(recheck time.Duration) *podFailure {
		reason := reasons.ReasonCrashLoopBackOff
		if last.Reason == reasons.ReasonOOMKilled {
			reason = reasons.ReasonOOMKilled
		}
		msg := fmt.Sprintf("%s %s: exit code %d", where, reason, last.ExitCode)
		if last.Reason != "" && last.Reason != reason {
			msg += " (" + last.Reason + ")"
		}
		if l := line(cs, last, previous); l != "" {
			msg += ": " + l
		}
		return &podFailure{reason: reason, message: msg, jmError: true, recheck: recheck}
	}
	if w := cs.State.Waiting; w != nil {
		if t := cs.LastTerminationState.Terminated; last == nil && t != nil && w.Reason == reasons.ReasonCrashLoopBackOff {
			last, previous = t, true // a loop of clean exits: still what the last run did
		}
		switch {
		case w.Reason == reasons.ReasonCrashLoopBackOff && last != nil:
			return crash(0)
		case w.Reason == reasons.ReasonCrashLoopBackOff:
			return &podFailure{reason: reasons.ReasonCrashLoopBackOff, message: where + " " + reasons.ReasonCrashLoopBackOff, jmError: true}
		case w.Reason == "ErrImagePull" || w.Reason == reasons.ReasonImagePull:
			// The two alternate while the kubelet retries: one failure.
			return &podFailure{reason: reasons.ReasonImagePull, message: fmt.Sprintf("%s %s: image %q cannot be pulled", where, reasons.ReasonImagePull, cs.Image), jmError: true}
		case slices.Contains(jmErrorReasons, w.Reason):
			return &podFailure{reason: w.Reason, message: fmt.Sprintf("%s %s: %s", where, w.Reason, oneLine(w.Message, 300)), jmError: true}
		case slices.Contains(otherWaitingErrors, w.Reason):
			return &podFailure{reason: w.Reason, message: fmt.Sprintf("%s %s: %s", where, w.Reason, oneLine(w.Message, 300))}
		}
		return nil
	}
	if last == nil {
		return nil
	}
	if cs.State.Terminated != nil {
		return crash(0) // just ended; the kubelet restarts it or gives up
	}
	// Running again after a failed run: still failing until it has been
	// ready for a while.
	if !cs.Ready {
		return crash(0)
	}
	if age := now.Sub(last.FinishedAt.Time); age < restartWindow {
		return crash(restartWindow - age)
	}
	return nil
}

func failedRun(t *corev1.ContainerStateTerminated) bool {
	return t.ExitCode != 0 || t.Reason == reasons.ReasonOOMKilled
}

func componentTitle(c string) string {
	switch c {
	case cluster.ComponentJobManager:
		return "JobManager"
	case cluster.ComponentTaskManager:
		return "TaskManager"
	}
	return "Flink"
}

// podFailures are the failing pods of one Flink cluster, the first of each
// component (by pod name, so the message stays the same while the pods do).
type podFailures struct {
	jobManager, taskManager *podFailure
}

// podFailuresOf classifies the pods of dep's cluster.
func (c *Controller) podFailuresOf(ctx context.Context, sc *syncState) (podFailures, error) {
	var out podFailures
	pods, err := c.owned.podsOf(sc.Obj())
	if err != nil || len(pods) == 0 {
		return out, err
	}
	slices.SortFunc(pods, func(a, b *corev1.Pod) int { return strings.Compare(a.Name, b.Name) })
	for _, pod := range pods {
		var slot **podFailure
		switch pod.Labels[cluster.LabelComponent] {
		case cluster.ComponentJobManager:
			slot = &out.jobManager
		case cluster.ComponentTaskManager:
			slot = &out.taskManager
		default:
			continue
		}
		if *slot != nil {
			continue
		}
		*slot = classifyPod(pod, sc.Now(), func(cs *corev1.ContainerStatus, t *corev1.ContainerStateTerminated, previous bool) string {
			return c.failureLine(ctx, sc, pod, cs, t, previous)
		})
	}
	return out, nil
}

// failureLine is the line that explains a failed run: from its termination
// message when the container wrote one (or the kubelet filled it from the
// log, terminationMessagePolicy FallbackToLogsOnError), else from the tail
// of its log, read once per run (a run's log does not change after it
// ended).
func (c *Controller) failureLine(ctx context.Context, sc *syncState, pod *corev1.Pod, cs *corev1.ContainerStatus, t *corev1.ContainerStateTerminated, previous bool) string {
	if msg := strings.TrimSpace(t.Message); msg != "" {
		if l := exceptionLine(msg); l != "" {
			return l
		}
		return oneLine(lastLine(msg), maxLineLen)
	}
	// The run, whether it is the current state (just ended) or the last.
	key := fmt.Sprintf("%s/%s/%s/%d", pod.UID, cs.Name, t.ContainerID, t.FinishedAt.UnixNano())
	if l, ok := c.runLines.get(key); ok {
		return l
	}
	logs, err := c.podLogs(ctx, pod.Namespace, pod.Name, cs.Name, previous)
	if err != nil {
		sc.Log().V(2).Info("Cannot read the log of a failed container", "pod", pod.Name, "container", cs.Name, "err", err)
		if ctx.Err() != nil {
			return ""
		}
	}
	l := exceptionLine(logs)
	c.runLines.put(key, l)
	return l
}

// podLogTail reads the end of a container's log (previous: its last run).
func (c *Controller) podLogTail(ctx context.Context, namespace, pod, container string, previous bool) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	tail, limit := int64(300), int64(128<<10)
	// pods/log is a subresource client-go's hand-written pod client adds;
	// the operator's clientset is generated, so the request is spelled out.
	raw, err := c.Kube.CoreV1().RESTClient().Get().Namespace(namespace).Resource("pods").Name(pod).SubResource("log").
		VersionedParams(&corev1.PodLogOptions{
			Container: container, Previous: previous, TailLines: &tail, LimitBytes: &limit,
		}, kubescheme.ParameterCodec).DoRaw(ctx)
	return string(raw), err
}

// runLines remembers the explaining line of failed runs, by pod UID,
// container and run.
type lineCache struct {
	mu sync.Mutex
	m  map[string]string
}

func (c *lineCache) get(key string) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	l, ok := c.m[key]
	return l, ok
}

func (c *lineCache) put(key, line string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= 4096 {
		c.m = map[string]string{} // bounded: forgetting means reading a log again
	}
	c.m[key] = line
}

const maxLineLen = 400

// exceptionRE matches a Java exception line: "a.b.SomeException: message",
// optionally after "Caused by: ".
var exceptionRE = regexp.MustCompile(`^(Caused by: )?((?:[A-Za-z_$][\w$]*\.)+[A-Z][\w$]*(?:Exception|Error|Throwable))(?::\s*(.*))?$`)

// exceptionLine finds the Flink exception in a log or termination message:
// the last stack trace's first line, and its root cause when that is
// another line ("X: msg; caused by Y: msg"), each trimmed. "" when there is
// none.
func exceptionLine(text string) string {
	var top, root string
	for _, raw := range strings.Split(text, "\n") {
		m := exceptionRE.FindStringSubmatch(strings.TrimSpace(raw))
		switch {
		case m == nil:
		case m[1] == "":
			top, root = m[0], ""
		case top != "":
			root = strings.TrimPrefix(m[0], "Caused by: ")
		}
	}
	if top == "" {
		return ""
	}
	out := oneLine(top, maxLineLen)
	if root != "" && root != top {
		out += "; caused by " + oneLine(root, maxLineLen)
	}
	return out
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// oneLine flattens s to one trimmed line of at most n bytes.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > n {
		s = s[:n-3] + "..."
	}
	return s
}

// enqueuePod wakes the FlinkDeployment of a Flink cluster pod (its app
// label: pkg/cluster labels every pod app=<name>).
func (c *Controller) enqueuePod(obj any) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	pod, ok := obj.(*corev1.Pod)
	if !ok || !slices.Contains(flinkPodTypes, pod.Labels[cluster.LabelType]) || pod.Labels[cluster.LabelApp] == "" {
		return
	}
	c.queue.Add(pod.Namespace + "/" + pod.Labels[cluster.LabelApp])
}

// podHandler enqueues on pod changes that can change what observe reads
// from pods or Deployments (not on every status heartbeat).
func (c *Controller) podHandler() cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{
		AddFunc: c.enqueuePod,
		UpdateFunc: func(oldObj, newObj any) {
			o, ok1 := oldObj.(*corev1.Pod)
			n, ok2 := newObj.(*corev1.Pod)
			if !ok1 || !ok2 || podSignature(o) != podSignature(n) {
				c.enqueuePod(newObj)
			}
		},
		DeleteFunc: c.enqueuePod,
	}
}

// podSignature sums up what classifyPod and readiness depend on.
func podSignature(p *corev1.Pod) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s|%t|", p.Status.Phase, p.DeletionTimestamp != nil)
	for _, c := range p.Status.Conditions {
		fmt.Fprintf(&b, "%s=%s/%s|", c.Type, c.Status, c.Reason)
	}
	for _, list := range [][]corev1.ContainerStatus{p.Status.InitContainerStatuses, p.Status.ContainerStatuses} {
		for _, cs := range list {
			fmt.Fprintf(&b, "%s:%t:%d:", cs.Name, cs.Ready, cs.RestartCount)
			switch s := cs.State; {
			case s.Waiting != nil:
				b.WriteString("w/" + s.Waiting.Reason)
			case s.Running != nil:
				b.WriteString("r")
			case s.Terminated != nil:
				fmt.Fprintf(&b, "t/%s/%d", s.Terminated.Reason, s.Terminated.ExitCode)
			}
			b.WriteString("|")
		}
	}
	return b.String()
}

// flinkPodTypes are the values of the type label on the pods of a Flink
// cluster: standalone (pkg/cluster) and native (Flink's own
// Constants.LABEL_TYPE_NATIVE_TYPE, on the TaskManager pods Flink creates).
var flinkPodTypes = []string{cluster.TypeStandalone, cluster.TypeNative}

// podsOf lists the pods of dep's cluster from the informer.
func (c *ownedCache) podsOf(dep *v1beta1.FlinkDeployment) ([]*corev1.Pod, error) {
	inf := c.forNamespace(dep.Namespace)
	if inf == nil || inf.podInformer == nil {
		return nil, nil
	}
	all, err := endpoints.ClusterPods(inf.podInformer.GetIndexer(), dep.Namespace, dep.Name, nil)
	return slices.DeleteFunc(all, func(p *corev1.Pod) bool { return !slices.Contains(flinkPodTypes, p.Labels[cluster.LabelType]) }), err
}
