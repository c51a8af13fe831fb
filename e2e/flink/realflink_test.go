package flink

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestRealFlink runs, for every pinned Flink version, a real application cluster
// (standalone-job JobManager + TaskManager, as local JVMs on their own loopback
// addresses) with the test job, takes a savepoint over REST, stops everything,
// restores a new cluster from the savepoint and checks that the keyed state
// continued. It builds the artifacts with Maven first if they are not cached.
func TestRealFlink(t *testing.T) {
	start := time.Now()
	for i, v := range Versions() {
		t.Run(v, func(t *testing.T) { testSavepointRoundTrip(t, v, i) })
	}
	t.Logf("TestRealFlink: all versions in %s", time.Since(start).Round(time.Second))
}

// TestRealFlinkSession runs, for every pinned version, a session cluster
// (jobmanager + taskmanager), submits the test job jar over REST (/jars/upload,
// /jars/:id/run, which need flink-runtime-web) with --fail-after, and checks that
// the job restarts once and then FAILS with the injected exception.
func TestRealFlinkSession(t *testing.T) {
	for i, v := range Versions() {
		t.Run(v, func(t *testing.T) { testSessionFailure(t, v, i) })
	}
}

func testSessionFailure(t *testing.T, version string, index int) {
	t0 := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	dist, err := Ensure(ctx, version)
	if err != nil {
		t.Fatal(err)
	}
	c := newTestCluster(t, ctx, version, map[string]string{
		"restart-strategy.type":                 "fixed-delay",
		"restart-strategy.fixed-delay.attempts": "1",
		"restart-strategy.fixed-delay.delay":    "1 s",
	})
	ip := func(n int) string { return podIP(index, n) }
	jm := c.start("session-jm", ip(5), ip(5), JobManager)
	tm := c.start("session-tm", ip(6), ip(5), TaskManager)
	rest := "http://" + jm.ip + ":8081"
	poll(t, ctx, 3*time.Minute, "a registered TaskManager", func() bool {
		var ov struct {
			TaskManagers int `json:"taskmanagers"`
		}
		return tryGetJSON(ctx, rest+"/overview", &ov) && ov.TaskManagers == 1
	})
	t.Logf("%s: session cluster with its TaskManager up %s after the JM JVM started", version, time.Since(jm.Started).Round(time.Millisecond))

	jarID := uploadJar(t, ctx, rest, dist.TestJobJar)
	name := "failing-" + version
	var run struct {
		JobID string `json:"jobid"`
	}
	postJSON(t, ctx, rest+"/jars/"+jarID+"/run", map[string]any{
		"entryClass":      TestJobClass,
		"programArgsList": []string{"--fail-after", "15", "--job-name", name},
	}, http.StatusOK, &run)

	var job struct {
		State string `json:"state"`
	}
	poll(t, ctx, 2*time.Minute, "job "+run.JobID+" FAILED", func() bool {
		return tryGetJSON(ctx, rest+"/jobs/"+run.JobID, &job) && job.State == "FAILED"
	})
	var exc struct {
		History struct {
			Entries []struct {
				Stacktrace string `json:"stacktrace"`
			} `json:"entries"`
		} `json:"exceptionHistory"`
	}
	getJSON(t, ctx, rest+"/jobs/"+run.JobID+"/exceptions", &exc)
	if len(exc.History.Entries) != 2 { // the first failure, and the one after the restart
		t.Errorf("want 2 exceptions (fail, restart, fail), got %d", len(exc.History.Entries))
	}
	for _, e := range exc.History.Entries {
		if !strings.Contains(e.Stacktrace, "injected failure after 15 records") {
			t.Errorf("unexpected exception: %.300s", e.Stacktrace)
		}
	}
	for _, p := range []*pod{tm, jm} {
		if err := p.Stop(20 * time.Second); err != nil {
			t.Fatal(err)
		}
	}
	assertNoProcesses(t, c.base)
	t.Logf("%s: done in %s", version, time.Since(t0).Round(time.Second))
}

