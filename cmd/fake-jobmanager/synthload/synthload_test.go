package synthload

import (
	"context"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/flinkops/flink-operator/pkg/flink"
	"github.com/flinkops/flink-operator/pkg/flink/fakejm"
)

func TestParse(t *testing.T) {
	sp, err := Parse(" rate=1000; capacity=2000, 1500,600 ;parallelism=2;backlog=false")
	if err != nil {
		t.Fatal(err)
	}
	if sp.Rate != 1000 || !slices.Equal(sp.Capacities, []float64{2000, 1500, 600}) || sp.Parallelism != 2 || !sp.NoBacklog {
		t.Errorf("Parse = %+v", sp)
	}
	if again, err := Parse(sp.String()); err != nil || again.String() != sp.String() {
		t.Errorf("round trip %q: %+v, %v", sp.String(), again, err)
	}
	if sp, err := Parse("rate=5;capacity=10"); err != nil || sp.Parallelism != 1 || sp.NoBacklog || sp.String() != "rate=5;capacity=10" {
		t.Errorf("defaults: %+v %v", sp, err)
	}
	for _, bad := range []string{"", "rate=1", "capacity=1", "rate=-1;capacity=1", "rate=1;capacity=0", "rate=1;capacity=1;x=2",
		"rate=1;capacity=1;parallelism=0", "rate=1;capacity=1;backlog=maybe", "rate"} {
		if _, err := Parse(bad); err == nil {
			t.Errorf("Parse(%q) accepted", bad)
		}
	}
}

func TestModel(t *testing.T) {
	sp, _ := Parse("rate=1000;capacity=2000,1500,600")
	// Parallelism 1: the sink holds the chain to 600/s, the vertices
	// before it back-pressured, the backlog growing by 400/s.
	loads, backlog := Model(sp, []int{1, 1, 1}, 0, 10)
	if backlog != 4000 {
		t.Errorf("backlog %v, want 4000", backlog)
	}
	if l := loads[2]; l.BusyTimeMsPerSecond != 1000 || l.RecordsInPerSecond != 600 || l.RecordsOutPerSecond != 0 {
		t.Errorf("sink %+v", l)
	}
	if l := loads[0]; l.BusyTimeMsPerSecond != 300 || l.BackPressuredTimeMsPerSecond != 700 || l.PendingRecords != 4000 {
		t.Errorf("source %+v", l)
	}
	// The sink at 3: the backlog drains at 1500/s (the map's capacity),
	// the map busy all the time; the last of it at the rate that empties
	// it; then the flow is the offered rate.
	loads, backlog = Model(sp, []int{1, 1, 3}, 40000, 10)
	if backlog != 35000 || loads[1].BusyTimeMsPerSecond != 1000 || loads[1].RecordsInPerSecond != 1500 {
		t.Errorf("draining: backlog %v, map %+v", backlog, loads[1])
	}
	loads, backlog = Model(sp, []int{1, 1, 3}, 4000, 10)
	if backlog != 0 || loads[1].RecordsInPerSecond != 1400 {
		t.Errorf("drained: backlog %v, map %+v", backlog, loads[1])
	}
	loads, backlog = Model(sp, []int{1, 1, 3}, 0, 10)
	if backlog != 0 || math.Abs(loads[2].BusyTimeMsPerSecond-1000*1000/1800.) > 1e-9 || loads[0].BackPressuredTimeMsPerSecond != 0 {
		t.Errorf("steady: backlog %v, loads %+v", backlog, loads)
	}
}

// The driver programs the graph, and a resource-requirements PUT (the
// operator's in-place rescale) changes the vertex's parallelism and load.
func TestDriverFollowsResourceRequirements(t *testing.T) {
	jm := fakejm.New(fakejm.Options{Version: flink.V1_20})
	t.Cleanup(jm.Close)
	id := jm.MustAddJob(fakejm.JobSpec{})
	sp, _ := Parse("rate=1000;capacity=2000,1500,600")
	d := New(jm, sp)
	t0 := time.Unix(1e9, 0)
	if err := d.Step(t0); err != nil {
		t.Fatal(err)
	}
	c, err := flink.New(flink.Config{BaseURL: jm.URL(), Version: flink.V1_20})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	details, err := c.Job(ctx, id)
	if err != nil || len(details.Vertices) != 3 || details.Vertices[0].Name != "Source: synthetic" {
		t.Fatalf("job details %+v, %v", details, err)
	}
	rr, err := c.JobResourceRequirements(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	sink := fakejm.VertexID(2)
	r := rr[sink]
	r.Parallelism.UpperBound = 3
	rr[sink] = r
	if err := c.UpdateJobResourceRequirements(ctx, id, rr); err != nil {
		t.Fatal(err)
	}
	if err := d.Step(t0.Add(2 * time.Second)); err != nil {
		t.Fatal(err)
	}
	if got := d.Parallelism(id); !slices.Equal(got, []int{1, 1, 3}) {
		t.Errorf("parallelism %v, want [1 1 3]", got)
	}
	if details, err := c.Job(ctx, id); err != nil || details.Vertices[2].Parallelism != 3 {
		t.Errorf("job details after the rescale %+v, %v", details, err)
	}
	m, err := c.VertexMetrics(ctx, id, sink, []string{"busyTimeMsPerSecond"}, flink.AggMax)
	if err != nil || len(m) != 1 || m[0].Max <= 0 || m[0].Max >= 1000 {
		t.Errorf("sink busy time after the rescale: %+v, %v", m, err)
	}
}
