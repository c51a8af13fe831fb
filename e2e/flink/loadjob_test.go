package flink

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// The test job's job vertices, as the REST API names them. Their ids derive
// from the operators' uids only (StreamGraphHasherV2), so they are the same on
// every run and every Flink version.
const (
	sourceVertexID  = "e5a72f353fc1e6bbf3bd96a41384998c" // uid "source"
	loadVertexID    = "66250f48866f30912ce75923ebd1ef85" // uid "load" (--load-file only)
	counterVertexID = "0da08f51eaa85fc298e176a139b3649a" // uid "counter", sink chained
)

// jobVertex is one vertex of GET /jobs/:id.
type jobVertex struct {
	ID             string `json:"id"`
	Name           string `json:"name"`
	Parallelism    int    `json:"parallelism"`
	MaxParallelism int    `json:"maxParallelism"`
}

// TestRealFlinkLoad runs, for every pinned version, a session cluster and the
// test job with --load-file (issue 33: a job whose load e2e can raise and lower
// while it runs). Without --load-file the job graph is the job's usual one (two
// vertices, sink chained to the counter); with it there is a "load" vertex
// between source and counter. Writing the load file changes the source's rate
// (records counted per second) and the load stage's per-record cost, which
// shows as its busyTimeMsPerSecond over REST: low, then clearly higher, then low
// again, without restarting the job. The loaded job starts from a savepoint of
// the plain one, and its savepoint is restored at parallelism 1 (the load stage
// and the counter rescaled), then into the job without --load-file: the keyed
// counter continues every time, with no mismatch.
func TestRealFlinkLoad(t *testing.T) {
	for i, v := range Versions() {
		t.Run(v, func(t *testing.T) { testLoad(t, v, i) })
	}
}

// The loads the test writes: with 100 keys over the load stage's 2 subtasks,
// low is about 10 ms/s busy per subtask, high about 600 ms/s, below the stage's
// capacity so that no backlog builds up (which would take long to drain).
const (
	lowLoad  = "# low\nrate=20\ncost-ms=1\n"
	highLoad = "# high\nrate=100\ncost-ms=12\n"
	// Bounds on the busiest load subtask's busyTimeMsPerSecond (a 60 s average
	// in Flink, so it moves gradually).
	lowBusyMax  = 150.0
	highBusyMin = 400.0
)