// uploadJar POSTs jar to /jars/upload and returns its jar id.
func uploadJar(t *testing.T, ctx context.Context, rest, jar string) string {
	t.Helper()
	data, err := os.ReadFile(jar)
	if err != nil {
		t.Fatal(err)
	}
	var body bytes.Buffer
	w := multipart.NewWriter(&body)
	part, err := w.CreatePart(textproto.MIMEHeader{
		"Content-Disposition": {`form-data; name="jarfile"; filename="testjob.jar"`},
		"Content-Type":        {"application/x-java-archive"},
	})
	if err != nil {
		t.Fatal(err)
	}
	part.Write(data)
	w.Close()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, rest+"/jars/upload", &body)
	req.Header.Set("Content-Type", w.FormDataContentType())
	var up struct {
		Filename string `json:"filename"`
		Status   string `json:"status"`
	}
	do(t, req, http.StatusOK, &up)
	if up.Status != "success" || up.Filename == "" {
		t.Fatalf("upload: %+v", up)
	}
	return filepath.Base(up.Filename)
}

func postJSON(t *testing.T, ctx context.Context, url string, in any, wantStatus int, out any) {
	t.Helper()
	body, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	do(t, req, wantStatus, out)
}

func do(t *testing.T, req *http.Request, wantStatus int, out any) {
	t.Helper()
	resp, err := httpClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != wantStatus {
		t.Fatalf("%s %s: HTTP %d: %s", req.Method, req.URL, resp.StatusCode, data)
	}
	if err := json.Unmarshal(data, out); err != nil {
		t.Fatalf("%s %s: %v: %s", req.Method, req.URL, err, data)
	}
}

// pod is one emulated Flink pod of the test.
type pod struct {
	name string
	ip   string
	*Process
}

