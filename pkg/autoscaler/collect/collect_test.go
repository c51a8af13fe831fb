package collect_test

import (
	"context"
	"errors"
	"math"
	"net/http"
	"testing"
	"time"

	"github.com/flinkops/flink-operator/pkg/autoscaler/collect"
	"github.com/flinkops/flink-operator/pkg/flink"
	"github.com/flinkops/flink-operator/pkg/flink/fakejm"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

type env struct {
	jm    *fakejm.Server
	clock *fakejm.ManualClock
	c     *flink.Client
}

func newEnv(t testing.TB, v flink.Version) *env {
	t.Helper()
	clock := fakejm.NewManualClock(t0.Add(-time.Hour))
	jm := fakejm.New(fakejm.Options{Version: v, Clock: clock})
	t.Cleanup(jm.Close)
	c, err := flink.New(flink.Config{BaseURL: jm.URL(), Version: v})
	if err != nil {
		t.Fatal(err)
	}
	return &env{jm: jm, clock: clock, c: c}
}

var (
	vSrc  = fakejm.VertexID(0)
	vMap  = fakejm.VertexID(1)
	vSink = fakejm.VertexID(2)
)

// addPipeline adds a job Source: in (p 2) -> map (p 3) -> Sink: out (p 1)
// with every required metric set.
func (e *env) addPipeline(t testing.TB) string {
	t.Helper()
	job := e.jm.MustAddJob(fakejm.JobSpec{Parallelism: 2})
	must(t, e.jm.SetJobGraph(job, fakejm.GraphSpec{Vertices: []fakejm.VertexSpec{
		{ID: vSrc, Name: "Source: in", Parallelism: 2, MaxParallelism: 8},
		{ID: vMap, Name: "map", Parallelism: 3, Inputs: []string{vSrc}},
		{ID: vSink, Name: "Sink: out", Parallelism: 1, Inputs: []string{vMap}, ShipStrategy: "REBALANCE"},
	}}))
	must(t, e.jm.SetVertexMetrics(job, vSrc, map[string][]float64{
		"busyTimeMsPerSecond":                           {200, 600},
		"backPressuredTimeMsPerSecond":                  {100, 300},
		"numRecordsInPerSecond":                         {0, 0},
		"numRecordsOutPerSecond":                        {50, 70},
		"Source__in.pendingRecords":                     {1000, 3000},
		"Source__in.numRecordsOutPerSecond":             {50, 70},
		"Source__in.numRecordsInPerSecond":              {0, 0},
		"Source__in.currentFetchEventTimeLag":           {5, 5},
		"Map__after_source.pendingRecords":              {10, 20}, // a second operator reporting a backlog
		"Source__in.KafkaSourceReader.commitsSucceeded": {1, 1},
		"Source__in.numRecordsOutPerSecondButNotReally": {9, 9},
		"Source__in.numBytesOutPerSecond":               {9, 9},
		"Source__in.numRecordsOut":                      {9, 9},
		"Source__in.numRecordsIn":                       {9, 9},
		"numBytesInPerSecond":                           {9, 9},
		"Source__in.sourceIdleTime":                     {0, 0},
		"Source__in.watermarkLag":                       {0, 0},
		"Source__in.pendingBytes":                       {7, 7},
		"Source__in.numRecordsInErrors":                 {0, 0},
		"Source__in.numRecordsOutErrors":                {0, 0},
		"Source__in.currentEmitEventTimeLag":            {0, 0},
		"Source__in.numRecordsSend":                     {0, 0},
		"Source__in.numRecordsSendErrors":               {0, 0},
		"Source__in.numRecordsOutPerSecond.extra":       {0, 0},
		"Source__in.pendingRecords.total":               {0, 0},
		"Source__in.numRecordsInPerSecondTotal":         {0, 0},
		"Source__in.numRecordsOutPerSecond_":            {0, 0},
		"Source__in.some.other.numRecordsOutPerSecondX": {0, 0},
	}))
	must(t, e.jm.SetVertexMetrics(job, vMap, map[string][]float64{
		"busyTimeMsPerSecond":          {100, 400, 700},
		"backPressuredTimeMsPerSecond": {0, 0, 30},
		"numRecordsInPerSecond":        {40, 40, 40},
		"numRecordsOutPerSecond":       {10, 10, 10},
	}))
	must(t, e.jm.SetVertexMetrics(job, vSink, map[string][]float64{
		"busyTimeMsPerSecond":   {900},
		"numRecordsInPerSecond": {30},
	}))
	return job
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func newCollector(t testing.TB, c collect.Client, o collect.Options) *collect.Collector {
	t.Helper()
	col, err := collect.New(c, o)
	if err != nil {
		t.Fatal(err)
	}
	return col
}

// One collection reads every vertex with the upstream aggregations, and
// costs 1 details call + 1 call per vertex (+ 1 listing per source the
// first time).
func TestCollectSample(t *testing.T) {
	for _, v := range []flink.Version{flink.V1_15, flink.V1_18, flink.V1_20, flink.V2_0} {
		t.Run(v.String(), func(t *testing.T) {
			e := newEnv(t, v)
			job := e.addPipeline(t)
			col := newCollector(t, e.c, collect.Options{})
			s, err := col.Collect(context.Background(), job, t0)
			if err != nil {
				t.Fatal(err)
			}
			g, ok := col.Graph()
			if !ok || g.JobID != job || len(g.Vertices) != 3 || g.RunningSince.IsZero() {
				t.Fatalf("graph %+v", g)
			}
			src, mp, sink := g.Vertices[0], g.Vertices[1], g.Vertices[2]
			if !src.Source || src.Parallelism != 2 || src.MaxParallelism != 8 || src.Name != "Source: in" || len(src.Inputs) != 0 {
				t.Errorf("source %+v", src)
			}
			if mp.Source || mp.Parallelism != 3 || mp.MaxParallelism != 128 || len(mp.Inputs) != 1 || mp.Inputs[0] != (collect.Input{ID: vSrc, ShipStrategy: "HASH"}) || !mp.Inputs[0].Hash() {
				t.Errorf("map %+v", mp)
			}
			if sink.Source || len(sink.Inputs) != 1 || sink.Inputs[0] != (collect.Input{ID: vMap, ShipStrategy: "REBALANCE"}) || sink.Inputs[0].Hash() {
				t.Errorf("sink %+v", sink)
			}

			if !s.Time.Equal(t0) || len(s.Vertices) != 3 {
				t.Fatalf("sample %+v", s)
			}
			want := []collect.VertexMetrics{
				{VertexID: vSrc, BusyTimeMsPerSecond: 600, BackPressuredTimeMsPerSecond: 200, NumRecordsOutPerSecond: 120, PendingRecords: 4030, SourceIncomingRate: 120},
				{VertexID: vMap, BusyTimeMsPerSecond: 700, BackPressuredTimeMsPerSecond: 10, NumRecordsInPerSecond: 120, NumRecordsOutPerSecond: 30, PendingRecords: -1},
				{VertexID: vSink, BusyTimeMsPerSecond: 900, NumRecordsInPerSecond: 30, PendingRecords: -1},
			}
			for i, w := range want {
				if s.Vertices[i] != w {
					t.Errorf("vertex %d:\n got %+v\nwant %+v", i, s.Vertices[i], w)
				}
			}
			if !s.Vertices[0].HasPendingRecords() || s.Vertices[1].HasPendingRecords() {
				t.Error("HasPendingRecords")
			}
			if n := len(e.jm.Requests()); n != 1+1+3 {
				t.Errorf("first collection: %d calls, want 5", n)
			}

			e.jm.ResetRequests()
			if _, err := col.Collect(context.Background(), job, t0.Add(10*time.Second)); err != nil {
				t.Fatal(err)
			}
			if n, m := len(e.jm.Requests()), len(e.jm.RequestsTo(fakejm.RouteVertexSubtaskMetrics)); n != 1+3 || m != 3 {
				t.Errorf("second collection: %d calls (%d metrics), want 4 (3)", n, m)
			}
			if len(col.Samples()) != 2 {
				t.Errorf("%d samples", len(col.Samples()))
			}
		})
	}
}

// The busy time aggregator picks MAX (default), AVG or MIN over subtasks.
func TestBusyTimeAggregator(t *testing.T) {
	e := newEnv(t, flink.V1_20)
	job := e.addPipeline(t)
	for agg, want := range map[collect.Aggregator]float64{collect.AggregatorMax: 700, collect.AggregatorAvg: 400, collect.AggregatorMin: 100} {
		col := newCollector(t, e.c, collect.Options{BusyTimeAggregator: agg})
		s, err := col.Collect(context.Background(), job, t0)
		if err != nil {
			t.Fatal(err)
		}
		if got := s.Vertices[1].BusyTimeMsPerSecond; got != want {
			t.Errorf("%s: %v, want %v", agg, got, want)
		}
	}
	if _, err := collect.New(e.c, collect.Options{BusyTimeAggregator: "SUM"}); err == nil {
		t.Error("SUM accepted as busy time aggregator")
	}
}

// Source metric discovery: pendingRecords under any operator name, the
// source rate from Source__<name>.numRecordsInPerSecond or, when that is
// absent or 0, Source__<name>.numRecordsOutPerSecond; a source without
// pendingRecords is -1 and is listed again only after NameRefresh, which
// finds a pendingRecords registered late (the Kafka source's way).
func TestSourceMetricDiscovery(t *testing.T) {
	e := newEnv(t, flink.V2_0)
	ctx := context.Background()
	a, b := fakejm.VertexID(20), fakejm.VertexID(21)
	job := e.jm.MustAddJob(fakejm.JobSpec{Parallelism: 2})
	must(t, e.jm.SetJobGraph(job, fakejm.GraphSpec{Vertices: []fakejm.VertexSpec{
		{ID: a, Name: "Source: Kafka Source"},
		{ID: b, Name: "Source: legacy"},
	}}))
	must(t, e.jm.SetVertexMetrics(job, a, map[string][]float64{
		"busyTimeMsPerSecond":                         {1, 1},
		"KafkaSourceReader.pendingRecords":            {5, 6}, // no Source__ prefix
		"Source__Kafka_Source.numRecordsInPerSecond":  {7, 8},
		"Source__Kafka_Source.numRecordsOutPerSecond": {100, 100},
	}))
	must(t, e.jm.SetVertexMetrics(job, b, map[string][]float64{
		"busyTimeMsPerSecond":                   {1, 1},
		"Source__legacy.numRecordsOutPerSecond": {3, 4},
	}))
	col := newCollector(t, e.c, collect.Options{NameRefresh: time.Minute})
	s, err := col.Collect(ctx, job, t0)
	if err != nil {
		t.Fatal(err)
	}
	if m := s.Vertices[0]; m.PendingRecords != 11 || m.SourceIncomingRate != 15 {
		t.Errorf("kafka source %+v", m)
	}
	if m := s.Vertices[1]; m.PendingRecords != -1 || m.HasPendingRecords() || m.SourceIncomingRate != 7 {
		t.Errorf("legacy source %+v", m)
	}
	listings := func() int {
		n := 0
		for _, r := range e.jm.RequestsTo(fakejm.RouteVertexSubtaskMetrics) {
			if r.Query == "" {
				n++
			}
		}
		return n
	}
	if n := listings(); n != 2 {
		t.Errorf("%d listings, want 2", n)
	}

	// The legacy source registers pendingRecords late: not seen before
	// NameRefresh has passed, seen after; the Kafka source is not listed
	// again.
	must(t, e.jm.SetVertexMetrics(job, b, map[string][]float64{"Source__legacy.pendingRecords": {2, 2}}))
	if s, err = col.Collect(ctx, job, t0.Add(30*time.Second)); err != nil {
		t.Fatal(err)
	}
	if s.Vertices[1].HasPendingRecords() || listings() != 2 {
		t.Errorf("before NameRefresh: %+v, %d listings", s.Vertices[1], listings())
	}
	if s, err = col.Collect(ctx, job, t0.Add(61*time.Second)); err != nil {
		t.Fatal(err)
	}
	if s.Vertices[1].PendingRecords != 4 || listings() != 3 {
		t.Errorf("after NameRefresh: %+v, %d listings", s.Vertices[1], listings())
	}
	if s, err = col.Collect(ctx, job, t0.Add(200*time.Second)); err != nil || listings() != 3 {
		t.Errorf("found names are kept: %d listings, %v", listings(), err)
	}
}

// Samples older than the window go; the sample at exactly now-window stays.
func TestWindowTrimming(t *testing.T) {
	e := newEnv(t, flink.V1_20)
	job := e.addPipeline(t)
	col := newCollector(t, e.c, collect.Options{Window: time.Minute})
	for i := 0; i <= 18; i++ { // 0..180 s every 10 s
		if _, err := col.Collect(context.Background(), job, t0.Add(time.Duration(i)*10*time.Second)); err != nil {
			t.Fatal(err)
		}
	}
	ss := col.Samples()
	if len(ss) != 7 || !ss[0].Time.Equal(t0.Add(120*time.Second)) || !ss[6].Time.Equal(t0.Add(180*time.Second)) {
		t.Errorf("%d samples, %v .. %v", len(ss), ss[0].Time, ss[len(ss)-1].Time)
	}
	// A long gap empties the window but for the new sample.
	if _, err := col.Collect(context.Background(), job, t0.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if ss = col.Samples(); len(ss) != 1 {
		t.Errorf("after a gap: %d samples", len(ss))
	}
}

// The history never holds more than MaxSamples, the newest.
func TestHistoryBound(t *testing.T) {
	e := newEnv(t, flink.V1_20)
	job := e.addPipeline(t)
	col := newCollector(t, e.c, collect.Options{MaxSamples: 5, Window: time.Hour})
	for i := 0; i < 20; i++ {
		if _, err := col.Collect(context.Background(), job, t0.Add(time.Duration(i)*time.Second)); err != nil {
			t.Fatal(err)
		}
		if n := len(col.Samples()); n > 5 {
			t.Fatalf("%d samples", n)
		}
	}
	ss := col.Samples()
	if len(ss) != 5 || !ss[0].Time.Equal(t0.Add(15*time.Second)) || !ss[4].Time.Equal(t0.Add(19*time.Second)) {
		t.Errorf("%d samples, %v .. %v", len(ss), ss[0].Time, ss[len(ss)-1].Time)
	}
	for _, s := range ss {
		if len(s.Vertices) != 3 {
			t.Errorf("sample %v has %d vertices", s.Time, len(s.Vertices))
		}
	}
}

// A new job id or a rescaled vertex rebuilds the graph and restarts the
// history; an unchanged job does neither.
func TestGraphRefetch(t *testing.T) {
	e := newEnv(t, flink.V1_20)
	ctx := context.Background()
	job := e.addPipeline(t)
	col := newCollector(t, e.c, collect.Options{})
	listings := func() int { // one per graph build (the pipeline has one source)
		n := 0
		for _, r := range e.jm.RequestsTo(fakejm.RouteVertexSubtaskMetrics) {
			if r.Query == "" {
				n++
			}
		}
		return n
	}
	for i := 0; i < 3; i++ {
		if _, err := col.Collect(ctx, job, t0.Add(time.Duration(i)*time.Second)); err != nil {
			t.Fatal(err)
		}
	}
	if n := listings(); n != 1 || len(col.Samples()) != 3 {
		t.Fatalf("%d builds, %d samples", n, len(col.Samples()))
	}

	// Rescale: the map goes to 6.
	must(t, e.jm.SetVertexParallelism(job, vMap, 6))
	if _, err := col.Collect(ctx, job, t0.Add(3*time.Second)); err != nil {
		t.Fatal(err)
	}
	g, _ := col.Graph()
	if listings() != 2 || g.Vertices[1].Parallelism != 6 || len(col.Samples()) != 1 {
		t.Errorf("after rescale: %d builds, map %+v, %d samples", listings(), g.Vertices[1], len(col.Samples()))
	}

	// The deployment's job is resubmitted under a new id.
	job2 := e.addPipeline(t)
	if _, err := col.Collect(ctx, job2, t0.Add(4*time.Second)); err != nil {
		t.Fatal(err)
	}
	if g, _ = col.Graph(); g.JobID != job2 || listings() != 3 || len(col.Samples()) != 1 {
		t.Errorf("new job: graph of %s, %d builds, %d samples", g.JobID, listings(), len(col.Samples()))
	}
	if _, err := col.Collect(ctx, job2, t0.Add(5*time.Second)); err != nil || listings() != 3 || len(col.Samples()) != 2 {
		t.Errorf("same job: %d builds, %d samples, %v", listings(), len(col.Samples()), err)
	}
}

// A job that restarted (its RUNNING timestamp moved past the first sample)
// starts a new history, keeping its graph.
func TestJobRestartRestartsHistory(t *testing.T) {
	e := newEnv(t, flink.V1_20)
	ctx := context.Background()
	job := e.addPipeline(t)
	col := newCollector(t, e.c, collect.Options{})
	e.clock.Set(t0)
	for i := 0; i < 3; i++ {
		if _, err := col.Collect(ctx, job, t0.Add(time.Duration(i)*time.Second)); err != nil {
			t.Fatal(err)
		}
	}
	e.clock.Set(t0.Add(5 * time.Second))
	must(t, e.jm.SetJobState(job, flink.JobRestarting))
	if _, err := col.Collect(ctx, job, t0.Add(6*time.Second)); !errors.Is(err, collect.ErrNotRunning) {
		t.Fatalf("restarting job: %v", err)
	}
	if len(col.Samples()) != 3 {
		t.Errorf("a failed collection changed the history: %d samples", len(col.Samples()))
	}
	e.clock.Set(t0.Add(7 * time.Second))
	must(t, e.jm.SetJobState(job, flink.JobRunning))
	if _, err := col.Collect(ctx, job, t0.Add(8*time.Second)); err != nil {
		t.Fatal(err)
	}
	g, _ := col.Graph()
	if ss := col.Samples(); len(ss) != 1 || !g.RunningSince.Equal(t0.Add(7*time.Second)) {
		t.Errorf("after restart: %d samples, running since %v", len(ss), g.RunningSince)
	}
}

// A collection that fails anywhere adds nothing and keeps the history and
// the graph.
func TestFailureKeepsHistory(t *testing.T) {
	e := newEnv(t, flink.V1_20)
	ctx := context.Background()
	job := e.addPipeline(t)
	col := newCollector(t, e.c, collect.Options{})
	for i := 0; i < 2; i++ {
		if _, err := col.Collect(ctx, job, t0.Add(time.Duration(i)*time.Second)); err != nil {
			t.Fatal(err)
		}
	}
	before := col.Samples()
	check := func(name string, err error, is func(error) bool) {
		t.Helper()
		if err == nil || !is(err) {
			t.Errorf("%s: %v", name, err)
		}
		after := col.Samples()
		if len(after) != len(before) || !after[len(after)-1].Time.Equal(before[len(before)-1].Time) {
			t.Errorf("%s: history changed: %d samples", name, len(after))
		}
		if g, ok := col.Graph(); !ok || g.JobID != job {
			t.Errorf("%s: graph %+v", name, g)
		}
	}

	remove := e.jm.InjectFault(fakejm.Fault{Route: fakejm.RouteJob, Status: http.StatusServiceUnavailable})
	_, err := col.Collect(ctx, job, t0.Add(10*time.Second))
	check("details unavailable", err, flink.IsRetryable)
	remove()

	remove = e.jm.InjectFault(fakejm.Fault{Route: fakejm.RouteVertexSubtaskMetrics, Path: "/jobs/" + job + "/vertices/" + vSink + "/subtasks/metrics", Status: http.StatusInternalServerError})
	_, err = col.Collect(ctx, job, t0.Add(11*time.Second))
	check("last vertex fails", err, flink.IsServerError)
	remove()

	must(t, e.jm.SetVertexMetrics(job, vMap, map[string][]float64{"busyTimeMsPerSecond": nil}))
	_, err = col.Collect(ctx, job, t0.Add(12*time.Second))
	check("busy time missing", err, func(err error) bool { return errors.Is(err, collect.ErrNotReady) })
	must(t, e.jm.SetVertexMetric(job, vMap, "busyTimeMsPerSecond", 10))

	// A failure while rebuilding after a rescale keeps the old graph too.
	must(t, e.jm.SetVertexParallelism(job, vMap, 4))
	remove = e.jm.InjectFault(fakejm.Fault{Route: fakejm.RouteVertexSubtaskMetrics, Status: http.StatusServiceUnavailable})
	_, err = col.Collect(ctx, job, t0.Add(13*time.Second))
	check("rebuild fails", err, flink.IsRetryable)
	if g, _ := col.Graph(); g.Vertices[1].Parallelism != 3 {
		t.Errorf("graph replaced by a failed collection: %+v", g.Vertices[1])
	}
	remove()

	_, err = col.Collect(ctx, job, t0.Add(-time.Second))
	check("time went backwards", err, func(err error) bool { return errors.Is(err, collect.ErrTimeWentBackwards) })

	if _, err := col.Collect(ctx, job, t0.Add(20*time.Second)); err != nil {
		t.Fatal(err)
	}
	if g, _ := col.Graph(); len(col.Samples()) != 1 || g.Vertices[1].Parallelism != 4 {
		t.Errorf("recovery: %d samples, map %+v", len(col.Samples()), g.Vertices[1])
	}
}

// A FINISHED vertex (a bounded source that ran out) counts as idle, with
// no call for its metrics; a NaN busy time passes through.
func TestFinishedVertexAndNaN(t *testing.T) {
	e := newEnv(t, flink.V1_20)
	job := e.addPipeline(t)
	must(t, e.jm.SetVertexMetrics(job, vSink, map[string][]float64{"busyTimeMsPerSecond": {math.NaN()}}))
	col := newCollector(t, e.c, collect.Options{})
	s, err := col.Collect(context.Background(), job, t0)
	if err != nil {
		t.Fatal(err)
	}
	if !math.IsNaN(s.Vertices[2].BusyTimeMsPerSecond) {
		t.Errorf("sink %+v", s.Vertices[2])
	}
	fin := &finishingClient{Client: e.c, finished: vSrc}
	col = newCollector(t, fin, collect.Options{})
	e.jm.ResetRequests()
	if s, err = col.Collect(context.Background(), job, t0); err != nil {
		t.Fatal(err)
	}
	if m := s.Vertices[0]; m != (collect.VertexMetrics{VertexID: vSrc}) {
		t.Errorf("finished source %+v", m)
	}
	for _, r := range e.jm.RequestsTo(fakejm.RouteVertexSubtaskMetrics) {
		if r.Path == "/jobs/"+job+"/vertices/"+vSrc+"/subtasks/metrics" {
			t.Errorf("finished vertex queried: %+v", r)
		}
	}
}

// finishingClient reports one vertex FINISHED (the fake has no per-vertex
// states).
type finishingClient struct {
	collect.Client
	finished string
}

func (f *finishingClient) Job(ctx context.Context, id string) (*flink.JobDetails, error) {
	d, err := f.Client.Job(ctx, id)
	if err == nil {
		for i := range d.Vertices {
			if d.Vertices[i].ID == f.finished {
				d.Vertices[i].Status = flink.TaskFinished
			}
		}
	}
	return d, err
}

// Load driven through the fake's VertexLoad comes out as set.
func TestCollectVertexLoad(t *testing.T) {
	e := newEnv(t, flink.V1_18)
	job := e.jm.MustAddJob(fakejm.JobSpec{Parallelism: 4})
	must(t, e.jm.SetVertexLoad(job, fakejm.VertexID(0), fakejm.VertexLoad{BusyTimeMsPerSecond: 250, RecordsInPerSecond: 800, RecordsOutPerSecond: 800, PendingRecords: 1e6}))
	must(t, e.jm.SetVertexLoad(job, fakejm.VertexID(1), fakejm.VertexLoad{BusyTimeMsPerSecond: 950, BackPressuredTimeMsPerSecond: 0, RecordsInPerSecond: 800}))
	col := newCollector(t, e.c, collect.Options{})
	s, err := col.Collect(context.Background(), job, t0)
	if err != nil {
		t.Fatal(err)
	}
	want := []collect.VertexMetrics{
		{VertexID: fakejm.VertexID(0), BusyTimeMsPerSecond: 250, NumRecordsOutPerSecond: 800, PendingRecords: 1e6, SourceIncomingRate: 800},
		{VertexID: fakejm.VertexID(1), BusyTimeMsPerSecond: 950, NumRecordsInPerSecond: 800, PendingRecords: -1},
	}
	for i, w := range want {
		if s.Vertices[i] != w {
			t.Errorf("vertex %d:\n got %+v\nwant %+v", i, s.Vertices[i], w)
		}
	}
}
