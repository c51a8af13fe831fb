package localcluster

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// TestHelperCluster is not a test: TestStartAfterKilledRun runs it in a child
// process, which starts a cluster, reports its state file and waits to be
// killed. The cluster's processes do not get a parent-death signal, so only
// the state file can find them afterwards.
func TestHelperCluster(t *testing.T) {
	stateDir := os.Getenv("LOCALCLUSTER_HELPER_STATE_DIR")
	if stateDir == "" {
		t.Skip("helper for TestStartAfterKilledRun")
	}
	c, err := Start(context.Background(), Options{StateDir: stateDir, NoParentDeathSignal: true, Out: os.Stderr})
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("STATE %s\n", c.StatePath)
	time.Sleep(10 * time.Minute)
}

// TestStartAfterKilledRun kills (-9) a process that runs a cluster and checks
// that the next Start stops the processes it left, then checks the new cluster.
func TestStartAfterKilledRun(t *testing.T) {
	stateDir := t.TempDir()
	child := exec.Command(os.Args[0], "-test.run=^TestHelperCluster$", "-test.timeout=15m")
	child.Env = append(os.Environ(), "LOCALCLUSTER_HELPER_STATE_DIR="+stateDir)
	child.Stderr = testWriter{t}
	stdout, err := child.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { child.Process.Kill(); child.Wait() })
	var statePath string
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		if p, ok := strings.CutPrefix(sc.Text(), "STATE "); ok {
			statePath = p
			break
		}
	}
	if statePath == "" {
		t.Fatal("helper exited without starting a cluster")
	}
	old, err := readState(statePath)
	if err != nil {
		t.Fatal(err)
	}
	if len(old.Processes) != 3 {
		t.Fatalf("helper recorded %d processes, want 3", len(old.Processes))
	}
	if err := child.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	child.Wait()
	time.Sleep(200 * time.Millisecond)
	alive, err := alivePIDs(statePath)
	if err != nil {
		t.Fatal(err)
	}
	if len(alive) != 3 {
		t.Fatalf("after kill -9 of the owner, alive %v, want all 3 still running (else this test proves nothing)", alive)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := Start(ctx, Options{StateDir: stateDir, Out: testWriter{t}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	for _, p := range old.Processes {
		if p.isSame() {
			t.Errorf("stale %s (pid %d) still running after Start", p.Name, p.PID)
		}
	}
	if _, err := os.Stat(statePath); !os.IsNotExist(err) {
		t.Errorf("stale state file %s not removed: %v", statePath, err)
	}
	if _, err := os.Stat(old.Dir); !os.IsNotExist(err) {
		t.Errorf("stale work dir %s not removed: %v", old.Dir, err)
	}

	checkCluster(t, c)

	procs := c.Processes()
	if err := c.Stop(); err != nil {
		t.Fatal(err)
	}
	for _, p := range procs {
		if p.info.isSame() {
			t.Errorf("%s (pid %d) alive after Stop", p.Name, p.PID())
		}
	}
	if _, err := os.Stat(c.StatePath); !os.IsNotExist(err) {
		t.Errorf("state file %s left after Stop", c.StatePath)
	}
	if _, err := os.Stat(c.Dir); !os.IsNotExist(err) {
		t.Errorf("work dir %s left after Stop", c.Dir)
	}
}

func checkCluster(t *testing.T, c *Cluster) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := c.Kubectl("version", "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"gitVersion": "v1.37.2"`} {
		if strings.Count(out, want) != 2 {
			t.Errorf("kubectl version: want client and server %s, got\n%s", want, out)
		}
	}

	// The operator user has no rights until it is granted some.
	canList := func() bool {
		op, err := kubernetes.NewForConfig(c.OperatorRESTConfig())
		if err != nil {
			t.Fatal(err)
		}
		r, err := op.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{
			Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{
				Verb: "list", Resource: "pods", Namespace: "default"}},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return r.Status.Allowed
	}
	if canList() {
		t.Errorf("%s may list pods without any binding", OperatorUser)
	}
	if err := c.GrantClusterAdmin(ctx, OperatorUser); err != nil {
		t.Fatal(err)
	}
	if !canList() {
		t.Errorf("%s may not list pods after GrantClusterAdmin", OperatorUser)
	}
	if out, err := c.Kubectl("--kubeconfig", c.OperatorKubeconfig, "auth", "whoami", "-o", "jsonpath={.status.userInfo.username}"); err != nil || out != OperatorUser {
		t.Errorf("operator kubeconfig: whoami = %q, %v", out, err)
	}

	// kube-controller-manager works: the default ServiceAccount appears and
	// a Deployment gets a ReplicaSet and a Pod.
	admin := kubernetes.NewForConfigOrDie(c.RESTConfig())
	waitFor(ctx, t, "default ServiceAccount", func() bool {
		_, err := admin.CoreV1().ServiceAccounts("default").Get(ctx, "default", metav1.GetOptions{})
		return err == nil
	})
	manifest := `apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: web, image: nginx}]}
`
	if _, err := c.KubectlInput(strings.NewReader(manifest), "apply", "-f", "-"); err != nil {
		t.Fatal(err)
	}
	waitFor(ctx, t, "a Pod of Deployment web", func() bool {
		pods, err := admin.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
		return err == nil && len(pods.Items) == 1
	})
}

func waitFor(ctx context.Context, t *testing.T, what string, cond func() bool) {
	t.Helper()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("timed out waiting for %s", what)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// TestStopStaleSparesOthers checks that StopStale never signals a process
// whose pid was reused (other start time or command line), nor the processes
// of a live owner.
func TestStopStaleSparesOthers(t *testing.T) {
	stateDir := t.TempDir()
	sleeper := exec.Command("sleep", "300")
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { sleeper.Process.Kill(); sleeper.Wait() }()
	pid := sleeper.Process.Pid
	_, start, _, err := procStat(pid)
	if err != nil {
		t.Fatal(err)
	}
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	deadOwner := dead.Process.Pid

	records := map[string]runState{
		"other-start-time": {OwnerPID: deadOwner, Processes: []procInfo{{Name: "etcd", PID: pid, StartTime: start + 1, Cmdline: []string{"sleep", "300"}}}},
		"other-cmdline":    {OwnerPID: deadOwner, Processes: []procInfo{{Name: "etcd", PID: pid, StartTime: start, Cmdline: []string{"etcd", "--name=x"}}}},
		"live-owner":       {OwnerPID: os.Getpid(), OwnerStartTime: selfStartTime(), Processes: []procInfo{{Name: "etcd", PID: pid, StartTime: start, Cmdline: []string{"sleep", "300"}}}},
	}
	for name, st := range records {
		if err := writeState(filepath.Join(stateDir, name+".json"), st); err != nil {
			t.Fatal(err)
		}
	}
	n, err := StopStale(stateDir, testWriter{t})
	if err != nil || n != 0 {
		t.Fatalf("StopStale = %d, %v; want 0, nil", n, err)
	}
	if !running(pid, start) {
		t.Fatal("StopStale killed an unrelated process")
	}
	for _, name := range []string{"other-start-time", "other-cmdline"} {
		if _, err := os.Stat(filepath.Join(stateDir, name+".json")); !os.IsNotExist(err) {
			t.Errorf("record %s of a dead owner not removed", name)
		}
	}
	if _, err := os.Stat(filepath.Join(stateDir, "live-owner.json")); err != nil {
		t.Errorf("record of a live owner removed: %v", err)
	}

	// The same record with a dead owner and matching identity is stopped.
	st := records["live-owner"]
	st.OwnerPID, st.OwnerStartTime = deadOwner, 0
	if err := writeState(filepath.Join(stateDir, "live-owner.json"), st); err != nil {
		t.Fatal(err)
	}
	if n, err := StopStale(stateDir, testWriter{t}); err != nil || n != 1 {
		t.Fatalf("StopStale = %d, %v; want 1, nil", n, err)
	}
	sleeper.Wait()
	if running(pid, start) {
		t.Fatal("stale process still running")
	}
}