func testSavepointRoundTrip(t *testing.T, version string, index int) {
	t0 := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	dist, err := Ensure(ctx, version)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: artifacts in %s (%d jars) after %s", version, dist.Dir, len(dist.Classpath), time.Since(t0).Round(time.Millisecond))

	c := newTestCluster(t, ctx, version, map[string]string{
		"execution.checkpointing.externalized-checkpoint-retention": "RETAIN_ON_CANCELLATION",
		"execution.shutdown-on-application-finish":                  "false",
	})
	base, data, startPod := c.base, c.data, c.start
	ip := func(n int) string { return podIP(index, n) }
	jobArgs := []string{"--job-classname", TestJobClass, "--rate", "10", "--keys", "10", "--job-name", "counting-" + version}

	// 1. A fresh application cluster.
	jm := startPod("jm-1", ip(1), ip(1), StandaloneJob, jobArgs...)
	tm := startPod("tm-1", ip(2), ip(1), TaskManager)
	rest := "http://" + jm.ip + ":8081"
	job := waitRunning(t, ctx, rest, "counting-"+version)
	t.Logf("%s: job %s RUNNING %s after the JM JVM started (TM JVM started %s after it; Prepare took JM %s, TM %s)",
		version, job, time.Since(jm.Started).Round(time.Millisecond), tm.Started.Sub(jm.Started).Round(time.Millisecond),
		jm.PrepareTime.Round(time.Millisecond), tm.PrepareTime.Round(time.Millisecond))

	acc := waitAccumulators(t, ctx, rest, job, func(a accumulators) bool { return a.MaxCount >= 5 })
	before := acc.MaxCount
	if acc.Mismatches != 0 {
		t.Errorf("mismatches before the savepoint: %+v", acc)
	}
	t.Logf("%s: before the savepoint %+v", version, acc)

	// 2. A savepoint into the configured savepoint directory (the mapped volume).
	location := triggerSavepoint(t, ctx, rest, job)
	spDir := localPath(t, location)
	if !strings.HasPrefix(spDir, filepath.Join(data, "savepoints")+"/") {
		t.Errorf("savepoint %s is not under the volume %s", spDir, data)
	}
	if _, err := os.Stat(filepath.Join(spDir, "_metadata")); err != nil {
		t.Fatalf("savepoint metadata: %v", err)
	}
	report := func(phase string, ps ...*pod) {
		for _, p := range ps {
			rss, err := p.RSS()
			if err != nil {
				t.Errorf("RSS of %s: %v", p.name, err)
			}
			t.Logf("%s: %s RSS of %s (pid %d): %d MiB", version, phase, p.name, p.PID(), rss>>20)
		}
	}
	report("running", jm, tm)

	// 3. Stop the cluster; no JVM may be left.
	for _, p := range []*pod{tm, jm} {
		if err := p.Stop(20 * time.Second); err != nil {
			t.Fatal(err)
		}
	}
	assertNoProcesses(t, base)

	// 4. A new cluster (new pod IPs; the "service" follows) restored from the savepoint.
	jm2 := startPod("jm-2", ip(3), ip(3), StandaloneJob,
		append([]string{"--fromSavepoint", location, "--allowNonRestoredState"}, jobArgs...)...)
	tm2 := startPod("tm-2", ip(4), ip(3), TaskManager)
	rest = "http://" + jm2.ip + ":8081"
	job2 := waitRunning(t, ctx, rest, "counting-"+version)
	t.Logf("%s: restored job %s RUNNING %s after JM start", version, job2, time.Since(jm2.Started).Round(time.Millisecond))

	var cps struct {
		Latest struct {
			Restored *struct {
				ID           int64  `json:"id"`
				IsSavepoint  bool   `json:"is_savepoint"`
				ExternalPath string `json:"external_path"`
			} `json:"restored"`
		} `json:"latest"`
	}
	getJSON(t, ctx, rest+"/jobs/"+job2+"/checkpoints", &cps)
	r := cps.Latest.Restored
	if r == nil || !r.IsSavepoint || localPath(t, r.ExternalPath) != spDir {
		t.Fatalf("latest.restored = %+v, want the savepoint %s", r, spDir)
	}

	// The counters continue from the savepoint: a fresh start could never have a
	// per-key count above ceil(records/keys), and a restored one never drops
	// below what the savepoint held (it may equal it until every key has been
	// seen again).
	acc = waitAccumulators(t, ctx, rest, job2, func(a accumulators) bool { return a.Records > 0 })
	t.Logf("%s: after the restore %+v (before: max-count %d)", version, acc, before)
	if acc.Mismatches != 0 {
		t.Errorf("state mismatches after the restore: %+v", acc)
	}
	if acc.MaxCount < before || acc.MaxCount <= (acc.Records+9)/10 {
		t.Errorf("state not restored: %+v, max-count before the savepoint %d", acc, before)
	}
	report("restored", jm2, tm2)

	for _, p := range []*pod{tm2, jm2} {
		if err := p.Stop(20 * time.Second); err != nil {
			t.Fatal(err)
		}
	}
	assertNoProcesses(t, base)
	t.Logf("%s: done in %s", version, time.Since(t0).Round(time.Second))
}

// testDir is a temporary directory for the test's pods, kept (and logged) when
// FLINKOP_KEEP_TESTDIR is set.
func testDir(t *testing.T) string {
	t.Helper()
	if os.Getenv("FLINKOP_KEEP_TESTDIR") == "" {
		return t.TempDir()
	}
	dir, err := os.MkdirTemp("", "flinkop-"+strings.ReplaceAll(t.Name(), "/", "-")+"-")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("keeping %s", dir)
	return dir
}

// testCluster emulates the pods of one Flink cluster: a ConfigMap directory, a
// shared volume mounted at /flink-data, and a hosts file per pod in which
// "flink-jm" plays the JobManager's Kubernetes service.
type testCluster struct {
	t       *testing.T
	ctx     context.Context
	version string
	base    string // everything of the test lives here
	data    string // the volume
	conf    map[string]string
	confDir string
	pods    []*pod
}

