package framework

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilnet "k8s.io/apimachinery/pkg/util/net"

	"github.com/flinkops/flink-operator/pkg/cluster"
)

// Flink is the REST API of one FlinkDeployment's JobManager, as a test
// reads it: through the Ready JobManager pod's IP on the local provider
// (as the operator does with --flink-endpoint=pod-ip), through the API
// server's service proxy to <name>-rest on kind.
type Flink struct {
	e          *Env
	ns, name   string
	podURL     string // local provider
	restPort   int
	httpClient *http.Client
}

// FlinkREST waits for the one Ready JobManager of FlinkDeployment name
// (standalone or native) and returns its REST API.
func (e *Env) FlinkREST(t *testing.T, ns, name string) *Flink {
	t.Helper()
	f := &Flink{e: e, ns: ns, name: name, restPort: 8081, httpClient: &http.Client{Timeout: 5 * time.Second}}
	if Kind() {
		return f
	}
	e.WaitFor(t, 2*time.Minute, "a Ready JobManager pod of "+ns+"/"+name, func() (bool, string) {
		// app and component only: standalone and native JobManagers
		// differ in their type label.
		sel := cluster.LabelApp + "=" + name + "," + cluster.LabelComponent + "=" + cluster.ComponentJobManager
		l, err := e.Kube.CoreV1().Pods(ns).List(e.Ctx, metav1.ListOptions{LabelSelector: sel})
		if err != nil {
			return false, err.Error()
		}
		var urls []string
		for _, p := range l.Items {
			if p.DeletionTimestamp == nil && PodReady(&p) && p.Status.PodIP != "" {
				urls = append(urls, "http://"+p.Status.PodIP+":"+strconv.Itoa(f.restPort))
			}
		}
		if len(urls) != 1 {
			return false, fmt.Sprintf("%d Ready JobManager pods", len(urls))
		}
		f.podURL = urls[0]
		return true, ""
	})
	return f
}

// URL is where the REST API is reached (for logs).
func (f *Flink) URL() string {
	if f.podURL != "" {
		return f.podURL
	}
	return fmt.Sprintf("service %s/%s-rest via the API server proxy", f.ns, f.name)
}

// Get decodes GET <path> into into.
func (f *Flink) Get(ctx context.Context, path string, into any) error {
	if f.podURL == "" {
		raw, err := f.e.Kube.CoreV1().Services(f.ns).ProxyGet("http", f.name+"-rest", strconv.Itoa(f.restPort), path, nil).DoRaw(ctx)
		if err != nil {
			return fmt.Errorf("GET %s via the service proxy: %w", path, err)
		}
		return json.Unmarshal(raw, into)
	}
	resp, err := f.podDo(ctx, http.MethodGet, path, http.StatusOK)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	return json.NewDecoder(resp.Body).Decode(into)
}

// podDo sends a request without a body to the JobManager pod (local
// provider); a response with another status than want is an error.
func (f *Flink) podDo(ctx context.Context, method, pathQuery string, want int) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, f.podURL+pathQuery, nil)
	if err != nil {
		return nil, err
	}
	resp, err := f.httpClient.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != want {
		resp.Body.Close()
		return nil, fmt.Errorf("%s %s: %s", method, f.podURL+pathQuery, resp.Status)
	}
	return resp, nil
}

// JobDetails is what the scenarios read of GET /jobs/{id}.
type JobDetails struct {
	State    string `json:"state"`
	Vertices []struct {
		Name        string `json:"name"`
		Status      string `json:"status"`
		Parallelism int    `json:"parallelism"`
	} `json:"vertices"`
}

// MaxParallelism is the job's highest vertex parallelism (the test job's
// source always has 1).
func (j JobDetails) MaxParallelism() int {
	p := 0
	for _, v := range j.Vertices {
		p = max(p, v.Parallelism)
	}
	return p
}

// WaitJobRunning waits until Flink reports the job RUNNING with every task
// running.
func (f *Flink) WaitJobRunning(t *testing.T, jobID string) JobDetails {
	t.Helper()
	var job JobDetails
	f.e.WaitFor(t, 2*time.Minute, "Flink job "+jobID+" RUNNING with all tasks running", func() (bool, string) {
		if err := f.Get(f.e.Ctx, "/jobs/"+jobID, &job); err != nil {
			return false, err.Error()
		}
		seen := fmt.Sprintf("job %s, vertices %+v", job.State, job.Vertices)
		if job.State != "RUNNING" || len(job.Vertices) == 0 {
			return false, seen
		}
		for _, v := range job.Vertices {
			if v.Status != "RUNNING" {
				return false, seen
			}
		}
		return true, ""
	})
	return job
}