func testLoad(t *testing.T, version string, index int) {
	t0 := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	dist, err := Ensure(ctx, version)
	if err != nil {
		t.Fatal(err)
	}
	c := newTestCluster(t, ctx, version, map[string]string{
		"metrics.fetcher.update-interval": "1000", // the REST API's metrics (default every 10 s)
	})
	// Other pod numbers than the other tests', in case they run in parallel.
	ip := func(n int) string { return podIP(index, n) }
	jm := c.start("session-load-jm", ip(7), ip(7), JobManager)
	tm := c.start("session-load-tm", ip(8), ip(7), TaskManager)
	rest := "http://" + jm.ip + ":8081"
	poll(t, ctx, 3*time.Minute, "a registered TaskManager", func() bool {
		var ov struct {
			TaskManagers int `json:"taskmanagers"`
		}
		return tryGetJSON(ctx, rest+"/overview", &ov) && ov.TaskManagers == 1
	})
	jarID := uploadJar(t, ctx, rest, dist.TestJobJar)
	run := func(name string, body map[string]any, args ...string) string {
		t.Helper()
		body["entryClass"] = TestJobClass
		if body["parallelism"] == nil {
			body["parallelism"] = 2 // /jars/run does not apply the cluster's parallelism.default
		}
		body["programArgsList"] = append(args, "--job-name", name)
		var r struct {
			JobID string `json:"jobid"`
		}
		postJSON(t, ctx, rest+"/jars/"+jarID+"/run", body, http.StatusOK, &r)
		awaitJobIDRunning(t, ctx, rest, r.JobID)
		return r.JobID
	}
	vertices := func(job string) []jobVertex {
		t.Helper()
		var j struct {
			Vertices []jobVertex `json:"vertices"`
		}
		getJSON(t, ctx, rest+"/jobs/"+job, &j)
		return j.Vertices
	}
	source := jobVertex{sourceVertexID, "Source: sequence", 1, 128}
	counter := jobVertex{counterVertexID, "counter -> discard: Writer", 2, 128}
	load := jobVertex{loadVertexID, "load", 2, 128}

	// 1. Without --load-file: the usual job graph.
	plain := run("plain-"+version, map[string]any{}, "--keys", "100", "--rate", "200")
	if got, want := vertices(plain), []jobVertex{source, counter}; !reflect.DeepEqual(got, want) {
		t.Errorf("job graph without --load-file:\n got %+v\nwant %+v", got, want)
	}
	acc := waitAccumulators(t, ctx, rest, plain, func(a accumulators) bool { return a.MaxCount >= 5 })
	location := triggerSavepointCancel(t, ctx, rest, plain)

	// 2. With --load-file, at a low load, from the plain job's savepoint (the
	// load stage is new and has no state).
	loadFile := filepath.Join(c.base, "load.txt")
	writeLoad(t, loadFile, lowLoad)
	jobArgs := []string{"--keys", "100", "--rate", "5", "--load-file", loadFile}
	job := run("loaded-"+version, map[string]any{"savepointPath": location}, jobArgs...)
	if got, want := vertices(job), []jobVertex{source, load, counter}; !reflect.DeepEqual(got, want) {
		t.Fatalf("job graph with --load-file:\n got %+v\nwant %+v", got, want)
	}
	checkStateContinued(t, ctx, rest, job, acc.MaxCount, "with --load-file, from the plain job's savepoint")
	t.Logf("%s: job %s RUNNING with the load stage, %s after the JM JVM started", version, job, time.Since(jm.Started).Round(time.Second))

	busy := func() float64 { return loadBusy(ctx, rest, job) }
	// Right after a start Flink reports 1000 for a while; then low.
	low1 := waitBusy(t, ctx, busy, "low", func(b float64) bool { return b <= lowBusyMax })
	r1 := waitRate(t, ctx, rest, job, "low", 15, 30)

	// 3. High, then low again. The rate follows within about a second (the first
	// 5 s window after the write already shows it), busy time over its 60 s
	// window: the test waits until it passes the bound.
	phase := func(name, content string, lo, hi float64, ok func(float64) bool) (rate, crossed float64) {
		t.Helper()
		written := time.Now()
		writeLoad(t, loadFile, content)
		rate = waitRate(t, ctx, rest, job, name, lo, hi)
		t.Logf("%s: %s: %.1f rec/s in the first 5 s window (%s after the write)", version, name, rate, time.Since(written).Round(time.Second))
		crossed = waitBusy(t, ctx, busy, name, ok)
		t.Logf("%s: %s: busy %.0f ms/s %s after the write", version, name, crossed, time.Since(written).Round(time.Second))
		// Not waited for here: the settled value once Flink's 60 s busy
		// window is past (about 610 ms/s high, 12 low, measured when the
		// stage was written). The autoscaler's e2e (e2e/nativee2e, both
		// lines) acts on that load for minutes.
		return rate, crossed
	}
	r2, high := phase("high", highLoad, 75, 125, func(b float64) bool { return b >= highBusyMin })
	r3, low2 := phase("low again", lowLoad, 15, 30, func(b float64) bool { return b <= lowBusyMax })
	t.Logf("%s: the load stage's max busyTimeMsPerSecond: low %.0f; high %.0f; low again %.0f (when past the bounds); records/s %.1f, %.1f, %.1f",
		version, low1, high, low2, r1, r2, r3)

	// 4. A missing file keeps the last values (--rate 5 would show), logged once
	// by each reader: the source and the 2 load subtasks.
	if err := os.Remove(loadFile); err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * time.Second)
	waitRate(t, ctx, rest, job, "file removed", 15, 30)
	if data, err := os.ReadFile(tm.LogFile); err != nil {
		t.Error(err)
	} else if n := strings.Count(string(data), "load.txt (source): cannot stat") + strings.Count(string(data), "load.txt (load stage): cannot stat"); n != 3 {
		t.Errorf("the missing load file logged %d times, want 3 (once per reader)", n)
	}
	writeLoad(t, loadFile, lowLoad)

	acc = waitAccumulators(t, ctx, rest, job, func(a accumulators) bool { return a.Records > 0 })
	if acc.Mismatches != 0 {
		t.Errorf("mismatches with the load stage: %+v", acc)
	}

	// 6. Savepoint, cancel; restore at parallelism 1 (load stage and counter rescaled).
	location = triggerSavepointCancel(t, ctx, rest, job)
	before := acc.MaxCount // the savepoint holds at least this
	restored := run("loaded-restored-"+version, map[string]any{"savepointPath": location, "parallelism": 1}, jobArgs...)
	load1, counter1 := load, counter
	load1.Parallelism, counter1.Parallelism = 1, 1
	if got, want := vertices(restored), []jobVertex{source, load1, counter1}; !reflect.DeepEqual(got, want) {
		t.Errorf("job graph restored at parallelism 1:\n got %+v\nwant %+v", got, want)
	}
	acc = checkStateContinued(t, ctx, rest, restored, before, "restored at parallelism 1")

	// 7. And into the job without --load-file (the load stage holds no state).
	location = triggerSavepointCancel(t, ctx, rest, restored)
	plain2 := run("plain-restored-"+version, map[string]any{"savepointPath": location}, "--keys", "100")
	checkStateContinued(t, ctx, rest, plain2, acc.MaxCount, "restored without --load-file")
	cancelJobByID(t, ctx, rest, plain2)

	for _, p := range []*pod{tm, jm} {
		if err := p.Stop(20 * time.Second); err != nil {
			t.Fatal(err)
		}
	}
	assertNoProcesses(t, c.base)
	t.Logf("%s: done in %s", version, time.Since(t0).Round(time.Second))
}