func newTestCluster(t *testing.T, ctx context.Context, version string, extraConf map[string]string) *testCluster {
	c := &testCluster{t: t, ctx: ctx, version: version, base: testDir(t)}
	c.data = filepath.Join(c.base, "data")
	c.confDir = filepath.Join(c.base, "configmap")
	conf := map[string]string{
		"jobmanager.rpc.address":                "flink-jm",
		"jobmanager.rpc.port":                   "6123",
		"blob.server.port":                      "6124",
		"rest.port":                             "8081",
		"taskmanager.rpc.port":                  "6122",
		"taskmanager.numberOfTaskSlots":         "2",
		"parallelism.default":                   "2",
		"jobmanager.memory.process.size":        "768m",
		"taskmanager.memory.process.size":       "1024m",
		"taskmanager.memory.managed.size":       "64m",
		"state.backend.type":                    "hashmap",
		"execution.checkpointing.interval":      "2 s",
		"execution.checkpointing.dir":           "file:///flink-data/checkpoints",
		"execution.checkpointing.savepoint-dir": "file:///flink-data/savepoints",
		"heartbeat.interval":                    "1000", // accumulators travel with heartbeats
	}
	for k, v := range extraConf {
		conf[k] = v
	}
	c.conf = conf
	if err := WriteConfDir(c.confDir, version, conf); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, p := range c.pods {
			_ = p.Kill()
		}
		if t.Failed() {
			for _, p := range c.pods {
				dumpTail(t, p.name, p.LogFile, 60)
				dumpTail(t, p.name, p.OutFile(), 20)
			}
		}
	})
	return c
}

// start starts pod name with IP ip whose name resolution maps flink-jm to jmIP.
// Application pods get a generated hosts file (LaunchOptions.Hosts), session pods
// one written here (LaunchOptions.HostsFile), to cover both.
func (c *testCluster) start(name, ip, jmIP string, mode Mode, args ...string) *pod {
	c.t.Helper()
	return c.startWithConf(c.confDir, name, ip, jmIP, mode, args...)
}

// confDirWith writes another ConfigMap directory: the cluster's configuration
// plus extra, and returns it.
func (c *testCluster) confDirWith(name string, extra map[string]string) string {
	conf := map[string]string{}
	for k, v := range c.conf {
		conf[k] = v
	}
	for k, v := range extra {
		conf[k] = v
	}
	dir := filepath.Join(c.base, "configmap-"+name)
	if err := WriteConfDir(dir, c.version, conf); err != nil {
		c.t.Fatal(err)
	}
	return dir
}