// JobState is Flink's state of the job ("" and an error when unknown).
func (f *Flink) JobState(jobID string) (string, error) {
	var job JobDetails
	if err := f.Get(f.e.Ctx, "/jobs/"+jobID, &job); err != nil {
		return "", err
	}
	return job.State, nil
}

// Restored is Flink's record of where a job restored from.
type Restored struct {
	IsSavepoint  bool   `json:"is_savepoint"`
	ExternalPath string `json:"external_path"`
}

// WaitRestored waits for the job's checkpoint statistics to name what it
// restored from.
func (f *Flink) WaitRestored(t *testing.T, jobID string) Restored {
	t.Helper()
	var got *Restored
	f.e.WaitFor(t, 30*time.Second, "latest.restored of job "+jobID, func() (bool, string) {
		var cps struct {
			Latest struct {
				Restored *Restored `json:"restored"`
			} `json:"latest"`
		}
		if err := f.Get(f.e.Ctx, "/jobs/"+jobID+"/checkpoints", &cps); err != nil {
			return false, err.Error()
		}
		got = cps.Latest.Restored
		return got != nil, "no latest.restored"
	})
	return *got
}

// Accumulators are the test job's user accumulators (see e2e/flink).
type Accumulators struct {
	Records, MaxCount, Mismatches int64
}

// WaitAccumulators waits until the test job's accumulators satisfy ok.
func (f *Flink) WaitAccumulators(t *testing.T, jobID, what string, ok func(Accumulators) bool) Accumulators {
	t.Helper()
	var a Accumulators
	f.e.WaitFor(t, 2*time.Minute, "accumulators of job "+jobID+": "+what, func() (bool, string) {
		var resp struct {
			User []struct {
				Name  string `json:"name"`
				Value string `json:"value"`
			} `json:"user-task-accumulators"`
		}
		if err := f.Get(f.e.Ctx, "/jobs/"+jobID+"/accumulators", &resp); err != nil {
			return false, err.Error()
		}
		seen := 0
		for _, u := range resp.User {
			n, err := strconv.ParseInt(u.Value, 10, 64)
			if err != nil {
				continue
			}
			switch u.Name {
			case "records":
				a.Records, seen = n, seen+1
			case "max-count":
				a.MaxCount, seen = n, seen+1
			case "mismatches":
				a.Mismatches, seen = n, seen+1
			}
		}
		return seen == 3 && ok(a), fmt.Sprintf("%+v", resp.User)
	})
	return a
}

// PodReady reports the pod's Ready condition.
func PodReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// LocalPath turns a file: URI (file:/a, file:///a) or a path into a clean
// path.
func LocalPath(t *testing.T, s string) string {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	if u.Scheme != "" && u.Scheme != "file" {
		t.Fatalf("%s is not a local path", s)
	}
	return filepath.Clean(u.Path)
}

// SameLocation compares two snapshot locations as paths.
func SameLocation(t *testing.T, a, b string) bool {
	return LocalPath(t, a) == LocalPath(t, b)
}

// Cancel asks Flink to cancel the job: PATCH /jobs/{id}?mode=cancel, which
// Flink accepts with 202 and carries out asynchronously.
func (f *Flink) Cancel(ctx context.Context, jobID string) error {
	path := "/jobs/" + jobID
	if f.podURL == "" {
		_, err := f.e.Kube.CoreV1().RESTClient().Verb(http.MethodPatch).Namespace(f.ns).Resource("services").SubResource("proxy").
			Name(utilnet.JoinSchemeNamePort("http", f.name+"-rest", strconv.Itoa(f.restPort))).Suffix(path).Param("mode", "cancel").DoRaw(ctx)
		if err != nil {
			return fmt.Errorf("PATCH %s?mode=cancel via the service proxy: %w", path, err)
		}
		return nil
	}
	resp, err := f.podDo(ctx, http.MethodPatch, path+"?mode=cancel", http.StatusAccepted)
	if err != nil {
		return err
	}
	return resp.Body.Close()
}