// checkStateContinued waits until the restored job counted records and checks that
// its keyed state continued: a fresh start could not have max-count above
// ceil(records/100) (100 keys), nor below the count before.
func checkStateContinued(t *testing.T, ctx context.Context, rest, job string, before int64, what string) accumulators {
	t.Helper()
	acc := waitAccumulators(t, ctx, rest, job, func(a accumulators) bool { return a.Records > 0 })
	t.Logf("%s: %+v (max-count before %d)", what, acc, before)
	if acc.Mismatches != 0 {
		t.Errorf("%s: mismatches %+v", what, acc)
	}
	if acc.MaxCount < before || acc.MaxCount <= (acc.Records+99)/100 {
		t.Errorf("%s: state not restored: %+v, max-count before %d", what, acc, before)
	}
	return acc
}

// writeLoad replaces the load file atomically, as the README advises.
func writeLoad(t *testing.T, path, content string) {
	t.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// loadBusy is the busiest load subtask's busyTimeMsPerSecond, NaN if unknown.
func loadBusy(ctx context.Context, rest, job string) float64 {
	var m []struct {
		ID  string  `json:"id"`
		Max float64 `json:"max"`
	}
	url := rest + "/jobs/" + job + "/vertices/" + loadVertexID + "/subtasks/metrics?get=busyTimeMsPerSecond&agg=max"
	if !tryGetJSON(ctx, url, &m) || len(m) != 1 || m[0].ID != "busyTimeMsPerSecond" {
		return math.NaN()
	}
	return m[0].Max
}

// waitBusy polls busy every 2 s until ok (generous: Flink averages busy time
// over 60 s) and returns the value that satisfied it.
func waitBusy(t *testing.T, ctx context.Context, busy func() float64, phase string, ok func(float64) bool) float64 {
	t.Helper()
	start := time.Now()
	var seen []float64
	for {
		b := busy()
		if !math.IsNaN(b) {
			seen = append(seen, b)
			if ok(b) {
				t.Logf("%s: busyTimeMsPerSecond max %.0f after %s (samples %v)", phase, b, time.Since(start).Round(time.Second), fmtFloats(seen))
				return b
			}
		}
		if time.Since(start) > 4*time.Minute || ctx.Err() != nil {
			t.Fatalf("%s: busyTimeMsPerSecond never as expected in %s: %v", phase, time.Since(start).Round(time.Second), fmtFloats(seen))
		}
		time.Sleep(2 * time.Second)
	}
}

func fmtFloats(v []float64) string {
	s := ""
	for i, x := range v {
		if i > 0 {
			s += " "
		}
		s += fmt.Sprintf("%.0f", x)
	}
	return "[" + s + "]"
}

// waitRate measures the records counted per second over 5 s windows until one
// lies in [lo, hi] (up to a minute) and returns it.
func waitRate(t *testing.T, ctx context.Context, rest, job, phase string, lo, hi float64) float64 {
	t.Helper()
	start := time.Now()
	var seen []float64
	for time.Since(start) < time.Minute && ctx.Err() == nil {
		a := waitAccumulators(t, ctx, rest, job, func(accumulators) bool { return true })
		t1 := time.Now()
		time.Sleep(5 * time.Second)
		b := waitAccumulators(t, ctx, rest, job, func(accumulators) bool { return true })
		r := float64(b.Records-a.Records) / time.Since(t1).Seconds()
		seen = append(seen, r)
		if r >= lo && r <= hi {
			return r
		}
	}
	t.Fatalf("%s: rate never in [%.0f, %.0f] rec/s within a minute: %v", phase, lo, hi, fmtFloats(seen))
	return 0
}

// awaitJobIDRunning waits until job and all its tasks are RUNNING.
func awaitJobIDRunning(t *testing.T, ctx context.Context, rest, job string) {
	t.Helper()
	poll(t, ctx, 3*time.Minute, "job "+job+" RUNNING", func() bool {
		var j struct {
			State string `json:"state"`
			Verts []struct {
				Status string `json:"status"`
			} `json:"vertices"`
		}
		if !tryGetJSON(ctx, rest+"/jobs/"+job, &j) || j.State != "RUNNING" || len(j.Verts) == 0 {
			return false
		}
		for _, v := range j.Verts {
			if v.Status != "RUNNING" {
				return false
			}
		}
		return true
	})
}

// cancelJobByID cancels job and waits until it is CANCELED.
func cancelJobByID(t *testing.T, ctx context.Context, rest, job string) {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPatch, rest+"/jobs/"+job+"?mode=cancel", nil)
	var out json.RawMessage
	do(t, req, http.StatusAccepted, &out)
	awaitJobIDState(t, ctx, rest, job, "CANCELED")
}

func awaitJobIDState(t *testing.T, ctx context.Context, rest, job, state string) {
	t.Helper()
	poll(t, ctx, 2*time.Minute, "job "+job+" "+state, func() bool {
		var j struct {
			State string `json:"state"`
		}
		return tryGetJSON(ctx, rest+"/jobs/"+job, &j) && j.State == state
	})
}

// triggerSavepointCancel takes a savepoint into the configured directory,
// cancelling the job, and returns its location.
func triggerSavepointCancel(t *testing.T, ctx context.Context, rest, job string) string {
	t.Helper()
	location := savepointOf(t, ctx, rest, job, true, 3*time.Minute)
	awaitJobIDState(t, ctx, rest, job, "CANCELED")
	return location
}