// startWithConf is start with the configuration in confDir.
func (c *testCluster) startWithConf(confDir, name, ip, jmIP string, mode Mode, args ...string) *pod {
	t := c.t
	t.Helper()
	opts := LaunchOptions{
		FlinkVersion: c.version,
		Mode:         mode,
		Args:         args,
		ConfDir:      confDir,
		Host:         ip,
		WorkDir:      filepath.Join(c.base, name),
		PathMap:      map[string]string{"/flink-data": c.data},
	}
	if strings.HasPrefix(name, "session-") {
		hostname, _ := os.Hostname()
		opts.HostsFile = filepath.Join(c.base, name+".hosts")
		content := fmt.Sprintf("%s localhost %s %s\n%s flink-jm\n", ip, name, hostname, jmIP)
		if err := os.WriteFile(opts.HostsFile, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	} else {
		opts.Hosts = map[string]string{"flink-jm": jmIP}
	}
	p, err := Start(c.ctx, opts, nil)
	if err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	pd := &pod{name: name, ip: ip, Process: p}
	c.pods = append(c.pods, pd)
	return pd
}

// podIP is the loopback address of pod n of the test for version number index:
// 127.99.<p>.<10*(index+1)+n>, with p derived from the test process's pid so
// that concurrent test runs do not share addresses (and ports).
func podIP(index, n int) string {
	return fmt.Sprintf("127.99.%d.%d", os.Getpid()%250+1, 10*(index+1)+n)
}

var httpClient = &http.Client{Timeout: 5 * time.Second}

// getJSON GETs url into v; false while the server is not up or answers non-200.
func tryGetJSON(ctx context.Context, url string, v any) bool {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return false
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	return resp.StatusCode == http.StatusOK && json.NewDecoder(resp.Body).Decode(v) == nil
}

func getJSON(t *testing.T, ctx context.Context, url string, v any) {
	t.Helper()
	if !tryGetJSON(ctx, url, v) {
		t.Fatalf("GET %s failed", url)
	}
}

// poll calls f every 250ms until it returns true or the timeout passes.
func poll(t *testing.T, ctx context.Context, timeout time.Duration, what string, f func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !f() {
		if time.Now().After(deadline) || ctx.Err() != nil {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// waitRunning waits until /jobs/overview shows the named job RUNNING with all
// its tasks running, and returns its id.
func waitRunning(t *testing.T, ctx context.Context, rest, name string) string {
	t.Helper()
	var id string
	poll(t, ctx, 3*time.Minute, "job "+name+" RUNNING at "+rest, func() bool {
		var ov struct {
			Jobs []struct {
				JID   string         `json:"jid"`
				Name  string         `json:"name"`
				State string         `json:"state"`
				Tasks map[string]int `json:"tasks"`
			} `json:"jobs"`
		}
		if !tryGetJSON(ctx, rest+"/jobs/overview", &ov) {
			return false
		}
		for _, j := range ov.Jobs {
			if j.Name == name && j.State == "RUNNING" && j.Tasks["total"] > 0 && j.Tasks["running"] == j.Tasks["total"] {
				id = j.JID
				return true
			}
		}
		return false
	})
	return id
}

// accumulators are the test job's user accumulators.
type accumulators struct {
	Records, MaxCount, Mismatches int64
}

func waitAccumulators(t *testing.T, ctx context.Context, rest, job string, ok func(accumulators) bool) accumulators {
	t.Helper()
	var a accumulators
	poll(t, ctx, 2*time.Minute, "accumulators of "+job, func() bool {
		var resp struct {
			User []struct {
				Name  string `json:"name"`
				Value string `json:"value"`
			} `json:"user-task-accumulators"`
		}
		if !tryGetJSON(ctx, rest+"/jobs/"+job+"/accumulators", &resp) {
			return false
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
		return seen == 3 && ok(a)
	})
	return a
}

// triggerSavepoint takes a savepoint into the configured directory and returns
// its location.
func triggerSavepoint(t *testing.T, ctx context.Context, rest, job string) string {
	t.Helper()
	return savepointOf(t, ctx, rest, job, false, 2*time.Minute)
}

// savepointOf takes a savepoint of job (cancelling it with cancel) and waits
// up to timeout for its location.
func savepointOf(t *testing.T, ctx context.Context, rest, job string, cancel bool, timeout time.Duration) string {
	t.Helper()
	var trig struct {
		RequestID string `json:"request-id"`
	}
	postJSON(t, ctx, rest+"/jobs/"+job+"/savepoints", map[string]any{"cancel-job": cancel}, http.StatusAccepted, &trig)
	var location string
	poll(t, ctx, timeout, "savepoint "+trig.RequestID, func() bool {
		var st struct {
			Status struct {
				ID string `json:"id"`
			} `json:"status"`
			Operation struct {
				Location     string          `json:"location"`
				FailureCause json.RawMessage `json:"failure-cause"`
			} `json:"operation"`
		}
		if !tryGetJSON(ctx, rest+"/jobs/"+job+"/savepoints/"+trig.RequestID, &st) || st.Status.ID != "COMPLETED" {
			return false
		}
		if st.Operation.Location == "" {
			t.Fatalf("savepoint failed: %s", st.Operation.FailureCause)
		}
		location = st.Operation.Location
		return true
	})
	return location
}

// localPath turns a file: URI (file:/a, file:///a) or a path into a clean path.
func localPath(t *testing.T, s string) string {
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

// assertNoProcesses fails if any process still has dir in its command line.
func assertNoProcesses(t *testing.T, dir string) {
	t.Helper()
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && bytes.Contains(cmdline, []byte(dir)) {
			t.Errorf("process %d still running: %.200s", pid, bytes.ReplaceAll(cmdline, []byte{0}, []byte{' '}))
		}
	}
}

func dumpTail(t *testing.T, name, path string, lines int) {
	data, err := os.ReadFile(path)
	if err != nil {
		return
	}
	all := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(all) > lines {
		all = all[len(all)-lines:]
	}
	t.Logf("--- %s: last %d lines of %s\n%s", name, len(all), path, strings.Join(all, "\n"))
}
