package nodeagent_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	flinkjvm "github.com/flinkops/flink-operator/e2e/flink"
	"github.com/flinkops/flink-operator/e2e/localcluster"
	v1beta1 "github.com/flinkops/flink-operator/pkg/apis/flink/v1beta1"
	"github.com/flinkops/flink-operator/pkg/cluster"
	"github.com/flinkops/flink-operator/pkg/config"
)

// TestFlinkFilesAtMountPaths runs a real Flink application (newest pinned
// version, pods from pkg/cluster) whose pods mount a hostPath that does not
// exist on the machine at /flink-data, and asks Flink over REST for a
// savepoint into file:///flink-data/savepoints, a path that reaches Flink
// only at run time (not through its configuration or arguments, which the
// agent maps): the savepoint lands in the hostPath, kept in the agent's
// directory, and neither /flink-data nor the hostPath appears on the
// machine. The JobManager JVM also has the API server's variables and its
// service-account token at the kubelet's path.
func TestFlinkFilesAtMountPaths(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mount namespaces need root")
	}
	begin := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	versions := flinkjvm.Versions()
	version := versions[len(versions)-1]
	if _, err := flinkjvm.Ensure(ctx, version); err != nil { // Maven, before the clock starts
		t.Fatal(err)
	}
	_, flinkDataErr := os.Lstat("/flink-data")
	c, err := localcluster.Start(ctx, localcluster.Options{NodeAgent: true, Out: testWriter{t}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	client := kubernetes.NewForConfigOrDie(c.RESTConfig())
	waitFor(t, ctx, time.Minute, "the default ServiceAccount", func() bool {
		_, err := client.CoreV1().ServiceAccounts("default").Get(ctx, "default", metav1.GetOptions{})
		return err == nil
	})

	top := "/nodeagent-flink-" + strconv.Itoa(os.Getpid()) // on no machine
	mm := strings.Join(strings.Split(version, ".")[:2], ".")
	fd := &v1beta1.FlinkDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: "files", Namespace: "default", UID: types.UID("not-in-the-api")},
		Spec: v1beta1.FlinkDeploymentSpec{
			Image:        "flink:" + mm,
			FlinkVersion: v1beta1.FlinkVersion("v" + strings.ReplaceAll(mm, ".", "_")),
			Mode:         v1beta1.DeploymentModeStandalone,
			FlinkConfiguration: flinkConf(map[string]any{
				"jobmanager.memory.process.size":  "768m",
				"taskmanager.memory.process.size": "1024m",
				"taskmanager.memory.managed.size": "64m",
				"taskmanager.numberOfTaskSlots":   "1",
				"state.backend.type":              "hashmap",
			}),
			PodTemplate: &corev1.Pod{Spec: corev1.PodSpec{
				Containers: []corev1.Container{{Name: "flink-main-container", VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/flink-data"}}}},
				Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{
					Path: top, Type: ptr.To(corev1.HostPathDirectoryOrCreate)}}}},
			}},
			Job: &v1beta1.JobSpec{
				JarURI:      "local:///opt/flink/usrlib/testjob.jar",
				EntryClass:  flinkjvm.TestJobClass,
				Args:        []string{"--rate", "10", "--keys", "10"},
				Parallelism: ptr.To[int32](1),
				UpgradeMode: v1beta1.UpgradeModeSavepoint,
			},
		},
	}
	const jobID = "f11e5a7f11e5a7f11e5a7f11e5a7f11e"
	objs, err := cluster.Build(cluster.Input{Deployment: fd, Spec: fd.Spec, OperatorConfig: config.Defaults(), JobID: jobID})
	if err != nil {
		t.Fatal(err)
	}
	createCluster(t, ctx, client, objs)
	var jm []corev1.Pod
	waitFor(t, ctx, 3*time.Minute, "a ready JobManager", func() bool {
		jm = readyPods(t, ctx, client, cluster.JobManagerSelector(cluster.Standalone, fd.Name))
		return len(jm) == 1
	})
	rest := "http://" + jm[0].Status.PodIP + ":8081"
	waitFor(t, ctx, 3*time.Minute, "job RUNNING", func() bool {
		return jobRunning(ctx, rest, jobID)
	})
	t.Logf("Flink %s job RUNNING %s after the start", version, time.Since(begin).Round(time.Millisecond))

	// The JobManager JVM, as a process of the machine.
	var jmPID int
	for _, p := range recordedPIDs(t, c, "default/"+jm[0].Name+"/") {
		jmPID = p.PID
	}
	environ, err := os.ReadFile("/proc/" + strconv.Itoa(jmPID) + "/environ")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(environ), "\x00KUBERNETES_SERVICE_HOST=127.0.0.1\x00") {
		t.Errorf("JobManager JVM (pid %d) has no KUBERNETES_SERVICE_HOST=127.0.0.1", jmPID)
	}
	// Its own root (/proc/<pid>/root is its mount namespace's view; an
	// absolute symlink on the way, such as /var/run -> /run, would lead
	// back to this process's root, so it is resolved here).
	saDir := "/var/run/secrets/kubernetes.io/serviceaccount"
	if link, err := os.Readlink("/var/run"); err == nil && strings.HasPrefix(link, "/") {
		saDir = link + "/secrets/kubernetes.io/serviceaccount"
	}
	if tok, err := os.ReadFile("/proc/" + strconv.Itoa(jmPID) + "/root" + saDir + "/token"); err != nil || len(tok) < 100 {
		t.Errorf("JobManager's service-account token: %d bytes, %v", len(tok), err)
	}

	body, _ := json.Marshal(map[string]any{"cancel-job": false, "target-directory": "file:///flink-data/savepoints"})
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, rest+"/jobs/"+jobID+"/savepoints", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	resp, err := httpClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var trig struct {
		RequestID string `json:"request-id"`
	}
	if resp.StatusCode != http.StatusAccepted || json.Unmarshal(data, &trig) != nil || trig.RequestID == "" {
		t.Fatalf("trigger savepoint: HTTP %d: %s", resp.StatusCode, data)
	}
	var location string
	waitFor(t, ctx, 2*time.Minute, "savepoint "+trig.RequestID, func() bool {
		var st struct {
			Status struct {
				ID string `json:"id"`
			} `json:"status"`
			Operation struct {
				Location     string          `json:"location"`
				FailureCause json.RawMessage `json:"failure-cause"`
			} `json:"operation"`
		}
		if !tryGetJSON(ctx, rest+"/jobs/"+jobID+"/savepoints/"+trig.RequestID, &st) || st.Status.ID != "COMPLETED" {
			return false
		}
		if st.Operation.Location == "" {
			t.Fatalf("savepoint failed: %s", st.Operation.FailureCause)
		}
		location = st.Operation.Location
		return true
	})
	name, ok := strings.CutPrefix(location, "file:/flink-data/savepoints/")
	if !ok {
		t.Fatalf("savepoint at %s, want file:/flink-data/savepoints/...", location)
	}
	if _, err := os.Stat(filepath.Join(c.NodeAgentDir, "hostpath", top, "savepoints", name, "_metadata")); err != nil {
		t.Errorf("savepoint not in the hostPath (kept in the agent's directory): %v", err)
	}
	if _, err := os.Lstat(top); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s exists on the machine (%v)", top, err)
		os.RemoveAll(top)
	}
	if errors.Is(flinkDataErr, os.ErrNotExist) {
		if _, err := os.Lstat("/flink-data"); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("/flink-data exists on the machine after the savepoint (%v)", err)
		}
	}
	t.Logf("savepoint %s in the hostPath; %s in all", location, time.Since(begin).Round(time.Millisecond))
}

func tryGetJSON(ctx context.Context, url string, v any) bool {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	resp, err := httpClient.Do(req)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	return resp.StatusCode == http.StatusOK && json.NewDecoder(resp.Body).Decode(v) == nil
}

func flinkConf(values map[string]any) *v1beta1.Configuration {
	raw, err := json.Marshal(values)
	if err != nil {
		panic(err)
	}
	return &v1beta1.Configuration{Raw: raw}
}

// jobRunning reports whether Flink's REST API at rest shows job jobID and
// every one of its vertices RUNNING.
func jobRunning(ctx context.Context, rest, jobID string) bool {
	var job struct {
		State    string `json:"state"`
		Vertices []struct {
			Status string `json:"status"`
		} `json:"vertices"`
	}
	if !tryGetJSON(ctx, rest+"/jobs/"+jobID, &job) || job.State != "RUNNING" || len(job.Vertices) == 0 {
		return false
	}
	for _, v := range job.Vertices {
		if v.Status != "RUNNING" {
			return false
		}
	}
	return true
}
