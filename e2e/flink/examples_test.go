package flink

import (
	"archive/zip"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestRealFlinkExamples runs, for every pinned version, the image's own example
// jars from /opt/flink/examples/streaming as the operator runs a FlinkDeployment
// with jarURI local:///opt/flink/examples/streaming/<X>.jar: a standalone-job
// JobManager whose configuration has pipeline.classpaths
// file:///opt/flink/examples/streaming/<X>.jar, and a TaskManager. One
// TaskManager serves four JobManagers in turn, each replacing the previous one
// at the JobManager service's address:
//
//   - StateMachineExample.jar without --job-classname (Flink takes the class from
//     the manifest): RUNNING, and a checkpoint completes;
//   - StateMachineExample.jar with --job-classname: the same;
//   - TopSpeedWindowing.jar: RUNNING;
//   - WordCount.jar on its built-in text: FINISHED, its counts printed.
func TestRealFlinkExamples(t *testing.T) {
	for i, v := range Versions() {
		t.Run(v, func(t *testing.T) { testExamples(t, v, i) })
	}
}

func testExamples(t *testing.T, version string, index int) {
	t0 := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	dist, err := Ensure(ctx, version)
	if err != nil {
		t.Fatal(err)
	}
	for jar, class := range map[string]string{
		StateMachineExampleJar: StateMachineExampleClass,
		TopSpeedWindowingJar:   TopSpeedWindowingClass,
		WordCountJar:           WordCountClass,
	} {
		if got := manifestEntryClass(t, dist.Example(jar)); got != class {
			t.Errorf("%s: entry class %q, want %q", jar, got, class)
		}
	}

	c := newTestCluster(t, ctx, version, map[string]string{
		// WordCount finishes; its JobManager stays up to report that.
		"execution.shutdown-on-application-finish": "false",
		// One TaskManager serves the JobManagers in turn: it notices that one is
		// gone after 5 s without heartbeats (default 50 s), which frees its slots,
		// and retries a JobManager that is not (yet) there every second (default
		// 10 s), so the next one gets it promptly.
		"heartbeat.timeout":                "5000",
		"cluster.registration.error-delay": "1000",
	})
	ip := func(n int) string { return podIP(index+4, n) } // apart from the other tests' pods
	jmIP := ip(1)
	tm := c.start("ex-tm", ip(2), jmIP, TaskManager)
	rest := "http://" + jmIP + ":8081"

	// application starts a JobManager for jar as the operator configures one for
	// jarURI local:///opt/flink/examples/streaming/<jar>, with a job id of its
	// own (so the TaskManager does not mistake the new job for the last one).
	runs := 0
	application := func(name, jar string, args ...string) (*pod, string) {
		t.Helper()
		runs++
		jobID := fmt.Sprintf("%032x", 0xe0000+runs)
		conf := c.confDirWith(name, map[string]string{
			"pipeline.classpaths":       "file://" + ImageFlinkHome + "/examples/streaming/" + jar,
			"$internal.pipeline.job-id": jobID,
		})
		return c.startWithConf(conf, name, jmIP, jmIP, StandaloneJob, args...), jobID
	}
	sameJob := func(got, want string) {
		t.Helper()
		if got != want {
			t.Errorf("job id %s, want the configured %s", got, want)
		}
	}
	stop := func(p *pod) {
		t.Helper()
		t1 := time.Now()
		if err := p.Stop(20 * time.Second); err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: stopped %s in %s", version, p.name, time.Since(t1).Round(time.Millisecond))
	}
	stateMachine := func(name string, args ...string) {
		t.Helper()
		t1 := time.Now()
		jm, jobID := application(name, StateMachineExampleJar, args...)
		// The official image's usrlib/ is empty; with the test job there Flink
		// would find two entry classes and refuse to choose.
		if entries, err := os.ReadDir(filepath.Join(jm.Home, "usrlib")); err != nil || len(entries) != 0 {
			t.Errorf("%s: usrlib/ = %v, %v; want it empty", name, entries, err)
		}
		job := waitRunning(t, ctx, rest, "State machine job")
		sameJob(job, jobID)
		assertVertex(t, ctx, rest, job, "Events Generator Source")
		n := waitCheckpoints(t, ctx, rest, job, 1)
		t.Logf("%s: %s %v: RUNNING, %d checkpoint(s) completed, %s after the JM JVM started (%s in all)", version, name, args, n,
			time.Since(jm.Started).Round(time.Millisecond), time.Since(t1).Round(time.Millisecond))
		stop(jm)
	}

	stateMachine("ex-sm-manifest")
	stateMachine("ex-sm-classname", "--job-classname", StateMachineExampleClass)

	t1 := time.Now()
	jm, jobID := application("ex-topspeed", TopSpeedWindowingJar)
	job := waitRunning(t, ctx, rest, "CarTopSpeedWindowingExample")
	sameJob(job, jobID)
	assertVertex(t, ctx, rest, job, "Car data generator source")
	t.Logf("%s: TopSpeedWindowing RUNNING after %s", version, time.Since(t1).Round(time.Millisecond))
	stop(jm)

	t1 = time.Now()
	jm, jobID = application("ex-wordcount", WordCountJar)
	sameJob(waitJobState(t, ctx, rest, "WordCount", "FINISHED"), jobID)
	// The print sink writes to the TaskManager's stdout; "question" occurs once
	// in the built-in text ("To be, or not to be,--that is the question:--").
	poll(t, ctx, 30*time.Second, "WordCount's counts in "+tm.OutFile(), func() bool {
		out, _ := os.ReadFile(tm.OutFile())
		return strings.Contains(string(out), "(question,1)")
	})
	t.Logf("%s: WordCount FINISHED after %s", version, time.Since(t1).Round(time.Millisecond))

	stop(jm)
	stop(tm)
	assertNoProcesses(t, c.base)
	t.Logf("%s: done in %s", version, time.Since(t0).Round(time.Second))
}

// manifestEntryClass is what Flink takes as a jar's entry class: the manifest's
// program-class, else its Main-Class.
func manifestEntryClass(t *testing.T, jar string) string {
	t.Helper()
	r, err := zip.OpenReader(jar)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	f, err := r.Open("META-INF/MANIFEST.MF")
	if err != nil {
		t.Fatalf("%s: %v", jar, err)
	}
	defer f.Close()
	data, err := io.ReadAll(f)
	if err != nil {
		t.Fatal(err)
	}
	// Manifest lines are wrapped at 72 bytes; a continuation starts with a space.
	text := strings.ReplaceAll(strings.ReplaceAll(string(data), "\r\n", "\n"), "\n ", "")
	attrs := map[string]string{}
	for _, line := range strings.Split(text, "\n") {
		if k, v, ok := strings.Cut(line, ": "); ok {
			attrs[k] = v
		}
	}
	if c := attrs["program-class"]; c != "" {
		return c
	}
	return attrs["Main-Class"]
}

// waitJobState waits until /jobs/overview shows the named job in state and
// returns its id.
func waitJobState(t *testing.T, ctx context.Context, rest, name, state string) string {
	t.Helper()
	var id string
	poll(t, ctx, 3*time.Minute, "job "+name+" "+state+" at "+rest, func() bool {
		var ov struct {
			Jobs []struct {
				JID   string `json:"jid"`
				Name  string `json:"name"`
				State string `json:"state"`
			} `json:"jobs"`
		}
		if !tryGetJSON(ctx, rest+"/jobs/overview", &ov) {
			return false
		}
		for _, j := range ov.Jobs {
			if j.Name == name && j.State == state {
				id = j.JID
				return true
			}
		}
		return false
	})
	return id
}

// waitCheckpoints waits until at least n checkpoints of job have completed and
// returns how many have.
func waitCheckpoints(t *testing.T, ctx context.Context, rest, job string, n int) int {
	t.Helper()
	var cps struct {
		Counts struct {
			Completed int `json:"completed"`
		} `json:"counts"`
	}
	poll(t, ctx, 2*time.Minute, "a completed checkpoint of "+job, func() bool {
		return tryGetJSON(ctx, rest+"/jobs/"+job+"/checkpoints", &cps) && cps.Counts.Completed >= n
	})
	return cps.Counts.Completed
}

// assertVertex checks that job has a vertex whose name contains name: the
// example's own operators, not a stand-in's.
func assertVertex(t *testing.T, ctx context.Context, rest, job, name string) {
	t.Helper()
	var j struct {
		Vertices []struct {
			Name string `json:"name"`
		} `json:"vertices"`
	}
	getJSON(t, ctx, rest+"/jobs/"+job, &j)
	var names []string
	for _, v := range j.Vertices {
		if strings.Contains(v.Name, name) {
			return
		}
		names = append(names, v.Name)
	}
	t.Errorf("job %s has no vertex %q: %q", job, name, names)
}
