package nodeagent_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/flinkops/flink-operator/e2e/localcluster"
)

// TestHelperKilledCluster is not a test: TestKilledOwner runs it in a child
// process, which starts a cluster with the node agent, runs fake JobManager
// pods, reports its record files and waits to be killed.
func TestHelperKilledCluster(t *testing.T) {
	stateDir := os.Getenv("NODEAGENT_HELPER_STATE_DIR")
	if stateDir == "" {
		t.Skip("helper for TestKilledOwner")
	}
	ctx := context.Background()
	c, err := localcluster.Start(ctx, localcluster.Options{
		StateDir:            stateDir,
		NodeAgent:           true,
		NoParentDeathSignal: os.Getenv("NODEAGENT_HELPER_NO_PDEATHSIG") != "",
		Out:                 os.Stderr,
	})
	if err != nil {
		t.Fatal(err)
	}
	client := kubernetes.NewForConfigOrDie(c.RESTConfig())
	waitFor(t, ctx, time.Minute, "the default ServiceAccount", func() bool {
		_, err := client.CoreV1().ServiceAccounts("default").Get(ctx, "default", metav1.GetOptions{})
		return err == nil
	})
	for i := range 3 {
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("fake-%d", i), Labels: map[string]string{"app": "fake"}},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "jm", Image: fakeImage}}},
		}
		if _, err := client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, ctx, time.Minute, "3 ready pods", func() bool { return len(readyPods(t, ctx, client, "app=fake")) == 3 })
	fmt.Printf("RECORDS %s %s %s\n", c.StatePath, c.NodeAgentRecord, c.NodeAgent.LogPath)
	time.Sleep(10 * time.Minute)
}

// TestKilledOwner kills (-9) a process running a cluster with the node agent
// and checks that no process of it survives: with parent-death signals
// everything dies with the owner (control plane, agent, and the agent's pod
// processes); without them (NoParentDeathSignal), the next StopStale stops
// the agent, which stops its pods.
func TestKilledOwner(t *testing.T) {
	for _, pdeathsig := range []bool{true, false} {
		t.Run(fmt.Sprintf("pdeathsig=%v", pdeathsig), func(t *testing.T) {
			stateDir := t.TempDir()
			// Whatever happens below: nothing of the helper's may survive
			// the test (cleanups run last-registered first: this one after
			// the helper is killed).
			t.Cleanup(func() { localcluster.StopStale(stateDir, testWriter{t}) })
			child := exec.Command(os.Args[0], "-test.run=^TestHelperKilledCluster$", "-test.timeout=15m")
			child.Env = append(os.Environ(), "NODEAGENT_HELPER_STATE_DIR="+stateDir)
			if !pdeathsig {
				child.Env = append(child.Env, "NODEAGENT_HELPER_NO_PDEATHSIG=1")
			}
			child.Stderr = testWriter{t}
			stdout, err := child.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := child.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { child.Process.Kill(); child.Wait() })
			var records []string
			sc := bufio.NewScanner(stdout)
			for sc.Scan() {
				if f, ok := strings.CutPrefix(sc.Text(), "RECORDS "); ok {
					records = strings.Fields(f)
					break
				}
			}
			if len(records) != 3 {
				t.Fatal("helper exited without running pods")
			}
			agentLog := records[2]
			records = records[:2]
			defer func() {
				if t.Failed() {
					dumpLog(t, agentLog, 60)
				}
			}()
			var procs []localcluster.RecordedProcess
			for _, r := range records {
				_, ps, err := localcluster.ReadRecord(r)
				if err != nil {
					t.Fatal(err)
				}
				procs = append(procs, ps...)
			}
			if len(procs) != 4+3 { // etcd, apiserver, controller manager, agent; 3 fakes
				t.Fatalf("recorded %d processes, want 7: %+v", len(procs), procs)
			}
			if err := child.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			child.Wait()
			alive := func() []string {
				var out []string
				for _, p := range procs {
					if p.Alive() {
						out = append(out, fmt.Sprintf("%s (pid %d)", p.Name, p.PID))
					}
				}
				return out
			}
			if pdeathsig {
				deadline := time.Now().Add(10 * time.Second)
				for len(alive()) > 0 && time.Now().Before(deadline) {
					time.Sleep(50 * time.Millisecond)
				}
				if a := alive(); len(a) > 0 {
					t.Errorf("alive 10s after the owner was killed: %v", a)
				}
			} else {
				time.Sleep(time.Second)
				if len(alive()) != len(procs) {
					t.Errorf("without parent-death signals all should survive the owner (else this proves nothing); alive: %v", alive())
					dumpLog(t, agentLog, 60)
				}
			}
			// A record is removed once its owner is gone. A process that is
			// exiting has already lost its command line (so alive() no
			// longer counts it) but is still in /proc for a moment, and
			// StopStale rightly leaves the records of a live owner alone:
			// call it until the records are gone, as the next run would.
			left := func() []string {
				var out []string
				for _, r := range records {
					if _, err := os.Stat(r); !os.IsNotExist(err) {
						out = append(out, fmt.Sprintf("%s (%v)", r, err))
					}
				}
				return out
			}
			stopped := 0
			for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
				n, err := localcluster.StopStale(stateDir, testWriter{t})
				if err != nil {
					t.Fatal(err)
				}
				stopped += n
				if len(left()) == 0 || time.Now().After(deadline) {
					break
				}
			}
			t.Logf("StopStale stopped %d processes", stopped)
			if a := alive(); len(a) > 0 {
				t.Errorf("alive after StopStale: %v", a)
			}
			if l := left(); len(l) > 0 {
				t.Errorf("records left 10s after the owner died: %v", l)
			}
		})
	}
}
