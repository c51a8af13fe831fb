package framework

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/flinkops/flink-operator/e2e/localcluster"
	"github.com/flinkops/flink-operator/pkg/cluster"
)

// PodNames renders pods for a failure message: name, phase, terminating.
func PodNames(pods []corev1.Pod) string {
	var out []string
	for _, p := range pods {
		s := p.Name + " " + string(p.Status.Phase)
		if p.DeletionTimestamp != nil {
			s += " terminating"
		}
		out = append(out, s)
	}
	return "[" + strings.Join(out, ", ") + "]"
}

// PodNamesOrErr is PodNames of a List result, or its error.
func PodNamesOrErr(l *corev1.PodList, err error) string {
	if err != nil {
		return err.Error()
	}
	return PodNames(l.Items)
}

// AgentProcesses are the live processes the node agent recorded (in the
// record file recordPath) for namespace ns: names namespace/pod/container.
func AgentProcesses(t *testing.T, recordPath, ns string) []localcluster.RecordedProcess {
	t.Helper()
	_, procs, err := localcluster.ReadRecord(recordPath)
	if err != nil {
		t.Fatal(err)
	}
	var out []localcluster.RecordedProcess
	for _, p := range procs {
		if strings.HasPrefix(p.Name, ns+"/") && p.Alive() {
			out = append(out, p)
		}
	}
	return out
}

// WaitProcessesGone waits until the JVMs recorded before (pids) are gone and
// the agent records no live process of namespace ns (the agent deletes a
// pod only after its processes ended, so little wait should be needed).
func (e *Env) WaitProcessesGone(t *testing.T, recordPath, ns string, pids []localcluster.RecordedProcess) {
	t.Helper()
	e.WaitFor(t, 15*time.Second, "the JVMs of "+ns+" stopped", func() (bool, string) {
		var alive []string
		for _, p := range pids {
			if p.Alive() {
				alive = append(alive, fmt.Sprintf("%s (pid %d)", p.Name, p.PID))
			}
		}
		for _, p := range AgentProcesses(t, recordPath, ns) {
			alive = append(alive, fmt.Sprintf("recorded %s (pid %d)", p.Name, p.PID))
		}
		return len(alive) == 0, "alive: " + strings.Join(alive, ", ")
	})
}

// ComponentPods are the names of the pods of one component (jobmanager,
// taskmanager) of cluster name in namespace ns that are not being deleted,
// sorted.
func (e *Env) ComponentPods(t testing.TB, ns, name, component string) []string {
	t.Helper()
	l, err := e.Kube.CoreV1().Pods(ns).List(e.Ctx, metav1.ListOptions{
		LabelSelector: cluster.LabelApp + "=" + name + "," + cluster.LabelComponent + "=" + component,
	})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, p := range l.Items {
		if p.DeletionTimestamp == nil {
			out = append(out, p.Name)
		}
	}
	slices.Sort(out)
	return out
}
