package upstreame2e

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	flinkclient "github.com/flinkops/flink-operator/pkg/generated/clientset/versioned"
)

// statusTrail records, for the failure report, every change of the status
// fields the scripts wait on (lifecycleState, jobManagerDeploymentStatus,
// jobStatus.state and jobId, the first line of error) of every
// FlinkDeployment and FlinkSessionJob, and every FlinkStateSnapshot's state
// and path, polled every 200 ms: the scripts see only the last value of a
// field that never reached the expected one.
type statusTrail struct {
	quit, done chan struct{}
	once       sync.Once
}

func recordStatusTrail(ctx context.Context, client flinkclient.Interface, path string) *statusTrail {
	st := &statusTrail{quit: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(st.done)
		f, err := os.Create(path)
		if err != nil {
			return
		}
		defer f.Close()
		last := map[string]string{}
		for {
			now := snapshotStatus(ctx, client)
			for k, v := range now {
				if last[k] != v {
					fmt.Fprintf(f, "%s %s %s\n", time.Now().Format("15:04:05.000"), k, v)
					last[k] = v
				}
			}
			for k := range last {
				if _, ok := now[k]; !ok {
					fmt.Fprintf(f, "%s %s gone\n", time.Now().Format("15:04:05.000"), k)
					delete(last, k)
				}
			}
			select {
			case <-st.quit:
				return
			case <-ctx.Done():
				return
			case <-time.After(200 * time.Millisecond):
			}
		}
	}()
	return st
}

func (st *statusTrail) stop() {
	st.once.Do(func() { close(st.quit) })
	<-st.done
}

// snapshotStatus renders the watched fields of every resource, by
// kind/namespace/name.
func snapshotStatus(ctx context.Context, client flinkclient.Interface) map[string]string {
	out := map[string]string{}
	api := client.FlinkV1beta1()
	firstLine := func(s string) string {
		s, _, _ = strings.Cut(s, "\n")
		if len(s) > 300 {
			s = s[:300] + "…"
		}
		return s
	}
	if l, err := api.FlinkDeployments("").List(ctx, metav1.ListOptions{}); err == nil {
		for _, d := range l.Items {
			s := d.Status
			out["flinkdep/"+d.Namespace+"/"+d.Name] = fmt.Sprintf("lifecycle=%s jm=%s job=%s jobId=%s upgradeSavepointPath=%q error=%q",
				s.LifecycleState, s.JobManagerDeploymentStatus, s.JobStatus.State, s.JobStatus.JobID, s.JobStatus.UpgradeSavepointPath, firstLine(s.Error))
		}
	}
	if l, err := api.FlinkSessionJobs("").List(ctx, metav1.ListOptions{}); err == nil {
		for _, j := range l.Items {
			s := j.Status
			out["sessionjob/"+j.Namespace+"/"+j.Name] = fmt.Sprintf("lifecycle=%s job=%s jobId=%s upgradeSavepointPath=%q error=%q",
				s.LifecycleState, s.JobStatus.State, s.JobStatus.JobID, s.JobStatus.UpgradeSavepointPath, firstLine(s.Error))
		}
	}
	if l, err := api.FlinkStateSnapshots("").List(ctx, metav1.ListOptions{}); err == nil {
		for _, sn := range l.Items {
			out["flinksnp/"+sn.Namespace+"/"+sn.Name] = fmt.Sprintf("state=%s path=%q error=%q", sn.Status.State, sn.Status.Path, firstLine(sn.Status.Error))
		}
	}
	return out
}
